"""The UWB channel simulator: a node crashed and powered on again in the same microsecond keeps ranging (its
first deadline equalled the stale one of its crashed run, so it was never armed and the node fell silent for
good), on the fast channel and the reference path; and set_state refuses a position that is not 2 or 3 finite
numbers with one line naming the node (a NaN position raised "cannot convert float NaN to integer" from the
middle of a frame's delivery)."""
import math

import numpy as np
import pytest

from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import UwbNetwork
from harness.sim.radio.uwb_channel_reference import ReferenceUwbNetwork
from harness.sim.rng import RunRandom


def _run(net_cls, mode, reboot_at_us):
    clock = SimClock()
    net = net_cls(clock, [0, 1], RunRandom(1), protocol={"mode": mode})
    net.set_state(0, (0.0, 0.0))
    net.set_state(1, (3.0, 0.0))
    net.start()

    def reboot(now_us):
        net.crash(1)
        net.power_on(1)

    if reboot_at_us is not None:
        clock.call_at(reboot_at_us, reboot)
    clock.advance_to(600000)
    return net


@pytest.mark.parametrize("net_cls", [UwbNetwork, ReferenceUwbNetwork])
@pytest.mark.parametrize("mode", ["broadcast", "token_ring"])
def test_a_node_rebooted_in_the_same_microsecond_keeps_ranging(net_cls, mode):
    plain = _run(net_cls, mode, None)
    again = _run(net_cls, mode, 0)
    # rebooted at once with the same protocol state and clock: the same run
    assert again.stats == plain.stats
    assert [(t, s.peer_id, s.range_m) for t, s in again.samples[1]] == \
        [(t, s.peer_id, s.range_m) for t, s in plain.samples[1]]
    assert len(again.samples[1]) > 10 and again.nodes[1].deadline_local is not None


@pytest.mark.parametrize("pos", [(float("nan"), 0.0), (0.0, float("inf")), (1.0,), (1.0, 2.0, 3.0, 4.0),
                                 (True, 0.0), ("1", 0.0)])
def test_set_state_refuses_a_position_that_is_not_finite_numbers(pos):
    net = UwbNetwork(SimClock(), [0, 1], RunRandom(1))
    net.set_state(1, (3.0, 0.0))
    with pytest.raises(ValueError, match="node 1 position must be 2 or 3 finite numbers"):
        net.set_state(1, pos)
    assert net.position(1, 0) == (3.0, 0.0)


def test_set_state_takes_2d_3d_and_numpy_positions_and_any_velocity():
    net = UwbNetwork(SimClock(), [0, 1], RunRandom(1))
    net.set_state(0, np.array([1.0, 2.0]))
    net.set_state(1, (0, 0, np.float32(1.5)), (float("nan"), 0.0))     # the protocol counts a bad velocity
    assert net.true_range_m(0, 1, 0) == pytest.approx(math.hypot(1.0, 2.0))
