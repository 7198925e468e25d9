"""``python -m onboard.deploy BOARD --port PORT --pull-log OUT.mcap`` (or ``--log-bin`` a copied log) with OUT's
folder missing on the host: one line naming that folder, exit status 2, before the board is touched; not "no log
on the board" (mpremote's "No such file or directory" is about the host side there) and not a traceback, while a
log missing on the board is still exit status 7."""
import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy import device as dev
from onboard.deploy.build import DeployError
from onboard.deploy.pull_log import EXIT_NO_LOG, NoLog, pull_log

pytestmark = pytest.mark.timeout(120)


@pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")
def test_a_missing_host_folder_is_not_a_missing_log(tmp_path):
    out = tmp_path / "no-such-folder" / "run.mcap"
    with VirtualBoard() as board:
        dev.Device(board.port, timeout_s=20).run(["exec", "f = open('/app_log.bin', 'wb')\nf.write(b'x')\nf.close()"])
        with pytest.raises(DeployError) as err:
            pull_log("pico_rp2040", board.port, str(out), timeout_s=20, log=lambda m: None)
        assert not isinstance(err.value, NoLog) and err.value.exit_code == 2
        assert "cannot write %s: the folder %s does not exist" % (out, tmp_path / "no-such-folder") in str(err.value)
        dev.Device(board.port, timeout_s=20).run(["exec", "import os\nos.remove('/app_log.bin')"])
        with pytest.raises(NoLog, match="no log on the board") as err:
            pull_log("pico_rp2040", board.port, str(tmp_path / "run.mcap"), timeout_s=20, log=lambda m: None)
        assert err.value.exit_code == EXIT_NO_LOG


def test_converting_a_copied_log_into_a_missing_folder_is_one_line_exit_2(tmp_path):
    """--log-bin (no board): the MCAP's folder missing is one line, exit status 2, not a traceback."""
    import subprocess
    import sys

    from onboard.deploy.build import REPO_ROOT
    from onboard.runtime.ring_log import RingLogSink
    raw = tmp_path / "run.bin"
    sink = RingLogSink(str(raw), 65536)
    sink("/app/config", 0, {"app": "mp_ground_robot", "config": {}})
    sink("/app/step", 10, {"time_us": 10})
    sink.close()
    out = tmp_path / "missing" / "run.mcap"
    res = subprocess.run([sys.executable, "-m", "onboard.deploy", "pico_rp2040", "--pull-log", str(out), "--log-bin",
                          str(raw)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr == "error: cannot write %s: the folder %s does not exist\n" % (out, tmp_path / "missing")
    res = subprocess.run([sys.executable, "-m", "onboard.deploy", "pico_rp2040", "--pull-log",
                          str(tmp_path / "run.mcap"), "--log-bin", str(raw)], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and (tmp_path / "run.mcap").exists(), res.stderr
