"""The swarm agent on edge inputs: a bool range, a range the filter refuses as too long, a policy step with
a time or own velocity that is not finite, the range-rate brake with brake_min_samples 0 and a neighbour never
ranged, and the collision guard with a neighbour estimated on the drone itself."""
import math

import numpy as np

from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm import actions as A
from onboard.swarm.agent import GOAL_ID, GUARD, SwarmAgent
from tests.swarm.test_agent_late_and_silent_inputs import _NoNet


class _Checked:
    """A policy that takes finite inputs only (as DqnFloat and the int8 pipeline) and always picks ``action``."""

    def __init__(self, action):
        self.action = action
        self.calls = 0

    def act(self, obs):
        if not np.all(np.isfinite(np.asarray(obs, dtype=float))):
            raise ValueError("policy input must be finite, got %r" % (obs,))
        self.calls += 1
        return self.action


def _agent(action=A.SLOW_DOWN, **cfg):
    return SwarmAgent(_Checked(action), _NoNet(), NumpyDraws(np.random.default_rng(1)),
                      dict({"mode": "pf", "n_particles": 50}, **cfg))


def _fly(ag, until_us, obj=1, range_m=1.0):
    for t in range(0, until_us + 1, 100000):
        ag.observe(t, obj, range_m, (0.0, 0.0), (0.0, 0.0))


def test_a_bool_range_is_refused_not_read_as_one_metre():
    """observe(range_m=True) was taken as a 1 m range (bool is an int)."""
    ag = _agent()
    _fly(ag, 200000)
    t = ag.tracks[1]
    before = (t.range_m, t.last_range_us, t.est, t.steps)
    ag.observe(300000, 1, True, (0.0, 0.0), (0.0, 0.0))
    ag.observe(300000, 1, False, (0.0, 0.0), (0.0, 0.0))
    assert t.rejected == 2
    assert (t.range_m, t.last_range_us, t.est, t.steps) == before


def test_a_range_the_filter_overflows_on_leaves_the_last_estimate_and_the_agent_flies_on():
    """A finite range of 1e200 m (the filter's arithmetic overflows beyond ~1e154 m) is refused and counted: the
    track keeps its last estimate, and the next policy step hands the DQN finite numbers."""
    ag = _agent()
    _fly(ag, 200000)
    _fly(ag, 200000, obj=GOAL_ID, range_m=2.0)
    t = ag.tracks[1]
    est = t.est
    assert all(math.isfinite(v) for v in est)
    ag.observe(300000, 1, 1e200, (0.0, 0.0), (0.0, 0.0))
    assert t.rejected == 1 and t.est == est
    sp = ag.decide(300000, (0.0, 0.0))
    assert all(math.isfinite(v) for v in sp) and ag.policy.calls == 1
    # the next sane range is used
    new = ag.observe(400000, 1, 1.0, (0.0, 0.0), (0.0, 0.0))
    assert all(math.isfinite(v) for v in new) and t.rejected == 1


def test_a_policy_step_at_a_time_that_is_not_finite_is_a_time_fault():
    """decide(nan) was taken (nan < last is False): last_us became nan and every later step integrated over a nan
    dt (a zero setpoint slowed down by a nan dt raised ZeroDivisionError)."""
    ag = _agent()
    assert ag.decide(0, (0.0, 0.0)) == (0.0, 0.0)
    for bad in (float("nan"), float("inf"), None, "100000"):
        assert ag.decide(bad, (0.0, 0.0)) == (0.0, 0.0)
    assert ag.time_faults == 4 and ag.last_us == 0 and ag.steps == 1
    assert ag.decide(100000, (0.0, 0.0)) == (0.0, 0.0)
    assert ag.last_us == 100000 and ag.steps == 2


def test_a_policy_step_with_an_own_velocity_that_is_not_finite_holds_the_setpoint():
    """decide(t, (nan, 0)) with a goal known raised out of the DQN after the stale-neighbour counters had moved."""
    ag = _agent(action=0)
    _fly(ag, 200000, obj=GOAL_ID, range_m=2.0)
    sp = ag.decide(200000, (0.0, 0.0))
    for bad in ((float("nan"), 0.0), (0.0, float("inf")), (0.1,), None, (True, 0.0)):
        assert ag.decide(300000, bad) == sp
    assert ag.rejected_steps == 5 and ag.steps == 1 and ag.last_us == 200000 and ag.policy.calls == 1
    assert ag.decide(300000, (0.1, 0.0)) != sp


def test_the_brake_with_no_minimum_sample_count_skips_a_neighbour_never_ranged():
    """brake_min_samples 0 (allowed) and a neighbour known only from a dropout: decide raised IndexError on its
    empty range window."""
    ag = _agent(brake_ttc_s=1.0, brake_min_samples=0)
    ag.observe(0, 1, None, (0.0, 0.0), None)
    _fly(ag, 0, obj=GOAL_ID, range_m=2.0)
    assert ag.decide(0, (0.0, 0.0)) == (0.0, 0.0)
    assert ag.brakes == 0


def test_the_guard_hovers_when_the_neighbour_is_estimated_on_the_drone_itself():
    """A neighbour 0 m away (range and estimate): the guard, which backs off along the estimate's direction, was
    skipped altogether (no direction), leaving the DQN to accelerate into it."""
    ag = _agent(action=0, guard_distance_m=0.4)
    ag.setpoint_body_mps = (0.5, 0.0)
    _fly(ag, 200000, range_m=0.0)
    _fly(ag, 200000, obj=GOAL_ID, range_m=2.0)
    ag.tracks[1].est = (0.0, 0.0, 0.0)
    assert ag.decide(300000, (0.5, 0.0)) == (0.0, 0.0)
    assert ag.last_action == GUARD and ag.guard_overrides == 1


def test_a_range_without_a_time_is_refused_and_counted():
    """observe(None or text for now_us) on a track with a past raised TypeError out of the time comparison."""
    ag = _agent()
    _fly(ag, 100000)
    t = ag.tracks[1]
    before = (t.range_m, t.last_range_us, t.est, t.steps, t.last_us)
    for bad in (None, "200000", float("nan"), float("inf")):
        assert ag.observe(bad, 1, 1.2, (0.0, 0.0), (0.0, 0.0)) == before[2]
    assert t.rejected == 4 and t.time_faults == 4
    assert (t.range_m, t.last_range_us, t.est, t.steps, t.last_us) == before


def test_a_refused_negative_range_is_not_counted_as_a_negative_range():
    """A negative range whose update was refused (here: no own velocity) still counted in negative_ranges."""
    ag = _agent()
    _fly(ag, 100000)
    t = ag.tracks[1]
    ag.observe(200000, 1, -0.2, None, (0.0, 0.0))
    assert t.rejected == 1 and t.negative_ranges == 0
    ag.observe(200000, 1, -0.2, (0.0, 0.0), (0.0, 0.0))
    assert t.rejected == 1 and t.negative_ranges == 1 and t.range_m == 0.0
