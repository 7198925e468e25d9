"""`onboard deploy` through the real mpremote to the virtual MicroPython board (real MicroPython 1.27).

One board package copied to a temporary folder (so a test can edit a file), one
virtual board whose flash is mirrored to a host folder (so a second board process
with write-fault injection can start from the same flash).
"""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy.build import BOARDS_DIR, REPO_ROOT
from onboard.deploy.deployer import deploy
from onboard.deploy.device import PROBE_SCRIPT, Device, soft_reset_and_start

pytestmark = [pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package"),
              pytest.mark.timeout(240)]

BOARD = "tboard"


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "onboard.deploy"] + list(args), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def boards_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("boards")
    shutil.copytree(os.path.join(BOARDS_DIR, "mp_common"), root / "mp_common")
    shutil.copytree(os.path.join(BOARDS_DIR, "pico_rp2040"), root / BOARD)
    return str(root)


@pytest.fixture(scope="module")
def flash_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("flash"))


def _probe(port):
    return Device(port, timeout_s=20).exec_json(PROBE_SCRIPT)


def _edit_version(boards_dir, version):
    path = os.path.join(boards_dir, BOARD, "board.py")
    with open(path) as fh:
        src = fh.read()
    import re
    src = re.sub(r'VERSION = "[^"]*"', 'VERSION = "%s"' % version, src)
    with open(path, "w") as fh:
        fh.write(src)


@pytest.mark.slow
def test_first_all_second_nothing_edit_one_then_failed_copy_keeps_previous(boards_dir, flash_dir):
    logs = []
    with VirtualBoard(fs_dir=flash_dir) as board:
        first = deploy(BOARD, board.port, mpy=True, timeout_s=20, log=logs.append, boards_dir=boards_dir)
        assert first["switched"] and first["uploaded"] == first["files"] > 10
        assert first["started"] is False          # deploy() starts nothing (the command line soft-resets after it)
        # hashes on the board equal the local build, file by file (independent read-back)
        probe = _probe(board.port)
        active = probe["active"]
        staged = dict(probe["slots"][active]["files"])
        staged.pop(".manifest")
        build_dir = os.path.join(boards_dir, BOARD, "build", "deploy", BOARD + "-mpy")
        for path, digest in staged.items():
            with open(os.path.join(build_dir, path), "rb") as fh:
                assert hashlib.sha256(fh.read()).hexdigest() == digest, path
        assert any(p.endswith(".mpy") for p in staged)
        out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mpremote"), "connect",
                              board.port, "sha256sum", ":%s/board.py" % active],
                             capture_output=True, text=True, timeout=20).stdout
        with open(os.path.join(boards_dir, BOARD, "board.py"), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() in out
        # the .mpy build runs on MicroPython 1.27: main.py starts the runtime
        ready = soft_reset_and_start(board.port, timeout_s=20)
        assert ready is not None and b"READY,pico_rp2040,1," in ready

        second = deploy(BOARD, board.port, mpy=True, timeout_s=20, log=logs.append, boards_dir=boards_dir)
        assert second["plan"]["up_to_date"] and second["uploaded"] == 0 and not second["switched"]

        _edit_version(boards_dir, "2")
        dry = _cli(BOARD, "--port", board.port, "--mpy", "--dry-run", "--boards-dir", boards_dir)
        assert dry.returncode == 0 and "upload  board.py" in dry.stdout and "1 to upload" in dry.stdout
        third = deploy(BOARD, board.port, mpy=True, timeout_s=20, log=logs.append, boards_dir=boards_dir)
        assert third["uploaded"] == 1 and third["plan"]["uploads"] == ["board.py"]
        assert third["copied_on_board"] == first["files"] - 1
        assert _probe(board.port)["active"] != active
        ready = soft_reset_and_start(board.port, timeout_s=20)
        assert b"READY,pico_rp2040,2," in ready

    # same flash, a board whose flash writes fail after 600 bytes: the copy fails midway
    _edit_version(boards_dir, "3")
    with VirtualBoard(fs_dir=flash_dir, fail_write_after_bytes=600) as board:
        before = _probe(board.port)
        res = _cli(BOARD, "--port", board.port, "--mpy", "--timeout", "20", "--boards-dir", boards_dir)
        assert res.returncode == 6, res.stdout + res.stderr
        assert "previous version stays active" in res.stderr
        assert "cp: app_" in res.stderr and "Input/output error" in res.stderr   # failed midway
        after = _probe(board.port)
        assert after["active"] == before["active"]
        assert after["slots"][after["active"]] == before["slots"][before["active"]]
        ready = soft_reset_and_start(board.port, timeout_s=20)
        assert b"READY,pico_rp2040,2," in ready          # still the previous version
    _edit_version(boards_dir, "1")


@pytest.mark.slow
def test_not_enough_flash_is_refused_before_copying(boards_dir):
    with VirtualBoard(flash_bytes=64 * 1024) as board:
        res = _cli(BOARD, "--port", board.port, "--timeout", "20", "--boards-dir", boards_dir)
        assert res.returncode == 5, res.stdout + res.stderr
        assert "not enough flash" in res.stderr
        probe = _probe(board.port)
        assert probe["active"] is None and probe["slots"]["app_a"] is None


def test_port_missing_is_a_clear_error_fast():
    res = _cli("pico_rp2040", "--port", "/dev/does-not-exist-vb", "--timeout", "3", timeout=30)
    assert res.returncode == 3
    assert "no board on /dev/does-not-exist-vb" in res.stderr


def test_board_not_responding_times_out_with_clear_error():
    from harness.sim.ptys import PtyPair
    silent = PtyPair()          # a serial port nobody answers on
    try:
        res = _cli("pico_rp2040", "--port", silent.slave_path, "--timeout", "2", timeout=30)
    finally:
        silent.close()
    assert res.returncode == 3
    assert "not responding" in res.stderr and "2.0 s" in res.stderr


def test_help_and_build_only():
    res = _cli("--help")
    assert res.returncode == 0 and "staging" in res.stdout and "exit status" in res.stdout
    res = _cli("pico_rp2040", "--build-only", "--mpy")
    assert res.returncode == 0 and "onboard/estimators/planar_ekf.mpy" in res.stdout
    assert "mpy v6." in res.stdout
    res = _cli("no_such_board", "--build-only")
    assert res.returncode == 2 and "unknown board" in res.stderr
