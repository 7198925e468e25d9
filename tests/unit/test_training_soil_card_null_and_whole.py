"""The soil estimator's training (harness.training.soil_estimator.train): a validation set where no cut has a
valid horizon point has no force error; before, ``evaluate`` gave NaN (the mean of empty arrays) and ``export``
wrote it with json.dump as the bare token NaN, which is not JSON (strict readers refuse the card). Now the
metric is None (``null``: not measured) and the card is strict JSON. And ``export`` writes weights.npz and
card.json whole: before, a card value JSON cannot hold broke json.dump midway and left half a card.json
(and the new weights beside it); now it raises before either file is touched."""
import json

import numpy as np
import pytest

from harness.training.soil_estimator import train as tr
from onboard.soil import learned_estimator as le

HORIZON = 4


def _strict(text):
    def refuse(token):
        raise ValueError("not JSON: %s" % token)
    return json.loads(text, parse_constant=refuse)


def _tiny(n=6, seed=3):
    """A synthetic data set of ``n`` whole cuts (two soils, I_d 10-50 %) and a one-layer 'ensemble'."""
    rng = np.random.default_rng(seed)
    width = 5
    data = {"x_raw": rng.normal(size=(n, width)), "whole_cut": np.ones(n, dtype=bool),
            "geometry": rng.normal(size=(n, HORIZON, len(le.GEOMETRY_CHANNELS))),
            "force_n": rng.normal(1000.0, 100.0, size=(n, HORIZON, 2)),
            "truth": np.abs(rng.normal(1.0, 0.1, size=(n, 5))),
            "relative_density_pct": np.linspace(10.0, 50.0, n), "soil": np.arange(n) % 2}
    layers = [(rng.normal(0.0, 0.1, (le.output_size(HORIZON), width)), np.zeros(le.output_size(HORIZON)))]
    lo, hi = tr.preset_bounds()
    return data, layers, lo, hi


def _no_valid_point(theta, geometry, *args):
    n = len(geometry)
    return np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)


def test_no_valid_horizon_point_is_null_in_a_strict_json_card(tmp_path, monkeypatch):
    data, layers, lo, hi = _tiny()
    monkeypatch.setattr(tr.le, "fee_window_force", _no_valid_point)
    mask = np.ones(len(data["x_raw"]), dtype=bool)
    metrics = tr.evaluate(data, mask, np.zeros(5), np.ones(5), lo, hi, HORIZON, [layers])
    assert metrics["force_mae_pct"] is None and metrics["force_cuts"] == 0
    assert metrics["force_mae_pct_id_le_60"] is None
    assert metrics["force_mae_pct_worst_bin_id_le_60"] is None
    assert all(b["pct"] is None for b in metrics["force_mae_pct_bins_id_le_60"].values())
    tr.export(str(tmp_path), [layers], np.zeros(5), np.ones(5), lo, hi, {"metrics": {"validation": metrics}})
    card = _strict((tmp_path / "card.json").read_text())
    assert card["metrics"]["validation"]["force_mae_pct"] is None


def _all_valid(theta, geometry, *args):
    n = len(geometry)
    return np.full(n, 900.0 + theta[0]), np.full(n, 1100.0), np.ones(n, dtype=bool)


def test_cuts_without_a_valid_point_are_left_out_of_the_force_error(monkeypatch):
    """Half the cuts without a valid point: the force error is that of the other half, not NaN."""
    data, layers, lo, hi = _tiny()
    mask = np.ones(len(data["x_raw"]), dtype=bool)
    calls = []

    def first_three_valid(theta, geometry, *args):
        calls.append(1)
        fx, fz, valid = _all_valid(theta, geometry, *args)
        return fx, fz, (valid if len(calls) <= 3 else np.zeros_like(valid))

    monkeypatch.setattr(tr.le, "fee_window_force", _all_valid)
    full = tr.evaluate(dict(data, whole_cut=np.arange(6) < 3), mask, np.zeros(5), np.ones(5), lo, hi, HORIZON,
                       [layers])
    monkeypatch.setattr(tr.le, "fee_window_force", first_three_valid)
    part = tr.evaluate(data, mask, np.zeros(5), np.ones(5), lo, hi, HORIZON, [layers])
    assert part["force_cuts"] == 3 and full["force_cuts"] == 3
    assert part["force_mae_pct"] == pytest.approx(full["force_mae_pct"]) and part["force_mae_pct"] > 0


def test_export_refuses_a_nan_card_before_touching_either_file(tmp_path):
    _data, layers, lo, hi = _tiny()
    tr.export(str(tmp_path), [layers], np.zeros(5), np.ones(5), lo, hi, {"metrics": {"force_mae_pct": 12.5}})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    bad = {"metrics": {"force_mae_pct": 7.0}, "later": float("nan")}
    with pytest.raises(ValueError):
        tr.export(str(tmp_path), [layers, layers], np.zeros(5), np.ones(5), lo, hi, bad)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before      # both files as they were
    assert _strict((tmp_path / "card.json").read_text())["metrics"]["force_mae_pct"] == 12.5

