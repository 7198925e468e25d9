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
fix together with a heading at most ``max_gap_s`` apart (whichever comes second starts it; velocities 0; of two
further apart the older is dropped).

Bad input (NaN/inf, non-positive variances of what is fused (an aiding pose's unused down, roll and
pitch variances need only be >= 0), a sample older than the filter's time, a thrust sample not later
than it, a sample whose propagation with the held thrusts would end in a non-finite state, an IMU sample
whose yaw rate dang_z / dt is not finite, an initial state given an int too large for a float) raises
:class:`EstimatorInputError`, counts ``rejected`` and leaves the state, covariance, held thrusts and every
other counter as they were. Follows ``onboard.estimators.base``.
"""
import math

from onboard.core import linalg as la
from onboard.core.angles import wrap_pi
from onboard.core.samples import ImuSample, NavState, SampleError, _int
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

# Nonzero columns of each row of F = d step / d x (model.jacobian_state), for the sparse F P F^T
# (``BoatEkf._propagate`` writes it out for the slot order YAW .. SWAY = 0 .. 5).
if (YAW, YAW_RATE, NORTH, EAST, SURGE, SWAY) != (0, 1, 2, 3, 4, 5):
    raise ImportError("boat_ekf._propagate assumes the model's slot order yaw, yaw rate, north, east, surge, sway")
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
        """Start at state ``x`` (6 numbers, slots as the model) at ``time_us`` (a whole number of us) with a
        diagonal covariance of ``sigmas`` (6 numbers, default the init_* settings). Anything else raises
        :class:`EstimatorInputError`, counted in ``rejected``, with the filter as it was."""
        try:
            t_us = _int("time_us", time_us)
        except SampleError as exc:
            self._refuse("initialize: %s" % exc)
        try:
            sig = self.init_sigmas() if sigmas is None else [float(v) for v in sigmas]
            vals = [float(v) for v in x]
        except (TypeError, ValueError, OverflowError):
            self._refuse("initial state and sigmas need %d finite numbers each" % N_STATE)
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
        self.time_us = t_us
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
        """Model steps from self.time_us to ``to_us`` with self.thrust_n held (robotx eqs. 1-6):
        x' = f(x, T), P' = F P F^T + Q dt, written out over the nonzeros of F (``_F_NONZERO``; names
        pIJ, fIJ, fpIJ = (F P)IJ, oIJ = P'IJ with I, J the slots YAW .. SWAY = 0 .. 5), each sum in the
        order of ``_F_NONZERO``. The steps run on copies: when they end in a non-finite state or covariance
        (a finite but absurd held thrust, e.g. 1e8 N, makes the explicit steps overflow) the propagation is
        refused (:class:`EstimatorInputError`, counted) and the filter keeps its state, covariance and time."""
        q0, q1, q2, q3, q4, q5 = self.q_density
        x, P, t_us = self.x, self.P, self.time_us
        while t_us < to_us:
            dt_us = min(self.max_step_us, to_us - t_us)
            dt = dt_us * 1e-6
            x, F = vm.step_with_jacobian(x, self.thrust_n, self.params, dt)
            (p00, p01, p02, p03, p04, p05, p10, p11, p12, p13, p14, p15, p20, p21, p22, p23, p24, p25,
             p30, p31, p32, p33, p34, p35, p40, p41, p42, p43, p44, p45, p50, p51, p52, p53, p54, p55) = P
            f00 = F[0]; f01 = F[1]; f11 = F[7]; f14 = F[10]
            f15 = F[11]; f20 = F[12]; f22 = F[14]; f24 = F[16]
            f25 = F[17]; f30 = F[18]; f33 = F[21]; f34 = F[22]
            f35 = F[23]; f41 = F[25]; f44 = F[28]; f45 = F[29]
            f51 = F[31]; f54 = F[34]; f55 = F[35]
            fp00 = f00 * p00 + f01 * p10; fp01 = f00 * p01 + f01 * p11
            fp02 = f00 * p02 + f01 * p12; fp03 = f00 * p03 + f01 * p13
            fp04 = f00 * p04 + f01 * p14; fp05 = f00 * p05 + f01 * p15
            fp10 = f11 * p10 + f14 * p40 + f15 * p50; fp11 = f11 * p11 + f14 * p41 + f15 * p51
            fp12 = f11 * p12 + f14 * p42 + f15 * p52; fp13 = f11 * p13 + f14 * p43 + f15 * p53
            fp14 = f11 * p14 + f14 * p44 + f15 * p54; fp15 = f11 * p15 + f14 * p45 + f15 * p55
            fp20 = f20 * p00 + f22 * p20 + f24 * p40 + f25 * p50; fp21 = f20 * p01 + f22 * p21 + f24 * p41 + f25 * p51
            fp22 = f20 * p02 + f22 * p22 + f24 * p42 + f25 * p52; fp23 = f20 * p03 + f22 * p23 + f24 * p43 + f25 * p53
            fp24 = f20 * p04 + f22 * p24 + f24 * p44 + f25 * p54; fp25 = f20 * p05 + f22 * p25 + f24 * p45 + f25 * p55
            fp30 = f30 * p00 + f33 * p30 + f34 * p40 + f35 * p50; fp31 = f30 * p01 + f33 * p31 + f34 * p41 + f35 * p51
            fp32 = f30 * p02 + f33 * p32 + f34 * p42 + f35 * p52; fp33 = f30 * p03 + f33 * p33 + f34 * p43 + f35 * p53
            fp34 = f30 * p04 + f33 * p34 + f34 * p44 + f35 * p54; fp35 = f30 * p05 + f33 * p35 + f34 * p45 + f35 * p55
            fp40 = f41 * p10 + f44 * p40 + f45 * p50; fp41 = f41 * p11 + f44 * p41 + f45 * p51
            fp42 = f41 * p12 + f44 * p42 + f45 * p52; fp43 = f41 * p13 + f44 * p43 + f45 * p53
            fp44 = f41 * p14 + f44 * p44 + f45 * p54; fp45 = f41 * p15 + f44 * p45 + f45 * p55
            fp50 = f51 * p10 + f54 * p40 + f55 * p50; fp51 = f51 * p11 + f54 * p41 + f55 * p51
            fp52 = f51 * p12 + f54 * p42 + f55 * p52; fp53 = f51 * p13 + f54 * p43 + f55 * p53
            fp54 = f51 * p14 + f54 * p44 + f55 * p54; fp55 = f51 * p15 + f54 * p45 + f55 * p55
            o00 = fp00 * f00 + fp01 * f01 + q0 * dt
            o01 = fp01 * f11 + fp04 * f14 + fp05 * f15
            o02 = fp00 * f20 + fp02 * f22 + fp04 * f24 + fp05 * f25
            o03 = fp00 * f30 + fp03 * f33 + fp04 * f34 + fp05 * f35
            o04 = fp01 * f41 + fp04 * f44 + fp05 * f45
            o05 = fp01 * f51 + fp04 * f54 + fp05 * f55
            o11 = fp11 * f11 + fp14 * f14 + fp15 * f15 + q1 * dt
            o12 = fp10 * f20 + fp12 * f22 + fp14 * f24 + fp15 * f25
            o13 = fp10 * f30 + fp13 * f33 + fp14 * f34 + fp15 * f35
            o14 = fp11 * f41 + fp14 * f44 + fp15 * f45
            o15 = fp11 * f51 + fp14 * f54 + fp15 * f55
            o22 = fp20 * f20 + fp22 * f22 + fp24 * f24 + fp25 * f25 + q2 * dt
            o23 = fp20 * f30 + fp23 * f33 + fp24 * f34 + fp25 * f35
            o24 = fp21 * f41 + fp24 * f44 + fp25 * f45
            o25 = fp21 * f51 + fp24 * f54 + fp25 * f55
            o33 = fp30 * f30 + fp33 * f33 + fp34 * f34 + fp35 * f35 + q3 * dt
            o34 = fp31 * f41 + fp34 * f44 + fp35 * f45
            o35 = fp31 * f51 + fp34 * f54 + fp35 * f55
            o44 = fp41 * f41 + fp44 * f44 + fp45 * f45 + q4 * dt
            o45 = fp41 * f51 + fp44 * f54 + fp45 * f55
            o55 = fp51 * f51 + fp54 * f54 + fp55 * f55 + q5 * dt
            P = [o00, o01, o02, o03, o04, o05,
                 o01, o11, o12, o13, o14, o15,
                 o02, o12, o22, o23, o24, o25,
                 o03, o13, o23, o33, o34, o35,
                 o04, o14, o24, o34, o44, o45,
                 o05, o15, o25, o35, o45, o55]
            t_us += dt_us
        total = sum(x) + sum(P)                  # NaN or infinite when any entry is (or the sum overflows)
        if not total - total == 0.0:
            self._refuse("propagating to %d us with the held thrusts (%r, %r) N gives a non-finite state"
                         % (to_us, self.thrust_n[0], self.thrust_n[1]))
        self.x, self.P, self.time_us = x, P, t_us

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
        rate = self._imu_rate(sample) if is_imu else None
        held = self.thrust_n
        if not is_imu:
            self.thrust_n = [sample.thrust_left_n, sample.thrust_right_n]
        if not self.initialized:
            self.skipped += 1
            return False
        if self._stale(sample.time_us):
            return False
        try:
            self._propagate(sample.time_us)
        except EstimatorInputError:
            self.thrust_n = held                 # a refused sample leaves the held thrusts too
            raise
        self.predicts += 1
        if is_imu:
            self._fuse(sample.time_us, YAW_RATE_SLOTS, (rate,), (self.cfg["yaw_rate_sigma_radps"] ** 2,),
                       self.cfg["gate_chi2_yaw_rate"])
        return True

    # ------------------------------------------------------------ update
    def _fuse(self, time_us, slots, z, r_vars, gate):
        """Fuse measurement ``z`` of the state slots ``slots`` (variances ``r_vars``) at the filter's
        time; the yaw slot's residual is wrapped. Returns True when fused, False when gated."""
        if len(slots) == 1:
            return self._fuse_scalar(time_us, slots[0], z[0], r_vars[0], gate)
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

    def _fuse_scalar(self, time_us, slot, z, r, gate):
        """:meth:`_fuse` of one measured slot (heading, yaw rate): the same arithmetic in the same order
        without the general matrix helpers (S = P_ss + r, K = P_:s / S; Joseph form row by row,
        P = (I - K H) P (I - K H)^T + K r K^T, then (P + P^T) / 2), written out over the six columns."""
        n = N_STATE
        x = self.x
        P = self.P
        y = z - x[slot]
        if slot == YAW:
            y = wrap_pi(y)
        S = P[slot * n + slot] + r
        if not S > 0.0:
            self._refuse("innovation covariance at %d us is not positive definite" % time_us)
        S_inv = 1.0 / S
        nis = 0.0 + y * (0.0 + S_inv * y)
        self.last_nis = nis
        self.last_innovation = [y]
        if gate > 0 and nis > gate:
            self.gated += 1
            return False
        K = [0.0 + P[i * n + slot] * S_inv for i in range(n)]
        new_x = [x[i] + (0.0 + K[i] * y) for i in range(n)]
        new_x[YAW] = wrap_pi(new_x[YAW])
        k0, k1, k2, k3, k4, k5 = K
        ps = slot * n
        s0, s1, s2, s3, s4, s5 = P[ps], P[ps + 1], P[ps + 2], P[ps + 3], P[ps + 4], P[ps + 5]
        ps_slot = P[ps + slot]
        rows = []
        for i in range(n):
            oi = i * n
            ki = K[i]
            bis = P[oi + slot] - ki * ps_slot
            kr = ki * r
            rows.append((P[oi] - ki * s0 - bis * k0 + kr * k0, P[oi + 1] - ki * s1 - bis * k1 + kr * k1,
                         P[oi + 2] - ki * s2 - bis * k2 + kr * k2, P[oi + 3] - ki * s3 - bis * k3 + kr * k3,
                         P[oi + 4] - ki * s4 - bis * k4 + kr * k4, P[oi + 5] - ki * s5 - bis * k5 + kr * k5))
        r0, r1, r2, r3, r4, r5 = rows
        v01 = 0.5 * (r0[1] + r1[0]); v02 = 0.5 * (r0[2] + r2[0]); v03 = 0.5 * (r0[3] + r3[0])
        v04 = 0.5 * (r0[4] + r4[0]); v05 = 0.5 * (r0[5] + r5[0]); v12 = 0.5 * (r1[2] + r2[1])
        v13 = 0.5 * (r1[3] + r3[1]); v14 = 0.5 * (r1[4] + r4[1]); v15 = 0.5 * (r1[5] + r5[1])
        v23 = 0.5 * (r2[3] + r3[2]); v24 = 0.5 * (r2[4] + r4[2]); v25 = 0.5 * (r2[5] + r5[2])
        v34 = 0.5 * (r3[4] + r4[3]); v35 = 0.5 * (r3[5] + r5[3]); v45 = 0.5 * (r4[5] + r5[4])
        self.P = [r0[0], v01, v02, v03, v04, v05,
                  v01, r1[1], v12, v13, v14, v15,
                  v02, v12, r2[2], v23, v24, v25,
                  v03, v13, v23, r3[3], v34, v35,
                  v04, v14, v24, v34, r4[4], v45,
                  v05, v15, v25, v35, v45, r5[5]]
        self.x = new_x
        self.updates += 1
        return True

    def _imu_rate(self, imu):
        """The yaw rate dang_z / dt (rad/s) of an ImuSample; a finite increment over a short interval whose
        rate overflows (1e303 rad in 1 us) is refused (:class:`EstimatorInputError`, counted), nothing changed."""
        rate = imu.dang_body_rad[2] / (imu.dt_us * 1e-6)
        if not rate - rate == 0.0:
            self._refuse("ImuSample at %d us has a yaw rate that is not finite" % imu.time_us)
        return rate

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
        rate = self._imu_rate(imu)
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
        # the variances fused (north, east, yaw) must be > 0; the others (down, roll, pitch) only not negative
        # (a planar pose source reports 0 for them)
        for vars_, used in ((pose.cov_pos_m2, (0, 1)), (pose.cov_att_rad2, (2,))):
            for i, var in enumerate(vars_ or ()):
                if not (var > 0.0 if i in used else var >= 0.0):
                    self._refuse("pose sample at %d us has a variance %s 0" % (pose.time_us,
                                                                              "<=" if i in used else "<"))
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
        """Start from the pending position fix and heading; False (counted in ``skipped``) while one is missing
        or the two are more than max_gap_s apart (the older one is dropped: a heading from minutes before the
        fix is not the boat's heading at the fix)."""
        pos = self._pending_position
        head = self._pending_heading
        if pos is not None and head is not None and abs(pos[0] - head[0]) > self.max_gap_us:
            if pos[0] < head[0]:
                self._pending_position = pos = None
            else:
                self._pending_heading = head = None
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
