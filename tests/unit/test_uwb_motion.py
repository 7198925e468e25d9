"""The uwb-ranging scenario's motion model (BouncingMotion) gives exactly the floats of the plain
wall-reflection fold, its ``range_m`` exactly ``UwbNetwork.true_range_m`` on its states, and it hands out
one velocity tuple per (node, reflection) only where every velocity is finite (the protocol counts each
non-finite velocity it is given, so those come as new tuples every call and every one is counted)."""
import math

import pytest

from harness.scenarios.uwb_ranging import BouncingMotion
from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import UwbNetwork
from harness.sim.rng import RunRandom


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


@pytest.mark.parametrize("area_m", [4.0, 4, 2.5])
def test_states_are_the_plain_fold_bit_for_bit(area_m):
    motion = BouncingMotion(12, RunRandom(5).stream("m"), area_m, 1.0)
    for now_us in _times_us(6, 400):
        got = motion(now_us)
        want = _plain_states(motion._start, area_m, now_us)
        assert list(got) == list(want)
        assert repr(got) == repr(want)          # repr: every float's bits, and the signs of zeros


def test_range_m_is_the_networks_true_range_bit_for_bit():
    n = 10
    motion = BouncingMotion(n, RunRandom(7).stream("m"), 4.0, 1.0)
    net = UwbNetwork(SimClock(), range(n), RunRandom(7), state_fn=motion)
    checked = 0
    for k, now_us in enumerate(_times_us(8, 300)):
        a, b = k % n, (3 * k + 1) % n
        if a == b:
            continue
        assert repr(motion.range_m(a, b, now_us)) == repr(net.true_range_m(a, b, now_us))
        checked += 1
    assert checked > 250


def test_finite_velocities_are_handed_out_as_the_same_tuples():
    motion = BouncingMotion(8, RunRandom(9).stream("m"), 4.0, 1.0)
    seen = {}
    for now_us in range(0, 40_000_000, 250_000):
        for i, (_pos, vel) in motion(now_us).items():
            seen.setdefault((i, vel), []).append(vel)
    assert len(seen) > 8                        # the walls were hit: reflected velocities appear
    for same in seen.values():
        assert all(v is same[0] for v in same)


def test_non_finite_velocities_come_fresh_every_call_and_are_counted_every_time():
    motion = BouncingMotion(3, RunRandom(9).stream("m"), 4.0, math.inf)
    a, b = motion(1000), motion(2000)
    assert a[0][1] is not b[0][1]
    net = UwbNetwork(SimClock(), range(3), RunRandom(9), state_fn=motion)
    net.start()
    node = net.protocol_node(0)
    before = node.report()["bad_velocity"]
    for now_us in (10, 20, 30):
        net._set_velocity(net.nodes[0], now_us)
    assert node.report()["bad_velocity"] == before + 3
