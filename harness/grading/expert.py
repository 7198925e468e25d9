"""Heuristic grading expert (ag2u fig. 7): picks each leg's way-points from a heightmap.

A leg starts where the dozer stands, pushes forward to the *green* way-point and
reverses to the *red* way-point, where the next leg starts. Pushes run north, into
the spoil band. The expert looks for the sand most worth pushing: the excess
volume above target (+ tolerance) in the work area summed over a blade-wide
window, and aims the push straight through its centre into the spoil band. The red
point is the approach point of the next-best target once this lane is cleared.

The expert is run on the true state to label training data and as a baseline;
``decide_from_crop`` runs the same rule on a crop (what a policy sees).
"""
import numpy as np

DEFAULTS = {
    "approach_m": 0.45,           # red point: this far south of the target centre
    "into_spoil_m": 0.1,          # green point: blade edge this far into the spoil band
    "window_along_m": 0.3,
    "min_target_m3": 0.0004,      # below this the area counts as graded
    "lane_share": 0.3,            # targets worth a push: this share of the best window score
}


def _box_sum(a, half_rows, half_cols):
    """Sum of ``a`` over a (2*half_rows+1) x (2*half_cols+1) window centred on each cell."""
    c = np.cumsum(np.cumsum(np.pad(a, ((1, 0), (1, 0))), axis=0), axis=1)
    rows, cols = a.shape
    i = np.arange(rows)
    j = np.arange(cols)
    i0 = np.clip(i - half_rows, 0, rows)[:, None]
    i1 = np.clip(i + half_rows + 1, 0, rows)[:, None]
    j0 = np.clip(j - half_cols, 0, cols)[None, :]
    j1 = np.clip(j + half_cols + 1, 0, cols)[None, :]
    return c[i1, j1] - c[i0, j1] - c[i1, j0] + c[i0, j0]


class GradingExpert:
    def __init__(self, blade_width_m, config=None):
        cfg = dict(DEFAULTS)
        cfg.update(config or {})
        self.cfg = cfg
        self.blade_width_m = blade_width_m

    def targets(self, world, target_level_m):
        """(score_m3 map, argmax cell) of blade-window excess volume, for pushes along north."""
        tol = world.cfg["uncleared_tolerance_m"]
        excess = np.clip(world.height_m - (target_level_m + tol), 0.0, None) * world.cell_area_m2
        excess[world.work_rows:] = 0.0
        half_c = max(1, int(0.5 * self.blade_width_m / world.cell_m))
        half_r = max(1, int(0.5 * self.cfg["window_along_m"] / world.cell_m))
        return _box_sum(excess, half_r, half_c)

    def decide(self, world, target_level_m, dozer_ne_m, blade_edge_ahead_m=0.2):
        """(green_ne_m, red_ne_m) or None when nothing is left worth pushing.

        The push goes through the worthwhile target (at least ``lane_share`` of the best
        score) laterally closest to the dozer, so a leg pushes straight ahead.
        """
        score = self.targets(world, target_level_m)
        best_score = float(score.max())
        if best_score < self.cfg["min_target_m3"]:
            return None
        north, east = world.cell_centres()
        ok = score >= max(self.cfg["min_target_m3"], self.cfg["lane_share"] * best_score)
        cost = np.abs(east[None, :] - dozer_ne_m[1]) + 0.3 * np.abs(north[:, None] - dozer_ne_m[0])
        cost = np.where(ok, cost - 1e-6 * score / best_score, np.inf)
        tgt = np.unravel_index(int(np.argmin(cost)), cost.shape)
        c_e = float(east[tgt[1]])
        green = (world.work_north_max_m + self.cfg["into_spoil_m"] - blade_edge_ahead_m, c_e)
        # next target: mask the lane this push clears, take the best of the rest
        half_c = int(0.75 * self.blade_width_m / world.cell_m)
        masked = score.copy()
        masked[:, max(0, tgt[1] - half_c):tgt[1] + half_c + 1] = 0.0
        nxt = np.unravel_index(int(np.argmax(masked)), masked.shape)
        if masked[nxt] < self.cfg["min_target_m3"]:
            nxt = tgt          # same lane again (a pile bigger than one blade load)
        red = (float(north[nxt[0]]) - self.cfg["approach_m"], float(east[nxt[1]]))
        return _clip(world, green), _clip(world, red)

    def first_start(self, world, target_level_m):
        """Approach point of the best target (where the first leg should begin)."""
        score = self.targets(world, target_level_m)
        best = np.unravel_index(int(np.argmax(score)), score.shape)
        return _clip(world, ((best[0] + 0.5) * world.cell_m - self.cfg["approach_m"],
                             (best[1] + 0.5) * world.cell_m))


def _clip(world, p, margin_m=0.15):
    n_max = world.rows * world.cell_m - margin_m
    e_max = world.cols * world.cell_m - margin_m
    return (min(max(p[0], margin_m), n_max), min(max(p[1], margin_m), e_max))
