"""The mission part of the boat app (onboard.vessel.mission_part; RobotX AAVS III-D and IV): on a Node with the
real perception and arbiter parts, it starts the planner, hands the arbiter the planner's destination, holds
each ping with the EKF pose at its arrival and locates the pinger from pings heard at several poses (figs. 5-8);
pings before a pose or with the wrong count are counted and dropped; its settings are plain data, checked with
one line; the WAM-V app refuses a mission without perception and an arbiter; a ping sample decodes from a log."""
import json
import math

import numpy as np
import pytest

from boards.wamv.app import WamvApp
from harness.sim.hydrophones import Hydrophones
from onboard.runtime.node import Node
from onboard.runtime.replay_feed import decode_sample
from onboard.vessel.arbiters_part import ArbiterPart
from onboard.vessel.buoy_perception import PerceptionPart
from onboard.vessel.mission_part import MissionPart, MissionPartError, PingSample, settings

LAYOUT = [[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]]
PINGER_NE = (55.0, 18.0)
MISSION = {"tasks": [{"kind": "pinger_gate", "north_m": 60.0, "east_m": 10.0}], "start_ne_m": [0.0, 0.0],
           "hydrophones_body_m": LAYOUT, "pinger": {"first_task": 0, "min_pings": 4, "max_pings": 10},
           "rate_hz": 2}


def _node(config=MISSION):
    pose = [None]
    node = Node("mission-test")
    perception = node.add("perception", PerceptionPart(lambda: pose[0], {}, 10))
    arbiter = node.add("arbiter", ArbiterPart("damn", {}, None, None))
    mission = node.add("mission", MissionPart(lambda: pose[0], perception, arbiter, config))
    return node, pose, arbiter, mission


def test_the_mission_drives_the_arbiter_and_locates_the_pinger_from_pings_at_several_poses():
    node, pose, arbiter, mission = _node()
    hyd = Hydrophones(LAYOUT, {"timing_sigma_s": 2e-6}, np.random.default_rng(3))
    # no pose yet: a ping is dropped and counted, the planner does not start
    mission.on_ping(PingSample(0, [1e-4, 2e-4]))
    node.step(0)
    assert mission.pings_no_pose == 1 and mission.planner.state == "idle" and arbiter.destination is None
    t_us = 0
    for k in range(12):                 # a track north with a changing heading, one ping every 2 s
        pose[0] = (3.0 * k, 0.5 * k, 0.4 * math.sin(k))
        tdoa, _ = hyd.ping(PINGER_NE, pose[0])
        mission.on_ping(PingSample(t_us, tdoa))
        for _ in range(20):
            t_us += 100000
            node.step(t_us)
    assert len(mission.pings) == 12 and mission.fixes >= 1
    fn, fe, used = mission.fix
    assert used == 12 and math.hypot(fn - PINGER_NE[0], fe - PINGER_NE[1]) < 1.0
    assert mission.planner.events["pinger_fix"] >= 1
    # the planner listens before the pinger area; the arbiter steers where it says
    assert mission.planner.state.startswith("pinger_gate/") and arbiter.destination == mission.planner.destination
    # a ping with the wrong number of time differences, or a NaN, is counted and dropped
    mission.on_ping(PingSample(t_us, [1e-4]))
    mission.on_ping(PingSample(t_us, [float("nan"), 1e-4]))
    assert mission.bad_pings == 2 and len(mission.pings) == 12
    rep = mission.report()
    assert rep["pings"] == 12 and rep["bad_pings"] == 2 and rep["pings_no_pose"] == 1


def test_without_a_pinger_task_no_fix_is_sought_and_the_destination_follows_the_planner():
    cfg = dict(MISSION, tasks=[{"kind": "waypoint", "north_m": 20.0, "east_m": 5.0}])
    node, pose, arbiter, mission = _node(cfg)
    pose[0] = (0.0, 0.0, 0.0)
    for k in range(8):
        mission.on_ping(PingSample(k, [1e-4, 2e-4]))
    for k in range(1, 6):
        node.step(k * 100000)
    assert mission.fixes == 0 and arbiter.destination == (20.0, 5.0)
    pose[0] = (19.0, 5.0, 0.0)               # arrived: the mission is over
    for k in range(6, 12):
        node.step(k * 100000)
    assert mission.done and mission.planner.outcomes == ["done"]


@pytest.mark.parametrize("bad, words", [
    ({"tasks": []}, "tasks"),
    ({"tasks": [{"kind": "regatta", "north_m": 1.0, "east_m": 0.0}]}, "unknown task kind"),
    ({"tasks": [{"kind": "dock", "north_m": float("nan"), "east_m": 0.0}]}, "finite"),
    ({"tasks": [{"kind": "dock", "north_m": 1.0, "east_m": 0.0, "colour": "red"}]}, "task"),
    ({"pinger": {"min_pings": 5, "max_pings": 4}}, "max_pings"),
    ({"pinger": {"locator_sigma_s": 0.0}}, "locator_sigma_s"),
    ({"hydrophones_body_m": [[0.0, 0.0]]}, "hydrophones_body_m"),
    ({"start_ne_m": [0.0]}, "start_ne_m"),
    ({"rate_hz": 3}, "rate_hz"),
    ({"planner": {"approach_m": -1.0}}, "approach_m"),
    ({"speed": 3}, "unknown setting"),
])
def test_bad_settings_are_refused_with_one_line(bad, words):
    with pytest.raises(MissionPartError, match=words) as info:
        settings(dict(MISSION, **bad))
    assert "\n" not in str(info.value)


def test_the_setting_is_plain_data_and_the_app_needs_perception_and_an_arbiter():
    cfg = settings(MISSION)
    assert json.loads(json.dumps(cfg)) == cfg
    with pytest.raises(ValueError, match="perception and arbiter"):
        WamvApp(None, None, {"mission": MISSION, "arbiter": "damn"})


def test_a_ping_sample_decodes_from_a_recording():
    s = PingSample(1234, np.array([1.5e-4, -2.5e-4]))
    again = decode_sample("PingSample", json.loads(json.dumps(s.as_dict())))
    assert again == s and again.tdoa_s == (1.5e-4, -2.5e-4)
