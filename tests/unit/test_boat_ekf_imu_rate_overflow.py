"""BoatEkf edges: an IMU sample with a finite angle increment over a short interval whose yaw rate overflows to
infinity is refused before anything moves (before: predict propagated the state and counted it, then fused the
infinite rate, ending in NaN or a bare ``ValueError`` from wrap_pi; with the gate on, the infinite innovation was
counted as gated), and ``initialize`` given an int too large for a float raises EstimatorInputError, counted
(before: OverflowError, not a ValueError, not counted). A position fix and a heading further apart than max_gap_s
do not start the filter together (before: a heading from minutes earlier started it at the fix)."""
import pytest

from onboard.core.samples import ImuSample
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import EAST, NORTH, YAW, BoatEkf


def _snapshot(ekf):
    return (ekf.state(), ekf.covariance(), ekf.time_us, ekf.initialized, list(ekf.thrust_n),
            {k: v for k, v in ekf.counters().items() if k != "rejected"})


@pytest.mark.parametrize("config", [None, {"gate_chi2_yaw_rate": 0.0}])
@pytest.mark.parametrize("entry", ["predict", "update_imu"])
def test_an_imu_yaw_rate_that_overflows_is_refused_before_anything_moves(config, entry):
    ekf = BoatEkf(config)
    ekf.initialize(0, [0.1, 0.0, 1.0, 2.0, 0.5, 0.0])
    before = _snapshot(ekf)
    rejected = ekf.rejected
    with pytest.raises(EstimatorInputError, match="yaw rate"):
        getattr(ekf, entry)(ImuSample(1000, 1, (0.0, 0.0, 0.0), (0.0, 0.0, 1e303)))
    assert ekf.rejected == rejected + 1
    assert _snapshot(ekf) == before
    assert getattr(ekf, entry)(ImuSample(1000, 1000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))) is True


def test_initialize_with_an_int_too_large_for_a_float_is_refused():
    ekf = BoatEkf()
    with pytest.raises(EstimatorInputError):
        ekf.initialize(0, [10 ** 400, 0, 0, 0, 0, 0])
    with pytest.raises(EstimatorInputError):
        ekf.initialize(0, [0] * 6, [1.0, 1.0, -(10 ** 400), 1.0, 1.0, 1.0])
    assert ekf.rejected == 2 and not ekf.initialized
    ekf.initialize(0, [0] * 6)
    assert ekf.initialized


def test_a_position_and_a_heading_further_apart_than_max_gap_do_not_start_the_filter():
    """Before: a heading from 10 minutes before the first position fix started the filter at that fix with it."""
    from onboard.vessel.samples import HeadingSample, PositionSample
    f = BoatEkf({"max_gap_s": 2.0})
    assert f.update_heading(HeadingSample(0, 1.0)) is False
    assert f.update_position(PositionSample(600000000, (3.0, 4.0))) is False      # the old heading is dropped
    assert not f.initialized
    assert f.update_heading(HeadingSample(601000000, -0.5)) is True              # 1 s after the fix: together
    assert f.time_us == 601000000 and f.x[EAST] == 4.0 and abs(f.x[YAW] + 0.5) < 1e-12
    g = BoatEkf({"max_gap_s": 2.0})
    assert g.update_position(PositionSample(0, (1.0, 1.0))) is False
    assert g.update_heading(HeadingSample(5000000, 0.2)) is False               # the old fix is dropped
    assert g.update_position(PositionSample(5500000, (2.0, 2.0))) is True
    assert g.x[NORTH] == 2.0 and abs(g.x[YAW] - 0.2) < 1e-12
