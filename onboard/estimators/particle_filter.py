"""Particle filter over a neighbour's (or goal's) relative pose in the drone's own frame (pure Python).

uwb-pocket-drones section IV-B. Each particle is one hypothesis ``(x_m, y_m, yaw_rad)`` of
an object (neighbour drone or goal) in the own body frame (planar FRD: x forward, y right,
yaw from x towards y): ``x_m, y_m`` its position, ``yaw_rad`` the rotation from the object's
frame to the own frame (``R(yaw)`` maps the object's body velocity into the own frame).

One step (drones hold their yaw, so frames translate but do not rotate):

* propagate with the control u_t = own and peer body velocity (pocket eq. II-D):
  ``p' = p + dt * (R(yaw) v_peer - v_own) + sigma_pos * n``, ``yaw' = yaw + sigma_yaw * n``
  (a random walk: sigma_pos, sigma_yaw proportional to sqrt(dt), see ``noise_reference_dt_s``);
* weight by the UWB ranging noise model (pocket III-A): the measured range is
  ``d = |p| + e``, ``e ~ N(mu=0.0085569 m, sigma^2=0.061295 m^2)``, so
  ``w = w_prior exp(-(d - mu - |p|)^2 / (2 sigma^2))``, kept as log-weights shifted by the
  best particle so a weight of 1 always exists and nothing underflows to an all-zero set;
* estimate = weighted mean of x, y and circular mean of yaw, before resampling;
* when the effective sample size is below ``resample_neff_fraction * N`` (1.0, the
  default, = every step with a range, as the paper): resample (systematic / low-variance,
  one uniform draw) ``N - n_refresh`` particles (weights back to uniform) and
  put ``n_refresh = round(0.1 N)`` new particles around the learned (RNN) estimate
  (pocket IV-B: "90 % drawn from the previous set and 10 % new particles"); without a
  learned estimate (the pure particle-filter configuration of pocket figs. 5-6) all N
  are resampled.

Randomness is never drawn inside a kernel: the caller's ``draws`` object hands over
standard normals and uniforms, and every kernel takes them as a buffer (the Cython
build draws the normals of a NumpyDraws over a PCG64 generator in C from that generator,
the numbers ``draws.normals`` gives, bit for bit: cython_ext/pf_kernels.pyx). The pure
kernels below, the NumPy kernels (``particle_filter_numpy``) and the Cython kernels
(``cython_ext.pf_kernels``) compute the same numbers from the same draws; pick one
with :func:`kernels_for` (``onboard.impl`` switch, CPython only) or pass ``kernels=``.
:func:`make_filter` builds the filter for a kernels choice: :class:`ParticleFilter` on the
pure or NumPy kernels, the Cython module's ``filter_class`` on the Cython ones.

One source for every build: :class:`ParticleFilter` holds the configuration, input checks,
initialisation, the cycle's decisions (outliers, restarts, refresh count, adaptive
resampling), state access and counters. The numeric work sits behind a few hooks
(``_setup_state``, ``_spawn``, ``_predict``, ``_resample``, ``_spread_m``) and the particle
attributes; the Cython build (``cython_ext/pf_kernels.pyx``) is a kernel type placed before
this class in the MRO that replaces only those hooks and ``step``'s input checks for
well-formed input (anything else comes back to :meth:`ParticleFilter.step`).

This module runs unchanged on MicroPython (lists of floats, ``math`` only).
"""
import math

from onboard.core.settings import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, UNIT_OPEN, checked, int_at_least, is_number,
                                   one_of, within)
from onboard.estimators.base import TIME_US_MAX, TIME_US_MIN, EstimatorInputError

# UWB ranging error model, pocket III-A (DecaWave DWM1000 vs motion capture).
UWB_RANGE_BIAS_M = 0.0085569
UWB_RANGE_VAR_M2 = 0.061295

PI = math.pi
TWO_PI = 2.0 * math.pi

# Slots of a particle and of the estimate buffer (no magic indexes elsewhere).
X = 0
Y = 1
YAW = 2
PARTICLE_DIM = 3            # draws per particle: (x, y, yaw) normals
EST_X = 0                   # weighted mean x_m
EST_Y = 1                   # weighted mean y_m
EST_YAW = 2                 # circular weighted mean yaw_rad
EST_NEFF = 3                # effective sample size (sum w)^2 / sum w^2
EST_E2_MIN = 4              # smallest squared range residual, m^2 (outlier check)
EST_SW = 5                  # sum of the weights shifted by the best particle (mean likelihood, adaptive refresh)
EST_LMAX = 6                # the shift: largest log-weight before normalising (adaptive refresh)
EST_LEN = 7

DEFAULTS = {
    "n_particles": 100,
    "refresh_fraction": 0.1,               # pocket IV-B: 10 % new particles per step
    "range_bias_m": UWB_RANGE_BIAS_M,
    "range_var_m2": UWB_RANGE_VAR_M2,
    "vel_noise_mps": 0.15,                 # velocity error integrated into the position walk
    "pos_noise_floor_m": 0.005,            # position jitter per reference step, m
    "yaw_noise_radps": 0.5,                # yaw random walk rate (keeps orientation hypotheses alive)
    # the process noise is a random walk: its variance grows linearly with dt, so the position sigma
    # (pos_noise_floor_m + vel_noise_mps * ref) and the yaw sigma (yaw_noise_radps * ref) hold for a step of
    # ref = noise_reference_dt_s and scale with sqrt(dt / ref), so a filter stepped k times per period (a
    # 2-drone token ring delivers ~7 ranges per pair and 0.1 s) diffuses as much as one stepped once; with
    # sigmas linear in dt (0) it would diffuse k times less and its orientation hypotheses die out
    "noise_reference_dt_s": 0.1,
    "refresh_range_sigma_m": 0.25,         # new particles: range spread (about the UWB sigma)
    "refresh_bearing_sigma_rad": 0.1745,   # ... bearing spread: half a 20-deg bin ~ 10 deg
    "refresh_yaw_sigma_rad": 0.35,         # ... orientation spread ~ 20 deg
    "outlier_sigmas": 5.0,                 # a range this far from every particle is counted
    # "fixed": refresh_fraction new particles every step with a learned estimate (pocket IV-B);
    # "adaptive": augmented MCL (Thrun et al., Probabilistic Robotics table 8.3): the fraction is
    # 1 - w_fast / w_slow of the short/long-term mean range likelihood, clamped to
    # [refresh_fraction_min, refresh_fraction], so learned particles come in when the ranges stop
    # agreeing with the filter (lost, or not converged) and not while it tracks
    # "spread": refresh_fraction new particles while the filter has not converged - the weighted spread of
    # its positions (sqrt of the weighted mean squared distance from the estimate) above refresh_spread_rad
    # times the estimate's distance, i.e. its bearing still uncertain - and refresh_fraction_min once it has:
    # a converged filter is more precise than the learned estimator, so learned particles injected after
    # convergence cost accuracy (docs/results/swarm.md). Angular, not in metres: at 4-5 m range a converged
    # cloud spreads ~0.5 m along its arc
    "refresh_mode": "fixed",
    "refresh_fraction_min": 0.0,
    "refresh_spread_rad": 0.25,
    # resample (and refresh) only when the effective sample size drops below this fraction of N
    # (Doucet et al. 2000, adaptive resampling); weights carry over between steps otherwise, so
    # two hypotheses (the range-only mirror ambiguity) survive until motion tells them apart
    # instead of one dying by resampling noise. 1.0 = every step with a range (pocket IV-B).
    "resample_neff_fraction": 1.0,
    "alpha_slow": 0.05,
    "alpha_fast": 0.5,
    # lost-filter recovery (not in the paper; 0 = off): after this many consecutive outlier ranges (no
    # particle within outlier_sigmas of the measured range) the filter starts afresh at the measured
    # range (ring, or around the learned estimate); with sigma 0.25 m, three 5-sigma misses in a row do
    # not happen while tracking, they do when the filter locked onto the mirrored pose
    "reinit_after_outliers": 0,
    # lost-filter restart on the range residual (not in the paper; 0 = off): the low-passed residual
    # ``range - bias - |estimate|`` (factor lost_residual_alpha per range, from 0 at the start) below
    # -lost_residual_m means the estimate sits farther away than the ranges say, range after range,
    # without any single range being a 5-sigma outlier; the filter then starts afresh at the measured
    # range. Only this sign: an unresolved ring posterior has its weighted mean *inside* the ring
    # (positive residual) and must not restart
    "lost_residual_m": 0.0,
    "lost_residual_alpha": 0.1,
}
REFRESH_MODES = ("fixed", "adaptive", "spread")


# The largest range (m) and speed (m/s) the filter takes: no UWB or goal range, nor a drone, comes near them,
# and far beyond them (a range of about 1e150 m, a speed integrated to such a distance) the squared range
# residuals overflow, every log-weight is -inf and the weights, the estimate and the resampled set turn NaN.
MAX_RANGE_M = 1e9
MAX_SPEED_MPS = 1e6


class PfInputError(EstimatorInputError):
    """Malformed or non-finite input to the particle filter; its state was not changed.

    A subclass of ``onboard.estimators.base.EstimatorInputError`` (so of ValueError): the filter
    shares the estimators' error contract, not their predict/update interface (see base)."""


def _finite(v):
    return v == v and v not in (float("inf"), float("-inf"))


def _as_float(v):
    """float(v) for a number; an int too large for a float gives inf (as MicroPython's float() does)."""
    try:
        return float(v)
    except OverflowError:
        return float("inf")


def wrap_pi(angle_rad):
    """Wrap to [-pi, pi) radians (same arithmetic as onboard.core.angles.wrap_pi, in every path)."""
    a = math.fmod(angle_rad + PI, TWO_PI)
    if a < 0.0:
        a += TWO_PI
        if a >= TWO_PI:
            a = 0.0             # a remainder just below zero (-4e-16) rounded up to 2 pi, which is 0
    return a - PI


# ------------------------------------------------------------------ pure kernels
# Buffers are flat lists; particle i's draws are noise[3i + X], [3i + Y], [3i + YAW].

def alloc(n):
    """A zeroed buffer of n floats for this implementation."""
    return [0.0] * n


def as_buffer(seq):
    """Draws or particles as this implementation's buffer type (a list)."""
    if isinstance(seq, list):
        return seq
    return [float(v) for v in seq]


def predict_weight(xs, ys, yaws, ws, lws, n, dt_s, vx_own_mps, vy_own_mps, vx_peer_mps, vy_peer_mps,
                   range_m, bias_m, inv_two_var_m2, noise, sigma_pos_m, sigma_yaw_rad, est):
    """Propagate n particles in place, weight them, write the weighted estimate into est.

    Motion (pocket IV-B, control u_t = own + peer velocity):
    ``x += dt (cos(yaw) vx_peer - sin(yaw) vy_peer - vx_own) + sigma_pos n_x`` (same for y
    with ``sin(yaw) vx_peer + cos(yaw) vy_peer - vy_own``), ``yaw = wrap(yaw + sigma_yaw n_yaw)``.
    Weight (pocket III-A noise model) on top of the prior log-weight ``lws`` (0 after a
    resampling): ``l = lws - e^2 inv_two_var`` with ``e = range - bias - |p|``, shifted by its
    maximum so the best particle has weight 1 and nothing underflows to an all-zero set:
    ``lws = l - l_max``, ``w = exp(lws)``. ``inv_two_var_m2 = 0`` (no range) keeps the prior
    weights. ws receives the weights (input to :func:`resample`), lws the shifted log-weights.
    """
    e2_min = float("inf")
    l_max = float("-inf")
    for i in range(n):
        k = PARTICLE_DIM * i
        yaw = yaws[i]
        c = math.cos(yaw)
        s = math.sin(yaw)
        x = xs[i] + dt_s * (c * vx_peer_mps - s * vy_peer_mps - vx_own_mps) + sigma_pos_m * noise[k + X]
        y = ys[i] + dt_s * (s * vx_peer_mps + c * vy_peer_mps - vy_own_mps) + sigma_pos_m * noise[k + Y]
        xs[i] = x
        ys[i] = y
        yaws[i] = wrap_pi(yaw + sigma_yaw_rad * noise[k + YAW])
        e = range_m - bias_m - math.sqrt(x * x + y * y)
        e2 = e * e
        lw = lws[i] - e2 * inv_two_var_m2
        lws[i] = lw
        if e2 < e2_min:
            e2_min = e2
        if lw > l_max:
            l_max = lw
    sw = 0.0
    sww = 0.0
    swx = 0.0
    swy = 0.0
    sws = 0.0
    swc = 0.0
    for i in range(n):
        lw = lws[i] - l_max
        lws[i] = lw
        w = math.exp(lw)
        ws[i] = w
        sw += w
        sww += w * w
        swx += w * xs[i]
        swy += w * ys[i]
        sws += w * math.sin(yaws[i])
        swc += w * math.cos(yaws[i])
    est[EST_X] = swx / sw
    est[EST_Y] = swy / sw
    est[EST_YAW] = math.atan2(sws, swc)
    est[EST_NEFF] = sw * sw / sww
    est[EST_E2_MIN] = e2_min
    est[EST_SW] = sw
    est[EST_LMAX] = l_max


def resample(xs, ys, yaws, ws, n, n_keep, u0, xs_out, ys_out, yaws_out):
    """Systematic (low-variance) resampling of n_keep particles from n weighted ones.

    Thrun et al. Probabilistic Robotics table 4.4: one uniform draw u0 in [0, 1); the m-th
    pick is the first particle whose cumulative weight exceeds ``(u0 + m) * total / n_keep``
    (strictly, so a particle of weight 0 is never picked).
    Writes slots 0..n_keep-1 of the out buffers.
    """
    total = 0.0
    for i in range(n):
        total += ws[i]
    step = total / n_keep
    i = 0
    cum = ws[0]
    last = n - 1
    for m in range(n_keep):
        target = (u0 + m) * step
        while cum <= target and i < last:
            i += 1
            cum += ws[i]
        xs_out[m] = xs[i]
        ys_out[m] = ys[i]
        yaws_out[m] = yaws[i]


def refresh(xs, ys, yaws, start, count, range_m, bearing_rad, yaw_rad,
            sigma_range_m, sigma_bearing_rad, sigma_yaw_rad, noise):
    """New particles in slots start..start+count-1 around a learned estimate (pocket IV-B).

    Polar spread around (range, bearing): ``r = |range + sigma_r n_0|``,
    ``b = bearing + sigma_b n_1``, ``x = r cos b``, ``y = r sin b``,
    ``yaw = wrap(yaw + sigma_yaw n_2)``.
    """
    for j in range(count):
        k = PARTICLE_DIM * j
        r = range_m + sigma_range_m * noise[k]
        if r < 0.0:
            r = -r
        b = bearing_rad + sigma_bearing_rad * noise[k + 1]
        xs[start + j] = r * math.cos(b)
        ys[start + j] = r * math.sin(b)
        yaws[start + j] = wrap_pi(yaw_rad + sigma_yaw_rad * noise[k + 2])


def weighted_spread(xs, ys, ws, n, mean_x_m, mean_y_m, sw):
    """Weighted spread of the particle positions about (mean_x_m, mean_y_m), m:
    ``sqrt(sum w ((x - mean_x)^2 + (y - mean_y)^2) / sw)`` with ``sw = sum w`` (the refresh gate of
    refresh_mode "spread"; predict_weight leaves the weights, mean and sw to call it with)."""
    s = 0.0
    for i in range(n):
        dx = xs[i] - mean_x_m
        dy = ys[i] - mean_y_m
        s += ws[i] * (dx * dx + dy * dy)
    return math.sqrt(s / sw)


def init_ring(xs, ys, yaws, n, range_m, sigma_range_m, normals, uniforms):
    """Uninformed start (pure particle filter): bearing and yaw uniform, range around the first range.

    ``r = |range + sigma_r normals[i]|``, ``b = -pi + 2 pi uniforms[2i]``,
    ``yaw = -pi + 2 pi uniforms[2i + 1]``.
    """
    for i in range(n):
        r = range_m + sigma_range_m * normals[i]
        if r < 0.0:
            r = -r
        b = -PI + TWO_PI * uniforms[2 * i]
        xs[i] = r * math.cos(b)
        ys[i] = r * math.sin(b)
        yaws[i] = -PI + TWO_PI * uniforms[2 * i + 1]


class _Kernels:
    """A namespace of kernel functions (the pure implementation's stand-in for a module)."""


PURE = _Kernels()
PURE.name = "pure"
PURE.alloc = alloc
PURE.as_buffer = as_buffer
PURE.predict_weight = predict_weight
PURE.resample = resample
PURE.refresh = refresh
PURE.init_ring = init_ring
PURE.weighted_spread = weighted_spread

KERNEL_MODULES = {
    "pure": "onboard.estimators.particle_filter",
    "numpy": "onboard.estimators.particle_filter_numpy",
    "cython": "cython_ext.pf_kernels",
}


def kernels_for(impl=None):
    """Kernels of the implementation chosen by onboard.impl (argument or $ONBOARD_IMPL). CPython only."""
    from onboard import impl as impl_switch
    name = impl_switch.selected(impl)
    if name == "pure":
        return PURE
    return impl_switch.load(KERNEL_MODULES, name)


# ------------------------------------------------------------------ draws
class PureDraws:
    """Seeded standard normals and uniforms in pure Python (same numbers on MicroPython).

    xorshift32 for uniforms in [0, 1), Box-Muller for normals. For CPython runs the
    NumPy-backed :class:`onboard.estimators.particle_filter_numpy.NumpyDraws` is faster;
    any object with ``normals(k)`` and ``uniforms(k)`` will do.
    """

    def __init__(self, seed):
        self.state = (int(seed) * 2654435761 + 1) & 0xFFFFFFFF or 1
        self._spare = None

    def _next_u32(self):
        s = self.state
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        self.state = s
        return s

    def uniforms(self, k):
        return [self._next_u32() / 4294967296.0 for _ in range(k)]

    def normals(self, k):
        out = []
        while len(out) < k:
            if self._spare is not None:
                out.append(self._spare)
                self._spare = None
                continue
            u1 = (self._next_u32() + 1.0) / 4294967297.0      # (0, 1]: log is finite
            u2 = self._next_u32() / 4294967296.0
            r = math.sqrt(-2.0 * math.log(u1))
            out.append(r * math.cos(TWO_PI * u2))
            self._spare = r * math.sin(TWO_PI * u2)
        return out


# ------------------------------------------------------------------ filter
# value ranges of the settings (onboard.core.settings rules; checked_config)
SETTING_RANGES = dict(
    {"n_particles": int_at_least(2), "refresh_fraction": ("a number in [0, 1)", lambda v: is_number(v) and 0 <= v < 1),
     "range_bias_m": ANY_NUMBER, "range_var_m2": POSITIVE, "outlier_sigmas": POSITIVE,
     "refresh_mode": one_of(*REFRESH_MODES), "refresh_fraction_min": within(0.0, 1.0),
     "refresh_spread_rad": POSITIVE, "resample_neff_fraction": UNIT_OPEN, "alpha_slow": UNIT_OPEN,
     "alpha_fast": UNIT_OPEN, "reinit_after_outliers": int_at_least(0), "lost_residual_alpha": UNIT_OPEN},
    **{key: NON_NEGATIVE for key in ("vel_noise_mps", "pos_noise_floor_m", "yaw_noise_radps", "refresh_range_sigma_m",
                                     "refresh_bearing_sigma_rad", "refresh_yaw_sigma_rad", "lost_residual_m",
                                     "noise_reference_dt_s")})


# the settings related to each other: the adaptive refresh's clamp and the two likelihood averages' rates
SETTING_RANGES[("refresh_fraction_min", "refresh_fraction")] = (
    "ordered (refresh_fraction_min <= refresh_fraction)", lambda lo, hi: lo <= hi)
SETTING_RANGES[("alpha_slow", "alpha_fast")] = ("ordered (alpha_slow < alpha_fast)", lambda slow, fast: slow < fast)


def checked_config(config=None):
    """DEFAULTS updated with config, checked by ``onboard.core.settings.checked`` against SETTING_RANGES:
    ConfigError (a ValueError) with one line on an unknown key, a wrong type or NaN, a value outside its range,
    refresh_fraction_min above refresh_fraction, or alpha_slow not below alpha_fast."""
    return checked(DEFAULTS, SETTING_RANGES, config, "ParticleFilter")


def make_filter(config=None, kernels=None):
    """A particle filter on these kernels: the kernels module's ``filter_class`` where it has one (the
    Cython path: this module's class over the kernel type holding the particles in C), else
    :class:`ParticleFilter`. Both compute the same numbers from the same draws
    (tests/unit/test_particle_filter_paths.py, tests/unit/test_pf_one_source.py)."""
    cls = getattr(kernels, "filter_class", None) or ParticleFilter
    return cls(config, kernels=kernels)


class ParticleFilter:
    """Relative pose of one object (neighbour or goal) in the own frame, from UWB ranges.

    ``step(now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned)`` runs one
    filter cycle and returns ``(x_m, y_m, yaw_rad)``. ``learned`` is the learned estimator's
    ``(bearing_rad, rel_yaw_rad)`` (or None for the pure particle-filter configuration).
    Bad input raises :class:`PfInputError` and leaves the particles untouched; ranges that
    no particle explains are counted in ``outliers`` (still used, with shifted weights).
    """

    def __init__(self, config=None, kernels=None):
        cfg = checked_config(config)
        n = int(cfg["n_particles"])
        self.cfg = cfg
        self.n = n
        self.n_refresh = int(round(cfg["refresh_fraction"] * n))
        self.k = kernels if kernels is not None else PURE
        self.inv_two_var_m2 = 1.0 / (2.0 * cfg["range_var_m2"])
        self._outlier_e2_m2 = cfg["outlier_sigmas"] ** 2 * cfg["range_var_m2"]
        self.initialized = False
        self.time_us = None
        self.steps = 0
        self.rejected = 0
        self.outliers = 0
        self.predict_only = 0
        self.w_slow = None               # adaptive refresh: long- and short-term mean range likelihood
        self.w_fast = None
        self.last_refresh = 0            # particles refreshed at the last step
        self.resamples = 0
        self.reinitializations = 0       # lost-filter restarts (reinit_after_outliers)
        self._outlier_run = 0
        self.residual_lp_m = 0.0         # low-passed range residual of the estimate (lost_residual_m), m
        self.lost_restarts = 0           # restarts by the residual check
        self._setup_state()

    # ---------------------------------------------------------- state hooks (replaced by a kernel class)
    def _setup_state(self):
        """The particle buffers (called once by __init__, after cfg, n and the kernels are set)."""
        n = self.n
        alloc_ = self.k.alloc
        self.xs = alloc_(n)
        self.ys = alloc_(n)
        self.yaws = alloc_(n)
        self.ws = alloc_(n)
        self.lws = alloc_(n)             # log-weights carried between resamplings (0 = uniform)
        self._xs2 = alloc_(n)
        self._ys2 = alloc_(n)
        self._yaws2 = alloc_(n)
        self.est = alloc_(EST_LEN)

    def _drawn(self, values, k):
        """A draws object's answer as a kernel buffer, checked to hold the ``k`` values asked for before any
        particle is touched (ValueError, as the compiled filter's check: a short answer used to stop the pure
        kernels part-way through the particles with IndexError)."""
        buf = self.k.as_buffer(values)
        if len(buf) < k:
            raise ValueError("draws returned %d values, %d asked" % (len(buf), k))
        return buf

    def _spawn(self, range_m, draws, learned):
        """New particles for range_m (float, checked): around learned = (bearing_rad, rel_yaw_rad) floats
        (pocket IV-B) or, None, on a ring; log-weights back to 0."""
        k = self.k
        c = self.cfg
        if learned is not None:
            noise = self._drawn(draws.normals(PARTICLE_DIM * self.n), PARTICLE_DIM * self.n)
            k.refresh(self.xs, self.ys, self.yaws, 0, self.n, range_m - c["range_bias_m"],
                      learned[0], learned[1], c["refresh_range_sigma_m"],
                      c["refresh_bearing_sigma_rad"], c["refresh_yaw_sigma_rad"], noise)
        else:
            normals = self._drawn(draws.normals(self.n), self.n)
            uniforms = self._drawn(draws.uniforms(2 * self.n), 2 * self.n)
            k.init_ring(self.xs, self.ys, self.yaws, self.n, range_m - c["range_bias_m"],
                        c["refresh_range_sigma_m"], normals, uniforms)
        self.lws = k.alloc(self.n)

    def _predict(self, dt_s, vxo, vyo, vxp, vyp, range_m, draws, sigma_pos_m, sigma_yaw_rad):
        """Propagate and weight the particles (predict_weight); range_m None keeps the prior weights.
        Returns the estimate buffer (EST_* slots), which resampling leaves as it is."""
        noise = self._drawn(draws.normals(PARTICLE_DIM * self.n), PARTICLE_DIM * self.n)
        if range_m is None:
            self.k.predict_weight(self.xs, self.ys, self.yaws, self.ws, self.lws, self.n, dt_s, vxo, vyo, vxp,
                                  vyp, 0.0, 0.0, 0.0, noise, sigma_pos_m, sigma_yaw_rad, self.est)
        else:
            self.k.predict_weight(self.xs, self.ys, self.yaws, self.ws, self.lws, self.n, dt_s, vxo, vyo, vxp,
                                  vyp, range_m, self.cfg["range_bias_m"], self.inv_two_var_m2, noise,
                                  sigma_pos_m, sigma_yaw_rad, self.est)
        return self.est

    def _resample(self, n_new, range_m, learned, draws):
        """Systematic resampling of n - n_new particles (weights back to uniform) and n_new new ones
        around the learned (bearing_rad, rel_yaw_rad) estimate (pocket IV-B)."""
        c = self.cfg
        k = self.k
        n = self.n
        u0 = draws.uniforms(1)[0]
        k.resample(self.xs, self.ys, self.yaws, self.ws, n, n - n_new, u0,
                   self._xs2, self._ys2, self._yaws2)
        self.xs, self._xs2 = self._xs2, self.xs
        self.ys, self._ys2 = self._ys2, self.ys
        self.yaws, self._yaws2 = self._yaws2, self.yaws
        self.lws = k.alloc(n)
        if n_new:
            fresh = self._drawn(draws.normals(PARTICLE_DIM * n_new), PARTICLE_DIM * n_new)
            k.refresh(self.xs, self.ys, self.yaws, n - n_new, n_new,
                      range_m - c["range_bias_m"], learned[0], learned[1],
                      c["refresh_range_sigma_m"], c["refresh_bearing_sigma_rad"],
                      c["refresh_yaw_sigma_rad"], fresh)

    def _spread_m(self):
        """Weighted spread of the positions about the last estimate, m (weighted_spread)."""
        e = self.est
        return self.k.weighted_spread(self.xs, self.ys, self.ws, self.n, e[EST_X], e[EST_Y], e[EST_SW])

    # ---------------------------------------------------------- set-up
    def initialize(self, now_us, range_m, draws, learned=None):
        """Spawn particles: around the learned (bearing, yaw) if given (pocket IV-B), else on a ring."""
        self._check_range(range_m, allow_none=False)
        if learned is not None:
            learned = self._check_learned(learned)       # (bearing_rad, rel_yaw_rad) as floats
        now_us = self._check_time(now_us)
        self._spawn(float(range_m), draws, learned)
        self.time_us = now_us
        self.initialized = True
        self.steps = 0
        self.w_slow = None
        self.w_fast = None
        self.residual_lp_m = 0.0         # a new set starts trusted: it takes several ranges to restart it

    # ---------------------------------------------------------- cycle
    def step(self, now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned=None):
        """One cycle at now_us (integer us). Returns the estimate (x_m, y_m, yaw_rad) in the own frame.

        v_own_body_mps, v_peer_body_mps: (vx, vy) in each drone's own body frame (a goal has
        (0, 0)); range_m: UWB range or None (dropout: predict only); learned:
        (bearing_rad, rel_yaw_rad) of the learned estimator or None.
        """
        if not self.initialized:
            raise PfInputError("particle filter stepped before initialize()")
        now_us = self._check_time(now_us)
        if now_us < self.time_us:
            self.rejected += 1
            raise PfInputError("time went backwards: %d < %d us" % (now_us, self.time_us))
        vxo, vyo = self._check_vel(v_own_body_mps, "own")
        vxp, vyp = self._check_vel(v_peer_body_mps, "peer")
        self._check_range(range_m, allow_none=True)
        if learned is not None:
            learned = self._check_learned(learned)       # (bearing_rad, rel_yaw_rad) as floats
        return self._cycle(now_us, vxo, vyo, vxp, vyp, range_m, draws, learned)

    def _cycle(self, now_us, vxo, vyo, vxp, vyp, range_m, draws, learned):
        """The cycle of :meth:`step` on checked input: now_us an int not before time_us, the velocities
        finite floats, range_m None or a finite number >= 0, learned None or two finite floats. A range above
        MAX_RANGE_M or a speed above MAX_SPEED_MPS (the compiled step hands them here unchecked) raises
        PfInputError, counted, before anything changes."""
        if (range_m is not None and range_m > MAX_RANGE_M) or not (
                -MAX_SPEED_MPS <= vxo <= MAX_SPEED_MPS and -MAX_SPEED_MPS <= vyo <= MAX_SPEED_MPS
                and -MAX_SPEED_MPS <= vxp <= MAX_SPEED_MPS and -MAX_SPEED_MPS <= vyp <= MAX_SPEED_MPS):
            self.rejected += 1
            raise PfInputError("range %r m above %g m or a velocity (%r, %r), (%r, %r) m/s above %g m/s"
                               % (range_m, MAX_RANGE_M, vxo, vyo, vxp, vyp, MAX_SPEED_MPS))
        c = self.cfg
        dt_s = (now_us - self.time_us) * 1e-6
        ref_s = c["noise_reference_dt_s"]
        if ref_s > 0.0:
            # random walk: variance proportional to dt (see noise_reference_dt_s)
            scale = math.sqrt(dt_s / ref_s)
            sigma_pos_m = (c["pos_noise_floor_m"] + c["vel_noise_mps"] * ref_s) * scale
            sigma_yaw_rad = c["yaw_noise_radps"] * ref_s * scale
        else:
            sigma_pos_m = c["pos_noise_floor_m"] + c["vel_noise_mps"] * dt_s
            sigma_yaw_rad = c["yaw_noise_radps"] * dt_s
        est = self._predict(dt_s, vxo, vyo, vxp, vyp, range_m, draws, sigma_pos_m, sigma_yaw_rad)
        if range_m is None:
            self.predict_only += 1
        else:
            if est[EST_E2_MIN] > self._outlier_e2_m2:
                self.outliers += 1
                self._outlier_run += 1
            else:
                self._outlier_run = 0
            if c["reinit_after_outliers"] and self._outlier_run >= c["reinit_after_outliers"]:
                return self._restart(now_us, range_m, draws, learned)
            if c["lost_residual_m"] > 0.0:
                ex, ey = est[EST_X], est[EST_Y]
                res_m = range_m - c["range_bias_m"] - math.sqrt(ex * ex + ey * ey)
                self.residual_lp_m += c["lost_residual_alpha"] * (res_m - self.residual_lp_m)
                if self.residual_lp_m < -c["lost_residual_m"]:
                    self.lost_restarts += 1
                    return self._restart(now_us, range_m, draws, learned)
            n_new = self._refresh_count() if learned is not None else 0
            if n_new >= self.n:
                n_new = self.n - 1           # keep one: round(fraction * n) can reach n (e.g. 0.95 * 10)
            frac = c["resample_neff_fraction"]
            if frac >= 1.0 or est[EST_NEFF] < frac * self.n:
                self.last_refresh = n_new
                self.resamples += 1
                self._resample(n_new, range_m, learned, draws)
            else:
                self.last_refresh = 0                  # keep the weights: no resampling, no refresh
        self.time_us = now_us
        self.steps += 1
        return (est[EST_X], est[EST_Y], est[EST_YAW])         # the estimate(), before resampling

    def _restart(self, now_us, range_m, draws, learned):
        """Lost: particles afresh at range_m (ring, or around the learned estimate), weighted by that
        range (a zero-time step) so the estimate describes the new set."""
        self.initialize(now_us, range_m, draws, learned=learned)
        self.reinitializations += 1
        self._outlier_run = 0
        self._predict(0.0, 0.0, 0.0, 0.0, 0.0, range_m, draws, 0.0, 0.0)
        self.steps += 1
        return self.estimate()

    def _refresh_count(self):
        """Particles to put around the learned estimate this step (fixed, augmented-MCL adaptive, or spread-gated)."""
        c = self.cfg
        if c["refresh_mode"] == "fixed":
            return self.n_refresh
        e = self.est
        if c["refresh_mode"] == "spread":
            spread_m = self._spread_m()
            unsure = spread_m > c["refresh_spread_rad"] * math.sqrt(e[EST_X] * e[EST_X] + e[EST_Y] * e[EST_Y])
            frac = c["refresh_fraction"] if unsure else c["refresh_fraction_min"]
            return int(round(frac * self.n))
        # mean range likelihood over the particles (the Gaussian's constant cancels in the ratio);
        # with weights carried over (resample_neff_fraction < 1) it is weighted by the prior weights
        w_avg = math.exp(e[EST_LMAX]) * e[EST_SW] / self.n
        if self.w_slow is None:
            self.w_slow = w_avg
            self.w_fast = w_avg
        else:
            self.w_slow += c["alpha_slow"] * (w_avg - self.w_slow)
            self.w_fast += c["alpha_fast"] * (w_avg - self.w_fast)
        frac = 1.0 - self.w_fast / self.w_slow if self.w_slow > 0.0 else c["refresh_fraction"]
        frac = min(c["refresh_fraction"], max(c["refresh_fraction_min"], frac))
        return int(round(frac * self.n))

    def estimate(self):
        """(x_m, y_m, yaw_rad): weighted mean of the last cycle (before resampling)."""
        e = self.est
        return (e[EST_X], e[EST_Y], e[EST_YAW])

    def neff(self):
        """Effective sample size of the last cycle's weights."""
        return self.est[EST_NEFF]

    # ---------------------------------------------------------- input checks
    def _check_time(self, now_us):
        """now_us as an int within base.TIME_US_MIN/MAX (the compiled filter's C time), else PfInputError (also
        for a time with a fraction, which int() would truncate, and a boolean)."""
        try:
            t = int(now_us)
        except (TypeError, ValueError, OverflowError):
            t = None
        if t is None or t != now_us or isinstance(now_us, bool):
            self.rejected += 1
            raise PfInputError("time must be an integer number of us, got %r" % (now_us,))
        if t < TIME_US_MIN or t > TIME_US_MAX:
            self.rejected += 1
            raise PfInputError("time %d us outside the signed 64-bit range" % t)
        return t

    def _check_vel(self, v, who):
        try:
            vx = float(v[0])
            vy = float(v[1])
        except (TypeError, IndexError, ValueError, OverflowError):
            self.rejected += 1
            raise PfInputError("%s velocity must be (vx_mps, vy_mps), got %r" % (who, v))
        if not (_finite(vx) and _finite(vy)):
            self.rejected += 1
            raise PfInputError("%s velocity not finite: %r" % (who, v))
        if not (-MAX_SPEED_MPS <= vx <= MAX_SPEED_MPS and -MAX_SPEED_MPS <= vy <= MAX_SPEED_MPS):
            self.rejected += 1
            raise PfInputError("%s velocity %r above %g m/s" % (who, v, MAX_SPEED_MPS))
        return vx, vy

    def _check_range(self, range_m, allow_none):
        if range_m is None:
            if allow_none:
                return
            self.rejected += 1
            raise PfInputError("a range is needed to initialise the particle filter")
        if (not isinstance(range_m, (int, float)) or not _finite(_as_float(range_m)) or range_m < 0.0
                or range_m > MAX_RANGE_M):
            self.rejected += 1
            raise PfInputError("range must be a finite number in [0, %g] m, got %r" % (MAX_RANGE_M, range_m))

    def _check_learned(self, learned):
        try:
            b = float(learned[0])
            y = float(learned[1])
        except (TypeError, IndexError, ValueError, OverflowError):
            self.rejected += 1
            raise PfInputError("learned estimate must be (bearing_rad, rel_yaw_rad), got %r" % (learned,))
        if not (_finite(b) and _finite(y)):
            self.rejected += 1
            raise PfInputError("learned estimate not finite: %r" % (learned,))
        return b, y
