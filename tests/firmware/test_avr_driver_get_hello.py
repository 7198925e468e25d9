"""Host driver of the AVR board (boards/arduino/driver.py): GET_HELLO (PROTOCOL.md section 8). The firmware
answers it with the same HELLO it sent at boot; the driver tells the answer from a restart by the board's frame
numbering (the boot HELLO is the board's frame 0, an answer continues its seq) and keeps its clock unwrapping,
time offset and IMU integration across an answer. In-memory loop transport, no firmware."""
import struct

from boards.arduino import protocol as P
from boards.arduino.driver import AvrRobotLink
from onboard.comms.transport import LoopTransport

HELLO_BODY = struct.pack(P.HELLO_FMT, 2, 1, 0x01, 0x68, 0, 0)


def _telemetry(seq, t_us):
    body = struct.pack(P.TELEMETRY_FMT, t_us, 0, 0, 0, 0, 8192, 0, 0, 0, 0, 0, 0, 0)
    return P.encode_frame(P.MSG_TELEMETRY, seq, body)


def _hello(seq):
    return P.encode_frame(P.MSG_HELLO, seq, HELLO_BODY)


def _booted_link(n_tel=3, t0_us=4000000000, step_us=10000):
    """A link that saw the boot HELLO (seq 0) and ``n_tel`` telemetry frames (seqs 1..n_tel), fw clock from t0."""
    host, board = LoopTransport.pair()
    imu = []
    link = AvrRobotLink(host, on_imu=imu.append)
    board.write(_hello(0))
    for k in range(n_tel):
        board.write(_telemetry(1 + k, (t0_us + k * step_us) & 0xFFFFFFFF))
    link.poll(5000000000)
    return link, board, imu


def test_get_hello_sends_the_documented_unsigned_frame():
    host, board = LoopTransport.pair()
    link = AvrRobotLink(host)
    assert link.get_hello(0) == 0
    assert board.read(1000) == bytes.fromhex("020803 94a6 00".replace(" ", ""))   # PROTOCOL.md section 2


def test_answer_to_get_hello_is_not_a_reboot():
    link, board, imu = _booted_link()
    assert link.boots == 1 and len(imu) == 2
    offset = link._offset_us
    link.get_hello(5000030000)
    board.write(_hello(4))                                       # continues the board's seq 3 -> 4
    # the firmware clock wraps past 2**32 just after: still the same boot, one wrap
    board.write(_telemetry(5, (4000000000 + 3 * 10000) & 0xFFFFFFFF))
    board.write(_telemetry(6, (4000000000 + 4 * 10000) & 0xFFFFFFFF))
    link.poll(5000050000)
    assert link.boots == 1 and link.hello_replies == 1 and link.hello.version == 2
    assert link.imu_gaps == 0 and link.rx_seq_gaps == 0
    assert link._offset_us == offset
    assert len(imu) == 4 and [s.dt_us for s in imu] == [10000] * 4
    assert imu[-1].time_us == 4000000000 + 4 * 10000 + offset
    assert link.counters()["hello_replies"] == 1


def test_boot_hello_while_get_hello_is_outstanding_is_a_reboot():
    link, board, imu = _booted_link()
    link.get_hello(0)
    board.write(_hello(0))                                       # the board restarted: its frame 0 again
    board.write(_telemetry(1, 1000))
    board.write(_telemetry(2, 11000))
    link.poll(5000100000)
    assert link.boots == 2 and link.hello_replies == 0
    assert link.rx_seq_gaps == 0                                 # a restart is not a gap
    assert imu[-1].dt_us == 10000 and link._fw_high == 0


def test_hello_without_a_request_stays_a_reboot():
    link, board, _imu = _booted_link()
    board.write(_hello(4))                                       # nobody asked: only a restart sends HELLO
    link.poll(5000100000)
    assert link.boots == 2 and link.hello_replies == 0


def test_each_request_accounts_for_one_answer():
    link, board, _imu = _booted_link()
    link.get_hello(0)
    link.get_hello(0)
    board.write(_hello(4) + _hello(5) + _hello(6))               # two answers, then one HELLO nobody asked for
    link.poll(5000100000)
    assert link.hello_replies == 2 and link.boots == 2


def test_answer_first_on_a_new_connection_is_not_a_reboot():
    # a host that opens the port after boot: the first frame it decodes is the answer (seq far from 0)
    host, board = LoopTransport.pair()
    link = AvrRobotLink(host)
    link.get_hello(0)
    board.write(_hello(123) + _telemetry(124, 5000) + _telemetry(125, 15000))
    link.poll(20000)
    assert link.hello is not None and link.hello_replies == 1 and link.boots == 0
    assert link.rx_seq_gaps == 0


def test_get_hello_on_a_closed_link_is_not_outstanding():
    link, board, _imu = _booted_link()
    link.transport.close()
    assert link.get_hello(0) is None
    assert link._hello_requests == 0


def test_answer_first_after_a_reconnect_counts_as_a_restart():
    # the board may have restarted while the port was away: with its clock held, the driver cannot tell
    link, board, _imu = _booted_link()
    host2, board2 = LoopTransport.pair()
    link.reconnect(host2)
    link.get_hello(0)
    board2.write(_hello(77) + _telemetry(78, 5000))
    link.poll(6000000000)
    assert link.boots == 2 and link.hello_replies == 0 and link._fw_high == 0


def test_answer_after_a_lost_frame_is_still_an_answer():
    link, board, _imu = _booted_link()                           # board frames 0..3 seen
    link.get_hello(0)
    board.write(_hello(6) + _telemetry(7, (4000000000 + 5 * 10000) & 0xFFFFFFFF))   # frames 4, 5 lost
    link.poll(5000100000)
    assert link.boots == 1 and link.hello_replies == 1 and link.rx_seq_gaps == 2


def test_boot_hello_after_seq_255_is_a_reboot():
    # the board's seq wrapped to 255 just before it restarted: its boot HELLO (seq 0) "continues" 255
    host, board = LoopTransport.pair()
    link = AvrRobotLink(host)
    link.get_hello(0)
    board.write(_hello(254) + _telemetry(255, 1000000))
    link.poll(2000000)
    assert link.hello_replies == 1 and link.boots == 0
    link.get_hello(0)
    board.write(_hello(0) + _telemetry(1, 500))
    link.poll(3000000)
    assert link.boots == 1 and link.hello_replies == 1 and link._fw_high == 0
