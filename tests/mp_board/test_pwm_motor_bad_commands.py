"""The MicroPython boards' PWM motor driver (boards/mp_common/mp_drivers.py ``DiffDrivePwm``) given a wheel
command that is not finite, run in CPython and in real MicroPython 1.27 on the virtual board's ``machine`` shim.

A NaN speed (an estimator that diverged upstream) must be refused and counted, both motors stopped (duty 0),
never raise out of ``command`` and never touch a direction pin (a NaN used to flip the left direction pin, then
raise in ``int(nan)`` with the left H-bridge still at its old duty: the wheel reversed at speed).
"""
import pytest

from tests.mp_board.board_script import run_board_script



SCRIPT = """
import json
import machine
from mp_drivers import DiffDrivePwm
from onboard.core.samples import WheelCmd

pl = machine.PWM(machine.Pin(1))
pr = machine.PWM(machine.Pin(2))
dl = machine.Pin(3, machine.Pin.OUT)
dr = machine.Pin(4, machine.Pin.OUT)
m = DiffDrivePwm(pl, pr, dl, dr, 10.0)
out = {}
m.command(WheelCmd(0, 5.0, 5.0))
out["driving"] = [pl.duty_u16(), pr.duty_u16(), dl.value(), dr.value()]
nan = float("nan")
inf = float("inf")
for name, cmd in (("nan_left", WheelCmd(1, nan, 5.0)), ("nan_right", WheelCmd(2, 5.0, nan)),
                  ("inf", WheelCmd(3, inf, 1.0))):
    m.command(WheelCmd(0, 5.0, 5.0))
    try:
        m.command(cmd)
        err = None
    except Exception as exc:
        err = "%s: %s" % (type(exc).__name__, exc)
    out[name] = {"error": err, "state": [pl.duty_u16(), pr.duty_u16(), dl.value(), dr.value()]}
out["rejected"] = getattr(m, "rejected_commands", None)
out["commands"] = m.commands
print("PWMDRV " + json.dumps(out))
"""

FILES = {"mp_drivers.py": "boards/mp_common/mp_drivers.py", "machine.py": "harness/sim/virtual_board/frozen/machine.py"}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("interpreter", ["cpython", pytest.param("micropython", marks=pytest.mark.micropython)])
def test_non_finite_wheel_command_is_refused_counted_and_stops_both_motors(interpreter, tmp_path):
    r = run_board_script(interpreter, SCRIPT, FILES, "PWMDRV", tmp_path)
    assert r["driving"] == [32767, 32767, 1, 1], r          # 5 of 10 rad/s forward: the test could fail
    for name in ("nan_left", "nan_right", "inf"):
        got = r[name]
        assert got["error"] is None, (name, got)
        # both motors off; the direction pins keep what the last good command set
        assert got["state"] == [0, 0, 1, 1], (name, got)
    assert r["rejected"] == 3, r
    assert r["commands"] == 4, r                              # the good commands only
