"""Observation of the grading policy: a heightmap crop rendered at a pose (ag2u fig. 2).

The crop is ``rows x cols`` cells of ``cell_m`` in the dozer's frame: row 0 is the
farthest ahead, the dozer's blade edge sits at the bottom-centre, columns run
left to right (body y). It is sampled from the world heightmap (bilinear) at the
pose it is given: the *estimated* pose at run time, so localisation errors shift
and rotate what the policy sees (ag2u section III-A); eq. 1 poses when training
agent2. Heights are given relative to the target level, in metres.
"""
import math

import numpy as np

DEFAULTS = {"rows": 32, "cols": 32, "cell_m": 0.08, "behind_m": 0.3}


class ObservationRenderer:
    def __init__(self, config=None):
        cfg = dict(DEFAULTS)
        cfg.update(config or {})
        self.cfg = cfg
        rows, cols, cell = cfg["rows"], cfg["cols"], cfg["cell_m"]
        # body-frame coordinates (forward, right) of every crop pixel centre
        self.forward_m = (rows - 1 - np.arange(rows) + 0.5) * cell - cfg["behind_m"]
        self.right_m = (np.arange(cols) - 0.5 * (cols - 1)) * cell

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
        f = self.forward_m[:, None]
        r = self.right_m[None, :]
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
        return out.astype(np.float32)
