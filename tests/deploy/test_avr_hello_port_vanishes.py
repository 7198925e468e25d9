"""The AVR deploy's HELLO check (onboard/deploy/avr.py ``wait_hello``) when the port goes away while it waits (a USB
cable pulled): AvrNoBoard naming the port (exit status 3), not pyserial's exception."""
import select
import threading

import pytest

from harness.sim.ptys import PtyPair
from onboard.deploy.avr import EXIT_NO_BOARD, AvrNoBoard, get_hello_frame, wait_hello


def test_a_port_that_vanishes_while_waiting_for_hello_is_no_board():
    pty = PtyPair()
    got = []

    def pull_after_the_first_request():
        while get_hello_frame(0) not in b"".join(got):
            select.select([pty.master_fd], [], [], 5.0)
            got.append(pty.read())
        pty.close()

    t = threading.Thread(target=pull_after_the_first_request, daemon=True)
    t.start()
    try:
        with pytest.raises(AvrNoBoard, match="the board on %s disconnected while waiting for HELLO"
                           % pty.slave_path) as err:
            wait_hello(pty.slave_path, 115200, timeout_s=20)
        assert err.value.exit_code == EXIT_NO_BOARD
    finally:
        t.join(timeout=10)
        pty.close()
