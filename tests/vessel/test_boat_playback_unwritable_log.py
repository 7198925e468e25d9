"""python -m harness.sim.boat_playback with a log it cannot write: one line, exit 2, and the simulated boat's
ptys and temporary folder are not left open behind the failed open."""
import os

from harness.sim import boat_playback


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def test_a_log_path_that_cannot_be_opened_is_one_line_and_leaks_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "log.mcap").mkdir(parents=True)          # the log's path is a folder: open(path, "wb") fails
    before = _open_fds()
    assert boat_playback.main(["--out", str(out), "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: cannot write ") and "log.mcap" in err, err
    assert _open_fds() == before
