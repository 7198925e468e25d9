"""Host driver of the AVR board (boards/arduino/driver.py, protocol.py) at the edges of its input: wheel
commands whose mrad/s do not fit a float, non-finite duty/phase values, and telemetry that echoes a
command seq before the firmware has accepted any command. In-memory loop transport, no firmware."""
import struct

import pytest

from boards.arduino import protocol as P
from boards.arduino.driver import AvrRobotLink
from onboard.comms.transport import LoopTransport
from onboard.core.samples import WheelCmd


def _link():
    host, board = LoopTransport.pair()
    return AvrRobotLink(host), board


def _board_messages(board):
    return [P.decode_message(f) for f in P.FrameDecoder().feed(board.read(100000))]


def _telemetry(seq, t_us, faults, last_cmd):
    body = struct.pack(P.TELEMETRY_FMT, t_us, 0, 0, 0, 0, 8192, 0, 0, 0, 0, 0, faults, last_cmd)
    return P.encode_frame(P.MSG_TELEMETRY, seq, body)


@pytest.mark.parametrize("left_radps", [1e306, -1e306, 1.7e308])
def test_huge_finite_wheel_command_is_clamped_not_raised(left_radps):
    # 1e306 rad/s is finite, but in mrad/s it is inf: int(round(inf)) raised OverflowError out of command()
    link, board = _link()
    seq = link.command(WheelCmd(0, left_radps, 2.0))
    assert seq == 0
    (msg,) = _board_messages(board)
    assert msg.name == "WheelSpeed"
    assert msg.left == (32767 if left_radps > 0 else -32767) and msg.right == 2000


def test_wheel_command_rounding_unchanged_near_the_int16_limit():
    link, board = _link()
    link.command(WheelCmd(0, 32.7674, -32.7676))
    link.command(WheelCmd(0, 1.2345, -1.2355))
    a, b = _board_messages(board)
    assert (a.left, a.right) == (32767, -32767)
    assert (b.left, b.right) == (1234, -1236)


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_duty_and_phase_raise_protocol_error(bad):
    link, board = _link()
    with pytest.raises(P.ProtocolError):
        link.duty(bad, 0)
    with pytest.raises(P.ProtocolError):
        link.set_phase(bad)
    with pytest.raises(P.ProtocolError):
        P.wheel_speed_body(0, bad)
    with pytest.raises(P.ProtocolError):
        P.ping_body(bad)
    assert board.read(100000) == b""                 # nothing went out
    assert link.tx_seq == 0


def test_echo_before_any_accepted_command_is_not_a_latency():
    # the firmware reports last_cmd_seq = 0 with FAULT_NO_COMMAND until it accepts a command: a telemetry
    # frame sent before the host's first command (seq 0) arrived is not that command's echo
    link, board = _link()
    seq = link.command(WheelCmd(1000, 1.0, 1.0))
    assert seq == 0
    board.write(_telemetry(0, 1500, P.FAULT_NO_COMMAND, 0))
    link.poll(1500)
    assert link.cmd_latency_us is None and link.cmd_latency_stats["n"] == 0
    board.write(_telemetry(1, 11500, 0, 0))          # accepted: now it is the echo
    link.poll(4000)
    assert link.cmd_latency_us == 3000 and link.cmd_latency_stats["n"] == 1
