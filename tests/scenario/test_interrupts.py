"""Interrupting is safe: SIGINT or SIGTERM while a scenario or a sweep runs ends it with exit 130 / 143 and
one line (no traceback); the run's MCAP log is valid and holds what was recorded so far, run.json says how
the run ended, and no child process is left. (The Pi service's SIGTERM: tests/rpi_vesc/test_rpi_service.py.)

Each test waits for a sign that the run is under way (a progress line, a stored job), never for a fixed time."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from mcap.reader import make_reader

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HANG_GUARD_S = 300.0
pytestmark = [pytest.mark.scenario, pytest.mark.timeout(600)]


class _Run:
    """A harness command in a child process whose stderr is read as it comes."""

    def __init__(self, args):
        self.proc = subprocess.Popen([sys.executable, "-m", "harness"] + args, cwd=REPO, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.err = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
            self.err += chunk

    def wait_for(self, ready):
        deadline = time.monotonic() + HANG_GUARD_S
        while not ready():
            assert self.proc.poll() is None, "the run ended before it could be interrupted: %r" % self.err[-500:]
            assert time.monotonic() < deadline, "hang guard: the run never got under way"
            time.sleep(0.05)              # polling for the condition, not a synchronisation by time

    def stop(self, sig):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=HANG_GUARD_S)
        self._reader.join(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, self.err.decode(errors="replace")


def _messages(path):
    with open(path, "rb") as fh:
        return sum(1 for _ in make_reader(fh).iter_messages())


@pytest.mark.parametrize("scenario,sig,code,marker", [
    ("swarm-fixed", signal.SIGINT, 130, b"flight 1/"),
    ("grading", signal.SIGTERM, 143, b"grading:"),
])
def test_a_scenario_cut_short_keeps_its_log_and_says_so(tmp_path, scenario, sig, code, marker):
    out = tmp_path / "report"
    run = _Run(["run", scenario, "--out", str(out)])
    # under way: the progress line shows simulated time past 0 (something was logged already)
    run.wait_for(lambda: re.search(re.escape(marker) + rb"[^\r]*\| *0*[1-9][0-9]*\.[0-9]/", run.err) is not None)
    rc, err = run.stop(sig)
    assert rc == code, err[-2000:]
    assert "Traceback" not in err
    last = re.split(r"[\r\n]", err.strip())[-1]
    assert last == ("interrupted" if sig == signal.SIGINT else "terminated"), err[-300:]
    info = json.loads((out / "run.json").read_text())
    assert info["ended"] == "interrupted by %s" % signal.Signals(sig).name
    assert not (out / "metrics.json").exists()                # a run cut short has no outcomes
    assert _messages(out / "log.mcap") == info["mcap_messages"] > 0


def test_a_sweep_cut_short_keeps_its_finished_jobs_and_says_how_to_resume(tmp_path):
    out = tmp_path / "sweep"
    run = _Run(["sweep", "waypoints", "--seeds", "1-40", "--reduced", "--workers", "2", "--out", str(out)])
    jobs = out / "jobs"
    run.wait_for(lambda: jobs.is_dir() and len(os.listdir(jobs)) >= 1)
    rc, err = run.stop(signal.SIGINT)
    assert rc == 130 and "Traceback" not in err, err[-2000:]
    info = json.loads((out / "run.json").read_text())
    assert info["ended"] == "interrupted by SIGINT" and info["jobs"] == 40
    assert 1 <= info["jobs_stored"] == len(os.listdir(jobs)) < 40
    assert info["resume"].endswith("--resume %s" % out)
