"""A virtual MicroPython board on a pseudo-terminal, for CI.

The real MicroPython 1.27 (WebAssembly build under node, ``vboard.mjs``) sits
behind a pty and speaks the REPL protocol mpremote speaks, so the *unmodified*
``mpremote connect <pty path>`` talks to it like to a board on USB serial.
Its flash filesystem persists across soft resets (and, with ``fs_dir``, in a
host folder); ``machine`` is a simulation shim (``frozen/machine.py``).

    with VirtualBoard(flash_bytes=1_441_792) as board:
        subprocess.run(["mpremote", "connect", board.port, "ls"])
"""
import json
import os
import shutil
import subprocess
import termios
import tty

from harness.sim.micropython import MP_PACKAGE_DIR, REPO_ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
VBOARD_JS = os.path.join(HERE, "vboard.mjs")
FROZEN_DIR = os.path.join(HERE, "frozen")


class VirtualBoardError(RuntimeError):
    pass


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
    fs_dir: optional host folder mirroring the flash (loaded at start, written after changes).
    fail_write_after_bytes: fault injection, file writes fail with EIO after that many bytes.
    heapsize: MicroPython heap (bytes).
    """

    def __init__(self, flash_bytes=1441792, fs_dir=None, fail_write_after_bytes=None,
                 heapsize=256 * 1024):
        self.config = {"flash_bytes": int(flash_bytes), "fs_dir": fs_dir,
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
        tty.setraw(self.slave_fd)
        attrs = termios.tcgetattr(self.slave_fd)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(self.slave_fd, termios.TCSANOW, attrs)
        self.port = os.ttyname(self.slave_fd)
        cfg = dict(self.config, fd=self.master_fd)
        self.proc = subprocess.Popen(
            ["node", VBOARD_JS, json.dumps(cfg)], cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL, pass_fds=(self.master_fd,))
        return self

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
