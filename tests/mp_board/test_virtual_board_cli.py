"""`python -m harness virtual-board` with the real mpremote: start, serve, Ctrl-C, fs ls, stop.

Every wait below polls with a generous deadline that only guards against a hang; the
order of events comes from the board's own output (a program prints before it spins).
"""
import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy.build import REPO_ROOT

pytestmark = [pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package"),
              pytest.mark.timeout(120)]

HANG_GUARD_S = 30.0
MPREMOTE = [sys.executable, "-m", "mpremote"]


def _read_until(fd, marker, timeout_s=HANG_GUARD_S):
    """Bytes read from ``fd`` up to and including ``marker`` (AssertionError after timeout_s)."""
    got = b""
    deadline = time.monotonic() + timeout_s
    while marker not in got:
        left_s = deadline - time.monotonic()
        assert left_s > 0, "no %r within %.0f s; got %r" % (marker, timeout_s, got[-300:])
        if select.select([fd], [], [], left_s)[0]:
            chunk = os.read(fd, 4096)
            assert chunk, "stream closed before %r; got %r" % (marker, got[-300:])
            got += chunk
    return got


def _mpremote(port, *args):
    return subprocess.run(MPREMOTE + ["connect", port] + list(args), capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


def _interrupt_spinning_program(port, program, banner):
    """Run ``program`` with mpremote, wait for its ``banner`` line, then Ctrl-C mpremote as a user does."""
    proc = subprocess.Popen(MPREMOTE + ["connect", port, "resume", "exec", program],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _read_until(proc.stdout.fileno(), banner.encode())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG_GUARD_S) != 0          # mpremote stops on Ctrl-C
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _wait_for_boot_prompt(port):
    """Read the board's power-on banner and prompt: boot.py (and main.py) have run."""
    fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
    try:
        _read_until(fd, b"for more information.\r\n>>> ")
    finally:
        os.close(fd)


def _start_cli(*args):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "virtual-board"] + list(args), cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    port = _read_until(proc.stdout.fileno(), b"\n").decode().strip()
    return proc, port


def test_command_serves_mpremote_lists_sizes_and_stops_on_sigint_with_counters(tmp_path):
    flash = tmp_path / "flash"
    (flash / "lib").mkdir(parents=True)
    (flash / "boot.py").write_bytes(b"# boot\n" + b"x = 1\n" * 1000)          # 6007 bytes
    (flash / "lib" / "util.py").write_bytes(b"A = 2\n" * 50)                 # 300 bytes
    proc, port = _start_cli("--flash-dir", str(flash), "--flash-bytes", "262144")
    try:
        assert port.startswith("/dev/")
        # the port is there before boot.py has run, as a board's USB serial is, and a Ctrl-C sent during it
        # interrupts boot.py as on a board: mpremote's first Ctrl-C waits for the power-on prompt
        _wait_for_boot_prompt(port)
        r = _mpremote(port, "exec", "print(1+1)")
        assert (r.returncode, r.stdout.strip()) == (0, "2"), r.stderr

        src = tmp_path / "data.bin"
        src.write_bytes(bytes(range(256)) * 20)                               # 5120 bytes
        r = _mpremote(port, "fs", "cp", str(src), ":data.bin")
        assert r.returncode == 0, r.stderr
        r = _mpremote(port, "fs", "ls", ":")
        assert r.returncode == 0, r.stderr
        listing = {line.split()[1]: int(line.split()[0]) for line in r.stdout.splitlines()[1:]}
        # a board-like root: the flash's own files with their sizes, nothing of the wasm runtime
        assert listing == {"lib/": 0, "boot.py": 6007, "data.bin": 5120}
        r = _mpremote(port, "fs", "ls", ":lib")
        assert r.stdout.splitlines()[1].split() == ["300", "util.py"]
        r = _mpremote(port, "exec", "import os; print(sorted(os.listdir('/')), os.stat('/data.bin')[6])")
        assert r.stdout.strip() == "['boot.py', 'data.bin', 'lib'] 5120"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, err
    counters = json.loads(err.decode().strip().splitlines()[-1])
    assert counters["bytes_in"] > 5120 and counters["bytes_out"] > 0        # the copy crossed the line
    assert counters["soft_resets"] >= 5                                      # mpremote resets on connect
    assert counters["boots"] == counters["soft_resets"] + 1
    assert counters["interrupts"] == 0
    assert (flash / "data.bin").read_bytes() == src.read_bytes()             # mirrored to the host


def test_busy_loop_and_sleep_interrupted_by_ctrl_c_board_answers_next_command():
    with VirtualBoard() as board:
        r = _mpremote(board.port, "exec", "x = 41")
        assert r.returncode == 0, r.stderr
        # a loop that never reads stdin: KeyboardInterrupt inside it, the interpreter keeps its state
        _interrupt_spinning_program(board.port, "caught = False\nprint('spinning')\ntry:\n"
                                                " while True:\n  pass\nexcept KeyboardInterrupt:\n"
                                                " caught = True\n", "spinning")
        r = _mpremote(board.port, "resume", "exec", "print(x + 1, caught)")
        assert (r.returncode, r.stdout.strip()) == (0, "42 True"), r.stderr
        # a sleeping loop
        _interrupt_spinning_program(board.port, "import time\nprint('sleeping')\nwhile True:\n"
                                                " time.sleep(5)\n", "sleeping")
        r = _mpremote(board.port, "resume", "exec", "print(x + 2)")
        assert (r.returncode, r.stdout.strip()) == (0, "43"), r.stderr
        assert board.counters()["interrupts"] == 2


def test_friendly_repl_ctrl_c_stops_a_busy_loop_and_input_then_answers():
    with VirtualBoard() as board:
        fd = os.open(board.port, os.O_RDWR | os.O_NOCTTY)
        try:
            _read_until(fd, b'for more information.\r\n>>> ')       # the boot banner and prompt
            os.write(fd, b"exec(\"print('go')\\nwhile True: pass\")\r")   # one line: prints, then spins
            _read_until(fd, b"go\n")
            os.write(fd, b"\x03")
            out = _read_until(fd, b">>> ")
            assert b"KeyboardInterrupt" in out
            os.write(fd, b"6*7\r")
            assert b"42" in _read_until(fd, b">>> ")
            # input() waiting for a line: Ctrl-C ends the wait too
            os.write(fd, b"x = input('name? ')\r")
            _read_until(fd, b"\r\nname? ")                  # the prompt, after the line's echo
            os.write(fd, b"\x03")
            assert b"KeyboardInterrupt" in _read_until(fd, b">>> ")
            os.write(fd, b"x = input('name? ')\r")
            _read_until(fd, b"\r\nname? ")
            os.write(fd, b"ab\x7fc\r")                      # typed, with a backspace
            _read_until(fd, b">>> ")
            os.write(fd, b"print(repr(x))\r")
            assert b"'ac'" in _read_until(fd, b"'ac'")
        finally:
            os.close(fd)
        assert board.counters()["interrupts"] == 2


def test_bad_arguments_one_line_exit_2(tmp_path, capsys):
    from harness.cli import main
    full = tmp_path / "full"
    full.mkdir()
    (full / "big.bin").write_bytes(b"\0" * 70000)
    for args, needle in ((["--flash-bytes", "lots"], "not an integer"),
                         (["--flash-bytes", "5000"], "outside"),
                         (["--flash-bytes", "65537"], "multiple"),
                         (["--flash-dir", str(full / "big.bin")], "not a folder"),
                         (["--flash-dir", str(full), "--flash-bytes", "65536"], "more than --flash-bytes"),
                         (["--flash-size", "1"], "unrecognized arguments")):
        try:
            status = main(["virtual-board"] + args)
        except SystemExit as exc:                    # argparse's own errors
            status = exc.code
        out, err = capsys.readouterr()
        assert status == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and needle in err, (args, err)
        assert out == ""
    assert sorted(os.listdir(full)) == ["big.bin"]                # state kept


def _paste_header(fd):
    """Ask for raw-paste mode; the board's answer: "R\\x01", the 128-byte window, and 0x01 (two windows free)."""
    os.write(fd, b"\x05A\x01")
    assert _read_until(fd, b"R\x01\x80\x00\x01") == b"R\x01\x80\x00\x01"


def test_raw_paste_mode_as_a_board_speaks_it():
    """Raw-paste mode (MicroPython's pyexec.c / mp_reader_stdin): the window's flow control, the 0x04 that
    ends the code, the program's output and error framed as in the raw REPL (without its "OK"), state kept
    between programs; an empty paste runs nothing, Ctrl-C ends a paste with a KeyboardInterrupt, code with a
    raw 0x01 / 0x02 byte is refused whole; the plain raw REPL still answers."""
    with VirtualBoard() as board:
        fd = os.open(board.port, os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, b"\r\x03\x03\x01")
            _read_until(fd, b"raw REPL; CTRL-B to exit\r\n>")
            code = b"x = '" + b"a" * 290 + b"'\nprint(len(x))"
            _paste_header(fd)
            os.write(fd, code[:256])                           # the two free windows, no more
            assert _read_until(fd, b"\x01\x01") == b"\x01\x01"  # one 0x01 per window taken
            os.write(fd, code[256:] + b"\x04")
            assert _read_until(fd, b"\x04>") == b"\x04" + b"290\n\x04\x04>"
            _paste_header(fd)
            os.write(fd, b"print(x[:2]); 1/0\x04")
            out = _read_until(fd, b"\x04>")
            assert out.startswith(b"\x04aa\n\x04Traceback") and b"ZeroDivisionError" in out and b"OK" not in out
            _paste_header(fd)
            os.write(fd, b"\x04")
            assert _read_until(fd, b"\x04>") == b"\x04\x04\x04>"
            _paste_header(fd)
            os.write(fd, b"print('never')\x03")
            assert _read_until(fd, b"\x04>") == b"\x04\x04KeyboardInterrupt: \r\n\x04>"
            _paste_header(fd)
            os.write(fd, b"y = 1\x01\nprint('never')\x04")
            out = _read_until(fd, b"\x04>")
            assert out.startswith(b"\x04\x04ValueError") and b"never" not in out
            os.write(fd, b"print(x[-3:], 'y' in globals())\x04")  # the plain raw REPL: "OK", then the output
            assert _read_until(fd, b"\x04>") == b"OKaaa False\n\x04\x04>"
        finally:
            os.close(fd)


def test_mpremote_takes_the_raw_paste_path():
    from mpremote.transport_serial import SerialTransport
    with VirtualBoard() as board:
        transport = SerialTransport(board.port)
        try:
            transport.enter_raw_repl()
            assert transport.exec("print(6 * 7)") == b"42\n"
            assert transport.use_raw_paste                 # it falls back (and says so here) when refused
            transport.exit_raw_repl()
        finally:
            transport.close()
