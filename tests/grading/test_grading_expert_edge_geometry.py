"""The grading expert's "split" lanes on edge geometry: a dozer standing off the world's west edge (the lane
straight ahead of it lies outside the world and holds no sand, so the push goes to the pile's lane, not along
the west edge), a blade wider than the world, and a world already graded with min_target_m3 = 0."""
import numpy as np

from harness.scenarios.grading.expert import GradingExpert
from harness.sim.sand_world import SandWorld


def _world_with_pile(north_m, east_m):
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(north_m, east_m, 0.006, 0.2)
    return world


def test_lane_ahead_of_a_dozer_off_the_west_edge_is_empty():
    world = _world_with_pile(1.0, 2.45)
    expert = GradingExpert(0.4, {"lanes": "split"}, 0.003)
    cols = expert._lane_cols(world, -12)               # 0.3 m west of the world, blade half-width 8 cells
    assert np.arange(world.cols)[cols].size == 0


def test_split_push_goes_to_the_pile_when_the_dozer_is_west_of_the_world():
    world = _world_with_pile(1.95, 2.45)               # a pile at the east edge
    expert = GradingExpert(0.4, {"lanes": "split"}, 0.003)
    on_edge = expert.decide(world, 0.0, (1.0, 0.0), 0.2)
    off_edge = expert.decide(world, 0.0, (1.0, -0.3), 0.2)
    assert on_edge[0][1] > 2.0                         # the pile's lane
    assert off_edge == on_edge                         # not a push along the empty west edge (east 0.15 m)


def test_split_push_is_unchanged_for_a_dozer_inside_the_world():
    world = _world_with_pile(1.99, 1.2)
    expert = GradingExpert(0.4, {"lanes": "split"}, 0.003)
    green, red = expert.decide(world, 0.0, (1.0, 0.0), 0.2)
    assert abs(green[1] - 0.9875) < 1e-9 and abs(red[1] - 0.9875) < 1e-9
    assert expert.decide(world, 0.0, (1.0, -0.3), 0.2) == (green, red)


def test_one_push_lane_is_the_best_blade_window_when_the_blade_is_wider_than_the_world():
    """A 0.4 m blade (17 columns) on a world 16 columns wide: the lane is centred on the first column whose
    blade-wide window holds all the sand (4), not one column east of it."""
    world = SandWorld({"size_m": [2.5, 0.4], "piles_min": 0, "piles_max": 0})
    world.height_m[20:24, 0:13] = 0.05               # sand on columns 0..12, under one blade load
    expert = GradingExpert(0.4, {"lanes": "split"}, 0.003)
    half = expert._half_blade_cells(world)
    assert 2 * half + 1 > world.cols
    cut_m3 = world.height_m[:world.work_rows].sum(axis=0) * world.cell_area_m2
    windows = [cut_m3[max(0, c - half):c + half + 1].sum() for c in range(world.cols)]
    assert expert.plan_lane(world, 0.0, 0.1) == (int(np.argmax(windows[:13])), 20) == (4, 20)


def test_a_graded_world_is_done_with_min_target_zero():
    """min_target_m3 = 0: a world with no sand above target + tolerance has nothing to push (the episode ends),
    where the expert pushed nothing forever (and divided 0 by 0 to rank its targets)."""
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    for lanes in ("split", "window"):
        expert = GradingExpert(0.4, {"min_target_m3": 0.0, "lanes": lanes}, 0.003)
        assert expert.decide(world, 0.0, (1.0, 1.0), 0.2) is None
    world.add_pile(1.0, 1.2, 0.006, 0.2)
    assert GradingExpert(0.4, {"min_target_m3": 0.0}, 0.003).decide(world, 0.0, (1.0, 1.2), 0.2) is not None
