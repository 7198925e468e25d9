"""Planar EKF for ground robots: IMU-driven prediction, aiding-pose updates (pure Python).

State (NED horizontal plane, named slots below): north_m, east_m, yaw_rad,
speed_body_mps (forward), gyro_bias_z_radps, accel_bias_x_mps2.

Prediction integrates the IMU increments of one sample (ag2u eqs. 4a-4c reduced to
the plane: yaw from the z angle increment, forward speed from the x velocity
increment, position by Euler integration at the mid-interval heading), with the
constant-bias error model of ag2u eq. 10 as two bias states. Updates take the aiding
pose's north, east and yaw (ag2u eq. 5b restricted to the plane), with the yaw
residual wrapped to [-pi, pi). Joseph-form covariance update; Mahalanobis gating
of outliers (counted); non-finite or malformed input (a negative pose variance, an
IMU sample not later than the previous IMU sample, one whose propagation ends in a
non-finite state or covariance) raises
:class:`EstimatorInputError` and leaves the state untouched. A pose update the filter cannot
compute (its covariance P non-finite, e.g. after an overflow, the innovation covariance S singular,
or a non-finite result) raises :class:`PlanarEkfNumericError` (a subclass of it), counted in
``rejected``, state untouched. As the ES-EKF
(``onboard.estimators.eskf``, lost-filter restart), a filter that has fused no pose for
``gate_reset_s`` while poses keep arriving gated restarts from the gated pose (position
and yaw from it, speed 0 with ``reset_speed_sigma_mps``, bias estimates kept), counted
in ``resets``: a gate alone would lock a diverged filter out for good.
"""
import math

from onboard.core import linalg as la
from onboard.core.angles import wrap_pi
from onboard.core.samples import NavState
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked
from onboard.estimators.base import EstimatorInputError

# State slots (no magic indexes elsewhere).
NORTH = 0
EAST = 1
YAW = 2
SPEED = 3
GYRO_BIAS_Z = 4
ACCEL_BIAS_X = 5
N_STATE = 6
N_MEAS = 3              # north, east, yaw


class PlanarEkfNumericError(EstimatorInputError):
    """A pose update the filter cannot compute: P non-finite, S singular or a non-finite result
    (refused like bad input: counted in ``rejected``, state untouched)."""

# chi-square 99.9 % quantile for 3 degrees of freedom: gate for the pose innovation.
CHI2_3DOF_999 = 16.266

DEFAULTS = {
    "gyro_noise_rad_per_sqrt_s": 0.002,      # angle random walk
    "accel_noise_mps_per_sqrt_s": 0.05,      # velocity random walk
    "gyro_bias_walk_radps_per_sqrt_s": 1e-4,
    "accel_bias_walk_mps2_per_sqrt_s": 1e-3,
    "slip_noise_mps_per_sqrt_s": 0.02,       # unmodelled lateral/longitudinal slip of tracks
    "init_pos_sigma_m": 0.1,
    "init_yaw_sigma_rad": 0.1,
    "init_speed_sigma_mps": 0.1,
    "init_gyro_bias_sigma_radps": 0.02,
    "init_accel_bias_sigma_mps2": 0.2,
    "pose_pos_sigma_m": 0.05,                # used when a PoseSample carries no covariance
    "pose_yaw_sigma_rad": 0.09,
    "gate_chi2": CHI2_3DOF_999,              # <= 0 disables gating
    "gate_reset_s": 3.0,                     # restart from the pose after this long all gated; 0: never
    "reset_speed_sigma_mps": 1.0,            # speed sigma after such a restart (speed set to 0)
}
SETTING_RANGES = dict({key: NON_NEGATIVE for key in DEFAULTS},
                      pose_pos_sigma_m=POSITIVE, pose_yaw_sigma_rad=POSITIVE, gate_chi2=ANY_NUMBER)


class PlanarEkf:
    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "PlanarEkf")
        self.cfg = cfg
        self.x = [0.0] * N_STATE
        self.P = la.zeros(N_STATE * N_STATE)
        self.initialized = False
        self.time_us = None
        self.predicts = 0
        self.updates = 0
        self.gated = 0
        self.rejected = 0
        self.resets = 0                      # lost-filter restarts (gate_reset_s)
        self.last_fused_us = None            # time of the last pose fused (or of initialisation)
        self.last_imu_us = None              # time of the last IMU sample propagated (IMU must move forward)
        self.last_nis = None

    # ------------------------------------------------------------ set-up
    def initialize(self, pose):
        """Start from an aiding pose (position and yaw), at rest, biases zero."""
        self._check_pose(pose)
        c = self.cfg
        self.x = [pose.pos_ned_m[0], pose.pos_ned_m[1], wrap_pi(pose.euler_rad[2]), 0.0, 0.0, 0.0]
        self.P = la.diag([c["init_pos_sigma_m"] ** 2, c["init_pos_sigma_m"] ** 2,
                          c["init_yaw_sigma_rad"] ** 2, c["init_speed_sigma_mps"] ** 2,
                          c["init_gyro_bias_sigma_radps"] ** 2, c["init_accel_bias_sigma_mps2"] ** 2])
        self.time_us = pose.time_us
        self.last_fused_us = pose.time_us
        self.initialized = True

    def _restart(self, pose):
        """Lost-filter restart from a gated pose (module docstring); counted in ``resets``."""
        biases = (self.x[GYRO_BIAS_Z], self.x[ACCEL_BIAS_X])
        self.initialize(pose)
        self.x[GYRO_BIAS_Z], self.x[ACCEL_BIAS_X] = biases
        self.P[SPEED * N_STATE + SPEED] = self.cfg["reset_speed_sigma_mps"] ** 2
        self.resets += 1

    # ------------------------------------------------------------ predict
    def predict(self, imu):
        """Propagate with one ImuSample (increments over imu.dt_us)."""
        if not imu.is_finite():
            self.rejected += 1
            raise EstimatorInputError("IMU sample at %d us has non-finite values" % imu.time_us)
        if not self.initialized:
            return False
        if self.last_imu_us is not None and imu.time_us <= self.last_imu_us:
            self.rejected += 1
            raise EstimatorInputError("IMU sample at %d us is not after the previous one (%d us)"
                                      % (imu.time_us, self.last_imu_us))
        dt = imu.dt_us * 1e-6
        x = self.x
        dyaw = imu.dang_body_rad[2] - x[GYRO_BIAS_Z] * dt
        dspeed = imu.dvel_body_mps[0] - x[ACCEL_BIAS_X] * dt
        yaw_mid = x[YAW] + 0.5 * dyaw
        speed_mid = x[SPEED] + 0.5 * dspeed
        c = math.cos(yaw_mid)
        s = math.sin(yaw_mid)
        new_x = [x[NORTH] + speed_mid * c * dt,
                 x[EAST] + speed_mid * s * dt,
                 wrap_pi(x[YAW] + dyaw),
                 x[SPEED] + dspeed,
                 x[GYRO_BIAS_Z],
                 x[ACCEL_BIAS_X]]
        F = la.identity(N_STATE)
        F[NORTH * N_STATE + YAW] = -speed_mid * s * dt
        F[NORTH * N_STATE + SPEED] = c * dt
        F[EAST * N_STATE + YAW] = speed_mid * c * dt
        F[EAST * N_STATE + SPEED] = s * dt
        F[YAW * N_STATE + GYRO_BIAS_Z] = -dt
        F[SPEED * N_STATE + ACCEL_BIAS_X] = -dt
        cfg = self.cfg
        q = la.zeros(N_STATE)
        q[NORTH] = cfg["slip_noise_mps_per_sqrt_s"] ** 2 * dt * dt
        q[EAST] = q[NORTH]
        q[YAW] = cfg["gyro_noise_rad_per_sqrt_s"] ** 2 * dt
        q[SPEED] = cfg["accel_noise_mps_per_sqrt_s"] ** 2 * dt
        q[GYRO_BIAS_Z] = cfg["gyro_bias_walk_radps_per_sqrt_s"] ** 2 * dt
        q[ACCEL_BIAS_X] = cfg["accel_bias_walk_mps2_per_sqrt_s"] ** 2 * dt
        FP = la.mat_mul(F, self.P, N_STATE, N_STATE, N_STATE)
        P = la.mat_mul(FP, la.transpose(F, N_STATE, N_STATE), N_STATE, N_STATE, N_STATE)
        for i in range(N_STATE):
            P[i * N_STATE + i] += q[i]
        P = la.symmetrize(P, N_STATE)
        total = sum(new_x) + sum(P)          # NaN or infinite when any entry is (or the sum overflows)
        if not total - total == 0.0:
            # finite increments whose propagation overflows (e.g. 1e300 m/s): refused, or the covariance
            # would stay infinite and refuse every later pose
            self.rejected += 1
            raise EstimatorInputError("IMU sample at %d us propagates to a non-finite state or covariance"
                                      % imu.time_us)
        self.x = new_x
        self.P = P
        self.time_us = imu.time_us
        self.last_imu_us = imu.time_us
        self.predicts += 1
        return True

    # ------------------------------------------------------------ update
    def update_pose(self, pose):
        """Fuse an aiding PoseSample (north, east, yaw). Returns False when gated as an outlier."""
        self._check_pose(pose)
        if not self.initialized:
            self.initialize(pose)
            return True
        cfg = self.cfg
        if pose.cov_pos_m2 is not None:
            r_n, r_e = pose.cov_pos_m2[0], pose.cov_pos_m2[1]
        else:
            r_n = r_e = cfg["pose_pos_sigma_m"] ** 2
        r_yaw = pose.cov_att_rad2[2] if pose.cov_att_rad2 is not None else cfg["pose_yaw_sigma_rad"] ** 2
        x = self.x
        P = self.P
        if not la.is_finite(P):
            self._refuse(pose, "its covariance P is not finite")
        innov = [pose.pos_ned_m[0] - x[NORTH], pose.pos_ned_m[1] - x[EAST],
                 wrap_pi(pose.euler_rad[2] - x[YAW])]
        # H selects (north, east, yaw): S = P[sel, sel] + R, K = P[:, sel] S^-1
        sel = (NORTH, EAST, YAW)
        S = [0.0] * 9
        for i in range(N_MEAS):
            for j in range(N_MEAS):
                S[i * 3 + j] = P[sel[i] * N_STATE + sel[j]]
        S[0] += r_n
        S[4] += r_e
        S[8] += r_yaw
        try:
            S_inv = la.inverse(S, N_MEAS)
        except la.LinAlgError:
            S_inv = None
        if S_inv is None or not la.is_finite(S_inv):
            self._refuse(pose, "its innovation covariance S is singular")
        nis = la.dot(innov, la.mat_vec(S_inv, innov, N_MEAS, N_MEAS))
        if not la.is_finite((nis,)):
            self._refuse(pose, "its innovation's NIS is not finite")
        self.last_nis = nis
        if cfg["gate_chi2"] > 0 and nis > cfg["gate_chi2"]:
            self.gated += 1
            if cfg["gate_reset_s"] > 0 and pose.time_us - self.last_fused_us >= cfg["gate_reset_s"] * 1e6:
                self._restart(pose)
                return True
            return False
        PHt = la.columns(P, N_STATE, N_STATE, sel)
        K = la.mat_mul(PHt, S_inv, N_STATE, N_MEAS, N_MEAS)
        dx = la.mat_vec(K, innov, N_STATE, N_MEAS)
        new_x = [x[i] + dx[i] for i in range(N_STATE)]
        new_x[YAW] = wrap_pi(new_x[YAW])
        # Joseph form: P = (I - K H) P (I - K H)^T + K R K^T
        IKH = la.identity(N_STATE)
        for i in range(N_STATE):
            for j in range(N_MEAS):
                IKH[i * N_STATE + sel[j]] -= K[i * N_MEAS + j]
        A = la.mat_mul(la.mat_mul(IKH, P, N_STATE, N_STATE, N_STATE),
                       la.transpose(IKH, N_STATE, N_STATE), N_STATE, N_STATE, N_STATE)
        R = la.diag([r_n, r_e, r_yaw])
        KRKt = la.mat_mul(la.mat_mul(K, R, N_STATE, N_MEAS, N_MEAS),
                          la.transpose(K, N_STATE, N_MEAS), N_STATE, N_MEAS, N_STATE)
        new_P = la.symmetrize(la.mat_add(A, KRKt), N_STATE)
        if not (la.is_finite(new_x) and la.is_finite(new_P)):
            self._refuse(pose, "the updated state or covariance is not finite")
        self.P = new_P
        self.x = new_x
        self.updates += 1
        self.last_fused_us = pose.time_us
        return True

    # ------------------------------------------------------------ outputs
    def nav_state(self):
        """NavState at the last processed sample (planar: z, roll, pitch are zero)."""
        x = self.x
        c = math.cos(x[YAW])
        s = math.sin(x[YAW])
        return NavState(self.time_us or 0, (x[NORTH], x[EAST], 0.0),
                        (x[SPEED] * c, x[SPEED] * s, 0.0), (0.0, 0.0, x[YAW]))

    def pose_sigma(self):
        """1-sigma of (north_m, east_m, yaw_rad) from the covariance diagonal."""
        P = self.P
        return (math.sqrt(P[NORTH * N_STATE + NORTH]), math.sqrt(P[EAST * N_STATE + EAST]),
                math.sqrt(P[YAW * N_STATE + YAW]))

    def pose_covariance(self):
        """3x3 covariance (flat, row-major) of (north_m, east_m, yaw_rad): the filter's
        Sigma for drawing poses N(x_est, Sigma) (ag2u eq. 1)."""
        sel = (NORTH, EAST, YAW)
        P = self.P
        return [P[i * N_STATE + j] for i in sel for j in sel]

    def counters(self):
        return {"predicts": self.predicts, "updates": self.updates, "gated": self.gated,
                "rejected": self.rejected, "resets": self.resets}

    def _refuse(self, pose, why):
        """Refuse a pose update the filter cannot compute: counted in ``rejected``, state untouched."""
        self.rejected += 1
        raise PlanarEkfNumericError("pose sample at %d us not fused: %s" % (pose.time_us, why))

    def _check_pose(self, pose):
        if not pose.is_finite():
            self.rejected += 1
            raise EstimatorInputError("pose sample at %d us has non-finite values" % pose.time_us)
        # a negative variance can leave S positive and drive P's diagonal negative (0 is fine: P is PD)
        for var in (pose.cov_pos_m2 or ()) + (pose.cov_att_rad2 or ()):
            if var < 0.0:
                self.rejected += 1
                raise EstimatorInputError("pose sample at %d us has a negative variance" % pose.time_us)
