"""Alexi preprocessing (Cook thesis 6.2.2, 6.3.2), metrics, and pitch/roll read off a heightmap (6.1)."""
import math

import numpy as np
import pytest

from harness.config import ConfigError
from harness.sim.alexi import heightmap as hm
from harness.training.alexi import dataset as ds
from harness.training.alexi import metrics as mt
from harness.training.alexi import preprocess as pp


def test_quantiser_table():
    # thesis 6.2.2's nine levels: truncation towards zero with a dead zone; +-1 clamps to +-0.8 (A18)
    x = [-0.19, 0.19, 0.2, -0.2, -0.39, 0.6, -0.6, 0.99, 1.0, -1.0, -0.81, 0.0]
    want = [0.0, 0.0, 0.2, -0.2, -0.2, 0.6, -0.6, 0.8, 0.8, -0.8, -0.8, 0.0]
    assert np.allclose(pp.quantise(x), want)
    assert sorted(set(np.round(pp.quantise(np.linspace(-1, 1, 1001)), 6))) == [round(0.2 * k, 6) for k in range(-4, 5)]


def test_minmax_round_trip_and_range():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(200, 3))
    lo, hi = pp.minmax_fit(x)
    y = pp.minmax_apply(x, lo, hi)
    assert np.allclose(y.min(axis=0), -1.0) and np.allclose(y.max(axis=0), 1.0)
    assert np.allclose(pp.minmax_invert(y, lo, hi), x)
    lo_c, hi_c = pp.minmax_fit(np.ones((5, 1)))           # a constant column does not divide by zero
    assert np.all(np.isfinite(pp.minmax_apply(np.ones((5, 1)), lo_c, hi_c)))


def test_moving_average_and_exponential():
    step = np.r_[np.zeros(500), np.ones(500)][:, None]
    y = pp.moving_average(step, 250)[:, 0]
    assert np.allclose(y[:375], 0.0) and np.allclose(y[625:], 1.0)       # a ramp 250 frames wide around the step
    assert 0.45 < y[500] < 0.55 and np.all(np.diff(y) >= -1e-12)
    assert np.allclose(pp.moving_average(np.full((300, 2), 0.3), 250), 0.3)
    e = pp.exponential(np.array([[1.0], [0.0], [0.0]]), 0.25)[:, 0]
    assert np.allclose(e, [1.0, 0.75, 0.5625])                              # y_i = a x_i + (1 - a) y_(i-1)


def test_cull_rules():
    n = 400
    rng = np.random.default_rng(1)
    speed = rng.normal(0.0, 1.0, n)
    zeros = np.zeros(n)
    dyaw = zeros.copy()
    dyaw[3] = 0.3
    dyaw[4] = -0.3                               # |dtheta| > 0.25 both ways (the text's typo read as |.|)
    pitch = zeros.copy()
    pitch[5] = 1.3
    keep = pp.cull_mask("v1", dyaw, pitch, zeros, speed, zeros, zeros)
    assert not keep[3] and not keep[4] and not keep[5]
    fast = speed - speed.mean() > speed.std()
    assert not np.any(keep[fast])                # one-sided 1 sigma on v, as written
    assert np.all(keep[~fast & (np.arange(n) > 5)])
    dn = rng.normal(0.0, 1.0, n)
    dn[7] = 50.0
    teleport = np.zeros(n, dtype=bool)
    teleport[9] = True
    keep2 = pp.cull_mask("v2", zeros, zeros, zeros, zeros, dn, zeros, teleport)
    assert not keep2[7] and not keep2[9] and keep2.sum() >= n - 4


def test_recipe_settings_are_checked():
    pp.check_recipe(dict(pp.V2_RECIPE))
    for bad in ({"cull": "v3"}, {"smoothing": "gauss"}, {"window": 0}, {"alpha": 0.0}, {"quantise": 1}):
        with pytest.raises(ConfigError):
            pp.check_recipe(dict(pp.V2_RECIPE, **bad))
    with pytest.raises(ConfigError):
        pp.check_recipe({"cull": "v1"})


def test_series_applies_steps_in_order():
    x = np.linspace(0.0, 10.0, 600)[:, None]
    lo, hi = np.array([0.0]), np.array([10.0])
    only_norm = pp.series(x, dict(pp.RAW_RECIPE), lo, hi)
    assert np.allclose(only_norm[:, 0], np.linspace(-1, 1, 600))
    full = pp.series(x, dict(pp.V2_RECIPE), lo, hi)
    assert set(np.round(full[:, 0], 6)) <= {round(0.2 * k, 6) for k in range(-4, 5)}


def test_previous_dh_follows_the_window():
    dh = np.zeros((2, 4, 4))
    dh[0, 1, 2] = 1.0
    centres = np.array([[10, 10], [11, 10]])      # the window moved one row north
    prev = ds.previous_dh(dh, centres)
    assert prev[1, 0, 2] == 1.0 and prev[1].sum() == 1.0 and prev[0].sum() == 0.0


def test_metrics():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    assert mt.r2_pearson(y, 2 * y + 1) == pytest.approx(1.0)
    assert mt.r2_cod(y, 2 * y + 1) < 0.0          # correlated but not equal: the two R^2 differ
    assert mt.r2_cod(y, y) == 1.0 and mt.mse(y, y + 1) == 1.0
    assert mt.spearman(y, y ** 3) == pytest.approx(1.0)


@pytest.mark.parametrize("yaw_deg", [0.0, 90.0, 30.0])
def test_pitch_roll_of_a_tilted_plane(yaw_deg):
    slope = math.radians(8.0)
    cell = 0.02
    rows = 64
    north = (np.arange(rows) + 0.5) * cell
    h = np.tile((np.tan(slope) * north)[:, None], (1, rows))      # rises to the north
    yaw = math.radians(yaw_deg)
    pitch, roll = hm.pitch_roll(h, cell, 0.6, 0.6, yaw, 0.09, 0.095)
    # heading north climbs; heading east has the north (left) side up: right side down, positive roll
    assert pitch == pytest.approx(math.atan(math.tan(slope) * math.cos(yaw)), abs=1e-9)
    assert roll == pytest.approx(math.atan(math.tan(slope) * math.sin(yaw)), abs=1e-9)
