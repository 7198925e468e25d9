"""Alexi's accuracy figures and output calibration with a constant series whose float mean is not exactly its
value (0.1 repeated: the mean differs by an ulp, so ``std()`` is ~1e-17, not 0). The figures take the documented
constant branch (0), the calibration refuses a constant prediction. Before, the coefficient of determination of a
constant target came out near -4e31, its gain -0.43, and a constant prediction got an arbitrary calibration
gain (a = 2.86 for one seed) written into the card."""
import numpy as np
import pytest

from harness.training.alexi import calibrate as cal
from harness.training.alexi import metrics as mt

P = np.array([0.3, 0.1, 0.2, 0.1, 0.1, 0.1, 0.11])


@pytest.mark.parametrize("value", [0.1, 0.7, -0.8])
def test_a_constant_target_scores_zero(value):
    y = np.full(7, value)
    assert mt.r2_cod(y, P) == 0.0
    assert mt.gain(y, P) == 0.0
    assert mt.r2_pearson(y, P) == 0.0 and mt.pearson(y, P) == 0.0
    assert mt.r2_pearson(P, y) == 0.0 and mt.pearson(P, y) == 0.0        # a constant prediction likewise
    assert mt.spearman(y, P) == 0.0


def test_short_series_score_zero_and_ordinary_ones_are_unchanged():
    assert mt.r2_cod([], []) == 0.0 and mt.r2_pearson([1.0], [2.0]) == 0.0 and mt.spearman([1.0], [2.0]) == 0.0
    rng = np.random.default_rng(2)
    y = rng.normal(size=50)
    p = 0.8 * y + 0.1 * rng.normal(size=50)
    r = float(np.corrcoef(y, p)[0, 1])
    assert mt.pearson(y, p) == r and mt.r2_pearson(y, p) == r * r
    assert mt.r2_cod(y, p) == 1.0 - float(np.sum((y - p) ** 2)) / float(np.sum((y - y.mean()) ** 2))


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_a_constant_prediction_is_refused_by_the_calibration(seed):
    y = np.random.default_rng(seed).normal(size=7)
    with pytest.raises(ValueError, match="prediction is constant"):
        cal.fit_affine(y, np.full(7, 0.1))
