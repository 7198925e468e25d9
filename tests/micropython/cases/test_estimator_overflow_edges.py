"""Finite but absurd IMU increments whose integration overflows: the tilt estimator refuses the sample (counted in
``rejected``, state unchanged; before, a roll that overflowed to infinity crashed in fmod with a bare ValueError
after the sample had been counted and its time taken, and a pitch of 1e308 rad was kept), and the planar EKF refuses
a prediction that ends in a non-finite state or covariance (before, an infinite P was kept and every later pose was
refused for good). Runs under CPython (pytest) and inside MicroPython."""
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.estimators.tilt import TiltEstimator

G = 9.80665
LEVEL_DV = (0.0, 0.0, -G * 0.001)      # 1 ms at rest, level


def _tilt_state(t):
    return (t.roll_rad, t.pitch_rad, t.time_us, t.initialized, t.counters()["predicts"], t.counters()["gated"])


def test_tilt_refuses_increments_that_overflow_roll_or_pitch():
    t = TiltEstimator()
    assert t.predict(ImuSample(1000, 1000, LEVEL_DV, (0.0, 0.0, 0.0)))
    assert t.predict(ImuSample(2000, 1000, LEVEL_DV, (0.0, 1.0, 0.0)))      # pitch about 1 rad
    for t_us, da in ((3000, (1.7e308, 0.0, 1.7e308)), (3000, (0.0, 1.7e308, -1.7e308))):
        before = _tilt_state(t)
        rejected = t.rejected
        assert t.predict(ImuSample(t_us, 1000, LEVEL_DV, da)) is False
        assert t.rejected == rejected + 1
        assert _tilt_state(t) == before
    assert t.predict(ImuSample(3000, 1000, LEVEL_DV, (0.0, 0.0, 0.0)))
    assert -3.2 < t.roll_rad < 3.2 and -1.6 < t.pitch_rad < 1.6


def _ekf_state(ekf):
    return (list(ekf.x), list(ekf.P), ekf.time_us, ekf.last_imu_us, ekf.predicts)


def test_planar_ekf_refuses_a_prediction_that_overflows():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    assert ekf.predict(ImuSample(1000, 1000, (0.001, 0.0, 0.0), (0.0, 0.0, 0.0)))
    before = _ekf_state(ekf)
    rejected = ekf.rejected
    try:
        # a speed of 1e300 m/s is finite, but its heading Jacobian squared (P east-east) overflows
        ekf.predict(ImuSample(2000, 1000, (1e300, 0.0, 0.0), (0.0, 0.0, 0.0)))
        raised = False
    except EstimatorInputError:
        raised = True
    assert raised
    assert ekf.rejected == rejected + 1
    assert _ekf_state(ekf) == before
    # the stream goes on and the filter still fuses poses (its covariance stayed finite)
    assert ekf.predict(ImuSample(2000, 1000, (0.001, 0.0, 0.0), (0.0, 0.0, 0.0)))
    assert ekf.update_pose(PoseSample(3000, (0.01, 0.0, 0.0), (0.0, 0.0, 0.0))) is True
