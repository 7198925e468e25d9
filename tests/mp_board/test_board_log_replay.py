"""The MicroPython board's flight recorder end to end: record on the board, pull with mpremote, replay.

The `mp-board` scenario (``pull_log`` set) deploys to the virtual MicroPython board, runs the ground
robot in lockstep for 300 ticks with the app recording into its ring log on the board's flash, pulls
the log with the real mpremote (``python -m onboard.deploy BOARD --pull-log``) and replays it on
CPython: every output within 1e-12 (the WebAssembly MicroPython computes in doubles; its libm differs
from CPython's in the last bits). A pulled log cut short or with a flipped byte converts its readable
records, says what was lost and replays them.
"""
import json
import os
import subprocess
import sys

import pytest

from harness.sim import virtual_board
from harness.config import merge
from harness.replay import EXIT_DIVERGED, EXIT_IDENTICAL, main_replay
from harness.scenarios import load
from harness.scenarios.context import RunContext
from onboard.deploy.build import REPO_ROOT, load_manifest
from onboard.deploy.deployer import log_need_bytes
from onboard.deploy.pull_log import EXIT_LOG_DAMAGED, EXIT_NO_LOG
from onboard.runtime.ring_log import read_log

needs_board = pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")
pytestmark = pytest.mark.timeout(300)

TICKS = 300
TOLERANCE = "1e-12"


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "onboard.deploy"] + list(args), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _replay(log, out, *extra):
    code = main_replay([str(log), "--out", str(out)] + list(extra))
    return code, json.loads((out / "replay.json").read_text())


@pytest.fixture(scope="module")
def pulled(tmp_path_factory):
    """The scenario's metrics and the pulled log (OUT.mcap and the raw OUT.bin beside it)."""
    out = tmp_path_factory.mktemp("pulled")
    mod = load("mp-board")
    cfg = merge(mod.DEFAULTS, {"duration_s": TICKS / 100.0, "pull_log": str(out / "board_log.mcap")})
    return mod.run(cfg, RunContext(2)), out


@pytest.mark.slow
@needs_board
def test_the_board_log_replays_on_cpython_within_1e12(pulled, tmp_path, capsys):
    metrics, out = pulled
    assert metrics["success"] and metrics["ticks"] == TICKS and metrics["board_report"]["bad_lines"] == 0
    # 300 IMU inputs + 300 ticks + 30 poses + 150 estimates + 150 wheel commands, nothing lost
    assert metrics["log_records"] == 930 and metrics["log_wraps"] == 0 and metrics["log_error"] == ""
    assert metrics["log_dropped"] == 0 and metrics["log_torn"] == 0
    assert 40 < metrics["log_bytes_per_record"] < 80
    assert metrics["log_replay_counts_match"] and metrics["log_replay_damage"] is None
    assert metrics["log_replay_ticks"] == TICKS - 1          # the last tick is left out (it may be cut)
    assert metrics["log_replay_max_abs_diff"] <= 1e-12
    # the command line on the pulled file: identical within the tolerance
    code, report = _replay(out / "board_log.mcap", tmp_path / "r", "--tolerance", TOLERANCE)
    assert code == EXIT_IDENTICAL, capsys.readouterr()
    assert report["app"] == "mp_ground_robot" and report["code_version"] == "pico_rp2040/1"
    for name in ("estimate", "wheels"):
        t = report["topics"][name]
        assert t["logged"] == t["replayed"] >= 149 and t["max_abs_diff"] <= 1e-12
    assert (out / "board_log.bin").stat().st_size == load_manifest("pico_rp2040")["log_bytes"]


@pytest.mark.slow
@needs_board
def test_a_cut_pulled_log_converts_and_replays_its_readable_part(pulled, tmp_path, capsys):
    _, out = pulled
    data = (out / "board_log.bin").read_bytes()
    used = len(data)
    while data[used - 1] == 0:
        used -= 1
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:used * 3 // 5])
    res = _cli("pico_rp2040", "--pull-log", str(tmp_path / "cut.mcap"), "--log-bin", str(cut))
    assert res.returncode == EXIT_LOG_DAMAGED, res.stdout + res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: damaged log:") and "bytes short" in err[0]
    code, report = _replay(tmp_path / "cut.mcap", tmp_path / "r", "--tolerance", TOLERANCE)
    assert code == EXIT_IDENTICAL, capsys.readouterr()
    assert TICKS // 3 < report["ticks"] < TICKS * 2 // 3
    assert report["topics"]["wheels"]["logged"] == report["topics"]["wheels"]["replayed"] > 50


@pytest.mark.slow
@needs_board
def test_a_flipped_byte_drops_one_record_and_the_rest_converts(pulled, tmp_path, capsys):
    _, out = pulled
    data = bytearray((out / "board_log.bin").read_bytes())
    clean = read_log(bytes(data))
    used = len(data)
    while data[used - 1] == 0:
        used -= 1
    data[used // 2] ^= 0x01
    bad = tmp_path / "flipped.bin"
    bad.write_bytes(bytes(data))
    res = _cli("pico_rp2040", "--pull-log", str(tmp_path / "flipped.mcap"), "--log-bin", str(bad))
    assert res.returncode == EXIT_LOG_DAMAGED, res.stdout + res.stderr
    assert "1 dropped (CRC failed)" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    damaged = read_log(bytes(data))
    assert damaged.dropped == 1 and len(damaged.records) == len(clean.records) - 1
    lost = next(i for i, (a, b) in enumerate(zip(clean.records, damaged.records)) if a[:3] != b[:3])
    lost_us = clean.records[lost][1]
    # the replay matches up to the lost record; from there on it may differ (a lost input or output)
    code, report = _replay(tmp_path / "flipped.mcap", tmp_path / "r", "--tolerance", TOLERANCE)
    assert code in (EXIT_IDENTICAL, EXIT_DIVERGED)
    assert report["ticks"] == TICKS - 1 - (1 if clean.records[lost][0] == "/app/step" else 0)
    for t in report["topics"].values():
        assert t["first_divergence_us"] is None or t["first_divergence_us"] >= lost_us - 10000


@needs_board
def test_no_log_and_no_board_are_one_line_errors(tmp_path):
    from harness.sim.virtual_board import VirtualBoard
    with VirtualBoard() as board:                       # nothing deployed: no log on it
        res = _cli("pico_rp2040", "--port", board.port, "--pull-log", str(tmp_path / "x.mcap"), "--timeout", "20")
    assert res.returncode == EXIT_NO_LOG, res.stdout + res.stderr
    assert res.stderr.strip().count("\n") == 0 and "no log on the board" in res.stderr
    res = _cli("pico_rp2040", "--port", "/dev/does-not-exist-vb", "--pull-log", str(tmp_path / "x.mcap"),
               "--timeout", "3", timeout=30)
    assert res.returncode == 3 and "no board on /dev/does-not-exist-vb" in res.stderr


def test_unreadable_log_files_are_one_line_errors(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 5000)
    res = _cli("pico_rp2040", "--pull-log", str(tmp_path / "x.mcap"), "--log-bin", str(junk))
    assert res.returncode == EXIT_NO_LOG and "no readable ring log records" in res.stderr
    res = _cli("pico_rp2040", "--pull-log", str(tmp_path / "x.mcap"), "--log-bin", str(tmp_path / "missing.bin"))
    assert res.returncode == EXIT_NO_LOG and "cannot read the ring log" in res.stderr
    res = _cli("pico_rp2040", "--log-bin", str(junk))
    assert res.returncode == 2 and "--log-bin goes with --pull-log" in res.stderr


@pytest.mark.parametrize("board", ["pico_rp2040", "nano_esp32"])
def test_the_log_budget_is_the_same_in_board_py_and_manifest(board):
    manifest = load_manifest(board)
    mod = load("mp-board")
    consts = mod._Board(board)
    assert consts.LOG_PATH == manifest["log_path"] and consts.LOG_BYTES == manifest["log_bytes"] > 0
    assert manifest["log_bytes"] + manifest["flash_reserve_bytes"] < manifest["flash_bytes"] // 2
    probe = {"block_bytes": 4096, "root_files": {}}
    assert log_need_bytes(manifest, probe) == manifest["log_bytes"]          # the first start creates it
    probe["root_files"][manifest["log_path"].lstrip("/")] = manifest["log_bytes"]
    assert log_need_bytes(manifest, probe) == 0                              # already there
    assert log_need_bytes(dict(manifest, log_bytes=0), {}) == 0
    assert os.path.basename(manifest["log_path"]) == "app_log.bin"
