"""A finite but absurd thrust (1e8 N: the explicit model steps overflow within a fraction of a second) must not
leave the boat EKF with a NaN state: the predict that would propagate with it is refused (counted, state,
covariance, time and held thrusts as they were), as is a measurement that would propagate with such a held
thrust; sane samples go on."""
import math

import pytest

from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel.samples import HeadingSample, ThrustSample, YawRateSample

X0 = [0.2, 0.05, 10.0, -5.0, 1.2, 0.1]


def _snapshot(f):
    return (list(f.x), list(f.P), f.time_us, f.initialized, list(f.thrust_n))


def test_a_thrust_that_overflows_the_model_is_refused_with_the_filter_kept():
    f = BoatEkf()
    f.initialize(0, X0)
    f.predict(ThrustSample(10000, 50.0, 60.0))
    before, counters = _snapshot(f), f.counters()
    with pytest.raises(EstimatorInputError, match="non-finite"):
        f.predict(ThrustSample(500000, 1e8, 1e8))
    assert _snapshot(f) == before
    after = f.counters()
    assert after.pop("rejected") == counters.pop("rejected") + 1 and after == counters
    assert f.predict(ThrustSample(20000, 50.0, 60.0)) is True
    assert all(math.isfinite(v) for v in f.x + f.P)


def test_a_measurement_that_would_propagate_with_an_absurd_held_thrust_is_refused():
    f = BoatEkf()
    f.predict(ThrustSample(1000, 1e8, 1e8))           # before initialisation: held, not propagated
    assert f.update_heading(HeadingSample(2000, 0.5)) is False
    f.initialize(2000, X0)
    before = _snapshot(f)
    with pytest.raises(EstimatorInputError):
        f.update_yaw_rate(YawRateSample(250000, 0.1))
    assert _snapshot(f) == before and f.rejected == 1
    assert f.predict(ThrustSample(12000, 50.0, 50.0)) is True      # a sane thrust replaces it
    assert f.update_yaw_rate(YawRateSample(250000, 0.1)) in (True, False)
    assert all(math.isfinite(v) for v in f.x + f.P)
