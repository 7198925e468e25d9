"""The swarm member app (onboard.swarm.member): parts on a Node, the agent's input order, failsafe, frames."""
import ast
import math
import os

import numpy as np
import pytest

from harness.scenarios.swarm import flight as ep
from onboard.core.samples import RangeSample
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm.agent import GOAL_ID, SwarmAgent
from onboard.swarm.bearing_net import BearingNet
from onboard.core.settings import ConfigError
from onboard.swarm.member import FLIGHT_AGENT_CONFIG, SwarmMember, body_to_nav, nav_to_body

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEARING = os.path.join(REPO, "models", "swarm", "bearing", "weights.npz")
PERIOD_US = 100000
T0_US = 7000000                 # the mission starts at 7 s on the node's clock


class _Always:
    def __init__(self, action):
        self.action = action

    def act(self, obs):
        return self.action


class _Driver:
    """A driver stand-in: keeps every command, and the landings."""

    def __init__(self):
        self.cmds = []
        self.landed_at = []

    def command(self, sp):
        self.cmds.append(sp)
        return True

    def land(self, now_us):
        self.landed_at.append(now_us)
        return True


@pytest.fixture(scope="module")
def net():
    return BearingNet.load(BEARING)


def _member(net, peers=(1, 2), seed=5, config=None, agent=None):
    drv = _Driver()
    mem = SwarmMember(_Always(0), net, NumpyDraws(np.random.default_rng(seed)), list(peers), drv,
                      config, dict({"mode": "pf", "n_particles": 50}, **(agent or {})), start_us=T0_US)
    return mem, drv


def test_inputs_reach_the_agent_in_the_order_of_the_per_drone_loop(net):
    """Ranges arrive interleaved; the agent sees peer 1's (oldest first, the last one marked as the
    estimator's input), a dropout for silent peer 2, then the goal, then the decision - and a twin agent
    fed the same calls by hand (same random stream) decides the same setpoint."""
    mem, drv = _member(net)
    calls = []
    real_observe = mem.agent.observe

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        return real_observe(*args, **kwargs)

    mem.agent.observe = recording
    twin = SwarmAgent(_Always(0), net, NumpyDraws(np.random.default_rng(5)), {"mode": "pf", "n_particles": 50})
    for k in range(5):
        t = k * PERIOD_US
        now = T0_US + t
        mem.on_velocity(now, (0.2, -0.1), 0.0)
        mem.on_range(RangeSample(now - 60000, 1, 1.50 + 0.01 * k, (0.1, 0.0)))
        mem.on_goal_range(now, 2.0 - 0.05 * k)
        mem.on_range(RangeSample(now - 20000, 1, 1.52 + 0.01 * k, (0.1, 0.0)))
        mem.step(now)
        expected = [((t - 60000, 1, 1.50 + 0.01 * k, (0.2, -0.1), (0.1, 0.0)),
                     {"estimator_input": False}),
                    ((t - 20000, 1, 1.52 + 0.01 * k, (0.2, -0.1), (0.1, 0.0)), {"estimator_input": True}),
                    ((t, 2, None, (0.2, -0.1), None), {"estimator_input": True}),
                    ((t, GOAL_ID, 2.0 - 0.05 * k, (0.2, -0.1), (0.0, 0.0)), {"estimator_input": True})]
        assert calls == expected
        for args, kwargs in expected:
            twin.observe(*args, **kwargs)
        assert mem.decision.setpoint_body_mps == twin.decide(t, (0.2, -0.1))
        assert [row[0] for row in mem.decision.last_inputs] == [1, 1, 2, GOAL_ID]
        calls.clear()
    assert len(drv.cmds) == 5 and drv.cmds[-1].time_us == T0_US + 4 * PERIOD_US
    rep = mem.report()
    assert rep["decision"]["dropouts"] == 5 and rep["decision"]["ranges_used"] == 10
    assert rep["failsafe_engagements"] == 0
    assert rep["scheduler"]["groups"]["decide"]["runs"] == 5


def test_a_neighbour_first_heard_of_later_is_tracked_after_the_listed_ones(net):
    mem, _drv = _member(net, peers=(2,))
    mem.on_velocity(T0_US, (0.0, 0.0), 0.0)
    mem.on_range(RangeSample(T0_US, 5, 1.0, (0.0, 0.0)))
    mem.on_range(RangeSample(T0_US, 2, 1.2, (0.0, 0.0)))
    mem.on_goal_range(T0_US, 1.0)
    mem.step(T0_US)
    assert [row[0] for row in mem.decision.last_inputs] == [2, 5, GOAL_ID]
    assert mem.decision.peers == [2, 5]


def test_the_setpoint_goes_out_in_the_drivers_navigation_frame(net):
    """Heading 90 deg (east): forward is east, right is south."""
    assert body_to_nav((1.0, 0.0), math.pi / 2) == pytest.approx((0.0, 1.0), abs=1e-12)
    assert body_to_nav((0.0, 1.0), math.pi / 2) == pytest.approx((-1.0, 0.0), abs=1e-12)
    for yaw in (-2.0, 0.3, 3.0):
        assert nav_to_body(body_to_nav((0.4, -0.7), yaw), yaw) == pytest.approx((0.4, -0.7), abs=1e-12)
    mem, drv = _member(net, peers=(1,), agent={"approach_radius_m": 0.0})
    mem.agent.setpoint_body_mps = (0.5, 0.0)      # the DQN's action 0 (forward) integrates from here
    for k in range(3):
        now = T0_US + k * PERIOD_US
        mem.on_velocity(now, (0.5, 0.0), math.pi / 2)
        mem.on_range(RangeSample(now, 1, 3.0, (0.0, 0.0)))
        mem.on_goal_range(now, 3.0)
        mem.step(now)
    sp = mem.decision.setpoint_body_mps
    vn, ve, vd = drv.cmds[-1].vel_ned_mps
    assert sp[0] > 0.5 and (vn, ve, vd) == pytest.approx((-sp[1], sp[0], 0.0), abs=1e-12)


def test_a_silent_uwb_link_hovers_then_lands_and_the_member_resumes_when_ranges_return(net):
    mem, drv = _member(net, peers=(1,), config={"uwb_timeout_us": 300000, "failsafe_land_s": 1.0})
    mem.agent.setpoint_body_mps = (0.6, 0.0)
    engaged_at = None
    for k in range(40):
        now = T0_US + k * PERIOD_US
        mem.on_velocity(now, (0.5, 0.0), 0.0)
        mem.on_goal_range(now, 3.0)
        if k < 5 or k >= 30:                           # the UWB link is silent from 0.5 s to 3 s
            mem.on_range(RangeSample(now, 1, 2.0, (0.0, 0.0)))
        mem.step(now)
        if mem.failsafe.engaged and engaged_at is None:
            engaged_at = k
        if 9 <= k < 30:
            assert mem.failsafe.reasons == {"stale:uwb"}
            assert drv.cmds[-1].vel_ned_mps == (0.0, 0.0, 0.0)       # hover, not the DQN's setpoint
            assert mem.agent.setpoint_body_mps == (0.0, 0.0)
    assert engaged_at == 8                  # last range at 0.4 s, stale once more than 0.3 s old
    assert drv.landed_at == [T0_US + 18 * PERIOD_US]                    # 1 s after it engaged, once
    assert not mem.failsafe.engaged
    assert drv.cmds[-1].vel_ned_mps != (0.0, 0.0, 0.0)
    rep = mem.report()
    assert rep["failsafe_engagements"] == 1 and rep["command"]["landings"] == 1
    assert rep["scheduler"]["watchdog"]["uwb"]["trips"] == 1


def test_no_decision_before_the_own_velocity_is_known(net):
    mem, drv = _member(net, peers=(1,))
    mem.on_range(RangeSample(T0_US, 1, 2.0, (0.0, 0.0)))
    mem.step(T0_US)
    assert mem.decision.setpoint_body_mps is None and mem.decision.waiting_steps == 1
    assert drv.cmds[-1].vel_ned_mps == (0.0, 0.0, 0.0)
    mem.on_velocity(T0_US + PERIOD_US, (0.0, 0.0), 0.0)
    mem.step(T0_US + PERIOD_US)
    assert [row[0] for row in mem.decision.last_inputs] == [1]     # the range waited in its queue


def test_bad_samples_are_refused_at_the_entry_points(net):
    mem, _drv = _member(net, peers=(1,), config={"queue_limit": 2})
    mem.on_range(RangeSample(T0_US, 1, float("nan"), (0.0, 0.0)))
    mem.on_range(RangeSample(T0_US, 1, 1.0, (float("inf"), 0.0)))
    mem.on_velocity(T0_US, (float("nan"), 0.0), 0.0)
    mem.on_velocity(T0_US, (0.0, 0.0), float("inf"))
    mem.on_goal_range(T0_US, float("-inf"))
    assert mem.inputs.rejected_samples == 5 and mem.inputs.velocity is None
    assert mem.inputs.ranges == [] and mem.inputs.goal_ranges == []
    assert all(v["feeds"] == 0 for v in mem.node.watchdog.report().values())
    for k in range(3):
        mem.on_range(RangeSample(T0_US + k, 1, 1.0 + k, (0.0, 0.0)))
    assert mem.inputs.dropped_samples == 1 and [s.range_m for s in mem.inputs.ranges] == [2.0, 3.0]


@pytest.mark.parametrize("config,needle", [
    ({"step_rate_hz": 0}, "SwarmMember setting step_rate_hz must be a whole number of Hz"),
    ({"step_rate_hz": 3}, "SwarmMember setting step_rate_hz must be a whole number of Hz dividing 1000000"),
    ({"uwb_timeout_us": -1}, "SwarmMember setting uwb_timeout_us must be an integer >= 1"),
    ({"failsafe_land_s": float("nan")}, "SwarmMember setting failsafe_land_s must be finite"),
    ({"nope": 1}, "unknown SwarmMember setting 'nope'"),
])
def test_bad_member_settings_are_refused(net, config, needle):
    with pytest.raises(ValueError, match=needle):
        _member(net, config=config)
    with pytest.raises(ConfigError, match="peer ids must be whole numbers"):
        _member(net, peers=("a",))


def test_the_standalone_member_flies_the_scenarios_agent_settings():
    assert ep.agent_config(ep.DEFAULTS) == FLIGHT_AGENT_CONFIG


def _imports(path):
    tree = ast.parse(open(os.path.join(REPO, path)).read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.add(node.module or "")
    return out


def test_layers_onboard_never_imports_boards_or_harness_and_boards_never_harness():
    for path, banned in (("onboard/swarm/member.py", ("boards", "harness", "numpy")),
                         ("boards/crazyflie/app.py", ("harness",)), ("boards/crazyflie/__main__.py", ("harness",))):
        bad = [m for m in _imports(path) if m.split(".")[0] in banned]
        assert bad == [], (path, bad)


def test_direct_flight_members_are_the_per_drone_loop():
    """A short direct-link flight: each member's records are what the agent got, and the metrics count
    the members' dropouts and ranges."""
    models = ep.load_models("float", "float")
    cfg = dict(ep.DEFAULTS, drones=3, link="direct", compare_estimators=False, max_duration_s=2.0, n_particles=100)
    met, rec = ep.run_episode(cfg, np.random.default_rng(4), np.random.default_rng(9), models)
    assert len(rec["inputs"][0]) == 20
    assert met["ranges_used"] == 3 * 2 * 20 and met["range_dropouts"] == 0
    t_us, rows = rec["inputs"][1][3]
    assert t_us == 300000 and [r[0] for r in rows] == [0, 2, GOAL_ID] and all(r[4] == t_us for r in rows)
    for rep in rec["members"]:
        assert rep["failsafe_engagements"] == 0 and rep["decision"]["decisions"] == 20
        assert rep["command"]["hover_commands"] == 0
