"""Planar EKF and controllers: run under CPython (pytest) and inside MicroPython."""
import math

from onboard.control.diffdrive import body_twist, wheel_speeds
from onboard.control.pid import Pid
from onboard.control.waypoint import WaypointFollower
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.planar_ekf import (ACCEL_BIAS_X, EAST, GYRO_BIAS_Z, N_STATE, NORTH, SPEED, YAW,
                                          EstimatorInputError, PlanarEkf, PlanarEkfNumericError)


def _drive_straight(ekf, speed_mps, seconds, dt_us=10000):
    """Feed clean increments of a robot already moving north at speed_mps."""
    t = ekf.time_us
    for _ in range(int(seconds * 1e6 / dt_us)):
        t += dt_us
        ekf.predict(ImuSample(t, dt_us, (0.0, 0.0, -9.80665 * dt_us * 1e-6), (0.0, 0.0, 0.0)))
    return t


def test_predict_then_update_converges_to_pose():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    t = _drive_straight(ekf, 0.0, 1.0)
    for k in range(50):
        ekf.update_pose(PoseSample(t, (0.5, -0.2, 0.0), (0.0, 0.0, 0.3)))
    assert abs(ekf.x[NORTH] - 0.5) < 0.01
    assert abs(ekf.x[EAST] + 0.2) < 0.01
    assert abs(ekf.x[YAW] - 0.3) < 0.01


def test_yaw_residual_wraps_across_pi():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 3.1)))
    ekf.update_pose(PoseSample(10, (0.0, 0.0, 0.0), (0.0, 0.0, -3.1)))
    # the short way round from 3.1 to -3.1 is +0.083 rad, so yaw stays near +-pi
    assert abs(abs(ekf.x[YAW]) - math.pi) < 0.08


def test_covariance_symmetric_after_cycles():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    t = 0
    for k in range(30):
        t += 10000
        ekf.predict(ImuSample(t, 10000, (0.01, 0.0, -0.098), (0.0, 0.0, 0.002)))
        if k % 10 == 0:
            ekf.update_pose(PoseSample(t, (0.01 * k, 0.0, 0.0), (0.0, 0.0, 0.02)))
    P = ekf.P
    for i in range(N_STATE):
        assert P[i * N_STATE + i] > 0.0
        for j in range(N_STATE):
            assert abs(P[i * N_STATE + j] - P[j * N_STATE + i]) < 1e-15


def test_outlier_gated_and_counted():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    x_before = list(ekf.x)
    assert ekf.update_pose(PoseSample(1, (25.0, 0.0, 0.0), (0.0, 0.0, 0.0))) is False
    assert ekf.gated == 1
    assert ekf.x == x_before


def _jumped(config):
    """One fused pose at 0.1 s, then poses 5 m off every 0.1 s (a jumped aiding source)."""
    ekf = PlanarEkf(config)
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    ekf.x[GYRO_BIAS_Z] = 0.001
    ekf.x[ACCEL_BIAS_X] = 0.002
    t = _drive_straight(ekf, 0.0, 0.1)
    assert ekf.update_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    ekf.biases_before = (ekf.x[GYRO_BIAS_Z], ekf.x[ACCEL_BIAS_X])
    results = []
    for _ in range(3):
        t = _drive_straight(ekf, 0.0, 0.1)
        results.append(ekf.update_pose(PoseSample(t, (5.0, 1.0, 0.0), (0.0, 0.0, 0.5))))
    return ekf, results


def test_lost_filter_restarts_from_the_pose_after_gate_reset_s():
    ekf, results = _jumped({"gate_reset_s": 0.25, "reset_speed_sigma_mps": 0.5})
    # gated 0.1 and 0.2 s after the last fused pose, restarted at 0.3 s >= 0.25 s
    assert results == [False, False, True]
    assert ekf.gated == 3 and ekf.updates == 1 and ekf.resets == 1 and ekf.counters()["resets"] == 1
    assert ekf.x[NORTH] == 5.0 and ekf.x[EAST] == 1.0 and ekf.x[YAW] == 0.5 and ekf.x[SPEED] == 0.0
    assert abs(ekf.P[SPEED * N_STATE + SPEED] - 0.25) < 1e-15
    assert (ekf.x[GYRO_BIAS_Z], ekf.x[ACCEL_BIAS_X]) == ekf.biases_before != (0.0, 0.0)     # kept
    t = _drive_straight(ekf, 0.0, 0.1)
    assert ekf.update_pose(PoseSample(t, (5.0, 1.0, 0.0), (0.0, 0.0, 0.5)))
    assert ekf.updates == 2 and ekf.resets == 1


def test_lost_filter_restart_can_be_disabled():
    ekf, results = _jumped({"gate_reset_s": 0.0})
    assert results == [False, False, False]
    assert ekf.resets == 0 and abs(ekf.x[NORTH]) < 0.01


def test_nan_rejected_state_untouched():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.5)))
    x_before = list(ekf.x)
    P_before = list(ekf.P)
    for bad in (ImuSample(10, 10000, (float("nan"), 0.0, 0.0), (0.0, 0.0, 0.0)),):
        try:
            ekf.predict(bad)
        except EstimatorInputError:
            pass
        else:
            raise AssertionError("NaN IMU sample accepted")
    try:
        ekf.update_pose(PoseSample(10, (1.0, float("inf"), 0.0), (0.0, 0.0, 0.0)))
    except EstimatorInputError:
        pass
    else:
        raise AssertionError("inf pose accepted")
    assert ekf.x == x_before and ekf.P == P_before
    assert ekf.rejected == 2


def _numeric_refusal(ekf, pose):
    """update_pose(pose) must raise PlanarEkfNumericError (an EstimatorInputError), count one more
    ``rejected`` and leave the state, the covariance and every other counter as they were."""
    x_before = list(ekf.x)
    P_before = list(ekf.P)
    counters = ekf.counters()
    nis, fused_us = ekf.last_nis, ekf.last_fused_us
    try:
        ekf.update_pose(pose)
    except PlanarEkfNumericError as e:
        assert isinstance(e, EstimatorInputError)
    else:
        raise AssertionError("update with a non-finite covariance or a singular S accepted")
    # compare as text: NaN != NaN
    assert repr(ekf.x) == repr(x_before) and repr(ekf.P) == repr(P_before)
    assert ekf.last_nis == nis and ekf.last_fused_us == fused_us
    counters["rejected"] += 1
    assert ekf.counters() == counters


def test_non_finite_covariance_refused_state_untouched():
    pose = PoseSample(20, (1.1, 2.0, 0.0), (0.0, 0.0, 0.5))
    for slot, value in ((NORTH * N_STATE + NORTH, float("inf")), (YAW * N_STATE + EAST, float("nan")),
                        (SPEED * N_STATE + SPEED, float("inf")), (ACCEL_BIAS_X * N_STATE + NORTH, float("nan"))):
        ekf = PlanarEkf()
        ekf.initialize(PoseSample(0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.5)))
        ekf.update_pose(PoseSample(10, (1.0, 2.0, 0.0), (0.0, 0.0, 0.5)))      # one good update first
        ekf.P[slot] = value                                                       # P overflowed
        _numeric_refusal(ekf, pose)
        _numeric_refusal(ekf, pose)                                               # every time, counted each


def test_singular_innovation_covariance_refused_state_untouched():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.5)))
    for i in (NORTH, EAST, YAW):          # P certain of the pose and a pose of zero variance: S = 0
        for j in range(N_STATE):
            ekf.P[i * N_STATE + j] = 0.0
            ekf.P[j * N_STATE + i] = 0.0
    _numeric_refusal(ekf, PoseSample(10, (1.1, 2.0, 0.0), (0.0, 0.0, 0.5), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    # a finite P and a sane pose still fuse afterwards
    ekf.P[NORTH * N_STATE + NORTH] = ekf.P[EAST * N_STATE + EAST] = ekf.P[YAW * N_STATE + YAW] = 0.01
    assert ekf.update_pose(PoseSample(20, (1.1, 2.0, 0.0), (0.0, 0.0, 0.5))) is True and ekf.updates == 1


def test_wheel_speed_mapping_round_trip_and_saturation():
    left, right = wheel_speeds(0.4, 0.5, 0.3, 0.05)
    speed, yaw_rate = body_twist(left, right, 0.3, 0.05)
    assert abs(speed - 0.4) < 1e-12 and abs(yaw_rate - 0.5) < 1e-12
    assert left > right            # positive yaw rate turns right (FRD): left wheel faster
    l2, r2 = wheel_speeds(2.0, 3.0, 0.3, 0.05, max_wheel_radps=10.0)
    assert max(abs(l2), abs(r2)) <= 10.0 + 1e-12
    assert abs(l2 / r2 - (2.0 + 0.45) / (2.0 - 0.45)) < 1e-9   # curvature kept


def test_pid_anti_windup():
    pid = Pid(1.0, ki=10.0, output_limit=1.0)
    for k in range(100):
        u = pid.update(5.0, k * 10000)
    assert u == 1.0
    assert pid.integral < 1.0      # integral frozen while saturated
    assert pid.update(-0.5, 100 * 10000) < 0.0


def test_follower_turns_toward_and_reaches_waypoints():
    f = WaypointFollower([(1.0, 0.0), (1.0, 1.0)])
    cmd = f.update(0.0, 0.0, 0.0, 0)
    assert cmd.speed_body_mps > 0.3 and abs(cmd.yaw_rate_radps) < 1e-9
    cmd = f.update(0.0, 0.0, math.pi, 10000)          # facing away: turn in place
    assert cmd.speed_body_mps == 0.0
    f.update(0.95, 0.0, 0.0, 20000)                   # inside the 0.15 m radius
    assert f.index == 1
    cmd = f.update(1.0, 0.05, 0.0, 30000)             # next way-point is east: turn right
    assert cmd.yaw_rate_radps > 0.0
    f.update(1.0, 0.9, 1.57, 40000)
    assert f.done and f.update(1.0, 0.9, 1.57, 50000).speed_body_mps == 0.0


def golden_planar_ekf():
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.1, -0.1, 0.0), (0.0, 0.0, 0.2)))
    t = 0
    out = []
    for k in range(60):
        t += 10000
        ekf.predict(ImuSample(t, 10000, (0.02 + 0.001 * k, 0.003, -0.098), (0.0, 0.0, 0.004)))
        if k % 10 == 9:
            ekf.update_pose(PoseSample(t, (0.002 * k, 0.001 * k, 0.0), (0.0, 0.0, 0.2 + 0.003 * k)))
            out.append(list(ekf.x))
    out.append(ekf.P)
    return out


def test_follower_reverses_to_backward_waypoint():
    f = WaypointFollower([(0.0, 0.0, -1)])
    cmd = f.update(1.0, 0.0, 0.0, 0)            # way-point straight behind a north-facing robot
    assert cmd.speed_body_mps < -0.1 and abs(cmd.yaw_rate_radps) < 1e-9
    try:
        WaypointFollower([(0.0, 0.0, 2)])
    except ValueError:
        return
    raise AssertionError("direction 2 accepted")
