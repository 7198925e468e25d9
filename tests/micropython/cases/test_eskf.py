"""Strapdown INS + 15-state ESKF, pure path: runs under CPython (pytest) and inside MicroPython.

Kept short (MicroPython under node runs a predict in ~2 ms and an update in ~10 ms).
"""
import math

from onboard.core.angles import wrap_pi
from onboard.core.rotations import d2e, e2d
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import (ATT, BACC, BGYR, N_STATE, POS, VEL, Eskf, EskfInputError,
                                     attitude_residual, make_config)
from onboard.estimators.eskf_sampling import SamplingError, sample_poses
from onboard.estimators.ins import Strapdown

G = 9.80665
DT_US = 10000
DT_S = 0.01
REST_DVEL = (0.0, 0.0, -G * DT_S)      # a level IMU at rest measures -g along body z


def _filter(config=None):
    f = Eskf(config)
    f.initialize(0, (1.0, 2.0, -0.5), (0.0, 0.0, 0.0), (0.01, -0.02, 0.3))
    return f


def _run(f, n, t0=0, dvel=REST_DVEL, dang=(0.0, 0.0, 0.0)):
    t = t0
    for _ in range(n):
        t += DT_US
        f.predict(ImuSample(t, DT_US, dvel, dang))
    return t


def _same_state(a, b, skip=("rejected",)):
    for key in a:
        if key in skip:
            continue
        if a[key] != b[key]:
            return False
    return True


class _Fake:
    """A duck-typed sample with whatever fields a test wants (to get past the sample classes' checks)."""

    def __init__(self, **fields):
        for k in fields:
            setattr(self, k, fields[k])


# ---------------------------------------------------------------- strapdown (ag2u eqs. 4a-4c)

def test_strapdown_at_rest_stays_put():
    ins = Strapdown((1.0, 2.0, 3.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.7))
    for _ in range(100):
        ins.step(DT_S, REST_DVEL, (0.0, 0.0, 0.0))
    for i in range(3):
        assert abs(ins.vel_ned_mps[i]) < 1e-12
        assert abs(ins.pos_ned_m[i] - (1.0, 2.0, 3.0)[i]) < 1e-12
    assert abs(ins.euler_rad()[2] - 0.7) < 1e-12


def test_strapdown_yaw_increments_add_up():
    ins = Strapdown()
    for _ in range(50):
        ins.step(DT_S, REST_DVEL, (0.0, 0.0, 0.01))
    assert abs(ins.euler_rad()[2] - 0.5) < 1e-12


def test_strapdown_velocity_uses_updated_attitude():
    # eq. 4b rotates q_v with D_b^n[k] (after eq. 4a), eq. 4c integrates v[k]
    ins = Strapdown()
    dang = (0.0, 0.0, math.pi / 2)
    ins.step(DT_S, (1.0, 0.0, -G * DT_S), dang)
    assert abs(ins.vel_ned_mps[0]) < 1e-12 and abs(ins.vel_ned_mps[1] - 1.0) < 1e-12
    assert abs(ins.pos_ned_m[1] - 1.0 * DT_S) < 1e-15


def test_strapdown_compensates_biases():
    ins = Strapdown()
    ins.accel_bias_mps2 = [0.1, -0.2, 0.3]
    ins.gyro_bias_radps = [0.0, 0.0, 0.05]
    for _ in range(100):
        ins.step(DT_S, (0.1 * DT_S, -0.2 * DT_S, (0.3 - G) * DT_S), (0.0, 0.0, 0.05 * DT_S))
    for i in range(3):
        assert abs(ins.vel_ned_mps[i]) < 1e-12
    assert abs(ins.euler_rad()[2]) < 1e-12


# ---------------------------------------------------------------- ESKF

def test_attitude_residual_is_measured_minus_ins_and_wraps_near_pi():
    d_ins = e2d((0.0, 0.0, math.radians(179.0)))
    r = attitude_residual(d_ins, (0.0, 0.0, math.radians(-179.0)))
    assert abs(r[2] - math.radians(2.0)) < 1e-12
    assert abs(r[0]) < 1e-12 and abs(r[1]) < 1e-12
    r = attitude_residual(e2d((0.0, 0.0, 0.2)), (0.0, 0.0, 0.25))
    assert abs(r[2] - 0.05) < 1e-12


def test_update_across_pi_moves_the_short_way():
    f = Eskf()
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, math.radians(179.0)))
    assert f.update_pose(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, math.radians(-179.0))))
    yaw = f.nav_state().euler_rad[2]
    assert abs(abs(yaw) - math.pi) < math.radians(1.0)


def test_update_pulls_towards_measurement_and_shrinks_covariance():
    f = _filter()
    t = _run(f, 10)
    p_before = f.covariance()[POS * N_STATE + POS]
    assert f.update_pose(PoseSample(t, (1.05, 2.0, -0.5), (0.01, -0.02, 0.3)))
    nav = f.nav_state()
    assert 1.0 < nav.pos_ned_m[0] < 1.05
    assert f.covariance()[POS * N_STATE + POS] < p_before
    assert f.updates == 1 and f.predicts == 10


def test_covariance_symmetric_with_positive_diagonal():
    f = _filter()
    t = 0
    for k in range(3):
        t = _run(f, 5, t, (0.01, 0.002, -G * DT_S + 0.001), (0.001, -0.002, 0.003))
        f.update_pose(PoseSample(t, (1.0 + 0.01 * k, 2.0, -0.5), (0.01, -0.02, 0.3 + 0.01 * k)))
    P = f.covariance()
    for i in range(N_STATE):
        assert P[i * N_STATE + i] > 0.0
        for j in range(N_STATE):
            assert P[i * N_STATE + j] == P[j * N_STATE + i]


def test_ten_sigma_outlier_is_gated_counted_and_not_fused():
    f = _filter()
    t = _run(f, 5)
    before = f.get_state()
    sigma = math.sqrt(f.covariance()[POS * N_STATE + POS] + 0.05 ** 2)
    fused = f.update_pose(PoseSample(t, (1.0 + 10.0 * sigma, 2.0, -0.5), (0.01, -0.02, 0.3)))
    assert fused is False
    assert f.gated == 1 and f.updates == 0
    assert f.last_nis > 90.0
    assert _same_state(before, f.get_state(), skip=("gated", "last_nis"))


def _locked_out(config):
    """A filter fed 10-sigma-off poses (a jumped aiding source) after one fused pose: returns
    (filter, results of the outlier updates, time of the last one, bias estimates before them)."""
    f = _filter(config)
    t = _run(f, 5)
    assert f.update_pose(PoseSample(t, (1.0, 2.0, -0.5), (0.01, -0.02, 0.3)))
    biases = (f.accel_bias_mps2, f.gyro_bias_radps)
    results = []
    for _ in range(3):
        t = _run(f, 5, t)
        results.append(f.update_pose(PoseSample(t, (4.0, 2.5, -0.5), (0.01, -0.02, 0.6))))
    return f, results, t, biases


def test_lost_filter_restarts_from_the_pose_after_gate_reset_s():
    # poses at 50, 100, 150, 200 ms: the first fuses; the outliers at 100 and 150 ms are gated
    # (50 and 100 ms since the last fused pose), the one at 200 ms is 150 ms >= 0.15 s: restart
    f, results, t, biases = _locked_out({"gate_reset_s": 0.15, "reset_vel_sigma_mps": 0.7})
    assert results == [False, False, True]
    assert f.gated == 3 and f.updates == 1 and f.resets == 1 and f.counters()["resets"] == 1
    nav = f.nav_state()
    assert list(nav.pos_ned_m) == [4.0, 2.5, -0.5] and list(nav.vel_ned_mps) == [0.0, 0.0, 0.0]
    assert abs(wrap_pi(nav.euler_rad[2] - 0.6)) < 1e-12
    P = f.covariance()
    assert abs(P[VEL * N_STATE + VEL] - 0.49) < 1e-15
    assert abs(P[POS * N_STATE + POS] - 0.05 ** 2) < 1e-15          # init_pos_sigma_m
    assert biases[0] != (0.0, 0.0, 0.0)                  # the fused pose moved the bias estimates
    assert (f.accel_bias_mps2, f.gyro_bias_radps) == biases and f.last_fused_us == t     # kept
    # the IMU stream goes on where it was: an old sample is still refused, the next one runs
    try:
        f.predict(ImuSample(t, DT_US, REST_DVEL, (0.0, 0.0, 0.0)))
        assert False, "no exception"
    except EskfInputError:
        pass
    t = _run(f, 5, t)
    assert f.update_pose(PoseSample(t, (4.0, 2.5, -0.5), (0.01, -0.02, 0.6)))
    assert f.updates == 2 and f.resets == 1


def test_lost_filter_restart_can_be_disabled():
    f, results, _, _ = _locked_out({"gate_reset_s": 0.0})
    assert results == [False, False, False]
    assert f.gated == 3 and f.resets == 0
    assert abs(f.nav_state().pos_ned_m[0] - 1.0) < 0.01


def test_gating_can_be_disabled():
    f = _filter({"gate_nis": 0.0})
    t = _run(f, 5)
    assert f.update_pose(PoseSample(t, (3.0, 2.0, -0.5), (0.01, -0.02, 0.3)))
    assert f.gated == 0


def test_nan_imu_raises_and_leaves_state_unchanged():
    f = _filter()
    t = _run(f, 3)
    before = f.get_state()
    nan = float("nan")
    for bad in (ImuSample(t + DT_US, DT_US, (nan, 0.0, 0.0), (0.0, 0.0, 0.0)),
                ImuSample(t + DT_US, DT_US, REST_DVEL, (0.0, float("inf"), 0.0))):
        try:
            f.predict(bad)
            assert False, "no exception"
        except EskfInputError:
            pass
    assert f.rejected == 2
    assert _same_state(before, f.get_state())


def test_wrong_sizes_and_bad_times_raise_and_leave_state_unchanged():
    f = _filter()
    t = _run(f, 3)
    before = f.get_state()
    bad_imus = (_Fake(time_us=t + DT_US, dt_us=DT_US, dvel_body_mps=(0.0, 0.0), dang_body_rad=(0.0, 0.0, 0.0)),
                _Fake(time_us=t + DT_US, dt_us=DT_US, dvel_body_mps=REST_DVEL, dang_body_rad=(0.0,) * 4),
                _Fake(time_us=t + DT_US, dt_us=0, dvel_body_mps=REST_DVEL, dang_body_rad=(0.0, 0.0, 0.0)),
                _Fake(time_us=t + DT_US, dt_us=5000000, dvel_body_mps=REST_DVEL, dang_body_rad=(0.0, 0.0, 0.0)),
                _Fake(time_us=t, dt_us=DT_US, dvel_body_mps=REST_DVEL, dang_body_rad=(0.0, 0.0, 0.0)),
                _Fake(time_us=t + DT_US, dt_us=DT_US, dvel_body_mps=REST_DVEL))
    for bad in bad_imus:
        try:
            f.predict(bad)
            assert False, "no exception"
        except EskfInputError:
            pass
    bad_poses = (_Fake(time_us=t, pos_ned_m=(1.0, 2.0), euler_rad=(0.0, 0.0, 0.0)),
                 _Fake(time_us=t, pos_ned_m=(1.0, 2.0, 0.0), euler_rad=(0.0, float("nan"), 0.0)),
                 PoseSample(t, (1.0, 2.0, 0.0), (0.0, 0.0, 0.0), cov_pos_m2=(0.01, -1.0, 0.01)),
                 PoseSample(t, (1.0, 2.0, 0.0), (0.0, 0.0, 0.0), cov_att_rad2=(0.01, 0.01, float("nan"))))
    for bad in bad_poses:
        try:
            f.update_pose(bad)
            assert False, "no exception"
        except EskfInputError:
            pass
    assert f.rejected == len(bad_imus) + len(bad_poses)
    assert _same_state(before, f.get_state())


def test_unknown_or_bad_setting_raises():
    for cfg in ({"no_such_key": 1.0}, {"init_pos_sigma_m": [0.1, 0.1]}, {"pose_pos_sigma_m": [0.0, 0.1, 0.1]},
                {"accel_noise_mps_per_sqrt_s": -1.0}):
        try:
            make_config(cfg)
            assert False, "no exception for %r" % (cfg,)
        except ValueError:
            pass


def test_first_pose_initialises_and_imu_before_is_skipped():
    f = Eskf()
    assert f.predict(ImuSample(DT_US, DT_US, REST_DVEL, (0.0, 0.0, 0.0))) is False
    assert f.skipped == 1
    assert f.update_pose(PoseSample(DT_US, (4.0, 5.0, 6.0), (0.0, 0.0, 1.0)))
    nav = f.nav_state()
    assert nav.pos_ned_m == (4.0, 5.0, 6.0)
    assert abs(nav.euler_rad[2] - 1.0) < 1e-12
    assert f.predict(ImuSample(2 * DT_US, DT_US, REST_DVEL, (0.0, 0.0, 0.0)))


def test_aiding_dropout_then_recovers_without_gating():
    f = _filter()
    t = _run(f, 200, 0, (0.02 * DT_S, 0.0, -G * DT_S), (0.0, 0.0, 0.0))   # 2 s without aiding
    nav = f.nav_state()
    # the estimate drifted (0.04 m); the grown covariance lets the next pose in
    assert f.update_pose(PoseSample(t, (1.0, 2.0, -0.5), (0.01, -0.02, 0.3)))
    assert abs(f.nav_state().pos_ned_m[0] - 1.0) < abs(nav.pos_ned_m[0] - 1.0)


def test_nav_state_dead_reckons_to_now():
    f = _filter()
    f.set_state(dict(f.get_state(), vel_ned_mps=[1.0, 0.0, 0.0]))
    nav = f.nav_state(500000)
    assert nav.time_us == 500000
    assert abs(nav.pos_ned_m[0] - 1.5) < 1e-12


# ---------------------------------------------------------------- eq. 1 sampling

class _Lcg:
    """Tiny deterministic generator with random() (what MicroPython's random offers)."""

    def __init__(self, seed):
        self.s = seed

    def random(self):
        self.s = (1103515245 * self.s + 12345) % 2147483648
        return (self.s + 0.5) / 2147483648.0


def test_sample_poses_spread_matches_covariance():
    cov = [0.0] * 36
    for i, v in enumerate((0.04, 0.01, 0.0, 1e-4, 1e-4, 0.01)):
        cov[i * 6 + i] = v
    x = [1.0, 2.0, 3.0, 0.0, 0.0, math.radians(179.0)]
    draws = sample_poses(x, cov, 400, _Lcg(7))
    assert len(draws) == 400
    n = [d[0] for d in draws]
    mean = sum(n) / len(n)
    var = sum((v - mean) ** 2 for v in n) / len(n)
    assert abs(mean - 1.0) < 0.03 and 0.03 < var < 0.05
    assert all(d[2] == 3.0 for d in draws)                 # zero variance: no spread
    crossed = 0
    for d in draws:                  # yaw composed as a rotation: near 179 deg, across +-pi as needed
        assert abs(wrap_pi(d[5] - x[5])) < 0.5
        if d[5] < 0.0:
            crossed += 1
    assert crossed > 50


def test_sample_poses_rejects_bad_covariance():
    for cov in ([1.0] * 35, [float("nan")] + [0.0] * 35):
        try:
            sample_poses([0.0] * 6, cov, 3, _Lcg(1))
            assert False, "no exception"
        except SamplingError:
            pass


# ---------------------------------------------------------------- golden numbers (CPython == MicroPython)

def golden_strapdown():
    ins = Strapdown((0.5, -0.2, 0.1), (0.1, 0.0, 0.0), (0.02, -0.01, 1.0))
    for k in range(40):
        ins.step(DT_S, (0.002 * math.sin(0.1 * k), 0.001, -G * DT_S + 0.0005),
                 (0.001, -0.0005 * math.cos(0.2 * k), 0.002))
    return [ins.pos_ned_m, ins.vel_ned_mps, ins.D_ned_to_body]


def golden_eskf_cycle():
    f = _filter()
    t = 0
    out = []
    for k in range(2):
        t = _run(f, 8, t, (0.003, -0.001, -G * DT_S + 0.0002), (0.0004, 0.0001, 0.002))
        f.update_pose(PoseSample(t, (1.01 + 0.02 * k, 2.0, -0.49), (0.015, -0.02, 0.32)))
        out.append(f.last_nis)
    st = f.get_state()
    P = st["P"]
    out += st["pos_ned_m"] + st["vel_ned_mps"] + st["D_ned_to_body"]
    out += st["accel_bias_mps2"] + st["gyro_bias_radps"]
    out += [P[i * N_STATE + i] for i in range(N_STATE)]
    out += [P[POS * N_STATE + VEL], P[ATT * N_STATE + BGYR + 2], P[VEL * N_STATE + BACC]]
    return out


def golden_sample_poses():
    f = _filter()
    _run(f, 5)
    return sample_poses(f.nav_state(), f.pose_covariance(), 3, _Lcg(3))


def golden_residual_d2e():
    return [attitude_residual(e2d((0.1, -0.2, 3.1)), (0.12, -0.18, -3.1)), d2e(e2d((0.3, 0.2, -2.0)))]
