/* The ES-EKF numeric kernels, one source compiled once per instruction-set variant: cython_ext/eskf_kernels.h
 * includes this file with ESKF_FN(name) defined as name##_default, and on x86-64 GCC again as name##_avx2
 * inside "#pragma GCC target("avx2")" (no FMA: same rounding). Not a header to include on its own. */

/* Strapdown (ag2u eqs. 4a-4c), then P <- F P F^T + Q with F = I + A dt expanded by hand (the pure
 * _propagate: each entry in the same floating-point order, zero terms of the skew block -[dv_ned]x
 * dropped). dt_s: step (s); dvel_body_mps, dang_body_rad: the IMU increments; g_mps2: gravity (NED +z);
 * var_*: the noise densities of the pure config (ag2u eq. 10 increment noise, bias random walks). */
static void ESKF_FN(eskf_predict)(double *P, double *pos, double *vel, double *d, const double *ba,
                                  const double *bg, double g_mps2, double var_acc, double var_gyr,
                                     double var_bacc, double var_bgyr, double dt, const double *dvel,
                                     const double *dang)
{
    enum { NS = ESKF_NS, POS = ESKF_POS, ATT = ESKF_ATT, VEL = ESKF_VEL, BACC = ESKF_BACC, BGYR = ESKF_BGYR };
    double f[9], nd[9], A[9], M[BACC * NS];
    const double *m;
    const double *pa0 = P + ATT * NS, *pa1 = P + (ATT + 1) * NS, *pa2 = P + (ATT + 2) * NS;
    const double *pb0 = P + BACC * NS, *pb1 = P + (BACC + 1) * NS, *pb2 = P + (BACC + 2) * NS;
    const double *pg0 = P + BGYR * NS, *pg1 = P + (BGYR + 1) * NS, *pg2 = P + (BGYR + 2) * NS;
    double *pr;
    double dvx, dvy, dvz, dv_n, dv_e, dv_d, v, u0, u1, u2;
    double f0, f1, f2, x0, x1, x2, b0, b1, b2;
    double ma0, ma1, ma2, mba0, mba1, mba2, mbg0, mbg1, mbg2;
    double qa, qg, qba, qbg;
    int i, j, c, r, p_, v_;
    /* strapdown (ins.Strapdown.step) */
    dvx = dvel[0] - ba[0] * dt;
    dvy = dvel[1] - ba[1] * dt;
    dvz = dvel[2] - ba[2] * dt;
    eskf_e2d(dang[0] - bg[0] * dt, dang[1] - bg[1] * dt, dang[2] - bg[2] * dt, f);
    for (i = 0; i < 3; i++) {                                /* ag2u eq. 4a */
        f0 = f[i * 3];
        f1 = f[i * 3 + 1];
        f2 = f[i * 3 + 2];
        for (j = 0; j < 3; j++)
            nd[i * 3 + j] = f0 * d[j] + f1 * d[3 + j] + f2 * d[6 + j];
    }
    for (i = 0; i < 9; i++)
        d[i] = nd[i];
    dv_n = nd[0] * dvx + nd[3] * dvy + nd[6] * dvz;          /* ag2u eq. 4b */
    dv_e = nd[1] * dvx + nd[4] * dvy + nd[7] * dvz;
    dv_d = nd[2] * dvx + nd[5] * dvy + nd[8] * dvz;
    vel[0] = vel[0] + dv_n;
    vel[1] = vel[1] + dv_e;
    vel[2] = vel[2] + (dv_d + g_mps2 * dt);
    pos[0] = pos[0] + vel[0] * dt;                           /* ag2u eq. 4c */
    pos[1] = pos[1] + vel[1] * dt;
    pos[2] = pos[2] + vel[2] * dt;
    /* covariance: A = -R dt with R = D^T (A[i][j] = -D[j][i] dt); S = -[dv_ned]x has rows
     * (0, dv_d, -dv_e), (-dv_d, 0, dv_n), (dv_e, -dv_n, 0) */
    A[0] = -d[0] * dt;
    A[1] = -d[3] * dt;
    A[2] = -d[6] * dt;
    A[3] = -d[1] * dt;
    A[4] = -d[4] * dt;
    A[5] = -d[7] * dt;
    A[6] = -d[2] * dt;
    A[7] = -d[5] * dt;
    A[8] = -d[8] * dt;
    /* M = F P over contiguous columns, the three rows of each block in one pass (rows dp, dpsi, dv; the
     * bias rows equal P's); P' below reads the dpsi and dv rows only from column ATT on */
    for (c = 0; c < NS; c++) {
        M[POS * NS + c] = P[POS * NS + c] + dt * P[VEL * NS + c];
        M[(POS + 1) * NS + c] = P[(POS + 1) * NS + c] + dt * P[(VEL + 1) * NS + c];
        M[(POS + 2) * NS + c] = P[(POS + 2) * NS + c] + dt * P[(VEL + 2) * NS + c];
    }
    for (c = ATT; c < NS; c++) {
        x0 = pg0[c];
        x1 = pg1[c];
        x2 = pg2[c];
        M[ATT * NS + c] = pa0[c] + (A[0] * x0 + A[1] * x1 + A[2] * x2);
        M[(ATT + 1) * NS + c] = pa1[c] + (A[3] * x0 + A[4] * x1 + A[5] * x2);
        M[(ATT + 2) * NS + c] = pa2[c] + (A[6] * x0 + A[7] * x1 + A[8] * x2);
    }
    for (c = ATT; c < NS; c++) {
        x0 = pa0[c];
        x1 = pa1[c];
        x2 = pa2[c];
        b0 = pb0[c];
        b1 = pb1[c];
        b2 = pb2[c];
        M[VEL * NS + c] = (P[VEL * NS + c] + (dv_d * x1 + -dv_e * x2)) + (A[0] * b0 + A[1] * b1 + A[2] * b2);
        M[(VEL + 1) * NS + c] = ((P[(VEL + 1) * NS + c] + (-dv_d * x0 + dv_n * x2))
                                 + (A[3] * b0 + A[4] * b1 + A[5] * b2));
        M[(VEL + 2) * NS + c] = ((P[(VEL + 2) * NS + c] + (dv_e * x0 + -dv_n * x1))
                                 + (A[6] * b0 + A[7] * b1 + A[8] * b2));
    }
    /* P' = M F^T: upper triangle of the first 9 rows written straight into P and mirrored (the
     * bias-bias block keeps P's values); then Q */
    for (r = 0; r < BACC; r++) {
        m = M + r * NS;
        pr = P + r * NS;
        if (r < ATT) {
            for (c = r; c < ATT; c++) {
                v = m[c] + dt * m[VEL + c];
                pr[c] = v;
                P[c * NS + r] = v;
            }
        }
        if (r < VEL) {
            mbg0 = m[BGYR];
            mbg1 = m[BGYR + 1];
            mbg2 = m[BGYR + 2];
            u0 = m[ATT] + (A[0] * mbg0 + A[1] * mbg1 + A[2] * mbg2);
            u1 = m[ATT + 1] + (A[3] * mbg0 + A[4] * mbg1 + A[5] * mbg2);
            u2 = m[ATT + 2] + (A[6] * mbg0 + A[7] * mbg1 + A[8] * mbg2);
            if (r <= ATT) {
                pr[ATT] = u0;
                P[ATT * NS + r] = u0;
            }
            if (r <= ATT + 1) {
                pr[ATT + 1] = u1;
                P[(ATT + 1) * NS + r] = u1;
            }
            pr[ATT + 2] = u2;
            P[(ATT + 2) * NS + r] = u2;
        }
        ma0 = m[ATT];
        ma1 = m[ATT + 1];
        ma2 = m[ATT + 2];
        mba0 = m[BACC];
        mba1 = m[BACC + 1];
        mba2 = m[BACC + 2];
        u0 = (m[VEL] + (dv_d * ma1 + -dv_e * ma2)) + (A[0] * mba0 + A[1] * mba1 + A[2] * mba2);
        u1 = (m[VEL + 1] + (-dv_d * ma0 + dv_n * ma2)) + (A[3] * mba0 + A[4] * mba1 + A[5] * mba2);
        u2 = (m[VEL + 2] + (dv_e * ma0 + -dv_n * ma1)) + (A[6] * mba0 + A[7] * mba1 + A[8] * mba2);
        if (r <= VEL) {
            pr[VEL] = u0;
            P[VEL * NS + r] = u0;
        }
        if (r <= VEL + 1) {
            pr[VEL + 1] = u1;
            P[(VEL + 1) * NS + r] = u1;
        }
        pr[VEL + 2] = u2;
        P[(VEL + 2) * NS + r] = u2;
        for (c = BACC; c < NS; c++) {
            v = m[c];
            pr[c] = v;
            P[c * NS + r] = v;
        }
    }
    /* Q (ag2u eq. 10 increment noise + optional bias random walks) */
    qa = var_acc * dt;
    qg = var_gyr * dt;
    qba = var_bacc * dt;
    qbg = var_bgyr * dt;
    for (i = 0; i < 3; i++) {
        p_ = POS + i;
        v_ = VEL + i;
        P[p_ * NS + p_] += qa * dt * dt;
        P[p_ * NS + v_] += qa * dt;
        P[v_ * NS + p_] += qa * dt;
        P[v_ * NS + v_] += qa;
        P[(ATT + i) * NS + ATT + i] += qg;
        P[(BACC + i) * NS + BACC + i] += qba;
        P[(BGYR + i) * NS + BGYR + i] += qbg;
    }
}

/* The pure _fuse (ag2u eqs. 5b, 6, 9; Joseph form with H selecting the first 6 states), each entry in
 * the same floating-point order, with the loops turned so the inner one runs over contiguous columns:
 * K^T for all 15 columns at once, and per row i of P' the row of B = (I - K H) P, then
 * G_i = K_i R - B_i H^T and P'_i = B_i + G_i K^T, written to a scratch matrix (P is still read) and
 * copied back. pm: measured position (m, NED); em: measured Euler angles (rad); r: the 6 measurement
 * variances; gate: NIS gate (<= 0: off). Returns ESKF_FUSED, ESKF_GATED (only *nis_out and y_last
 * written) or ESKF_NOT_PD (nothing written). */
static int ESKF_FN(eskf_update)(double *P, double *pos, double *vel, double *d, double *ba, double *bg,
                                   double gate, const double *pm, const double *em, const double *r,
                                   double *nis_out, double *y_last)
{
    enum { NS = ESKF_NS, NM = ESKF_NM, NSS = ESKF_NSS, POS = ESKF_POS, ATT = ESKF_ATT, VEL = ESKF_VEL,
           BACC = ESKF_BACC, BGYR = ESKF_BGYR };
    double dm[9], X[9], dpsi[3], y[NM], L[NM * NM], w[NM], Kt[NM * NS], dx[NS], Pn[NSS], bi[NS], t[NS];
    double inv_d[NM];
    double *ka;
    const double *kb, *prow, *p0, *p1, *p2, *p3, *p4, *p5, *q0, *q1, *q2, *q3, *q4, *q5;
    double s, nis, l, idv, v, k0, k1, k2, k3, k4, k5, g0, g1, g2, g3, g4, g5;
    int i, j, a, b;
    /* residual (ag2u eqs. 5b, 6) */
    eskf_e2d(em[0], em[1], em[2], dm);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            X[i * 3 + j] = d[i] * dm[j] + d[3 + i] * dm[3 + j] + d[6 + i] * dm[6 + j];
    eskf_d2e(X, dpsi);
    y[0] = pm[0] - pos[0];
    y[1] = pm[1] - pos[1];
    y[2] = pm[2] - pos[2];
    y[3] = dpsi[0];
    y[4] = dpsi[1];
    y[5] = dpsi[2];
    /* Cholesky factor of S = H P H^T + R (as cholesky6) */
    for (i = 0; i < NM; i++) {
        for (j = 0; j <= i; j++) {
            s = P[i * NS + j];
            if (i == j)
                s = s + r[i];
            for (b = 0; b < j; b++)
                s -= L[i * NM + b] * L[j * NM + b];
            if (i == j) {
                if (!(s > 0.0))
                    return ESKF_NOT_PD;
                L[i * NM + i] = sqrt(s);
            } else {
                L[i * NM + j] = s / L[j * NM + j];
            }
        }
    }
    for (a = 0; a < NM; a++)
        inv_d[a] = 1.0 / L[a * NM + a];
    nis = 0.0;
    for (a = 0; a < NM; a++) {
        s = y[a];
        for (b = 0; b < a; b++)
            s -= L[a * NM + b] * w[b];
        w[a] = s * inv_d[a];
        nis += w[a] * w[a];
    }
    *nis_out = nis;
    for (a = 0; a < NM; a++)
        y_last[a] = y[a];
    if (gate > 0.0 && nis > gate)
        return ESKF_GATED;
    /* K^T = S^-1 P[0:6, :]: forward substitution, then back substitution, all columns at once */
    for (a = 0; a < NM; a++) {
        prow = P + a * NS;
        for (j = 0; j < NS; j++)
            t[j] = prow[j];
        for (b = 0; b < a; b++) {
            l = L[a * NM + b];
            kb = Kt + b * NS;
            for (j = 0; j < NS; j++)
                t[j] -= l * kb[j];
        }
        ka = Kt + a * NS;
        idv = inv_d[a];
        for (j = 0; j < NS; j++)
            ka[j] = t[j] * idv;
    }
    for (a = NM - 1; a >= 0; a--) {
        ka = Kt + a * NS;
        for (j = 0; j < NS; j++)
            t[j] = ka[j];
        for (b = a + 1; b < NM; b++) {
            l = L[b * NM + a];
            kb = Kt + b * NS;
            for (j = 0; j < NS; j++)
                t[j] -= l * kb[j];
        }
        idv = inv_d[a];
        for (j = 0; j < NS; j++)
            ka[j] = t[j] * idv;
    }
    /* dx = K y */
    for (i = 0; i < NS; i++)
        dx[i] = 0.0;
    for (a = 0; a < NM; a++) {
        kb = Kt + a * NS;
        l = y[a];
        for (i = 0; i < NS; i++)
            dx[i] += kb[i] * l;
    }
    /* Joseph form row by row: B_ij = P_ij - sum_a K_ia P_aj, G_ia = K_ia r_a - B_ia,
     * P'_ij = B_ij + sum_a K_ja G_ia (j >= i), mirrored; the six terms written out so the loops over j
     * keep their sums in registers */
    p0 = P;
    p1 = P + NS;
    p2 = P + 2 * NS;
    p3 = P + 3 * NS;
    p4 = P + 4 * NS;
    p5 = P + 5 * NS;
    q0 = Kt;
    q1 = Kt + NS;
    q2 = Kt + 2 * NS;
    q3 = Kt + 3 * NS;
    q4 = Kt + 4 * NS;
    q5 = Kt + 5 * NS;
    for (i = 0; i < NS; i++) {
        prow = P + i * NS;
        k0 = q0[i];
        k1 = q1[i];
        k2 = q2[i];
        k3 = q3[i];
        k4 = q4[i];
        k5 = q5[i];
        for (j = 0; j < NS; j++)    /* (for i >= NM only j < NM and j >= i are used: one fixed loop is cheaper) */
            bi[j] = prow[j] - k0 * p0[j] - k1 * p1[j] - k2 * p2[j] - k3 * p3[j] - k4 * p4[j] - k5 * p5[j];
        g0 = k0 * r[0] - bi[0];
        g1 = k1 * r[1] - bi[1];
        g2 = k2 * r[2] - bi[2];
        g3 = k3 * r[3] - bi[3];
        g4 = k4 * r[4] - bi[4];
        g5 = k5 * r[5] - bi[5];
        for (j = i; j < NS; j++) {
            v = bi[j] + q0[j] * g0 + q1[j] * g1 + q2[j] * g2 + q3[j] * g3 + q4[j] * g4 + q5[j] * g5;
            Pn[i * NS + j] = v;
            Pn[j * NS + i] = v;
        }
    }
    memcpy(P, Pn, NSS * sizeof(double));
    /* inject the error state into the INS, then reset it (implicitly zero) */
    for (i = 0; i < 3; i++) {
        pos[i] = pos[i] + dx[POS + i];
        vel[i] = vel[i] + dx[VEL + i];
        ba[i] = ba[i] + dx[BACC + i];
        bg[i] = bg[i] + dx[BGYR + i];
    }
    eskf_e2d(dx[ATT], dx[ATT + 1], dx[ATT + 2], dm);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            X[i * 3 + j] = d[i * 3] * dm[j] + d[i * 3 + 1] * dm[3 + j] + d[i * 3 + 2] * dm[6 + j];
    eskf_orthonormalize(X);
    for (i = 0; i < 9; i++)
        d[i] = X[i];
    return ESKF_FUSED;
}

