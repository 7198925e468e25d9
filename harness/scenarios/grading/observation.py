"""Observation of the grading policy: a heightmap crop rendered at a pose (ag2u fig. 2).

The crop is ``rows x cols`` cells of ``cell_m`` in the dozer's frame: row 0 is the
farthest ahead, the dozer's blade edge sits at the bottom-centre, columns run
left to right (body y). It is sampled from the world heightmap (bilinear) at the
pose it is given: the *estimated* pose at run time, so localisation errors shift
and rotate what the policy sees (ag2u section III-A); eq. 1 poses when training
agent2. Heights are given relative to the target level, in metres.

Geometry (config, stored in each agent's card so the runtime renders what the net
was trained on): ``rows x cols`` cells of ``cell_m``; ``behind_m`` of the crop lies
behind the dozer (so the next-leg start, often behind it, is inside the crop);
``supersample`` > 1 averages ``supersample**2`` bilinear samples per cell (a box
filter), so a coarse cell reports the mean height of the sand under it instead of
aliasing small piles away. The trained agents use the geometry in their card
(``train_policy.AGENT_OBSERVATION``: 20 x 20 cells of 0.16 m, 1.2 m behind, 4 x 4
supersampling: 3.2 m x 3.2 m, every expert way-point of the training data inside);
these defaults (32 x 32 @ 0.08 m, 0.3 m behind: 2.56 m) leave ~10 % of the red
labels outside the crop (behind the dozer).

The dozer in the view (``dozer_body``): the heightmap the policy crops comes from an overhead
camera (ag2u IV-C: an RGB-D camera above the sandbox gives the dense heightmap *and* the dozer's
ArUco pose), so it also shows the dozer itself, where the dozer truly is. With ``dozer_body`` set
(a box ``behind_m`` behind to ``ahead_m`` ahead of the dozer's centre, ``half_width_m`` either side,
``height_m`` above the target level) :meth:`ObservationRenderer.render` needs the dozer's *true*
pose and draws that box into the heightmap before cropping at the (estimated) pose it is given:
with a localisation error the dozer appears off the crop's origin, by that error (ag2u fig. 2b,
"the translation from state to observation uses the estimated pose"). ``None`` (the default): the
sand alone.

The sandbox's walls (``wall_height_m``): whatever of the crop lies outside the world reads as the
target level plus ``wall_height_m``, as the overhead depth camera sees the walls around the sandbox
(ag2u fig. 6). 0 (the default) reads it as the target level: a flat floor, so the crop carries no
absolute reference; the committed agents see walls 0.3 m high (their cards). The expert's way-points are tied to the world:
the push target (green) is always the same distance short of the north wall, where the spoil band
begins, and pushes run north; with the walls in view the net can see where that is.
"""
import math

import numpy as np

from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked, int_at_least, or_null

DEFAULTS = {"rows": 32, "cols": 32, "cell_m": 0.08, "behind_m": 0.3, "supersample": 1, "dozer_body": None,
            "wall_height_m": 0.0}
DOZER_BODY_KEYS = ("behind_m", "ahead_m", "half_width_m", "height_m")
SETTING_RANGES = {
    "rows": int_at_least(1), "cols": int_at_least(1), "cell_m": POSITIVE, "behind_m": NON_NEGATIVE,
    "supersample": int_at_least(1), "wall_height_m": NON_NEGATIVE,
    "dozer_body": or_null(("a table of %s (each >= 0)" % ", ".join(DOZER_BODY_KEYS),
                           lambda v: isinstance(v, dict) and sorted(v) == sorted(DOZER_BODY_KEYS)
                           and all(NON_NEGATIVE[1](x) for x in v.values()))),
}


class HeightmapView:
    """A heightmap as the renderer reads it (``height_m`` [rows, cols] on ``cell_m`` cells, relative to
    ``target_level_m``): a stored training heightmap, or the camera's view with the dozer drawn in."""

    def __init__(self, height_m, cell_m, target_level_m=0.0):
        self.height_m = height_m
        self.cell_m = float(cell_m)
        self.rows, self.cols = height_m.shape
        self.target_level_m = float(target_level_m)


def with_dozer(world, dozer_pose_ne_yaw, body):
    """HeightmapView of ``world`` with the dozer's body box (``body``: DOZER_BODY_KEYS, metres) at
    ``dozer_pose_ne_yaw`` (north_m, east_m, yaw_rad): cells whose centre lies inside the box read
    max(sand, target level + body height), as an overhead depth camera sees the dozer standing on the sand."""
    n, e, yaw = dozer_pose_ne_yaw
    c, s = math.cos(yaw), math.sin(yaw)
    cell = world.cell_m
    reach = math.hypot(max(body["behind_m"], body["ahead_m"]), body["half_width_m"]) + cell
    i0 = max(0, int(math.floor((n - reach) / cell)))
    i1 = min(world.rows, int(math.ceil((n + reach) / cell)) + 1)
    j0 = max(0, int(math.floor((e - reach) / cell)))
    j1 = min(world.cols, int(math.ceil((e + reach) / cell)) + 1)
    height = np.array(world.height_m, dtype=np.float64, copy=True)
    if i0 < i1 and j0 < j1:
        dn = (np.arange(i0, i1) + 0.5) * cell - n
        de = (np.arange(j0, j1) + 0.5) * cell - e
        forward = c * dn[:, None] + s * de[None, :]
        right = -s * dn[:, None] + c * de[None, :]
        inside = ((forward >= -body["behind_m"]) & (forward <= body["ahead_m"])
                  & (np.abs(right) <= body["half_width_m"]))
        top = world.target_level_m + body["height_m"]
        block = height[i0:i1, j0:j1]
        block[inside] = np.maximum(block[inside], top)
    return HeightmapView(height, cell, world.target_level_m)


class ObservationRenderer:
    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "ObservationRenderer")
        self.cfg = cfg
        rows, cols, cell = cfg["rows"], cfg["cols"], cfg["cell_m"]
        # body-frame coordinates (forward, right) of every crop pixel centre
        self.forward_m = (rows - 1 - np.arange(rows) + 0.5) * cell - cfg["behind_m"]
        self.right_m = (np.arange(cols) - 0.5 * (cols - 1)) * cell
        self.supersample = cfg["supersample"]
        # sub-sample offsets (m) inside a cell, symmetric about its centre
        ss = self.supersample
        self._sub_offsets_m = ((np.arange(ss) + 0.5) / ss - 0.5) * cell
        body = cfg["dozer_body"]
        self.dozer_body = None if body is None else {k: float(body[k]) for k in DOZER_BODY_KEYS}
        self.wall_height_m = float(cfg["wall_height_m"])

    def pixel_to_body(self, row, col):
        """Body-frame (forward_m, right_m) of a crop pixel (fractional indices allowed)."""
        cfg = self.cfg
        forward = (cfg["rows"] - 1 - row + 0.5) * cfg["cell_m"] - cfg["behind_m"]
        right = (col - 0.5 * (cfg["cols"] - 1)) * cfg["cell_m"]
        return forward, right

    def body_to_pixel(self, forward_m, right_m):
        cfg = self.cfg
        row = cfg["rows"] - 1 + 0.5 - (forward_m + cfg["behind_m"]) / cfg["cell_m"]
        col = right_m / cfg["cell_m"] + 0.5 * (cfg["cols"] - 1)
        return row, col

    @staticmethod
    def body_to_world(pose_ne_yaw, forward_m, right_m):
        n, e, yaw = pose_ne_yaw
        c, s = math.cos(yaw), math.sin(yaw)
        return n + c * forward_m - s * right_m, e + s * forward_m + c * right_m

    @staticmethod
    def world_to_body(pose_ne_yaw, north_m, east_m):
        n, e, yaw = pose_ne_yaw
        c, s = math.cos(yaw), math.sin(yaw)
        dn, de = north_m - n, east_m - e
        return c * dn + s * de, -s * dn + c * de

    def render(self, world, pose_ne_yaw, dozer_pose_ne_yaw=None):
        """Crop (rows x cols, float32, metres above target) of ``world`` seen from ``pose``.

        ``dozer_pose_ne_yaw``: where the dozer truly is, drawn into the heightmap first when the
        config has a ``dozer_body`` (required then; ignored without one)."""
        if self.dozer_body is not None:
            if dozer_pose_ne_yaw is None:
                raise ValueError("this observation shows the dozer (dozer_body): render needs its true pose")
            world = with_dozer(world, dozer_pose_ne_yaw, self.dozer_body)
        n, e, yaw = pose_ne_yaw
        c, s = math.cos(yaw), math.sin(yaw)
        rows, cols, ss = self.cfg["rows"], self.cfg["cols"], self.supersample
        # forward decreases with the row index, so sub-rows run from +offset to -offset
        f = (self.forward_m[:, None] - self._sub_offsets_m[None, :]).reshape(rows * ss)[:, None]
        r = (self.right_m[:, None] + self._sub_offsets_m[None, :]).reshape(cols * ss)[None, :]
        north = n + c * f - s * r
        east = e + s * f + c * r
        # bilinear sampling at cell-centre coordinates; outside the world reads as the wall (target level +
        # wall_height_m)
        fi = north / world.cell_m - 0.5
        fj = east / world.cell_m - 0.5
        i0 = np.floor(fi).astype(np.int64)
        j0 = np.floor(fj).astype(np.int64)
        di = fi - i0
        dj = fj - j0
        h = world.height_m - world.target_level_m
        out = np.zeros(north.shape)
        for oi, wi in ((0, 1.0 - di), (1, di)):
            for oj, wj in ((0, 1.0 - dj), (1, dj)):
                ii = i0 + oi
                jj = j0 + oj
                ok = (ii >= 0) & (ii < world.rows) & (jj >= 0) & (jj < world.cols)
                vals = np.full(north.shape, self.wall_height_m)
                vals[ok] = h[ii[ok], jj[ok]]
                out += wi * wj * vals
        if ss > 1:
            out = out.reshape(rows, ss, cols, ss).mean(axis=(1, 3))     # box filter over each cell
        return out.astype(np.float32)
