"""The mission planner (onboard.vessel.mission): its transitions over a RobotX task list, driven by the events a
boat run sends (geometry through ``observe``, labelled buoys, a pinger fix, time-outs), and bad input refused
without changing its state."""
import math

import pytest

from onboard.core.settings import ConfigError
from onboard.vessel import mission as ms

# a course laid out along north: speed gate at 20 m, obstacle field entry at 40 m and exit at 70 m, two candidate
# pinger gates at 100 m (centres east -9 and +9), the dock at 130 m
SPEED = (20.0, 0.0)
ENTRY, EXIT = (40.0, 0.0), (70.0, 2.0)
PINGER_AREA = (100.0, 0.0)
DOCK = (130.0, 0.0)
BUOYS = [("gate_left", 20.0, -5.0), ("gate_right", 20.0, 5.0), ("entry_left", 40.0, -6.0), ("entry_right", 40.0, 6.0),
         ("exit_left", 70.0, -4.0), ("exit_right", 70.0, 8.0), ("obstacle", 55.0, 1.0),
         # candidate gates at 100 m: west pair (-14, -4), east pair (4, 14); the pinger 6 m beyond the east gate
         ("obstacle", 100.0, -14.0), ("obstacle", 100.0, -4.0), ("obstacle", 100.0, 4.0), ("obstacle", 100.0, 14.0),
         ("obstacle", 106.0, 9.0), ("dock", 132.0, -4.0), ("dock", 132.0, 4.0)]


def tasks():
    return [ms.MissionTask("speed_gate", *SPEED), ms.MissionTask("obstacle_field", *EXIT, entry_ne_m=ENTRY),
            ms.MissionTask("pinger_gate", *PINGER_AREA), ms.MissionTask("dock", *DOCK)]


def drive(planner, points, t0_us=0, step_us=500000):
    """Feed the positions of a straight-line path through ``points`` (1 m apart) to ``observe``; returns the
    time reached and the states visited."""
    seen = [planner.state]
    t = t0_us
    for (n0, e0), (n1, e1) in zip(points, points[1:]):
        k = max(1, int(math.hypot(n1 - n0, e1 - e0)))
        for i in range(1, k + 1):
            p = (n0 + (n1 - n0) * i / k, e0 + (e1 - e0) * i / k)
            for event, data in planner.observe(p[0], p[1], t):
                planner.on_event(event, t, data)
            if not seen or seen[-1] != planner.state:
                seen.append(planner.state)
            t += step_us
    return t, seen


def test_the_whole_mission_in_order():
    p = ms.MissionPlanner(tasks(), (0.0, 0.0))
    assert p.state == "idle" and p.on_event("start", 0) == (SPEED[0] - 8.0, 0.0)
    assert p.state == "speed_gate/approach" and p.current_task.kind == "speed_gate"
    assert p.deadline_us == 150000000
    p.on_event("buoys_updated", 0, BUOYS)
    assert p.gate.seen and p.gate.ends == ((20.0, -5.0), (20.0, 5.0))
    t, seen = drive(p, [(0.0, 0.0), (12.0, 0.0), (24.0, 0.0)])
    assert seen == ["speed_gate/approach", "speed_gate/through", "obstacle_field/entry_approach"]
    assert p.outcomes[0] == "done"
    # the entry gate is re-placed on its labelled pair; then through the field to beyond the exit gate
    t, seen = drive(p, [(24.0, 0.0), (32.0, 0.0), (44.0, 0.0), (60.0, 3.0), (75.0, 2.0)], t)
    assert seen == ["obstacle_field/entry_approach", "obstacle_field/entry", "obstacle_field/exit",
                    "pinger_gate/listen"]
    assert p.outcomes[1] == "done" and p.state == "pinger_gate/listen"
    a = math.hypot(30.0, 2.0)                                   # the axis from the exit gate to the area
    assert p.destination == pytest.approx((PINGER_AREA[0] - 14.0 * 30.0 / a, 14.0 * 2.0 / a))
    # a fix near the pinger buoy (106, 9): the east gate (midpoint (100, 9)) is chosen, not the middle pair
    p.on_event("pinger_fix", t, (105.0, 8.0))
    assert p.state == "pinger_gate/approach"
    assert p.gate.centre == (100.0, 9.0) and p.gate.axis == (1.0, 0.0)
    assert p.destination == (92.0, 9.0)
    t, seen = drive(p, [(75.0, 2.0), (92.0, 9.0), (104.0, 9.0)], t)
    assert seen == ["pinger_gate/approach", "pinger_gate/through", "dock/approach"] and p.outcomes[2] == "done"
    assert p.destination == (DOCK[0] - 8.0, 0.0)
    t, seen = drive(p, [(104.0, 9.0), (122.0, 0.0), (125.0, 0.0)], t)
    assert p.state == "dock/bay" and p.destination == (DOCK[0] + 1.5, 0.0)
    t, seen2 = drive(p, [(125.0, 0.0), (128.0, 0.0)], t)
    seen += seen2[1:]
    assert seen == ["dock/approach", "dock/bay", "done"]
    assert p.outcomes == ["done", "done", "done", "done"] and p.destination is None and p.done
    assert p.on_event("arrived", t) is None and p.state == "done"


def test_a_fix_that_moves_chooses_the_gate_again_until_the_boat_commits():
    p = ms.MissionPlanner([ms.MissionTask("pinger_gate", *PINGER_AREA)], (60.0, 0.0))
    p.on_event("start", 0)
    assert p.state == "pinger_gate/listen"
    p.on_event("pinger_fix", 0, (106.0, -9.0))           # no buoys yet: the fix is kept
    assert p.state == "pinger_gate/listen" and p.fix_ne_m == (106.0, -9.0)
    p.on_event("buoys_updated", 0, BUOYS)
    assert p.gate.centre == (100.0, -9.0)
    p.on_event("pinger_fix", 0, (105.5, 8.5))
    assert p.gate.centre == (100.0, 9.0) and p.state == "pinger_gate/approach"
    p.on_event("arrived", 0)
    assert p.state == "pinger_gate/through"
    p.on_event("pinger_fix", 0, (106.0, -9.0))            # committed: no new choice
    assert p.gate.centre == (100.0, 9.0)


def test_a_missed_gate_and_a_time_out():
    p = ms.MissionPlanner(tasks()[:2], (0.0, 0.0), {"task_timeout_s": 60.0})
    p.on_event("start", 0)
    p.on_event("buoys_updated", 0, BUOYS)
    # round the speed gate's east buoy instead of through it: the way-point beyond is reached, the gate missed
    t, seen = drive(p, [(0.0, 0.0), (12.0, 0.0), (12.0, 8.0), (24.0, 8.0), (24.0, 0.0)])
    assert p.outcomes[0] == "missed" and p.state.startswith("obstacle_field/")
    # the field's time-out: "timeout" only counts once the deadline has passed
    p.on_event("timeout", t)
    assert p.outcomes[1] == "pending"
    events = p.observe(24.0, 0.0, p.deadline_us)
    assert ("timeout", None) in events
    p.on_event("timeout", p.deadline_us)
    assert p.outcomes == ["missed", "timed_out"] and p.done


def test_gate_crossing_needs_the_travel_direction_and_the_segment():
    p = ms.MissionPlanner([ms.MissionTask("speed_gate", *SPEED)], (0.0, 0.0))
    p.on_event("start", 0)
    p.on_event("buoys_updated", 0, BUOYS)
    p.observe(21.0, 0.0, 0)
    assert p.observe(19.0, 0.0, 1) == []                          # backwards through it
    p.observe(19.0, 7.0, 2)
    assert ("gate_passed", (20.0, 0.0)) not in p.observe(21.0, 7.0, 3)     # beside the east buoy
    p.observe(19.0, 1.0, 4)
    assert ("gate_passed", (20.0, 0.0)) in p.observe(21.0, 1.0, 5)
    assert ms.segments_cross((0, 0), (2, 2), (0, 2), (2, 0)) and not ms.segments_cross((0, 0), (1, 1), (3, 0), (3, 5))


def test_expected_labels_for_the_perception():
    p = ms.MissionPlanner(tasks(), (0.0, 0.0))
    names = [x[0] for x in p.expected()]
    assert names == ["speed_gate", "entry", "exit", "dock"]
    assert p.expected()[0][3] == pytest.approx(0.0)              # heading north along the course
    assert p.expected()[2][3] == pytest.approx(math.atan2(2.0, 30.0))


def test_a_field_without_an_entry_gate_and_a_waypoint():
    p = ms.MissionPlanner([ms.MissionTask("obstacle_field", *EXIT), ms.MissionTask("waypoint", 90.0, 0.0)], (0.0, 0.0))
    p.on_event("start", 0)
    assert p.state == "obstacle_field/exit" and p.destination == pytest.approx((EXIT[0] + 4.0 * 70 / math.hypot(70, 2),
                                                                             EXIT[1] + 4.0 * 2 / math.hypot(70, 2)))
    drive(p, [(0.0, 0.0), (74.0, 2.0), (90.0, 0.0)])
    assert p.outcomes == ["done", "done"] and p.done


@pytest.mark.parametrize("event,data,match", [
    ("jump", None, "unknown event"),
    ("pinger_fix", (float("nan"), 1.0), "finite"),
    ("pinger_fix", 3.0, "north_m, east_m"),
    ("pinger_fix", "here", "finite"),
    ("buoys_updated", [("obstacle", 1.0)], "role, north_m, east_m"),
    ("buoys_updated", 3, "list of"),
    ("arrived", (float("nan"), 1.0), "finite"),
    ("gate_passed", "gate", "finite"),
])
def test_bad_events_are_refused_and_change_nothing(event, data, match):
    p = ms.MissionPlanner(tasks(), (0.0, 0.0))
    p.on_event("start", 0)
    before = (p.state, p.destination, list(p.buoys), p.fix_ne_m, dict(p.events))
    with pytest.raises(ms.MissionError, match=match):
        p.on_event(event, 1, data)
    assert (p.state, p.destination, list(p.buoys), p.fix_ne_m, dict(p.events)) == before
    with pytest.raises(ms.MissionError, match="integer"):
        p.on_event("arrived", 1.5)


def test_bad_tasks_and_settings():
    with pytest.raises(ms.MissionError, match="unknown task kind"):
        ms.MissionTask("slalom", 1.0, 2.0)
    with pytest.raises(ms.MissionError, match="finite"):
        ms.MissionTask("dock", float("inf"), 2.0)
    with pytest.raises(ms.MissionError, match="empty"):
        ms.MissionPlanner([], (0.0, 0.0))
    with pytest.raises(ConfigError, match="approach_m"):
        ms.MissionPlanner(tasks(), (0.0, 0.0), {"approach_m": -1.0})
    with pytest.raises(ConfigError):
        ms.MissionPlanner(tasks(), (0.0, 0.0), {"arive_m": 2.0})


def test_stale_events_of_one_observe_are_ignored():
    """Crossing the entry gate and reaching its way-point in one step: the arrival belongs to the entry's
    way-point, not to the exit's that the crossing made the destination, so the field is not missed."""
    p = ms.MissionPlanner(tasks()[1:2], (0.0, 0.0))
    p.on_event("start", 0)
    p.on_event("buoys_updated", 0, BUOYS)
    drive(p, [(0.0, 0.0), (33.0, 0.0)])
    assert p.state == "obstacle_field/entry"
    events = p.observe(40.5, 0.0, 1)                     # past the entry line, within 3.5 m of (44, 0)
    assert [e for e, _ in events] == ["gate_passed", "arrived"]
    for event, data in events:
        p.on_event(event, 1, data)
    assert p.state == "obstacle_field/exit" and p.outcomes == ["pending"]
    # the way-point beyond a gate counts only past the gate's line (here 3 m beyond, within the 3.5 m radius)
    q = ms.MissionPlanner([ms.MissionTask("speed_gate", *SPEED)], (0.0, 0.0), {"through_m": 3.0})
    q.on_event("start", 0)
    q.on_event("buoys_updated", 0, BUOYS)
    q.on_event("arrived", 0)
    assert q.state == "speed_gate/through" and q.destination == (23.0, 0.0)
    q.observe(19.0, 8.0, 1)
    assert q.observe(19.7, 0.5, 2) == []                   # 3.3 m from the way-point, short of the line
    q.observe(19.7, 9.0, 3)
    assert [e for e, _ in q.observe(20.3, 9.0, 3)] == []   # past the line beside the gate: neither
    assert [e for e, _ in q.observe(20.5, 0.5, 4)] == ["arrived"]
    q.on_event("arrived", 4, q.destination)
    assert q.outcomes == ["missed"] and q.done
