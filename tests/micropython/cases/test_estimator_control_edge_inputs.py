"""Edge inputs of the estimators, controllers and the thrust map: a negative pose variance, a repeated or backwards
IMU sample, a NaN PID error or controller input, time going backwards, a NaN thrust command, a roll past pi, a
particle-filter refresh of every particle. Each leaves the state as it was (or unharmed) instead of poisoning it.

Runs under CPython (pytest) and inside MicroPython (no pytest: bad input is checked with try/except).
"""
import math

from onboard.control.heading_speed import HeadingSpeedController
from onboard.control.pid import Pid
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators import particle_filter as pf
from onboard.estimators.planar_ekf import N_STATE, SPEED, EstimatorInputError, PlanarEkf
from onboard.estimators.tilt import TiltEstimator
from onboard.vessel.thrust_map import ThrustMap

NAN = float("nan")


def _snapshot_ekf(ekf):
    return (list(ekf.x), list(ekf.P), ekf.time_us, ekf.counters()["updates"], ekf.counters()["predicts"])


def _refused_unchanged(ekf, call):
    """``call()`` raises EstimatorInputError, counted in ``rejected``, the filter's state untouched."""
    before = _snapshot_ekf(ekf)
    rejected = ekf.rejected
    try:
        call()
        raised = False
    except EstimatorInputError:
        raised = True
    assert raised
    assert ekf.rejected == rejected + 1
    assert _snapshot_ekf(ekf) == before


def test_planar_ekf_refuses_negative_pose_variance():
    # a negative variance made S small but positive: the update then drove P's position variance negative
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    _refused_unchanged(ekf, lambda: ekf.update_pose(
        PoseSample(10, (0.1, 0.0, 0.0), (0.0, 0.0, 0.0), cov_pos_m2=(-0.005, -0.005, 1.0))))
    for i in range(N_STATE):
        assert ekf.P[i * N_STATE + i] > 0.0


def test_planar_ekf_refuses_repeated_and_backwards_imu():
    # the same IMU sample twice (or an older one) was integrated again: position moved twice
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    ekf.x[SPEED] = 1.0                    # moving forward at 1 m/s
    imu = ImuSample(10000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert ekf.predict(imu)
    for bad in (imu, ImuSample(5000, 5000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))):
        _refused_unchanged(ekf, lambda: ekf.predict(bad))
    # the stream goes on
    assert ekf.predict(ImuSample(20000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))


def test_planar_ekf_imu_after_pose_with_later_stamp_still_accepted():
    # IMU order is checked against the last IMU sample, not the pose: a queue delivered after a pose is fine
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    assert ekf.predict(ImuSample(10000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    ekf.update_pose(PoseSample(30000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    assert ekf.predict(ImuSample(20000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))


def test_pid_nan_error_does_not_poison_state():
    # one NaN error made the integral NaN, and every later output NaN (0 * NaN = NaN even with ki = 0)
    pid = Pid(1.0, 0.0, 0.0)
    pid.update(0.5, 0)
    try:
        pid.update(NAN, 1000)
        raised = False
    except ValueError:
        raised = True
    assert raised
    u = pid.update(1.0, 2000)
    assert u == u
    assert abs(u - 1.0) < 1e-12


def test_pid_time_backwards_refused():
    # a timestamp going backwards integrated a negative dt (unwinding the integral with the error's sign)
    pid = Pid(0.0, 1.0, 0.0)
    pid.update(1.0, 1000000)
    pid.update(1.0, 2000000)              # integral 1.0
    integral = pid.integral
    try:
        pid.update(1.0, 1500000)
        raised = False
    except ValueError:
        raised = True
    assert raised
    assert pid.integral == integral
    assert abs(pid.update(1.0, 3000000) - 2.0) < 1e-12


def test_heading_speed_nan_input_changes_nothing():
    # a NaN speed measurement raised only after the heading PID had integrated (state half-changed), or not
    # at all (NaN thrust commands)
    ctl = HeadingSpeedController(ThrustMap())
    ctl.step(0.5, 1.0, 0.0, 0.0, 0.5, 0)
    before = (ctl.heading.integral, ctl.heading._last_us, ctl.speed.integral, ctl.speed._last_us, ctl.steps)
    try:
        ctl.step(0.5, 1.0, 0.0, 0.0, NAN, 100000)
        raised = False
    except ValueError:
        raised = True
    assert raised
    assert (ctl.heading.integral, ctl.heading._last_us, ctl.speed.integral, ctl.speed._last_us,
            ctl.steps) == before


def test_thrust_map_nan_command_is_no_thrust():
    # max(-1, min(1, nan)) is 1.0: a NaN command became full forward thrust (the outboards stop instead)
    tm = ThrustMap({"lag_tau_s": 0.0})
    assert tm.static(NAN) == 0.0
    assert tm.step(NAN, 0.5, 0.1) == (0.0, 0.0)
    assert tm.shaft == [0.0, 0.0]
    assert tm.step(1.0, 1.0, 0.1) == (242.7, 242.7)


def test_tilt_roll_stays_wrapped():
    # the gyro-integrated roll was never wrapped: after a roll-over it left [-pi, pi) and grew without bound
    est = TiltEstimator()
    dt_us = 10000
    g_dv = -9.80665 * dt_us * 1e-6
    t = dt_us
    est.predict(ImuSample(t, dt_us, (0.0, 0.0, g_dv), (0.0, 0.0, 0.0)))
    # roll 1.5 turns at 2 pi rad/s while the accelerometer is gated (3 g)
    for _ in range(150):
        t += dt_us
        est.predict(ImuSample(t, dt_us, (0.0, 0.0, 3.0 * g_dv), (2.0 * math.pi * dt_us * 1e-6, 0.0, 0.0)))
    assert -math.pi <= est.roll_rad < math.pi
    assert abs(abs(est.roll_rad) - math.pi) < 1e-6


def test_particle_filter_refresh_of_every_particle_does_not_crash():
    # refresh_fraction 0.95 with 10 particles rounds to 10 new ones: resampling 0 divided by zero after the
    # particles had already been propagated (state half-changed)
    f = pf.ParticleFilter({"n_particles": 10, "refresh_fraction": 0.95})
    draws = pf.PureDraws(3)
    f.initialize(0, 2.0, draws, learned=(0.3, 0.0))
    est = f.step(100000, (0.0, 0.0), (0.0, 0.0), 2.0, draws, learned=(0.3, 0.0))
    assert f.steps == 1
    assert f.time_us == 100000
    assert f.last_refresh == 9
    for v in est:
        assert v == v
