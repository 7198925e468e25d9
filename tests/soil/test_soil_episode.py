"""harness.scenarios.soil.soil_episode: one short lane end to end (the world and the loader app on one clock,
the app fed through its entry point, blind map, per-cut estimates on every sensor path, scores, the map's
zones and volumes)."""
import math

import numpy as np
import pytest

from harness.config import ConfigError, merge
from harness.scenarios.soil import soil_episode as ep
from harness.sim.rng import RunRandom
from onboard.soil.fee import THETA_U_NAMES

pytest.importorskip("scipy")


def _config(**blocks):
    base = {"world": {"size_m": [8.0, 5.0]}, "loader": {"operator": {"lanes": {"count": 1, "length_m": 3.5}}},
            "app": {"sensor_paths": ["force", "drive+pressure", "drive"]}}
    for k, v in blocks.items():
        base[k] = ep.merge_blocks(base.get(k, {}), v)
    return merge(ep.DEFAULTS, base, "test", ep.SETTING_RANGES)


@pytest.fixture(scope="module")
def lane():
    return ep.run_episode(_config(), RunRandom(1))


def test_one_lane_end_to_end_on_every_sensor_path(lane):
    rows = lane.estimates
    assert [r["path"] for r in rows] == ["force", "drive+pressure", "drive"]
    truth = {k: float(np.mean(lane.world.fields.values[k])) for k in THETA_U_NAMES}
    for r in rows:
        assert r["lane"] == [0, 0] and r["valid_sweeps"] >= 20 and r["samples"] >= 150
        assert r["truth"] == pytest.approx(truth, rel=1e-9)         # uniform soil: what the blade failed
        assert abs(r["theta"]["phi_rad"] - truth["phi_rad"]) < math.radians(6.0)
        assert r["force_mae_pct"] < 15.0
    assert abs(rows[0]["theta"]["delta_rad"] - truth["delta_rad"]) < math.radians(3.0)
    assert rows[2]["flags"]["delta_rad"] and not rows[0]["flags"]["delta_rad"]      # F_x only: delta unknown
    score = ep.score_estimates(rows[:1])
    assert score["cuts"] == score["estimated"] == 1
    for k in THETA_U_NAMES:
        assert set(score[k]) == {"bias", "rmse", "nrmse", "coverage_1s", "coverage_2s", "flagged"}
    rep = lane.app.report()
    assert rep["mapping"]["cuts"] == 1 and rep["mapping"]["rejected"] == 0 and rep["mapping"]["lost_m3"] == 0.0
    assert rep["estimation"] == {"estimates": 3, "skipped": 0, "pending": 0}
    assert rep["scheduler"]["groups"]["map"]["runs"] > 100
    assert lane.world.steps == len(lane.world.truth_pile) and lane.timing["blind_map_ms_per_sweep"] > 0.0


def test_the_map_follows_the_truth_inside_the_cut_and_keeps_its_volume(lane):
    errors = ep.map_errors(lane)
    assert errors["interior"]["cells"] > 200 and errors["edges"]["cells"] > 0
    assert errors["interior_mae_of_depth"] < 0.1
    assert errors["volume_error_pct"] < 1.0
    assert errors["edges_over_interior"] > 2.0


def test_scores_skip_cuts_without_estimates_and_null_nrmse_for_zero_truth():
    assert ep.score_estimates([{"lane": [0, 0], "skipped": "too few samples"}]) == {"cuts": 1, "estimated": 0}
    row = {"theta": dict.fromkeys(THETA_U_NAMES, 1.0), "truth": dict(dict.fromkeys(THETA_U_NAMES, 1.0), c_pa=0.0),
           "sigma": dict.fromkeys(THETA_U_NAMES, 0.4), "flags": dict.fromkeys(THETA_U_NAMES, False),
           "force_mae_n": 10.0, "force_mae_pct": 1.0}
    out = ep.score_estimates([row])
    assert out["c_pa"]["nrmse"] is None and out["phi_rad"]["nrmse"] == 0.0 and out["best_nrmse"] != "c_pa"
    assert out["c_pa"]["coverage_2s"] == 0.0 and out["phi_rad"]["coverage_1s"] == 1.0


def test_episode_settings_are_checked():
    with pytest.raises(ConfigError, match="sensor_paths"):
        merge(ep.DEFAULTS, {"app": {"sensor_paths": ["sonar"]}}, "test", ep.SETTING_RANGES)
    with pytest.raises(ConfigError, match="soil"):
        merge(ep.DEFAULTS, {"world": {"soil": "peat"}}, "test", ep.SETTING_RANGES)
    with pytest.raises(ConfigError, match="swell"):          # the map's swell is the world's, not a setting
        merge(ep.DEFAULTS, {"app": {"blind_map": {"swell": 1.3}}}, "test", ep.SETTING_RANGES)


def test_sweep_summary_reports_coverage_and_the_per_density_means_rank():
    """soil-sweep's summary from hand-made cut rows: the coverage of the stated sigmas per property (all cuts
    and per soil) and Spearman's rho of the per-I_d mean estimates beside the per-cut one."""
    from harness.scenarios.soil import soil_sweep as sw
    config = {"soils": ["clay"], "relative_density_pct": [10.0, 50.0, 90.0],
              "acceptance": {"spearman": 0.8, "force_mae_pct": 13.0, "max_relative_density_pct": 60.0}}
    cells = []
    for idd, est in ((10.0, [1.0, 3.0]), (50.0, [2.5, 2.1]), (90.0, [2.6, 4.0])):
        for e in est:
            theta = {k: e for k in THETA_U_NAMES}
            truth = {k: idd / 40.0 for k in THETA_U_NAMES}
            sigma = {k: 0.6 for k in THETA_U_NAMES}
            cells.append(("clay", idd, {"theta": theta, "truth": truth, "sigma": sigma, "force_mae_pct": 3.0}))
    m = sw.summarise(config, cells, 3)
    err = np.abs(np.array([r["theta"]["c_pa"] - r["truth"]["c_pa"] for _s, _i, r in cells]))
    for scope in ("all", "clay"):
        cov = m["coverage"][scope]["c_pa"]
        assert cov["coverage_1s"] == pytest.approx(np.mean(err <= 0.6))
        assert cov["coverage_2s"] == pytest.approx(np.mean(err <= 1.2))
        assert 0.0 < cov["coverage_1s"] < cov["coverage_2s"] <= 1.0
    assert m["spearman_bins"]["clay"]["c_pa"] == pytest.approx(1.0)      # means 2.0, 2.3, 3.3
    assert m["spearman"]["clay"]["c_pa"] < 0.8                              # the cuts themselves overlap
    assert sw.coverage([])["phi_rad"] == {"coverage_1s": None, "coverage_2s": None}
