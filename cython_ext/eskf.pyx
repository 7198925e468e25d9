# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython build of the 15-state ESKF (same algorithm, API and numbers as onboard.estimators.eskf).

The whole filter state (nominal INS state, the 15x15 covariance, counters) lives in
C arrays inside the extension type; a call passes one sample object and no buffers,
so there is no per-call memoryview set-up. Predict and update exploit the block
sparsity of F and H exactly as the pure path does, in the same floating-point
order, so the two agree to rounding (tests check 1e-12). See the pure module's
docstring for the model (ag2u eqs. 4a-4c, 5a-9).
"""
cimport cython
from libc.math cimport sin, cos, sqrt, atan2, asin, isfinite

from onboard.core.samples import NavState
from onboard.estimators.eskf import (EskfInputError, EskfNumericError, N_MEAS, N_STATE, make_config,
                                     parse_imu, parse_pose)

cdef enum:
    NS = 15
    NM = 6
    NSS = 225
    POS = 0
    ATT = 3
    VEL = 6
    BACC = 9
    BGYR = 12


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


cdef class Eskf:
    """Error-state EKF, Cython build. API as onboard.estimators.eskf.Eskf."""

    cdef double P[NSS]
    cdef double pos[3]
    cdef double vel[3]
    cdef double D[9]
    cdef double ba[3]
    cdef double bg[3]
    cdef double g_mps2
    cdef double var_acc, var_gyr, var_bacc, var_bgyr
    cdef double r_default[NM]
    cdef double gate
    cdef double reset_us, reset_var_vel
    cdef public long long last_fused_us
    cdef long long max_dt_us
    cdef long long _time_us
    cdef long long _last_imu_us
    cdef bint has_last_imu
    cdef double y_last[NM]
    cdef public dict cfg
    cdef public bint initialized
    cdef public long predicts, updates, gated, rejected, skipped, resets
    cdef public double last_nis

    impl = "cython"

    def __init__(self, config=None):
        cdef int i
        self.cfg = make_config(config)
        c = self.cfg
        self.g_mps2 = c["gravity_mps2"]
        self.var_acc = c["accel_noise_mps_per_sqrt_s"] * c["accel_noise_mps_per_sqrt_s"]
        self.var_gyr = c["gyro_noise_rad_per_sqrt_s"] * c["gyro_noise_rad_per_sqrt_s"]
        self.var_bacc = c["accel_bias_walk_mps2_per_sqrt_s"] * c["accel_bias_walk_mps2_per_sqrt_s"]
        self.var_bgyr = c["gyro_bias_walk_radps_per_sqrt_s"] * c["gyro_bias_walk_radps_per_sqrt_s"]
        for i in range(3):
            self.r_default[i] = c["pose_pos_sigma_m"][i] * c["pose_pos_sigma_m"][i]
            self.r_default[3 + i] = c["pose_att_sigma_rad"][i] * c["pose_att_sigma_rad"][i]
        self.gate = c["gate_nis"]
        self.reset_us = c["gate_reset_s"] * 1e6
        self.reset_var_vel = c["reset_vel_sigma_mps"] * c["reset_vel_sigma_mps"]
        self.max_dt_us = c["max_imu_dt_us"]
        for i in range(NSS):
            self.P[i] = 0.0
        for i in range(3):
            self.pos[i] = 0.0
            self.vel[i] = 0.0
            self.ba[i] = 0.0
            self.bg[i] = 0.0
        e2d_c(0.0, 0.0, 0.0, self.D)
        for i in range(NM):
            self.y_last[i] = 0.0
        self.initialized = False
        self._time_us = 0
        self._last_imu_us = 0
        self.has_last_imu = False
        self.predicts = 0
        self.updates = 0
        self.gated = 0
        self.rejected = 0
        self.skipped = 0
        self.resets = 0
        self.last_fused_us = 0
        self.last_nis = -1.0

    # ------------------------------------------------------------ set-up
    def initialize(self, time_us, pos_ned_m, vel_ned_mps, euler_rad,
                   accel_bias_mps2=(0.0, 0.0, 0.0), gyro_bias_radps=(0.0, 0.0, 0.0)):
        cdef int i, k
        vals = [pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2, gyro_bias_radps]
        for v in vals:
            if len(v) != 3 or not (isfinite(float(v[0])) and isfinite(float(v[1])) and isfinite(float(v[2]))):
                raise EskfInputError("initial conditions must be 3 finite numbers each, got %r" % (v,))
        for i in range(3):
            self.pos[i] = float(pos_ned_m[i])
            self.vel[i] = float(vel_ned_mps[i])
            self.ba[i] = float(accel_bias_mps2[i])
            self.bg[i] = float(gyro_bias_radps[i])
        e2d_c(float(euler_rad[0]), float(euler_rad[1]), float(euler_rad[2]), self.D)
        c = self.cfg
        for i in range(NSS):
            self.P[i] = 0.0
        for base, key in ((POS, "init_pos_sigma_m"), (ATT, "init_att_sigma_rad"), (VEL, "init_vel_sigma_mps"),
                          (BACC, "init_accel_bias_sigma_mps2"), (BGYR, "init_gyro_bias_sigma_radps")):
            k = base
            for i in range(3):
                self.P[(k + i) * NS + k + i] = c[key][i] * c[key][i]
        self._time_us = int(time_us)
        self.last_fused_us = self._time_us
        self.has_last_imu = False
        self.initialized = True

    # ------------------------------------------------------------ predict
    @cython.always_allow_keywords(False)      # METH_O: the cheapest Python call for the hot path
    def predict(self, imu):
        """Strapdown step (ag2u eqs. 4a-4c) + covariance propagation; see the pure module."""
        cdef long long t, dt_us
        cdef double dv[3]
        cdef double da[3]
        cdef bint ok
        try:
            t = imu.time_us
            dt_us = imu.dt_us
            ok = _read3(imu.dvel_body_mps, dv) and _read3(imu.dang_body_rad, da)
        except (AttributeError, TypeError, ValueError, OverflowError):
            ok = False
        if (not ok or dt_us <= 0 or dt_us > self.max_dt_us
                or (self.has_last_imu and t <= self._last_imu_us)):
            # slow path: the pure parser accepts what the pure filter accepts, with its messages
            try:
                t, dt_us, dvel, dang = parse_imu(imu, self._last_imu_us if self.has_last_imu else None,
                                                 self.max_dt_us)
            except EskfInputError:
                self.rejected += 1
                raise
            for i in range(3):
                dv[i] = dvel[i]
                da[i] = dang[i]
        if not self.initialized:
            self.skipped += 1
            return False
        self._predict_c(dt_us * 1e-6, dv, da)
        self._time_us = t
        self._last_imu_us = t
        self.has_last_imu = True
        self.predicts += 1
        return True

    cdef void _predict_c(self, double dt, const double* dvel, const double* dang) noexcept nogil:
        cdef double f[9]
        cdef double nd[9]
        cdef double A[9]
        cdef double S[9]
        cdef double M[NSS]
        cdef double* P = self.P
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
        qa = self.var_acc * dt
        qg = self.var_gyr * dt
        qba = self.var_bacc * dt
        qbg = self.var_bgyr * dt
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
        """Fuse an aiding PoseSample (ag2u eqs. 5b, 6, 9); True when fused, False when gated."""
        cdef double pm[3]
        cdef double em[3]
        cdef double r[NM]
        cdef int i, res
        cdef long long t
        cdef bint ok, had_imu
        cdef long long last_imu_us
        try:
            t = pose.time_us
            ok = (_read3(pose.pos_ned_m, pm) and _read3(pose.euler_rad, em)
                  and _cov3(pose.cov_pos_m2, self.r_default, r)
                  and _cov3(pose.cov_att_rad2, self.r_default + 3, r + 3))
        except (AttributeError, TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            try:
                time_us, pos, euler, rr = parse_pose(pose, self.cfg)
            except EskfInputError:
                self.rejected += 1
                raise
            t = time_us
            for i in range(3):
                pm[i] = pos[i]
                em[i] = euler[i]
            for i in range(NM):
                r[i] = rr[i]
        if not self.initialized:
            self.initialize(int(pose.time_us), (pm[0], pm[1], pm[2]), (0.0, 0.0, 0.0), (em[0], em[1], em[2]),
                            (self.ba[0], self.ba[1], self.ba[2]), (self.bg[0], self.bg[1], self.bg[2]))
            return True
        res = self._update_c(pm, em, r)
        if res < 0:
            self.rejected += 1
            raise EskfNumericError("innovation covariance is not positive definite")
        if res == 0:
            self.gated += 1
            if self.reset_us > 0.0 and t - self.last_fused_us >= self.reset_us:
                # lost-filter restart from the gated pose (see the pure module)
                had_imu = self.has_last_imu
                last_imu_us = self._last_imu_us
                self.initialize(t, (pm[0], pm[1], pm[2]), (0.0, 0.0, 0.0), (em[0], em[1], em[2]),
                                (self.ba[0], self.ba[1], self.ba[2]), (self.bg[0], self.bg[1], self.bg[2]))
                self.has_last_imu = had_imu
                self._last_imu_us = last_imu_us
                for i in range(3):
                    self.P[(VEL + i) * NS + VEL + i] = self.reset_var_vel
                self.resets += 1
                return True
            return False
        self.updates += 1
        self.last_fused_us = t
        return True

    cdef int _update_c(self, const double* pm, const double* em, const double* r) noexcept nogil:
        """1: fused, 0: gated (state unchanged), -1: S not positive definite (state unchanged)."""
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
        cdef double* P = self.P
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
                        return -1
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
            return 0
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
        return 1

    # ------------------------------------------------------------ outputs
    def nav_state(self, now_us=None):
        cdef double e[3]
        d2e_c(self.D, e)
        t = self._time_us
        p = (self.pos[0], self.pos[1], self.pos[2])
        if now_us is not None and int(now_us) > t:
            h = (int(now_us) - t) * 1e-6
            p = (self.pos[0] + self.vel[0] * h, self.pos[1] + self.vel[1] * h, self.pos[2] + self.vel[2] * h)
            t = int(now_us)
        return NavState(t, p, (self.vel[0], self.vel[1], self.vel[2]), (e[0], e[1], e[2]))

    def covariance(self):
        return [self.P[i] for i in range(NSS)]

    def pose_covariance(self):
        return [self.P[i * NS + j] for i in range(NM) for j in range(NM)]

    @property
    def time_us(self):
        return self._time_us

    @property
    def last_innovation(self):
        return [self.y_last[i] for i in range(NM)]

    @property
    def accel_bias_mps2(self):
        return (self.ba[0], self.ba[1], self.ba[2])

    @property
    def gyro_bias_radps(self):
        return (self.bg[0], self.bg[1], self.bg[2])

    def counters(self):
        return {"predicts": self.predicts, "updates": self.updates, "gated": self.gated,
                "rejected": self.rejected, "skipped": self.skipped, "resets": self.resets}

    def get_state(self):
        return {"initialized": bool(self.initialized), "time_us": self._time_us,
                "last_imu_us": self._last_imu_us if self.has_last_imu else None,
                "pos_ned_m": [self.pos[i] for i in range(3)], "vel_ned_mps": [self.vel[i] for i in range(3)],
                "D_ned_to_body": [self.D[i] for i in range(9)],
                "accel_bias_mps2": [self.ba[i] for i in range(3)],
                "gyro_bias_radps": [self.bg[i] for i in range(3)],
                "P": self.covariance(), "predicts": self.predicts, "updates": self.updates,
                "gated": self.gated, "rejected": self.rejected, "skipped": self.skipped,
                "resets": self.resets, "last_fused_us": self.last_fused_us, "last_nis": self.last_nis}

    def set_state(self, state):
        cdef int i
        if len(state["P"]) != NSS or len(state["D_ned_to_body"]) != 9:
            raise EskfInputError("state has the wrong size")
        for i in range(3):
            self.pos[i] = float(state["pos_ned_m"][i])
            self.vel[i] = float(state["vel_ned_mps"][i])
            self.ba[i] = float(state["accel_bias_mps2"][i])
            self.bg[i] = float(state["gyro_bias_radps"][i])
        for i in range(9):
            self.D[i] = float(state["D_ned_to_body"][i])
        for i in range(NSS):
            self.P[i] = float(state["P"][i])
        self.initialized = bool(state["initialized"])
        self._time_us = int(state["time_us"])
        if state["last_imu_us"] is None:
            self.has_last_imu = False
            self._last_imu_us = 0
        else:
            self.has_last_imu = True
            self._last_imu_us = int(state["last_imu_us"])
        self.predicts = int(state["predicts"])
        self.updates = int(state["updates"])
        self.gated = int(state["gated"])
        self.rejected = int(state["rejected"])
        self.skipped = int(state["skipped"])
        self.resets = int(state.get("resets", 0))
        self.last_fused_us = int(state.get("last_fused_us", self._time_us))
        self.last_nis = float(state["last_nis"])
