"""Simulated VESC: a bad physics step (NaN, infinite, negative) is refused before it spins the motor to
max_erpm or poisons the telemetry; the command history stays bounded on a long-running simulator; a fault
duration is rounded to the microsecond; ``--fault`` with a digit int() refuses is one CLI error line."""
import math

import pytest

from harness.sim.vesc import SimVesc
from harness.sim.vesc_cmd import VescCliError, parse_fault
from onboard.comms.vesc import codec


def _state(v):
    return (v.erpm, v.current_a, v.mode, v.setpoint, v.amp_hours, v.watt_hours, v.tacho_ticks, v.tacho_abs_ticks,
            v.now_us, v.timeouts, v.timed_out)


@pytest.mark.parametrize("dt_s", [math.nan, math.inf, -0.001])
def test_a_bad_step_is_refused_and_the_motor_and_telemetry_stay_sane(dt_s):
    v = SimVesc()
    v.handle(codec.set_rpm(1000), 0)
    for k in range(1, 11):
        v.step(0.001, k * 1000)
    before = _state(v)
    with pytest.raises(ValueError, match="dt_s must be a finite number of seconds >= 0"):
        v.step(dt_s, 11000)
    assert _state(v) == before
    assert abs(v.erpm) < 1000.0
    reply = v.handle(bytes((codec.COMM_GET_VALUES,)), 11000)   # telemetry still encodes
    assert reply[0] == codec.COMM_GET_VALUES


def test_command_history_is_bounded_and_keeps_the_latest():
    v = SimVesc()
    v.history_max = 10
    for k in range(55):
        v.handle(codec.set_rpm(k), k)
    assert 10 <= len(v.history) < 20
    assert v.history[-1] == (54, codec.COMM_SET_RPM, 54.0)
    assert [h[0] for h in v.history] == list(range(55 - len(v.history), 55))
    assert v.commands[codec.COMM_SET_RPM] == 55


def test_fault_duration_is_rounded_to_the_microsecond():
    v = SimVesc()
    v.inject_fault(codec.FAULT_UNDER_VOLTAGE, 0, duration_s=4.1)     # 4.1e6 is 4099999.9999999995
    v.step(0.001, 4099999)
    assert v.fault_code == codec.FAULT_UNDER_VOLTAGE
    v.step(0.001, 4100000)
    assert v.fault_code == codec.FAULT_NONE


@pytest.mark.parametrize("text", ["\u00b2", "1:\u00b2"])
def test_fault_name_with_a_non_decimal_digit_is_a_cli_error(text):
    with pytest.raises(VescCliError, match="unknown fault"):
        parse_fault(text, [1, 2])
    assert parse_fault("1:3@1+2", [1, 2]) == (1, 3, 1.0, 2.0)


def test_forward_can_without_an_inner_command_is_counted_not_dropped_silently():
    import os

    from harness.sim.vesc import SimVescPort

    a, b = SimVesc({"controller_id": 1}), SimVesc({"controller_id": 2})
    port = SimVescPort(a, can_bus=[a, b])
    try:
        os.write(port.pty.slave_fd, codec.encode_frame(bytes((codec.COMM_FORWARD_CAN, 2))))
        assert port.service(0) == 1
        assert a.commands == {"malformed": 1} and b.commands == {}
        assert port.can_dropped == 0
        # a well-formed forward still reaches VESC 2
        os.write(port.pty.slave_fd, codec.encode_frame(bytes((codec.COMM_FORWARD_CAN, 2, codec.COMM_ALIVE))))
        assert port.service(1000) == 1
        assert b.commands == {codec.COMM_ALIVE: 1}
    finally:
        port.close()
