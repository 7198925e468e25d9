"""A run whose report cannot be written to the end (the file-size limit reached, as on a full disk: the write
fails with EFBIG) ends with one error line and exit 1, not a traceback."""
import os
import resource
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)          # the write fails with EFBIG instead of a signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_report_that_cannot_be_written_is_one_line_and_exit_1(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "waypoints", "--reduced", "--quiet",
                           "--out", str(tmp_path / "r")], cwd=REPO, capture_output=True, text=True,
                          preexec_fn=_limit_file_size, timeout=600)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and "File too large" in lines[-1], proc.stderr[-2000:]
