/* Plain C reference of the 15-state ESKF (ag2u eqs. 4a-9), block-sparse in F and H.
 *
 * The practical speed limit for bench/eskf.py: the same algorithm, in the same
 * floating-point order, as onboard/estimators/eskf.py and cython_ext/eskf.pyx.
 * bench/eskf.py compiles it with `gcc -O2` into a temporary folder and runs it on
 * a workload file it writes; this program prints one JSON object with the timings
 * (best of the repeats, CPU microseconds per call) and the final state, which the
 * benchmark checks against the Cython build.
 *
 * Usage: eskf_ref WORKLOAD_FILE REPEATS
 * Workload (little-endian): int32 n_imu, n_pose, ratio; double g, var_acc, var_gyr,
 * var_bacc, var_bgyr, gate, r[6]; initial state pos[3] vel[3] D[9] ba[3] bg[3] P[225];
 * n_imu x (dt_s, dvel[3], dang[3]); n_pose x (pos[3], euler[3]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NS = 15, NM = 6, NSS = 225, POS = 0, ATT = 3, VEL = 6, BACC = 9, BGYR = 12 };

typedef struct {
    double P[NSS], pos[3], vel[3], D[9], ba[3], bg[3];
    double g, var_acc, var_gyr, var_bacc, var_bgyr, gate, r[NM];
    double last_nis;
    long updates, gated;
} eskf_t;

static void e2d(double roll, double pitch, double yaw, double *d) {
    double cr = cos(roll), sr = sin(roll), cp = cos(pitch), sp = sin(pitch), cy = cos(yaw), sy = sin(yaw);
    d[0] = cy * cp;
    d[3] = cy * sp * sr - sy * cr;
    d[6] = cy * sp * cr + sy * sr;
    d[1] = sy * cp;
    d[4] = sy * sp * sr + cy * cr;
    d[7] = sy * sp * cr - cy * sr;
    d[2] = -sp;
    d[5] = cp * sr;
    d[8] = cp * cr;
}

static void d2e(const double *d, double *e) {
    double s = -d[2];
    if (s > 1.0) s = 1.0;
    else if (s < -1.0) s = -1.0;
    e[1] = asin(s);
    e[0] = atan2(d[5], d[8]);
    e[2] = atan2(d[1], d[0]);
}

static void orthonormalize(double *r) {
    double a0 = r[0], a1 = r[1], a2 = r[2], b0 = r[3], b1 = r[4], b2 = r[5];
    double n0 = sqrt(a0 * a0 + a1 * a1 + a2 * a2);
    a0 = a0 / n0; a1 = a1 / n0; a2 = a2 / n0;
    double dd = a0 * b0 + a1 * b1 + a2 * b2;
    b0 = b0 - dd * a0; b1 = b1 - dd * a1; b2 = b2 - dd * a2;
    double n1 = sqrt(b0 * b0 + b1 * b1 + b2 * b2);
    b0 = b0 / n1; b1 = b1 / n1; b2 = b2 / n1;
    r[0] = a0; r[1] = a1; r[2] = a2; r[3] = b0; r[4] = b1; r[5] = b2;
    r[6] = a1 * b2 - a2 * b1;
    r[7] = a2 * b0 - a0 * b2;
    r[8] = a0 * b1 - a1 * b0;
}

static void predict(eskf_t *s, double dt, const double *dvel, const double *dang) {
    double f[9], nd[9], A[9], S[9], M[NSS];
    double *P = s->P, *d = s->D;
    double dvx = dvel[0] - s->ba[0] * dt, dvy = dvel[1] - s->ba[1] * dt, dvz = dvel[2] - s->ba[2] * dt;
    e2d(dang[0] - s->bg[0] * dt, dang[1] - s->bg[1] * dt, dang[2] - s->bg[2] * dt, f);
    for (int i = 0; i < 3; i++) {                                   /* eq. 4a */
        double f0 = f[i * 3], f1 = f[i * 3 + 1], f2 = f[i * 3 + 2];
        for (int j = 0; j < 3; j++) nd[i * 3 + j] = f0 * d[j] + f1 * d[3 + j] + f2 * d[6 + j];
    }
    memcpy(d, nd, sizeof nd);
    double dv_n = nd[0] * dvx + nd[3] * dvy + nd[6] * dvz;              /* eq. 4b */
    double dv_e = nd[1] * dvx + nd[4] * dvy + nd[7] * dvz;
    double dv_d = nd[2] * dvx + nd[5] * dvy + nd[8] * dvz;
    s->vel[0] = s->vel[0] + dv_n;
    s->vel[1] = s->vel[1] + dv_e;
    s->vel[2] = s->vel[2] + (dv_d + s->g * dt);
    for (int i = 0; i < 3; i++) s->pos[i] = s->pos[i] + s->vel[i] * dt;  /* eq. 4c */
    A[0] = -d[0] * dt; A[1] = -d[3] * dt; A[2] = -d[6] * dt;
    A[3] = -d[1] * dt; A[4] = -d[4] * dt; A[5] = -d[7] * dt;
    A[6] = -d[2] * dt; A[7] = -d[5] * dt; A[8] = -d[8] * dt;
    S[0] = 0.0; S[1] = dv_d; S[2] = -dv_e;
    S[3] = -dv_d; S[4] = 0.0; S[5] = dv_n;
    S[6] = dv_e; S[7] = -dv_n; S[8] = 0.0;
    /* M = F P: rows dp, dpsi, dv; P' reads the dpsi and dv rows only from column ATT on */
    for (int c = 0; c < NS; c++) {
        for (int i = 0; i < 3; i++) M[(POS + i) * NS + c] = P[(POS + i) * NS + c] + dt * P[(VEL + i) * NS + c];
        if (c < ATT) continue;
        double pa0 = P[ATT * NS + c], pa1 = P[(ATT + 1) * NS + c], pa2 = P[(ATT + 2) * NS + c];
        double pba0 = P[BACC * NS + c], pba1 = P[(BACC + 1) * NS + c], pba2 = P[(BACC + 2) * NS + c];
        double pbg0 = P[BGYR * NS + c], pbg1 = P[(BGYR + 1) * NS + c], pbg2 = P[(BGYR + 2) * NS + c];
        for (int i = 0; i < 3; i++) {
            M[(ATT + i) * NS + c] = P[(ATT + i) * NS + c] + (A[i * 3] * pbg0 + A[i * 3 + 1] * pbg1 + A[i * 3 + 2] * pbg2);
            M[(VEL + i) * NS + c] = (P[(VEL + i) * NS + c] + (S[i * 3] * pa0 + S[i * 3 + 1] * pa1 + S[i * 3 + 2] * pa2))
                                    + (A[i * 3] * pba0 + A[i * 3 + 1] * pba1 + A[i * 3 + 2] * pba2);
        }
    }
    for (int r = 0; r < BACC; r++) {
        int ro = r * NS;
        double ma0 = M[ro + ATT], ma1 = M[ro + ATT + 1], ma2 = M[ro + ATT + 2];
        double mba0 = M[ro + BACC], mba1 = M[ro + BACC + 1], mba2 = M[ro + BACC + 2];
        double mbg0 = M[ro + BGYR], mbg1 = M[ro + BGYR + 1], mbg2 = M[ro + BGYR + 2];
        for (int c = r; c < ATT; c++) {
            double v = M[ro + c] + dt * M[ro + VEL + c - POS];
            P[ro + c] = v;
            P[c * NS + r] = v;
        }
        for (int c = r < ATT ? ATT : r; c < VEL; c++) {
            int j = c - ATT;
            double v = M[ro + c] + (A[j * 3] * mbg0 + A[j * 3 + 1] * mbg1 + A[j * 3 + 2] * mbg2);
            P[ro + c] = v;
            P[c * NS + r] = v;
        }
        for (int c = r < VEL ? VEL : r; c < BACC; c++) {
            int j = c - VEL;
            double v = (M[ro + c] + (S[j * 3] * ma0 + S[j * 3 + 1] * ma1 + S[j * 3 + 2] * ma2))
                       + (A[j * 3] * mba0 + A[j * 3 + 1] * mba1 + A[j * 3 + 2] * mba2);
            P[ro + c] = v;
            P[c * NS + r] = v;
        }
        for (int c = BACC; c < NS; c++) {
            double v = M[ro + c];
            P[ro + c] = v;
            P[c * NS + r] = v;
        }
    }
    double qa = s->var_acc * dt, qg = s->var_gyr * dt, qba = s->var_bacc * dt, qbg = s->var_bgyr * dt;
    for (int i = 0; i < 3; i++) {
        int p = POS + i, v = VEL + i, a = ATT + i, b = BACC + i, g = BGYR + i;
        P[p * NS + p] += qa * dt * dt;
        P[p * NS + v] += qa * dt;
        P[v * NS + p] += qa * dt;
        P[v * NS + v] += qa;
        P[a * NS + a] += qg;
        P[b * NS + b] += qba;
        P[g * NS + g] += qbg;
    }
}

/* 1 fused, 0 gated, -1 S not positive definite */
static int update(eskf_t *s, const double *pm, const double *em, const double *r) {
    double dm[9], X[9], dpsi[3], y[NM], Sm[NM * NM], L[NM * NM], w[NM], Kt[NM * NS], dx[NS], B[NSS];
    double *P = s->P, *d = s->D;
    e2d(em[0], em[1], em[2], dm);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) X[i * 3 + j] = d[i] * dm[j] + d[3 + i] * dm[3 + j] + d[6 + i] * dm[6 + j];
    d2e(X, dpsi);
    for (int i = 0; i < 3; i++) { y[i] = pm[i] - s->pos[i]; y[3 + i] = dpsi[i]; }
    for (int a = 0; a < NM; a++) {
        for (int b = 0; b < NM; b++) Sm[a * NM + b] = P[a * NS + b];
        Sm[a * NM + a] += r[a];
    }
    memset(L, 0, sizeof L);
    for (int i = 0; i < NM; i++)
        for (int j = 0; j <= i; j++) {
            double t = Sm[i * NM + j];
            for (int k = 0; k < j; k++) t -= L[i * NM + k] * L[j * NM + k];
            if (i == j) {
                if (!(t > 0.0)) return -1;
                L[i * NM + i] = sqrt(t);
            } else {
                L[i * NM + j] = t / L[j * NM + j];
            }
        }
    double inv_d[NM], G[NS * NM];
    for (int a = 0; a < NM; a++) inv_d[a] = 1.0 / L[a * NM + a];
    double nis = 0.0;
    for (int a = 0; a < NM; a++) {
        double t = y[a];
        for (int b = 0; b < a; b++) t -= L[a * NM + b] * w[b];
        w[a] = t * inv_d[a];
        nis += w[a] * w[a];
    }
    s->last_nis = nis;
    if (s->gate > 0.0 && nis > s->gate) return 0;
    for (int j = 0; j < NS; j++) {
        for (int a = 0; a < NM; a++) {
            double t = P[a * NS + j];
            for (int b = 0; b < a; b++) t -= L[a * NM + b] * Kt[b * NS + j];
            Kt[a * NS + j] = t * inv_d[a];
        }
        for (int a = NM - 1; a >= 0; a--) {
            double t = Kt[a * NS + j];
            for (int b = a + 1; b < NM; b++) t -= L[b * NM + a] * Kt[b * NS + j];
            Kt[a * NS + j] = t * inv_d[a];
        }
    }
    for (int i = 0; i < NS; i++) {
        double t = 0.0;
        for (int a = 0; a < NM; a++) t += Kt[a * NS + i] * y[a];
        dx[i] = t;
    }
    /* Joseph form, block-sparse in H: B = P - K C (entries used only), P'_ij = B_ij + sum_a K_ja G_ia */
    for (int i = 0; i < NS; i++) {
        int lim = i < NM ? i : NM;
        for (int j = 0; j < lim; j++) {
            double t = P[i * NS + j];
            for (int a = 0; a < NM; a++) t -= Kt[a * NS + i] * P[a * NS + j];
            B[i * NS + j] = t;
        }
        for (int j = i; j < NS; j++) {
            double t = P[i * NS + j];
            for (int a = 0; a < NM; a++) t -= Kt[a * NS + i] * P[a * NS + j];
            B[i * NS + j] = t;
        }
    }
    for (int i = 0; i < NS; i++)
        for (int a = 0; a < NM; a++) G[i * NM + a] = Kt[a * NS + i] * r[a] - B[i * NS + a];
    for (int i = 0; i < NS; i++)
        for (int j = i; j < NS; j++) {
            double t = B[i * NS + j];
            for (int a = 0; a < NM; a++) t += Kt[a * NS + j] * G[i * NM + a];
            P[i * NS + j] = t;
            P[j * NS + i] = t;
        }
    for (int i = 0; i < 3; i++) {
        s->pos[i] = s->pos[i] + dx[POS + i];
        s->vel[i] = s->vel[i] + dx[VEL + i];
        s->ba[i] = s->ba[i] + dx[BACC + i];
        s->bg[i] = s->bg[i] + dx[BGYR + i];
    }
    e2d(dx[ATT], dx[ATT + 1], dx[ATT + 2], dm);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            X[i * 3 + j] = d[i * 3] * dm[j] + d[i * 3 + 1] * dm[3 + j] + d[i * 3 + 2] * dm[6 + j];
    orthonormalize(X);
    memcpy(d, X, sizeof X);
    return 1;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);       /* CPU time: other load on the host does not count */
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void run_update(eskf_t *s, const double *pose) {
    int res = update(s, pose, pose + 3, s->r);
    if (res == 1) s->updates++;
    else if (res == 0) s->gated++;
}

static void print_array(const char *name, const double *v, int n) {
    printf("\"%s\": [", name);
    for (int i = 0; i < n; i++) printf("%s%.17g", i ? ", " : "", v[i]);
    printf("]");
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s WORKLOAD REPEATS\n", argv[0]); return 2; }
    FILE *fh = fopen(argv[1], "rb");
    if (!fh) { perror(argv[1]); return 2; }
    int hdr[3];
    eskf_t init;
    memset(&init, 0, sizeof init);
    double cfg[12], st[NSS + 21];
    if (fread(hdr, sizeof(int), 3, fh) != 3 || fread(cfg, sizeof(double), 12, fh) != 12
        || fread(st, sizeof(double), NSS + 21, fh) != NSS + 21) { fprintf(stderr, "short workload\n"); return 2; }
    int n_imu = hdr[0], n_pose = hdr[1], ratio = hdr[2], repeats = atoi(argv[2]);
    init.g = cfg[0]; init.var_acc = cfg[1]; init.var_gyr = cfg[2]; init.var_bacc = cfg[3]; init.var_bgyr = cfg[4];
    init.gate = cfg[5];
    memcpy(init.r, cfg + 6, sizeof init.r);
    memcpy(init.pos, st, 3 * sizeof(double));
    memcpy(init.vel, st + 3, 3 * sizeof(double));
    memcpy(init.D, st + 6, 9 * sizeof(double));
    memcpy(init.ba, st + 15, 3 * sizeof(double));
    memcpy(init.bg, st + 18, 3 * sizeof(double));
    memcpy(init.P, st + 21, NSS * sizeof(double));
    double *imu = malloc(sizeof(double) * 7 * n_imu), *pose = malloc(sizeof(double) * 6 * n_pose);
    if (fread(imu, sizeof(double), 7 * (size_t)n_imu, fh) != 7 * (size_t)n_imu
        || fread(pose, sizeof(double), 6 * (size_t)n_pose, fh) != 6 * (size_t)n_pose) {
        fprintf(stderr, "short workload data\n");
        return 2;
    }
    fclose(fh);
    if (n_imu < n_pose * ratio) { fprintf(stderr, "workload too short\n"); return 2; }
    double best_p = 1e30, best_u = 1e30, best_c = 1e30;
    eskf_t s;
    for (int rep = 0; rep < repeats; rep++) {
        s = init;
        double t0 = now_us();
        for (int k = 0; k < n_imu; k++) predict(&s, imu[7 * k], imu + 7 * k + 1, imu + 7 * k + 4);
        double t1 = now_us();
        if ((t1 - t0) / n_imu < best_p) best_p = (t1 - t0) / n_imu;
        s = init;
        t0 = now_us();
        for (int k = 0; k < n_pose; k++) run_update(&s, pose + 6 * k);
        t1 = now_us();
        if ((t1 - t0) / n_pose < best_u) best_u = (t1 - t0) / n_pose;
        s = init;
        t0 = now_us();
        for (int k = 0; k < n_pose; k++) {
            for (int j = 0; j < ratio; j++) {
                int i = k * ratio + j;
                predict(&s, imu[7 * i], imu + 7 * i + 1, imu + 7 * i + 4);
            }
            run_update(&s, pose + 6 * k);
        }
        t1 = now_us();
        if ((t1 - t0) / n_pose < best_c) best_c = (t1 - t0) / n_pose;
    }
    /* s holds the state after the last cycle run */
    printf("{\"predict_us\": %.6f, \"update_us\": %.6f, \"cycle_us\": %.6f, \"updates\": %ld, \"gated\": %ld, ",
           best_p, best_u, best_c, s.updates, s.gated);
    print_array("pos_ned_m", s.pos, 3); printf(", ");
    print_array("vel_ned_mps", s.vel, 3); printf(", ");
    print_array("D_ned_to_body", s.D, 9); printf(", ");
    print_array("accel_bias_mps2", s.ba, 3); printf(", ");
    print_array("gyro_bias_radps", s.bg, 3); printf(", ");
    print_array("P", s.P, NSS);
    printf("}\n");
    free(imu);
    free(pose);
    return 0;
}
