"""Scenario `soil-ood` (soil paper section 3.2, notes H7): its settings are checked before anything runs,
its metrics compare error and stated sigma in vs out of distribution per estimator (single network,
ensemble), and a reduced run estimates cuts in both conditions (the contract test runs it for identical
seeds: tests/scenario/test_contract.py -k soil-ood)."""
import json

import numpy as np
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.scenarios import prepare
from onboard.soil.fee import THETA_U_NAMES

pytest.importorskip("scipy")

from harness.scenarios.soil import soil_ood  # noqa: E402


def _rows(err_frac, sig_frac, n=3):
    span = soil_ood._ranges()
    rows = []
    for i in range(n):
        truth = {k: 0.5 * span[k] for k in THETA_U_NAMES}
        rows.append({"theta": {k: truth[k] + err_frac * span[k] for k in THETA_U_NAMES}, "truth": truth,
                     "sigma": {k: sig_frac * span[k] for k in THETA_U_NAMES},
                     "sigma_epistemic": {k: 0.5 * sig_frac * span[k] for k in THETA_U_NAMES},
                     "force_mae_pct": 10.0 + i})
    return rows


def test_metrics_compare_error_and_sigma_in_and_out():
    by = {("single", "in"): _rows(0.05, 0.1), ("single", "out"): _rows(0.25, 0.1),
          ("ensemble", "in"): _rows(0.05, 0.1), ("ensemble", "out"): _rows(0.25, 0.3)}
    m = soil_ood.summarise(by, soil_ood._ranges())
    assert m["success"]
    assert m["single"]["in"]["phi_rad"]["abs_err_of_range"] == pytest.approx(0.05)
    assert m["single"]["ratios"]["c_pa"]["error_out_over_in"] == pytest.approx(5.0)
    assert m["single"]["ratios"]["c_pa"]["sigma_out_over_in"] == pytest.approx(1.0)
    assert not m["single"]["sigma_rises_out"] and m["ensemble"]["sigma_rises_out"]
    assert not m["single"]["epistemic_sigma_rises_out"] and m["ensemble"]["epistemic_sigma_rises_out"]
    # 1 sigma (0.1) covers 0.05, 2 sigmas not 0.25; 1 sigma (0.3) of the ensemble covers it out of distribution
    assert m["single"]["in"]["gamma_npm3"]["coverage_1s"] == 1.0
    assert m["single"]["out"]["gamma_npm3"]["coverage_2s"] == 0.0
    assert m["ensemble"]["out"]["gamma_npm3"]["coverage_1s"] == 1.0
    by[("ensemble", "out")] = []
    assert not soil_ood.summarise(by, soil_ood._ranges())["success"]


def test_settings_are_checked_before_anything_runs():
    with pytest.raises(ConfigError, match="out_tilt_rad"):
        prepare("soil-ood", {"out_tilt_rad": [0.7, 1.2]}, reduced=True)
    with pytest.raises(ConfigError, match="learned_model"):
        prepare("soil-ood", {"learned_model": "/nonexistent/model"}, reduced=True)
    with pytest.raises(ConfigError):
        prepare("soil-ood", {"in_tilt_rad": [0.4, 0.1]}, reduced=True)


def test_a_reduced_run_estimates_in_and_out_of_distribution(tmp_path, capsys):
    out = tmp_path / "ood"
    code = main(["run", "soil-ood", "--reduced", "--quiet", "--seed", "2", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    m = json.loads((out / "metrics.json").read_text())
    assert m["episodes"] == 2 and m["tilt_rad"] == {"in": [0.0, 0.4], "out": [0.6, 0.8]}
    for est in soil_ood.ESTIMATORS:
        for cond in soil_ood.CONDITIONS:
            c = m[est][cond]
            assert c["cuts"] >= 1 and np.isfinite(c["force_mae_pct"])
            assert all(c[k]["sigma_of_range"] > 0 for k in THETA_U_NAMES)
    # the single network's epistemic term is zero; the ensemble's is not
    assert all(m["single"]["in"][k]["epistemic_sigma_of_range"] == 0.0 for k in THETA_U_NAMES)
    assert any(m["ensemble"]["in"][k]["epistemic_sigma_of_range"] > 0.0 for k in THETA_U_NAMES)
    assert (out / "ood_error_sigma.png").is_file()
