"""RESET (PROTOCOL.md section 4: motors off, the firmware stops feeding its 120 ms watchdog and restarts) in
the real firmware (simavr, lockstep): a motor command that arrives while the watchdog counts down does not
drive the motors again before the restart."""
import pytest

from harness.sim.avr_bridge import FilRig
from onboard.core.samples import WheelCmd

pytestmark = pytest.mark.fil


@pytest.mark.parametrize("board", ["uno", "leonardo"])
def test_motor_command_after_reset_does_not_drive_before_the_restart(board, fil_built):
    rig = FilRig(board, plant={"imu_model": "truth"})
    try:
        for _ in range(10):                              # driving: 10 commands, 20 ms apart
            rig.link.command(WheelCmd(rig.t_us, 10.0, 10.0))
            rig.run_for(20000)
        assert rig.bridge.last.ocr_left > 0
        rig.link.reset_board(rig.t_us)
        rig.link.command(WheelCmd(rig.t_us, 10.0, 10.0))   # right behind the RESET
        ocr = []
        assert rig.run_until(lambda r: ocr.append((r.bridge.last.ocr_left, r.bridge.last.ocr_right))
                             or r.link.boots == 2, 400000)
        first_off = ocr.index((0, 0))
        assert first_off < 10                            # the RESET stopped the motors within 10 ms
        assert set(ocr[first_off:]) == {(0, 0)}, "motors driven again between RESET and the restart"
        assert rig.bridge.last.resets == 1
    finally:
        rig.close()
