# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython build of the 15-state ESKF: the numeric kernels only, under the pure class.

``Eskf`` here is ``class Eskf(EskfKernel, onboard.estimators.eskf.Eskf)``: configuration,
validation messages, initialisation, the lost-filter restart, get_state/set_state,
nav_state and the counters are the pure module's code (one source); :class:`EskfKernel`,
first in the MRO, keeps the filter state in C arrays and replaces only the pure class's
state hooks (``_setup_state``, ``_reset_nominal``, ``_nominal``/``_set_nominal``,
``_set_variance``, the ``P`` attribute) and the hot entry points ``predict``,
``predict_many``, ``predict_packed`` and ``update_pose``, whose fast path reads a well-formed
sample in C and hands anything else to the pure parser (so refusals and their messages are the
pure module's). ``pack_imu`` (also ``EskfKernel.pack_imu``) writes an ImuSample into the packed
IMU queue that ``predict_packed`` reads (layout: ``onboard.estimators.eskf_packed``), the fields
read in C.

The kernels compute every entry of P with the same operations, in the same order, as the pure
``_propagate`` / ``_fuse`` (so the two builds agree bit for bit, tested), arranged for the
machine: F = I + A dt expanded by hand (identity, skew -[dv_ned]x without its zero diagonal,
rotation blocks; ag2u eqs. 4a-4c, 8), M = F P built over contiguous columns (each block's three
rows in one pass), the upper triangle of M F^T written straight into P and mirrored, then Q;
the update (ag2u eqs. 5b, 6, 9, Joseph form) solves K^T for all 15 columns at once and forms
each row of P' from one pass over (I - K H) P's row (all 15 columns: one fixed loop costs less
than the entries it skips), G = K R - (I - K H) P H^T and G K^T, with the six measurement terms
written out (H selects the first 6 states, so H P is P's first rows).
No heap allocation, no generic matrix product.

Why a kernel type under the pure class rather than Cython's pure-Python mode (compiling
eskf.py with an augmenting .pxd): the pure module keeps P and the INS state in Python lists
of floats (the MicroPython path has no shared array of doubles), so a compiled copy still
indexes lists of boxed floats; compiled as it is, its 10:1 predict/update cycle measured
617 us against about 5 us for C kernels (a .pxd can type the locals, not the lists). The
calls that run the pure class's code (nav_state, get_state, covariance, counters) cost a
few microseconds, all outside the IMU-rate loop. Rare paths (first pose, gated pose, bad
input, samples that are not tuples of floats) run the pure code. Figures:
docs/results/estimators.md.
"""
cimport cython
from libc.math cimport sin, cos, sqrt, atan2, asin, isfinite
from libc.string cimport memcpy
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_FORMAT, PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE

from onboard.estimators import eskf as _pure
from onboard.estimators import eskf_packed as _packed
from onboard.estimators.eskf import EskfInputError

cdef enum:
    NS = 15
    NM = 6
    NSS = 225
    POS = 0
    ATT = 3
    VEL = 6
    BACC = 9
    BGYR = 12
    NOT_PD = -1         # as _pure.NOT_PD, GATED, FUSED
    GATED = 0
    FUSED = 1

cdef enum:             # packed IMU layout (onboard.estimators.eskf_packed)
    IMU_TIME_US = 0
    IMU_DT_US = 1
    IMU_DVEL = 2
    IMU_DANG = 5
    IMU_STRIDE = 8
cdef double TIME_LIMIT = 4611686018427387904.0     # 2**62: microsecond times beyond it go to the pure code

assert (NOT_PD, GATED, FUSED) == (_pure.NOT_PD, _pure.GATED, _pure.FUSED)
assert (IMU_TIME_US, IMU_DT_US, IMU_DVEL, IMU_DANG, IMU_STRIDE) == (
    _packed.IMU_TIME_US, _packed.IMU_DT_US, _packed.IMU_DVEL_BODY_MPS, _packed.IMU_DANG_BODY_RAD, _packed.IMU_STRIDE)
assert (NS, NM, POS, ATT, VEL, BACC, BGYR) == (_pure.N_STATE, _pure.N_MEAS, _pure.POS, _pure.ATT, _pure.VEL,
                                               _pure.BACC, _pure.BGYR)


# ---------------------------------------------------------------- rotations (as onboard.core.rotations)

cdef inline void e2d_c(double roll, double pitch, double yaw, double* d) noexcept nogil:
    """ag2u eq. 3: D_ned_to_body of Z-Y-X Euler angles (transpose of euler_to_dcm)."""
    cdef double cr = cos(roll)
    cdef double sr = sin(roll)
    cdef double cp = cos(pitch)
    cdef double sp = sin(pitch)
    cdef double cy = cos(yaw)
    cdef double sy = sin(yaw)
    d[0] = cy * cp
    d[3] = cy * sp * sr - sy * cr
    d[6] = cy * sp * cr + sy * sr
    d[1] = sy * cp
    d[4] = sy * sp * sr + cy * cr
    d[7] = sy * sp * cr - cy * sr
    d[2] = -sp
    d[5] = cp * sr
    d[8] = cp * cr


cdef inline void d2e_c(const double* d, double* e) noexcept nogil:
    """ag2u eq. 7: (roll, pitch, yaw) of D_ned_to_body."""
    cdef double s = -d[2]
    if s > 1.0:
        s = 1.0
    elif s < -1.0:
        s = -1.0
    e[1] = asin(s)
    e[0] = atan2(d[5], d[8])
    e[2] = atan2(d[1], d[0])


cdef inline void orthonormalize_c(double* r) noexcept nogil:
    """One Gram-Schmidt pass on the rows (as rotations.dcm_orthonormalize)."""
    cdef double a0 = r[0], a1 = r[1], a2 = r[2]
    cdef double b0 = r[3], b1 = r[4], b2 = r[5]
    cdef double n0 = sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    a0 = a0 / n0
    a1 = a1 / n0
    a2 = a2 / n0
    cdef double dd = a0 * b0 + a1 * b1 + a2 * b2
    b0 = b0 - dd * a0
    b1 = b1 - dd * a1
    b2 = b2 - dd * a2
    cdef double n1 = sqrt(b0 * b0 + b1 * b1 + b2 * b2)
    b0 = b0 / n1
    b1 = b1 / n1
    b2 = b2 / n1
    r[0] = a0
    r[1] = a1
    r[2] = a2
    r[3] = b0
    r[4] = b1
    r[5] = b2
    r[6] = a1 * b2 - a2 * b1
    r[7] = a2 * b0 - a0 * b2
    r[8] = a0 * b1 - a1 * b0


cdef inline bint _read3(object v, double* out):
    """Three finite floats from a length-3 tuple/list; False when not exactly that."""
    cdef tuple t
    if type(v) is tuple and len(<tuple>v) == 3:
        t = <tuple>v
        out[0] = <double>t[0]
        out[1] = <double>t[1]
        out[2] = <double>t[2]
    else:
        return False
    return isfinite(out[0]) and isfinite(out[1]) and isfinite(out[2])


cdef inline bint _cov3(object c, const double* default, double* out):
    """Per-axis variances: the defaults for None, else three finite values > 0; False otherwise."""
    cdef double cv[3]
    if c is None:
        out[0] = default[0]
        out[1] = default[1]
        out[2] = default[2]
        return True
    if _read3(c, cv) and cv[0] > 0.0 and cv[1] > 0.0 and cv[2] > 0.0:
        out[0] = cv[0]
        out[1] = cv[1]
        out[2] = cv[2]
        return True
    return False


cdef inline bint _tuple3(object v, double* out) except -1:
    """Three doubles of a length-3 tuple (floats or ints); False when not such a tuple."""
    cdef tuple t
    if type(v) is not tuple or len(<tuple>v) != 3:
        return False
    t = <tuple>v
    out[0] = <double>t[0]
    out[1] = <double>t[1]
    out[2] = <double>t[2]
    return True


def pack_imu(buf, Py_ssize_t k, sample):
    """``onboard.estimators.eskf_packed.pack_imu`` with the sample read in C: the same values written, the
    same return value (True when every value is finite); anything but an ImuSample's int times and
    3-tuples (or a buffer that is not doubles) goes to the pure function, which also raises its errors."""
    cdef Py_buffer view
    cdef double row[IMU_STRIDE]
    cdef double* out
    cdef int i
    cdef bint finite = True
    try:
        if not (type(sample.time_us) is int and type(sample.dt_us) is int
                and _tuple3(sample.dvel_body_mps, row + IMU_DVEL) and _tuple3(sample.dang_body_rad, row + IMU_DANG)):
            return _packed.pack_imu(buf, k, sample)
        row[IMU_TIME_US] = <double>sample.time_us        # float(int): correctly rounded, as in the pure code
        row[IMU_DT_US] = <double>sample.dt_us
    except (AttributeError, TypeError, ValueError, OverflowError):
        return _packed.pack_imu(buf, k, sample)
    try:
        PyObject_GetBuffer(buf, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
    except (TypeError, BufferError):
        return _packed.pack_imu(buf, k, sample)
    if (view.itemsize != sizeof(double) or view.format == NULL or view.format[0] != b'd' or view.format[1] != 0
            or k < 0 or (k + 1) * IMU_STRIDE > view.len // sizeof(double)):
        PyBuffer_Release(&view)
        return _packed.pack_imu(buf, k, sample)
    out = <double*>view.buf + k * IMU_STRIDE
    for i in range(IMU_STRIDE):
        out[i] = row[i]
        finite = finite and isfinite(row[i])
    PyBuffer_Release(&view)
    return finite


cdef class EskfKernel:
    """The filter state in C arrays and the numeric kernels; see the module docstring."""

    cdef double _P[NSS]
    cdef double pos[3]
    cdef double vel[3]
    cdef double D[9]
    cdef double ba[3]
    cdef double bg[3]
    cdef double g_mps2
    cdef double r_default[NM]
    cdef double gate
    cdef long long max_dt_us
    cdef long long _last_imu_us
    cdef bint has_last_imu
    cdef double y_last[NM]
    # set by the pure class's __init__ / initialize / bookkeeping
    cdef public dict cfg
    cdef public bint initialized
    cdef public long long time_us, last_fused_us
    cdef public long predicts, updates, gated, rejected, skipped, resets
    cdef public double last_nis
    cdef public double _var_acc, _var_gyr, _var_bacc, _var_bgyr

    # ------------------------------------------------------------ state hooks of the pure class
    def _setup_state(self):
        cdef int i
        c = self.cfg
        self.g_mps2 = c["gravity_mps2"]
        for i in range(3):
            self.r_default[i] = c["pose_pos_sigma_m"][i] * c["pose_pos_sigma_m"][i]
            self.r_default[3 + i] = c["pose_att_sigma_rad"][i] * c["pose_att_sigma_rad"][i]
        self.gate = c["gate_nis"]
        self.max_dt_us = c["max_imu_dt_us"]
        self._reset_nominal((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        for i in range(NSS):
            self._P[i] = 0.0
        for i in range(NM):
            self.y_last[i] = 0.0

    def _reset_nominal(self, pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps):
        cdef int i
        for i in range(3):
            self.pos[i] = float(pos_ned_m[i])
            self.vel[i] = float(vel_ned_mps[i])
            self.ba[i] = float(accel_bias_mps2[i])
            self.bg[i] = float(gyro_bias_radps[i])
        e2d_c(float(euler_rad[0]), float(euler_rad[1]), float(euler_rad[2]), self.D)

    def _nominal(self):
        return ((self.pos[0], self.pos[1], self.pos[2]), (self.vel[0], self.vel[1], self.vel[2]),
                tuple([self.D[i] for i in range(9)]), (self.ba[0], self.ba[1], self.ba[2]),
                (self.bg[0], self.bg[1], self.bg[2]))

    def _set_nominal(self, pos_ned_m, vel_ned_mps, D_ned_to_body, accel_bias_mps2, gyro_bias_radps):
        cdef int i
        for i in range(3):
            self.pos[i] = pos_ned_m[i]
            self.vel[i] = vel_ned_mps[i]
            self.ba[i] = accel_bias_mps2[i]
            self.bg[i] = gyro_bias_radps[i]
        for i in range(9):
            self.D[i] = D_ned_to_body[i]

    def _set_variance(self, int i, double var):
        self._P[i * NS + i] = var

    @property
    def P(self):
        """The 15x15 covariance, flat row-major (a copy); assigning copies the values in."""
        return [self._P[i] for i in range(NSS)]

    @P.setter
    def P(self, values):
        cdef int i
        if len(values) != NSS:
            raise EskfInputError("P needs %d values, got %d" % (NSS, len(values)))
        for i in range(NSS):
            self._P[i] = values[i]

    @property
    def last_imu_us(self):
        return self._last_imu_us if self.has_last_imu else None

    @last_imu_us.setter
    def last_imu_us(self, value):
        self.has_last_imu = value is not None
        self._last_imu_us = value if value is not None else 0

    @property
    def last_innovation(self):
        return [self.y_last[i] for i in range(NM)]

    @property
    def accel_bias_mps2(self):
        return (self.ba[0], self.ba[1], self.ba[2])

    @property
    def gyro_bias_radps(self):
        return (self.bg[0], self.bg[1], self.bg[2])

    # ------------------------------------------------------------ predict
    pack_imu = staticmethod(pack_imu)       # the packed rows predict_packed reads, written in C

    cdef inline bint _read_imu(self, object imu, long long* t, long long* dt_us, double* dv, double* da):
        """A well-formed, in-order IMU sample read in C; False sends it to the pure parser."""
        try:
            t[0] = imu.time_us
            dt_us[0] = imu.dt_us
            if not (_read3(imu.dvel_body_mps, dv) and _read3(imu.dang_body_rad, da)):
                return False
        except (AttributeError, TypeError, ValueError, OverflowError):
            return False
        return not (dt_us[0] <= 0 or dt_us[0] > self.max_dt_us
                    or (self.has_last_imu and t[0] <= self._last_imu_us))

    @cython.always_allow_keywords(False)      # METH_O: the cheapest Python call for the hot path
    def predict(self, imu):
        """As the pure ``predict`` (ag2u eqs. 4a-4c + covariance propagation)."""
        cdef long long t = 0, dt_us = 0
        cdef double dv[3]
        cdef double da[3]
        if not (self.initialized and self._read_imu(imu, &t, &dt_us, dv, da)):
            return _pure.Eskf.predict(self, imu)      # refusals, skipped samples: the pure code
        self._predict_c(dt_us * 1e-6, dv, da)
        self.time_us = t
        self._last_imu_us = t
        self.has_last_imu = True
        self.predicts += 1
        return True

    @cython.always_allow_keywords(False)
    def predict_many(self, imu_samples):
        """As the pure ``predict_many``: each sample exactly as ``predict``; returns how many were refused."""
        cdef long long t = 0, dt_us = 0
        cdef double dv[3]
        cdef double da[3]
        cdef long refused = 0
        for imu in imu_samples:
            if self.initialized and self._read_imu(imu, &t, &dt_us, dv, da):
                self._predict_c(dt_us * 1e-6, dv, da)
                self.time_us = t
                self._last_imu_us = t
                self.has_last_imu = True
                self.predicts += 1
            else:
                try:
                    _pure.Eskf.predict(self, imu)
                except EskfInputError:
                    refused += 1
        return refused

    @cython.always_allow_keywords(False)
    def predict_packed(self, buf, Py_ssize_t count):
        """As the pure ``predict_packed``: the first ``count`` samples of a packed IMU buffer (layout of
        ``onboard.estimators.eskf_packed``), each exactly as ``predict``; returns how many were refused.

        The buffer is read through the buffer protocol (one ``PyObject_GetBuffer``, about half what
        acquiring a typed memoryview costs per call): a well-formed, in-order sample goes to the kernel with
        no Python object made; anything else (and every sample before initialisation) to the pure code."""
        cdef Py_buffer view
        cdef const double* row
        cdef double dv[3]
        cdef double da[3]
        cdef double t_d, dt_d
        cdef long long t, dt_us
        cdef long refused = 0
        cdef Py_ssize_t k, n_values
        try:
            PyObject_GetBuffer(buf, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS)
        except (TypeError, BufferError):
            return _pure.Eskf.predict_packed(self, buf, count)      # a sequence that is no buffer
        if view.itemsize != sizeof(double) or view.format == NULL or view.format[0] != b'd' or view.format[1] != 0:
            PyBuffer_Release(&view)             # not doubles: the pure code reads it as a sequence
            return _pure.Eskf.predict_packed(self, buf, count)
        try:
            n_values = view.len // sizeof(double)
            if count < 0 or count * IMU_STRIDE > n_values:
                _pure.check_packed_count(n_values, count)
            for k in range(count):
                row = <const double*>view.buf + k * IMU_STRIDE
                t_d = row[IMU_TIME_US]
                dt_d = row[IMU_DT_US]
                dv[0] = row[IMU_DVEL]
                dv[1] = row[IMU_DVEL + 1]
                dv[2] = row[IMU_DVEL + 2]
                da[0] = row[IMU_DANG]
                da[1] = row[IMU_DANG + 1]
                da[2] = row[IMU_DANG + 2]
                # int(x) of the pure parser truncates towards zero, as the C cast does (within +-2**62);
                # dt_d >= 1 is int(dt_d) >= 1
                if (self.initialized and -TIME_LIMIT < t_d < TIME_LIMIT and 1.0 <= dt_d < TIME_LIMIT
                        and isfinite(dv[0]) and isfinite(dv[1]) and isfinite(dv[2])
                        and isfinite(da[0]) and isfinite(da[1]) and isfinite(da[2])):
                    t = <long long>t_d
                    dt_us = <long long>dt_d
                    if not (dt_us > self.max_dt_us or (self.has_last_imu and t <= self._last_imu_us)):
                        self._predict_c(dt_us * 1e-6, dv, da)
                        self.time_us = t
                        self._last_imu_us = t
                        self.has_last_imu = True
                        self.predicts += 1
                        continue
                try:
                    _pure.Eskf.predict(self, _pure.PackedImu(buf, k))
                except EskfInputError:
                    refused += 1
        finally:
            PyBuffer_Release(&view)
        return refused

    def _step(self, double dt, dvel, dang):
        """The strapdown and covariance kernel on parsed input (the pure predict's numeric part)."""
        cdef double dv[3]
        cdef double da[3]
        cdef int i
        for i in range(3):
            dv[i] = dvel[i]
            da[i] = dang[i]
        self._predict_c(dt, dv, da)

    cdef void _predict_c(self, double dt, const double* dvel, const double* dang) noexcept nogil:
        """Strapdown (ag2u eqs. 4a-4c), then P <- F P F^T + Q with F = I + A dt expanded by hand
        (the pure ``_propagate``: each entry in the same floating-point order, zero terms of the
        skew block -[dv_ned]x dropped)."""
        cdef double f[9]
        cdef double nd[9]
        cdef double A[9]
        cdef double M[BACC * NS]
        cdef double* P = self._P
        cdef double* d = self.D
        cdef const double* m
        cdef const double* pa0 = P + ATT * NS
        cdef const double* pa1 = P + (ATT + 1) * NS
        cdef const double* pa2 = P + (ATT + 2) * NS
        cdef const double* pb0 = P + BACC * NS
        cdef const double* pb1 = P + (BACC + 1) * NS
        cdef const double* pb2 = P + (BACC + 2) * NS
        cdef const double* pg0 = P + BGYR * NS
        cdef const double* pg1 = P + (BGYR + 1) * NS
        cdef const double* pg2 = P + (BGYR + 2) * NS
        cdef double* pr
        cdef double dvx, dvy, dvz, dv_n, dv_e, dv_d, v, u0, u1, u2
        cdef double f0, f1, f2, x0, x1, x2, b0, b1, b2
        cdef double ma0, ma1, ma2, mba0, mba1, mba2, mbg0, mbg1, mbg2
        cdef double qa, qg, qba, qbg
        cdef int i, j, c, r, p_, v_
        # ---- strapdown (ins.Strapdown.step)
        dvx = dvel[0] - self.ba[0] * dt
        dvy = dvel[1] - self.ba[1] * dt
        dvz = dvel[2] - self.ba[2] * dt
        e2d_c(dang[0] - self.bg[0] * dt, dang[1] - self.bg[1] * dt, dang[2] - self.bg[2] * dt, f)
        for i in range(3):                                     # ag2u eq. 4a
            f0 = f[i * 3]
            f1 = f[i * 3 + 1]
            f2 = f[i * 3 + 2]
            for j in range(3):
                nd[i * 3 + j] = f0 * d[j] + f1 * d[3 + j] + f2 * d[6 + j]
        for i in range(9):
            d[i] = nd[i]
        dv_n = nd[0] * dvx + nd[3] * dvy + nd[6] * dvz         # ag2u eq. 4b
        dv_e = nd[1] * dvx + nd[4] * dvy + nd[7] * dvz
        dv_d = nd[2] * dvx + nd[5] * dvy + nd[8] * dvz
        self.vel[0] = self.vel[0] + dv_n
        self.vel[1] = self.vel[1] + dv_e
        self.vel[2] = self.vel[2] + (dv_d + self.g_mps2 * dt)
        self.pos[0] = self.pos[0] + self.vel[0] * dt            # ag2u eq. 4c
        self.pos[1] = self.pos[1] + self.vel[1] * dt
        self.pos[2] = self.pos[2] + self.vel[2] * dt
        # ---- covariance: A = -R dt with R = D^T (A[i][j] = -D[j][i] dt); S = -[dv_ned]x has rows
        # (0, dv_d, -dv_e), (-dv_d, 0, dv_n), (dv_e, -dv_n, 0)
        A[0] = -d[0] * dt
        A[1] = -d[3] * dt
        A[2] = -d[6] * dt
        A[3] = -d[1] * dt
        A[4] = -d[4] * dt
        A[5] = -d[7] * dt
        A[6] = -d[2] * dt
        A[7] = -d[5] * dt
        A[8] = -d[8] * dt
        # M = F P over contiguous columns, the three rows of each block in one pass (rows dp, dpsi,
        # dv; the bias rows equal P's); P' below reads the dpsi and dv rows only from column ATT on
        for c in range(NS):
            M[POS * NS + c] = P[POS * NS + c] + dt * P[VEL * NS + c]
            M[(POS + 1) * NS + c] = P[(POS + 1) * NS + c] + dt * P[(VEL + 1) * NS + c]
            M[(POS + 2) * NS + c] = P[(POS + 2) * NS + c] + dt * P[(VEL + 2) * NS + c]
        for c in range(ATT, NS):
            x0 = pg0[c]
            x1 = pg1[c]
            x2 = pg2[c]
            M[ATT * NS + c] = pa0[c] + (A[0] * x0 + A[1] * x1 + A[2] * x2)
            M[(ATT + 1) * NS + c] = pa1[c] + (A[3] * x0 + A[4] * x1 + A[5] * x2)
            M[(ATT + 2) * NS + c] = pa2[c] + (A[6] * x0 + A[7] * x1 + A[8] * x2)
        for c in range(ATT, NS):
            x0 = pa0[c]
            x1 = pa1[c]
            x2 = pa2[c]
            b0 = pb0[c]
            b1 = pb1[c]
            b2 = pb2[c]
            M[VEL * NS + c] = (P[VEL * NS + c] + (dv_d * x1 + -dv_e * x2)) + (A[0] * b0 + A[1] * b1 + A[2] * b2)
            M[(VEL + 1) * NS + c] = ((P[(VEL + 1) * NS + c] + (-dv_d * x0 + dv_n * x2))
                                     + (A[3] * b0 + A[4] * b1 + A[5] * b2))
            M[(VEL + 2) * NS + c] = ((P[(VEL + 2) * NS + c] + (dv_e * x0 + -dv_n * x1))
                                     + (A[6] * b0 + A[7] * b1 + A[8] * b2))
        # P' = M F^T: upper triangle of the first 9 rows written straight into P and mirrored (the
        # bias-bias block keeps P's values); then Q
        for r in range(BACC):
            m = M + r * NS
            pr = P + r * NS
            if r < ATT:
                for c in range(r, ATT):
                    v = m[c] + dt * m[VEL + c]
                    pr[c] = v
                    P[c * NS + r] = v
            if r < VEL:
                mbg0 = m[BGYR]
                mbg1 = m[BGYR + 1]
                mbg2 = m[BGYR + 2]
                u0 = m[ATT] + (A[0] * mbg0 + A[1] * mbg1 + A[2] * mbg2)
                u1 = m[ATT + 1] + (A[3] * mbg0 + A[4] * mbg1 + A[5] * mbg2)
                u2 = m[ATT + 2] + (A[6] * mbg0 + A[7] * mbg1 + A[8] * mbg2)
                if r <= ATT:
                    pr[ATT] = u0
                    P[ATT * NS + r] = u0
                if r <= ATT + 1:
                    pr[ATT + 1] = u1
                    P[(ATT + 1) * NS + r] = u1
                pr[ATT + 2] = u2
                P[(ATT + 2) * NS + r] = u2
            ma0 = m[ATT]
            ma1 = m[ATT + 1]
            ma2 = m[ATT + 2]
            mba0 = m[BACC]
            mba1 = m[BACC + 1]
            mba2 = m[BACC + 2]
            u0 = (m[VEL] + (dv_d * ma1 + -dv_e * ma2)) + (A[0] * mba0 + A[1] * mba1 + A[2] * mba2)
            u1 = (m[VEL + 1] + (-dv_d * ma0 + dv_n * ma2)) + (A[3] * mba0 + A[4] * mba1 + A[5] * mba2)
            u2 = (m[VEL + 2] + (dv_e * ma0 + -dv_n * ma1)) + (A[6] * mba0 + A[7] * mba1 + A[8] * mba2)
            if r <= VEL:
                pr[VEL] = u0
                P[VEL * NS + r] = u0
            if r <= VEL + 1:
                pr[VEL + 1] = u1
                P[(VEL + 1) * NS + r] = u1
            pr[VEL + 2] = u2
            P[(VEL + 2) * NS + r] = u2
            for c in range(BACC, NS):
                v = m[c]
                pr[c] = v
                P[c * NS + r] = v
        # Q (ag2u eq. 10 increment noise + optional bias random walks)
        qa = self._var_acc * dt
        qg = self._var_gyr * dt
        qba = self._var_bacc * dt
        qbg = self._var_bgyr * dt
        for i in range(3):
            p_ = POS + i
            v_ = VEL + i
            P[p_ * NS + p_] += qa * dt * dt
            P[p_ * NS + v_] += qa * dt
            P[v_ * NS + p_] += qa * dt
            P[v_ * NS + v_] += qa
            P[(ATT + i) * NS + ATT + i] += qg
            P[(BACC + i) * NS + BACC + i] += qba
            P[(BGYR + i) * NS + BGYR + i] += qbg

    # ------------------------------------------------------------ update
    @cython.always_allow_keywords(False)
    def update_pose(self, pose):
        """As the pure ``update_pose`` (ag2u eqs. 5b, 6, 9); fast path for a well-formed pose."""
        cdef double pm[3]
        cdef double em[3]
        cdef double r[NM]
        cdef int i, res
        cdef long long t = 0
        cdef bint ok
        try:
            t = pose.time_us
            ok = (_read3(pose.pos_ned_m, pm) and _read3(pose.euler_rad, em)
                  and _cov3(pose.cov_pos_m2, self.r_default, r)
                  and _cov3(pose.cov_att_rad2, self.r_default + 3, r + 3))
        except (AttributeError, TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            time_us, pos, euler, rr = self._parse_pose(pose)
            t = time_us
            for i in range(3):
                pm[i] = pos[i]
                em[i] = euler[i]
            for i in range(NM):
                r[i] = rr[i]
        if not self.initialized:
            return self._first_pose(t, (pm[0], pm[1], pm[2]), (em[0], em[1], em[2]))
        res = self._update_c(pm, em, r)
        if res == FUSED:
            self.updates += 1
            self.last_fused_us = t
            return True
        return self._fused(res, t, (pm[0], pm[1], pm[2]), (em[0], em[1], em[2]))

    def _fuse(self, pos, euler, r):
        """The update kernel on parsed input (the pure class's hook): FUSED, GATED or NOT_PD."""
        cdef double pm[3]
        cdef double em[3]
        cdef double rr[NM]
        cdef int i
        for i in range(3):
            pm[i] = pos[i]
            em[i] = euler[i]
        for i in range(NM):
            rr[i] = r[i]
        return self._update_c(pm, em, rr)

    cdef int _update_c(self, const double* pm, const double* em, const double* r) noexcept nogil:
        """FUSED, GATED (only last_nis / last_innovation changed) or NOT_PD (nothing changed).

        The pure ``_fuse`` (ag2u eqs. 5b, 6, 9; Joseph form with H selecting the first 6 states), each
        entry in the same floating-point order, with the loops turned so the inner one runs over
        contiguous columns: K^T for all 15 columns at once, and per row i of P' the row of
        B = (I - K H) P, then G_i = K_i R - B_i H^T and P'_i = B_i + G_i K^T, written to a scratch
        matrix (P is still read) and copied back."""
        cdef double dm[9]
        cdef double X[9]
        cdef double dpsi[3]
        cdef double y[NM]
        cdef double L[NM * NM]
        cdef double w[NM]
        cdef double Kt[NM * NS]
        cdef double dx[NS]
        cdef double Pn[NSS]
        cdef double bi[NS]
        cdef double t[NS]
        cdef double inv_d[NM]
        cdef double* P = self._P
        cdef double* d = self.D
        cdef double* ka
        cdef const double* kb
        cdef const double* prow
        cdef const double* p0
        cdef const double* p1
        cdef const double* p2
        cdef const double* p3
        cdef const double* p4
        cdef const double* p5
        cdef const double* q0
        cdef const double* q1
        cdef const double* q2
        cdef const double* q3
        cdef const double* q4
        cdef const double* q5
        cdef double s, nis, l, idv, v, k0, k1, k2, k3, k4, k5, g0, g1, g2, g3, g4, g5
        cdef int i, j, a, b
        # residual (ag2u eqs. 5b, 6)
        e2d_c(em[0], em[1], em[2], dm)
        for i in range(3):
            for j in range(3):
                X[i * 3 + j] = d[i] * dm[j] + d[3 + i] * dm[3 + j] + d[6 + i] * dm[6 + j]
        d2e_c(X, dpsi)
        y[0] = pm[0] - self.pos[0]
        y[1] = pm[1] - self.pos[1]
        y[2] = pm[2] - self.pos[2]
        y[3] = dpsi[0]
        y[4] = dpsi[1]
        y[5] = dpsi[2]
        # Cholesky factor of S = H P H^T + R (as cholesky6)
        for i in range(NM):
            for j in range(i + 1):
                s = P[i * NS + j]
                if i == j:
                    s = s + r[i]
                for b in range(j):
                    s -= L[i * NM + b] * L[j * NM + b]
                if i == j:
                    if not s > 0.0:
                        return NOT_PD
                    L[i * NM + i] = sqrt(s)
                else:
                    L[i * NM + j] = s / L[j * NM + j]
        for a in range(NM):
            inv_d[a] = 1.0 / L[a * NM + a]
        nis = 0.0
        for a in range(NM):
            s = y[a]
            for b in range(a):
                s -= L[a * NM + b] * w[b]
            w[a] = s * inv_d[a]
            nis += w[a] * w[a]
        self.last_nis = nis
        for a in range(NM):
            self.y_last[a] = y[a]
        if self.gate > 0.0 and nis > self.gate:
            return GATED
        # K^T = S^-1 P[0:6, :]: forward substitution, then back substitution, all columns at once
        for a in range(NM):
            prow = P + a * NS
            for j in range(NS):
                t[j] = prow[j]
            for b in range(a):
                l = L[a * NM + b]
                kb = Kt + b * NS
                for j in range(NS):
                    t[j] -= l * kb[j]
            ka = Kt + a * NS
            idv = inv_d[a]
            for j in range(NS):
                ka[j] = t[j] * idv
        for a in range(NM - 1, -1, -1):
            ka = Kt + a * NS
            for j in range(NS):
                t[j] = ka[j]
            for b in range(a + 1, NM):
                l = L[b * NM + a]
                kb = Kt + b * NS
                for j in range(NS):
                    t[j] -= l * kb[j]
            idv = inv_d[a]
            for j in range(NS):
                ka[j] = t[j] * idv
        # dx = K y
        for i in range(NS):
            dx[i] = 0.0
        for a in range(NM):
            kb = Kt + a * NS
            l = y[a]
            for i in range(NS):
                dx[i] += kb[i] * l
        # Joseph form row by row: B_ij = P_ij - sum_a K_ia P_aj,
        # G_ia = K_ia r_a - B_ia, P'_ij = B_ij + sum_a K_ja G_ia (j >= i), mirrored; the six terms
        # written out so the loops over j keep their sums in registers
        p0 = P
        p1 = P + NS
        p2 = P + 2 * NS
        p3 = P + 3 * NS
        p4 = P + 4 * NS
        p5 = P + 5 * NS
        q0 = Kt
        q1 = Kt + NS
        q2 = Kt + 2 * NS
        q3 = Kt + 3 * NS
        q4 = Kt + 4 * NS
        q5 = Kt + 5 * NS
        for i in range(NS):
            prow = P + i * NS
            k0 = q0[i]
            k1 = q1[i]
            k2 = q2[i]
            k3 = q3[i]
            k4 = q4[i]
            k5 = q5[i]
            for j in range(NS):         # (for i >= NM only j < NM and j >= i are used: one fixed loop is cheaper)
                bi[j] = prow[j] - k0 * p0[j] - k1 * p1[j] - k2 * p2[j] - k3 * p3[j] - k4 * p4[j] - k5 * p5[j]
            g0 = k0 * r[0] - bi[0]
            g1 = k1 * r[1] - bi[1]
            g2 = k2 * r[2] - bi[2]
            g3 = k3 * r[3] - bi[3]
            g4 = k4 * r[4] - bi[4]
            g5 = k5 * r[5] - bi[5]
            for j in range(i, NS):
                v = bi[j] + q0[j] * g0 + q1[j] * g1 + q2[j] * g2 + q3[j] * g3 + q4[j] * g4 + q5[j] * g5
                Pn[i * NS + j] = v
                Pn[j * NS + i] = v
        memcpy(P, Pn, NSS * sizeof(double))
        # inject the error state into the INS, then reset it (implicitly zero)
        for i in range(3):
            self.pos[i] = self.pos[i] + dx[POS + i]
            self.vel[i] = self.vel[i] + dx[VEL + i]
            self.ba[i] = self.ba[i] + dx[BACC + i]
            self.bg[i] = self.bg[i] + dx[BGYR + i]
        e2d_c(dx[ATT], dx[ATT + 1], dx[ATT + 2], dm)
        for i in range(3):
            for j in range(3):
                X[i * 3 + j] = d[i * 3] * dm[j] + d[i * 3 + 1] * dm[3 + j] + d[i * 3 + 2] * dm[6 + j]
        orthonormalize_c(X)
        for i in range(9):
            d[i] = X[i]
        return FUSED


class Eskf(EskfKernel, _pure.Eskf):
    """Error-state EKF, Cython build: the pure class's code over the C kernels of :class:`EskfKernel`."""

    impl = "cython"
