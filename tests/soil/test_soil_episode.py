"""harness.sim.soil_episode: one short lane end to end (world, loader, onboard blind map, per-cut estimate,
scores); the settings are checked."""
import math

import pytest

from harness.sim.soil_episode import run_episode, score
from onboard.core.settings import ConfigError

pytest.importorskip("scipy")


def test_one_lane_end_to_end():
    out = run_episode({"world": {"size_m": [8.0, 5.0]},
                       "loader": {"operator": {"lanes": {"count": 1, "length_m": 3.5}}}})
    m = out["metrics"]
    assert m["cuts"] == 1 and m["estimated"] == 1
    cut = out["cuts"][0]
    assert cut["valid_sweeps"] >= 20 and cut["samples"] >= 150
    assert abs(cut["error"]["phi_rad"]) < math.radians(8.0)
    assert abs(cut["error"]["delta_rad"]) < math.radians(4.0)
    assert m["force_mae_pct"] < 15.0
    for k in ("c_pa", "phi_rad", "gamma_npm3", "ca_pa", "delta_rad"):
        assert set(m[k]) == {"bias", "rmse", "nrmse", "coverage_1s", "coverage_2s", "flagged"}
    assert out["terrain"]["bank_cut_m3"] > 0.3
    assert out["map"]["lost_m3"] == 0.0
    assert out["timing"]["blind_map_ms_per_sweep"] > 0.0


def test_settings_are_checked_and_scores_skip_cuts_without_estimates():
    with pytest.raises(ConfigError, match="sensor_path"):
        run_episode({"sensor_path": "sonar"})
    with pytest.raises(ConfigError, match="soil"):
        run_episode({"world": {"soil": "peat"}})
    assert score([{"lane": [0, 0], "skipped": "too few samples"}], {}) == {"cuts": 1, "estimated": 0}
