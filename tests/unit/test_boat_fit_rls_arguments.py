"""vessel_rls.rls_fit refuses settings it cannot run with a ValueError: ``stride=0`` regressed each row on
itself (h = 0 s: a ZeroDivisionError mid-run), ``forgetting=0`` divided P by 0, a forgetting factor above 1
makes P grow without bound, ``record_s=0`` recorded nothing after the first row."""
import numpy as np
import pytest

from harness.training.boat_fit.vessel_rls import rls_fit


def _log(rows=30):
    t = np.arange(rows) * 0.1
    return {"time_s": t, "thrust_left_n": np.full(rows, 50.0), "thrust_right_n": np.full(rows, 40.0),
            "gnss_north_m": np.zeros(rows), "gnss_east_m": np.zeros(rows), "yaw_rad": np.zeros(rows),
            "yaw_rate_radps": np.zeros(rows)}


def _states(rows=30):
    s = np.zeros((rows, 6))
    s[:, 4] = np.linspace(0.5, 1.0, rows)               # surge speed rising
    s[:, 1] = np.linspace(0.0, 0.1, rows)               # yaw rate rising
    return s


@pytest.mark.parametrize("kwargs,needle", [
    ({"stride": 0}, "stride must be a whole number of rows >= 1, got 0"),
    ({"stride": 1.5}, "stride must be a whole number"),
    ({"stride": True}, "stride must be a whole number"),
    ({"forgetting": 0.0}, "forgetting must be a number > 0"),
    ({"forgetting": 1.2}, r"forgetting must lie in \(0, 1\]"),
    ({"forgetting": float("nan")}, "forgetting must be a number > 0"),
    ({"p0_rel": -1.0}, "p0_rel must be a number > 0"),
    ({"record_s": 0.0}, "record_s must be a number > 0"),
])
def test_bad_settings_are_value_errors(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        rls_fit(_log(), states=_states(), warmup_s=0.0, **kwargs)


def test_good_settings_run():
    res = rls_fit(_log(), states=_states(), warmup_s=0.0, stride=2, forgetting=1.0)
    assert res["updates"] == 28 and len(res["history"]) >= 2
