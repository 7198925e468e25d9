"""The boat EKF (robotx III-C) unit by unit: the estimator contract, the model as process model, the
sparse covariance algebra against dense formulas, gating, restart, stop after a gap, and bad input."""
import math

import numpy as np
import pytest

from onboard.core.samples import ImuSample, PoseSample
from onboard.core.settings import ConfigError
from onboard.estimators.base import COUNTER_KEYS, POSE_DIM, EstimatorInputError
from onboard.estimators.boat_ekf import (EAST, N_STATE, NORTH, SURGE, SWAY, YAW, YAW_RATE, BoatEkf)
from onboard.vessel import model as vm
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample

X0 = [0.2, 0.05, 10.0, -5.0, 1.2, 0.1]


def _filter(config=None, x=X0):
    f = BoatEkf(config)
    f.initialize(0, x)
    return f


def _snapshot(f):
    return (list(f.x), list(f.P), f.counters(), f.time_us, f.initialized, list(f.thrust_n))


def test_starts_from_position_and_heading_and_follows_the_contract():
    f = BoatEkf()
    assert not f.initialized
    assert f.predict(ThrustSample(10000, 100.0, 100.0)) is False
    assert f.update_position(PositionSample(20000, (3.0, 4.0))) is False       # waits for a heading
    assert f.update_yaw_rate(YawRateSample(25000, 0.1)) is False
    assert f.update_heading(HeadingSample(30000, 0.5)) is True
    assert f.initialized and f.time_us == 30000
    assert f.x[NORTH] == 3.0 and f.x[EAST] == 4.0 and f.x[YAW] == pytest.approx(0.5) and f.x[SURGE] == 0.0
    assert f.thrust_n == [100.0, 100.0]
    c = f.counters()
    assert set(COUNTER_KEYS) <= set(c) and c["skipped"] == 3 and c["updates"] == 0
    nav = f.nav_state()
    assert nav.time_us == 30000 and nav.pos_ned_m == (3.0, 4.0, 0.0) and nav.euler_rad == pytest.approx((0.0, 0.0, 0.5))
    cov = f.pose_covariance()
    assert len(cov) == POSE_DIM * POSE_DIM and cov[0] == pytest.approx(1.0) and cov[8] == pytest.approx(0.01)
    g = BoatEkf()
    assert g.update_pose(PoseSample(0, (1.0, 2.0, 0.0), (0.0, 0.0, -0.4))) is True
    assert g.initialized and g.x[YAW] == pytest.approx(-0.4)


def test_predict_is_the_model_step_and_the_sparse_covariance_equals_dense_algebra():
    f = _filter()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N_STATE, N_STATE))
    f.P = list((a @ a.T + np.eye(N_STATE)).ravel())
    x, P = list(f.x), np.array(f.P).reshape(N_STATE, N_STATE)
    assert f.predict(ThrustSample(10000, 150.0, 90.0))
    assert f.x == vm.step(x, (150.0, 90.0), f.params, 0.01)
    F = np.array(vm.jacobian_state(x, (150.0, 90.0), f.params, 0.01)).reshape(N_STATE, N_STATE)
    Q = np.diag(f.q_density) * 0.01
    assert np.allclose(np.array(f.P).reshape(N_STATE, N_STATE), F @ P @ F.T + Q, rtol=0, atol=1e-12)


def test_long_predicts_are_split_into_model_steps():
    f = _filter()
    x = list(f.x)
    f.predict(ThrustSample(35000, 100.0, 120.0))
    for dt in (0.01, 0.01, 0.01, 0.005):
        x = vm.step(x, (100.0, 120.0), f.params, dt)
    assert f.x == pytest.approx(x, abs=1e-12) and f.time_us == 35000 and f.predicts == 1


@pytest.mark.parametrize("kind", ["position", "heading", "yaw_rate", "pose"])
def test_update_is_the_joseph_form(kind):
    f = _filter()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((N_STATE, N_STATE))
    f.P = list((0.1 * a @ a.T + 0.05 * np.eye(N_STATE)).ravel())
    x, P = np.array(f.x), np.array(f.P).reshape(N_STATE, N_STATE)
    if kind == "position":
        slots, z, r = (NORTH, EAST), [10.3, -5.2], [0.25, 0.25]
        fused = f.update_position(PositionSample(0, z, 0.25))
    elif kind == "heading":
        slots, z, r = (YAW,), [0.25], [0.0004]
        fused = f.update_heading(HeadingSample(0, z[0], 0.0004))
    elif kind == "yaw_rate":
        slots, z, r = (YAW_RATE,), [0.07], [1e-4]
        fused = f.update_yaw_rate(YawRateSample(0, z[0], 1e-4))
    else:
        slots, z, r = (NORTH, EAST, YAW), [10.3, -5.2, 0.25], [0.25, 0.25, 0.0004]
        fused = f.update_pose(PoseSample(0, (10.3, -5.2, 0.0), (0.0, 0.0, 0.25), (0.25, 0.25, 1.0),
                                         (1.0, 1.0, 0.0004)))
    assert fused
    H = np.zeros((len(slots), N_STATE))
    for i, s in enumerate(slots):
        H[i, s] = 1.0
    R = np.diag(r)
    S = H @ P @ H.T + R
    K = P @ H.T @ np.linalg.inv(S)
    y = np.array(z) - H @ x
    A = np.eye(N_STATE) - K @ H
    P_joseph = A @ P @ A.T + K @ R @ K.T
    assert np.allclose(f.x, x + K @ y, atol=1e-12)
    assert np.allclose(np.array(f.P).reshape(N_STATE, N_STATE), P_joseph, atol=1e-12)
    assert f.P == list(np.array(f.P).reshape(N_STATE, N_STATE).T.ravel())          # exactly symmetric
    assert f.last_nis == pytest.approx(float(y @ np.linalg.solve(S, y)))


def test_heading_residual_wraps_across_pi():
    f = _filter(x=[3.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert f.update_heading(HeadingSample(0, -3.1, 0.01))
    assert abs(abs(f.x[YAW]) - math.pi) < 0.1


def test_a_measurement_ahead_propagates_with_the_last_thrusts():
    f = _filter()
    f.predict(ThrustSample(10000, 200.0, 100.0))
    x = vm.step(f.x, (200.0, 100.0), f.params, 0.005)
    f.update_yaw_rate(YawRateSample(15000, 0.05, 1e6))            # huge variance: nearly no correction
    assert f.time_us == 15000
    assert f.x[NORTH] == pytest.approx(x[NORTH], abs=1e-9) and f.x[SURGE] == pytest.approx(x[SURGE], abs=1e-9)


def test_imu_yaw_rate_is_dang_over_dt():
    f = _filter()
    g = _filter()
    f.update_imu(ImuSample(0, 10000, (0.0, 0.0, -0.098), (0.0, 0.0, 0.0012)))
    g.update_yaw_rate(YawRateSample(0, 0.0012 / 0.01, g.cfg["yaw_rate_sigma_radps"] ** 2))
    assert f.x == g.x and f.P == g.P


def test_outlier_is_gated_counted_and_changes_nothing():
    f = _filter()
    before = _snapshot(f)
    assert f.update_position(PositionSample(0, (40.0, -5.0), 0.25)) is False
    assert f.gated == 1 and f.last_nis > 100.0
    assert f.x == before[0] and f.P == before[1] and f.updates == 0


def test_lost_filter_restarts_at_the_gated_fix_after_gate_reset_s():
    f = _filter({"gate_reset_s": 1.0, "reset_speed_sigma_mps": 0.7})
    f.update_heading(HeadingSample(0, 0.3, 0.01))
    results = []
    for k in range(1, 6):                                    # fixes 0.25 s apart, 60 m away
        t = k * 250000
        f.predict(ThrustSample(t, 0.0, 0.0))
        results.append(f.update_position(PositionSample(t, (70.0, 0.0), 0.25)))
    assert results == [False, False, False, True, True]       # restart at 1.0 s, then fused
    assert f.resets == 1 and f.gated == 4
    assert f.x[NORTH] == pytest.approx(70.0, abs=0.1)
    g = _filter({"gate_reset_s": 0.0})
    for k in range(1, 10):
        g.predict(ThrustSample(k * 250000, 0.0, 0.0))
        assert g.update_position(PositionSample(k * 250000, (70.0, 0.0), 0.25)) is False
    assert g.resets == 0


def test_restart_takes_yaw_from_the_last_heading():
    f = _filter({"gate_reset_s": 0.5})
    f.predict(ThrustSample(100000, 0.0, 0.0))
    f.update_heading(HeadingSample(100000, 1.0, 1.0))        # a loose heading, barely fused
    for k in range(1, 3):                                    # gated at 0.35 s, restarted at 0.6 s
        f.predict(ThrustSample(100000 + k * 250000, 0.0, 0.0))
        f.update_position(PositionSample(100000 + k * 250000, (70.0, 0.0), 0.25))
    assert f.resets == 1 and f.x[YAW] == pytest.approx(1.0) and f.x[SURGE] == 0.0 and f.x[SWAY] == 0.0
    assert f.P[SURGE * N_STATE + SURGE] == pytest.approx(1.0)


def test_a_gap_longer_than_max_gap_s_stops_the_filter_until_position_and_heading():
    f = _filter({"max_gap_s": 1.0})
    assert f.predict(ThrustSample(2000000, 10.0, 10.0)) is False
    assert not f.initialized and f.timeouts == 1
    assert f.update_position(PositionSample(2100000, (1.0, 1.0))) is False
    assert f.update_heading(HeadingSample(2200000, 0.1)) is True
    assert f.initialized and f.time_us == 2200000 and f.x[NORTH] == 1.0


@pytest.mark.parametrize("call", [
    lambda f: f.predict(ThrustSample(10000, float("nan"), 0.0)),
    lambda f: f.predict(ThrustSample(10000, 0.0, float("inf"))),
    lambda f: f.predict(ThrustSample(5000, 0.0, 0.0)),                           # not later than the filter
    lambda f: f.update_position(PositionSample(6000, (float("nan"), 0.0))),
    lambda f: f.update_position(PositionSample(6000, (1.0, 0.0), 0.0)),           # variance <= 0
    lambda f: f.update_position(PositionSample(4000, (1.0, 0.0))),                # older than the filter
    lambda f: f.update_heading(HeadingSample(6000, float("-inf"))),
    lambda f: f.update_heading(HeadingSample(6000, 0.1, -1.0)),
    lambda f: f.update_yaw_rate(YawRateSample(6000, float("nan"))),
    lambda f: f.update_yaw_rate(YawRateSample(4999, 0.1)),
    lambda f: f.update_imu(ImuSample(6000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, float("nan")))),
    lambda f: f.update_pose(PoseSample(6000, (1.0, float("nan"), 0.0), (0.0, 0.0, 0.0))),
    lambda f: f.update_pose(PoseSample(6000, (1.0, 1.0, 0.0), (0.0, 0.0, 0.0), (0.0, 1.0, 1.0))),
    lambda f: f.update_pose(PoseSample(100, (1.0, 1.0, 0.0), (0.0, 0.0, 0.0))),
])
def test_bad_input_is_rejected_counted_and_leaves_the_state(call):
    f = _filter()
    f.predict(ThrustSample(5000, 50.0, 60.0))
    x, P, counters, time_us, init, thrust = _snapshot(f)
    with pytest.raises(EstimatorInputError):
        call(f)
    assert f.x == x and f.P == P and f.time_us == time_us and f.initialized == init and f.thrust_n == thrust
    after = f.counters()
    assert after.pop("rejected") == counters.pop("rejected") + 1
    assert after == counters


def test_initialize_refuses_bad_state_and_sigmas():
    f = BoatEkf()
    with pytest.raises(EstimatorInputError):
        f.initialize(0, [0.0] * 5)
    with pytest.raises(EstimatorInputError):
        f.initialize(0, X0, [1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    assert f.rejected == 2 and not f.initialized


def test_settings_are_checked():
    assert BoatEkf({"model": {"c1": 300.0}}).params[vm.C1] == 300.0
    with pytest.raises(ConfigError, match="unknown boat EKF setting 'gnss_sigma'"):
        BoatEkf({"gnss_sigma": 1.0})
    with pytest.raises(ConfigError, match="model.c4 must be a number > 0"):
        BoatEkf({"model": {"c4": -1.0}})
    with pytest.raises(ConfigError, match="gnss_sigma_m must be a number > 0"):
        BoatEkf({"gnss_sigma_m": 0.0})


def test_noise_free_run_tracks_the_model_exactly():
    """No process or measurement noise: the filter started at the truth stays on it."""
    truth = list(X0)
    f = _filter({"yaw_noise_rad_per_sqrt_s": 0.0, "yaw_rate_noise_radps_per_sqrt_s": 0.0,
                 "pos_noise_m_per_sqrt_s": 0.0, "surge_noise_mps_per_sqrt_s": 0.0,
                 "sway_noise_mps_per_sqrt_s": 0.0}, x=truth)
    for k in range(1, 1001):
        thrust = (150.0 + 80.0 * math.sin(0.01 * k), 150.0 - 80.0 * math.sin(0.01 * k))
        truth = vm.step(truth, thrust, f.params, 0.01)
        f.predict(ThrustSample(k * 10000, *thrust))
        if k % 25 == 0:
            f.update_position(PositionSample(k * 10000, (truth[NORTH], truth[EAST]), 0.25))
        f.update_yaw_rate(YawRateSample(k * 10000, truth[YAW_RATE], 1e-4))
    assert max(abs(a - b) for a, b in zip(f.x, truth)) < 1e-9
    assert f.gated == 0 and f.updates == 40 + 1000


def test_contract_predict_with_an_imu_sample_holds_the_thrusts_and_fuses_the_gyro():
    f = _filter()
    g = _filter()
    f.predict(ThrustSample(10000, 120.0, 80.0))
    g.predict(ThrustSample(10000, 120.0, 80.0))
    assert f.predict(ImuSample(20000, 10000, (0.0, 0.0, -0.098), (0.0, 0.0, 0.0009))) is True
    g.predict(ThrustSample(20000, 120.0, 80.0))
    g.update_yaw_rate(YawRateSample(20000, 0.0009 / 0.01, g.cfg["yaw_rate_sigma_radps"] ** 2))
    assert f.x == g.x and f.P == g.P and f.predicts == 2 and f.updates == 1
    with pytest.raises(EstimatorInputError):
        f.predict(ImuSample(20000, 10000, (0.0, 0.0, -0.098), (0.0, 0.0, 0.0)))


def test_vessel_samples_is_finite_agrees_with_the_shared_check():
    from onboard.core.samples import _Sample
    values = (0.0, -1.5, 3e300, float("nan"), float("inf"), float("-inf"))
    variances = (None, 0.25, float("nan"), float("inf"))
    samples = [ThrustSample(1, a, b) for a in values for b in values]
    samples += [PositionSample(1, (a, b), v) for a in values for b in values for v in variances]
    samples += [HeadingSample(1, a, v) for a in values for v in variances]
    samples += [YawRateSample(1, a, v) for a in values for v in variances]
    assert all(s.is_finite() == _Sample.is_finite(s) for s in samples)
    assert sum(s.is_finite() for s in samples) == 9 + 9 * 2 + 3 * 2 + 3 * 2
