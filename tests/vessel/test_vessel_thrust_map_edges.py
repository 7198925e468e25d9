"""Thrust map edges: a bad step length must not stick in the shaft state; the inverse of NaN is a command."""
import math

import pytest

from onboard.vessel.thrust_map import ThrustMap, ThrustMapInputError


@pytest.mark.parametrize("dt_s", [float("nan"), float("inf"), -0.01])
def test_step_refuses_bad_dt_and_keeps_the_shafts(dt_s):
    tm = ThrustMap()
    tm.step(0.5, -0.3, 0.1)
    before = list(tm.shaft)
    with pytest.raises(ThrustMapInputError):
        tm.step(0.5, -0.3, dt_s)
    assert tm.shaft == before
    # the map goes on as if the bad step never came
    ref = ThrustMap()
    ref.step(0.5, -0.3, 0.1)
    assert tm.step(0.5, -0.3, 0.1) == ref.step(0.5, -0.3, 0.1)


def test_step_zero_dt_is_no_change():
    tm = ThrustMap()
    tm.step(1.0, 1.0, 0.2)
    before = list(tm.shaft)
    tm.step(0.0, 0.0, 0.0)
    assert tm.shaft == before


def test_inverse_at_and_beyond_the_table_ends_and_nan():
    tm = ThrustMap()
    assert tm.inverse(242.7) == 1.0 and tm.inverse(1e9) == 1.0 and tm.inverse(math.inf) == 1.0
    assert tm.inverse(-101.9) == -1.0 and tm.inverse(-1e9) == -1.0 and tm.inverse(-math.inf) == -1.0
    assert tm.inverse(0.0) == 0.0 and tm.inverse(-0.0) == 0.0
    assert tm.inverse(float("nan")) == 0.0
    for t in (3.3, 14.3, 80.6, -15.3, -0.3):
        assert tm.static(tm.inverse(t)) == pytest.approx(t)
