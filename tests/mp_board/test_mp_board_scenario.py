"""The runtime deployed to the virtual MicroPython board gives the same outputs as CPython (1e-9)."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from harness.sim import virtual_board
from harness.config import ConfigError, merge
from harness.scenarios import load, prepare
from harness.scenarios.context import RunContext
from onboard.comms import line_link as ll
from onboard.deploy.build import REPO_ROOT
from onboard.runtime.link_runtime import LinkRuntime, runtime_config

pytestmark = pytest.mark.timeout(180)


@pytest.mark.slow
@pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")
@pytest.mark.parametrize("mpy", [False, True])
def test_board_matches_cpython(mpy):
    mod = load("mp-board")
    cfg = merge(mod.DEFAULTS, {"duration_s": 1.5, "mpy": mpy})
    metrics = mod.run(cfg, RunContext(3))
    assert metrics["ticks"] == 150
    assert metrics["board_report"]["ticks"] == 150 and metrics["board_report"]["bad_lines"] == 0
    assert metrics["board_report"]["updates"] > 10 and metrics["board_report"]["predicts"] > 100
    assert metrics["max_abs_diff"] <= 1e-9, metrics["worst_at"]
    assert metrics["success"]
    assert abs(metrics["final_north_m"]) > 0.05        # the robot moved: not a trivial all-zero run


def test_bad_lines_are_rejected_counted_and_change_nothing():
    mod = load("mp-board")
    board = mod._Board("pico_rp2040")
    from onboard.runtime.ground_robot import GroundRobotRuntime
    rt = GroundRobotRuntime(board.WAYPOINTS_NE_M, mod._RecordingMotors(), config=runtime_config(board))
    link = LinkRuntime(rt)
    ticks = mod.make_lines(merge(mod.DEFAULTS, {"duration_s": 0.3}), RunContext(1).random.stream("imu"),
                           RunContext(1).random.stream("aiding"), board)
    for lines in ticks[:10]:
        for line in lines:
            link.handle_line(line)
    x_before, p_before = list(rt.estimator.x), list(rt.estimator.P)
    good = ticks[10][0]
    bad = [good[:-6] + b"*0000\n",                          # CRC mismatch
           b"I,1,2,3*" + b"%04X\n" % ll.crc16_ccitt_false(b"I,1,2,3"),   # too few fields
           b"no trailer\n", b"Z*" + b"%04X\n" % ll.crc16_ccitt_false(b"Z"),   # unknown tag
           ll.encode("I", ["100", "0", "00"] + ["0" * 16] * 5)]  # dt_us = 0 and a bad float
    for line in bad:
        replies = link.handle_line(line)
        assert len(replies) == 1 and replies[0].startswith(b"X,")
    assert link.bad_lines == len(bad)
    assert rt.estimator.x == x_before and rt.estimator.P == p_before


def test_floats_cross_the_link_bit_exactly():
    for x in (0.1, -1e-300, 3.141592653589793, 1e308, -0.0):
        assert ll.hex_f64(ll.f64_hex(x)) == x
    with pytest.raises(ll.LinkError):
        ll.hex_f64("zz" * 8)


def _signed_link(key):
    from onboard.comms.signed_frame import FrameVerifier
    mod = load("mp-board")
    board = mod._Board("pico_rp2040")
    from onboard.runtime.ground_robot import GroundRobotRuntime
    motors = mod._RecordingMotors()
    rt = GroundRobotRuntime(board.WAYPOINTS_NE_M, motors, config=runtime_config(board))
    link = LinkRuntime(rt, FrameVerifier({0: key}) if key else None, require_signed=True)
    ticks = mod.make_lines(merge(mod.DEFAULTS, {"duration_s": 0.5}), RunContext(1).random.stream("imu"),
                           RunContext(1).random.stream("aiding"), board)
    return mod, rt, link, ticks


def test_a_signed_link_runs_signed_lines_and_refuses_every_other():
    """With a link key the board takes signed lines only: the same run as unsigned gives the same state;
    unsigned, forged (another key), replayed and tampered lines are answered X, counted, and change
    nothing (no tick runs, no wheel command)."""
    from onboard.comms.signed_frame import FrameSigner
    key = bytes(range(40, 72))
    _mod, rt, link, ticks = _signed_link(key)
    _mod2, rt_plain, plain, _ = _signed_link(None)
    plain.require_signed = False
    signer = FrameSigner(key)
    sent = []
    for lines in ticks[:30]:
        for line in lines:
            signed = ll.sign_line(signer, line)
            sent.append(signed)
            assert not any(r.startswith(b"X,") for r in link.handle_line(signed))
            plain.handle_line(line)
    assert link.auth_rejected == 0 and rt.estimator.x == rt_plain.estimator.x and rt.estimator.P == rt_plain.estimator.P
    x_before, p_before, cmd_before = list(rt.estimator.x), list(rt.estimator.P), rt.last_cmd
    tick = ll.encode("T", ["999999"])
    tampered = bytearray(ll.sign_line(signer, tick))
    tampered[-3] = ord("0") if tampered[-3] != ord("0") else ord("1")
    refused = [tick, ll.sign_line(FrameSigner(bytes(32)), tick), sent[-1], sent[5], bytes(tampered), b"~zz\n"]
    for line in refused:
        replies = link.handle_line(line)
        assert len(replies) == 1 and replies[0].startswith(b"X,"), replies
    assert link.auth_rejected == len(refused) and link.ticks == 30 and link.bad_lines == 0
    assert rt.estimator.x == x_before and rt.estimator.P == p_before and rt.last_cmd is cmd_before
    assert link.verifier.counts["replayed"] == 2 and link.verifier.counts["bad_tag"] == 2


def test_a_board_without_its_link_key_refuses_every_line():
    _mod, rt, link, ticks = _signed_link(None)
    for line in ticks[0]:
        (reply,) = link.handle_line(line)
        assert reply.startswith(b"X,no link key on this board")
    assert link.ticks == 0 and rt.last_cmd is None


def test_a_binary_link_key_file_is_one_line_exit_2_before_anything_runs(tmp_path, capsys):
    """``link_key`` naming a file of 64 random bytes (a raw key, not hex text): exit 2, one line naming the
    setting, no key byte shown, no report."""
    from harness.cli import main
    key = np.random.default_rng(7).bytes(64)
    assert any(b >= 0x80 for b in key)                     # not ASCII text
    key_path = tmp_path / "link.key"
    key_path.write_bytes(key)
    out = tmp_path / "out"
    assert main(["run", "mp-board", "--reduced", "--quiet", "--out", str(out),
                 "--set", "link_key=%s" % key_path]) == 2
    err = capsys.readouterr().err
    assert err == ("error: setting config.link_key: link key %s: a link key must be hex digits, the file holds "
                   "bytes that are not ASCII text\n" % key_path), err
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize("where, needle", [
    ("folder", "is a folder, not an .mcap file path"),
    ("missing/board_log.mcap", "there is no folder"),
    ("raw/board_log.mcap", "board_log.bin, which is a folder"),
])
def test_a_pull_log_path_that_cannot_be_written_is_refused_before_the_deploy(tmp_path, where, needle):
    """``pull_log`` naming a folder, a file in a folder that is not there, or one whose raw copy (OUT.bin
    beside OUT.mcap) would land on a folder: the settings check refuses it (one line naming the setting)
    instead of the pull failing after the deploy and the lockstep run."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "raw" / "board_log.bin").mkdir(parents=True)
    path = str(tmp_path / where)
    with pytest.raises(ConfigError) as exc:
        prepare("mp-board", {"pull_log": path})
    msg = str(exc.value)
    assert msg.startswith("setting config.pull_log: %s" % path) and needle in msg and "\n" not in msg, msg
    _mod, config = prepare("mp-board", {"pull_log": str(tmp_path / "folder" / "board_log.mcap")})
    assert config["pull_log"].endswith("board_log.mcap")


def test_a_pull_log_folder_without_write_permission_is_refused_before_the_deploy():
    """A read-only folder for ``pull_log``: one line naming the setting. As root (CI) permissions do not bind, so
    the check runs in a child process that drops to the unprivileged user ``nobody`` once it has imported what it
    needs (root's Python installation may not be readable to that user)."""
    top = tempfile.mkdtemp(prefix="pull_log_ro_")
    try:
        os.chmod(top, 0o755)
        folder = os.path.join(top, "ro")
        os.mkdir(folder, 0o555)
        os.chmod(folder, 0o555)
        path = os.path.join(folder, "board_log.mcap")
        drop = "os.setgid(65534); os.setuid(65534)\n" if os.geteuid() == 0 else ""
        script = ("import os\nfrom harness.config import ConfigError\nfrom harness.scenarios import load, prepare\n"
                  "load('mp-board')\n" + drop +
                  "try:\n    prepare('mp-board', {'pull_log': %r})\nexcept ConfigError as exc:\n    print(exc)\n" % path)
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=120, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        assert proc.returncode == 0, proc.stderr[-800:]
        assert proc.stdout == "setting config.pull_log: %s cannot be written (no write permission)\n" % path, \
            proc.stdout
    finally:
        os.chmod(os.path.join(top, "ro"), 0o755)
        shutil.rmtree(top)
