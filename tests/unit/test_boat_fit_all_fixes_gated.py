"""``boat-fit`` on a log whose every withheld GNSS fix is an outlier the EKF's gate refuses (here each 5 s
window's one withheld fix lies 80 m from its seed fix, the boat at rest): nothing is left to fit, which is one
line on stderr and exit 2. Before, the fit divided by the zero withheld fixes: a ZeroDivisionError traceback
from vessel_fit.combine_sums."""
import numpy as np
import pytest

from harness import cli
from harness.training.boat_fit import boat_log


def _log(rows=400):
    i = np.arange(rows)
    fix = (i % 25) == 0                                 # a seed fix every 5 s window and one in its middle
    north = np.where(fix, np.where(i % 50 == 0, 0.0, 80.0), np.nan)
    return {"time_s": i * 0.1, "thrust_left_n": np.zeros(rows), "thrust_right_n": np.zeros(rows),
            "gnss_north_m": north, "gnss_east_m": np.where(fix, 0.0, np.nan), "yaw_rad": np.zeros(rows),
            "yaw_rate_radps": np.zeros(rows)}


@pytest.mark.timeout(60)
def test_a_log_whose_withheld_fixes_are_all_gated_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "log.csv"
    boat_log.write_csv(str(path), _log())
    out = tmp_path / "out"
    rc = cli.main(["boat-fit", str(path), "--out", str(out), "--rounds", "1", "--no-plots", "--quiet",
                   "--set", "settle_s=0", "--set", "gnss_sigma_m=0.1", "--set", "iterations=3"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "the EKF's gate refused all 6 withheld GNSS fixes of the 6 training windows" in err, err
    assert not (out / "fit.json").exists()
