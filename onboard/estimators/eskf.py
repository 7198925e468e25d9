"""15-state error-state EKF on a strapdown INS (ag2u section III-C), pure Python.

This is the reference implementation; it runs unchanged on MicroPython. The Cython
build (``cython_ext/eskf.pyx``) and the NumPy path (``eskf_numpy``) implement the
same algorithm with the same public API; :func:`make_eskf` picks one through
``onboard.impl`` (``ONBOARD_IMPL=pure|cython|numpy``).

Error state (ag2u eq. 5a), named slices below::

    dx = [dp_ned_m (3), dpsi_ned_rad (3), dv_ned_mps (3), db_acc_mps2 (3), db_gyro_radps (3)]

Measurement residual (ag2u eq. 5b) from an aiding pose::

    dz = [dp_m = p_m - p_INS (3), dpsi_m (3)]
    dpsi_m = h(F(Psi_INS)^T * F(Psi_m))                                   (ag2u eq. 6)

with F = e2d (eq. 3, returns D_n^b) and h = d2e (eq. 7). The operands are ordered so
that, with this codebase's F (= D_ned_to_body), dpsi_m is "measured minus INS" like
dp_m: it is the small navigation-frame rotation taking the INS attitude to the
measured one (R_m = F(dpsi_m)^T R_INS). Being computed from a DCM product it is
always the short rotation, so it is correct across yaw = +-pi with no angle wrapping.
H = [I 0 0 0 0; 0 I 0 0 0] (ag2u eq. 9).

System matrix. Instead of the paper's per-aiding-interval matrix (after eq. 8,
whose 1/dt_m velocity-from-position term only holds at a fixed aiding period) we use
the standard continuous-time ES-EKF linearisation of eqs. 4a-4c, discretised at
every IMU sample, F = I + A dt, so the filter is valid at any IMU rate, any aiding
rate (1-10 Hz) and through aiding dropouts. The states and measurements are the
paper's. With R = D_b^n and dv_ned = R (q_v - b_a dt) the nonzero blocks of A dt are::

    dp   <- dv      : I dt                        (the I*dt_m block of eq. 8)
    dpsi <- db_gyro : -R dt                       (-Sigma D of eq. 8)
    dv   <- dpsi    : -[dv_ned]x                  (A_s of eq. 8)
    dv   <- db_acc  : -R dt                       (Sigma D of eq. 8, sign by convention)

Process noise per IMU step comes from the increment noise of ag2u eq. 10 (velocity
and angle random walk, with the velocity noise also entering the position through
eq. 4c) plus optional bias random walks (0 = the paper's constant biases).

Update: Cholesky of S = H P H^T + R, Mahalanobis gating on the NIS (configurable,
gated measurements counted and not fused), Kalman gain, Joseph-form covariance
P = (I - K H) P (I - K H)^T + K R K^T evaluated block-sparsely and mirrored, so P is
symmetric by construction. The error state is then injected into the INS (position,
velocity, biases added; attitude D <- D F(dpsi), re-orthonormalised) and reset to
zero. (The reset Jacobian G = I - [dpsi/2]x is taken as I, the usual first-order choice.)

Lost-filter restart (not in the paper): a gate alone can lock a diverged filter out for
good, every later pose then gated while the INS dead-reckons away (e.g. a held aiding
heading error while the vehicle spins fast in reverse drives the tilt estimate off, and
the position runs away). When no pose has been
fused for ``gate_reset_s`` while poses keep arriving gated, the filter restarts from
the gated pose (position and attitude from it, velocity 0 with ``reset_vel_sigma_mps``,
bias estimates kept, P from the init_* settings), counted in ``resets``.

Bad input (NaN/inf, wrong sizes, non-positive or too large dt, out-of-order IMU
time, non-positive variances) raises :class:`EskfInputError`, counts ``rejected``
and leaves the filter exactly as it was.

Batches: ``predict_many(imu_samples)`` runs the samples in order exactly as that many
``predict`` calls would (bit for bit, the same counters) and returns how many it refused
instead of raising, so a rate group can hand over its whole IMU queue in one call;
``predict_packed(buf, count)`` does the same for a queue of packed samples (a flat
``array('d')``, layout in ``onboard.estimators.eskf_packed``), read without Python objects on
the Cython build.

One source for every build: this class holds the configuration, validation,
initialisation, the restart logic, state access and counters. The numeric work sits
behind a few hooks (``_setup_state``, ``_reset_nominal``, ``_nominal``/``_set_nominal``,
``_set_variance``, ``_step`` / ``_propagate``, ``_fuse``) and the attribute ``P``; the
Cython build (``cython_ext/eskf.pyx``) is a kernel type placed before this class in the
MRO that replaces only those hooks and the hot entry points (``predict``,
``predict_many``, ``update_pose``, each handing anything unusual back to this code);
the NumPy build overrides the covariance algebra (``_propagate``, ``_fuse``).
"""
import math

from onboard.core.linalg import is_finite
from onboard.core.rotations import d2e, e2d
from onboard.core.samples import NavState
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, int_at_least, vector
from onboard.core.units import G_MPS2
from onboard.estimators.base import TIME_US_MAX, TIME_US_MIN, EstimatorInputError
from onboard.estimators.eskf_packed import (IMU_DANG_BODY_RAD, IMU_DT_US, IMU_DVEL_BODY_MPS, IMU_STRIDE, IMU_TIME_US,
                                            pack_imu)
from onboard.estimators.ins import Strapdown

# ---------------------------------------------------------------- state layout
N_STATE = 15
N_MEAS = 6
POS = 0          # dp_ned_m
ATT = 3          # dpsi_ned_rad
VEL = 6          # dv_ned_mps
BACC = 9         # db_acc_mps2 (body)
BGYR = 12        # db_gyro_radps (body)
# (MicroPython cannot build slice objects: the NumPy path defines POS_SLICE etc.)
MEAS_POS = 0     # dp_m
MEAS_ATT = 3     # dpsi_m
# Single slots of the pose block (dp_ned_m, dpsi_ned_rad): the first N_MEAS states, the rows of the
# measurement dz and of pose_covariance()'s 6x6 (H selects them, so the indexes coincide).
DP_N = POS + 0
DP_E = POS + 1
DP_D = POS + 2
DPSI_N = ATT + 0
DPSI_E = ATT + 1
DPSI_D = ATT + 2
STATE_NAMES = ("dp_n_m", "dp_e_m", "dp_d_m", "dpsi_n_rad", "dpsi_e_rad", "dpsi_d_rad",
               "dv_n_mps", "dv_e_mps", "dv_d_mps", "db_acc_x_mps2", "db_acc_y_mps2", "db_acc_z_mps2",
               "db_gyro_x_radps", "db_gyro_y_radps", "db_gyro_z_radps")

DEG = math.pi / 180.0
# chi-square 99.9 % quantile for 6 degrees of freedom: default gate on the pose NIS.
CHI2_6DOF_999 = 22.457744484825326
# outcome of the update kernel (_fuse)
NOT_PD = -1      # innovation covariance not positive definite: nothing changed
GATED = 0        # NIS above the gate: only last_nis / last_innovation changed
FUSED = 1

# Defaults: the ag2u sensor-fusion setting (section IV-B) and a consumer-grade IMU.
DEFAULTS = {
    "gravity_mps2": G_MPS2,
    "accel_noise_mps_per_sqrt_s": 0.01,          # a_rw of ag2u eq. 10a (velocity random walk)
    "gyro_noise_rad_per_sqrt_s": 0.02 * DEG,     # g_rw of ag2u eq. 10b (angle random walk)
    "accel_bias_walk_mps2_per_sqrt_s": 0.0,      # 0: constant bias, as the paper models it
    "gyro_bias_walk_radps_per_sqrt_s": 0.0,
    "init_pos_sigma_m": [0.05, 0.05, 0.05],      # dp_IC (ag2u eq. 11a)
    "init_att_sigma_rad": [4.0 * DEG, 4.0 * DEG, 5.0 * DEG],   # dPsi_IC (ag2u eq. 12)
    "init_vel_sigma_mps": [0.01, 0.01, 0.01],    # dv_IC (ag2u eq. 11b)
    "init_accel_bias_sigma_mps2": [0.05, 0.05, 0.05],
    "init_gyro_bias_sigma_radps": [0.3 * DEG, 0.3 * DEG, 0.3 * DEG],
    "pose_pos_sigma_m": [0.05, 0.05, 0.05],      # dp_err (ag2u eq. 13a), used when a pose has no cov
    "pose_att_sigma_rad": [1.0 * DEG, 1.0 * DEG, 5.0 * DEG],  # dPsi_err (ag2u eq. 13b)
    "gate_nis": CHI2_6DOF_999,                   # <= 0 disables gating
    "gate_reset_s": 3.0,                         # restart from the pose after this long all gated; 0: never
    "reset_vel_sigma_mps": 1.0,                  # velocity sigma after such a restart (velocity set to 0)
    "max_imu_dt_us": 1000000,                    # longer IMU gaps are rejected as bad input
}
_VECTOR_KEYS = ("init_pos_sigma_m", "init_att_sigma_rad", "init_vel_sigma_mps",
                "init_accel_bias_sigma_mps2", "init_gyro_bias_sigma_radps",
                "pose_pos_sigma_m", "pose_att_sigma_rad")
SETTING_RANGES = {
    "gravity_mps2": NON_NEGATIVE, "accel_noise_mps_per_sqrt_s": NON_NEGATIVE,
    "gyro_noise_rad_per_sqrt_s": NON_NEGATIVE, "accel_bias_walk_mps2_per_sqrt_s": NON_NEGATIVE,
    "gyro_bias_walk_radps_per_sqrt_s": NON_NEGATIVE,
    "init_pos_sigma_m": vector(3, NON_NEGATIVE), "init_att_sigma_rad": vector(3, NON_NEGATIVE),
    "init_vel_sigma_mps": vector(3, NON_NEGATIVE), "init_accel_bias_sigma_mps2": vector(3, NON_NEGATIVE),
    "init_gyro_bias_sigma_radps": vector(3, NON_NEGATIVE),
    "pose_pos_sigma_m": vector(3, POSITIVE), "pose_att_sigma_rad": vector(3, POSITIVE),
    "gate_nis": ANY_NUMBER, "gate_reset_s": NON_NEGATIVE, "reset_vel_sigma_mps": NON_NEGATIVE,
    "max_imu_dt_us": int_at_least(1),
}


class EskfInputError(EstimatorInputError):
    """An IMU or pose sample is malformed or non-finite; the filter state was not changed.

    A subclass of ``onboard.estimators.base.EstimatorInputError`` (so of ValueError)."""


class EskfNumericError(ArithmeticError):
    """The innovation covariance is not positive definite; the filter state was not changed."""


def make_config(config=None):
    """DEFAULTS merged with ``config`` and checked (:func:`onboard.core.settings.checked`); the 3-vectors
    come back as lists of floats."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "Eskf")
    for key in _VECTOR_KEYS:
        cfg[key] = [float(v) for v in cfg[key]]
    return cfg


def _vec3(obj, name, what):
    try:
        v = getattr(obj, name)
    except AttributeError:
        raise EskfInputError("%s has no field %s" % (what, name))
    try:
        n = len(v)
    except TypeError:
        raise EskfInputError("%s.%s must be a sequence of 3 numbers" % (what, name))
    if n != 3:
        raise EskfInputError("%s.%s must have 3 entries, got %d" % (what, name, n))
    try:
        out = (float(v[0]), float(v[1]), float(v[2]))
    except (TypeError, ValueError, OverflowError):
        raise EskfInputError("%s.%s must hold numbers" % (what, name))
    if not is_finite(out):
        raise EskfInputError("%s.%s has non-finite values %r" % (what, name, out))
    return out


def check_int64(value, what):
    """EskfInputError unless ``value`` (an int: a time in us or a counter) fits a signed 64-bit integer
    (base.TIME_US_MIN/MAX), as the Cython build holds it."""
    if value < TIME_US_MIN or value > TIME_US_MAX:
        raise EskfInputError("%s=%d outside the signed 64-bit range" % (what, value))


def parse_imu(imu, last_imu_us, max_dt_us):
    """(time_us, dt_us, dvel_body_mps, dang_body_rad) of a valid ImuSample, else EskfInputError."""
    try:
        time_us = int(imu.time_us)
        dt_us = int(imu.dt_us)
    except (AttributeError, TypeError, ValueError, OverflowError):
        raise EskfInputError("IMU sample needs integer time_us and dt_us")
    check_int64(time_us, "IMU sample time_us")
    if dt_us <= 0 or dt_us > max_dt_us:
        raise EskfInputError("IMU dt_us=%d outside (0, %d]" % (dt_us, max_dt_us))
    if last_imu_us is not None and time_us <= last_imu_us:
        raise EskfInputError("IMU sample at %d us is not after the previous one (%d us)"
                             % (time_us, last_imu_us))
    dvel = _vec3(imu, "dvel_body_mps", "IMU sample")
    dang = _vec3(imu, "dang_body_rad", "IMU sample")
    return time_us, dt_us, dvel, dang


class PackedImu:
    """Slot k of a packed IMU buffer (onboard.estimators.eskf_packed) seen as an ImuSample, for
    :func:`parse_imu`: the packed path refuses exactly what the object path refuses, with the same messages."""

    def __init__(self, buf, k):
        b = k * IMU_STRIDE
        self.time_us = buf[b + IMU_TIME_US]
        self.dt_us = buf[b + IMU_DT_US]
        self.dvel_body_mps = (buf[b + IMU_DVEL_BODY_MPS], buf[b + IMU_DVEL_BODY_MPS + 1],
                              buf[b + IMU_DVEL_BODY_MPS + 2])
        self.dang_body_rad = (buf[b + IMU_DANG_BODY_RAD], buf[b + IMU_DANG_BODY_RAD + 1],
                              buf[b + IMU_DANG_BODY_RAD + 2])


def check_packed_count(n_values, count):
    """EskfInputError unless ``count`` samples fit in a packed buffer of ``n_values`` doubles."""
    if count < 0 or count * IMU_STRIDE > n_values:
        raise EskfInputError("packed IMU buffer of %d values cannot hold %d samples" % (n_values, count))


def parse_pose(pose, cfg):
    """(time_us, pos_ned_m, euler_rad, r_diag (6 variances)) of a valid PoseSample, else EskfInputError."""
    try:
        time_us = int(pose.time_us)
    except (AttributeError, TypeError, ValueError, OverflowError):
        raise EskfInputError("pose sample needs an integer time_us")
    check_int64(time_us, "pose sample time_us")
    pos = _vec3(pose, "pos_ned_m", "pose sample")
    euler = _vec3(pose, "euler_rad", "pose sample")
    r = [0.0] * N_MEAS
    for name, base, default in (("cov_pos_m2", MEAS_POS, cfg["pose_pos_sigma_m"]),
                                ("cov_att_rad2", MEAS_ATT, cfg["pose_att_sigma_rad"])):
        cov = getattr(pose, name, None)
        if cov is None:
            for i in range(3):
                r[base + i] = default[i] * default[i]
        else:
            cov = _vec3(pose, name, "pose sample")
            for i in range(3):
                if not cov[i] > 0.0:
                    raise EskfInputError("pose sample %s must be > 0, got %r" % (name, cov))
                r[base + i] = cov[i]
    return time_us, pos, euler, r


def attitude_residual(D_ins, euler_meas_rad):
    """dpsi_m = h(F(Psi_INS)^T F(Psi_m)) (ag2u eq. 6): measured minus INS, NED frame, rad."""
    dm = e2d(euler_meas_rad)
    x = [0.0] * 9
    for i in range(3):
        for j in range(3):
            x[i * 3 + j] = D_ins[i] * dm[j] + D_ins[3 + i] * dm[3 + j] + D_ins[6 + i] * dm[6 + j]
    return d2e(x)


def cholesky6(S):
    """Lower Cholesky factor of a 6x6 SPD matrix (flat); None when not positive definite."""
    n = N_MEAS
    L = [0.0] * (n * n)
    for i in range(n):
        for j in range(i + 1):
            s = S[i * n + j]
            for k in range(j):
                s -= L[i * n + k] * L[j * n + k]
            if i == j:
                if not s > 0.0:
                    return None
                L[i * n + i] = math.sqrt(s)
            else:
                L[i * n + j] = s / L[j * n + j]
    return L


class Eskf:
    """Error-state EKF (pure Python). See the module docstring for the model.

    Public API (the same for the Cython and NumPy builds):
    ``initialize(time_us, pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps)``,
    ``predict(imu)``, ``update_pose(pose)``, ``nav_state(now_us)``, ``covariance()``,
    ``pose_covariance()``, ``get_state()`` / ``set_state()``, ``counters()``, the bias
    estimates, and the counters ``predicts``, ``updates``, ``gated``, ``rejected``, ``resets``.
    """

    impl = "pure"
    pack_imu = staticmethod(pack_imu)   # writes one ImuSample in the layout predict_packed reads

    def __init__(self, config=None):
        self.cfg = make_config(config)
        self.initialized = False
        self.time_us = 0
        self.last_imu_us = None
        self.predicts = 0
        self.updates = 0
        self.gated = 0
        self.rejected = 0
        self.skipped = 0             # IMU samples before initialisation
        self.resets = 0              # lost-filter restarts (gate_reset_s)
        self.last_fused_us = 0       # time of the last pose fused (or of initialisation)
        self.last_nis = -1.0
        c = self.cfg
        # per-second noise variances (ag2u eq. 10 densities squared), multiplied by dt per step
        self._var_acc = c["accel_noise_mps_per_sqrt_s"] * c["accel_noise_mps_per_sqrt_s"]
        self._var_gyr = c["gyro_noise_rad_per_sqrt_s"] * c["gyro_noise_rad_per_sqrt_s"]
        self._var_bacc = c["accel_bias_walk_mps2_per_sqrt_s"] * c["accel_bias_walk_mps2_per_sqrt_s"]
        self._var_bgyr = c["gyro_bias_walk_radps_per_sqrt_s"] * c["gyro_bias_walk_radps_per_sqrt_s"]
        self._setup_state()

    # ------------------------------------------------------------ state hooks (replaced by the kernels)
    def _setup_state(self):
        """Nominal INS state at rest, P zero (called once by __init__, after cfg and the _var_* are set)."""
        self.ins = Strapdown(gravity_mps2=self.cfg["gravity_mps2"])
        self.P = [0.0] * (N_STATE * N_STATE)
        self.last_innovation = [0.0] * N_MEAS

    def _reset_nominal(self, pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps):
        self.ins.reset(pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps)

    def _nominal(self):
        """(pos_ned_m, vel_ned_mps, D_ned_to_body, accel_bias_mps2, gyro_bias_radps) as sequences of floats."""
        ins = self.ins
        return ins.pos_ned_m, ins.vel_ned_mps, ins.D_ned_to_body, ins.accel_bias_mps2, ins.gyro_bias_radps

    def _set_nominal(self, pos_ned_m, vel_ned_mps, D_ned_to_body, accel_bias_mps2, gyro_bias_radps):
        """Set the nominal state from lists of floats (sizes checked by the caller)."""
        ins = self.ins
        ins.pos_ned_m = pos_ned_m
        ins.vel_ned_mps = vel_ned_mps
        ins.D_ned_to_body = D_ned_to_body
        ins.accel_bias_mps2 = accel_bias_mps2
        ins.gyro_bias_radps = gyro_bias_radps

    # ------------------------------------------------------------ set-up
    def initialize(self, time_us, pos_ned_m, vel_ned_mps, euler_rad,
                   accel_bias_mps2=(0.0, 0.0, 0.0), gyro_bias_radps=(0.0, 0.0, 0.0)):
        """Start the INS at the given initial conditions; P from the init_*_sigma settings. EskfInputError, with
        the filter unchanged, unless each vector is 3 finite numbers and ``time_us`` a whole number of us within a
        signed 64-bit integer."""
        vals = [pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps]
        for v in vals:
            try:
                ok = len(v) == 3 and is_finite((float(v[0]), float(v[1]), float(v[2])))
            except (TypeError, ValueError, OverflowError):
                ok = False
            if not ok:
                raise EskfInputError("initial conditions must be 3 finite numbers each, got %r" % (v,))
        try:
            whole = int(time_us) == time_us and not isinstance(time_us, bool)
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole:
            raise EskfInputError("initial time_us must be a whole number of us, got %r" % (time_us,))
        check_int64(int(time_us), "initial time_us")
        self._reset_nominal(pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps)
        c = self.cfg
        P = [0.0] * (N_STATE * N_STATE)
        for base, key in ((POS, "init_pos_sigma_m"), (ATT, "init_att_sigma_rad"), (VEL, "init_vel_sigma_mps"),
                          (BACC, "init_accel_bias_sigma_mps2"), (BGYR, "init_gyro_bias_sigma_radps")):
            for i in range(3):
                P[(base + i) * N_STATE + base + i] = c[key][i] * c[key][i]
        self.P = P
        self.time_us = int(time_us)
        self.last_fused_us = int(time_us)
        self.last_imu_us = None
        self.initialized = True

    def _lost(self, time_us):
        """True when no pose has been fused for gate_reset_s (> 0) up to this gated one at ``time_us``."""
        reset_s = self.cfg["gate_reset_s"]
        return reset_s > 0.0 and time_us - self.last_fused_us >= reset_s * 1e6

    def _restart(self, time_us, pos, euler):
        """Lost-filter restart from a gated pose (module docstring); counted in ``resets``."""
        last_imu_us = self.last_imu_us
        self.initialize(time_us, pos, (0.0, 0.0, 0.0), euler, self.accel_bias_mps2, self.gyro_bias_radps)
        self.last_imu_us = last_imu_us          # IMU samples must still move forward in time
        var = self.cfg["reset_vel_sigma_mps"] * self.cfg["reset_vel_sigma_mps"]
        for i in range(3):
            self._set_variance(VEL + i, var)
        self.resets += 1

    # ------------------------------------------------------------ predict
    def predict(self, imu):
        """Strapdown step (ag2u eqs. 4a-4c) and covariance propagation for one ImuSample.

        Returns True, or False (counted in ``skipped``) before initialisation.
        Raises EskfInputError (state unchanged) on bad input.
        """
        try:
            time_us, dt_us, dvel, dang = parse_imu(imu, self.last_imu_us, self.cfg["max_imu_dt_us"])
        except EskfInputError:
            self.rejected += 1
            raise
        if not self.initialized:
            self.skipped += 1
            return False
        self._step(dt_us * 1e-6, dvel, dang)
        self.time_us = time_us
        self.last_imu_us = time_us
        self.predicts += 1
        return True

    def predict_many(self, imu_samples):
        """``predict`` for each ImuSample of a sequence, in order: the same results and counters, bit for bit.

        A refused sample (EskfInputError: counted in ``rejected``, state unchanged) does not stop the
        batch; returns how many were refused.
        """
        refused = 0
        for imu in imu_samples:
            try:
                self.predict(imu)
            except EskfInputError:
                refused += 1
        return refused

    def predict_packed(self, buf, count):
        """``predict_many`` of the first ``count`` samples of a packed IMU buffer (``array('d')`` in the
        layout of ``onboard.estimators.eskf_packed``): the same results, counters and refusals, bit for bit.

        Returns how many were refused; EskfInputError (nothing done) when ``buf`` is too short for ``count``.
        """
        check_packed_count(len(buf), count)
        refused = 0
        for k in range(count):
            try:
                self.predict(PackedImu(buf, k))
            except EskfInputError:
                refused += 1
        return refused

    def _step(self, dt, dvel, dang):
        """The numeric part of predict: strapdown (ag2u eqs. 4a-4c), then the covariance propagation."""
        self._propagate(dt, self.ins.step(dt, dvel, dang))

    def _propagate(self, dt, dv_ned):
        """P <- F P F^T + Q with F = I + A dt block-sparse (see module docstring)."""
        n = N_STATE
        P = self.P
        d = self.ins.D_ned_to_body
        # A = -R dt with R = D^T: A[i][j] = -D[j][i] dt ; S = -[dv_ned]x
        A = [-d[0] * dt, -d[3] * dt, -d[6] * dt,
             -d[1] * dt, -d[4] * dt, -d[7] * dt,
             -d[2] * dt, -d[5] * dt, -d[8] * dt]
        # S = -[dv_ned]x = [0, s01, s02; s10, 0, s12; s20, s21, 0]: its zero diagonal's terms are left
        # out of the products below (the Cython kernel computes the same sums)
        s01 = dv_ned[2]
        s02 = -dv_ned[1]
        s10 = -dv_ned[2]
        s12 = dv_ned[0]
        s20 = dv_ned[1]
        s21 = -dv_ned[0]
        # M = F P: rows dp, dpsi, dv (the bias rows equal P's and are never read); P' below reads
        # the dpsi and dv rows only from column ATT on
        M = [0.0] * (BACC * n)
        for c in range(n):
            for i in range(3):
                M[(POS + i) * n + c] = P[(POS + i) * n + c] + dt * P[(VEL + i) * n + c]
            if c < ATT:
                continue
            pa0 = P[ATT * n + c]
            pa1 = P[(ATT + 1) * n + c]
            pa2 = P[(ATT + 2) * n + c]
            pba0 = P[BACC * n + c]
            pba1 = P[(BACC + 1) * n + c]
            pba2 = P[(BACC + 2) * n + c]
            pbg0 = P[BGYR * n + c]
            pbg1 = P[(BGYR + 1) * n + c]
            pbg2 = P[(BGYR + 2) * n + c]
            for i in range(3):
                M[(ATT + i) * n + c] = P[(ATT + i) * n + c] + (A[i * 3] * pbg0 + A[i * 3 + 1] * pbg1
                                                               + A[i * 3 + 2] * pbg2)
            M[VEL * n + c] = (P[VEL * n + c] + (s01 * pa1 + s02 * pa2)
                              + (A[0] * pba0 + A[1] * pba1 + A[2] * pba2))
            M[(VEL + 1) * n + c] = (P[(VEL + 1) * n + c] + (s10 * pa0 + s12 * pa2)
                                    + (A[3] * pba0 + A[4] * pba1 + A[5] * pba2))
            M[(VEL + 2) * n + c] = (P[(VEL + 2) * n + c] + (s20 * pa0 + s21 * pa1)
                                    + (A[6] * pba0 + A[7] * pba1 + A[8] * pba2))
        # P' = M F^T, upper triangle, mirrored
        Pn = P  # bias-bias block stays; every other entry is overwritten below
        for r in range(BACC):
            ro = r * n
            ma0 = M[ro + ATT]
            ma1 = M[ro + ATT + 1]
            ma2 = M[ro + ATT + 2]
            mba0 = M[ro + BACC]
            mba1 = M[ro + BACC + 1]
            mba2 = M[ro + BACC + 2]
            mbg0 = M[ro + BGYR]
            mbg1 = M[ro + BGYR + 1]
            mbg2 = M[ro + BGYR + 2]
            for c in range(r, ATT):
                v = M[ro + c] + dt * M[ro + VEL + c - POS]
                Pn[ro + c] = v
                Pn[c * n + r] = v
            for c in range(ATT if r < ATT else r, VEL):
                j = c - ATT
                v = M[ro + c] + (A[j * 3] * mbg0 + A[j * 3 + 1] * mbg1 + A[j * 3 + 2] * mbg2)
                Pn[ro + c] = v
                Pn[c * n + r] = v
            sm = (s01 * ma1 + s02 * ma2, s10 * ma0 + s12 * ma2, s20 * ma0 + s21 * ma1)   # S row j . M[r, ATT:VEL]
            for c in range(VEL if r < VEL else r, BACC):
                j = c - VEL
                v = (M[ro + c] + sm[j]
                     + (A[j * 3] * mba0 + A[j * 3 + 1] * mba1 + A[j * 3 + 2] * mba2))
                Pn[ro + c] = v
                Pn[c * n + r] = v
            for c in range(BACC, n):
                v = M[ro + c]
                Pn[ro + c] = v
                Pn[c * n + r] = v
        # Q: increment noise of ag2u eq. 10 (+ optional bias random walks)
        qa = self._var_acc * dt
        qg = self._var_gyr * dt
        qba = self._var_bacc * dt
        qbg = self._var_bgyr * dt
        for i in range(3):
            p = POS + i
            v = VEL + i
            Pn[p * n + p] += qa * dt * dt
            Pn[p * n + v] += qa * dt
            Pn[v * n + p] += qa * dt
            Pn[v * n + v] += qa
            a = ATT + i
            Pn[a * n + a] += qg
            b = BACC + i
            Pn[b * n + b] += qba
            b = BGYR + i
            Pn[b * n + b] += qbg

    # ------------------------------------------------------------ update
    def update_pose(self, pose):
        """Fuse an aiding PoseSample (ag2u eqs. 5b, 6, 9). Returns True when fused, False when gated.

        Before initialisation the first pose initialises the filter (at rest) and True is returned;
        so does a gated pose that restarts a lost filter (``gate_reset_s``, counted in ``resets``).
        Raises EskfInputError / EskfNumericError with the state unchanged.
        """
        time_us, pos, euler, r = self._parse_pose(pose)
        if not self.initialized:
            return self._first_pose(time_us, pos, euler)
        return self._fused(self._fuse(pos, euler, r), time_us, pos, euler)

    def _parse_pose(self, pose):
        """parse_pose, counting a refused sample in ``rejected``."""
        try:
            return parse_pose(pose, self.cfg)
        except EskfInputError:
            self.rejected += 1
            raise

    def _first_pose(self, time_us, pos, euler):
        """Initialise at rest from the first pose (bias estimates kept)."""
        self.initialize(time_us, pos, (0.0, 0.0, 0.0), euler, self.accel_bias_mps2, self.gyro_bias_radps)
        return True

    def _fused(self, outcome, time_us, pos, euler):
        """Counters and the lost-filter restart after the update kernel; update_pose's return value."""
        if outcome == FUSED:
            self.updates += 1
            self.last_fused_us = time_us
            return True
        if outcome == NOT_PD:
            self.rejected += 1
            raise EskfNumericError("innovation covariance is not positive definite")
        self.gated += 1
        if self._lost(time_us):
            self._restart(time_us, pos, euler)
            return True
        return False

    def _fuse(self, pos, euler, r):
        """The update kernel (ag2u eqs. 5b, 6, 9; Joseph form): FUSED, GATED or NOT_PD (state unchanged)."""
        n = N_STATE
        m = N_MEAS
        ins = self.ins
        P = self.P
        p_ins = ins.pos_ned_m
        dpsi = attitude_residual(ins.D_ned_to_body, euler)
        y = [pos[0] - p_ins[0], pos[1] - p_ins[1], pos[2] - p_ins[2], dpsi[0], dpsi[1], dpsi[2]]
        # S = H P H^T + R (H selects dp, dpsi: the first 6 states)
        S = [0.0] * (m * m)
        for a in range(m):
            for b in range(m):
                S[a * m + b] = P[a * n + b]
            S[a * m + a] += r[a]
        L = cholesky6(S)
        if L is None:
            return NOT_PD
        inv_d = [1.0 / L[a * m + a] for a in range(m)]
        # NIS = y^T S^-1 y = |L^-1 y|^2
        w = [0.0] * m
        nis = 0.0
        for a in range(m):
            s = y[a]
            for b in range(a):
                s -= L[a * m + b] * w[b]
            w[a] = s * inv_d[a]
            nis += w[a] * w[a]
        self.last_nis = nis
        self.last_innovation = y
        gate = self.cfg["gate_nis"]
        if gate > 0.0 and nis > gate:
            return GATED
        # K^T = S^-1 C with C = H P = P[0:6, :]  (forward then back substitution)
        Kt = [0.0] * (m * n)
        for j in range(n):
            for a in range(m):
                s = P[a * n + j]
                for b in range(a):
                    s -= L[a * m + b] * Kt[b * n + j]
                Kt[a * n + j] = s * inv_d[a]
            for a in range(m - 1, -1, -1):
                s = Kt[a * n + j]
                for b in range(a + 1, m):
                    s -= L[b * m + a] * Kt[b * n + j]
                Kt[a * n + j] = s * inv_d[a]
        # dx = K y
        dx = [0.0] * n
        for i in range(n):
            s = 0.0
            for a in range(m):
                s += Kt[a * n + i] * y[a]
            dx[i] = s
        # Joseph form P' = (I - K H) P (I - K H)^T + K R K^T, block-sparse in H:
        #   B = (I - K H) P = P - K C          (only the upper triangle and the first m columns are used)
        #   P'_ij = B_ij + sum_a K_ja (r_a K_ia - B_ia)
        B = [0.0] * (n * n)
        for i in range(n):
            lim = i if i < m else m
            for j in range(lim):
                s = P[i * n + j]
                for a in range(m):
                    s -= Kt[a * n + i] * P[a * n + j]
                B[i * n + j] = s
            for j in range(i, n):
                s = P[i * n + j]
                for a in range(m):
                    s -= Kt[a * n + i] * P[a * n + j]
                B[i * n + j] = s
        G = [0.0] * (n * m)
        for i in range(n):
            for a in range(m):
                G[i * m + a] = Kt[a * n + i] * r[a] - B[i * n + a]
        Pn = [0.0] * (n * n)
        for i in range(n):
            for j in range(i, n):
                s = B[i * n + j]
                for a in range(m):
                    s += Kt[a * n + j] * G[i * m + a]
                Pn[i * n + j] = s
                Pn[j * n + i] = s
        # inject the error state into the INS, then reset it (implicitly zero)
        pp = ins.pos_ned_m
        vv = ins.vel_ned_mps
        ba = ins.accel_bias_mps2
        bg = ins.gyro_bias_radps
        for i in range(3):
            pp[i] = pp[i] + dx[POS + i]
            vv[i] = vv[i] + dx[VEL + i]
            ba[i] = ba[i] + dx[BACC + i]
            bg[i] = bg[i] + dx[BGYR + i]
        ins.correct_attitude([dx[ATT], dx[ATT + 1], dx[ATT + 2]])
        self.P = Pn
        return FUSED

    # ------------------------------------------------------------ outputs
    def nav_state(self, now_us=None):
        """NavState at ``now_us`` (default: the last processed sample).

        Later times are dead-reckoned at constant velocity (position only); the
        estimator itself only advances on IMU samples.
        """
        p, v, D, _, _ = self._nominal()
        t = self.time_us
        if now_us is not None and int(now_us) > t:
            h = (int(now_us) - t) * 1e-6
            p = [p[0] + v[0] * h, p[1] + v[1] * h, p[2] + v[2] * h]
            t = int(now_us)
        return NavState(t, p, v, d2e(D))

    def covariance(self):
        """15x15 error-state covariance, flat row-major list (order of STATE_NAMES)."""
        return list(self.P)

    def pose_covariance(self):
        """6x6 covariance (flat) of (dp_ned_m, dpsi_ned_rad): Sigma for ag2u eq. 1."""
        P = self.P
        return [P[i * N_STATE + j] for i in range(N_MEAS) for j in range(N_MEAS)]

    def _set_variance(self, i, var):
        self.P[i * N_STATE + i] = var

    @property
    def accel_bias_mps2(self):
        return tuple(self.ins.accel_bias_mps2)

    @property
    def gyro_bias_radps(self):
        return tuple(self.ins.gyro_bias_radps)

    def counters(self):
        return {"predicts": self.predicts, "updates": self.updates, "gated": self.gated,
                "rejected": self.rejected, "skipped": self.skipped, "resets": self.resets}

    def get_state(self):
        """Everything that defines the filter, as plain lists (for copying between implementations)."""
        pos, vel, D, ba, bg = self._nominal()
        return {"initialized": bool(self.initialized), "time_us": self.time_us, "last_imu_us": self.last_imu_us,
                "pos_ned_m": list(pos), "vel_ned_mps": list(vel), "D_ned_to_body": list(D),
                "accel_bias_mps2": list(ba), "gyro_bias_radps": list(bg),
                "P": self.covariance(), "predicts": self.predicts, "updates": self.updates,
                "gated": self.gated, "rejected": self.rejected, "skipped": self.skipped,
                "resets": self.resets, "last_fused_us": self.last_fused_us, "last_nis": self.last_nis}

    def set_state(self, state):
        """Restore a dict from get_state() (any implementation's). Every value is converted and checked before
        any is set (times and counters within a signed 64-bit integer, as the Cython build holds them; the
        3-vectors of 3 and the attitude of 9 finite numbers, P of 225 finite numbers):
        EskfInputError or the conversion's error with the filter unchanged."""
        if len(state["P"]) != N_STATE * N_STATE or len(state["D_ned_to_body"]) != 9:
            raise EskfInputError("state has the wrong size")
        nominal = [[float(v) for v in state[key]] for key in (
            "pos_ned_m", "vel_ned_mps", "D_ned_to_body", "accel_bias_mps2", "gyro_bias_radps")]
        for key, values in zip(("pos_ned_m", "vel_ned_mps", "D_ned_to_body", "accel_bias_mps2", "gyro_bias_radps"),
                               nominal):
            if len(values) != (9 if key == "D_ned_to_body" else 3) or not is_finite(values):
                raise EskfInputError("state %s must be %d finite numbers, got %r"
                                     % (key, 9 if key == "D_ned_to_body" else 3, values))
        P = [float(v) for v in state["P"]]
        if not is_finite(P):
            raise EskfInputError("state P has non-finite values")
        ints = {"time_us": int(state["time_us"])}
        for key in ("predicts", "updates", "gated", "rejected", "skipped"):
            ints[key] = int(state[key])
        ints["resets"] = int(state.get("resets", 0))
        ints["last_fused_us"] = int(state.get("last_fused_us", ints["time_us"]))
        last_imu_us = None if state["last_imu_us"] is None else int(state["last_imu_us"])
        for key in ints:
            check_int64(ints[key], "state " + key)
        if last_imu_us is not None:
            check_int64(last_imu_us, "state last_imu_us")
        last_nis = float(state["last_nis"])
        self._set_nominal(*nominal)
        self.P = P
        self.initialized = bool(state["initialized"])
        for key in ints:
            setattr(self, key, ints[key])
        self.last_imu_us = last_imu_us
        self.last_nis = last_nis


IMPL_MODULES = {"pure": "onboard.estimators.eskf", "cython": "cython_ext.eskf",
                "numpy": "onboard.estimators.eskf_numpy"}


def make_eskf(config=None, impl=None):
    """An Eskf of the implementation chosen by ``impl`` or $ONBOARD_IMPL (default pure); ``impl="pure"``
    needs no switch (so it works on MicroPython)."""
    if impl == "pure":
        return Eskf(config)
    from onboard import impl as impl_switch     # CPython only (importlib, os)
    return impl_switch.load(IMPL_MODULES, impl).Eskf(config)
