# cython: language_level=3
"""Cython build of the relative-pose particle filter (pocket IV-B): the numeric kernels and the particles in C.

The kernels have the same signatures and the same arithmetic, term by term, as the pure
kernels in onboard/estimators/particle_filter.py (libm exp/sin/cos/sqrt/atan2/fmod, like
CPython's math module), so both paths give the same numbers on the same draws. Buffers are
contiguous float64 arrays; randomness is passed in.

``ParticleFilter`` here (``filter_class``, picked by ``particle_filter.make_filter``) is
``class ParticleFilter(PfKernel, particle_filter.ParticleFilter)``: configuration, input checks
and their messages, initialisation, the cycle's decisions (outlier count, lost-filter restarts,
fixed / adaptive / spread refresh, adaptive resampling), state access and the counters are the
pure module's code (one source). :class:`PfKernel`, first in the MRO, keeps the particles in C
arrays and replaces only the pure class's state hooks (``_setup_state``, ``_spawn``,
``_predict``, ``_resample``, ``_spread_m``, the particle and estimate attributes, ``time_us``)
with the kernels, keeping the cos / sin of the yaws from one weighted mean to the next
prediction (one sin/cos per particle and step instead of two). Its ``step`` accepts the
runtime's usual input (an int time in order, tuples of finite floats, a finite float range)
without the pure checks and hands anything else to them, so refusals are the pure module's.

Why a kernel type under the pure class, as the ES-EKF build does, rather than Cython's
pure-Python mode (an augmenting .pxd over particle_filter.py): the pure module's particles are
Python lists of floats (the MicroPython path has no array of doubles), so a compiled copy
would still walk boxed floats through its loops; here the kernels run on raw float64 arrays.
The profile said the rest is cheap enough to leave to the pure code: the kernels are O(N)
while the pure cycle's Python code costs about 1.1 us of CPU per step whatever N. Measured
against the former self-contained compiled filter (CPU time, min of 7 rounds, 4 interleaved
pairs of runs, bench/pf.py's workload): 3.4 -> 4.6 us per step at N = 100, 32.2 -> 33.9 us at
N = 1000 (the swarm flights' settings, spread refresh and adaptive resampling: 54 -> 57 us at
N = 1000); bench/pf.py's ratios to the plain-C reference stay within their goals
(bench/results/pf.json).
"""
import numpy as np
cimport cython
cimport numpy as cnp
import copyreg as _copyreg
from importlib import import_module as _import_module
from types import ModuleType as _ModuleType

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.object cimport Py_TYPE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.math cimport atan2, cos, exp, fmod, sin, sqrt, INFINITY
from libc.stdint cimport uint32_t, uint64_t, uintptr_t
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_normal

from onboard.estimators import particle_filter as _pure
from onboard.estimators.particle_filter import EST_LEN
from onboard.estimators.particle_filter_numpy import NumpyDraws as _NumpyDraws

# No contraction of a*b + c into one fused multiply-add in the kernels below (GCC's default on targets with
# FMA: the ARM boards, x86-64 built for a CPU that has it): each product and sum rounds as in the pure kernels.
cdef extern from *:
    """
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC optimize("-ffp-contract=off")
    #elif defined(__clang__)
    #pragma clang fp contract(off)
    #endif
    """

name = "cython"
cnp.import_array()

cdef double PI = 3.141592653589793
cdef double TWO_PI = 2.0 * 3.141592653589793
# slots of the estimate buffer (particle_filter.EST_*) and draws per particle, checked below
cdef enum:
    E_X = 0
    E_Y = 1
    E_YAW = 2
    E_NEFF = 3
    E_E2_MIN = 4
    E_SW = 5
    E_LMAX = 6
    DIM = 3             # draws per particle (particle_filter.PARTICLE_DIM)
if (DIM, E_X, E_Y, E_YAW, E_NEFF, E_E2_MIN, E_SW, E_LMAX) != (
        _pure.PARTICLE_DIM, _pure.EST_X, _pure.EST_Y, _pure.EST_YAW, _pure.EST_NEFF, _pure.EST_E2_MIN, _pure.EST_SW,
        _pure.EST_LMAX):
    raise ImportError("cython_ext.pf_kernels: particle / estimate slots differ from onboard.estimators.particle_filter")


def alloc(Py_ssize_t n):
    return np.zeros(n, dtype=np.float64)


def as_buffer(seq):
    return np.ascontiguousarray(seq, dtype=np.float64)


cdef inline double _wrap_pi(double a) noexcept nogil:
    """a wrapped to [-pi, pi) radians (onboard.core.angles.wrap_pi's arithmetic)."""
    a = a + PI
    if not (0.0 <= a < TWO_PI):      # inside [0, 2 pi) fmod returns a itself (exact): skip the libm call
        a = fmod(a, TWO_PI)
        if a < 0.0:
            a += TWO_PI
            if a >= TWO_PI:          # a remainder just below 0 (e.g. -4e-16) rounds up to 2 pi, which is 0
                a = 0.0
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
    # no product or sum of the arguments (start + count or 3 * count wrap around in C for huge ones)
    if start < 0 or count > noise.shape[0] // 3 or count > xs.shape[0] - start \
            or count > ys.shape[0] - start or count > yaws.shape[0] - start:
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


# ------------------------------------------------------------------ standard normals drawn in C
# The filter's draws are standard normals, 3 per particle and step: NumPy's Generator.standard_normal (its
# ziggurat over the bit generator's next_uint64 through a function pointer) cost about as much as the
# filter's own arithmetic. For the draws the runtime passes (NumpyDraws over a PCG64 Generator) the kernel
# draws them itself with the same algorithm, bit for bit: NumPy's ziggurat fast path (distributions.c,
# random_standard_normal: 99 % of the draws) over an inline PCG64 step (XSL-RR 128/64, numpy/random/src/
# pcg64/pcg64.h) on the generator's own state, and for the rest NumPy's random_standard_normal itself after
# rewinding that step. The ziggurat's tables (ki, wi) are read out of NumPy's random_standard_normal at import
# (a stand-in bit generator feeds it chosen words), the generator's state layout is checked (``pcg_layout``:
# read only inside the PCG64 object's own memory, then held to its ``state`` dict), and the whole path is
# checked against Generator.standard_normal on a scratch generator: anything unexpected, an exception
# included, turns it off (``fast_normals`` False) and every draw goes through ``draws.normals``.
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    typedef unsigned __int128 pf_u128;
    /* stand-in bit generator for reading the ziggurat tables out of numpy's random_standard_normal: the first
       next_uint64 returns pf_probe_r, later ones pf_probe_safe; next_double counts its calls (the slow path) */
    static uint64_t pf_probe_r = 0, pf_probe_safe = 0;
    static int pf_probe_calls = 0, pf_probe_doubles = 0;
    static uint64_t pf_probe_u64(void *st) { (void)st; return pf_probe_calls++ == 0 ? pf_probe_r : pf_probe_safe; }
    static uint32_t pf_probe_u32(void *st) { (void)st; return 0; }
    static double pf_probe_dbl(void *st) { (void)st; pf_probe_doubles++; return 0.5; }
    static const pf_u128 PF_PCG_MULT = (((pf_u128)2549297995355413924ULL) << 64) + 4865540595714422341ULL;
    /* n standard normals into out, as numpy's random_standard_normal_fill over a PCG64 bit generator bg whose
       state and increment are words[0..3] (low word first, or high first when hi_first); the state is
       advanced in words. ki, wi: the ziggurat's tables. */
    static void pf_fill_normals(uint64_t *words, int hi_first, bitgen_t *bg, const uint64_t *ki,
                                const double *wi, Py_ssize_t n, double *out) {
        int lo = hi_first ? 1 : 0, hi = 1 - lo;
        pf_u128 st = (((pf_u128)words[hi]) << 64) | words[lo];
        pf_u128 inc = (((pf_u128)words[2 + hi]) << 64) | words[2 + lo];
        for (Py_ssize_t i = 0; i < n; i++) {
            pf_u128 nst = st * PF_PCG_MULT + inc;                 /* PCG64 step, then the XSL-RR output */
            uint64_t v = ((uint64_t)(nst >> 64)) ^ (uint64_t)nst;
            unsigned rot = (unsigned)(nst >> 122);
            uint64_t r = (v >> rot) | (v << ((-rot) & 63));
            int idx = (int)(r & 0xff);                             /* numpy's ziggurat from here */
            r >>= 8;
            uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
            double x = (double)(int64_t)rabs * wi[idx];
            uint64_t xb;
            memcpy(&xb, &x, 8);
            xb ^= (r & 0x1) << 63;                                 /* x = -x when the sign bit is set */
            if (__builtin_expect(rabs < ki[idx], 1)) {
                memcpy(&out[i], &xb, 8);
                st = nst;
                continue;
            }
            words[lo] = (uint64_t)st;                              /* slow path: numpy redraws this one */
            words[hi] = (uint64_t)(st >> 64);
            out[i] = random_standard_normal(bg);
            st = (((pf_u128)words[hi]) << 64) | words[lo];
        }
        words[lo] = (uint64_t)st;
        words[hi] = (uint64_t)(st >> 64);
    }
    """
    uint64_t pf_probe_r, pf_probe_safe
    int pf_probe_calls, pf_probe_doubles
    uint64_t pf_probe_u64(void*) noexcept nogil
    uint32_t pf_probe_u32(void*) noexcept nogil
    double pf_probe_dbl(void*) noexcept nogil
    void pf_fill_normals(uint64_t* words, int hi_first, bitgen_t* bg, const uint64_t* ki, const double* wi,
                         Py_ssize_t n, double* out) noexcept nogil

cdef uint64_t _KI[256]
cdef double _WI[256]
cdef int _hi_first = 0
cdef bint _fast = False
cdef object _PCG64 = np.random.PCG64
cdef object _Generator = np.random.Generator


cdef bint _probe_slow(int idx, uint64_t rabs, double* x) noexcept:
    """numpy's random_standard_normal on the word whose ziggurat layer is idx, sign +, magnitude rabs: its
    value into x; whether it left the fast path (rabs >= ki[idx])."""
    global pf_probe_r, pf_probe_safe, pf_probe_calls, pf_probe_doubles
    cdef bitgen_t bg
    bg.state = NULL
    bg.next_uint64 = pf_probe_u64
    bg.next_uint32 = pf_probe_u32
    bg.next_double = pf_probe_dbl
    bg.next_raw = pf_probe_u64
    pf_probe_r = (rabs << 9) | <uint64_t>idx
    pf_probe_safe = (<uint64_t>1 << 9) | 2            # a word any layer > 1 accepts: ends a rejection loop
    pf_probe_calls = 0
    pf_probe_doubles = 0
    x[0] = random_standard_normal(&bg)
    return pf_probe_doubles > 0


cdef bint _read_tables() noexcept:
    """_KI, _WI from numpy's random_standard_normal: wi[idx] is its value at magnitude 1, ki[idx] the
    smallest magnitude that leaves the fast path (a layer with ki <= 1 accepts at most 0, whose value is
    +-0 whatever wi is)."""
    cdef int idx
    cdef uint64_t lo, hi, mid
    cdef double x
    for idx in range(256):
        if _probe_slow(idx, 1, &x):
            _WI[idx] = 0.0
            _KI[idx] = 0 if _probe_slow(idx, 0, &x) else 1
            continue
        _WI[idx] = x
        lo, hi = 1, <uint64_t>1 << 52               # fast at lo; hi: slow, or past every magnitude
        while hi - lo > 1:
            mid = lo + (hi - lo) // 2
            if _probe_slow(idx, mid, &x):
                hi = mid
            else:
                lo = mid
        _KI[idx] = hi
    return _probe_slow(2, 1, &x) == 0


cdef uint64_t* _pcg_words(object bit_generator) except NULL:
    """The PCG64's {state, inc} words (numpy's pcg64_state: a pointer to them first; numpy/random/_pcg64.pyx
    keeps both structs inside the PCG64 object). Nothing is read outside the object's own memory (its address
    up to its type's basic size): a state struct or words elsewhere (another layout) is a ValueError, never
    dereferenced. Whether the words are the generator's state is pcg_layout's check."""
    cdef bitgen_t* bg = <bitgen_t*>PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef uintptr_t lo = <uintptr_t><void*>bit_generator
    cdef uintptr_t hi = lo + <uintptr_t>Py_TYPE(bit_generator).tp_basicsize
    cdef uintptr_t st = <uintptr_t>bg.state
    if st < lo or st + sizeof(uint64_t*) > hi:
        raise ValueError("PCG64 state struct outside the bit generator object")
    cdef uintptr_t words = <uintptr_t>(<uint64_t**>bg.state)[0]
    if words < lo or words + 4 * sizeof(uint64_t) > hi:
        raise ValueError("PCG64 state words outside the bit generator object")
    return <uint64_t*>words


def pcg_layout(bit_generator):
    """Where a numpy PCG64's 128-bit state and increment sit among its four state words: 0 (low word first)
    or 1 (high first), checked against its ``state`` dict; None when it is not a PCG64 (this exact type) or
    the words cannot be read safely or do not match (never raises)."""
    try:
        if type(bit_generator) is not _PCG64:
            return None
        st = bit_generator.state
        if st.get("bit_generator") != "PCG64":
            return None
        state, inc = st["state"]["state"], st["state"]["inc"]
        words = _pcg_words(bit_generator)
        for hi_first in (0, 1):
            w_state = (<object>words[1 - hi_first] << 64) | <object>words[hi_first]
            w_inc = (<object>words[3 - hi_first] << 64) | <object>words[2 + hi_first]
            if w_state == (state & ((1 << 128) - 1)) and w_inc == (inc & ((1 << 128) - 1)):
                return hi_first
    except Exception:
        return None
    return None


def _verify_fast_normals():
    """True when numpy's ziggurat tables read back, a scratch PCG64's layout checks (pcg_layout; sets
    _hi_first) and its draws equal Generator.standard_normal bit for bit (then interleaved uniforms too)."""
    global _hi_first
    if not _read_tables():
        return False
    ours = _Generator(_PCG64(0x5eed))
    ref = _Generator(_PCG64(0x5eed))
    hi_first = pcg_layout(ours.bit_generator)
    if hi_first is None:
        return False
    _hi_first = hi_first
    buf = np.empty(20000)
    cdef double[::1] view = buf
    for k in (20000, 3000, 1, 7):
        _fill_normals(ours.bit_generator, view[:k])
        if not (np.array_equal(buf[:k], ref.standard_normal(k)) and np.array_equal(ours.random(3), ref.random(3))):
            return False
    return True


def _check_fast_normals():
    """Turn the C normals on (module flag and return value) when _verify_fast_normals passes; off when it
    fails or raises anything."""
    global _fast
    _fast = False
    try:
        ok = bool(_verify_fast_normals())
    except Exception:
        ok = False
    _fast = ok
    return ok


cdef int _fill_normals(object bit_generator, double[::1] out) except -1:
    """Standard normals into out from a numpy PCG64 bit generator, as Generator.standard_normal(len(out))."""
    cdef bitgen_t* bg = <bitgen_t*>PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef uint64_t* words = _pcg_words(bit_generator)
    with bit_generator.lock:
        pf_fill_normals(words, _hi_first, bg, _KI, _WI, out.shape[0], &out[0])
    return 0


fast_normals = _check_fast_normals()


cdef inline object _fast_bitgen(object draws):
    """The bit generator whose normals are drawn here in C for ``draws``: its PCG64 when draws is a
    NumpyDraws over a Generator over a PCG64 (these exact types) and ``fast_normals`` holds, else None."""
    if not _fast or type(draws) is not _NumpyDraws:
        return None
    gen = draws.gen
    if type(gen) is not _Generator:
        return None
    bitgen = gen.bit_generator
    return bitgen if type(bitgen) is _PCG64 else None


def draw_normals(draws, Py_ssize_t k):
    """k standard normals as ``draws.normals(k)`` gives them (a float64 array): drawn here in C when draws
    is a NumpyDraws over a PCG64 Generator and ``fast_normals`` holds, else by draws.normals."""
    bitgen = _fast_bitgen(draws)
    if bitgen is not None:
        out = np.empty(k)
        if k > 0:
            _fill_normals(bitgen, out)
        return out
    return _draw_array(draws.normals(k), k)


# ------------------------------------------------------------------ the kernel class
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


cdef inline bint _finite_pair(object v) noexcept:
    """v is a tuple starting with two finite floats (what the runtime passes)."""
    if type(v) is not tuple or PyTuple_GET_SIZE(v) < 2:
        return False
    a = <object>PyTuple_GET_ITEM(v, 0)
    b = <object>PyTuple_GET_ITEM(v, 1)
    return (PyFloat_CheckExact(a) and PyFloat_CheckExact(b) and _finite(PyFloat_AS_DOUBLE(a))
            and _finite(PyFloat_AS_DOUBLE(b)))


cdef inline const double* _data(object arr) noexcept:
    return <const double*>cnp.PyArray_DATA(<cnp.ndarray>arr)


cdef inline double* _wdata(object arr) noexcept:
    return <double*>cnp.PyArray_DATA(<cnp.ndarray>arr)


cdef inline void _zero(double* buf, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        buf[i] = 0.0


@cython.boundscheck(True)          # the build turns it off; here it guards uniforms(1)[0]
cdef class PfKernel:
    """The particles in C arrays and the state hooks of ``particle_filter.ParticleFilter`` on the kernels
    above; see the module docstring. ``xs``, ``ys``, ``yaws``, ``ws``, ``lws`` are the filter's float64
    arrays (to read: the filter keeps the cos / sin of ``yaws`` from one step to the next); ``est`` is a
    copy of the estimate buffer. Copies and pickles as the pure filter does (``__reduce__``)."""

    # set by the pure class's __init__ and read here
    cdef public dict cfg
    cdef public Py_ssize_t n, n_refresh
    cdef public double inv_two_var_m2, _outlier_e2_m2
    # counters and flags of the pure class, in slots (its cycle updates them every step)
    cdef public bint initialized
    cdef public long steps, outliers, predict_only, resamples, last_refresh, _outlier_run, lost_restarts
    cdef public double residual_lp_m
    cdef long long _t_us
    cdef bint _has_t
    # settings the kernels take
    cdef double bias_m, sigma_range_m, sigma_bearing_rad, sigma_yaw_refresh_rad
    # particles: the live set and the resampling target, swapped after each resampling
    cdef object _xs, _ys, _yaws, _xs2, _ys2, _yaws2, _ws, _lws, _est
    # cos / sin of the yaws, kept from the last weighted mean (valid while _trig_kept), and their targets
    cdef object _cos, _sin, _cos2, _sin2
    cdef bint _trig_kept
    # the draws' standard normals (3 per particle), drawn in C into _noise when they can be (see
    # draw_normals); the PCG64 they came from last and its state, capsule and lock
    cdef object _noise, _bitgen, _lock
    cdef bitgen_t* _bg
    cdef uint64_t* _words

    # ---------------------------------------------------------- state hooks of the pure class
    def _setup_state(self):
        c = self.cfg
        self.bias_m = c["range_bias_m"]
        self.sigma_range_m = c["refresh_range_sigma_m"]
        self.sigma_bearing_rad = c["refresh_bearing_sigma_rad"]
        self.sigma_yaw_refresh_rad = c["refresh_yaw_sigma_rad"]
        self._xs, self._ys, self._yaws = alloc(self.n), alloc(self.n), alloc(self.n)
        self._xs2, self._ys2, self._yaws2 = alloc(self.n), alloc(self.n), alloc(self.n)
        self._ws, self._lws, self._est = alloc(self.n), alloc(self.n), alloc(EST_LEN)
        self._cos, self._sin, self._cos2, self._sin2 = alloc(self.n), alloc(self.n), alloc(self.n), alloc(self.n)
        self._trig_kept = False
        self._noise = alloc(DIM * self.n)

    cdef object _normals(self, object draws, Py_ssize_t k):
        """k standard normals as ``draws.normals(k)`` gives them: drawn in C into the filter's buffer (valid
        until the next call) when draw_normals would, else draws.normals' answer as an array."""
        if k <= DIM * self.n:
            bitgen = _fast_bitgen(draws)
            if bitgen is not None:
                if bitgen is not self._bitgen:
                    self._bg = <bitgen_t*>PyCapsule_GetPointer(bitgen.capsule, "BitGenerator")
                    self._words = _pcg_words(bitgen)
                    self._lock = bitgen.lock
                    self._bitgen = bitgen
                with self._lock:
                    pf_fill_normals(self._words, _hi_first, self._bg, _KI, _WI, k, _wdata(self._noise))
                return self._noise
        return _draw_array(draws.normals(k), k)

    cdef inline int _require_state(self) except -1:
        """RuntimeError unless the particle arrays exist (the kernels read them through raw pointers)."""
        if self._xs is None:
            raise RuntimeError("ParticleFilter.__init__ was not called")
        return 0

    def _spawn(self, double range_m, draws, learned):
        self._require_state()
        if learned is not None:
            normals = self._normals(draws, DIM * self.n)
            _refresh(_wdata(self._xs), _wdata(self._ys), _wdata(self._yaws), 0, self.n, range_m - self.bias_m,
                     learned[0], learned[1], self.sigma_range_m, self.sigma_bearing_rad, self.sigma_yaw_refresh_rad,
                     _data(normals))
        else:
            normals = self._normals(draws, self.n)
            uniforms = _draw_array(draws.uniforms(2 * self.n), 2 * self.n)
            _init_ring(_wdata(self._xs), _wdata(self._ys), _wdata(self._yaws), self.n, range_m - self.bias_m,
                       self.sigma_range_m, _data(normals), _data(uniforms))
        _zero(_wdata(self._lws), self.n)
        self._trig_kept = False

    def _predict(self, double dt_s, double vxo, double vyo, double vxp, double vyp, range_m, draws,
                 double sigma_pos_m, double sigma_yaw_rad):
        self._require_state()
        noise = self._normals(draws, DIM * self.n)
        cdef double* pcos = _wdata(self._cos)
        cdef double* psin = _wdata(self._sin)
        if range_m is None:
            _predict_weight(_wdata(self._xs), _wdata(self._ys), _wdata(self._yaws), _wdata(self._ws),
                            _wdata(self._lws), self.n, dt_s, vxo, vyo, vxp, vyp, 0.0, 0.0, 0.0, _data(noise),
                            sigma_pos_m, sigma_yaw_rad, _wdata(self._est), pcos if self._trig_kept else NULL,
                            psin if self._trig_kept else NULL, pcos, psin)
        else:
            _predict_weight(_wdata(self._xs), _wdata(self._ys), _wdata(self._yaws), _wdata(self._ws),
                            _wdata(self._lws), self.n, dt_s, vxo, vyo, vxp, vyp, range_m, self.bias_m,
                            self.inv_two_var_m2, _data(noise), sigma_pos_m, sigma_yaw_rad, _wdata(self._est),
                            pcos if self._trig_kept else NULL, psin if self._trig_kept else NULL, pcos, psin)
        self._trig_kept = True
        return self.est

    def _resample(self, Py_ssize_t n_new, double range_m, learned, draws):
        """n - n_new particles resampled, n_new new ones (0 <= n_new < n: ValueError otherwise, nothing
        drawn or changed; the kernels would write outside the particle arrays)."""
        cdef Py_ssize_t i, n = self.n
        cdef double* pyaw
        cdef double* pcos
        cdef double* psin
        self._require_state()
        if not 0 <= n_new < n:
            raise ValueError("resampling needs 0 <= n_new < %d new particles, got %d" % (n, n_new))
        cdef double u0 = draws.uniforms(1)[0]
        _resample(_data(self._xs), _data(self._ys), _data(self._yaws), _data(self._ws), n, n - n_new, u0,
                  _wdata(self._xs2), _wdata(self._ys2), _wdata(self._yaws2), _data(self._cos), _data(self._sin),
                  _wdata(self._cos2), _wdata(self._sin2))
        self._xs, self._xs2 = self._xs2, self._xs
        self._ys, self._ys2 = self._ys2, self._ys
        self._yaws, self._yaws2 = self._yaws2, self._yaws
        self._cos, self._cos2 = self._cos2, self._cos
        self._sin, self._sin2 = self._sin2, self._sin
        _zero(_wdata(self._lws), self.n)
        if n_new:
            fresh = self._normals(draws, DIM * n_new)
            pyaw = _wdata(self._yaws)
            _refresh(_wdata(self._xs), _wdata(self._ys), pyaw, n - n_new, n_new, range_m - self.bias_m,
                     learned[0], learned[1], self.sigma_range_m, self.sigma_bearing_rad,
                     self.sigma_yaw_refresh_rad, _data(fresh))
            pcos = _wdata(self._cos)
            psin = _wdata(self._sin)
            for i in range(n - n_new, n):            # the new particles' cos / sin into the kept arrays
                pcos[i] = cos(pyaw[i])
                psin[i] = sin(pyaw[i])

    def _spread_m(self):
        self._require_state()
        cdef const double* e = _data(self._est)
        return _weighted_spread(_data(self._xs), _data(self._ys), _data(self._ws), self.n, e[E_X], e[E_Y],
                                e[E_SW])

    # ---------------------------------------------------------- the hot entry point
    def step(self, now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned=None):
        """As the pure ``step``; input of the runtime's usual types (an int time, tuples of finite floats,
        a finite float range >= 0 or None) skips the pure checks, anything else goes to them."""
        if (self.initialized and type(now_us) is int and self._in_order(now_us) and _finite_pair(v_own_body_mps)
                and _finite_pair(v_peer_body_mps) and (learned is None or _finite_pair(learned))
                and (range_m is None or (type(range_m) is float and _finite(range_m) and range_m >= 0.0))):
            return self._cycle(now_us, <object>PyTuple_GET_ITEM(v_own_body_mps, 0),
                               <object>PyTuple_GET_ITEM(v_own_body_mps, 1),
                               <object>PyTuple_GET_ITEM(v_peer_body_mps, 0),
                               <object>PyTuple_GET_ITEM(v_peer_body_mps, 1), range_m, draws, learned)
        return _pure.ParticleFilter.step(self, now_us, v_own_body_mps, v_peer_body_mps, range_m, draws, learned)

    cdef inline bint _in_order(self, object now_us):
        try:
            return <long long>now_us >= self._t_us
        except OverflowError:
            return False

    # ---------------------------------------------------------- copies and pickles
    def __reduce__(self):
        """copy.copy / copy.deepcopy / pickle: rebuilt by ``__setstate__`` from the settings, counters, time,
        particle arrays (the kept cos / sin of the yaws with them) and the instance's dict, the kernels module
        (``k``) by its name (modules do not pickle). The cache of the last generator (its object, lock and raw
        pointers into its state) is left out: the copy looks its generator up again at its first draw."""
        inst = getattr(self, "__dict__", None)
        inst = {} if inst is None else dict(inst)
        kernels_name = None
        if type(inst.get("k")) is _ModuleType:
            kernels_name = inst.pop("k").__name__
        state = (self.cfg, self.n, self.n_refresh, self.inv_two_var_m2, self._outlier_e2_m2, self.initialized,
                 self.steps, self.outliers, self.predict_only, self.resamples, self.last_refresh, self._outlier_run,
                 self.lost_restarts, self.residual_lp_m, self._t_us, self._has_t, self.bias_m, self.sigma_range_m,
                 self.sigma_bearing_rad, self.sigma_yaw_refresh_rad, self._trig_kept,
                 (self._xs, self._ys, self._yaws, self._xs2, self._ys2, self._yaws2, self._ws, self._lws,
                  self._cos, self._sin, self._cos2, self._sin2), self._est, self._noise)
        return (_copyreg.__newobj__, (type(self),), (state, inst, kernels_name))

    def __setstate__(self, state):
        """The state ``__reduce__`` gives. The arrays are checked (the 12 particle arrays, the estimate and the
        noise buffer: all None, as before ``__init__``, or each float64, 1-D, contiguous, long enough for ``n``)
        before the kernels may touch them: ValueError otherwise, nothing set."""
        fields, inst, kernels_name = state
        (cfg, n, n_refresh, inv_two_var_m2, outlier_e2_m2, initialized, steps, outliers, predict_only, resamples,
         last_refresh, outlier_run, lost_restarts, residual_lp_m, t_us, has_t, bias_m, sigma_range_m,
         sigma_bearing_rad, sigma_yaw_refresh_rad, trig_kept, particles, est, noise) = fields
        arrays = list(particles) + [est, noise]
        if len(arrays) != 14 or (any(a is None for a in arrays) and any(a is not None for a in arrays)):
            raise ValueError("particle filter state: 12 particle arrays, the estimate and the noise buffer, "
                             "all present or all None")
        for arr, size in [(a, n) for a in particles] + [(est, EST_LEN), (noise, DIM * n)]:
            if arr is not None and not (cnp.PyArray_CheckExact(arr)
                                        and cnp.PyArray_TYPE(<cnp.ndarray>arr) == cnp.NPY_DOUBLE
                                        and cnp.PyArray_NDIM(<cnp.ndarray>arr) == 1
                                        and cnp.PyArray_ISCARRAY(<cnp.ndarray>arr)
                                        and cnp.PyArray_SIZE(<cnp.ndarray>arr) >= size):
                raise ValueError("particle filter state: a particle buffer is not a float64 array of %d values"
                                 % size)
        self.cfg, self.n, self.n_refresh = cfg, n, n_refresh
        self.inv_two_var_m2, self._outlier_e2_m2 = inv_two_var_m2, outlier_e2_m2
        self.initialized, self.steps, self.outliers, self.predict_only = initialized, steps, outliers, predict_only
        self.resamples, self.last_refresh, self._outlier_run = resamples, last_refresh, outlier_run
        self.lost_restarts, self.residual_lp_m, self._t_us, self._has_t = lost_restarts, residual_lp_m, t_us, has_t
        self.bias_m, self.sigma_range_m = bias_m, sigma_range_m
        self.sigma_bearing_rad, self.sigma_yaw_refresh_rad = sigma_bearing_rad, sigma_yaw_refresh_rad
        (self._xs, self._ys, self._yaws, self._xs2, self._ys2, self._yaws2, self._ws, self._lws,
         self._cos, self._sin, self._cos2, self._sin2) = particles
        self._est, self._noise, self._trig_kept = est, noise, trig_kept
        self._bitgen = self._lock = None
        self._bg = NULL
        self._words = NULL
        if kernels_name is not None:
            inst["k"] = _import_module(kernels_name)
        if inst:
            self.__dict__.update(inst)

    # ---------------------------------------------------------- state access
    @property
    def time_us(self):
        return self._t_us if self._has_t else None

    @time_us.setter
    def time_us(self, value):
        """None or an int within a signed 64-bit integer (converted before anything is set)."""
        cdef long long t = 0 if value is None else value
        self._t_us = t
        self._has_t = value is not None

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
        cdef Py_ssize_t i
        self._require_state()
        cdef const double* e = _data(self._est)
        return [e[i] for i in range(EST_LEN)]


class ParticleFilter(PfKernel, _pure.ParticleFilter):
    """The relative-pose particle filter, Cython build: the pure class's code over :class:`PfKernel`."""


filter_class = ParticleFilter
