"""The vessel's arbiters (onboard.vessel.arbiters; RobotX AAVS III-D, figs. 9-10): straight to a free goal,
away from an obstacle in front, the hull's clearance kept in a kinematic closed loop, vote shadows, speed
proportional to the chosen region's distance, the veto, bad input refused with the state kept, and the
same inputs giving the same decisions and vote grids."""
import math

import pytest

from onboard.vessel.arbiters import (ArbiterInputError, DamnArbiter, NavState, PotentialFieldArbiter,
                                     make_arbiter)

NAMES = ("damn", "potential_field")


def _path_clearance_m(heading_rad, length_m, obstacle, start=(0.0, 0.0)):
    """Closest distance of the straight segment from ``start`` along ``heading_rad`` to the obstacle's centre."""
    on, oe, _ = obstacle
    un, ue = math.cos(heading_rad), math.sin(heading_rad)
    t = max(0.0, min(length_m, (on - start[0]) * un + (oe - start[1]) * ue))
    return math.hypot(start[0] + t * un - on, start[1] + t * ue - oe)


@pytest.mark.parametrize("name", NAMES)
def test_free_water_heads_straight_to_the_goal_at_full_speed(name):
    arb = make_arbiter(name)
    for bearing_deg in (0.0, 45.0, 135.0, -90.0):
        b = math.radians(bearing_deg)
        goal = (50.0 * math.cos(b), 50.0 * math.sin(b))
        heading, speed = arb.decide(NavState(0.0, 0.0, b, 1.0), [], goal)
        assert abs(math.remainder(heading - b, 2 * math.pi)) < 1e-9
        assert speed == pytest.approx(2.0)
        heading, _ = arb.decide(NavState(0.0, 0.0, b + 0.3, 1.0), [], goal)
        assert abs(math.remainder(heading - b, 2 * math.pi)) < 1e-9


def test_damn_slows_for_a_turn_and_turns_on_the_spot_beyond_90_deg():
    arb = DamnArbiter()
    _, speed = arb.decide(NavState(0.0, 0.0, 0.5, 1.0), [], (50.0, 0.0))
    assert speed == pytest.approx(2.0 * math.cos(0.5))
    _, speed = arb.decide(NavState(0.0, 0.0, 0.5, 1.0), [], (3.0, 0.0))        # near: steerage way x cos
    assert speed == pytest.approx(1.0 * math.cos(0.5))
    _, speed = arb.decide(NavState(0.0, 0.0, 2.5, 1.0), [], (50.0, 0.0))
    assert speed == 0.0


def test_damn_heading_is_the_nearest_region_bearing_to_an_off_grid_goal():
    arb = DamnArbiter({"headings": 36})                 # 10 deg regions
    heading, _ = arb.decide(NavState(0.0, 0.0, 0.0), [], (100 * math.cos(0.6), 100 * math.sin(0.6)))
    assert abs(heading - 0.6) <= math.radians(5.0) + 1e-9


@pytest.mark.parametrize("name", NAMES)
def test_turns_away_from_an_obstacle_in_front(name):
    # a buoy 10 m ahead, 0.8 m right of the line to the goal: turn left (DAMN: onto a path clear of the
    # inflated buoy; the potential field: towards its look-ahead's end, which bends round the buoy)
    buoy = (10.0, 0.8, 0.5)
    arb = make_arbiter(name)
    heading, speed = arb.decide(NavState(0.0, 0.0, 0.0, 1.5), [buoy], (40.0, 0.0))
    assert heading < -math.radians(5.0)
    assert speed > 0.5
    if name == "damn":
        assert _path_clearance_m(heading, 30.0, buoy) >= 0.5 + 2.5 + 1.5 - 1e-9
    else:
        assert min(math.hypot(n - buoy[0], e - buoy[1]) for n, e in arb.last_field["path_ne_m"]) > 0.5 + 2.5


def test_damn_shadow_of_a_buoy_in_front_of_the_goal():
    """Goal directly behind a buoy: with shadows the chosen region is visible past the inflated buoy; without
    them the region behind the buoy wins (the trap the paper's shadows remove)."""
    buoy = (20.0, 0.0, 0.5)
    with_sh = DamnArbiter()
    heading, _ = with_sh.decide(NavState(0.0, 0.0, 0.0), [buoy], (40.0, 0.0))
    assert _path_clearance_m(heading, 40.0, buoy) >= 0.5 + 2.5 + 1.5 - 1e-9
    votes = with_sh.last_votes
    behind = 0 * votes["rings"] + votes["rings"] - 1           # bearing 0, the outer ring: behind the buoy
    assert votes["avoid"][behind] == -1.0
    without = DamnArbiter({"shadows": False})
    heading, _ = without.decide(NavState(0.0, 0.0, 0.0), [buoy], (40.0, 0.0))
    assert heading == 0.0
    assert without.last_votes["avoid"][behind] == 0.0


def test_damn_vote_grid_layers():
    arb = DamnArbiter({"headings": 36, "rings": 10, "range_step_m": 2.0})
    buoy = (-10.0, 0.0, 1.0)
    arb.decide(NavState(0.0, 0.0, 0.0), [buoy], (0.0, 10.0))
    v = arb.last_votes
    n = 36 * 10
    assert len(v["goal"]) == len(v["avoid"]) == len(v["total"]) == n
    # the region holding the destination (bearing 90 deg = index 9, range 10 m = ring 4) has the top goal vote
    at_goal = 9 * 10 + 4
    assert v["goal"][at_goal] == pytest.approx(1.0)
    assert max(v["goal"]) == v["goal"][at_goal]
    assert v["best"] == at_goal
    # the region on the buoy (bearing 180 deg, 10 m) gets the strongest objection
    on_buoy = 18 * 10 + 4
    assert v["avoid"][on_buoy] == -1.0
    # total = goal x 1 + avoid x 3 + the turn vote (bearing 180 deg from a yaw of 0: -0.1)
    assert v["total"][on_buoy] == pytest.approx(v["goal"][on_buoy] - 3.0 - 0.1)
    assert arb.region_offset_ne_m(on_buoy) == pytest.approx((-10.0, 0.0), abs=1e-9)


def test_damn_speed_is_proportional_to_the_chosen_distance():
    arb = DamnArbiter({"headings": 36, "range_step_m": 1.0, "rings": 30, "min_speed_mps": 0.0})
    _, near = arb.decide(NavState(0.0, 0.0, 0.0), [], (4.0, 0.0))
    assert near == pytest.approx(0.25 * 4.0)
    _, mid = arb.decide(NavState(0.0, 0.0, 0.0), [], (6.0, 0.0))
    assert mid == pytest.approx(0.25 * 6.0)


def test_damn_stops_when_every_region_is_objected_to():
    ring = [(3.0 * math.cos(a), 3.0 * math.sin(a), 1.0) for a in (k * math.pi / 4 for k in range(8))]
    arb = DamnArbiter()
    heading, speed = arb.decide(NavState(0.0, 0.0, 0.7), ring, (30.0, 0.0))
    assert speed == 0.0 and heading == pytest.approx(0.7)
    assert arb.last_votes["veto"] and arb.vetoes == 1


def test_potential_field_reaches_a_local_minimum_behind_a_buoy():
    """Exactly behind a buoy the field's descent stops in front of it: a look-ahead that oscillates and a
    short reach (the stall the scenario counts); off the axis it slides round."""
    arb = PotentialFieldArbiter()
    arb.decide(NavState(0.0, 0.0, 0.0), [(8.0, 0.0, 0.5)], (40.0, 0.0))
    assert arb.last_field["oscillated"]
    assert arb.last_field["reach_m"] < 5.0
    heading, _ = arb.decide(NavState(0.0, 0.0, 0.0), [(8.0, 1.0, 0.5)], (40.0, 0.0))
    assert heading < 0.0


def test_potential_field_vectors():
    arb = PotentialFieldArbiter()
    arb.decide(NavState(0.0, 0.0, 0.0), [(10.0, 0.0, 0.5)], (30.0, 0.0))
    fn, fe = arb.field_vector(10.0, 4.0)                # beside the buoy: pushed away (east)
    assert fe > 0.0
    fn, fe = arb.field_vector(-20.0, 30.0)              # far from it: pulled towards the goal
    assert fn > 0.0 and fe < 0.0
    # no source: the sink's force 1/2 k_a in the weighted average w_g / (w_g + w_o) = 1 / 4
    assert arb.field_vector(0.0, 0.0, [], (10.0, 0.0)) == pytest.approx((0.5 * 5.0 / 4.0, 0.0))


FIELD = [(20.0, -12.0, 0.5), (20.0, 1.0, 0.5), (35.0, 12.0, 0.6), (35.0, -4.0, 0.4), (50.0, 1.0, 0.5)]
NARROW = [(20.0, -9.0, 0.5), (20.0, 0.5, 0.5), (35.0, 4.0, 0.6), (35.0, -6.0, 0.4), (50.0, 1.0, 0.5)]


@pytest.mark.parametrize("name, buoys", [("damn", FIELD), ("potential_field", FIELD), ("damn", NARROW)])
def test_clearance_kept_through_a_buoy_field_kinematic_loop(name, buoys):
    """A kinematic boat (rate-limited turn, first-order speed response) driven by the arbiter through buoys
    reaches the goal with its hull circle (2.5 m) clear of every buoy (DAMN also through a 2.5 m gap
    between inflated circles, where the potential field has a local minimum)."""
    goal = (70.0, 0.0)
    arb = make_arbiter(name)
    n, e, yaw, u = 0.0, 0.0, 0.0, 0.0
    dt = 0.1
    min_clear = float("inf")
    for step in range(1500):
        if step % 3 == 0:                                               # decisions at 3.3 Hz
            heading, speed = arb.decide(NavState(n, e, yaw, u), buoys, goal)
        err = math.remainder(heading - yaw, 2 * math.pi)
        yaw += max(-0.5 * dt, min(0.5 * dt, 1.5 * err * dt))            # rate-limited turn
        u += (speed - u) * dt / 1.0
        n += u * math.cos(yaw) * dt
        e += u * math.sin(yaw) * dt
        min_clear = min(min_clear, min(math.hypot(n - bn, e - be) - r - 2.5 for bn, be, r in buoys))
        if math.hypot(n - goal[0], e - goal[1]) < 2.0:
            break
    assert math.hypot(n - goal[0], e - goal[1]) < 2.0
    assert min_clear > 0.0


@pytest.mark.parametrize("name", NAMES)
def test_same_inputs_same_decisions(name):
    buoys = [(12.0, 1.0, 0.5), (18.0, -3.0, 0.7), (25.0, 2.0, 0.4)]
    a, b = make_arbiter(name), make_arbiter(name)
    outs = []
    for arb in (a, b, a):
        outs.append([arb.decide(NavState(k * 1.5, 0.2 * k, 0.1 * k, 1.0), buoys, (40.0, 3.0)) for k in range(10)])
    assert outs[0] == outs[1] == outs[2]
    if name == "damn":
        assert a.last_votes == b.last_votes
    else:
        assert a.last_field == b.last_field


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nav, obstacles, destination, words", [
    (NavState(float("nan"), 0.0, 0.0), [], (10.0, 0.0), "north_m"),
    (NavState(0.0, 0.0, float("inf")), [], (10.0, 0.0), "yaw_rad"),
    (NavState(0.0, 0.0, 0.0), [(5.0, 0.0, -1.0)], (10.0, 0.0), "obstacle 0"),
    (NavState(0.0, 0.0, 0.0), [(5.0, 0.0)], (10.0, 0.0), "obstacle 0"),
    (NavState(0.0, 0.0, 0.0), [(5.0, float("nan"), 1.0)], (10.0, 0.0), "obstacle 0"),
    (NavState(0.0, 0.0, 0.0), [], (float("nan"), 0.0), "destination"),
    (NavState(0.0, 0.0, 0.0), [], 7.0, "destination"),
    (object(), [], (10.0, 0.0), "nav_state"),
])
def test_bad_input_is_refused_and_keeps_the_state(name, nav, obstacles, destination, words):
    arb = make_arbiter(name)
    good = arb.decide(NavState(0.0, 0.0, 0.0), [(8.0, 1.0, 0.5)], (20.0, 0.0))
    kept = dict(arb.last_votes if name == "damn" else arb.last_field)
    with pytest.raises(ArbiterInputError) as err:
        arb.decide(nav, obstacles, destination)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert (arb.last_votes if name == "damn" else arb.last_field) == kept
    assert arb.decisions == 1
    assert arb.decide(NavState(0.0, 0.0, 0.0), [(8.0, 1.0, 0.5)], (20.0, 0.0)) == good


def test_unknown_arbiter_and_bad_settings():
    from onboard.core.settings import ConfigError
    with pytest.raises(ArbiterInputError):
        make_arbiter("vfh")
    with pytest.raises(ConfigError, match="headings"):
        DamnArbiter({"headings": 3})
    with pytest.raises(ConfigError, match="shadow"):
        DamnArbiter({"shadow": False})


def test_cost_to_go_detour_is_zero_in_open_water_and_counts_the_way_round_a_wall():
    from onboard.vessel.arbiters import CostToGo
    wall = [(20.0, float(e), 0.5) for e in range(-10, 11)]          # north 20, east -10..10, 1 m apart
    plan = CostToGo(wall, (40.0, 0.0), (-20.0, -40.0, 60.0, 40.0), 1.0, 2.0)
    assert plan.detour(35.0, 13.0) == 0.0 and plan.detour(0.0, 30.0) == 0.0
    assert plan.at(35.0, 0.0) == pytest.approx(5.0)
    assert plan.at(20.0, 0.0) == float("inf") and plan.detour(20.0, 0.0) == float("inf")
    # straight behind the wall: round one of its ends (12.5 m from the centre line) and back; the 8-connected
    # grid measures that way between its straight length and its octile length
    behind = plan.detour(0.0, 0.0)
    assert 2 * math.hypot(20.0, 12.5) - 40.0 < behind <= 2 * (20.0 + (math.sqrt(2) - 1) * 13.0) - 40.0 + 1e-9


def test_damn_goes_round_a_u_of_buoys_not_into_it():
    """A U open towards the vessel, the goal behind its bottom: with straight-line goal votes the best region
    is inside the U (the reactive trap); with the cost-to-go votes it is outside, round an arm."""
    u = [(30.0, float(e), 0.5) for e in range(-8, 9, 2)] + [(float(n), float(e), 0.5) for e in (-8, 8)
                                                            for n in range(18, 30, 2)]
    inside = DamnArbiter({"goal_vote": "distance"})
    heading, _ = inside.decide(NavState(0.0, 0.0, 0.0), u, (45.0, 0.0))
    assert abs(heading) < math.atan2(8.0, 18.0)                     # between the arms' open ends
    planned = DamnArbiter()
    heading, _ = planned.decide(NavState(0.0, 0.0, 0.0), u, (45.0, 0.0))
    assert abs(heading) > math.atan2(8.0 + 0.5 + 2.5, 18.0)          # outside an arm's end with the hull
    assert planned.plans == 1
    planned.decide(NavState(1.0, 0.0, 0.0), u, (45.0, 0.0))
    assert planned.plans == 1                                      # same obstacles, destination: grid kept
    planned.decide(NavState(1.0, 0.0, 0.0), u[1:], (45.0, 0.0))
    assert planned.plans == 2


# ---------------------------------------------------------------------------------------------- the part's debounce
def _part_on_node(config=None, obstacles_fn=None):
    from onboard.runtime.node import Node
    from onboard.vessel.arbiters_part import ArbiterPart
    node = Node("arbiter-test")
    part = node.add("arbiter", ArbiterPart("damn", config, (40.0, 0.0), obstacles_fn))
    return part


BUOYS = ((15.0, -1.0, 0.5), (22.0, 3.0, 0.6))


def test_a_creep_below_the_tolerance_does_not_rebuild_the_cost_to_go_grid_and_above_does():
    from onboard.vessel.arbiters_part import ObstaclesSample
    part = _part_on_node({"obstacle_tolerance_m": 0.3})
    part.on_obstacles(ObstaclesSample(0, BUOYS))
    part.reference(0.0, 0.0, 0.0, 1.0, 100000)
    assert part.arbiter.plans == 1 and part.obstacle_updates == 1
    # every buoy creeps by up to 0.25 m (north, east, radius), one step at a time: the set held, no new grid
    for k in range(1, 6):
        crept = tuple((n + 0.05 * k, e - 0.05 * k, r + 0.05 * k) for n, e, r in BUOYS)
        part.on_obstacles(ObstaclesSample(k, crept))
        part.reference(0.0, 0.0, 0.0, 1.0, 100000 + k)
    assert part.arbiter.plans == 1 and part.obstacle_updates == 1 and part.obstacles == BUOYS
    # one moved 0.35 m from the set held: replaced, the grid computed again
    moved = ((15.35, -1.0, 0.5), BUOYS[1])
    part.on_obstacles(ObstaclesSample(10, moved))
    part.reference(0.0, 0.0, 0.0, 1.0, 200000)
    assert part.arbiter.plans == 2 and part.obstacles == moved
    # a buoy added (even where one was): a new set
    part.on_obstacles(ObstaclesSample(11, moved + ((30.0, 0.0, 0.4),)))
    part.reference(0.0, 0.0, 0.0, 1.0, 300000)
    assert part.arbiter.plans == 3 and len(part.obstacles) == 3
    # a tolerance of 0 replaces on every change
    strict = _part_on_node({"obstacle_tolerance_m": 0.0})
    for k in range(3):
        strict.on_obstacles(ObstaclesSample(k, tuple((n + 0.01 * k, e, r) for n, e, r in BUOYS)))
        strict.reference(0.0, 0.0, 0.0, 1.0, 100000 + k)
    assert strict.arbiter.plans == 3


def test_the_perceived_obstacles_are_debounced_too_and_the_destination():
    held = [BUOYS]
    part = _part_on_node({"obstacle_tolerance_m": 0.3, "destination_tolerance_m": 0.4}, lambda: held[0])
    part.reference(0.0, 0.0, 0.0, 1.0, 0)
    held[0] = tuple((n + 0.2, e, r) for n, e, r in BUOYS)
    part.reference(0.0, 0.0, 0.0, 1.0, 100000)
    assert part.arbiter.plans == 1 and part.obstacles == BUOYS
    # the destination: within 0.4 m kept (no new grid), beyond replaced
    assert not part.set_destination(40.3, -0.3)
    part.reference(0.0, 0.0, 0.0, 1.0, 200000)
    assert part.destination == (40.0, 0.0) and part.arbiter.plans == 1
    assert part.set_destination(40.5, 0.0)
    part.reference(0.0, 0.0, 0.0, 1.0, 300000)
    assert part.destination == (40.5, 0.0) and part.arbiter.plans == 2 and part.destination_updates == 1


def test_arrive_radius_is_a_setting_and_bad_part_settings_are_refused():
    from onboard.vessel.arbiters_part import ArbiterPart, ArbiterPartError
    near = _part_on_node({"arrive_radius_m": 5.0})
    assert near.reference(36.0, 0.0, 0.3, 1.0, 0) == (0.3, 0.0) and near.arrived      # 4 m off: arrived
    default = _part_on_node()
    assert default.reference(36.0, 0.0, 0.3, 1.0, 0)[1] > 0.0 and not default.arrived  # 3 m by default
    for bad in ({"arrive_radius_m": -1.0}, {"obstacle_tolerance_m": float("nan")}, {"destination_tolerance_m": "x"}):
        with pytest.raises(ArbiterPartError, match="arbiter part"):
            ArbiterPart("damn", bad)
    with pytest.raises(ValueError):
        ArbiterPart("damn", {"no_such_setting": 1.0})
