"""Crazyflie board config: log blocks must carry the state variables the driver reads together.

``CrazyflieDriver.poll`` builds a NavState from a packet with ``stateEstimate.x`` and reads ``y`` and ``z`` of
the same packet (and ``vy`` with ``vx``). A block naming only some of them used to pass the config check and
then raise KeyError out of ``poll`` at the first packet, in flight (the CLI's cleanup then closes the link,
which cuts the motors). It must be refused before anything connects, in one line. No drone needed: the driver
is built without connecting and fed log packets as cflib's callback would.
"""
import pytest

from boards.crazyflie.board import CrazyflieConfigError, validate
from boards.crazyflie.driver import CrazyflieDriver


@pytest.mark.parametrize("variables,needle", [
    (["stateEstimate.x", "stateEstimate.z"], "stateEstimate.y"),
    (["stateEstimate.x", "stateEstimate.y", "stateEstimate.z", "stateEstimate.vx"], "stateEstimate.vy"),
])
def test_a_block_with_part_of_a_state_group_is_refused(variables, needle):
    blocks = {"pos": {"period_ms": 10, "variables": variables}}
    with pytest.raises(CrazyflieConfigError) as exc:
        validate({"log_blocks": blocks})
    assert "log_blocks" in str(exc.value) and needle in str(exc.value), str(exc.value)


def test_whole_groups_pass_and_poll_reads_them():
    cfg = validate({"log_blocks": {
        "pos": {"period_ms": 10, "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z"]},
        "att": {"period_ms": 20, "variables": ["stateEstimate.yaw", "pm.vbat"]}}})
    drv = CrazyflieDriver("udp://127.0.0.1:1", cfg)
    drv._on_log("pos", 0, {"stateEstimate.x": 1.0, "stateEstimate.y": 2.0, "stateEstimate.z": 0.5})
    (nav,) = drv.poll(1000)
    assert nav.pos_ned_m == (1.0, -2.0, -0.5)
