"""The swarm agent's collision guard ages a neighbour's range: a neighbour whose ranging stopped (its last range
older than range_max_age_s) neither triggers the guard nor hides a closer neighbour from it."""
import numpy as np
import pytest

from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm import actions as A
from onboard.swarm.agent import GOAL_ID, GUARD, SwarmAgent
from onboard.swarm.member import SwarmDecision

PERIOD_US = 100000                      # ranging / policy period (pocket V-B)
V_OWN = (0.0, 0.0)


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
