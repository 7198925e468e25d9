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

The kernels (C, ``cython_ext/eskf_kernels.h``; on x86-64 with GCC built twice, AVX2 without FMA
and baseline, the AVX2 build chosen at import where the CPU has it: ``kernel_variant()``) compute
every entry of P with the same operations, in the same order, as the pure ``_propagate`` /
``_fuse`` (so the builds agree bit for bit, tested), arranged for the machine: F = I + A dt
expanded by hand (identity, skew -[dv_ned]x without its zero diagonal, rotation blocks; ag2u eqs.
4a-4c, 8), M = F P built over contiguous columns (each block's three rows in one pass), the upper
triangle of M F^T written straight into P and mirrored, then Q; the update (ag2u eqs. 5b, 6, 9, Joseph form) solves K^T for all 15 columns at once and forms
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
from libc.math cimport isfinite
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
cdef long long EXACT_US = 9007199254740992         # 2**53: int times beyond it go to the pure pack_imu (exactness)

assert (NOT_PD, GATED, FUSED) == (_pure.NOT_PD, _pure.GATED, _pure.FUSED)
assert (IMU_TIME_US, IMU_DT_US, IMU_DVEL, IMU_DANG, IMU_STRIDE) == (
    _packed.IMU_TIME_US, _packed.IMU_DT_US, _packed.IMU_DVEL_BODY_MPS, _packed.IMU_DANG_BODY_RAD, _packed.IMU_STRIDE)
assert (NS, NM, POS, ATT, VEL, BACC, BGYR) == (_pure.N_STATE, _pure.N_MEAS, _pure.POS, _pure.ATT, _pure.VEL,
                                               _pure.BACC, _pure.BGYR)


# ---------------------------------------------------------------- the numeric kernels (C, CPU-dispatched)

cdef extern from "eskf_kernels.h":
    int eskf_cpu_has_avx2() nogil
    int eskf_kernels_select(int use_avx2) nogil
    void eskf_e2d(double roll, double pitch, double yaw, double* d) nogil
    void eskf_predict(double* P, double* pos, double* vel, double* d, const double* ba, const double* bg,
                      double g_mps2, double var_acc, double var_gyr, double var_bacc, double var_bgyr,
                      double dt, const double* dvel, const double* dang) nogil
    int eskf_update(double* P, double* pos, double* vel, double* d, double* ba, double* bg, double gate,
                    const double* pm, const double* em, const double* r, double* nis_out, double* y_last) nogil

KERNEL_VARIANTS = ("avx2", "default") if eskf_cpu_has_avx2() else ("default",)   # what this CPU can run
cdef int _avx2_in_use = eskf_kernels_select(1)      # the fastest this CPU runs (bit-identical to "default")


def kernel_variant():
    """The build of the numeric kernels in use: "avx2" or "default" (baseline instruction set)."""
    return "avx2" if _avx2_in_use else "default"


def use_kernel_variant(name):
    """Runs the kernels' ``name`` build ("avx2" or "default", one of ``KERNEL_VARIANTS``) from now on, for
    every filter of this module; the results are the same bits (benchmarks and tests compare them)."""
    global _avx2_in_use
    if name not in KERNEL_VARIANTS:
        raise ValueError("kernel variant %r not available here (have %s)" % (name, ", ".join(KERNEL_VARIANTS)))
    _avx2_in_use = eskf_kernels_select(name == "avx2")


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


cdef inline bint _flat_doubles(const Py_buffer* view) noexcept:
    """The buffer is one dimension of C doubles (what the pure code indexes as ``buf[i]``, of ``len(buf)``)."""
    return (view.ndim == 1 and view.itemsize == sizeof(double) and view.format != NULL and view.format[0] == b'd'
            and view.format[1] == 0)


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


@cython.boundscheck(True)
cdef int _read_values(object values, Py_ssize_t n, double* out, object what, bint as_float) except -1:
    """out[0:n] = the n numbers of the sequence ``values`` (``float(v)`` of each when as_float, else C's double
    conversion); EskfInputError unless it holds exactly n. The state hooks read every argument this way into
    locals before they change anything, so a refused argument leaves the filter as it was."""
    cdef Py_ssize_t i, m = len(values)
    if m != n:
        raise EskfInputError("%s needs %d values, got %d" % (what, n, m))
    for i in range(n):
        out[i] = float(values[i]) if as_float else <double>values[i]
    return 0


def pack_imu(buf, k, sample):
    """``onboard.estimators.eskf_packed.pack_imu`` with the sample read in C: the same values written, the
    same return value (True when every value is finite); anything but an ImuSample's int times (within
    2**53 us) and 3-tuples, a slot ``k`` that is not an int inside the buffer, or a buffer that is not a flat
    run of doubles goes to the pure function, which also raises its errors."""
    cdef Py_buffer view
    cdef double row[IMU_STRIDE]
    cdef double* out
    cdef int i
    cdef long long t_us, dt_us
    cdef bint finite = True
    try:
        if not (type(sample.time_us) is int and type(sample.dt_us) is int
                and _tuple3(sample.dvel_body_mps, row + IMU_DVEL) and _tuple3(sample.dang_body_rad, row + IMU_DANG)):
            return _packed.pack_imu(buf, k, sample)
        t_us = sample.time_us
        dt_us = sample.dt_us
    except (AttributeError, TypeError, ValueError, OverflowError):
        return _packed.pack_imu(buf, k, sample)
    # within 2**53 every int is a double (exact); beyond it the pure function refuses the ones a double rounds
    if not (-EXACT_US <= t_us <= EXACT_US and -EXACT_US <= dt_us <= EXACT_US):
        return _packed.pack_imu(buf, k, sample)
    row[IMU_TIME_US] = <double>t_us
    row[IMU_DT_US] = <double>dt_us
    try:
        PyObject_GetBuffer(buf, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
    except (TypeError, BufferError, ValueError):      # NumPy: ValueError for a read-only or strided array
        return _packed.pack_imu(buf, k, sample)
    # k compared before any product (a huge k times the stride wraps around in C)
    if (not _flat_doubles(&view) or type(k) is not int or k < 0
            or k >= (view.len // <Py_ssize_t>sizeof(double)) // IMU_STRIDE):
        PyBuffer_Release(&view)
        return _packed.pack_imu(buf, k, sample)
    out = <double*>view.buf + <Py_ssize_t>k * IMU_STRIDE
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
        """The nominal state from 3-vectors (float() of each value), all read before any is set."""
        cdef double v[15]
        _read_values(pos_ned_m, 3, v, "pos_ned_m", True)
        _read_values(vel_ned_mps, 3, v + 3, "vel_ned_mps", True)
        _read_values(euler_rad, 3, v + 6, "euler_rad", True)
        _read_values(accel_bias_mps2, 3, v + 9, "accel_bias_mps2", True)
        _read_values(gyro_bias_radps, 3, v + 12, "gyro_bias_radps", True)
        memcpy(self.pos, v, 3 * sizeof(double))
        memcpy(self.vel, v + 3, 3 * sizeof(double))
        memcpy(self.ba, v + 9, 3 * sizeof(double))
        memcpy(self.bg, v + 12, 3 * sizeof(double))
        eskf_e2d(v[6], v[7], v[8], self.D)

    def _nominal(self):
        return ((self.pos[0], self.pos[1], self.pos[2]), (self.vel[0], self.vel[1], self.vel[2]),
                tuple([self.D[i] for i in range(9)]), (self.ba[0], self.ba[1], self.ba[2]),
                (self.bg[0], self.bg[1], self.bg[2]))

    def _set_nominal(self, pos_ned_m, vel_ned_mps, D_ned_to_body, accel_bias_mps2, gyro_bias_radps):
        """The nominal state from sequences of 3, 3, 9, 3 and 3 numbers, all read before any is set
        (EskfInputError for another length, TypeError for a value that is no number: nothing changed)."""
        cdef double v[21]
        _read_values(pos_ned_m, 3, v, "pos_ned_m", False)
        _read_values(vel_ned_mps, 3, v + 3, "vel_ned_mps", False)
        _read_values(D_ned_to_body, 9, v + 6, "D_ned_to_body", False)
        _read_values(accel_bias_mps2, 3, v + 15, "accel_bias_mps2", False)
        _read_values(gyro_bias_radps, 3, v + 18, "gyro_bias_radps", False)
        memcpy(self.pos, v, 3 * sizeof(double))
        memcpy(self.vel, v + 3, 3 * sizeof(double))
        memcpy(self.D, v + 6, 9 * sizeof(double))
        memcpy(self.ba, v + 15, 3 * sizeof(double))
        memcpy(self.bg, v + 18, 3 * sizeof(double))

    def _set_variance(self, int i, double var):
        """P[i, i] = var for a state 0 <= i < 15 (IndexError otherwise, P unchanged)."""
        if not 0 <= i < NS:
            raise IndexError("no error state %d (0..%d)" % (i, NS - 1))
        self._P[i * NS + i] = var

    @property
    def P(self):
        """The 15x15 covariance, flat row-major (a copy); assigning copies the values in."""
        return [self._P[i] for i in range(NSS)]

    @P.setter
    def P(self, values):
        """225 numbers, all read before any is set (EskfInputError for another count, TypeError for a value
        that is no number: P unchanged)."""
        cdef double v[NSS]
        _read_values(values, NSS, v, "P", False)
        memcpy(self._P, v, NSS * sizeof(double))

    @property
    def last_imu_us(self):
        return self._last_imu_us if self.has_last_imu else None

    @last_imu_us.setter
    def last_imu_us(self, value):
        """None or an int within a signed 64-bit integer (converted before anything is set)."""
        cdef long long t = 0 if value is None else value
        self._last_imu_us = t
        self.has_last_imu = value is not None

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
    def predict_packed(self, buf, count):
        """As the pure ``predict_packed``: the first ``count`` samples of a packed IMU buffer (layout of
        ``onboard.estimators.eskf_packed``), each exactly as ``predict``; returns how many were refused.

        The buffer is read through the buffer protocol (one ``PyObject_GetBuffer``, about half what
        acquiring a typed memoryview costs per call): a well-formed, in-order sample goes to the kernel with
        no Python object made; anything else (and every sample before initialisation) to the pure code, and so
        does a ``count`` that is not an int the buffer holds (the pure code refuses it or reads it)."""
        cdef Py_buffer view
        cdef const double* row
        cdef double dv[3]
        cdef double da[3]
        cdef double t_d, dt_d
        cdef long long t, dt_us
        cdef long refused = 0
        cdef Py_ssize_t k, n
        try:
            PyObject_GetBuffer(buf, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS)
        except (TypeError, BufferError, ValueError):     # NumPy: ValueError for a strided array
            return _pure.Eskf.predict_packed(self, buf, count)      # a sequence that is no flat buffer
        # not flat doubles: the pure code reads it as a sequence; count compared before any product (a huge
        # count times the stride wraps around in C)
        if (not _flat_doubles(&view) or type(count) is not int or count < 0
                or count > (view.len // <Py_ssize_t>sizeof(double)) // IMU_STRIDE):
            PyBuffer_Release(&view)
            return _pure.Eskf.predict_packed(self, buf, count)
        n = count
        try:
            for k in range(n):
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
        """The strapdown and covariance kernel on parsed input (the pure predict's numeric part): dvel, dang
        of 3 numbers each (EskfInputError otherwise, nothing changed)."""
        cdef double dv[3]
        cdef double da[3]
        _read_values(dvel, 3, dv, "dvel_body_mps", False)
        _read_values(dang, 3, da, "dang_body_rad", False)
        self._predict_c(dt, dv, da)

    cdef inline void _predict_c(self, double dt, const double* dvel, const double* dang) noexcept nogil:
        """Strapdown (ag2u eqs. 4a-4c), then P <- F P F^T + Q: the C kernel ``eskf_predict``."""
        eskf_predict(self._P, self.pos, self.vel, self.D, self.ba, self.bg, self.g_mps2, self._var_acc,
                     self._var_gyr, self._var_bacc, self._var_bgyr, dt, dvel, dang)

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
        _read_values(pos, 3, pm, "pos_ned_m", False)
        _read_values(euler, 3, em, "euler_rad", False)
        _read_values(r, NM, rr, "r", False)
        return self._update_c(pm, em, rr)

    cdef inline int _update_c(self, const double* pm, const double* em, const double* r) noexcept nogil:
        """FUSED, GATED (only last_nis / last_innovation changed) or NOT_PD (nothing changed): the pure
        ``_fuse`` (ag2u eqs. 5b, 6, 9; Joseph form), the C kernel ``eskf_update``."""
        return eskf_update(self._P, self.pos, self.vel, self.D, self.ba, self.bg, self.gate, pm, em, r,
                           &self.last_nis, self.y_last)


class Eskf(EskfKernel, _pure.Eskf):
    """Error-state EKF, Cython build: the pure class's code over the C kernels of :class:`EskfKernel`."""

    impl = "cython"
