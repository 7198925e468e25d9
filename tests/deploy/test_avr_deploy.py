"""`python -m onboard.deploy uno --port PTY`, end to end: the robot_link firmware is built with a link key,
the real avrdude flashes it through Debian's optiboot running in simavr (firmware/optiboot/sim_optiboot,
UART0 on a pty, every open of the pty is the Uno's DTR reset), and the flashed firmware answers HELLO on
that pty. Failure paths: no such port, a port where nothing answers, a bad key; dry run and build-only.

Needs what `make setup` installs: avrdude, gcc-avr/avr-libc/arduino-core-avr, libsimavr2.
"""
import json
import os
import subprocess
import sys

import pytest

from onboard.deploy import avr

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPTIBOOT_DIR = os.path.join(REPO_ROOT, "firmware", "optiboot")
SIM = os.path.join(OPTIBOOT_DIR, "build", "sim_optiboot")
BOOT_HEX = os.path.join(OPTIBOOT_DIR, "build", "optiboot_atmega328_1k.hex")
BOOT_ADDR = "0x7c00"
KEY_HEX = "00112233445566778899aabbccddeeff"     # a fixed test key (never a real one)


@pytest.fixture(scope="module")
def sim_built():
    subprocess.run(["make", "-s", "-C", OPTIBOOT_DIR], check=True, timeout=120)
    assert os.path.isfile(SIM) and os.path.isfile(BOOT_HEX)
    assert avr.shutil.which("avrdude"), "avrdude is not installed: run `make setup` (Debian package avrdude)"
    return SIM


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("avr_build"))


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "avr.key"
    path.write_text(KEY_HEX + "\n")
    return str(path)


class Uno:
    """sim_optiboot as a subprocess: the Uno on ``self.port``; ``stop()`` returns its event lines."""

    def __init__(self):
        self.proc = subprocess.Popen([SIM, "-b", BOOT_ADDR, BOOT_HEX], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().split()
        assert first[:1] == ["pty"], first
        self.port = first[1]
        assert self.proc.stdout.readline().startswith("ready mcu=atmega328p")

    def stop(self):
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=10)
        assert err == "", err
        return out.splitlines()


@pytest.fixture
def uno(sim_built):
    board = Uno()
    yield board
    if board.proc.poll() is None:
        board.proc.kill()
        board.proc.wait()


def run_deploy(*args, timeout=90):
    return subprocess.run([sys.executable, "-m", "onboard.deploy", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT)


def test_hello_frames_match_protocol_doc():
    # PROTOCOL.md section 2, worked examples
    assert avr.get_hello_frame(0) == bytes.fromhex("020803 94a6 00".replace(" ", ""))
    frames, rest = avr.parse_frames(bytes.fromhex("0280070101016845 2b00".replace(" ", "")) + b"\x05")
    assert frames == [(0x80, 0, bytes((1, 1, 1, 0x68)))] and rest == b"\x05"
    bad = bytearray(bytes.fromhex("02800701010168452b00"))
    bad[4] ^= 1
    assert avr.parse_frames(bytes(bad)) == ([], b"")


def test_avr_boards_listed_apart_from_micropython_boards():
    from onboard.deploy.build import list_boards
    assert avr.list_avr_boards() == ["leonardo", "uno"]
    assert not set(avr.list_avr_boards()) & set(list_boards())
    assert avr.makefile_has_key_option(), "firmware/arduino/Makefile lost its KEY= option"


def test_deploy_uno_through_optiboot_in_simavr(uno, key_file, build_dir):
    # control: the fresh Uno has an erased flash, so nothing can answer HELLO before the deploy
    with pytest.raises(avr.AvrNoBoard, match="no HELLO"):
        avr.wait_hello(uno.port, 115200, timeout_s=1.5)
    proc = run_deploy("uno", "--port", uno.port, "--link-key", key_file, "--key-id", "7",
                      "--build-dir", build_dir, "--timeout", "20", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    fw = result["firmware"]
    assert result["flashed"] and result["verified"]
    assert result["flash_verified_bytes"] == fw["flash_bytes"] == avr.hex_bytes(fw["hex"])
    assert 0 < fw["flash_bytes"] <= 31744            # below the 1 KiB boot section
    hello = result["hello"]
    assert (hello["version"], hello["board_id"]) == (2, 1)
    assert (hello["signing"], hello["key_id"]) == (1, 7)       # the key went into the firmware
    events = uno.stop()
    # the control opened the port once, avrdude once, the HELLO check once: three DTR resets
    assert events.count("reset external") == 3, events
    opens = [i for i, e in enumerate(events) if e == "open"]
    assert len(opens) == 3, events
    # after the last DTR reset optiboot gave up on the GET_HELLO bytes and started the sketch by its watchdog
    assert "reset mcusr=0x08" in events[opens[2]:]
    assert events[-1].startswith("bye ") and "external=3" in events[-1]
    assert key_file and KEY_HEX not in proc.stdout + proc.stderr


def test_wrong_port_one_line_exit_3(tmp_path, key_file):
    proc = run_deploy("uno", "--port", str(tmp_path / "ttyNONE"), "--link-key", key_file)
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: no board on ")


def test_port_where_nothing_answers_one_line_exit_3(key_file, build_dir):
    master, slave = os.openpty()                       # a serial port with no bootloader behind it
    try:
        proc = run_deploy("uno", "--port", os.ttyname(slave), "--link-key", key_file, "--key-id", "7",
                          "--attempts", "1", "--build-dir", build_dir)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 3, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("error: no bootloader answering on ") and "not" in proc.stderr


def test_dry_run_does_not_open_the_port(uno, key_file, build_dir):
    proc = run_deploy("uno", "--port", uno.port, "--link-key", key_file, "--key-id", "7", "--build-dir", build_dir,
                      "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["dry_run"] and not result["flashed"]
    assert result["avrdude"][:7] == ["avrdude", "-c", "arduino", "-p", "atmega328p", "-P", uno.port]
    events = uno.stop()
    assert "open" not in events and "external=0" in events[-1]   # opening would have reset the board


def test_leonardo_dry_run_names_the_touch_and_avr109(key_file, build_dir):
    master, slave = os.openpty()
    try:
        proc = run_deploy("leonardo", "--port", os.ttyname(slave), "--link-key", key_file,
                          "--build-dir", build_dir, "--dry-run")
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0, proc.stderr
    assert "1200-baud touch" in proc.stdout and "-c avr109 -p atmega32u4" in proc.stdout


def test_build_only_unsigned_and_keyed(key_file, build_dir):
    proc = run_deploy("uno", "--build-only", "--unsigned", "--json", "--build-dir", build_dir)
    assert proc.returncode == 0, proc.stderr
    fw = json.loads(proc.stdout)
    assert fw["signing"] is False and os.path.isfile(fw["hex"]) and fw["flash_bytes"] <= fw["flash_max_bytes"]
    proc = run_deploy("uno", "--build-only", "--link-key", key_file, "--json", "--build-dir", build_dir)
    keyed = json.loads(proc.stdout)
    assert keyed["signing"] is True and keyed["sha256"] != fw["sha256"]


@pytest.mark.parametrize("content,args", [("0011", ()), (KEY_HEX, ("--unsigned",)), (None, ()),
                                          (b"\xff\xfe" + bytes(range(128, 144)), ())])    # a raw binary key
def test_bad_key_arguments_one_line_exit_2(tmp_path, content, args):
    path = tmp_path / "k"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    proc = run_deploy("uno", "--build-only", "--link-key", str(path), *args)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ")
    assert "0011" not in proc.stderr
    proc = run_deploy("uno", "--build-only")                 # signing off only when asked for
    assert proc.returncode == 2 and "--unsigned" in proc.stderr


@pytest.mark.parametrize("edit,needle", [
    (lambda text: text[:-3], "manifest_uno.json: not valid JSON"),
    (lambda text: text.replace('"flash_max_bytes": 32256', '"flash_max_bytes": "x"'),
     "manifest_uno.json: flash_max_bytes must be an integer >= 1, got 'x'"),
    (lambda text: text.replace('"mcu": "atmega328p"', '"mcu": 5'), "manifest_uno.json: mcu must be a non-empty string"),
])
def test_a_broken_avr_manifest_is_one_line_naming_it(tmp_path, capsys, edit, needle):
    """A copy of boards/arduino whose manifest_uno.json was broken: one line naming the file and the key, exit 2,
    before anything is built."""
    import shutil
    from onboard.deploy.__main__ import main
    shutil.copytree(os.path.join(REPO_ROOT, "boards", "arduino"), str(tmp_path / "boards" / "arduino"))
    manifest = tmp_path / "boards" / "arduino" / "manifest_uno.json"
    manifest.write_text(edit(manifest.read_text()))
    assert main(["uno", "--build-only", "--unsigned", "--boards-dir", str(tmp_path / "boards"),
                 "--build-dir", str(tmp_path / "build")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "build").exists()
