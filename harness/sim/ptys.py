"""Pseudo-terminals for simulated devices: the simulated side holds the master fd,
the runtime opens the slave path with pyserial exactly like a real serial port."""
import os
import termios
import tty


class PtyPair:
    """A raw pty: ``slave_path`` for the runtime, ``read``/``write`` on the master for the simulator.

    ``close()`` removes the device, so a runtime reading the slave sees the port vanish
    (like unplugging USB).
    """

    def __init__(self):
        self.master_fd, self.slave_fd = os.openpty()
        tty.setraw(self.slave_fd)
        attrs = termios.tcgetattr(self.slave_fd)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(self.slave_fd, termios.TCSANOW, attrs)
        os.set_blocking(self.master_fd, False)
        self.slave_path = os.ttyname(self.slave_fd)
        self.closed = False

    def read(self, max_bytes=4096):
        """Bytes the runtime wrote (non-blocking; b"" when none)."""
        try:
            return os.read(self.master_fd, max_bytes)
        except (BlockingIOError, OSError):
            return b""

    def write(self, data):
        """Send bytes to the runtime."""
        view = memoryview(bytes(data))
        while view:
            try:
                n = os.write(self.master_fd, view)
            except BlockingIOError:
                continue
            view = view[n:]

    def close(self):
        if not self.closed:
            os.close(self.master_fd)
            os.close(self.slave_fd)
            self.closed = True
