"""BoatEkf.initialize refuses a time that is not a whole number of microseconds and a state or sigmas that are not
numbers as bad input: EstimatorInputError, counted, the filter as it was (a NaN time used to replace the state and
covariance and then fail on int(), an infinite one raised OverflowError)."""
import math

import pytest

from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import BoatEkf

X0 = [0.2, 0.05, 10.0, -5.0, 1.2, 0.1]


@pytest.mark.parametrize("args", [
    (math.nan, [0.5, 0.0, 9.0, 9.0, 0.0, 0.0]),
    (math.inf, [0.5, 0.0, 9.0, 9.0, 0.0, 0.0]),
    (2.5, [0.5, 0.0, 9.0, 9.0, 0.0, 0.0]),
    (True, [0.5, 0.0, 9.0, 9.0, 0.0, 0.0]),
    ("100", [0.5, 0.0, 9.0, 9.0, 0.0, 0.0]),
    (100, "abcdef"),
    (100, [0.5, 0.0, 9.0, 9.0, 0.0, 0.0], "abcdef"),
    (100, None),
])
def test_bad_initialize_leaves_the_filter_as_it_was(args):
    f = BoatEkf()
    f.initialize(0, X0)
    before = (list(f.x), list(f.P), f.time_us, f.initialized, f.counters())
    with pytest.raises(EstimatorInputError):
        f.initialize(*args)
    c = f.counters()
    assert c.pop("rejected") == before[4].pop("rejected") + 1
    assert (list(f.x), list(f.P), f.time_us, f.initialized, c) == before[:4] + (before[4],)


def test_whole_number_times_start_the_filter():
    f = BoatEkf()
    f.initialize(1000.0, X0)
    assert f.initialized and f.time_us == 1000 and type(f.time_us) is int and f.rejected == 0
