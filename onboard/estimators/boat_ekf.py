"""Model-driven EKF of a skid-steer surface vessel (RobotX AAVS III-C), pure Python (MicroPython tier).

State: the vessel model's six states ``onboard.vessel.model`` (yaw_rad, yaw_rate_radps, north_m,
east_m, surge_mps, sway_mps; NED/FRD), slots YAW .. SWAY re-exported here. The process model is the
model itself (robotx eqs. 1-6, as the paper lays them out "to be easily transitioned into an EKF"),
driven by the thrusts: ``predict(ThrustSample)`` propagates from the filter's time to the sample's
``time_us`` with the sample's thrusts held, in steps of at most ``max_step_s`` (100 Hz); the
contract's ``predict(ImuSample)`` propagates with the last thrusts held and fuses the gyro's yaw rate:

    x' = f(x, T),  P' = F P F^T + Q dt,  F = d f / d x (``model.jacobian_state``),
    Q = diag(yaw, yaw rate, north, east, surge, sway noise densities^2)  (additive model error).

Measurements select states directly (H is a selection): GNSS position (north, east; 4 Hz), heading
(yaw, residual wrapped to [-pi, pi)), yaw rate (gyro z, or ``update_imu`` taking dang_z / dt), and
an aiding pose (north, east, yaw) for the estimator contract. A measurement later than the filter's
time first propagates the state to it with the last thrusts held; an earlier one is out of order.

Update: S = H P H^T + R, NIS = y^T S^-1 y gated against a chi-square quantile per measurement kind
(gated measurements are counted and not fused), K = P H^T S^-1, Joseph form
P = (I - K H) P (I - K H)^T + K R K^T evaluated through the selection structure and mirrored, so P
stays symmetric; the variances samples carry are floored (MIN_*_VAR below). Lost-filter restart
(as ``planar_ekf`` / ``eskf``): when no position has been fused for ``gate_reset_s`` while fixes keep
arriving gated, the filter restarts at the gated fix (yaw from the last heading measurement, or kept;
velocities and yaw rate 0; P from the init sigmas, speeds with ``reset_speed_sigma_mps``), counted in
``resets``. A gap longer than ``max_gap_s`` between the filter's time and a sample stops the filter
(``initialized`` False, counted in ``timeouts``): the next heading and position start it again.

Initialisation: ``initialize(time_us, x, sigmas)``, or the first aiding pose, or the first position
fix together with a heading (whichever comes second starts it; velocities 0).

Bad input (NaN/inf, non-positive variances, a sample older than the filter's time, a thrust sample
not later than it) raises :class:`EstimatorInputError`, counts ``rejected`` and leaves the state,
covariance and every other counter as they were. Follows ``onboard.estimators.base``.
"""
import math

from onboard.core import linalg as la
from onboard.core.angles import wrap_pi
from onboard.core.samples import ImuSample, NavState
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, under
from onboard.estimators.base import POSE_DIM, EstimatorInputError
from onboard.vessel import model as vm

YAW = vm.YAW
YAW_RATE = vm.YAW_RATE
NORTH = vm.NORTH
EAST = vm.EAST
SURGE = vm.SURGE
SWAY = vm.SWAY
N_STATE = vm.N_STATE
STATE_NAMES = vm.STATE_NAMES

# chi-square 99.9 % quantiles (1, 2, 3 degrees of freedom): default gates.
CHI2_1DOF_999 = 10.828
CHI2_2DOF_999 = 13.816
CHI2_3DOF_999 = 16.266

# Floors of the measurement variances a sample may carry (a perfect measurement would make P singular).
MIN_POS_VAR_M2 = 1e-6
MIN_YAW_VAR_RAD2 = 1e-8
MIN_YAW_RATE_VAR_RAD2PS2 = 1e-10

# Measurement kinds: selected state slots.
POSITION_SLOTS = (NORTH, EAST)
HEADING_SLOTS = (YAW,)
YAW_RATE_SLOTS = (YAW_RATE,)
POSE_SLOTS = (NORTH, EAST, YAW)

# Nonzero columns of each row of F = d step / d x (model.jacobian_state), for the sparse F P F^T.
_F_NONZERO = (
    (YAW, YAW_RATE),                    # YAW
    (YAW_RATE, SURGE, SWAY),            # YAW_RATE
    (YAW, NORTH, SURGE, SWAY),          # NORTH
    (YAW, EAST, SURGE, SWAY),           # EAST
    (YAW_RATE, SURGE, SWAY),            # SURGE
    (YAW_RATE, SURGE, SWAY),            # SWAY
)

DEFAULTS = {
    "model": dict(vm.DEFAULTS),                  # c1..c9 of the process model (robotx eqs. 1-6)
    # process noise densities (1 sigma per sqrt(s)): additive model error per state (sized for the simulated
    # WAM-V's wind, waves, current and unmodelled hydrodynamics against fitted constants)
    "yaw_noise_rad_per_sqrt_s": 0.002,
    "yaw_rate_noise_radps_per_sqrt_s": 0.1,
    "pos_noise_m_per_sqrt_s": 0.05,
    "surge_noise_mps_per_sqrt_s": 0.2,
    "sway_noise_mps_per_sqrt_s": 0.3,
    # initial 1 sigma (also after a restart)
    "init_yaw_sigma_rad": 0.1,
    "init_yaw_rate_sigma_radps": 0.05,
    "init_pos_sigma_m": 1.0,
    "init_surge_sigma_mps": 0.5,
    "init_sway_sigma_mps": 0.2,
    # measurement 1 sigma used when a sample carries no variance
    "gnss_sigma_m": 0.5,
    "heading_sigma_rad": 0.02,
    "yaw_rate_sigma_radps": 0.005,
    # chi-square gates on the NIS; <= 0 disables a gate
    "gate_chi2_position": CHI2_2DOF_999,
    "gate_chi2_heading": CHI2_1DOF_999,
    "gate_chi2_yaw_rate": CHI2_1DOF_999,
    "gate_chi2_pose": CHI2_3DOF_999,
    "gate_reset_s": 3.0,                         # restart after this long with every fix gated; 0: never
    "reset_speed_sigma_mps": 1.0,                # surge/sway sigma after a restart
    "max_step_s": 0.01,                          # longest model step (predict at >= 100 Hz)
    "max_gap_s": 2.0,                            # a longer gap to a sample stops the filter
}
SETTING_RANGES = {
    "yaw_noise_rad_per_sqrt_s": NON_NEGATIVE,
    "yaw_rate_noise_radps_per_sqrt_s": NON_NEGATIVE,
    "pos_noise_m_per_sqrt_s": NON_NEGATIVE,
    "surge_noise_mps_per_sqrt_s": NON_NEGATIVE,
    "sway_noise_mps_per_sqrt_s": NON_NEGATIVE,
    "init_yaw_sigma_rad": POSITIVE,
    "init_yaw_rate_sigma_radps": POSITIVE,
    "init_pos_sigma_m": POSITIVE,
    "init_surge_sigma_mps": POSITIVE,
    "init_sway_sigma_mps": POSITIVE,
    "gnss_sigma_m": POSITIVE,
    "heading_sigma_rad": POSITIVE,
    "yaw_rate_sigma_radps": POSITIVE,
    "gate_chi2_position": ANY_NUMBER,
    "gate_chi2_heading": ANY_NUMBER,
    "gate_chi2_yaw_rate": ANY_NUMBER,
    "gate_chi2_pose": ANY_NUMBER,
    "gate_reset_s": NON_NEGATIVE,
    "reset_speed_sigma_mps": POSITIVE,
    "max_step_s": POSITIVE,
    "max_gap_s": POSITIVE,
}
SETTING_RANGES.update(under("model", vm.SETTING_RANGES))


class BoatEkf:
    """The boat EKF (module docstring). ``config``: overrides of :data:`DEFAULTS` (checked)."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "boat EKF")
        self.cfg = cfg
        self.params = [cfg["model"][name] for name in vm.PARAM_NAMES]
        self.q_density = [0.0] * N_STATE
        self.q_density[YAW] = cfg["yaw_noise_rad_per_sqrt_s"] ** 2
        self.q_density[YAW_RATE] = cfg["yaw_rate_noise_radps_per_sqrt_s"] ** 2
        self.q_density[NORTH] = cfg["pos_noise_m_per_sqrt_s"] ** 2
        self.q_density[EAST] = cfg["pos_noise_m_per_sqrt_s"] ** 2
        self.q_density[SURGE] = cfg["surge_noise_mps_per_sqrt_s"] ** 2
        self.q_density[SWAY] = cfg["sway_noise_mps_per_sqrt_s"] ** 2
        self.max_step_us = max(1, int(cfg["max_step_s"] * 1e6 + 0.5))
        self.max_gap_us = int(cfg["max_gap_s"] * 1e6)
        self.x = [0.0] * N_STATE
        self.P = la.zeros(N_STATE * N_STATE)
        self.initialized = False
        self.time_us = None
        self.thrust_n = [0.0, 0.0]           # last thrusts (T_l, T_r), held between thrust samples
        self.predicts = 0
        self.updates = 0
        self.gated = 0
        self.rejected = 0
        self.resets = 0
        self.skipped = 0                     # samples before initialisation (not fused)
        self.timeouts = 0                    # stops after a gap longer than max_gap_s
        self.last_nis = None
        self.last_innovation = None
        self.last_position_fused_us = None
        self._pending_position = None        # (time_us, north_m, east_m) before initialisation
        self._pending_heading = None         # (time_us, yaw_rad)
        self._last_heading = None            # (time_us, yaw_rad) of the latest heading measurement

    # ------------------------------------------------------------ set-up
    def init_sigmas(self):
        """1 sigma per state slot from the init_* settings."""
        c = self.cfg
        s = [0.0] * N_STATE
        s[YAW] = c["init_yaw_sigma_rad"]
        s[YAW_RATE] = c["init_yaw_rate_sigma_radps"]
        s[NORTH] = c["init_pos_sigma_m"]
        s[EAST] = c["init_pos_sigma_m"]
        s[SURGE] = c["init_surge_sigma_mps"]
        s[SWAY] = c["init_sway_sigma_mps"]
        return s

    def initialize(self, time_us, x, sigmas=None):
        """Start at state ``x`` (6 numbers, slots as the model) at ``time_us`` with a diagonal covariance
        of ``sigmas`` (6 numbers, default the init_* settings)."""
        sig = self.init_sigmas() if sigmas is None else [float(v) for v in sigmas]
        vals = [float(v) for v in x]
        if len(vals) != N_STATE or len(sig) != N_STATE or not la.is_finite(vals + sig):
            self.rejected += 1
            raise EstimatorInputError("initial state and sigmas need %d finite numbers each" % N_STATE)
        for v in sig:
            if not v > 0.0:
                self.rejected += 1
                raise EstimatorInputError("initial sigmas must be > 0, got %r" % (sig,))
        vals[YAW] = wrap_pi(vals[YAW])
        self.x = vals
        self.P = la.diag([v * v for v in sig])
        self.time_us = int(time_us)
        self.last_position_fused_us = self.time_us
        self._pending_position = None
        self._pending_heading = None
        self.initialized = True

    def _start_from(self, time_us, north_m, east_m, yaw_rad, speed_sigma=None):
        x = [0.0] * N_STATE
        x[NORTH] = north_m
        x[EAST] = east_m
        x[YAW] = yaw_rad
        sig = self.init_sigmas()
        if speed_sigma is not None:
            sig[SURGE] = speed_sigma
            sig[SWAY] = speed_sigma
        self.initialize(time_us, x, sig)

    def _restart(self, time_us, north_m, east_m):
        """Lost-filter restart at a gated position fix (module docstring); counted in ``resets``."""
        yaw = self._last_heading[1] if self._last_heading is not None else self.x[YAW]
        self._start_from(time_us, north_m, east_m, yaw, self.cfg["reset_speed_sigma_mps"])
        self.resets += 1

    # ------------------------------------------------------------ checks
    def _refuse(self, text):
        self.rejected += 1
        raise EstimatorInputError(text)

    def _check(self, sample, var_field):
        if not sample.is_finite():
            self._refuse("%s at %d us has non-finite values" % (type(sample).__name__, sample.time_us))
        var = getattr(sample, var_field) if var_field else None
        if var is not None and not var > 0.0:
            self._refuse("%s at %d us has a variance <= 0: %r" % (type(sample).__name__, sample.time_us, var))
        if self.initialized and sample.time_us < self.time_us:
            self._refuse("%s at %d us is older than the filter (%d us)" % (type(sample).__name__, sample.time_us,
                                                                         self.time_us))
        return var

    # ------------------------------------------------------------ predict
    def _propagate(self, to_us):
        """Model steps from self.time_us to ``to_us`` with self.thrust_n held (robotx eqs. 1-6)."""
        n = N_STATE
        while self.time_us < to_us:
            dt_us = min(self.max_step_us, to_us - self.time_us)
            dt = dt_us * 1e-6
            F = vm.jacobian_state(self.x, self.thrust_n, self.params, dt)
            self.x = vm.step(self.x, self.thrust_n, self.params, dt)
            P = self.P
            FP = [0.0] * (n * n)
            for i in range(n):
                oi = i * n
                for k in _F_NONZERO[i]:
                    fik = F[oi + k]
                    ok = k * n
                    for j in range(n):
                        FP[oi + j] += fik * P[ok + j]
            out = [0.0] * (n * n)
            for i in range(n):
                oi = i * n
                for j in range(i, n):
                    oj = j * n
                    s = 0.0
                    for k in _F_NONZERO[j]:
                        s += FP[oi + k] * F[oj + k]
                    out[oi + j] = s
                    out[oj + i] = s
            for i in range(n):
                out[i * n + i] += self.q_density[i] * dt
            self.P = out
            self.time_us += dt_us

    def _stale(self, time_us):
        """True (and the filter stopped) when ``time_us`` is more than max_gap_s after the filter's time."""
        if time_us - self.time_us > self.max_gap_us:
            self.initialized = False
            self.timeouts += 1
            return True
        return False

    def predict(self, sample):
        """Propagate to ``sample.time_us``. A ``onboard.vessel.samples.ThrustSample`` brings the thrusts held
        over the interval ending there; an ``onboard.core.samples.ImuSample`` (the estimator contract)
        propagates with the last thrusts held and then fuses its yaw rate (dang_z / dt, as
        :meth:`update_imu`). True when propagated; False before initialisation (thrusts are kept) or
        when a gap longer than max_gap_s stopped the filter."""
        self._check(sample, None)
        if self.initialized and sample.time_us <= self.time_us:
            self._refuse("%s at %d us is not later than the filter (%d us)" % (type(sample).__name__,
                                                                             sample.time_us, self.time_us))
        is_imu = isinstance(sample, ImuSample)
        if not is_imu:
            self.thrust_n = [sample.thrust_left_n, sample.thrust_right_n]
        if not self.initialized:
            self.skipped += 1
            return False
        if self._stale(sample.time_us):
            return False
        self._propagate(sample.time_us)
        self.predicts += 1
        if is_imu:
            rate = sample.dang_body_rad[2] / (sample.dt_us * 1e-6)
            self._fuse(sample.time_us, YAW_RATE_SLOTS, (rate,), (self.cfg["yaw_rate_sigma_radps"] ** 2,),
                       self.cfg["gate_chi2_yaw_rate"])
        return True

    # ------------------------------------------------------------ update
    def _fuse(self, time_us, slots, z, r_vars, gate):
        """Fuse measurement ``z`` of the state slots ``slots`` (variances ``r_vars``) at the filter's
        time; the yaw slot's residual is wrapped. Returns True when fused, False when gated."""
        n = N_STATE
        m = len(slots)
        x = self.x
        P = self.P
        y = [0.0] * m
        for a in range(m):
            y[a] = z[a] - x[slots[a]]
            if slots[a] == YAW:
                y[a] = wrap_pi(y[a])
        S = [0.0] * (m * m)
        for a in range(m):
            for b in range(m):
                S[a * m + b] = P[slots[a] * n + slots[b]]
            S[a * m + a] += r_vars[a]
        try:
            la.cholesky(S, m)
            S_inv = la.inverse(S, m)
        except la.LinAlgError:
            self._refuse("innovation covariance at %d us is not positive definite" % time_us)
        nis = la.dot(y, la.mat_vec(S_inv, y, m, m))
        self.last_nis = nis
        self.last_innovation = y
        if gate > 0 and nis > gate:
            self.gated += 1
            return False
        # PHt = P H^T (n x m): columns ``slots`` of P; K = PHt S^-1
        PHt = la.columns(P, n, n, slots)
        K = la.mat_mul(PHt, S_inv, n, m, m)
        dx = la.mat_vec(K, y, n, m)
        new_x = [x[i] + dx[i] for i in range(n)]
        new_x[YAW] = wrap_pi(new_x[YAW])
        # Joseph form, A = I - K H with H a selection: B = A P = P - K (H P); A P A^T = B - (B H^T) K^T;
        # then + K R K^T (R diagonal).
        B = list(P)
        for i in range(n):
            for a in range(m):
                kia = K[i * m + a]
                if kia == 0.0:
                    continue
                row = slots[a] * n
                for j in range(n):
                    B[i * n + j] -= kia * P[row + j]
        out = list(B)
        for i in range(n):
            for a in range(m):
                bia = B[i * n + slots[a]]
                for j in range(n):
                    out[i * n + j] -= bia * K[j * m + a]
        for a in range(m):
            ra = r_vars[a]
            for i in range(n):
                kr = K[i * m + a] * ra
                for j in range(n):
                    out[i * n + j] += kr * K[j * m + a]
        self.P = la.symmetrize(out, n)
        self.x = new_x
        self.updates += 1
        return True

    def _advance(self, time_us):
        """Propagate to a measurement's time; False when the gap stopped the filter."""
        if self._stale(time_us):
            return False
        self._propagate(time_us)
        return True

    def update_position(self, fix):
        """Fuse a GNSS fix (``onboard.vessel.samples.PositionSample``, local NED north/east). True when
        fused or when it started/restarted the filter; False when gated or waiting for a heading."""
        var = self._check(fix, "var_m2")
        r = max(var, MIN_POS_VAR_M2) if var is not None else self.cfg["gnss_sigma_m"] ** 2
        n_m, e_m = fix.pos_ne_m
        if not self.initialized or not self._advance(fix.time_us):
            self._pending_position = (fix.time_us, n_m, e_m)
            return self._try_start()
        if self._fuse(fix.time_us, POSITION_SLOTS, (n_m, e_m), (r, r), self.cfg["gate_chi2_position"]):
            self.last_position_fused_us = fix.time_us
            return True
        reset_us = self.cfg["gate_reset_s"] * 1e6
        if reset_us > 0 and fix.time_us - self.last_position_fused_us >= reset_us:
            self._restart(fix.time_us, n_m, e_m)
            return True
        return False

    def update_heading(self, heading):
        """Fuse a heading (``onboard.vessel.samples.HeadingSample``). True when fused or when it started
        the filter; False when gated or waiting for a position."""
        var = self._check(heading, "var_rad2")
        r = max(var, MIN_YAW_VAR_RAD2) if var is not None else self.cfg["heading_sigma_rad"] ** 2
        self._last_heading = (heading.time_us, heading.yaw_rad)
        if not self.initialized or not self._advance(heading.time_us):
            self._pending_heading = (heading.time_us, heading.yaw_rad)
            return self._try_start()
        return self._fuse(heading.time_us, HEADING_SLOTS, (heading.yaw_rad,), (r,), self.cfg["gate_chi2_heading"])

    def update_yaw_rate(self, rate):
        """Fuse a gyro yaw rate (``onboard.vessel.samples.YawRateSample``). False before initialisation
        or when gated."""
        var = self._check(rate, "var_rad2ps2")
        r = max(var, MIN_YAW_RATE_VAR_RAD2PS2) if var is not None else self.cfg["yaw_rate_sigma_radps"] ** 2
        if not self.initialized or not self._advance(rate.time_us):
            self.skipped += 1
            return False
        return self._fuse(rate.time_us, YAW_RATE_SLOTS, (rate.yaw_rate_radps,), (r,), self.cfg["gate_chi2_yaw_rate"])

    def update_imu(self, imu):
        """Fuse an ``onboard.core.samples.ImuSample``'s yaw rate (dang_z / dt) as :meth:`update_yaw_rate`
        with the default yaw_rate_sigma_radps (the planar vessel ignores the accelerometer)."""
        self._check(imu, None)
        rate = imu.dang_body_rad[2] / (imu.dt_us * 1e-6)
        if not self.initialized or not self._advance(imu.time_us):
            self.skipped += 1
            return False
        r = self.cfg["yaw_rate_sigma_radps"] ** 2
        return self._fuse(imu.time_us, YAW_RATE_SLOTS, (rate,), (r,), self.cfg["gate_chi2_yaw_rate"])

    def update_pose(self, pose):
        """Fuse an aiding ``onboard.core.samples.PoseSample``'s north, east and yaw (the estimator
        contract). The first one starts the filter."""
        if not pose.is_finite():
            self._refuse("pose sample at %d us has non-finite values" % pose.time_us)
        for var in (pose.cov_pos_m2 or ()) + (pose.cov_att_rad2 or ()):
            if not var > 0.0:
                self._refuse("pose sample at %d us has a variance <= 0" % pose.time_us)
        if self.initialized and pose.time_us < self.time_us:
            self._refuse("pose sample at %d us is older than the filter (%d us)" % (pose.time_us, self.time_us))
        n_m, e_m = pose.pos_ned_m[0], pose.pos_ned_m[1]
        yaw = pose.euler_rad[2]
        if not self.initialized or not self._advance(pose.time_us):
            self._start_from(pose.time_us, n_m, e_m, yaw)
            return True
        cfg = self.cfg
        r_pos = cfg["gnss_sigma_m"] ** 2
        r_n = max(pose.cov_pos_m2[0], MIN_POS_VAR_M2) if pose.cov_pos_m2 is not None else r_pos
        r_e = max(pose.cov_pos_m2[1], MIN_POS_VAR_M2) if pose.cov_pos_m2 is not None else r_pos
        r_yaw = (max(pose.cov_att_rad2[2], MIN_YAW_VAR_RAD2) if pose.cov_att_rad2 is not None
                 else cfg["heading_sigma_rad"] ** 2)
        if self._fuse(pose.time_us, POSE_SLOTS, (n_m, e_m, yaw), (r_n, r_e, r_yaw), cfg["gate_chi2_pose"]):
            self.last_position_fused_us = pose.time_us
            return True
        reset_us = cfg["gate_reset_s"] * 1e6
        if reset_us > 0 and pose.time_us - self.last_position_fused_us >= reset_us:
            self._start_from(pose.time_us, n_m, e_m, yaw, cfg["reset_speed_sigma_mps"])
            self.resets += 1
            return True
        return False

    def _try_start(self):
        pos = self._pending_position
        head = self._pending_heading
        if pos is None or head is None:
            self.skipped += 1
            return False
        self._start_from(max(pos[0], head[0]), pos[1], pos[2], head[1])
        return True

    # ------------------------------------------------------------ outputs
    def state(self):
        """Copy of the state (slots YAW .. SWAY)."""
        return list(self.x)

    def covariance(self):
        """Copy of the flat 6x6 covariance (state slot order)."""
        return list(self.P)

    def nav_state(self):
        """NavState at the filter's time: NED position (down 0), NED velocity over ground, yaw."""
        v_n, v_e = vm.body_to_ned_velocity(self.x)
        return NavState(self.time_us or 0, (self.x[NORTH], self.x[EAST], 0.0), (v_n, v_e, 0.0),
                        (0.0, 0.0, self.x[YAW]))

    def pose_covariance(self):
        """Flat 3x3 covariance of (north_m, east_m, yaw_rad) (``onboard.estimators.base``)."""
        P = self.P
        out = [0.0] * (POSE_DIM * POSE_DIM)
        for a in range(POSE_DIM):
            for b in range(POSE_DIM):
                out[a * POSE_DIM + b] = P[POSE_SLOTS[a] * N_STATE + POSE_SLOTS[b]]
        return out

    def pose_sigma(self):
        """1 sigma of (north_m, east_m, yaw_rad)."""
        P = self.P
        return tuple(math.sqrt(max(P[s * N_STATE + s], 0.0)) for s in POSE_SLOTS)

    def counters(self):
        return {"predicts": self.predicts, "updates": self.updates, "gated": self.gated,
                "rejected": self.rejected, "resets": self.resets, "skipped": self.skipped,
                "timeouts": self.timeouts}
