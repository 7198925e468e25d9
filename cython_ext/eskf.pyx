# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython build of the 15-state ESKF: the numeric kernels only, under the pure class.

``Eskf`` here is ``class Eskf(EskfKernel, onboard.estimators.eskf.Eskf)``: configuration,
validation messages, initialisation, the lost-filter restart, get_state/set_state,
nav_state and the counters are the pure module's code (one source); :class:`EskfKernel`,
first in the MRO, keeps the filter state in C arrays and replaces only the pure class's
state hooks (``_setup_state``, ``_reset_nominal``, ``_nominal``/``_set_nominal``,
``_set_variance``, the ``P`` attribute) and the hot entry points ``predict``,
``predict_many`` and ``update_pose``, whose fast path reads a well-formed sample in C and
hands anything else to the pure parser (so refusals and their messages are the pure
module's). Predict and update exploit the block sparsity of F and H in the same
floating-point order as the pure path (see its docstring: ag2u eqs. 4a-4c, 5a-9).

Why a kernel type under the pure class rather than Cython's pure-Python mode (compiling
eskf.py with an augmenting .pxd): the pure module keeps P and the INS state in Python lists
of floats (the MicroPython path has no shared array of doubles), so a compiled copy still
indexes lists of boxed floats; compiled as it is, its 10:1 predict/update cycle measured
617 us against 5.3 us for these kernels (a .pxd can type the locals, not the lists).
Measured cost of this layout against the former self-contained extension type (both -O3,
CPU time, min of 15 interleaved rounds): predict, update_pose and the 10:1 cycle unchanged
(0.32 / 1.67 / 4.9 us); the calls that now run the pure class's code cost a little more,
nav_state 1.5 -> 2.2 us, get_state 3.3 -> 4.3 us, covariance 2.4 -> 2.8 us, counters
0.17 -> 0.28 us, all outside the IMU-rate loop. Rare paths (first pose, gated pose, bad
input, samples that are not tuples of floats) run the pure code.
"""
cimport cython
from libc.math cimport sin, cos, sqrt, atan2, asin, isfinite

from onboard.estimators import eskf as _pure
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

assert (NOT_PD, GATED, FUSED) == (_pure.NOT_PD, _pure.GATED, _pure.FUSED)
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
        cdef double f[9]
        cdef double nd[9]
        cdef double A[9]
        cdef double S[9]
        cdef double M[NSS]
        cdef double* P = self._P
        cdef double* d = self.D
        cdef double dvx, dvy, dvz, dv_n, dv_e, dv_d, v
        cdef double f0, f1, f2
        cdef double pa0, pa1, pa2, pba0, pba1, pba2, pbg0, pbg1, pbg2
        cdef double ma0, ma1, ma2, mba0, mba1, mba2, mbg0, mbg1, mbg2
        cdef double qa, qg, qba, qbg
        cdef int i, j, c, r, ro, p_, v_, a_, b_
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
        # ---- covariance: F = I + A dt, block-sparse
        A[0] = -d[0] * dt
        A[1] = -d[3] * dt
        A[2] = -d[6] * dt
        A[3] = -d[1] * dt
        A[4] = -d[4] * dt
        A[5] = -d[7] * dt
        A[6] = -d[2] * dt
        A[7] = -d[5] * dt
        A[8] = -d[8] * dt
        S[0] = 0.0
        S[1] = dv_d
        S[2] = -dv_e
        S[3] = -dv_d
        S[4] = 0.0
        S[5] = dv_n
        S[6] = dv_e
        S[7] = -dv_n
        S[8] = 0.0
        # M = F P: only rows dp, dpsi, dv differ from P, and P' below reads the dpsi and dv rows
        # only in the columns from ATT on (the bias rows of M are never read)
        for c in range(NS):
            pa0 = P[ATT * NS + c]
            pa1 = P[(ATT + 1) * NS + c]
            pa2 = P[(ATT + 2) * NS + c]
            pba0 = P[BACC * NS + c]
            pba1 = P[(BACC + 1) * NS + c]
            pba2 = P[(BACC + 2) * NS + c]
            pbg0 = P[BGYR * NS + c]
            pbg1 = P[(BGYR + 1) * NS + c]
            pbg2 = P[(BGYR + 2) * NS + c]
            for i in range(3):
                M[(POS + i) * NS + c] = P[(POS + i) * NS + c] + dt * P[(VEL + i) * NS + c]
            if c < ATT:
                continue
            for i in range(3):
                M[(ATT + i) * NS + c] = P[(ATT + i) * NS + c] + (A[i * 3] * pbg0 + A[i * 3 + 1] * pbg1
                                                                 + A[i * 3 + 2] * pbg2)
                M[(VEL + i) * NS + c] = (P[(VEL + i) * NS + c]
                                         + (S[i * 3] * pa0 + S[i * 3 + 1] * pa1 + S[i * 3 + 2] * pa2)
                                         + (A[i * 3] * pba0 + A[i * 3 + 1] * pba1 + A[i * 3 + 2] * pba2))
        # P' = M F^T (upper triangle of the first 9 rows; bias-bias block unchanged), mirrored
        for r in range(BACC):
            ro = r * NS
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
                P[ro + c] = v
                P[c * NS + r] = v
            for c in range(ATT if r < ATT else r, VEL):
                j = c - ATT
                v = M[ro + c] + (A[j * 3] * mbg0 + A[j * 3 + 1] * mbg1 + A[j * 3 + 2] * mbg2)
                P[ro + c] = v
                P[c * NS + r] = v
            for c in range(VEL if r < VEL else r, BACC):
                j = c - VEL
                v = (M[ro + c] + (S[j * 3] * ma0 + S[j * 3 + 1] * ma1 + S[j * 3 + 2] * ma2)
                     + (A[j * 3] * mba0 + A[j * 3 + 1] * mba1 + A[j * 3 + 2] * mba2))
                P[ro + c] = v
                P[c * NS + r] = v
            for c in range(BACC, NS):
                v = M[ro + c]
                P[ro + c] = v
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
            a_ = ATT + i
            P[a_ * NS + a_] += qg
            b_ = BACC + i
            P[b_ * NS + b_] += qba
            b_ = BGYR + i
            P[b_ * NS + b_] += qbg

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
        """FUSED, GATED (only last_nis / last_innovation changed) or NOT_PD (nothing changed)."""
        cdef double dm[9]
        cdef double X[9]
        cdef double dpsi[3]
        cdef double y[NM]
        cdef double Sm[NM * NM]
        cdef double L[NM * NM]
        cdef double w[NM]
        cdef double Kt[NM * NS]
        cdef double dx[NS]
        cdef double B[NSS]
        cdef double G[NS * NM]
        cdef double inv_d[NM]
        cdef int lim
        cdef double* P = self._P
        cdef double* d = self.D
        cdef double s, nis
        cdef int i, j, k, a, b
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
        # S = H P H^T + R and its Cholesky factor
        for a in range(NM):
            for b in range(NM):
                Sm[a * NM + b] = P[a * NS + b]
            Sm[a * NM + a] += r[a]
        for i in range(NM * NM):
            L[i] = 0.0
        for i in range(NM):
            for j in range(i + 1):
                s = Sm[i * NM + j]
                for k in range(j):
                    s -= L[i * NM + k] * L[j * NM + k]
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
        # K^T = S^-1 P[0:6, :]
        for j in range(NS):
            for a in range(NM):
                s = P[a * NS + j]
                for b in range(a):
                    s -= L[a * NM + b] * Kt[b * NS + j]
                Kt[a * NS + j] = s * inv_d[a]
            for a in range(NM - 1, -1, -1):
                s = Kt[a * NS + j]
                for b in range(a + 1, NM):
                    s -= L[b * NM + a] * Kt[b * NS + j]
                Kt[a * NS + j] = s * inv_d[a]
        for i in range(NS):
            s = 0.0
            for a in range(NM):
                s += Kt[a * NS + i] * y[a]
            dx[i] = s
        # Joseph form, block-sparse in H: B = P - K C (entries used only), P'_ij = B_ij + sum_a K_ja G_ia
        for i in range(NS):
            lim = i if i < NM else NM
            for j in range(lim):
                s = P[i * NS + j]
                for a in range(NM):
                    s -= Kt[a * NS + i] * P[a * NS + j]
                B[i * NS + j] = s
            for j in range(i, NS):
                s = P[i * NS + j]
                for a in range(NM):
                    s -= Kt[a * NS + i] * P[a * NS + j]
                B[i * NS + j] = s
        for i in range(NS):
            for a in range(NM):
                G[i * NM + a] = Kt[a * NS + i] * r[a] - B[i * NS + a]
        for i in range(NS):
            for j in range(i, NS):
                s = B[i * NS + j]
                for a in range(NM):
                    s += Kt[a * NS + j] * G[i * NM + a]
                P[i * NS + j] = s
                P[j * NS + i] = s
        # inject and reset
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
