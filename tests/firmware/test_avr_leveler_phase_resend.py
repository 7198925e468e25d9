"""The AVR leveler's host app (boards/arduino/leveler_app.py) sends the behaviour's phase (SET_PHASE) to the
board; a phase that could not be sent (the port was gone) goes out once the link is back, not only at the next
change of mode. In-memory loop transports, no firmware."""
import random

from boards.arduino import protocol as P
from boards.arduino.driver import AvrRobotLink
from boards.arduino.leveler_app import AvrLeveler
from onboard.comms.transport import LoopTransport


def _phases_sent(board):
    return [P.decode_message(f).phase for f in P.FrameDecoder().feed(board.read(100000))
            if f.msg_type == P.MSG_SET_PHASE]


def test_phase_lost_with_the_port_is_sent_after_reconnect():
    host, board = LoopTransport.pair()
    link = AvrRobotLink(host)
    app = AvrLeveler(link, random.Random(1))
    recorded = []
    app.record(lambda topic, time_us, msg: recorded.append((topic, msg)))
    app.hill.on_mode(0, 1000)
    assert _phases_sent(board) == [1]
    board.close()                                      # the port vanishes
    app.hill.on_mode(1, 2000)                          # the mode changes while it is gone
    assert not link.link_up
    host2, board2 = LoopTransport.pair()
    link.reconnect(host2)
    app.hill.on_mode(1, 3000)                          # same mode: the board still has phase 1
    assert _phases_sent(board2) == [2]
    app.hill.on_mode(1, 4000)
    assert _phases_sent(board2) == []                  # sent once, not every step
    # the app's output records each change of phase once
    assert [m["phase"] for topic, m in recorded if topic.endswith("/phase")] == [1, 2]
