"""A virtual MicroPython board on a pseudo-terminal, for CI.

The real MicroPython 1.27 (WebAssembly build under node, ``vboard.mjs``) sits
behind a pty and speaks the REPL protocol mpremote speaks, so the *unmodified*
``mpremote connect <pty path>`` talks to it like to a board on USB serial.
Its flash filesystem persists across soft resets (and, with ``fs_dir``, in a
host folder) and is the board's whole root (``/boot.py``, ``/lib``...); ``machine``
is a simulation shim (``frozen/machine.py``). Ctrl-C on the line interrupts running
code with KeyboardInterrupt at any time, busy loops included (README.md: how).
``python -m harness virtual-board`` serves one from the command line.

    with VirtualBoard(flash_bytes=1_441_792) as board:
        subprocess.run(["mpremote", "connect", board.port, "ls"])
"""
import json
import os
import select
import shutil
import subprocess
import time
import termios
import tty

from harness.sim.micropython import MP_PACKAGE_DIR, REPO_ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
VBOARD_JS = os.path.join(HERE, "vboard.mjs")
FROZEN_DIR = os.path.join(HERE, "frozen")


class VirtualBoardError(RuntimeError):
    pass


# counters the board reports (``VirtualBoard.counters``)
COUNTER_NAMES = ("bytes_in", "bytes_out", "soft_resets", "interrupts", "boots")


def available():
    return shutil.which("node") is not None and os.path.isdir(MP_PACKAGE_DIR)


def frozen_modules():
    out = {}
    for fn in sorted(os.listdir(FROZEN_DIR)):
        if fn.endswith(".py"):
            with open(os.path.join(FROZEN_DIR, fn)) as fh:
                out[fn] = fh.read()
    return out


class VirtualBoard:
    """Start/stop the virtual board; ``port`` is the pty path mpremote connects to.

    flash_bytes: simulated flash filesystem size (os.statvfs, ENOSPC beyond).
    fs_dir: optional host folder mirroring the flash (loaded at start, written after changes); a relative
    one is taken from the caller's working folder (the board runs in the repository's, and rewrites the folder).
    fail_write_after_bytes: fault injection, file writes fail with EIO after that many bytes.
    heapsize: MicroPython heap (bytes).
    """

    def __init__(self, flash_bytes=1441792, fs_dir=None, fail_write_after_bytes=None,
                 heapsize=256 * 1024):
        self.config = {"flash_bytes": int(flash_bytes), "fs_dir": fs_dir and os.path.abspath(fs_dir),
                       "fail_write_after_bytes": fail_write_after_bytes, "heapsize": int(heapsize),
                       "frozen": frozen_modules()}
        self.proc = None
        self.master_fd = self.slave_fd = None
        self.port = None

    def start(self):
        if not available():
            raise VirtualBoardError("virtual board needs node and the MicroPython npm package "
                                    "(run `make setup`)")
        self.master_fd, self.slave_fd = os.openpty()
        try:
            tty.setraw(self.slave_fd)
            attrs = termios.tcgetattr(self.slave_fd)
            attrs[3] &= ~termios.ECHO
            termios.tcsetattr(self.slave_fd, termios.TCSANOW, attrs)
            self.port = os.ttyname(self.slave_fd)
            cfg = dict(self.config, fd=self.master_fd, control=True)
            # own session: a terminal's Ctrl-C (SIGINT to the foreground group) reaches the
            # parent, which then reads the counters and stops the board; the board ends by
            # itself when the parent goes away (its stdin, the control pipe, closes)
            self.proc = subprocess.Popen(
                ["node", VBOARD_JS, json.dumps(cfg)], cwd=REPO_ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(self.master_fd,),
                start_new_session=True)
        except BaseException:
            self.stop()             # no pty left open when the board did not start (`with` calls no __exit__)
            raise
        return self

    def counters(self, timeout_s=5.0):
        """The board's counters: {bytes_in, bytes_out (serial line bytes), soft_resets,
        interrupts (Ctrl-C delivered as KeyboardInterrupt to running code), boots}.
        Answered by the board's serial-line thread, so also while code runs."""
        if not self.alive():
            raise VirtualBoardError("the virtual board is not running")
        self.proc.stdin.write(b"stats\n")
        self.proc.stdin.flush()
        out_fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        line = b""
        while True:
            left_s = deadline - time.monotonic()
            if left_s <= 0 or not select.select([out_fd], [], [], left_s)[0]:
                raise VirtualBoardError("the virtual board did not report its counters")
            chunk = os.read(out_fd, 4096)
            if not chunk:
                raise VirtualBoardError("the virtual board exited")
            line += chunk
            while b"\n" in line:
                one, line = line.split(b"\n", 1)
                if one.startswith(b"STATS "):
                    return json.loads(one[6:].decode())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s=5.0):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=timeout_s)
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            self.proc = None
        for fd in (self.master_fd, self.slave_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.master_fd = self.slave_fd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
