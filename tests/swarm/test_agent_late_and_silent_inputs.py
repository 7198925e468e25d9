"""The swarm agent with late and silent inputs: a range stamped before its track's last one, an update the filter
refuses, a policy step back in time, a neighbour that stops ranging while the range-rate brake holds."""
import numpy as np
import pytest

from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm import actions as A
from onboard.swarm.agent import GOAL_ID, GUARD, SwarmAgent
from onboard.swarm.member import SwarmDecision


class _Always:
    def __init__(self, action):
        self.action = action

    def act(self, obs):
        return self.action


class _NoNet:
    """The pure filter never steps the estimator; it only needs a state."""

    def new_state(self):
        return np.zeros(1)

    def step_probs(self, h, x):
        raise AssertionError("mode pf steps no estimator")


def _pf_agent(**cfg):
    return SwarmAgent(_Always(A.SLOW_DOWN), _NoNet(), NumpyDraws(np.random.default_rng(1)),
                      dict({"mode": "pf", "n_particles": 50, "range_smoothing_s": 1.0}, **cfg))


def _snapshot(t):
    return (t.range_m, t.range_lp_m, t.last_range_us, t.v_obj, t.est, list(t.recent_ranges), t.steps)


@pytest.mark.parametrize("back_us", [1000000, 500000])
def test_a_range_earlier_than_the_track_is_rejected_without_changing_it(back_us):
    """A range stamped earlier than the track's last one (one delivered late) was half-applied: the smoothed
    range, last range, peer velocity and the brake's window changed, then the filter refused the time; one
    exactly range_smoothing_s earlier raised ZeroDivisionError out of observe (dt = -tau)."""
    ag = _pf_agent(brake_ttc_s=1.0)
    ag.observe(0, 1, 1.0, (0.0, 0.0), (0.0, 0.0))
    ag.observe(1000000, 1, 1.1, (0.0, 0.0), (0.0, 0.0))
    t = ag.tracks[1]
    before = _snapshot(t)
    ag.observe(1000000 - back_us, 1, 1.6, (0.0, 0.0), (0.3, 0.3))
    assert t.rejected == 1
    assert _snapshot(t) == before
    # ... and the track goes on at the next good time
    ag.observe(1100000, 1, 1.2, (0.0, 0.0), (0.0, 0.0))
    assert t.rejected == 1 and t.range_m == 1.2


def test_a_policy_step_earlier_than_the_last_one_holds_the_setpoint():
    """decide() with a time earlier than its last one integrated the action over a negative dt: slowing
    down sped the drone up (speed 0.5 -> 0.6 m/s) and fed dt < 0 to the DQN."""
    ag = _pf_agent()
    ag.setpoint_body_mps = (0.5, 0.0)
    ag.decide(1000000, (0.5, 0.0))
    sp = ag.setpoint_body_mps
    assert sp == pytest.approx((0.4, 0.0))
    held = ag.decide(900000, (0.4, 0.0))
    assert held == sp and ag.setpoint_body_mps == sp and ag.time_faults == 1
    # the next good step integrates from the last good time (dt 0.1 s)
    assert ag.decide(1100000, (0.4, 0.0)) == pytest.approx((0.3, 0.0))


def test_an_update_the_filter_refuses_leaves_the_track_as_it_was():
    """A dropout with a NaN own velocity: the filter refuses it after the track had already counted the
    step (t.steps) - the refused update changed the track. Any refusal now restores the track."""
    ag = _pf_agent()
    ag.observe(0, 1, 1.0, (0.0, 0.0), (0.0, 0.0))
    ag.observe(100000, 1, 1.1, (0.0, 0.0), (0.0, 0.0))
    t = ag.tracks[1]
    before = _snapshot(t)
    ag.observe(200000, 1, None, (float("nan"), 0.0), None)
    assert t.rejected == 1 and _snapshot(t) == before


def test_the_range_rate_brake_lets_go_of_a_neighbour_that_stopped_ranging():
    """The brake fits the last brake_window_s of a neighbour's ranges, but they were pruned only when a new
    range came: a neighbour that closed in and then went silent (its radio died, it left) kept its fit, whose
    extrapolated range only falls, so the drone hovered for ever. Ranges older than the window count no more."""
    from onboard.swarm.agent import BRAKE
    ag = _pf_agent(brake_ttc_s=1.0, brake_window_s=1.0)
    t = 0
    for k in range(8):                                     # closing at 1 m/s from 1.5 m
        t = k * 100000
        ag.observe(t, 1, 1.5 - 0.1 * k, (0.0, 0.0), (0.0, 0.0))
    ag.decide(t, (0.0, 0.0))
    assert ag.last_action == BRAKE                           # contact within 1 s: brake (as before)
    for k in range(1, 40):                                   # then 4 s of dropouts
        ag.observe(t + k * 100000, 1, None, (0.0, 0.0), None)
        ag.decide(t + k * 100000, (0.0, 0.0))
    assert ag.last_action != BRAKE

# ------------------------------------------------------------ a neighbour whose ranging stopped
# The collision guard ages a neighbour's range: a neighbour whose last range is older than range_max_age_s
# neither triggers the guard nor hides a closer neighbour from it.
PERIOD_US = 100000                      # ranging / policy period (pocket V-B)
V_OWN = (0.0, 0.0)


def _agent(**cfg):
    return SwarmAgent(_Always(A.SLOW_DOWN), _NoNet(),
                      NumpyDraws(np.random.default_rng(5)),
                      dict({"mode": "pf", "n_particles": 50, "guard_distance_m": 0.4}, **cfg))


def _fly(ag, ranges_until_us, end_us, peers_ranging=(1,)):
    """Ranges every period: neighbour 1 at 0.3 m until ranges_until_us, then dropouts (as the member feeds a
    silent neighbour); neighbour 2 (when in peers_ranging) at 0.35 m throughout; the goal 2 m away. A decision
    each period; returns {time_us: (last_action, nearest neighbour the guard backed off from)}."""
    out = {}
    for k in range(end_us // PERIOD_US + 1):
        t_us = k * PERIOD_US
        ag.observe(t_us, 1, 0.3 if t_us <= ranges_until_us else None, V_OWN,
                   (0.0, 0.0) if t_us <= ranges_until_us else None)
        if 2 in peers_ranging:
            ag.observe(t_us, 2, 0.35, V_OWN, (0.0, 0.0))
        ag.observe(t_us, GOAL_ID, 2.0, V_OWN, (0.0, 0.0))
        # fixed estimates, so only the ranges' ages decide: neighbour 1 ahead, neighbour 2 to the right
        ag.tracks[1].est = (0.3, 0.0, 0.0)
        if 2 in ag.tracks:
            ag.tracks[2].est = (0.0, 0.35, 0.0)
        ag.tracks[GOAL_ID].est = (2.0, 0.0, 0.0)
        sp = ag.decide(t_us, V_OWN)
        out[t_us] = (ag.last_action, sp)
    return out


def test_guard_fires_on_a_fresh_close_range_and_not_once_it_is_older_than_the_limit():
    """Neighbour 1 ranges 0.3 m (inside the 0.4 m guard) until 0.5 s, then goes silent: the guard backs off
    while its last range is at most range_max_age_s (1 s, the default) old and lets go after; the old agent
    kept backing off from the 0.3 m range measured long ago for as long as it flew."""
    ag = _agent()
    out = _fly(ag, ranges_until_us=500000, end_us=2500000)
    assert out[500000][0] == GUARD and out[500000][1] == pytest.approx((-0.3, 0.0))
    assert out[1500000][0] == GUARD                      # 1.0 s old: still counts
    assert out[1600000][0] != GUARD and out[2500000][0] != GUARD
    assert ag.stale_neighbours == 1 and ag.stale_neighbour_steps == 10      # 1.6 .. 2.5 s
    assert ag.guard_overrides == 16                       # 0.0 .. 1.5 s


def test_the_age_limit_is_a_setting():
    assert _agent().cfg["range_max_age_s"] == 1.0                # ten 0.1 s ranging periods
    ag = _agent(range_max_age_s=0.3)
    out = _fly(ag, ranges_until_us=500000, end_us=1500000)
    assert out[800000][0] == GUARD and out[900000][0] != GUARD
    with pytest.raises(ValueError, match="range_max_age_s"):
        _agent(range_max_age_s=0.0)


def test_a_stale_close_range_no_longer_hides_a_fresh_neighbour_from_the_guard():
    """Nearest by range picks the neighbour the guard backs off from: a silent neighbour's old 0.3 m kept
    the guard on it, backing off straight into neighbour 2 ranging 0.35 m to the right."""
    ag = _agent()
    out = _fly(ag, ranges_until_us=0, end_us=2000000, peers_ranging=(1, 2))
    assert out[1000000][1] == pytest.approx((-0.3, 0.0))          # from neighbour 1 (ahead)
    assert out[2000000][0] == GUARD and out[2000000][1] == pytest.approx((0.0, -0.3))   # from neighbour 2


def test_the_member_reports_stale_neighbour_steps():
    ag = _agent()
    _fly(ag, ranges_until_us=0, end_us=1200000)
    assert SwarmDecision(ag, None, [1], 10).report()["stale_neighbour_steps"] == 2
