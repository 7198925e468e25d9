"""Deploy the robot_link firmware to an AVR board: build it with its link key, flash it with the real
``avrdude`` through the board's serial bootloader, then check that the new firmware answers HELLO.

Boards are described by ``boards/*/manifest_<board>.json`` files whose ``kind`` is ``"avr"``
(``boards/arduino/manifest_uno.json``, ``manifest_leonardo.json``): MCU, make target, avrdude
programmer and baud, whether the bootloader is entered with the 1200-baud touch, where the link is.

- **Uno** (ATmega328P, optiboot): ``avrdude -c arduino`` opens the port at 115200 baud; opening it
  (and avrdude's DTR toggle) resets the board through its 100 nF DTR capacitor, optiboot waits ~1 s
  for STK500v1, avrdude writes and verifies the flash, optiboot starts the sketch (watchdog reset).
  The link is on the same port (``Serial``): it is opened again (another reset, the sketch sends
  HELLO once optiboot gives up) and GET_HELLO is sent until a HELLO arrives.
- **Leonardo / A-Star 32U4** (Caterina, AVR109): the running sketch's USB CDC port is opened at 1200
  baud and closed (the "1200-baud touch"); the core reboots into Caterina, which enumerates as a
  USB serial port (often a new name) for ~8 s; ``avrdude -c avr109 -b 57600`` flashes through it. The
  link is on ``Serial1`` (pins 0/1), not on USB: HELLO is checked on ``--link-port`` when given.

Exit codes follow ``onboard.deploy.__main__``: 2 bad arguments/key/build, 3 no board on the port or
no bootloader/firmware answering, 6 flashing or verification failed.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import time

from onboard.comms.cobs import cobs_decode, cobs_encode
from onboard.comms.crc import crc16_ccitt_false
from onboard.core.settings import BOOLEAN, TEXT, int_at_least, int_within
from onboard.deploy.build import BOARDS_DIR, REPO_ROOT, BoardNotFound, DeployError, check_manifest, read_manifest

EXIT_BAD = 2
EXIT_NO_BOARD = 3
EXIT_FLASH = 6

FIRMWARE_DIR = os.path.join(REPO_ROOT, "firmware", "arduino")
DEFAULT_BUILD_DIR = os.path.join(REPO_ROOT, "build", "deploy", "avr")
KEY_HEX_DIGITS = 32                 # the firmware's SipHash-2-4 key: 128 bits
MSG_GET_HELLO = 0x08
MSG_HELLO = 0x80
HELLO_FIELDS = ("version", "board_id", "reset_flags", "imu_whoami", "signing", "key_id")
TOUCH_BAUD = 1200
CATERINA_WAIT_S = 8.0               # Caterina stays in the bootloader ~8 s after the touch


class AvrNoBoard(DeployError):
    exit_code = EXIT_NO_BOARD


class AvrFlashFailed(DeployError):
    exit_code = EXIT_FLASH


def list_avr_boards(boards_dir=None):
    """Names of the AVR boards: ``board`` of every ``boards_dir/*/manifest_*.json`` whose kind is avr."""
    out = []
    for path in sorted(glob.glob(os.path.join(boards_dir or BOARDS_DIR, "*", "manifest_*.json"))):
        try:
            m = read_manifest(path)
        except DeployError:                 # unreadable: not listed (loading the board by name says why)
            continue
        if m.get("kind") == "avr" and isinstance(m.get("board"), str):
            out.append(m["board"])
    return out


REQUIRED = ("mcu", "make_target", "programmer", "upload_baud", "touch_1200", "link_on_upload_port",
            "link_baud", "board_id", "flash_max_bytes")
# the values the keys of an AVR board's manifest take
AVR_MANIFEST_RULES = {"mcu": TEXT, "make_target": TEXT, "programmer": TEXT, "upload_baud": int_at_least(1),
                      "touch_1200": BOOLEAN, "link_on_upload_port": BOOLEAN, "link_baud": int_at_least(1),
                      "board_id": int_within(0, 255), "flash_max_bytes": int_at_least(1)}


def load_avr_manifest(board, boards_dir=None):
    """The manifest dict of AVR board ``board`` (``path`` added), or None when no AVR board has that name."""
    for path in sorted(glob.glob(os.path.join(boards_dir or BOARDS_DIR, "*", "manifest_*.json"))):
        m = read_manifest(path)
        if not (m.get("kind") == "avr" and m.get("board") == board):
            continue
        check_manifest(path, m, AVR_MANIFEST_RULES, REQUIRED)
        m["path"] = path
        return m
    return None


def is_avr_board(board, boards_dir=None):
    """Whether ``board`` is an AVR board: listed, or named by a ``manifest_<board>.json`` that cannot be read
    (loading it then says why, rather than "unknown board")."""
    if board in list_avr_boards(boards_dir):
        return True
    for path in glob.glob(os.path.join(boards_dir or BOARDS_DIR, "*", "manifest_%s.json" % glob.escape(board))):
        try:
            read_manifest(path)
        except DeployError:
            return True
    return False


# ------------------------------------------------------------------ build
def read_avr_key(path):
    """Check that ``path`` holds the firmware's key (32 hex digits, whitespace ignored); returns its
    absolute path. Errors name the file, never its content."""
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as exc:
        raise DeployError("cannot read the link key %s: %s" % (path, exc.strerror or exc), EXIT_BAD)
    except UnicodeDecodeError:
        text = ""               # a raw binary key (or any non-text file): refused below, its bytes never shown
    digits = "".join(text.split())
    if not re.fullmatch("[0-9a-fA-F]{%d}" % KEY_HEX_DIGITS, digits):
        raise DeployError("link key %s: the AVR firmware needs exactly %d hex digits (a 128-bit SipHash key)"
                          % (path, KEY_HEX_DIGITS), EXIT_BAD)
    return os.path.abspath(path)


def key_fingerprint_file(path):
    """First 8 hex digits of sha256 over the key bytes: names a key in logs without revealing it."""
    with open(path) as fh:
        key = bytes.fromhex("".join(fh.read().split()))
    return hashlib.sha256(key).hexdigest()[:8]


def makefile_has_key_option(firmware_dir=FIRMWARE_DIR):
    """True when firmware/arduino/Makefile takes ``KEY=<file>`` (the signed-link build)."""
    try:
        with open(os.path.join(firmware_dir, "Makefile")) as fh:
            return re.search(r"^KEY\s*\?=", fh.read(), re.M) is not None
    except OSError:
        return False


def make_command(manifest, build_dir, key_path=None, key_id=0, unsigned=False, firmware_dir=FIRMWARE_DIR):
    """The ``make`` command line that builds the board's firmware into ``build_dir``."""
    cmd = ["make", "-s", "-C", firmware_dir, "BUILD=" + build_dir, manifest["make_target"]]
    if makefile_has_key_option(firmware_dir):
        if unsigned:
            cmd.append("SIGNING=off")
        elif key_path:
            cmd += ["KEY=" + key_path, "KEY_ID=%d" % key_id]
    return cmd


def hex_bytes(path):
    """Number of data bytes in an Intel HEX file (what goes into the flash)."""
    n = 0
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line.startswith(":") and len(line) >= 11 and line[7:9] == "00":
                n += int(line[1:3], 16)
    return n


def build_firmware(manifest, build_dir=None, key_path=None, key_id=0, unsigned=False, timeout_s=600.0,
                   log=print):
    """Build the board's firmware; returns {hex, elf, flash_bytes, flash_max_bytes, sha256, signing}."""
    if makefile_has_key_option() and not key_path and not unsigned:
        raise DeployError("the AVR firmware is built with its link key: pass --link-key FILE (32 hex digits), "
                          "or --unsigned for a build that accepts unsigned commands", EXIT_BAD)
    if not makefile_has_key_option() and (key_path or unsigned):
        raise DeployError("firmware/arduino/Makefile has no KEY= option: this firmware has no signed link, "
                          "deploy without --link-key/--unsigned", EXIT_BAD)
    build_dir = os.path.abspath(build_dir or DEFAULT_BUILD_DIR)
    cmd = make_command(manifest, build_dir, key_path, key_id, unsigned)
    if shutil.which("make") is None or shutil.which("avr-gcc") is None:
        raise DeployError("make/avr-gcc not installed (make setup installs gcc-avr, avr-libc, arduino-core-avr)",
                          EXIT_BAD)
    log("build %s: make -C firmware/arduino %s%s" % (manifest["board"], manifest["make_target"],
                                                     " SIGNING=off" if unsigned else
                                                     (" KEY=<%s> KEY_ID=%d" % (key_fingerprint_file(key_path), key_id)
                                                      if key_path else "")))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise DeployError("firmware build did not finish within %.0f s" % timeout_s, EXIT_BAD)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errs = [ln for ln in lines if "error" in ln.lower()]
        raise DeployError("firmware build failed: %s" % ((errs or lines or ["make exit %d" % proc.returncode])[0]
                                                         .strip()[:300]), EXIT_BAD)
    out = os.path.join(build_dir, manifest["make_target"])
    hex_path = os.path.join(out, "robot_link.hex")
    if not os.path.isfile(hex_path):
        raise DeployError("firmware build left no %s" % hex_path, EXIT_BAD)
    size = hex_bytes(hex_path)
    if size > manifest["flash_max_bytes"]:
        raise DeployError("firmware is %d bytes, the bootloader leaves %d" % (size, manifest["flash_max_bytes"]),
                          5)
    with open(hex_path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    return {"hex": hex_path, "elf": os.path.join(out, "robot_link.elf"), "flash_bytes": size,
            "flash_max_bytes": manifest["flash_max_bytes"], "sha256": digest,
            "signing": None if not makefile_has_key_option() else (not unsigned)}


# ------------------------------------------------------------------ flash
def avrdude_command(manifest, port, hex_path, attempts=None):
    cmd = ["avrdude", "-c", manifest["programmer"], "-p", manifest["mcu"], "-P", port,
           "-b", str(manifest["upload_baud"]), "-D", "-U", "flash:w:%s:i" % hex_path]
    if attempts and manifest["programmer"] == "arduino":
        cmd[1:1] = ["-x", "attempts=%d" % attempts]
    return cmd


def _avrdude_error(text):
    """The one line of avrdude's output that says what went wrong."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if "TIOCMGET" not in ln and "TIOCMSET" not in ln and "Thank you" not in ln]
    for key in ("not in sync", "not responding", "mismatch", "verification error", "error"):
        hits = [ln for ln in lines if key in ln]
        if hits:
            return hits[-1]
    return lines[-1] if lines else "no output"


def touch_1200(port, wait_s=CATERINA_WAIT_S, poll_s=0.1):
    """The 32U4's bootloader entry: open the sketch's USB port at 1200 baud and close it; the Arduino core
    reboots into Caterina. Returns the bootloader's port: a serial port that appeared after the touch, or
    ``port`` again once it is back (Caterina often keeps the name on Linux)."""
    import serial
    before = set(glob.glob("/dev/ttyACM*") + glob.glob("/dev/ttyUSB*"))
    try:
        s = serial.Serial(port, TOUCH_BAUD)
        s.close()
    except (OSError, serial.SerialException) as exc:
        raise AvrNoBoard("cannot open %s for the 1200-baud touch: %s" % (port, exc))
    deadline = time.monotonic() + wait_s
    gone = False
    while time.monotonic() < deadline:
        now = set(glob.glob("/dev/ttyACM*") + glob.glob("/dev/ttyUSB*"))
        new = sorted(now - before)
        if new:
            return new[0]
        if not os.path.exists(port):
            gone = True
        elif gone:
            return port
        time.sleep(poll_s)
    if os.path.exists(port):
        return port
    raise AvrNoBoard("no bootloader port appeared within %.0f s after the 1200-baud touch on %s" % (wait_s, port))


def flash(manifest, port, hex_path, timeout_s=60.0, attempts=None, log=print):
    """Flash ``hex_path`` with avrdude through the board's bootloader on ``port``; returns the port used."""
    if shutil.which("avrdude") is None:
        raise DeployError("avrdude is not installed (apt-get install avrdude, or make setup)", EXIT_BAD)
    if not os.path.exists(port):
        raise AvrNoBoard("no board on %s: the port does not exist (is the board plugged in?)" % port)
    if manifest["touch_1200"]:
        log("1200-baud touch on %s: rebooting into the bootloader" % port)
        port = touch_1200(port)
    cmd = avrdude_command(manifest, port, hex_path, attempts)
    log("avrdude %s" % " ".join(cmd[1:]))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AvrFlashFailed("avrdude did not finish within %.0f s on %s" % (timeout_s, port))
    out = proc.stderr + proc.stdout
    if proc.returncode != 0:
        msg = _avrdude_error(out)
        if "not in sync" in out or "not responding" in out or "unable to open" in out or "can't open" in out:
            raise AvrNoBoard("no bootloader answering on %s (%s): %s" % (port, manifest["programmer"], msg))
        raise AvrFlashFailed("avrdude failed on %s: %s" % (port, msg))
    m = re.search(r"(\d+) bytes of flash verified", out)
    return port, int(m.group(1)) if m else None


# ------------------------------------------------------------------ HELLO
def get_hello_frame(seq):
    """GET_HELLO (type 0x08, empty body), as on the wire (PROTOCOL.md section 2)."""
    raw = bytes((MSG_GET_HELLO, seq & 0xFF))
    crc = crc16_ccitt_false(raw)
    return cobs_encode(raw + bytes((crc >> 8, crc & 0xFF))) + b"\x00"


def parse_frames(buf):
    """Split ``buf`` at 0x00; returns ([(type, seq, body)] of CRC-valid frames, remainder)."""
    frames = []
    *parts, rest = buf.split(b"\x00")
    for part in parts:
        raw = cobs_decode(part) if part else None
        if raw is None or len(raw) < 4:
            continue
        if crc16_ccitt_false(raw[:-2]) != (raw[-2] << 8 | raw[-1]):
            continue
        frames.append((raw[0], raw[1], raw[2:-2]))
    return frames, rest


def wait_hello(port, baud, timeout_s=10.0, resend_s=0.25):
    """Open the link, send GET_HELLO every ``resend_s`` until a HELLO arrives; returns its fields (dict), or
    AvrNoBoard when none comes within ``timeout_s`` or the port goes away. Opening an Uno's port resets it: the first requests go to optiboot (which gives up on them at once)."""
    import serial
    if not os.path.exists(port):
        raise AvrNoBoard("no board on %s: the port does not exist" % port)
    try:
        ser = serial.Serial(port, baud, timeout=0.05)
    except (OSError, serial.SerialException) as exc:
        raise AvrNoBoard("cannot open %s: %s" % (port, exc))
    try:
        t0 = time.monotonic()
        next_send = t0
        seq = 0
        buf = b""
        while time.monotonic() - t0 < timeout_s:
            if time.monotonic() >= next_send:
                ser.write(get_hello_frame(seq))
                seq += 1
                next_send += resend_s
            buf += ser.read(256)
            frames, buf = parse_frames(buf)
            for msg_type, _, body in frames:
                if msg_type == MSG_HELLO and len(body) >= 4:
                    hello = dict(zip(HELLO_FIELDS, body))
                    hello["after_s"] = round(time.monotonic() - t0, 3)
                    return hello
            buf = buf[-256:]
        raise AvrNoBoard("no HELLO from the firmware on %s within %.0f s (%d GET_HELLO sent)" % (port, timeout_s, seq))
    except (OSError, serial.SerialException) as exc:         # the port went away (a USB cable pulled)
        raise AvrNoBoard("the board on %s disconnected while waiting for HELLO: %s" % (port, exc))
    finally:
        try:
            ser.close()
        except (OSError, serial.SerialException):
            pass


# ------------------------------------------------------------------ the deploy
def deploy_avr(board, port, dry_run=False, verify=True, timeout_s=10.0, log=print, boards_dir=None,
               key_path=None, key_id=0, unsigned=False, link_port=None, build_dir=None, attempts=None,
               flash_timeout_s=120.0):
    """Build, flash and check board ``board`` on ``port``; returns the result dict."""
    manifest = load_avr_manifest(board, boards_dir)
    if manifest is None:
        raise BoardNotFound("unknown AVR board %r (AVR boards: %s)" % (board, ", ".join(list_avr_boards(boards_dir))))
    if not os.path.exists(port):
        raise AvrNoBoard("no board on %s: the port does not exist (is the board plugged in?)" % port)
    if key_path:
        key_path = read_avr_key(key_path)
    fw = build_firmware(manifest, build_dir, key_path, key_id, unsigned, log=log)
    log("firmware %s: %d / %d bytes of flash, sha256 %s" % (os.path.relpath(fw["hex"], REPO_ROOT),
                                                             fw["flash_bytes"], fw["flash_max_bytes"], fw["sha256"][:12]))
    result = {"board": board, "kind": "avr", "port": port, "dry_run": dry_run, "firmware": fw,
              "flashed": False, "hello": None, "verified": False}
    if dry_run:
        cmd = avrdude_command(manifest, port, fw["hex"], attempts)
        result["avrdude"] = cmd
        log("dry run: would run %s%s (the port is not opened: that would reset the board)"
            % ("the 1200-baud touch, then " if manifest["touch_1200"] else "", " ".join(cmd)))
        return result
    t0 = time.monotonic()
    used_port, verified_bytes = flash(manifest, port, fw["hex"], timeout_s=flash_timeout_s, attempts=attempts, log=log)
    result.update(flashed=True, upload_port=used_port, flash_verified_bytes=verified_bytes,
                  flash_s=round(time.monotonic() - t0, 3))
    log("flashed %s bytes through %s on %s (avrdude read them back and compared)" % (verified_bytes, manifest["programmer"],
                                                                                   used_port))
    if not verify:
        return result
    check_port = port if manifest["link_on_upload_port"] else link_port
    if not check_port:
        log("link check skipped: the %s's link is on Serial1, not the USB port (give --link-port)" % board)
        return result
    hello = wait_hello(check_port, manifest["link_baud"], timeout_s=timeout_s)
    result["hello"] = hello
    if hello["board_id"] != manifest["board_id"]:
        raise AvrFlashFailed("the firmware on %s says board_id %d, the %s build says %d"
                             % (check_port, hello["board_id"], board, manifest["board_id"]))
    if "signing" in hello and fw["signing"] is not None and bool(hello["signing"]) != fw["signing"]:
        raise AvrFlashFailed("the firmware on %s reports signing %s, this build has it %s: not the firmware just flashed"
                             % (check_port, "on" if hello["signing"] else "off", "on" if fw["signing"] else "off"))
    if "key_id" in hello and fw["signing"] and hello["key_id"] != key_id:
        raise AvrFlashFailed("the firmware on %s uses key id %d, this build %d" % (check_port, hello["key_id"], key_id))
    result["verified"] = True
    log("HELLO on %s after %.2f s: protocol %d, board_id %d, reset_flags 0x%02x%s" % (
        check_port, hello["after_s"], hello["version"], hello["board_id"], hello["reset_flags"],
        (", signing %s, key id %d" % ("on" if hello["signing"] else "off", hello["key_id"])) if "signing" in hello
        else ""))
    return result
