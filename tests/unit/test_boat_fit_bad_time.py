"""``boat-fit`` on a log whose time_s is not in seconds (milliseconds, microseconds): the samples lie further
apart than the 5 s fitting window, so a window would hold no row after its seed. That used to loop forever in
``fit_windows.make_windows``; it is now one line on stderr and exit 2, before any fit.json is written."""
import numpy as np
import pytest

from harness import cli
from harness.training.boat_fit import boat_log
from harness.training.boat_fit.fit_windows import make_windows
from onboard.core.settings import ConfigError


def _log(spacing, rows=200):
    """A well-formed log of ``rows`` samples ``spacing`` apart in time_s, a GNSS fix every other row."""
    i = np.arange(rows, dtype=float)
    fix = (np.arange(rows) % 2) == 0
    return {"time_s": i * spacing,
            "thrust_left_n": 100.0 + 0.1 * i, "thrust_right_n": 150.0 - 0.1 * i,
            "gnss_north_m": np.where(fix, 0.01 * i, np.nan), "gnss_east_m": np.where(fix, -0.02 * i, np.nan),
            "yaw_rad": -0.005 * i, "yaw_rate_radps": np.full(rows, -0.05)}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("spacing,shown", [(100.0, "100 s apart"), (100000.0, "100000 s apart")])
def test_a_log_in_ms_or_us_is_one_line_and_exit_2(tmp_path, capsys, spacing, shown):
    path = tmp_path / "log.csv"
    boat_log.write_csv(str(path), _log(spacing))
    out = tmp_path / "out"
    rc = cli.main(["boat-fit", str(path), "--out", str(out), "--rounds", "1", "--no-plots", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and shown in err, err
    assert "longer than the 5 s fitting window" in err and "is time_s in seconds?" in err, err
    assert not (out / "fit.json").exists()


@pytest.mark.timeout(60)
def test_make_windows_refuses_windows_without_a_withheld_row():
    # 4 s apart: round(5 / 4) = 1 row per window, the seed alone (no hang, but no window could ever fit)
    with pytest.raises(ConfigError, match=r"4 s apart \(median\), too far apart for the 5 s fitting window"):
        make_windows(_log(4.0), 5.0)
    with pytest.raises(ConfigError, match=r"longer than the 5 s fitting window"):
        make_windows(_log(1e11), 5.0)
    w = make_windows(_log(0.25), 5.0)                 # seconds, 4 Hz: 20 rows per window, as before
    assert w["rows"] == 20 and len(w["start"]) == 10
