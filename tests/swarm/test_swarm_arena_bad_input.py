"""The vectorised swarm arena on bad input: actions that are not integers (NaN passed the 0..8 range check and
indexing raised IndexError; 2.5 likewise), and setpoints that are not finite (they made every later position
and velocity NaN) raise ValueError and leave the arena as it was; drones at one position keep finite numbers."""
import numpy as np
import pytest

from harness.sim.swarm_arena import SwarmBatch


def _batch():
    return SwarmBatch(2, 3, np.random.default_rng(4))


def _state(sim):
    return [a.copy() for a in (sim.pos, sim.vel, sim.cmd_body, sim.min_sep)] + [sim.t_s]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a[:-1], b[:-1])) and a[-1] == b[-1]


@pytest.mark.parametrize("actions", [np.full((2, 3), np.nan), np.full((2, 3), 2.5), np.full((2, 3), True),
                                     np.full((2, 3), 9), np.full((2, 3), -1), np.zeros((3, 2), dtype=int)])
def test_actions_that_are_not_ints_0_to_8_are_refused(actions):
    sim = _batch()
    sim.step(np.ones((2, 3), dtype=int))
    before = _state(sim)
    with pytest.raises(ValueError, match="actions must be ints 0..8"):
        sim.step(actions)
    assert _same(_state(sim), before)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_setpoints_that_are_not_finite_are_refused(bad):
    sim = _batch()
    sim.step_setpoints(np.full((2, 3, 2), 0.2))
    before = _state(sim)
    cmd = np.full((2, 3, 2), 0.2)
    cmd[1, 2, 0] = bad
    with pytest.raises(ValueError, match="setpoints must be 2 x 3 x 2 finite numbers"):
        sim.step_setpoints(cmd)
    assert _same(_state(sim), before)
    with pytest.raises(ValueError, match="setpoints must be 2 x 3 x 2 finite numbers"):
        sim.step_setpoints(np.zeros((2, 3)))
    sim.step_setpoints(np.full((2, 3, 2), 0.2))
    assert np.all(np.isfinite(sim.pos)) and np.all(np.isfinite(sim.vel))


def test_drones_at_one_position_keep_finite_numbers():
    sim = _batch()
    sim.pos[:] = 0.25
    obs = sim.dqn_obs(vel_noise=False)
    assert np.all(np.isfinite(obs)) and np.all(obs[..., 4:6] == 0.0)
    r = sim.step(np.full((2, 3), 8))
    assert np.all(np.isfinite(r)) and np.all(sim.min_sep == 0.0)


def test_a_separation_the_arena_cannot_hold_names_the_square_the_points_are_drawn_from():
    """The message called the 90 % square the starts are drawn from "a 1.8 m arena" for an arena_m of 2 m."""
    with pytest.raises(ValueError) as exc:
        SwarmBatch(1, 3, np.random.default_rng(1), {"arena_m": 2.0, "start_separation_m": 5.0})
    assert str(exc.value) == "cannot place 3 points 5.00 m apart in a 1.80 m square"
