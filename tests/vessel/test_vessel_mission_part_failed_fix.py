"""The mission part tries to locate the pinger once per new ping: a try that fails (here every hydrophone position
over all pings lies on one line, a mirror-ambiguous fix) is counted once, not again at every mission period on
the same pings; the next ping brings the next try."""
from onboard.runtime.node import Node
from onboard.vessel.arbiters_part import ArbiterPart
from onboard.vessel.buoy_perception import PerceptionPart
from onboard.vessel.mission_part import MissionPart, PingSample

LINE_LAYOUT = [[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]]
MISSION = {"tasks": [{"kind": "pinger_gate", "north_m": 60.0, "east_m": 10.0}], "start_ne_m": [0.0, 0.0],
           "hydrophones_body_m": LINE_LAYOUT, "pinger": {"first_task": 0, "min_pings": 4, "max_pings": 10},
           "rate_hz": 2}


def test_a_failed_fix_is_tried_once_per_ping_count():
    pose = [None]
    node = Node("mission-failed-fix")
    perception = node.add("perception", PerceptionPart(lambda: pose[0], {}, 10))
    arbiter = node.add("arbiter", ArbiterPart("damn", {}, None, None))
    mission = node.add("mission", MissionPart(lambda: pose[0], perception, arbiter, MISSION))
    t_us = 0
    for k in range(4):                          # along the hydrophones' line, heading north: all on one line
        pose[0] = (3.0 * k, 0.0, 0.0)
        mission.on_ping(PingSample(t_us, [1e-4, 2e-4]))
        t_us += 100000
        node.step(t_us)
    for _ in range(20):                         # ten mission periods without a new ping
        t_us += 100000
        node.step(t_us)
    assert mission.fixes == 0 and mission.locate_failures == 1
    pose[0] = (12.0, 0.0, 0.0)
    mission.on_ping(PingSample(t_us, [1e-4, 2e-4]))
    for _ in range(20):
        t_us += 100000
        node.step(t_us)
    assert mission.fixes == 0 and mission.locate_failures == 2 and mission.report()["locate_failures"] == 2
