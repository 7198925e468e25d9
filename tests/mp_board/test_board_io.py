"""The MicroPython board app's io part (boards/mp_common/mp_app.py ``BoardIo``) when the IMU stops answering
on its bus, run unchanged in real MicroPython 1.27 (WebAssembly build under node) and in CPython.

The board's own ``build_app`` on the ``machine`` shim of the virtual board (PWM duty registers read back),
link signing off (the link is not under test: poses go to the runtime's entry point), the IMU at its driver
interface (``read()`` and the SI values; a failing read raises OSError as the real I2C read does). The
robot stands on blocks, pose at the origin, way-point 2 m ahead: driving until the IMU fails at 1 s, for
1 s. What must hold: the app keeps running, every failed read is counted, the outage is reported once on
the link (an ``X`` line), the motors are off within imu_timeout_us + 1 tick + 1 control period and stay
off while the IMU is silent, and the robot drives again once it answers.
"""
import pytest

from onboard.runtime import ground_robot
from tests.mp_board.board_script import UNSIGNED_BOARD, run_board_script

FAIL_FROM_US = 1000000
FAIL_UNTIL_US = 2000000
END_US = 3000000
TICK_US = 10000            # pico_rp2040 IMU_RATE_HZ 100
CONTROL_US = 20000         # pico_rp2040 CONTROL_RATE_HZ 50

# runs in both interpreters with /lib (MicroPython) or the temporary lib folder (CPython) on its path
SCRIPT = """
import json
import board
import machine
import mp_app
from onboard.core.samples import PoseSample
%(unsigned_board)s


class Imu:
    def __init__(self):
        self.accel_frd_mps2 = [0.0, 0.0, -9.80665]
        self.gyro_frd_radps = [0.0, 0.0, 0.0]
        self.failing = False

    def read(self):
        if self.failing:
            raise OSError(5, "I2C bus error")


class Lines:
    def poll(self, timeout_ms):
        return False

    def readline(self):
        return b""


replies = []
mp_app._write = replies.append
runtime, link, io = mp_app.build_app(b, machine)
imu = Imu()
io.enable(imu, Lines(), Lines())
m = runtime.motors
out = {"off_us": None, "driven_in_fault": False, "driven_again_us": None, "errors_at_end_of_fault": None}
t = 0
while t < %(end)d:
    t += %(tick)d
    imu.failing = %(fail_from)d <= t < %(fail_until)d
    if t %% 100000 == 0:
        runtime.on_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    runtime.step(t)
    driven = m.pwm_left.duty_u16() > 0 or m.pwm_right.duty_u16() > 0
    if %(fail_from)d <= t < %(fail_until)d:
        if not driven and out["off_us"] is None:
            out["off_us"] = t - %(fail_from)d
        elif driven and out["off_us"] is not None:
            out["driven_in_fault"] = True
        out["errors_at_end_of_fault"] = io.imu_errors
    elif t == %(fail_from)d - %(tick)d:
        out["driven_before"] = driven
    elif t >= %(fail_until)d and driven and out["driven_again_us"] is None:
        out["driven_again_us"] = t - %(fail_until)d
out["io"] = io.report()
out["x_lines"] = [r.decode() for r in replies if r[:2] == b"X,"]
out["failsafe_engagements"] = runtime.node.failsafe.engage_count
print("BOARDIO " + json.dumps(out))
""" % {"end": END_US, "tick": TICK_US, "fail_from": FAIL_FROM_US, "fail_until": FAIL_UNTIL_US,
       "unsigned_board": UNSIGNED_BOARD}

BOARD_FILES = {"board.py": "boards/pico_rp2040/board.py", "mp_app.py": "boards/mp_common/mp_app.py",
               "mp_drivers.py": "boards/mp_common/mp_drivers.py",
               "machine.py": "harness/sim/virtual_board/frozen/machine.py"}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("interpreter", ["cpython", pytest.param("micropython", marks=pytest.mark.micropython)])
def test_an_imu_that_stops_answering_stops_the_motors_is_reported_and_the_app_recovers(interpreter, tmp_path):
    r = run_board_script(interpreter, SCRIPT, BOARD_FILES, "BOARDIO", tmp_path)
    bound_us = ground_robot.DEFAULTS["imu_timeout_us"] + TICK_US + CONTROL_US
    assert r["driven_before"], "the robot was not driving before the fault (the test could not fail)"
    assert r["off_us"] is not None and r["off_us"] <= bound_us, r
    assert not r["driven_in_fault"], r
    fault_ticks = (FAIL_UNTIL_US - FAIL_FROM_US) // TICK_US
    assert r["io"]["imu_errors"] == r["errors_at_end_of_fault"] == fault_ticks, r
    assert r["io"]["imu_outages"] == 1 and not r["io"]["imu_failing"], r
    assert "I2C bus error" in r["io"]["imu_last_error"]
    assert len(r["x_lines"]) == 1 and r["x_lines"][0].startswith("X,imu read failed: "), r["x_lines"]
    assert r["failsafe_engagements"] >= 1
    assert r["driven_again_us"] is not None and r["driven_again_us"] <= 1000000, r
