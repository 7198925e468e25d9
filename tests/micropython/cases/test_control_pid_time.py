"""onboard.control.pid: a NaN or infinite ``now_us`` (or one that is no number) is refused with PidInputError and
changes nothing (before, a NaN time was stored and made the next step's dt NaN, which put NaN in the integral for
good), and an int error too large for a float is refused the same way (before: OverflowError, not a ValueError).
Runs under CPython (pytest) and inside MicroPython."""
from onboard.control.heading_speed import HeadingSpeedController
from onboard.control.pid import Pid, PidInputError, is_finite_number
from onboard.vessel.thrust_map import ThrustMap

NAN = float("nan")
INF = float("inf")


def _state(pid):
    return (pid.integral, pid._last_error, pid._last_us)


def _refused(pid, error, now_us):
    before = _state(pid)
    try:
        pid.update(error, now_us)
    except PidInputError:
        assert _state(pid) == before
        return
    raise AssertionError("accepted error %r at %r us" % (error, now_us))


def test_a_non_finite_time_is_refused_and_changes_nothing():
    pid = Pid(1.0, 2.0, 0.5)
    for bad in (NAN, INF, -INF, None, "1000", True):
        _refused(pid, 1.0, bad)                 # the first update, too: nothing stored yet
    assert pid.update(1.0, 1000) == 1.0
    for bad in (NAN, INF, None):
        _refused(pid, 1.0, bad)
    u = pid.update(1.0, 2000)                   # the stream goes on, the integral finite
    assert pid.integral == 0.001 and u == 1.0 + 2.0 * 0.001


def test_an_error_too_large_for_a_float_is_refused():
    pid = Pid(1.0, 1.0, 1.0)
    pid.update(0.5, 0)
    _refused(pid, 10 ** 400, 1000)
    _refused(pid, -(10 ** 400), 1000)
    assert not is_finite_number(10 ** 400) and is_finite_number(10 ** 300) and is_finite_number(-1e308)
    assert pid.update(10 ** 300, 1000) > 0.0


def test_heading_speed_controller_refuses_a_nan_time_with_both_pids_unchanged():
    ctl = HeadingSpeedController(ThrustMap())
    ctl.step(0.1, 1.0, 0.0, 0.0, 0.5, 0)
    before = (_state(ctl.heading), _state(ctl.speed), ctl.steps)
    try:
        ctl.step(0.1, 1.0, 0.0, 0.0, 0.5, NAN)
        raised = False
    except PidInputError:
        raised = True
    assert raised
    assert (_state(ctl.heading), _state(ctl.speed), ctl.steps) == before
    ctl.step(0.1, 1.0, 0.0, 0.0, 0.5, 100000)
    assert ctl.heading.integral == ctl.heading.integral and ctl.speed.integral == ctl.speed.integral
