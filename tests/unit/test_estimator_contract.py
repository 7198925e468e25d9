"""Every pose estimator follows the one contract of onboard.estimators.base (issue 41, item 2).

The planar EKF and the ES-EKF adapter (EskfPoseEstimator, each built implementation of the
ESKF) get the same seeded IMU (100 Hz) and aiding-pose (10 Hz) samples; the contract's
methods must exist and return the documented shapes, and a NaN sample must raise the base
EstimatorInputError, count ``rejected`` and leave everything else as it was.
"""
import math
import random

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, NavState, PoseSample
from onboard.estimators import base
from onboard.estimators.base import (COUNTER_KEYS, POSE_DIM, POSE_EAST, POSE_NORTH, POSE_YAW, EstimatorInputError,
                                     pose_variances)
from onboard.estimators.boat_ekf import BoatEkf
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError
from onboard.estimators.eskf_pose import EskfPoseEstimator
from onboard.estimators.particle_filter import PfInputError
from onboard.estimators.planar_ekf import PlanarEkf

G = 9.80665
IMU_DT_US = 10000
POSE_EVERY = 10                 # IMU samples per aiding pose
NAN = float("nan")


def _planar():
    return PlanarEkf()


def _eskf(impl):
    return lambda: EskfPoseEstimator(None, impl)


ESTIMATORS = [("planar", _planar)] + [("eskf-" + name, _eskf(name)) for name in impl_switch.available(IMPL_MODULES)]
ESTIMATORS += [("boat", BoatEkf)]
IDS = [name for name, _make in ESTIMATORS]


@pytest.fixture(params=[make for _name, make in ESTIMATORS], ids=IDS)
def make(request):
    return request.param


def _feed(est, seed=3, n_imu=60, speed_mps=0.2, yaw_rad=0.4):
    """A seeded level straight run: pose at t=0 (initialises), IMU every 10 ms, pose every 100 ms.
    Returns the time of the last IMU sample."""
    rng = random.Random(seed)
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    t = 0
    for k in range(n_imu + 1):
        t = k * IMU_DT_US
        if k % POSE_EVERY == 0:
            d = speed_mps * t * 1e-6
            pose = PoseSample(t, (d * c + rng.gauss(0.0, 0.01), d * s + rng.gauss(0.0, 0.01), 0.0),
                              (0.0, 0.0, yaw_rad + rng.gauss(0.0, 0.01)),
                              cov_pos_m2=[0.05 ** 2] * 3, cov_att_rad2=[math.radians(2.0) ** 2] * 3)
            assert est.update_pose(pose) in (True, False)
        if k < n_imu:
            dt = IMU_DT_US * 1e-6
            imu = ImuSample(t + IMU_DT_US, IMU_DT_US, (rng.gauss(0.0, 1e-3), rng.gauss(0.0, 1e-3), -G * dt),
                            (rng.gauss(0.0, 1e-5), rng.gauss(0.0, 1e-5), rng.gauss(0.0, 1e-5)))
            assert est.predict(imu) in (True, False)
    return t


def _check_covariance(cov):
    assert isinstance(cov, list) and len(cov) == POSE_DIM * POSE_DIM
    assert all(isinstance(v, float) and math.isfinite(v) for v in cov)
    for i in range(POSE_DIM):
        assert cov[i * POSE_DIM + i] >= 0.0
        for j in range(POSE_DIM):
            assert cov[i * POSE_DIM + j] == pytest.approx(cov[j * POSE_DIM + i], rel=1e-12, abs=1e-18)


def _snapshot(est):
    return est.nav_state().as_dict(), est.pose_covariance(), dict(est.counters())


def test_error_classes_share_the_base():
    for cls in (EskfInputError, PfInputError, EstimatorInputError):
        assert issubclass(cls, EstimatorInputError) and issubclass(cls, ValueError)


def test_pose_variances_reads_the_diagonal_by_slot():
    cov = [float(10 * i + j) for i in range(POSE_DIM) for j in range(POSE_DIM)]
    assert (POSE_NORTH, POSE_EAST, POSE_YAW, POSE_DIM) == (0, 1, 2, 3)
    assert pose_variances(cov) == (0.0, 11.0, 22.0)


def test_base_is_pure():
    """base.py imports nothing (it runs on MicroPython and anything may import it)."""
    with open(base.__file__) as fh:
        lines = [line.strip() for line in fh]
    assert not [line for line in lines if line.startswith(("import ", "from "))]


def test_contract_methods_and_shapes(make):
    est = make()
    assert est.initialized is False
    _feed(est)
    assert est.initialized is True
    nav = est.nav_state()
    assert isinstance(nav, NavState)
    assert len(nav.pos_ned_m) == 3 and len(nav.vel_ned_mps) == 3 and len(nav.euler_rad) == 3
    assert nav.is_finite()
    cov = est.pose_covariance()
    _check_covariance(cov)
    var_n, var_e, var_yaw = pose_variances(cov)
    assert var_n > 0.0 and var_e > 0.0 and var_yaw > 0.0
    counters = est.counters()
    for key in COUNTER_KEYS:
        assert isinstance(counters[key], int), key
    assert counters["predicts"] == 60 and counters["updates"] >= 5 and counters["rejected"] == 0


@pytest.mark.parametrize("which", ["imu", "pose"])
def test_nan_sample_raises_base_error_and_leaves_state(make, which):
    est = make()
    t = _feed(est)
    before_nav, before_cov, before_counters = _snapshot(est)
    if which == "imu":
        bad = ImuSample(t + IMU_DT_US, IMU_DT_US, (NAN, 0.0, -G * 0.01), (0.0, 0.0, 0.0))
        call = est.predict
    else:
        bad = PoseSample(t, (NAN, 0.0, 0.0), (0.0, 0.0, 0.4), cov_pos_m2=[0.05 ** 2] * 3,
                         cov_att_rad2=[0.001] * 3)
        call = est.update_pose
    with pytest.raises(EstimatorInputError):
        call(bad)
    after_nav, after_cov, after_counters = _snapshot(est)
    assert after_nav == before_nav
    assert after_cov == before_cov
    expected = dict(before_counters)
    expected["rejected"] += 1                 # the contract: counted, nothing else changes
    assert after_counters == expected
    # and it keeps working afterwards
    good = ImuSample(t + IMU_DT_US, IMU_DT_US, (0.0, 0.0, -G * 0.01), (0.0, 0.0, 0.0))
    assert est.predict(good) is True


def test_nan_pose_before_initialisation_does_not_initialise(make):
    est = make()
    with pytest.raises(EstimatorInputError):
        est.update_pose(PoseSample(0, (0.0, NAN, 0.0), (0.0, 0.0, 0.0)))
    assert est.initialized is False
    assert est.counters()["rejected"] == 1
