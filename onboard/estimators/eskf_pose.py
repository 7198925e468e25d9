"""The INS + 15-state ES-EKF (ag2u III-C) behind the estimator contract of ``onboard.estimators.base``.

:class:`EskfPoseEstimator` wraps an ``Eskf`` of any implementation (pure, Cython, NumPy;
``onboard.estimators.eskf.make_eskf``) so the runtime can use it like the planar EKF:
``initialized``, ``predict``, ``update_pose``, ``nav_state()``, the 3x3 ``pose_covariance()``
of (north_m, east_m, yaw_rad) and ``counters()``. Also the floors of what the ES-EKF is told
(the grading episode's ``eskf_config`` uses them too). Only ``onboard`` code.
"""
import math

from onboard.core.samples import PoseSample
from onboard.estimators.base import POSE_DIM, POSE_EAST, POSE_NORTH, POSE_YAW, EstimatorInputError, pose_variances
from onboard.estimators.eskf import (DP_E, DP_N, DPSI_D, DPSI_E, DPSI_N, N_MEAS, EskfInputError, EskfNumericError,
                                     make_eskf)
from onboard.estimators.eskf_sampling import SAMPLE_EAST, SAMPLE_NORTH, SAMPLE_YAW, sample_poses

# Floors of what the ES-EKF is told (noise-less scenario: zero noise would make P singular).
MIN_POS_SIGMA_M = 1e-3
MIN_VEL_SIGMA_MPS = 1e-2
MIN_ANGLE_SIGMA_RAD = 1e-3
MIN_ACCEL_NOISE_MPS_PER_SQRT_S = 1e-3
MIN_GYRO_NOISE_RAD_PER_SQRT_S = 1e-4
MIN_ACCEL_BIAS_SIGMA_MPS2 = 1e-3
MIN_GYRO_BIAS_SIGMA_RADPS = 1e-4

# (north, east, yaw) slots of the 3x3 pose covariance (onboard.estimators.base); dp_ned / dpsi_ned
# slots of the ESKF's 6x6 pose covariance (named next to its state layout in onboard.estimators.eskf).
PLANAR_POSE_DIM = POSE_DIM
ESKF_POSE_DIM = N_MEAS
ESKF_DP_N, ESKF_DP_E = DP_N, DP_E
ESKF_DPSI_N, ESKF_DPSI_E, ESKF_DPSI_D = DPSI_N, DPSI_E, DPSI_D


class EskfPoseEstimator:
    """The INS + 15-state ES-EKF (ag2u III-C) behind the runtime's estimator contract (onboard.estimators.base).

    GroundRobotRuntime calls ``predict(ImuSample)`` (or ``predict_packed`` with its packed IMU queue),
    ``update_pose(PoseSample)``, ``nav_state()``, ``initialized`` and ``counters()``; bad input raises
    EstimatorInputError (the runtime counts it and keeps going), whether the ESKF
    refused the sample (EskfInputError) or its innovation covariance was not
    positive definite (EskfNumericError); the filter is unchanged either way.
    Zero aiding variances are floored (the noise-less scenario's poses carry zero
    covariance, which the ESKF refuses); negative or NaN ones are refused. A pose whose position or
    attitude covariance is None is fused with the ESKF's pose_pos_sigma_m / pose_att_sigma_rad for it.
    """

    def __init__(self, config=None, impl=None, consider_sigma=None):
        """consider_sigma: 1-sigma of (dp_n, dp_e, dp_d (m), dpsi_n, dpsi_e, dpsi_d (rad)) of an error the
        filter cannot observe (a constant aiding error, ``aiding_error=constant``): added to the pose
        covariance it reports and samples from, as a Schmidt-Kalman filter carries consider states
        (the fused pose inherits such an error whole: every aiding sample shares it). None: none."""
        self.eskf = make_eskf(config, impl or None)
        self.consider_sigma = [0.0] * ESKF_POSE_DIM if consider_sigma is None else [float(v) for v in consider_sigma]
        self.consider_var = [v ** 2 for v in self.consider_sigma]
        if len(self.consider_var) != ESKF_POSE_DIM or not all(v >= 0.0 for v in self.consider_sigma):
            raise ValueError("consider_sigma needs %d non-negative values, got %r" % (ESKF_POSE_DIM, consider_sigma))
        self.impl = self.eskf.impl
        self.pack_imu = self.eskf.pack_imu      # writes the packed IMU rows predict_packed reads
        self.numeric_errors = 0
        self._min_pos_var_m2 = MIN_POS_SIGMA_M ** 2
        self._min_att_var_rad2 = MIN_ANGLE_SIGMA_RAD ** 2

    @property
    def initialized(self):
        return self.eskf.initialized

    def predict(self, imu):
        try:
            return self.eskf.predict(imu)
        except EskfInputError as exc:
            raise EstimatorInputError("ESKF refused IMU sample: %s" % exc)

    def predict_many(self, imu_samples):
        """``predict`` for each sample in order, bit for bit the same; returns how many were refused
        (each counted by the ESKF, which keeps its state for them)."""
        return self.eskf.predict_many(imu_samples)

    def predict_packed(self, buf, count):
        """``predict_many`` of the first ``count`` packed samples of ``buf`` (``Eskf.predict_packed``)."""
        return self.eskf.predict_packed(buf, count)

    def update_pose(self, pose):
        if pose.cov_pos_m2 is not None or pose.cov_att_rad2 is not None:
            for var in (pose.cov_pos_m2 or ()) + (pose.cov_att_rad2 or ()):
                if not var >= 0.0:
                    self.eskf.rejected += 1
                    raise EstimatorInputError("pose sample at %d us has a negative or NaN variance" % pose.time_us)
            # a half given without covariance (None) stays None: the ESKF uses its pose_*_sigma defaults for it
            pos_var = (None if pose.cov_pos_m2 is None
                       else [max(v, self._min_pos_var_m2) for v in pose.cov_pos_m2])
            att_var = (None if pose.cov_att_rad2 is None
                       else [max(v, self._min_att_var_rad2) for v in pose.cov_att_rad2])
            pose = PoseSample(pose.time_us, pose.pos_ned_m, pose.euler_rad, cov_pos_m2=pos_var,
                              cov_att_rad2=att_var)
        try:
            return self.eskf.update_pose(pose)
        except EskfInputError as exc:
            raise EstimatorInputError("ESKF refused pose sample: %s" % exc)
        except EskfNumericError as exc:
            self.numeric_errors += 1
            raise EstimatorInputError("ESKF update skipped: %s" % exc)

    def nav_state(self):
        return self.eskf.nav_state()

    def pose_covariance6(self):
        """Flat 6x6 covariance of (dp_ned (m), dpsi_ned (rad)): the ESKF's pose block plus the
        consider variances."""
        s6 = list(self.eskf.pose_covariance())
        for i, var in enumerate(self.consider_var):
            s6[i * ESKF_POSE_DIM + i] += var
        return s6

    def pose_covariance(self):
        """3x3 covariance (flat, row-major) of (north_m, east_m, yaw_rad): Sigma of ag2u eq. 1.

        J S J^T of the 6x6 (dp_ned, dpsi_ned) block (pose_covariance6), with the Z-Y-X yaw error of a
        navigation-frame rotation dpsi: dyaw = dpsi_d + tan(pitch) (cos(yaw) dpsi_n + sin(yaw) dpsi_e).
        """
        s6 = self.pose_covariance6()
        _roll, pitch, yaw = self.eskf.nav_state().euler_rad
        t = math.tan(pitch)
        jac = [None] * PLANAR_POSE_DIM          # row of J per planar slot: {6x6 slot: coefficient}
        jac[POSE_NORTH] = {ESKF_DP_N: 1.0}
        jac[POSE_EAST] = {ESKF_DP_E: 1.0}
        jac[POSE_YAW] = {ESKF_DPSI_N: t * math.cos(yaw), ESKF_DPSI_E: t * math.sin(yaw), ESKF_DPSI_D: 1.0}
        out = [0.0] * (PLANAR_POSE_DIM * PLANAR_POSE_DIM)
        for i in range(PLANAR_POSE_DIM):
            for j in range(PLANAR_POSE_DIM):
                out[i * PLANAR_POSE_DIM + j] = sum(a * b * s6[k * ESKF_POSE_DIM + m]
                                                   for k, a in jac[i].items() for m, b in jac[j].items())
        return out

    def pose_sigma(self):
        """1-sigma of (north_m, east_m, yaw_rad)."""
        return tuple(math.sqrt(max(var, 0.0)) for var in pose_variances(self.pose_covariance()))

    def sample_poses(self, k, rng):
        """K planar poses (north_m, east_m, yaw_rad) drawn from N(x_est, Sigma) with the full 6-D
        ESKF pose covariance, attitude composed as a rotation (ag2u eq. 1, eskf_sampling)."""
        draws = sample_poses(self.eskf.nav_state(), self.pose_covariance6(), k, rng)
        return [(d[SAMPLE_NORTH], d[SAMPLE_EAST], d[SAMPLE_YAW]) for d in draws]

    def counters(self):
        out = dict(self.eskf.counters())
        out["numeric_errors"] = self.numeric_errors
        out["impl"] = self.impl
        return out
