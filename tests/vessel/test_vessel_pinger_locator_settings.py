"""The pinger locator's own settings: a bad iterations / inlier_sigmas / max_range_m / sound speed / timing sigma
is one clear LocatorError line, not a misleading "no contours meet" or numpy's "negative dimensions"."""
import math

import pytest

from onboard.vessel import pinger as pg

BODY = [[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]]
POSES = [[0.0, 0.0, 0.0], [0.0, 10.0, 0.5], [5.0, 5.0, 1.2]]
PINGER = (60.0, 20.0)


def _tdoa():
    return [pg.tdoa_of(PINGER, p, BODY).tolist() for p in POSES]


@pytest.mark.parametrize("kw, name", [
    ({"iterations": 0}, "iterations"), ({"iterations": -1}, "iterations"), ({"iterations": 2.5}, "iterations"),
    ({"iterations": True}, "iterations"),
    ({"inlier_sigmas": math.nan}, "inlier_sigmas"), ({"inlier_sigmas": -3.0}, "inlier_sigmas"),
    ({"inlier_sigmas": 0}, "inlier_sigmas"),
    ({"max_range_m": math.nan}, "max_range_m"), ({"max_range_m": 0.0}, "max_range_m"),
    ({"max_range_m": math.inf}, "max_range_m"),
    ({"sound_speed_mps": "abc"}, "sound speed"), ({"sound_speed_mps": -1482.0}, "sound speed"),
    ({"timing_sigma_s": None}, "timing sigma"), ({"timing_sigma_s": 0.0}, "timing sigma"),
])
def test_bad_settings_are_one_locator_error_line(kw, name):
    with pytest.raises(pg.LocatorError, match="^pinger locator: %s must be" % name) as e:
        pg.locate(_tdoa(), POSES, BODY, **kw)
    assert "\n" not in str(e.value)


def test_good_settings_still_locate():
    fix = pg.locate(_tdoa(), POSES, BODY, iterations=1, inlier_sigmas=3, max_range_m=200)
    assert math.hypot(fix.north_m - PINGER[0], fix.east_m - PINGER[1]) < 0.5
    fix = pg.locate(_tdoa(), POSES, BODY)
    assert math.hypot(fix.north_m - PINGER[0], fix.east_m - PINGER[1]) < 0.5


# one ping of three hydrophones whose two contours touch at the fix (J^T R^-1 J of rank 1): the fix is not
# determined along the contours' common tangent
TANGENT_BODY = [[0.3069054208410893, -1.4240621283806494], [-0.6109195765795085, 1.311357473250732],
                [1.628464442996648, -1.3577310883592408]]
TANGENT_POSE = [[-18.50189166883657, -17.391598910663543, 0.5905978869665738]]
TANGENT_TDOA = [[0.0005738160609536283, -0.0008946914411592248]]


def test_an_undetermined_direction_gets_a_large_variance_not_zero():
    import numpy as np
    fix = pg.locate(TANGENT_TDOA, TANGENT_POSE, TANGENT_BODY)
    cov = np.asarray(fix.covariance_m2)
    assert np.all(np.isfinite(cov)) and np.allclose(cov, cov.T)
    w = np.linalg.eigvalsh(cov)
    assert w.min() > 0.0
    assert w.max() >= pg.MAX_RANGE_M ** 2 * (1.0 - 1e-9)      # the undetermined direction: the search range
    assert w.min() < 1.0                                       # the determined one keeps its (small) variance
    d = fix.as_dict()
    assert d["sigma_north_m"] > 100.0 or d["sigma_east_m"] > 100.0
