"""The grading loop's real parts (issue 9): INS + 15-state ES-EKF as the runtime's estimator,
track motors through the simulated VESCs over ptys, and the int8 FCN through the policy
pipeline (LiteRT and the pure kernel). Seeded; no test depends on the weights' values."""
import copy
import math
import os

import numpy as np
import pytest

from harness.grading.episode import (DEFAULTS, EskfPoseEstimator, ExpertDecider, GradingEpisode, eskf_config,
                                     noise_config)
from harness.rng import RunRandom
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.planar_ekf import PlanarEkf


def _cfg(**kw):
    cfg = copy.deepcopy(DEFAULTS)
    cfg.update(kw)
    return cfg


def _episode_estimator(noise="sensor_fusion"):
    imu_cfg, aiding_cfg = noise_config(_cfg(noise=noise))
    return EskfPoseEstimator(eskf_config(imu_cfg, aiding_cfg))


def _drive_straight(est, n_imu=200, yaw_rad=0.3, speed_mps=0.2, pitch_rad=0.0):
    """Feed a level, constant-speed, straight run (IMU 100 Hz, pose 10 Hz) into ``est``."""
    g = 9.80665
    dt_us = 10000
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    for k in range(n_imu + 1):
        t = k * dt_us
        if k % 10 == 0:
            d = speed_mps * t * 1e-6
            est.update_pose(PoseSample(t, (d * c, d * s, 0.0), (0.0, pitch_rad, yaw_rad),
                                       cov_pos_m2=[0.05 ** 2] * 3, cov_att_rad2=[math.radians(2.0) ** 2] * 3))
        if k < n_imu:
            est.predict(ImuSample(t + dt_us, dt_us, (0.0, 0.0, -g * dt_us * 1e-6), (0.0, 0.0, 0.0)))


# ------------------------------------------------------------------ ES-EKF in the loop
def test_eskf_exposes_planar_pose_and_its_3x3_covariance():
    est = _episode_estimator()
    assert not est.initialized
    _drive_straight(est)
    assert est.initialized and est.counters()["updates"] == 20      # the first pose initialises
    nav = est.nav_state()
    assert nav.pos_ned_m[0] == pytest.approx(0.4 * math.cos(0.3), abs=0.1)
    assert nav.euler_rad[2] == pytest.approx(0.3, abs=0.05)
    cov = np.asarray(est.pose_covariance()).reshape(3, 3)
    assert np.allclose(cov, cov.T) and np.all(np.linalg.eigvalsh(cov) > 0.0)
    # level attitude: the (north, east, yaw) block is the ESKF's (dp_n, dp_e, dpsi_d) block
    s6 = np.asarray(est.eskf.pose_covariance()).reshape(6, 6)
    assert np.allclose(cov, s6[np.ix_([0, 1, 5], [0, 1, 5])], rtol=1e-3, atol=1e-6)   # pitch ~ 0
    assert len(est.pose_sigma()) == 3


def test_eskf_pose_covariance_maps_the_nav_frame_attitude_error_to_yaw_when_pitched():
    est = _episode_estimator()
    _drive_straight(est, pitch_rad=math.radians(20.0))
    s6 = np.asarray(est.eskf.pose_covariance()).reshape(6, 6)
    _, pitch, yaw = est.nav_state().euler_rad
    t = math.tan(pitch)
    jac = np.zeros((3, 6))
    jac[0, 0] = jac[1, 1] = 1.0
    jac[2, 3:6] = (t * math.cos(yaw), t * math.sin(yaw), 1.0)
    assert np.allclose(np.asarray(est.pose_covariance()).reshape(3, 3), jac @ s6 @ jac.T, rtol=1e-9, atol=1e-15)
    assert abs(pitch) > math.radians(10.0)


def test_eskf_eq1_pose_samples_follow_the_filter_covariance():
    est = _episode_estimator()
    _drive_straight(est)
    draws = np.asarray(est.sample_poses(4000, np.random.default_rng(5)))     # ag2u eq. 1
    x = est.nav_state()
    assert draws.shape == (4000, 3)
    assert np.allclose(draws.mean(axis=0), [x.pos_ned_m[0], x.pos_ned_m[1], x.euler_rad[2]],
                       atol=4 * np.sqrt(np.diag(np.asarray(est.pose_covariance()).reshape(3, 3)) / 4000))
    emp = np.cov(draws.T)
    ref = np.asarray(est.pose_covariance()).reshape(3, 3)
    assert np.allclose(np.diag(emp), np.diag(ref), rtol=0.12)


def test_eskf_bad_samples_are_counted_and_leave_the_filter_unchanged():
    cfg = _cfg(estimator="eskf", max_legs=1)
    ep = GradingEpisode(cfg, RunRandom(4))
    ep.runtime.run(ep.clock, 300000)
    est = ep.runtime.estimator
    assert isinstance(est, EskfPoseEstimator) and est.initialized
    before = est.eskf.get_state()
    rejected = ep.runtime.rejected_samples
    t = est.eskf.time_us
    ep.runtime.on_imu(ImuSample(t, 10000, (float("nan"), 0.0, -0.098), (0.0, 0.0, 0.0)))   # NaN
    ep.runtime.on_imu(ImuSample(t - 5000, 10000, (0.0, 0.0, -0.098), (0.0, 0.0, 0.0)))     # out of order
    ep.runtime.on_pose(PoseSample(t, (1.0, 1.0, 0.0), (0.0, 0.0, 0.0), cov_pos_m2=[-1.0] * 3))  # bad variance
    ep.runtime._predict(t)
    ep.runtime._aiding(t)
    assert ep.runtime.rejected_samples == rejected + 3
    assert est.eskf.get_state()["P"] == before["P"]
    assert est.eskf.get_state()["pos_ned_m"] == before["pos_ned_m"]
    ep.close()


def test_noise_less_poses_without_variance_are_fused_by_the_eskf():
    """The noise-less scenario's poses carry zero covariance, which the ESKF itself refuses."""
    ep = GradingEpisode(_cfg(estimator="eskf", noise="noise_less"), RunRandom(2))
    ep.runtime.run(ep.clock, 1000000)
    c = ep.runtime.estimator.counters()
    assert c["updates"] >= 9 and c["rejected"] == 0 and ep.runtime.rejected_samples == 0
    assert math.dist(ep.estimated_pose()[:2], ep.true_pose()[:2]) < 1e-3
    ep.close()


@pytest.mark.parametrize("estimator", ["planar", "eskf"])
def test_closed_loop_grades_on_the_estimated_pose(estimator):
    ep = GradingEpisode(_cfg(estimator=estimator, max_legs=3), RunRandom(1))
    m = ep.run(ExpertDecider(ep.expert))
    assert m["estimator"] == estimator and m["legs"] >= 1
    assert m["successful_decisions"] >= 1
    assert 0.005 < m["position_error_rms_m"] < 0.06          # sensor-fusion noise, yet tracking
    assert m["yaw_error_rms_deg"] < 3.0
    assert m["cleared_fraction"] > 0.3
    assert abs(m["volume_error_m3"]) < 1e-9
    assert isinstance(ep.runtime.estimator, EskfPoseEstimator if estimator == "eskf" else PlanarEkf)
    assert len(ep.runtime.estimator.pose_covariance()) == 9


def test_unknown_estimator_or_motors_is_a_clear_error():
    for key, value in (("estimator", "kalman"), ("motors", "can")):
        with pytest.raises(ValueError, match=key):
            GradingEpisode(_cfg(**{key: value}), RunRandom(1))


# ------------------------------------------------------------------ motors through the VESCs
def test_vesc_episode_drives_the_dozer_over_the_vesc_uart_protocol():
    ep = GradingEpisode(_cfg(motors="vesc", max_legs=1), RunRandom(1))
    paths = [p.path for p in ep.vesc.ports]
    assert all(os.path.exists(p) for p in paths)
    m = ep.run(ExpertDecider(ep.expert))
    assert m["motors"] == "vesc" and m["legs"] == 1 and m["legs"] == len(ep.legs)
    assert ep.legs[0]["reached"] and m["successful_decisions"] == 1
    v = m["vesc"]
    assert v["driver"]["commands"] > 100 and v["driver"]["faults"] == []
    assert v["driver"]["bad_replies"] == 0 and v["driver"]["refused_commands"] == 0
    assert min(v["driver"]["telemetry_counts"].values()) > 100           # GetValues replies came back
    assert all(p["crc_errors"] == 0 for p in v["sim_ports"])
    assert m["runtime"]["failsafe_engagements"] == 0
    assert ep.vesc.left.commands and ep.vesc.right.commands
    assert ep.vesc.left.mode == "released" or ep.vesc.left.mode == "brake"
    assert not any(os.path.exists(p) for p in paths)                  # ptys released by run()
    assert ep.robot.distance_m > 0.5


def test_vesc_unplugged_port_stops_the_dozer_via_the_failsafe():
    ep = GradingEpisode(_cfg(motors="vesc", max_legs=1), RunRandom(1))
    try:
        ep._drive([(ep.robot.north_m + 2.0, ep.robot.east_m, 1)], 2.0)
        speed_before = ep.robot.speed_mps
        assert speed_before > 0.1 and ep.vesc.right.mode == "rpm"
        ep.vesc.ports[0].unplug()                         # left VESC's USB cable pulled
        ep._drive([(ep.robot.north_m + 2.0, ep.robot.east_m, 1)], 3.0)
        assert ep.runtime.failsafe.engaged
        assert "link_down:left" in ep.vesc.driver.faults()
        assert ep.vesc.right.mode == "brake"              # stop command reached the right VESC
        assert ep.vesc.left.timeouts == 1 and ep.vesc.left.mode == "released"   # its own timeout fired
        assert abs(ep.robot.speed_mps) < 0.5 * speed_before
    finally:
        ep.close()


def test_scenario_grading_runs_with_vesc_motors():
    from harness.config import merge
    from harness.scenarios import grading
    from harness.scenarios.context import RunContext

    cfg = merge(grading.DEFAULTS, {"motors": "vesc", "max_legs": 1})
    m = grading.run(cfg, RunContext(1))
    assert m["motors"] == "vesc" and m["legs"] == 1 and m["estimator"] == "eskf"
