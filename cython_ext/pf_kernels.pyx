# cython: language_level=3
"""Cython path of the relative-pose particle filter (pocket IV-B): kernels and a compiled filter.

The kernels have the same signatures and the same arithmetic, term by term, as the pure
kernels in onboard/estimators/particle_filter.py (libm exp/sin/cos/sqrt/atan2/fmod, like
CPython's math module), so both paths give the same numbers on the same draws. Buffers are
contiguous float64 arrays; randomness is passed in.

:class:`ParticleFilter` (``filter_class``, picked by ``particle_filter.make_filter``) is the
whole filter compiled: the same cycle as the pure ``particle_filter.ParticleFilter`` (input
checks, outlier count, lost-filter restarts, fixed / adaptive refresh, adaptive resampling,
the same draws requested in the same order) with its particles in C and one call per step,
so at small N the step is not dominated by Python calls into the kernels.
"""
import numpy as np
cimport cython
cimport numpy as cnp
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.math cimport atan2, cos, exp, fmod, rint, sin, sqrt, INFINITY

from onboard.estimators import particle_filter as _pure
from onboard.estimators.particle_filter import EST_LEN, PfInputError, checked_config

name = "cython"
cnp.import_array()

cdef double PI = 3.141592653589793
cdef double TWO_PI = 2.0 * 3.141592653589793
# slots of the estimate buffer (particle_filter.EST_*), draws per particle and refresh modes, checked below
cdef enum:
    E_X = 0
    E_Y = 1
    E_YAW = 2
    E_NEFF = 3
    E_E2_MIN = 4
    E_SW = 5
    E_LMAX = 6
    DIM = 3             # draws per particle (particle_filter.PARTICLE_DIM)
    REFRESH_FIXED = 0   # particle_filter.REFRESH_MODES, in order
    REFRESH_ADAPTIVE = 1
    REFRESH_SPREAD = 2
if (DIM, E_X, E_Y, E_YAW, E_NEFF, E_E2_MIN, E_SW, E_LMAX, ("fixed", "adaptive", "spread")) != (
        _pure.PARTICLE_DIM, _pure.EST_X, _pure.EST_Y, _pure.EST_YAW, _pure.EST_NEFF, _pure.EST_E2_MIN, _pure.EST_SW,
        _pure.EST_LMAX, _pure.REFRESH_MODES):
    raise ImportError("cython_ext.pf_kernels: particle / estimate slots or refresh modes differ from "
                      "onboard.estimators.particle_filter")


def alloc(Py_ssize_t n):
    return np.zeros(n, dtype=np.float64)


def as_buffer(seq):
    return np.ascontiguousarray(seq, dtype=np.float64)


cdef inline double _wrap_pi(double a) noexcept nogil:
    a = a + PI
    if not (0.0 <= a < TWO_PI):      # inside [0, 2 pi) fmod returns a itself (exact): skip the libm call
        a = fmod(a, TWO_PI)
        if a < 0.0:
            a += TWO_PI
    return a - PI


# ------------------------------------------------------------------ kernels on raw buffers
cdef void _predict_weight(double* xs, double* ys, double* yaws, double* ws, double* lws, Py_ssize_t n,
                          double dt_s, double vx_own_mps, double vy_own_mps, double vx_peer_mps,
                          double vy_peer_mps, double range_m, double bias_m, double inv_two_var_m2,
                          const double* noise, double sigma_pos_m, double sigma_yaw_rad,
                          double* est, const double* cos_in, const double* sin_in,
                          double* cos_out, double* sin_out) noexcept nogil:
    """cos_in / sin_in: cos and sin of yaws as they come in (NULL: computed here); cos_out / sin_out
    (NULL: not kept): of yaws as they leave, which the weighted mean needs anyway. libm gives the same
    value for the same argument, so a kept value is the one a fresh call would give (same numbers as
    the pure kernel); the compiled filter keeps them from one step to the next (one sin/cos per particle
    and step instead of two). The arrays may be the same: particle i is read in the first pass and
    written in the second."""
    cdef Py_ssize_t i, k
    cdef double yaw, c, s, x, y, e, e2, w, lw, sy, cy
    cdef double e2_min = INFINITY
    cdef double l_max = -INFINITY
    cdef double sw = 0.0, sww = 0.0, swx = 0.0, swy = 0.0, sws = 0.0, swc = 0.0
    for i in range(n):
        k = 3 * i
        yaw = yaws[i]
        if cos_in != NULL:
            c = cos_in[i]
            s = sin_in[i]
        else:
            c = cos(yaw)
            s = sin(yaw)
        x = xs[i] + dt_s * (c * vx_peer_mps - s * vy_peer_mps - vx_own_mps) + sigma_pos_m * noise[k]
        y = ys[i] + dt_s * (s * vx_peer_mps + c * vy_peer_mps - vy_own_mps) + sigma_pos_m * noise[k + 1]
        xs[i] = x
        ys[i] = y
        yaws[i] = _wrap_pi(yaw + sigma_yaw_rad * noise[k + 2])
        e = range_m - bias_m - sqrt(x * x + y * y)
        e2 = e * e
        lw = lws[i] - e2 * inv_two_var_m2
        lws[i] = lw
        if e2 < e2_min:
            e2_min = e2
        if lw > l_max:
            l_max = lw
    for i in range(n):
        lw = lws[i] - l_max
        lws[i] = lw
        w = exp(lw)
        ws[i] = w
        sw += w
        sww += w * w
        swx += w * xs[i]
        swy += w * ys[i]
        sy = sin(yaws[i])
        cy = cos(yaws[i])
        sws += w * sy
        swc += w * cy
        if cos_out != NULL:
            cos_out[i] = cy
            sin_out[i] = sy
    est[E_X] = swx / sw
    est[E_Y] = swy / sw
    est[E_YAW] = atan2(sws, swc)
    est[E_NEFF] = sw * sw / sww
    est[E_E2_MIN] = e2_min
    est[E_SW] = sw
    est[E_LMAX] = l_max


cdef void _resample(const double* xs, const double* ys, const double* yaws, const double* ws,
                    Py_ssize_t n, Py_ssize_t n_keep, double u0,
                    double* xs_out, double* ys_out, double* yaws_out,
                    const double* cos_in, const double* sin_in,
                    double* cos_out, double* sin_out) noexcept nogil:
    """cos_in ... sin_out (all or none): the kept cos / sin of the yaws, copied along with them."""
    cdef Py_ssize_t i, m, last
    cdef double total = 0.0, step, cum, target
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
        if cos_in != NULL:
            cos_out[m] = cos_in[i]
            sin_out[m] = sin_in[i]


cdef void _refresh(double* xs, double* ys, double* yaws, Py_ssize_t start, Py_ssize_t count,
                   double range_m, double bearing_rad, double yaw_rad, double sigma_range_m,
                   double sigma_bearing_rad, double sigma_yaw_rad, const double* noise) noexcept nogil:
    cdef Py_ssize_t j, k
    cdef double r, b
    for j in range(count):
        k = 3 * j
        r = range_m + sigma_range_m * noise[k]
        if r < 0.0:
            r = -r
        b = bearing_rad + sigma_bearing_rad * noise[k + 1]
        xs[start + j] = r * cos(b)
        ys[start + j] = r * sin(b)
        yaws[start + j] = _wrap_pi(yaw_rad + sigma_yaw_rad * noise[k + 2])


cdef void _init_ring(double* xs, double* ys, double* yaws, Py_ssize_t n, double range_m,
                     double sigma_range_m, const double* normals, const double* uniforms) noexcept nogil:
    cdef Py_ssize_t i
    cdef double r, b
    for i in range(n):
        r = range_m + sigma_range_m * normals[i]
        if r < 0.0:
            r = -r
        b = -PI + TWO_PI * uniforms[2 * i]
        xs[i] = r * cos(b)
        ys[i] = r * sin(b)
        yaws[i] = -PI + TWO_PI * uniforms[2 * i + 1]


cdef double _weighted_spread(const double* xs, const double* ys, const double* ws, Py_ssize_t n,
                             double mean_x_m, double mean_y_m, double sw) noexcept nogil:
    cdef Py_ssize_t i
    cdef double dx, dy, s = 0.0
    for i in range(n):
        dx = xs[i] - mean_x_m
        dy = ys[i] - mean_y_m
        s += ws[i] * (dx * dx + dy * dy)
    return sqrt(s / sw)


# ------------------------------------------------------------------ kernels (buffer API)
def predict_weight(double[::1] xs, double[::1] ys, double[::1] yaws, double[::1] ws, double[::1] lws,
                   Py_ssize_t n,
                   double dt_s, double vx_own_mps, double vy_own_mps, double vx_peer_mps,
                   double vy_peer_mps, double range_m, double bias_m, double inv_two_var_m2,
                   const double[::1] noise, double sigma_pos_m, double sigma_yaw_rad,
                   double[::1] est):
    """See particle_filter.predict_weight (pocket IV-B motion, III-A weight)."""
    if n <= 0 or noise.shape[0] < 3 * n or xs.shape[0] < n or ys.shape[0] < n or yaws.shape[0] < n \
            or ws.shape[0] < n or lws.shape[0] < n or est.shape[0] < EST_LEN:
        raise ValueError("particle filter buffers shorter than n")
    with nogil:
        _predict_weight(&xs[0], &ys[0], &yaws[0], &ws[0], &lws[0], n, dt_s, vx_own_mps, vy_own_mps,
                        vx_peer_mps, vy_peer_mps, range_m, bias_m, inv_two_var_m2, &noise[0],
                        sigma_pos_m, sigma_yaw_rad, &est[0], NULL, NULL, NULL, NULL)


def resample(const double[::1] xs, const double[::1] ys, const double[::1] yaws,
             const double[::1] ws, Py_ssize_t n, Py_ssize_t n_keep, double u0,
             double[::1] xs_out, double[::1] ys_out, double[::1] yaws_out):
    """See particle_filter.resample (systematic, one uniform draw)."""
    if n_keep <= 0 or n <= 0 or xs_out.shape[0] < n_keep or ys_out.shape[0] < n_keep \
            or yaws_out.shape[0] < n_keep or ws.shape[0] < n or xs.shape[0] < n or ys.shape[0] < n \
            or yaws.shape[0] < n:
        raise ValueError("resample needs 0 < n_keep <= len(out) and n <= len(ws)")
    with nogil:
        _resample(&xs[0], &ys[0], &yaws[0], &ws[0], n, n_keep, u0, &xs_out[0], &ys_out[0], &yaws_out[0],
                  NULL, NULL, NULL, NULL)


def refresh(double[::1] xs, double[::1] ys, double[::1] yaws, Py_ssize_t start, Py_ssize_t count,
            double range_m, double bearing_rad, double yaw_rad, double sigma_range_m,
            double sigma_bearing_rad, double sigma_yaw_rad, const double[::1] noise):
    """See particle_filter.refresh (polar spread around the learned estimate)."""
    if count <= 0:
        return
    if start < 0 or noise.shape[0] < 3 * count or xs.shape[0] < start + count \
            or ys.shape[0] < start + count or yaws.shape[0] < start + count:
        raise ValueError("refresh buffers too short")
    with nogil:
        _refresh(&xs[0], &ys[0], &yaws[0], start, count, range_m, bearing_rad, yaw_rad, sigma_range_m,
                 sigma_bearing_rad, sigma_yaw_rad, &noise[0])


def init_ring(double[::1] xs, double[::1] ys, double[::1] yaws, Py_ssize_t n, double range_m,
              double sigma_range_m, const double[::1] normals, const double[::1] uniforms):
    """See particle_filter.init_ring (uninformed start of the pure particle filter)."""
    if n <= 0 or normals.shape[0] < n or uniforms.shape[0] < 2 * n or xs.shape[0] < n \
            or ys.shape[0] < n or yaws.shape[0] < n:
        raise ValueError("init_ring buffers too short")
    with nogil:
        _init_ring(&xs[0], &ys[0], &yaws[0], n, range_m, sigma_range_m, &normals[0], &uniforms[0])


def weighted_spread(const double[::1] xs, const double[::1] ys, const double[::1] ws, Py_ssize_t n,
                    double mean_x_m, double mean_y_m, double sw):
    """See particle_filter.weighted_spread (the refresh gate of refresh_mode "spread")."""
    if n <= 0 or xs.shape[0] < n or ys.shape[0] < n or ws.shape[0] < n:
        raise ValueError("weighted_spread buffers shorter than n")
    return _weighted_spread(&xs[0], &ys[0], &ws[0], n, mean_x_m, mean_y_m, sw)


# ------------------------------------------------------------------ the compiled filter
cdef inline bint _finite(double v) noexcept nogil:
    return v == v and v != INFINITY and v != -INFINITY


cdef object _draw_array(object v, Py_ssize_t k):
    """A draws object's answer as a 1-D aligned contiguous float64 array of at least k values (v itself
    when it is one, else converted as as_buffer does); hold it while its data pointer is used."""
    if not (cnp.PyArray_CheckExact(v) and cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.NPY_DOUBLE
            and cnp.PyArray_NDIM(<cnp.ndarray>v) == 1 and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>v)):
        v = np.ascontiguousarray(v, dtype=np.float64)
    if cnp.PyArray_SIZE(<cnp.ndarray>v) < k:
        raise ValueError("draws returned %d values, %d asked" % (cnp.PyArray_SIZE(<cnp.ndarray>v), k))
    return v


cdef inline bint _float_pair(object v, double* out) noexcept:
    """out = v[0], v[1] when v is a tuple starting with two floats (what the runtime passes); else False."""
    if type(v) is not tuple or PyTuple_GET_SIZE(v) < 2:
        return False
    a = <object>PyTuple_GET_ITEM(v, 0)
    b = <object>PyTuple_GET_ITEM(v, 1)
    if not (PyFloat_CheckExact(a) and PyFloat_CheckExact(b)):
        return False
    out[0] = PyFloat_AS_DOUBLE(a)
    out[1] = PyFloat_AS_DOUBLE(b)
    return True


cdef inline const double* _data(object arr) noexcept:
    return <const double*>cnp.PyArray_DATA(<cnp.ndarray>arr)


@cython.boundscheck(True)          # the build turns it off; here it guards v[1], learned[1], uniforms(1)[0]
cdef class ParticleFilter:
    """The pure ``particle_filter.ParticleFilter`` compiled (same API, counters and numbers on the same draws).

    ``step(now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned)`` -> (x_m, y_m, yaw_rad) in
    the own frame; bad input raises PfInputError and leaves the particles untouched. ``xs``, ``ys``,
    ``yaws``, ``ws``, ``lws`` and ``est`` are the filter's float64 arrays (to read: the filter keeps
    the cos / sin of ``yaws`` from one step to the next).
    """

    cdef readonly dict cfg
    cdef readonly Py_ssize_t n, n_refresh
    cdef public bint initialized
    cdef public long steps, rejected, outliers, predict_only, resamples, reinitializations, lost_restarts
    cdef public long last_refresh
    cdef public double residual_lp_m
    cdef long _outlier_run
    cdef long long _time_us
    cdef bint _have_w
    cdef double _w_slow, _w_fast
    # settings read every step
    cdef double inv_two_var_m2, outlier_e2_m2, bias_m, ref_s, pos_floor_m, vel_noise_mps, yaw_noise_radps
    cdef double sigma_range_m, sigma_bearing_rad, sigma_yaw_refresh_rad
    cdef double refresh_fraction, refresh_fraction_min, neff_fraction, alpha_slow, alpha_fast
    cdef double lost_residual_m, lost_residual_alpha, refresh_spread_rad
    cdef long reinit_after_outliers
    cdef int refresh_mode             # REFRESH_FIXED | REFRESH_ADAPTIVE | REFRESH_SPREAD
    # particles: the live set and the resampling target, swapped after each resampling
    cdef object _xs, _ys, _yaws, _xs2, _ys2, _yaws2, _ws, _lws, _est
    # cos / sin of the yaws, kept from the last weighted mean (valid while _trig_kept), and their targets
    cdef object _cos, _sin, _cos2, _sin2
    cdef bint _trig_kept
    cdef double* px
    cdef double* py
    cdef double* pyaw
    cdef double* px2
    cdef double* py2
    cdef double* pyaw2
    cdef double* pw
    cdef double* plw
    cdef double* pest
    cdef double* pcos
    cdef double* psin
    cdef double* pcos2
    cdef double* psin2

    def __init__(self, config=None, kernels=None):
        """config: ParticleFilter settings (particle_filter.DEFAULTS); kernels: accepted for make_filter's
        signature (this class is the Cython path's own)."""
        cfg = checked_config(config)
        self.cfg = cfg
        self.n = int(cfg["n_particles"])
        self.n_refresh = int(round(cfg["refresh_fraction"] * self.n))
        self.inv_two_var_m2 = 1.0 / (2.0 * cfg["range_var_m2"])
        self.outlier_e2_m2 = cfg["outlier_sigmas"] ** 2 * cfg["range_var_m2"]
        self.bias_m = cfg["range_bias_m"]
        self.ref_s = cfg["noise_reference_dt_s"]
        self.pos_floor_m = cfg["pos_noise_floor_m"]
        self.vel_noise_mps = cfg["vel_noise_mps"]
        self.yaw_noise_radps = cfg["yaw_noise_radps"]
        self.sigma_range_m = cfg["refresh_range_sigma_m"]
        self.sigma_bearing_rad = cfg["refresh_bearing_sigma_rad"]
        self.sigma_yaw_refresh_rad = cfg["refresh_yaw_sigma_rad"]
        self.refresh_fraction = cfg["refresh_fraction"]
        self.refresh_fraction_min = cfg["refresh_fraction_min"]
        self.refresh_mode = _pure.REFRESH_MODES.index(cfg["refresh_mode"])     # REFRESH_* (order checked above)
        self.refresh_spread_rad = cfg["refresh_spread_rad"]
        self.neff_fraction = cfg["resample_neff_fraction"]
        self.alpha_slow = cfg["alpha_slow"]
        self.alpha_fast = cfg["alpha_fast"]
        self.reinit_after_outliers = cfg["reinit_after_outliers"]
        self.lost_residual_m = cfg["lost_residual_m"]
        self.lost_residual_alpha = cfg["lost_residual_alpha"]
        self._xs, self._ys, self._yaws = alloc(self.n), alloc(self.n), alloc(self.n)
        self._xs2, self._ys2, self._yaws2 = alloc(self.n), alloc(self.n), alloc(self.n)
        self._ws, self._lws, self._est = alloc(self.n), alloc(self.n), alloc(EST_LEN)
        self._cos, self._sin, self._cos2, self._sin2 = alloc(self.n), alloc(self.n), alloc(self.n), alloc(self.n)
        self._trig_kept = False
        self._bind()
        self.initialized = False
        self._time_us = 0
        self.steps = 0
        self.rejected = 0
        self.outliers = 0
        self.predict_only = 0
        self.last_refresh = 0
        self.resamples = 0
        self.reinitializations = 0
        self.lost_restarts = 0
        self._outlier_run = 0
        self.residual_lp_m = 0.0
        self._have_w = False

    cdef void _bind(self):
        cdef double[::1] v
        v = self._xs
        self.px = &v[0]
        v = self._ys
        self.py = &v[0]
        v = self._yaws
        self.pyaw = &v[0]
        v = self._xs2
        self.px2 = &v[0]
        v = self._ys2
        self.py2 = &v[0]
        v = self._yaws2
        self.pyaw2 = &v[0]
        v = self._ws
        self.pw = &v[0]
        v = self._lws
        self.plw = &v[0]
        v = self._est
        self.pest = &v[0]
        v = self._cos
        self.pcos = &v[0]
        v = self._sin
        self.psin = &v[0]
        v = self._cos2
        self.pcos2 = &v[0]
        v = self._sin2
        self.psin2 = &v[0]

    # the arrays (read: tests, benchmarks, plots)
    @property
    def xs(self):
        return self._xs

    @property
    def ys(self):
        return self._ys

    @property
    def yaws(self):
        return self._yaws

    @property
    def ws(self):
        return self._ws

    @property
    def lws(self):
        return self._lws

    @property
    def est(self):
        return self._est

    @property
    def time_us(self):
        return self._time_us if self.initialized else None

    @property
    def w_slow(self):
        return self._w_slow if self._have_w else None

    @property
    def w_fast(self):
        return self._w_fast if self._have_w else None

    # ---------------------------------------------------------- set-up
    def initialize(self, now_us, range_m, draws, learned=None):
        """Spawn particles: around the learned (bearing, yaw) if given (pocket IV-B), else on a ring."""
        if self.px is NULL:
            raise RuntimeError("ParticleFilter.__init__ was not called")
        cdef double r = self._check_range(range_m)
        cdef double lrn[2]
        if learned is not None:
            self._read_pair(learned, lrn, "learned estimate", "(bearing_rad, rel_yaw_rad)")
            normals = _draw_array(draws.normals(DIM * self.n), DIM * self.n)
            _refresh(self.px, self.py, self.pyaw, 0, self.n, r - self.bias_m, lrn[0], lrn[1], self.sigma_range_m,
                     self.sigma_bearing_rad, self.sigma_yaw_refresh_rad, _data(normals))
        else:
            normals = _draw_array(draws.normals(self.n), self.n)
            uniforms = _draw_array(draws.uniforms(2 * self.n), 2 * self.n)
            _init_ring(self.px, self.py, self.pyaw, self.n, r - self.bias_m, self.sigma_range_m,
                       _data(normals), _data(uniforms))
        self._zero_log_weights()
        self._trig_kept = False
        self._time_us = int(now_us)
        self.initialized = True
        self.steps = 0
        self._have_w = False
        self.residual_lp_m = 0.0         # a new set starts trusted: it takes several ranges to restart it

    cdef void _zero_log_weights(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.n):
            self.plw[i] = 0.0

    # ---------------------------------------------------------- cycle
    def step(self, now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned=None):
        """One cycle at now_us (integer us). Returns the estimate (x_m, y_m, yaw_rad) in the own frame.

        As particle_filter.ParticleFilter.step: range_m None = dropout (predict only); learned =
        (bearing_rad, rel_yaw_rad) of the learned estimator or None.
        """
        cdef long long t_us
        cdef double v_own[2]
        cdef double v_peer[2]
        cdef double lrn[2]
        cdef double r = 0.0, dt_s, scale, sigma_pos_m, sigma_yaw_rad, ex, ey, res_m
        cdef bint has_learned = learned is not None
        cdef Py_ssize_t n_new
        if not self.initialized:
            raise PfInputError("particle filter stepped before initialize()")
        t_us = now_us if type(now_us) is int else int(now_us)
        if t_us < self._time_us:
            self.rejected += 1
            raise PfInputError("time went backwards: %d < %d us" % (t_us, self._time_us))
        self._read_pair(v_own_body_mps, v_own, "own velocity", "(vx_mps, vy_mps)")
        self._read_pair(v_peer_body_mps, v_peer, "peer velocity", "(vx_mps, vy_mps)")
        if range_m is not None:
            r = self._check_range(range_m)
        if has_learned:
            self._read_pair(learned, lrn, "learned estimate", "(bearing_rad, rel_yaw_rad)")
        dt_s = (t_us - self._time_us) * 1e-6
        if self.ref_s > 0.0:
            # random walk: variance proportional to dt (see noise_reference_dt_s)
            scale = sqrt(dt_s / self.ref_s)
            sigma_pos_m = (self.pos_floor_m + self.vel_noise_mps * self.ref_s) * scale
            sigma_yaw_rad = self.yaw_noise_radps * self.ref_s * scale
        else:
            sigma_pos_m = self.pos_floor_m + self.vel_noise_mps * dt_s
            sigma_yaw_rad = self.yaw_noise_radps * dt_s
        noise = _draw_array(draws.normals(DIM * self.n), DIM * self.n)
        if range_m is None:
            _predict_weight(self.px, self.py, self.pyaw, self.pw, self.plw, self.n, dt_s, v_own[0], v_own[1],
                            v_peer[0], v_peer[1], 0.0, 0.0, 0.0, _data(noise), sigma_pos_m, sigma_yaw_rad, self.pest,
                            self._cos_in(), self._sin_in(), self.pcos, self.psin)
            self._trig_kept = True
            self.predict_only += 1
        else:
            _predict_weight(self.px, self.py, self.pyaw, self.pw, self.plw, self.n, dt_s, v_own[0], v_own[1],
                            v_peer[0], v_peer[1], r, self.bias_m, self.inv_two_var_m2, _data(noise),
                            sigma_pos_m, sigma_yaw_rad, self.pest, self._cos_in(), self._sin_in(), self.pcos,
                            self.psin)
            self._trig_kept = True
            if self.pest[E_E2_MIN] > self.outlier_e2_m2:
                self.outliers += 1
                self._outlier_run += 1
            else:
                self._outlier_run = 0
            if self.reinit_after_outliers and self._outlier_run >= self.reinit_after_outliers:
                return self._restart(now_us, range_m, draws, learned)
            if self.lost_residual_m > 0.0:
                ex = self.pest[E_X]
                ey = self.pest[E_Y]
                res_m = r - self.bias_m - sqrt(ex * ex + ey * ey)
                self.residual_lp_m += self.lost_residual_alpha * (res_m - self.residual_lp_m)
                if self.residual_lp_m < -self.lost_residual_m:
                    self.lost_restarts += 1
                    return self._restart(now_us, range_m, draws, learned)
            n_new = self._refresh_count() if has_learned else 0
            if self.neff_fraction >= 1.0 or self.pest[E_NEFF] < self.neff_fraction * self.n:
                self._resample(n_new, r, lrn[0], lrn[1], draws)
            else:
                self.last_refresh = 0                  # keep the weights: no resampling, no refresh
        self._time_us = t_us
        self.steps += 1
        return (self.pest[E_X], self.pest[E_Y], self.pest[E_YAW])

    def _restart(self, now_us, range_m, draws, learned):
        """Lost: particles afresh at range_m (ring, or around the learned estimate), weighted by that
        range (a zero-time step) so the estimate describes the new set."""
        self.initialize(now_us, range_m, draws, learned=learned)
        self.reinitializations += 1
        self._outlier_run = 0
        noise = _draw_array(draws.normals(DIM * self.n), DIM * self.n)
        _predict_weight(self.px, self.py, self.pyaw, self.pw, self.plw, self.n, 0.0, 0.0, 0.0, 0.0, 0.0,
                        float(range_m), self.bias_m, self.inv_two_var_m2, _data(noise), 0.0, 0.0, self.pest,
                        NULL, NULL, self.pcos, self.psin)
        self._trig_kept = True
        self.steps += 1
        return self.estimate()

    cdef _resample(self, Py_ssize_t n_new, double range_m, double bearing_rad, double yaw_rad, draws):
        """Systematic resampling of n - n_new particles (weights back to uniform) and n_new new ones
        around the learned (bearing_rad, rel_yaw_rad) estimate (pocket IV-B)."""
        cdef double u0
        self.last_refresh = n_new
        self.resamples += 1
        u0 = draws.uniforms(1)[0]
        _resample(self.px, self.py, self.pyaw, self.pw, self.n, self.n - n_new, u0, self.px2, self.py2, self.pyaw2,
                  self.pcos, self.psin, self.pcos2, self.psin2)
        self._xs, self._xs2 = self._xs2, self._xs
        self._ys, self._ys2 = self._ys2, self._ys
        self._yaws, self._yaws2 = self._yaws2, self._yaws
        self.px, self.px2 = self.px2, self.px
        self.py, self.py2 = self.py2, self.py
        self.pyaw, self.pyaw2 = self.pyaw2, self.pyaw
        self._cos, self._cos2 = self._cos2, self._cos
        self._sin, self._sin2 = self._sin2, self._sin
        self.pcos, self.pcos2 = self.pcos2, self.pcos
        self.psin, self.psin2 = self.psin2, self.psin
        self._zero_log_weights()
        if n_new:
            fresh = _draw_array(draws.normals(DIM * n_new), DIM * n_new)
            _refresh(self.px, self.py, self.pyaw, self.n - n_new, n_new, range_m - self.bias_m,
                     bearing_rad, yaw_rad, self.sigma_range_m, self.sigma_bearing_rad,
                     self.sigma_yaw_refresh_rad, _data(fresh))
            self._keep_trig(self.n - n_new, self.n)

    cdef inline const double* _cos_in(self) noexcept:
        return self.pcos if self._trig_kept else NULL

    cdef inline const double* _sin_in(self) noexcept:
        return self.psin if self._trig_kept else NULL

    cdef void _keep_trig(self, Py_ssize_t start, Py_ssize_t stop) noexcept:
        """cos / sin of the yaws of particles start..stop-1 (new ones) into the kept arrays."""
        cdef Py_ssize_t i
        for i in range(start, stop):
            self.pcos[i] = cos(self.pyaw[i])
            self.psin[i] = sin(self.pyaw[i])

    cdef Py_ssize_t _refresh_count(self):
        """Particles to put around the learned estimate this step (fixed, augmented-MCL adaptive, or spread-gated)."""
        cdef double w_avg, frac, spread_m
        cdef bint unsure
        if self.refresh_mode == REFRESH_FIXED:
            return self.n_refresh
        if self.refresh_mode == REFRESH_SPREAD:
            spread_m = _weighted_spread(self.px, self.py, self.pw, self.n, self.pest[E_X], self.pest[E_Y],
                                        self.pest[E_SW])
            unsure = spread_m > self.refresh_spread_rad * sqrt(self.pest[E_X] * self.pest[E_X]
                                                               + self.pest[E_Y] * self.pest[E_Y])
            frac = self.refresh_fraction if unsure else self.refresh_fraction_min
            return <Py_ssize_t>rint(frac * self.n)
        # mean range likelihood over the particles (see particle_filter.ParticleFilter._refresh_count)
        w_avg = exp(self.pest[E_LMAX]) * self.pest[E_SW] / self.n
        if not self._have_w:
            self._have_w = True
            self._w_slow = w_avg
            self._w_fast = w_avg
        else:
            self._w_slow += self.alpha_slow * (w_avg - self._w_slow)
            self._w_fast += self.alpha_fast * (w_avg - self._w_fast)
        frac = 1.0 - self._w_fast / self._w_slow if self._w_slow > 0.0 else self.refresh_fraction
        frac = min(self.refresh_fraction, max(self.refresh_fraction_min, frac))
        return <Py_ssize_t>rint(frac * self.n)      # rint: ties to even, as Python's round

    def estimate(self):
        """(x_m, y_m, yaw_rad): weighted mean of the last cycle (before resampling)."""
        return (self.pest[E_X], self.pest[E_Y], self.pest[E_YAW])

    def neff(self):
        """Effective sample size of the last cycle's weights."""
        return self.pest[E_NEFF]

    # ---------------------------------------------------------- input checks (messages as the pure class)
    cdef int _read_pair(self, v, double* out, str what, str shape) except -1:
        """out = the two finite numbers in v[0], v[1], or PfInputError (velocities, learned estimate)."""
        if not _float_pair(v, out):
            try:
                out[0] = float(v[0])
                out[1] = float(v[1])
            except (TypeError, IndexError, ValueError):
                self.rejected += 1
                raise PfInputError("%s must be %s, got %r" % (what, shape, v))
        if not (_finite(out[0]) and _finite(out[1])):
            self.rejected += 1
            raise PfInputError("%s not finite: %r" % (what, v))
        return 0

    cdef double _check_range(self, range_m) except? -1.0:
        if range_m is None:
            self.rejected += 1
            raise PfInputError("a range is needed to initialise the particle filter")
        if not (type(range_m) is float or isinstance(range_m, (int, float))) or not _finite(range_m) \
                or range_m < 0.0:
            self.rejected += 1
            raise PfInputError("range must be a finite number >= 0 m, got %r" % (range_m,))
        return range_m


filter_class = ParticleFilter
