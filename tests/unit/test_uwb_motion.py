"""The uwb-ranging scenario's motion model (BouncingMotion) gives exactly the floats of the plain
wall-reflection fold, its ``range_m`` exactly ``UwbNetwork.true_range_m`` on its states, its ``node_state``
exactly one node of its state (same velocity tuple), and it hands out one velocity tuple per (node,
reflection) only where every velocity is finite (the protocol counts each non-finite velocity it is given, so
those come as new tuples every call and every one is counted). The range scoring (RangeTruth) is the plain
per-sample computation. Each on every built implementation of harness/sim/radio/uwb_channel_truth.py (pure;
cython: the same source compiled)."""
import math

import pytest

from harness.scenarios.uwb_ranging import BouncingMotion as ScenarioMotion
from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import TRUTH_MODULES, UwbNetwork, truth_module
from harness.sim.rng import RunRandom
from onboard.core.samples import RangeSample
from onboard.impl import available

IMPLS = [i for i in ("pure", "cython") if i in available(TRUTH_MODULES)]


def _plain_states(start, area_m, now_us):
    """The fold written out plainly: u = (p0 + v0 t) mod 2A; u <= A ? (u, v0) : (2A - u, -v0)."""
    period = 2.0 * area_m
    t = now_us * 1e-6

    def fold(x, v):
        x = x % period
        return (x, v) if x <= area_m else (period - x, -v)

    out = {}
    for i, (px, py, vx0, vy0) in enumerate(start):
        x, vx = fold(px + vx0 * t, vx0)
        y, vy = fold(py + vy0 * t, vy0)
        out[i] = ((x, y), (vx, vy))
    return out


def _times_us(seed, count):
    rng = RunRandom(seed).stream("times")
    return [int(t) for t in rng.integers(0, 60_000_000, size=count)] + [0, 1, 4_000_000, 8_000_000]


def test_the_scenario_runs_the_pure_model():
    assert ScenarioMotion is truth_module("pure").BouncingMotion


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("area_m", [4.0, 4, 2.5])
def test_states_are_the_plain_fold_bit_for_bit(area_m, impl):
    motion = truth_module(impl).BouncingMotion(12, RunRandom(5).stream("m"), area_m, 1.0)
    other = truth_module(impl).BouncingMotion(12, RunRandom(5).stream("m"), area_m, 1.0)
    for k, now_us in enumerate(_times_us(6, 400)):
        got = motion(now_us)
        want = _plain_states(motion._start, area_m, now_us)
        assert list(got) == list(want)
        assert repr(got) == repr(want)          # repr: every float's bits, and the signs of zeros
        i = k % 12
        one = other.node_state(i, now_us)        # one node alone (other's last state is another time)
        assert repr(one) == repr(want[i]) and one[1] is other(now_us)[i][1]
    assert motion.node_state(12, 5) is None and motion.node_state(-1, 5) is None


@pytest.mark.parametrize("impl", IMPLS)
def test_range_m_is_the_networks_true_range_bit_for_bit(impl):
    n = 10
    motion = truth_module(impl).BouncingMotion(n, RunRandom(7).stream("m"), 4.0, 1.0)
    net = UwbNetwork(SimClock(), range(n), RunRandom(7), state_fn=motion)
    checked = 0
    for k, now_us in enumerate(_times_us(8, 300)):
        a, b = k % n, (3 * k + 1) % n
        if a == b:
            continue
        assert repr(motion.range_m(a, b, now_us)) == repr(net.true_range_m(a, b, now_us))
        checked += 1
    assert checked > 250


@pytest.mark.parametrize("impl", IMPLS)
def test_finite_velocities_are_handed_out_as_the_same_tuples(impl):
    motion = truth_module(impl).BouncingMotion(8, RunRandom(9).stream("m"), 4.0, 1.0)
    seen = {}
    for now_us in range(0, 40_000_000, 250_000):
        for i, (_pos, vel) in motion(now_us).items():
            seen.setdefault((i, vel), []).append(vel)
    assert len(seen) > 8                        # the walls were hit: reflected velocities appear
    for same in seen.values():
        assert all(v is same[0] for v in same)


@pytest.mark.parametrize("impl", IMPLS)
def test_non_finite_velocities_come_fresh_every_call_and_are_counted_every_time(impl):
    motion = truth_module(impl).BouncingMotion(3, RunRandom(9).stream("m"), 4.0, math.inf)
    a, b = motion(1000), motion(2000)
    assert a[0][1] is not b[0][1]
    # node_state keeps the whole state's memo: a tuple is new exactly when a call of the state gives a new one
    assert motion.node_state(0, 2000)[1] is b[0][1] and motion.node_state(0, 3000)[1] is not b[0][1]
    net = UwbNetwork(SimClock(), range(3), RunRandom(9), state_fn=motion, impl=impl)
    net.start()
    node = net.protocol_node(0)
    before = node.report()["bad_velocity"]
    for now_us in (10, 20, 30):
        net._set_velocity(net.nodes[0], now_us)
    assert node.report()["bad_velocity"] == before + 3


@pytest.mark.parametrize("impl", IMPLS)
def test_range_truth_scores_as_the_plain_callback(impl):
    n = 6
    mod = truth_module(impl)
    motion = mod.BouncingMotion(n, RunRandom(4).stream("m"), 4.0, 1.0)
    truth = mod.RangeTruth(motion, n, 50_000)
    counts, errors = [0] * (n * n), []
    rng = RunRandom(4).stream("samples")
    for k in range(600):
        now_us = 1000 * int(rng.integers(0, 200))
        a, b = int(rng.integers(0, n)), int(rng.integers(0, n))
        if k % 3 == 0:
            motion(now_us)                       # the channel asked for this time: range_m reads that state
        sample = RangeSample(now_us + 7, b, float(rng.uniform(0.0, 6.0)), (0.1, -0.2), 0.25)
        truth(a, sample, now_us)
        if now_us >= 50_000:
            counts[a * n + b] += 1
            true_m = mod.BouncingMotion(n, RunRandom(4).stream("m"), 4.0, 1.0).range_m(a, b, now_us)
            errors.append(sample.range_m - true_m)
            assert repr(truth.last_true_m) == repr(true_m)
    assert truth.counts == counts and len(errors) > 300
    assert repr(truth.errors) == repr(errors)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("speed", [1.0, math.inf])
def test_the_motion_and_its_scoring_copy_and_pickle_on_every_build(impl, speed):
    """copy, deepcopy and pickle give a motion with the same states, ranges and node states (the compiled build's
    arrays are typed memoryviews, which Cython cannot pickle by itself), velocity tuples shared as before within
    one copy; the range scoring copies with it."""
    import copy
    import pickle
    mod = truth_module(impl)
    motion = mod.BouncingMotion(7, RunRandom(3).stream("m"), 4.0, speed)
    motion.positions_at(2_500_000)
    truth = mod.RangeTruth(motion, 7, 0)
    for other in (copy.copy(motion), copy.deepcopy(motion), pickle.loads(pickle.dumps(motion))):
        assert type(other) is type(motion)
        for now_us in _times_us(8, 40) + [2_500_000]:      # repr: an infinite speed gives NaN positions
            assert repr(other.state(now_us)) == repr(motion.state(now_us))
            assert repr(other.node_state(3, now_us)) == repr(motion.node_state(3, now_us))
            assert repr(other.range_m(1, 5, now_us)) == repr(motion.range_m(1, 5, now_us))
    copied_truth, copied_motion = pickle.loads(pickle.dumps((truth, motion)))
    assert copied_truth.motion is copied_motion and copied_truth.n == 7
    velocity = copied_motion.state(1_000_000)[2][1]
    handed_out = any(velocity is v for v in copied_motion._vels[2])
    assert handed_out == (speed == 1.0)        # one tuple per reflection only where every velocity is finite
