"""Heuristic grading expert (ag2u fig. 7): picks each leg's way-points from a heightmap.

A leg starts where the dozer stands, pushes forward to the *green* way-point and
reverses to the *red* way-point, where the next leg starts. Pushes run north, into
the spoil band. Two rules choose the push's lane (``lanes``):

- ``split`` (the default): the sand still to grade, grouped into clusters of columns,
  is split into lanes of at most one blade load each (``GradingExpert.plan_lane``),
  so that each push fills more than half the blade, ag2u Table I's criterion;
- ``window``: the sand most worth pushing (the excess volume above target + tolerance
  in the work area summed over a blade-wide window), with the push straight through
  its centre. A pile over one blade load leaves a strip either side of that lane,
  each usually under half a load: legs that cannot succeed (the expert decides
  ~81 % of its legs well without noise, the split rule ~92 %).

The red point is the start of the next lane once this one is cleared.

The expert is run on the true state to label training data and as a baseline; the
agents (``agents.PolicyDecider``) learn its way-points from crops.
"""
import math

import numpy as np

from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked, one_of, within

DEFAULTS = {
    "approach_m": 0.45,           # red point: this far south of the target centre
    "into_spoil_m": 0.3,          # green point: blade edge this far into the spoil band (at 0.1 m the heap
                                  # slumps back into the work area by erosion)
    "window_along_m": 0.3,
    "min_target_m3": 0.0004,      # below this the area counts as graded
    "lane_share": 0.3,            # targets worth a push: this share of the best window score
    "lanes": "split",             # split: see plan_lane | window: push through the best blade-wide window
    "margin_south_m": 0.1,        # split: the blade edge starts this far south of the lane's sand
    "straight_share": 0.6,        # split: push straight ahead instead of a lane elsewhere above this share of a load
}
LANE_RULES = ("window", "split")
SETTING_RANGES = {"approach_m": NON_NEGATIVE, "into_spoil_m": NON_NEGATIVE, "window_along_m": POSITIVE,
                  "min_target_m3": NON_NEGATIVE, "lane_share": within(0.0, 1.0), "lanes": one_of(*LANE_RULES),
                  "margin_south_m": NON_NEGATIVE, "straight_share": NON_NEGATIVE}


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
    def __init__(self, blade_width_m, config=None, capacity_m3=0.003):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "GradingExpert")
        self.cfg = cfg
        self.blade_width_m = blade_width_m
        self.capacity_m3 = capacity_m3

    def targets(self, world, target_level_m):
        """(score_m3 map, argmax cell) of blade-window excess volume, for pushes along north."""
        tol = world.cfg["uncleared_tolerance_m"]
        excess = np.clip(world.height_m - (target_level_m + tol), 0.0, None) * world.cell_area_m2
        excess[world.work_rows:] = 0.0
        half_c = max(1, int(0.5 * self.blade_width_m / world.cell_m))
        half_r = max(1, int(0.5 * self.cfg["window_along_m"] / world.cell_m))
        return _box_sum(excess, half_r, half_c)

    def decide(self, world, target_level_m, dozer_ne_m, blade_edge_ahead_m=0.2):
        """(green_ne_m, red_ne_m) or None when nothing is left worth pushing (no window's excess volume reaches
        ``min_target_m3``, or none is above target + tolerance at all).

        ``lanes`` "window": the push goes through the worthwhile target (at least ``lane_share`` of the
        best score) laterally closest to the dozer, so a leg pushes straight ahead. "split": the lane of
        :meth:`plan_lane`.
        """
        score = self.targets(world, target_level_m)
        best_score = float(score.max())
        # nothing above target + tolerance anywhere is graded, also with min_target_m3 = 0
        if best_score <= 0.0 or best_score < self.cfg["min_target_m3"]:
            return None
        if self.cfg["lanes"] == "split":
            lane = self.plan_lane(world, target_level_m, dozer_ne_m[1])
            if lane is not None:
                return self._split_decision(world, target_level_m, lane, dozer_ne_m, blade_edge_ahead_m)
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

    def _half_blade_cells(self, world):
        return int(round(0.5 * self.blade_width_m / world.cell_m))

    def _lane_cols(self, world, centre):
        """Column slice of the blade-wide lane centred on column ``centre`` (clipped to the world; empty for a
        lane wholly west or east of it, e.g. a dozer standing off the world's west edge)."""
        half = self._half_blade_cells(world)
        return slice(max(0, centre - half), max(0, min(world.cols, centre + half + 1)))

    def plan_lane(self, world, target_level_m, dozer_east_m, blocked_cols=None):
        """(centre column, south-most row still to grade) of the next push lane, or None ("split" rule).

        Pushes run north, so a lane is a blade-wide band of columns. The columns still to grade (some
        cell above target + tolerance) form clusters (gaps narrower than half a blade merged); the
        cluster laterally closest to the dozer (east ``dozer_east_m``) with at least ``min_target_m3`` to
        grade is next. Its volume above target V needs n = ceil(V / capacity) pushes. One push: the lane
        that covers most of it. More: the lane flush with the cluster's outer side (the one nearer the
        world's west or east edge, so the plan does not depend on where the dozer stands and the red
        point of one leg is the lane the next leg pushes), reaching across a 1/n share of V, so the
        cluster is split into loads of about V/n each. A push through the middle of a pile over one blade
        load (the window rule) leaves a strip either side, each usually under half a blade: a leg that
        cannot succeed (ag2u Table I's criterion) and one more leg.
        ``blocked_cols``: bool [cols] of columns to leave out (a lane about to be pushed).

        Unlike the window rule this is not exactly east-west symmetric: a cluster centred on the world's
        middle line is tiled from the west, and a lane a cell off the straight-ahead threshold of
        :meth:`_split_decision` flips between pushing it now and lining up for it (``train_policy
        --mirror`` assumes the symmetry; the committed recipe does not use it).
        """
        cell = world.cell_m
        above_m = world.height_m[:world.work_rows] - target_level_m
        needs = above_m > world.cfg["uncleared_tolerance_m"]
        cut_m3 = np.clip(above_m, 0.0, None).sum(axis=0) * world.cell_area_m2
        excess_m3 = (np.clip(above_m - world.cfg["uncleared_tolerance_m"], 0.0, None).sum(axis=0)
                     * world.cell_area_m2)
        col_needs = needs.any(axis=0)
        if blocked_cols is not None:
            col_needs &= ~blocked_cols
            cut_m3 = np.where(blocked_cols, 0.0, cut_m3)
            excess_m3 = np.where(blocked_cols, 0.0, excess_m3)
        cols_to_grade = np.flatnonzero(col_needs)
        if not cols_to_grade.size:
            return None
        half = self._half_blade_cells(world)
        gaps = np.flatnonzero(np.diff(cols_to_grade) > half)
        starts = np.r_[cols_to_grade[0], cols_to_grade[gaps + 1]]
        ends = np.r_[cols_to_grade[gaps], cols_to_grade[-1]]
        j_dozer = dozer_east_m / cell - 0.5
        best = None
        for c0, c1 in zip(starts, ends):
            worth_m3 = float(excess_m3[c0:c1 + 1].sum())
            if worth_m3 < self.cfg["min_target_m3"]:
                continue
            key = (max(c0 - j_dozer, 0.0, j_dozer - c1), -worth_m3)
            if best is None or key < best[0]:
                best = (key, int(c0), int(c1))
        if best is None:
            return None
        _, c0, c1 = best
        seg_m3 = cut_m3[c0:c1 + 1]
        volume_m3 = float(seg_m3.sum())
        pushes = max(1, int(math.ceil(volume_m3 / self.capacity_m3)))
        if pushes == 1:
            # the blade-wide window sum centred on each column ("same" would misalign it when the blade is
            # wider than the world: its output then has the kernel's length)
            window_m3 = np.convolve(cut_m3, np.ones(2 * half + 1), "full")[half:half + world.cols]
            centre = c0 + int(np.argmax(window_m3[c0:c1 + 1]))
        else:
            from_west = c0 + c1 < world.cols - 1      # from the outer side (the same lane whoever asks)
            cum_m3 = np.cumsum(seg_m3 if from_west else seg_m3[::-1])
            far_edge = int(np.searchsorted(cum_m3, volume_m3 / pushes))
            offset = min(far_edge - half, half)        # the lane covers the near edge
            centre = c0 + offset if from_west else c1 - offset
        return self._lane_at(world, target_level_m, centre, 0)[:2]

    def _lane_start_north_m(self, world, south_row, blade_edge_ahead_m):
        """Dozer north (m) from which a push reaches the lane's south-most sand with ``margin_south_m`` to spare."""
        return south_row * world.cell_m - self.cfg["margin_south_m"] - blade_edge_ahead_m

    def _lane_at(self, world, target_level_m, centre, first_row):
        """(centre, south-most row still to grade, volume above target m^3) of the lane centred on a column,
        from row ``first_row`` north."""
        first_row = min(max(first_row, 0), world.work_rows)
        above_m = world.height_m[first_row:world.work_rows, self._lane_cols(world, centre)] - target_level_m
        rows = first_row + np.flatnonzero((above_m > world.cfg["uncleared_tolerance_m"]).any(axis=1))
        volume_m3 = float(np.clip(above_m, 0.0, None).sum() * world.cell_area_m2)
        return centre, int(rows[0]) if rows.size else 0, volume_m3

    def _split_decision(self, world, target_level_m, lane, dozer_ne_m, blade_edge_ahead_m):
        """Way-points of a "split" leg. The push runs from where the dozer stands to the lane's north end,
        so it is straight only when the dozer stands in that lane (within a quarter blade). When it does
        not: a lane straight ahead holding over ``straight_share`` of a blade load is pushed instead, else
        the push goes to the planned lane (diagonally, it clears little) and red is that lane's start, so
        the next leg pushes it straight. After a straight push, red is the start of the lane planned with
        this one's columns taken as cleared."""
        cell = world.cell_m
        half = self._half_blade_cells(world)
        j_dozer = int(dozer_ne_m[1] / cell)
        straight = abs(lane[0] - j_dozer) <= half // 2
        if not straight:
            edge_row = int((dozer_ne_m[0] + blade_edge_ahead_m) / cell)     # the push collects from here north
            ahead = self._lane_at(world, target_level_m, j_dozer, edge_row)
            if ahead[2] >= self.cfg["straight_share"] * self.capacity_m3:
                lane, straight = ahead[:2], True
        centre = lane[0]
        green = (world.work_north_max_m + self.cfg["into_spoil_m"] - blade_edge_ahead_m, (centre + 0.5) * cell)
        nxt = None
        if straight:
            blocked = np.zeros(world.cols, dtype=bool)
            blocked[self._lane_cols(world, centre)] = True
            nxt = self.plan_lane(world, target_level_m, green[1], blocked)
        if nxt is None:
            nxt = lane          # this lane again (straight), or nothing else is left
        red = (self._lane_start_north_m(world, nxt[1], blade_edge_ahead_m), (nxt[0] + 0.5) * cell)
        return _clip(world, green), _clip(world, red)

    def first_start(self, world, target_level_m, blade_edge_ahead_m=0.2):
        """Approach point of the best target (where the first leg should begin); "split": the start of
        the lane :meth:`plan_lane` picks next to it."""
        score = self.targets(world, target_level_m)
        best = np.unravel_index(int(np.argmax(score)), score.shape)
        if self.cfg["lanes"] == "split":
            lane = self.plan_lane(world, target_level_m, (best[1] + 0.5) * world.cell_m)
            if lane is not None:
                return _clip(world, (self._lane_start_north_m(world, lane[1], blade_edge_ahead_m),
                                     (lane[0] + 0.5) * world.cell_m))
        return _clip(world, ((best[0] + 0.5) * world.cell_m - self.cfg["approach_m"],
                             (best[1] + 0.5) * world.cell_m))


def _clip(world, p, margin_m=0.15):
    n_max = world.rows * world.cell_m - margin_m
    e_max = world.cols * world.cell_m - margin_m
    return (min(max(p[0], margin_m), n_max), min(max(p[1], margin_m), e_max))
