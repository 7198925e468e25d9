"""Trajectory generation (slerp legs, ag2u Algorithm 1 done exactly), clean increments (Algorithm 2),
and the error models of ag2u eqs. 10-13, plus eq. 1 sampling against the filter's covariance."""
import math
import random

import numpy as np
import pytest

from harness.sim.sensors.ins_errors import (ImuErrors, aiding_pose, initial_conditions, noise_setting,
                                        perturb_attitude)
from harness.sim.trajectory import TrajectoryError, dozer_legs, generate, rotvec_of_dcm_array, slerp_array
from onboard.core.rotations import (dcm_mul, dcm_to_quat, dcm_transpose, euler_to_dcm, quat_angle_between,
                                    quat_from_euler, quat_slerp, quat_to_rotvec)
from onboard.core.samples import NavState
from onboard.estimators.eskf import make_eskf
from onboard.estimators.eskf_sampling import SamplingError, sample_poses
from onboard.estimators.ins import Strapdown


def test_slerp_matches_core_slerp_and_has_constant_rate():
    q0 = quat_from_euler(0.1, -0.2, 3.0)
    q1 = quat_from_euler(-0.1, 0.15, -2.9)       # across yaw = +-pi: the short arc
    s = np.linspace(0.0, 1.0, 21)
    qs = slerp_array(q0, q1, s)
    for k, sk in enumerate(s):
        ref = quat_slerp(q0, q1, float(sk))
        assert np.abs(qs[k] - np.array(ref)).max() < 1e-12
    steps = [quat_angle_between(tuple(qs[k]), tuple(qs[k + 1])) for k in range(20)]
    assert max(steps) - min(steps) < 1e-12                      # uniform angular steps
    total = quat_angle_between(q0, q1)
    assert total < math.radians(60.0)                            # short arc, not the long way round
    assert sum(steps) == pytest.approx(total, rel=1e-9)


def test_legs_are_straight_lines_ending_on_the_poses():
    legs = [[0, 0, 0, 0, 0, 0, 0], [4.0, 3.0, -0.5, 2.0, 5.0, 30.0, 5.0], [4.0, 3.0, -0.5, 0, 0, 120.0, 2.0]]
    for profile in ("linear", "smooth"):
        tr = generate(legs, 100, profile)
        assert len(tr) == 701 and tr.duration_s == pytest.approx(7.0)
        k_end = tr.index_at(5000000)
        assert np.allclose(tr.pos_ned_m[k_end], [4.0, 3.0, -0.5])
        assert np.allclose(np.degrees(tr.euler_rad[k_end]), [2.0, 5.0, 30.0])
        seg = tr.pos_ned_m[: k_end + 1]
        direction = np.array([4.0, 3.0, -0.5]) / np.linalg.norm([4.0, 3.0, -0.5])
        off_line = seg - np.outer(seg @ direction, direction)
        assert np.abs(off_line).max() < 1e-12
        assert np.allclose(tr.pos_ned_m[k_end:], [4.0, 3.0, -0.5])   # turning in place
    smooth = generate(legs, 100, "smooth")
    assert np.abs(smooth.vel_ned_mps[1]).max() < 1e-3            # starts from rest
    with pytest.raises(TrajectoryError):
        generate([[0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0.015]], 100)   # not a whole number of samples
    with pytest.raises(TrajectoryError):
        generate([[0, 0, 0, 0, 0, 0, 0]], 100)
    with pytest.raises(TrajectoryError):
        generate([[0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 1.0]], 100, "jerky")


@pytest.mark.parametrize("gyro, pos_tol_m, att_tol_deg", [("euler", 1e-6, 1e-9), ("rotvec", 1e-3, 0.01)])
def test_clean_increments_reconstruct_through_the_strapdown(gyro, pos_tol_m, att_tol_deg):
    tr = generate(dozer_legs(40.0), 100)
    dvel, dang = tr.clean_increments(gyro_increments=gyro)
    ins = Strapdown(tr.pos_ned_m[0], tr.vel_ned_mps[0], tr.euler_rad[0])
    worst_p = worst_a = 0.0
    for k in range(1, len(tr)):
        ins.step(0.01, dvel[k - 1], dang[k - 1])
        if k % 100 == 0:
            worst_p = max(worst_p, np.linalg.norm(np.array(ins.pos_ned_m) - tr.pos_ned_m[k]))
            R = np.array(ins.R_body_to_ned()).reshape(3, 3)
            rel = rotvec_of_dcm_array((R.T @ tr.R_body_to_ned[k])[None])[0]
            worst_a = max(worst_a, math.degrees(np.linalg.norm(rel)))
    assert worst_p < pos_tol_m
    assert worst_a < att_tol_deg


def test_rotvec_and_euler_increments_differ_only_at_second_order():
    tr = generate(dozer_legs(40.0), 100)
    _, de = tr.clean_increments(gyro_increments="euler")
    _, dr = tr.clean_increments(gyro_increments="rotvec")
    mag = np.linalg.norm(dr, axis=1)
    assert np.all(np.linalg.norm(de - dr, axis=1) <= mag * mag + 1e-15)
    with pytest.raises(TrajectoryError):
        tr.clean_increments(gyro_increments="quaternion")


def test_imu_error_model_eq10_statistics():
    rng = np.random.default_rng(4)
    dt = 0.01
    err = ImuErrors([0.1, -0.2, 0.3], [0.01, 0.0, -0.02], 0.05, 0.002)
    n = 20000
    dv, da = err.apply(np.zeros((n, 3)), np.zeros((n, 3)), dt, rng)
    assert np.allclose(dv.mean(axis=0) / dt, [0.1, -0.2, 0.3], atol=4 * 0.05 * math.sqrt(dt / n) / dt)
    assert np.allclose(dv.std(axis=0), 0.05 * math.sqrt(dt), rtol=0.03)
    assert np.allclose(da.std(axis=0), 0.002 * math.sqrt(dt), rtol=0.03)
    drawn = ImuErrors.draw(noise_setting("sensor_fusion")["imu"], np.random.default_rng(1))
    assert np.all(np.abs(drawn.accel_bias_mps2) < 0.25)
    zero = ImuErrors.draw(noise_setting("noise_less")["imu"], np.random.default_rng(1))
    dv0, da0 = zero.apply(np.ones((5, 3)), np.ones((5, 3)), dt, rng)
    assert np.array_equal(dv0, np.ones((5, 3))) and np.array_equal(da0, np.ones((5, 3)))


def test_attitude_errors_compose_as_rotations_eq12_eq13():
    base = (0.05, -0.1, math.radians(178.0))
    out = perturb_attitude(base, (0.0, 0.0, math.radians(5.0)))
    assert out[2] == pytest.approx(math.radians(-177.0), abs=1e-9)    # wrapped, not 183 deg
    rng = np.random.default_rng(9)
    setting = noise_setting("sensor_fusion")
    yaw_err = []
    for _ in range(3000):
        pos, euler = aiding_pose([1.0, 2.0, 3.0], base, setting, rng)
        yaw_err.append(math.remainder(euler[2] - base[2], 2 * math.pi))
    assert np.std(yaw_err) == pytest.approx(math.radians(5.0), rel=0.06)
    fixed = initial_conditions([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], (0.0, 0.0, 0.0), setting, rng, mode="fixed")
    assert fixed[0] == pytest.approx([0.05, 0.05, 0.05])
    assert fixed[1] == pytest.approx([0.01, 0.01, 0.01])
    assert np.degrees(fixed[2]) == pytest.approx([4.0, 4.0, 5.0], abs=1e-9)
    with pytest.raises(ValueError):
        initial_conditions([0.0] * 3, [0.0] * 3, (0.0, 0.0, 0.0), setting, rng, mode="sometimes")
    with pytest.raises(ValueError):
        noise_setting("hurricane")


def test_sample_poses_follow_the_filter_covariance():
    f = make_eskf(impl="pure")
    f.initialize(0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.5))
    Sigma = np.array(f.pose_covariance()).reshape(6, 6)
    nav = f.nav_state()
    draws = np.array(sample_poses(nav, f.covariance(), 4000, np.random.default_rng(2)))
    dev = draws.copy()
    dev[:, :3] -= nav.pos_ned_m
    dev[:, 3:] = [perturb_back(nav.euler_rad, d[3:]) for d in draws]
    emp = np.cov(dev.T)
    assert np.allclose(np.sqrt(np.diag(emp)), np.sqrt(np.diag(Sigma)), rtol=0.06)
    assert np.abs(dev.mean(axis=0)).max() < 4 * math.sqrt(Sigma.max() / 4000)
    same = sample_poses(list(nav.pos_ned_m) + list(nav.euler_rad), Sigma, 3, random.Random(5))
    assert len(same) == 3 and all(len(p) == 6 for p in same)
    assert sample_poses(NavState(0, (0, 0, 0), (0, 0, 0), (0, 0, 0)), np.zeros((6, 6)), 2,
                        random.Random(1)) == [[0.0] * 6, [0.0] * 6]
    with pytest.raises(SamplingError):
        sample_poses(nav, -np.eye(6), 1, random.Random(1))
    with pytest.raises(SamplingError):
        sample_poses([0.0] * 5, np.eye(6), 1, random.Random(1))


def perturb_back(euler_est, euler_sample):
    """The navigation-frame rotation vector taking the estimate to a sample (inverse of the eq. 12 composition)."""
    r_s = euler_to_dcm(*euler_sample)
    r_e = euler_to_dcm(*euler_est)
    return quat_to_rotvec(dcm_to_quat(dcm_mul(r_s, dcm_transpose(r_e))))
