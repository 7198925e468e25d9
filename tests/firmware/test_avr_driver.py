"""Host driver (boards/arduino/driver.py) on an in-memory loop transport: SI conversion at the
boundary and bad-input handling. The board end is scripted with the protocol's own encoder;
the real firmware is exercised in test_avr_fil.py."""
import math
import struct

import pytest

from boards.arduino import board as C
from boards.arduino import protocol as P
from boards.arduino.driver import AvrRobotLink
from onboard.comms.transport import LoopTransport
from onboard.core.samples import WheelCmd


def telemetry(seq, t_us, enc=(0, 0), accel=(0, 0, 8192), gyro=(0, 0, 0), faults=0, last_cmd=0):
    body = struct.pack(P.TELEMETRY_FMT, t_us & 0xFFFFFFFF, enc[0], enc[1], *accel, *gyro, 0, 0, faults,
                       last_cmd)
    return P.encode_frame(P.MSG_TELEMETRY, seq, body)


def hello(seq=0, reset_flags=1):
    return P.encode_frame(P.MSG_HELLO, seq, bytes((P.PROTOCOL_VERSION, 1, reset_flags, 0x68, 1, 1)))


@pytest.fixture
def rig():
    host, board = LoopTransport.pair()
    out = {"imu": [], "enc": [], "speed": []}
    link = AvrRobotLink(host, on_imu=out["imu"].append, on_encoders=out["enc"].append,
                        on_wheel_speed=out["speed"].append)
    return link, board, out


def board_frames(board):
    dec = P.FrameDecoder()
    return [P.decode_message(f) for f in dec.feed(board.read(100000))]


def test_imu_increments_in_si_from_raw(rig):
    link, board, out = rig
    board.write(hello() + telemetry(1, 1000))
    link.poll(5000)
    assert out["imu"] == []                      # first read: no interval yet
    accel = (819, -1638, 8192)                   # 0.1 g, -0.2 g (chip y), 1 g (chip z)
    gyro = (0, 131, -655)                        # 0, 2 deg/s, -10 deg/s
    board.write(telemetry(2, 11000, enc=(10, -20), accel=accel, gyro=gyro))
    link.poll(15000)
    (s,) = out["imu"]
    assert s.dt_us == 10000
    dt = 0.01
    g = 9.80665
    expect_f = (0.1 * g * 819 / 819.2, 0.2 * g * 1638 / 1638.4, -g)    # chip -> FRD: (x, -y, -z)
    for got, want in zip(s.dvel_body_mps, expect_f):
        assert got == pytest.approx(want * dt, rel=1e-9)
    assert s.dang_body_rad[1] == pytest.approx(-math.radians(131 / 65.5) * dt)
    assert s.dang_body_rad[2] == pytest.approx(math.radians(655 / 65.5) * dt)
    # host time: firmware time + smallest seen lag (4000 us from the first telemetry)
    assert s.time_us == 11000 + 4000
    (sp,) = out["speed"]
    assert sp.left_radps == pytest.approx(10 * C.ENC_RAD_PER_TICK / dt)
    assert sp.right_radps == pytest.approx(-20 * C.ENC_RAD_PER_TICK / dt)
    assert out["enc"][-1].left_ticks == 10 and out["enc"][-1].right_ticks == -20


def test_firmware_clock_wrap_and_reboot(rig):
    link, board, out = rig
    board.write(hello() + telemetry(1, 0xFFFFFFFF - 4999) + telemetry(2, 5000))
    link.poll(100)
    assert out["imu"][-1].dt_us == 10000         # unwrapped across 2^32
    board.write(hello(seq=0, reset_flags=C.RESET_FLAG_WATCHDOG) + telemetry(1, 3000))
    link.poll(200)
    assert link.boots == 2 and link.hello.reset_flags == C.RESET_FLAG_WATCHDOG
    assert len(out["imu"]) == 1                  # no interval across a reboot
    assert link.imu_gaps == 1


def test_imu_fault_and_long_gap_give_no_sample(rig):
    link, board, out = rig
    board.write(hello() + telemetry(1, 1000) + telemetry(2, 11000, faults=P.FAULT_IMU))
    board.write(telemetry(3, 511000))            # 500 ms later: not integrated
    link.poll(600000)
    assert out["imu"] == [] and link.imu_gaps == 1
    assert "imu" not in link.faults()


def test_commands_on_the_wire(rig):
    link, board, _ = rig
    link.command(WheelCmd(0, 1.2345, -30.0))
    link.stop(10)
    link.duty(-400, 1000)
    link.ping(0x1_0000_0005)
    msgs = board_frames(board)
    assert [m.name for m in msgs] == ["WheelSpeed", "Stop", "Duty", "Ping"]
    assert (msgs[0].left, msgs[0].right) == (1234, -30000)   # rounded mrad/s; firmware clamps
    assert (msgs[2].left, msgs[2].right) == (-400, 1000)
    assert msgs[3].token == 5
    assert [m.seq for m in msgs] == [0, 1, 2, 3]


def test_non_finite_command_refused_and_motors_stopped(rig):
    link, board, _ = rig
    link.command(WheelCmd(0, float("nan"), 1.0))
    link.command(WheelCmd(0, 1.0, float("inf")))
    assert link.rejected_commands == 2
    assert [m.name for m in board_frames(board)] == ["Stop", "Stop"]


def test_bad_frames_counted_not_raised(rig):
    link, board, out = rig
    board.write(b"\x01\x02\x03\x00")                           # COBS ok, too short
    board.write(P.encode_frame(0x7E, 0, b"x"))                 # unknown type
    board.write(P.encode_frame(P.MSG_TELEMETRY, 1, b"short"))  # wrong length
    board.write(P.encode_frame(P.MSG_STOP, 2))                 # a host message: not from a board
    board.write(telemetry(3, 100) + telemetry(7, 10100))       # 3 frames lost in between
    msgs = link.poll(20000)
    assert [m.name for m in msgs] == ["Telemetry", "Telemetry"]
    c = link.counters()
    assert c["rx_cobs_errors"] == 1 and c["protocol_errors"] == 3 and c["rx_seq_gaps"] == 3


def test_vanished_port_marks_link_down(rig):
    link, board, _ = rig
    link.transport.close()
    assert link.poll(0) == []
    assert link.command(WheelCmd(0, 1.0, 1.0)) is None
    assert not link.link_up and link.transport_errors == 1
    host2, board2 = LoopTransport.pair()
    link.reconnect(host2)
    link.stop(5)
    assert [m.name for m in board_frames(board2)] == ["Stop"]
