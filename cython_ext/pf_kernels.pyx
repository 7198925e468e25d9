# cython: language_level=3
"""Cython kernels of the relative-pose particle filter (pocket IV-B).

Same signatures and the same arithmetic, term by term, as the pure kernels in
onboard/estimators/particle_filter.py (libm exp/sin/cos/sqrt/atan2/fmod, like CPython's
math module), so both paths give the same numbers on the same draws. Buffers are
contiguous float64 arrays; randomness is passed in.
"""
import numpy as np
from libc.math cimport atan2, cos, exp, fmod, sin, sqrt, INFINITY

name = "cython"

cdef double PI = 3.141592653589793
cdef double TWO_PI = 2.0 * 3.141592653589793


def alloc(Py_ssize_t n):
    return np.zeros(n, dtype=np.float64)


def as_buffer(seq):
    return np.ascontiguousarray(seq, dtype=np.float64)


cdef inline double _wrap_pi(double a) noexcept nogil:
    a = fmod(a + PI, TWO_PI)
    if a < 0.0:
        a += TWO_PI
    return a - PI


def predict_weight(double[::1] xs, double[::1] ys, double[::1] yaws, double[::1] ws, double[::1] lws,
                   Py_ssize_t n,
                   double dt_s, double vx_own_mps, double vy_own_mps, double vx_peer_mps,
                   double vy_peer_mps, double range_m, double bias_m, double inv_two_var_m2,
                   const double[::1] noise, double sigma_pos_m, double sigma_yaw_rad,
                   double[::1] est):
    """See particle_filter.predict_weight (pocket IV-B motion, III-A weight)."""
    cdef Py_ssize_t i, k
    cdef double yaw, c, s, x, y, e, e2, w, lw
    cdef double e2_min = INFINITY
    cdef double l_max = -INFINITY
    cdef double sw = 0.0, sww = 0.0, swx = 0.0, swy = 0.0, sws = 0.0, swc = 0.0
    if noise.shape[0] < 3 * n or xs.shape[0] < n or ys.shape[0] < n or yaws.shape[0] < n \
            or ws.shape[0] < n or lws.shape[0] < n or est.shape[0] < 7:
        raise ValueError("particle filter buffers shorter than n")
    with nogil:
        for i in range(n):
            k = 3 * i
            yaw = yaws[i]
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
            sws += w * sin(yaws[i])
            swc += w * cos(yaws[i])
    est[0] = swx / sw
    est[1] = swy / sw
    est[2] = atan2(sws, swc)
    est[3] = sw * sw / sww
    est[4] = e2_min
    est[5] = sw
    est[6] = l_max


def resample(const double[::1] xs, const double[::1] ys, const double[::1] yaws,
             const double[::1] ws, Py_ssize_t n, Py_ssize_t n_keep, double u0,
             double[::1] xs_out, double[::1] ys_out, double[::1] yaws_out):
    """See particle_filter.resample (systematic, one uniform draw)."""
    cdef Py_ssize_t i, m, last
    cdef double total = 0.0, step, cum, target
    if n_keep <= 0 or n <= 0 or xs_out.shape[0] < n_keep or ws.shape[0] < n:
        raise ValueError("resample needs 0 < n_keep <= len(out) and n <= len(ws)")
    with nogil:
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


def refresh(double[::1] xs, double[::1] ys, double[::1] yaws, Py_ssize_t start, Py_ssize_t count,
            double range_m, double bearing_rad, double yaw_rad, double sigma_range_m,
            double sigma_bearing_rad, double sigma_yaw_rad, const double[::1] noise):
    """See particle_filter.refresh (polar spread around the learned estimate)."""
    cdef Py_ssize_t j, k
    cdef double r, b
    if count <= 0:
        return
    if noise.shape[0] < 3 * count or xs.shape[0] < start + count:
        raise ValueError("refresh buffers too short")
    with nogil:
        for j in range(count):
            k = 3 * j
            r = range_m + sigma_range_m * noise[k]
            if r < 0.0:
                r = -r
            b = bearing_rad + sigma_bearing_rad * noise[k + 1]
            xs[start + j] = r * cos(b)
            ys[start + j] = r * sin(b)
            yaws[start + j] = _wrap_pi(yaw_rad + sigma_yaw_rad * noise[k + 2])


def init_ring(double[::1] xs, double[::1] ys, double[::1] yaws, Py_ssize_t n, double range_m,
              double sigma_range_m, const double[::1] normals, const double[::1] uniforms):
    """See particle_filter.init_ring (uninformed start of the pure particle filter)."""
    cdef Py_ssize_t i
    cdef double r, b
    if normals.shape[0] < n or uniforms.shape[0] < 2 * n or xs.shape[0] < n:
        raise ValueError("init_ring buffers too short")
    with nogil:
        for i in range(n):
            r = range_m + sigma_range_m * normals[i]
            if r < 0.0:
                r = -r
            b = -PI + TWO_PI * uniforms[2 * i]
            xs[i] = r * cos(b)
            ys[i] = r * sin(b)
            yaws[i] = -PI + TWO_PI * uniforms[2 * i + 1]
