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
"""
import math

import numpy as np

DEFAULTS = {"rows": 32, "cols": 32, "cell_m": 0.08, "behind_m": 0.3, "supersample": 1}


class ObservationRenderer:
    def __init__(self, config=None):
        cfg = dict(DEFAULTS)
        cfg.update(config or {})
        self.cfg = cfg
        rows, cols, cell = cfg["rows"], cfg["cols"], cfg["cell_m"]
        # body-frame coordinates (forward, right) of every crop pixel centre
        self.forward_m = (rows - 1 - np.arange(rows) + 0.5) * cell - cfg["behind_m"]
        self.right_m = (np.arange(cols) - 0.5 * (cols - 1)) * cell
        self.supersample = int(cfg.get("supersample", 1))
        if self.supersample < 1:
            raise ValueError("observation supersample must be >= 1, got %r" % (cfg.get("supersample"),))
        # sub-sample offsets (m) inside a cell, symmetric about its centre
        ss = self.supersample
        self._sub_offsets_m = ((np.arange(ss) + 0.5) / ss - 0.5) * cell

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

    def render(self, world, pose_ne_yaw):
        """Crop (rows x cols, float32, metres above target) of ``world`` seen from ``pose``."""
        n, e, yaw = pose_ne_yaw
        c, s = math.cos(yaw), math.sin(yaw)
        rows, cols, ss = self.cfg["rows"], self.cfg["cols"], self.supersample
        # forward decreases with the row index, so sub-rows run from +offset to -offset
        f = (self.forward_m[:, None] - self._sub_offsets_m[None, :]).reshape(rows * ss)[:, None]
        r = (self.right_m[:, None] + self._sub_offsets_m[None, :]).reshape(cols * ss)[None, :]
        north = n + c * f - s * r
        east = e + s * f + c * r
        # bilinear sampling at cell-centre coordinates; outside the world reads as target level
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
                vals = np.zeros(north.shape)
                vals[ok] = h[ii[ok], jj[ok]]
                out += wi * wj * vals
        if ss > 1:
            out = out.reshape(rows, ss, cols, ss).mean(axis=(1, 3))     # box filter over each cell
        return out.astype(np.float32)
