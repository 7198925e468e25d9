"""The board end of a deploy, through the real ``mpremote`` command line.

Every mpremote call runs as a subprocess with a timeout (mpremote reads serial
ports without one, so a silent board would hang it); a timeout becomes
:class:`BoardNotResponding`. Scripts run on the board with ``mpremote exec``
print one JSON line, which is parsed here.
"""
import json
import os
import subprocess
import sys

from onboard.deploy.build import DeployError

EXIT_NO_BOARD = 3
EXIT_VERSION = 4
EXIT_FLASH = 5
EXIT_COPY = 6


class NoBoard(DeployError):
    exit_code = EXIT_NO_BOARD


class BoardNotResponding(DeployError):
    exit_code = EXIT_NO_BOARD


class CopyFailed(DeployError):
    exit_code = EXIT_COPY


def mpremote_cmd():
    """The mpremote entry point of this interpreter's environment."""
    exe = os.path.join(os.path.dirname(sys.executable), "mpremote")
    if os.path.isfile(exe):
        return [exe]
    return [sys.executable, "-m", "mpremote"]


def mpremote_error(text):
    """mpremote's error output (``text``) as one message: unchanged, or for a Python traceback its exception lines
    joined by "; " (the first is the cause, e.g. pyserial's SerialException when the port went away)."""
    if "Traceback (most recent call last)" not in text:
        return text
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not ln[:1].isspace()
             and not ln.startswith(("Traceback (most recent call last)", "During handling of the above exception",
                                    "The above exception was the direct cause"))]
    return "; ".join(lines) or text


class Device:
    """mpremote on ``port`` with ``timeout_s`` per call (plus ``s_per_kib`` per KiB copied)."""

    def __init__(self, port, timeout_s=10.0, s_per_kib=0.5, log=None):
        self.port = port
        self.timeout_s = timeout_s
        self.s_per_kib = s_per_kib
        self.calls = 0
        self.log = log

    def run(self, args, payload_bytes=0, error_cls=DeployError):
        """Run ``mpremote connect <port> <args...>``; returns stdout (str)."""
        if not self._port_present():
            raise NoBoard("no board on %s: the port does not exist (is the board plugged in? "
                          "`mpremote connect list` shows ports)" % self.port)
        timeout = self.timeout_s + self.s_per_kib * payload_bytes / 1024.0
        cmd = mpremote_cmd() + ["connect", self.port] + list(args)
        self.calls += 1
        if self.log:
            self.log("mpremote %s" % " ".join(a if len(a) < 60 else a[:57] + "..." for a in args))
        try:
            # bytes that are no UTF-8 (line noise, a program printing binary) become U+FFFD, not an exception
            proc = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            raise BoardNotResponding(
                "board on %s not responding: mpremote gave no answer within %.1f s (is it running "
                "MicroPython and not busy?)%s" % (self.port, timeout,
                                                  (" last output: %r" % partial[-200:]) if partial else ""))
        if proc.returncode != 0:
            msg = mpremote_error(proc.stderr.strip() or proc.stdout.strip())[-800:]
            if "failed to access" in msg or "could not enter raw repl" in msg or "no device" in msg:
                raise NoBoard("no MicroPython board answering on %s: %s" % (self.port, msg))
            if "SerialException" in msg or not self._port_present():
                raise NoBoard("the board on %s disconnected during `mpremote %s` (%s): %s"
                              % (self.port, args[0] if args else "", "the port is gone" if not self._port_present()
                                 else "the serial link failed", msg))
            raise error_cls("mpremote failed (exit %d): %s" % (proc.returncode, msg))
        return proc.stdout

    def _port_present(self):
        return self.port.startswith(("rfc2217:", "socket:")) or os.path.exists(self.port)

    def exec_json(self, script, error_cls=DeployError):
        """Run ``script`` on the board; it must print one line ``JSON:<json>``."""
        out = self.run(["exec", script], error_cls=error_cls)
        for line in out.splitlines():
            if line.startswith("JSON:"):
                try:
                    return json.loads(line[5:])
                except ValueError:
                    raise error_cls("board script printed a damaged result: %r" % line[-400:])
        raise error_cls("board script printed no result: %r" % out[-400:])


# Runs on the board: version, flash, active slot, file hashes of both slots and of the boot stub (/main.py, and
# /main.new while a deploy stages a new one), sizes of the files in / (the ring log's, for the flash check).
PROBE_SCRIPT = r"""
import sys, os, json, binascii
try:
    import hashlib
except ImportError:
    hashlib = None
def _h(p):
    if hashlib is None:
        return None
    h = hashlib.sha256()
    b = bytearray(512)
    mv = memoryview(b)
    with open(p, 'rb') as f:
        while True:
            n = f.readinto(b)
            if not n:
                break
            h.update(mv[:n])
    return binascii.hexlify(h.digest()).decode()
def _walk(d, rel, files, dirs):
    for e in os.ilistdir(d):
        p = d + '/' + e[0]
        r = (rel + '/' + e[0]) if rel else e[0]
        if e[1] & 0x4000:
            dirs.append(r)
            _walk(p, r, files, dirs)
        else:
            files[r] = _h(p)
def _slot(name):
    files = {}
    dirs = []
    try:
        os.stat('/' + name)
    except OSError:
        return None
    _walk('/' + name, '', files, dirs)
    return {'files': files, 'dirs': dirs}
try:
    with open('/active') as f:
        active = f.read().strip()
except OSError:
    active = None
try:
    stub = _h('/main.py')
except OSError:
    stub = None
try:
    stub_new = _h('/main.new')
except OSError:
    stub_new = None
root = {}
for e in os.ilistdir('/'):
    if not e[1] & 0x4000:
        root[e[0]] = os.stat('/' + e[0])[6]
st = os.statvfs('/')
impl = sys.implementation
print('JSON:' + json.dumps({'version': list(impl.version[:3]), 'mpy': getattr(impl, '_mpy', None),
    'machine': getattr(impl, '_machine', sys.platform), 'hashlib': hashlib is not None,
    'block_bytes': st[0], 'free_bytes': st[0] * st[4], 'total_bytes': st[0] * st[2],
    'active': active, 'stub': stub, 'stub_new': stub_new, 'slots': {'app_a': _slot('app_a'), 'app_b': _slot('app_b')},
    'root_files': root}))
"""


def prepare_script(slot, remove, copies, rmdirs=()):
    """Invalidate ``slot``, remove stale files, then the folders ``rmdirs`` (emptied by that, deepest first), copy
    unchanged files from the active slot on the board."""
    return ("import os\n"
            "def _rm(p):\n try:\n  os.remove(p)\n except OSError:\n  pass\n"
            "def _md(p):\n try:\n  os.mkdir(p)\n except OSError:\n  pass\n"
            "def _cp(a, b):\n buf = bytearray(512)\n with open(a, 'rb') as fa:\n  with open(b, 'wb') as fb:\n"
            "   while True:\n    n = fa.readinto(buf)\n    if not n:\n     break\n    fb.write(buf[:n])\n"
            "_rm('/%s/.manifest')\n"
            "for p in %r:\n _rm(p)\n"
            "%s"
            "for a, b in %r:\n"
            " parts = b.split('/')\n"
            " for i in range(2, len(parts)):\n  _md('/'.join(parts[:i]))\n"
            " _cp(a, b)\n"
            "print('JSON:{\"ok\": true}')\n" % (slot, list(remove),
                                                 ("for p in %r:\n os.rmdir(p)\n" % list(rmdirs)) if rmdirs else "",
                                                 list(copies)))


def switch_script(slot, manifest_json):
    """Write the slot's manifest, then point /active at it atomically (write + rename)."""
    return ("import os\n"
            "with open('/%s/.manifest', 'w') as f:\n f.write(%r)\n"
            "with open('/active.new', 'w') as f:\n f.write(%r)\n"
            "os.rename('/active.new', '/active')\n"
            "print('JSON:{\"active\": \"%s\"}')\n" % (slot, manifest_json, slot, slot))


STUB = """# onboard deploy boot stub: runs the application folder named in /active.
# A deploy copies into the other folder and switches /active only after every
# file was copied and verified, so a failed copy leaves this version running.
import sys
try:
    with open('/active') as _f:
        _slot = _f.read().strip()
except OSError:
    _slot = ''
if _slot:
    sys.path.insert(0, '/' + _slot)
    import main
else:
    print('onboard deploy: no active application (run `python -m onboard.deploy`)')
"""


def soft_reset_and_start(port, timeout_s=10.0, wait_for=b"READY"):
    """Leave any program, soft-reset in the friendly REPL so boot.py and main.py run.

    Returns the first line containing ``wait_for`` (bytes) or None when none came
    within ``timeout_s``; NoBoard when the port cannot be opened or goes away. Uses
    pyserial (what mpremote itself is built on): mpremote's own soft-reset stays in
    the raw REPL, where boards do not run main.py.
    """
    import serial
    if not os.path.exists(port):
        raise NoBoard("no board on %s: the port does not exist" % port)
    import time
    try:
        ser = serial.Serial(port, 115200, timeout=0.05)
    except (OSError, serial.SerialException) as exc:
        raise NoBoard("cannot open %s: %s" % (port, exc))
    try:
        ser.write(b"\r\x03\x03")
        ser.write(b"\r\x02")
        ser.write(b"\x04")
        deadline = time.monotonic() + timeout_s
        buf = b""
        while time.monotonic() < deadline:
            buf += ser.read(256)
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if wait_for and wait_for in line:
                    return line.strip()
            if not wait_for:
                return None
        return None
    except (OSError, serial.SerialException) as exc:         # the port went away (a USB cable pulled)
        raise NoBoard("the board on %s disconnected during the soft reset that starts it: %s" % (port, exc))
    finally:
        try:
            ser.close()
        except (OSError, serial.SerialException):
            pass
