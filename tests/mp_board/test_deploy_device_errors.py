"""`onboard deploy`'s board end (onboard/deploy/device.py, deployer.py) when things go wrong on the way:

- the board's port goes away in the middle of a deploy (a USB cable pulled): one clear line naming the port and
  what happened, exit status 3 (no board), and the previous version still active on the flash (the virtual
  board's flash is mirrored to a host folder, so a second board starts from what was left); also during the soft
  reset that starts the app;
- mpremote's Python tracebacks become their exception lines; a damaged result line, or bytes that are no UTF-8
  in the board's output, are the caller's error or replaced, never a decoding exception;
- only the link key's copy fails: the error says the files are in place.
"""
import json
import threading

import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy import device as dev
from onboard.deploy.deployer import deploy

pytestmark = [pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package"),
              pytest.mark.timeout(240)]


def _pull_cable_mid_copy(board, after_bytes):
    """A log callback that, once the deploy has planned, stops ``board`` (its pty vanishes) after the board has
    received ``after_bytes`` more bytes: in the middle of the upload."""
    state = {}

    def watch():
        start = board.counters()["bytes_in"]
        while board.counters()["bytes_in"] < start + after_bytes:
            pass
        board.stop()

    def log(msg):
        if "staging folder" in msg and "thread" not in state:
            state["thread"] = threading.Thread(target=watch, daemon=True)
            state["thread"].start()
    return log, state


def _board_package(root, entries):
    """A small board package ``tb`` under ``root`` whose entry files are ``entries`` ({name: text})."""
    pkg = root / "tb"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in entries.items():
        (pkg / name).write_text(text)
    (pkg / "manifest.json").write_text(json.dumps({
        "board": "tb", "micropython_version": [1, 27], "mpy_version": 6, "mpy_march": "armv6m",
        "flash_bytes": 1441792, "entry": sorted(entries), "keep_source": sorted(entries)}))
    return str(root)


@pytest.mark.slow
def test_a_port_that_vanishes_mid_copy_is_one_clear_line_and_keeps_the_previous_version(tmp_path):
    flash = str(tmp_path / "flash")
    v1 = {"main.py": "import board\n", "board.py": "VERSION = '1'\n"}
    boards = _board_package(tmp_path / "boards", v1)
    with VirtualBoard(fs_dir=flash) as board:
        first = deploy("tb", board.port, timeout_s=20, log=lambda m: None, boards_dir=boards)
        assert first["switched"]
        before = dev.Device(board.port, timeout_s=20).exec_json(dev.PROBE_SCRIPT)
    # version 2 brings a 200 kB module: the cable is pulled 40 kB into its upload
    _board_package(tmp_path / "boards", dict(v1, **{"board.py": "VERSION = '2'\n",
                                                    "big.py": "# padding\n" * 20000}))
    with VirtualBoard(fs_dir=flash) as board:
        log, state = _pull_cable_mid_copy(board, 40000)
        port = board.port
        with pytest.raises(dev.NoBoard) as err:
            deploy("tb", port, timeout_s=20, log=log, boards_dir=boards)
        state["thread"].join(timeout=30)
    msg = str(err.value)
    assert err.value.exit_code == dev.EXIT_NO_BOARD
    assert "\n" not in msg and "Traceback" not in msg, msg
    assert "copy to the staging folder /app_b failed, the previous version stays active" in msg, msg
    assert "the board on %s disconnected" % port in msg and "SerialException" in msg, msg
    with VirtualBoard(fs_dir=flash) as board:
        after = dev.Device(board.port, timeout_s=20).exec_json(dev.PROBE_SCRIPT)
    assert before["active"] == after["active"] == "app_a"
    assert after["slots"]["app_a"] == before["slots"]["app_a"]
    assert after["stub"] == before["stub"]


def test_a_traceback_from_mpremote_becomes_its_exception_lines():
    text = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n"
            "serial.serialutil.SerialException: device reports readiness to read but returned no data\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n  File \"y.py\", line 2, in h\n"
            "OSError: [Errno 5] Input/output error\n")
    assert dev.mpremote_error(text) == ("serial.serialutil.SerialException: device reports readiness to read but "
                                        "returned no data; OSError: [Errno 5] Input/output error")
    assert dev.mpremote_error("cp: app_a/x.py: Input/output error") == "cp: app_a/x.py: Input/output error"


def test_a_port_that_vanishes_during_the_start_is_no_board(tmp_path):
    """The soft reset that starts the deployed app (``soft_reset_and_start``): the port goes away after the reset
    was sent -> NoBoard naming the port, not pyserial's exception."""
    import select

    from harness.sim.ptys import PtyPair
    pty = PtyPair()
    got = []

    def pull_after_the_reset():
        while b"\x04" not in b"".join(got):
            select.select([pty.master_fd], [], [], 5.0)
            got.append(pty.read())
        pty.close()

    t = threading.Thread(target=pull_after_the_reset, daemon=True)
    t.start()
    try:
        with pytest.raises(dev.NoBoard, match="the board on %s disconnected during the soft reset" % pty.slave_path):
            dev.soft_reset_and_start(pty.slave_path, timeout_s=20)
    finally:
        t.join(timeout=10)
        pty.close()


@pytest.mark.slow
def test_a_link_key_that_cannot_be_written_says_the_files_are_in_place(tmp_path):
    """The link key goes to the board after the files: when only its copy fails, the error says so (not that the
    previous version stays active)."""
    flash = str(tmp_path / "flash")
    boards = _board_package(tmp_path / "boards", {"main.py": "import board\n", "board.py": "VERSION = '1'\n"})
    with VirtualBoard(fs_dir=flash) as board:
        assert deploy("tb", board.port, timeout_s=20, log=lambda m: None, boards_dir=boards)["switched"]
    with VirtualBoard(fs_dir=flash, fail_write_after_bytes=0) as board:         # every flash write fails
        with pytest.raises(dev.CopyFailed) as err:
            deploy("tb", board.port, timeout_s=20, log=lambda m: None, boards_dir=boards, link_key=bytes(range(16)))
    msg = str(err.value)
    assert msg.startswith("the files are up to date, but the link key was not provisioned at /link.key: "), msg
    assert "\n" not in msg and "Input/output error" in msg, msg


def test_a_damaged_result_line_is_the_callers_error():
    """A board script whose ``JSON:`` line does not parse (noise on the line): the caller's DeployError class with
    the line, not a JSONDecodeError."""
    with VirtualBoard() as board:
        with pytest.raises(dev.CopyFailed, match="board script printed a damaged result"):
            dev.Device(board.port, timeout_s=20).exec_json("print('JSON:{\"ok\": tr')", error_cls=dev.CopyFailed)


def test_bytes_that_are_no_utf8_in_the_boards_output_do_not_break_the_call():
    """Line noise (or a program printing binary) in what mpremote relays: replaced, the result line still read."""
    with VirtualBoard() as board:
        got = dev.Device(board.port, timeout_s=20).exec_json(
            "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe noise\\n')\nprint('JSON:{\"ok\": 1}')")
    assert got == {"ok": 1}
