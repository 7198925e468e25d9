"""The simulated VESC's command timeout as vedderb/bldc ``timeout.c`` has it: ``timeout_msec`` 0 disables it,
and the GetValues status bit 0 is the firmware's ``has_timeout`` (no command for longer than the timeout,
whatever the motor is doing), not only "a running motor was released by the timeout"."""
from harness.sim.vesc import SimVesc
from onboard.comms.vesc import codec

DT_S = 0.001


def _run(v, t_us, until_us):
    while t_us < until_us:
        t_us += int(DT_S * 1e6)
        v.step(DT_S, t_us)
    return t_us


def _status(v):
    return codec.decode_values(v.handle(codec.get_values(), v.now_us)).status


def test_timeout_ms_zero_disables_the_command_timeout():
    v = SimVesc({"timeout_ms": 0})
    v.handle(codec.set_rpm(3000), 0)
    _run(v, 0, 5000000)                               # 5 s without a command
    assert v.mode == "rpm" and v.timeouts == 0
    assert v.erpm > 2900
    assert _status(v) & codec.STATUS_TIMEOUT == 0


def test_status_timeout_bit_is_the_firmware_has_timeout():
    v = SimVesc({"timeout_ms": 200})
    t = _run(v, 0, 300000)                            # boot, nothing commanded for 300 ms
    assert _status(v) & codec.STATUS_TIMEOUT
    v.handle(codec.set_current(0.0), t)               # a command (it releases the motor) resets the timeout
    assert _status(v) & codec.STATUS_TIMEOUT == 0
    t = _run(v, t, t + 150000)
    assert _status(v) & codec.STATUS_TIMEOUT == 0
    _run(v, t, t + 100000)                            # 250 ms since the last command, motor released
    assert _status(v) & codec.STATUS_TIMEOUT
