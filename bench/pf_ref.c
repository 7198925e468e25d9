/* Plain C reference of the relative-pose particle filter step (pocket IV-B), for bench/pf.py.
 *
 * Same arithmetic, term by term, as the pure/Cython kernels (onboard/estimators/particle_filter.py,
 * cython_ext/pf_kernels.pyx). bench/pf.py compiles this with `gcc -O2`, writes the workload
 * (initial particles, per-step inputs, a pool of pre-drawn normals, the uniforms) to a binary
 * file, and this program runs the steps, times them, and writes back the final particles and
 * the per-step estimates so the benchmark can check that C and Cython computed the same thing.
 *
 * usage: pf_ref <workload.bin> <result.bin> <repeats>
 * workload.bin: int64 n, n_refresh, steps, pool; double params[8]
 *               (bias_m, inv_two_var_m2, sigma_pos_m, sigma_yaw_rad, sigma_r_m, sigma_b_rad,
 *                sigma_yaw_refresh_rad, unused);
 *               double x0[n], y0[n], yaw0[n];
 *               double per_step[steps][8] (dt_s, vx_own, vy_own, vx_peer, vy_peer, range_m,
 *                                          bearing_rad, rel_yaw_rad);
 *               double u0[steps]; double noise[pool][3n]; double fresh[pool][3 n_refresh]
 * result.bin:   double us_per_step (best of repeats); double x[n], y[n], yaw[n]; double est[steps][7]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const double PI = 3.141592653589793;
static const double TWO_PI = 2.0 * 3.141592653589793;

static inline double wrap_pi(double a) {
    a = fmod(a + PI, TWO_PI);
    if (a < 0.0) a += TWO_PI;
    return a - PI;
}

static void predict_weight(double *xs, double *ys, double *yaws, double *ws, double *lws, long n, double dt_s,
                           double vxo, double vyo, double vxp, double vyp, double range_m,
                           double bias_m, double inv_two_var, const double *noise,
                           double sigma_pos, double sigma_yaw, double *est) {
    double e2_min = INFINITY, l_max = -INFINITY;
    for (long i = 0; i < n; i++) {
        long k = 3 * i;
        double yaw = yaws[i];
        double c = cos(yaw), s = sin(yaw);
        double x = xs[i] + dt_s * (c * vxp - s * vyp - vxo) + sigma_pos * noise[k];
        double y = ys[i] + dt_s * (s * vxp + c * vyp - vyo) + sigma_pos * noise[k + 1];
        xs[i] = x;
        ys[i] = y;
        yaws[i] = wrap_pi(yaw + sigma_yaw * noise[k + 2]);
        double e = range_m - bias_m - sqrt(x * x + y * y);
        double e2 = e * e;
        double lw = lws[i] - e2 * inv_two_var;
        lws[i] = lw;
        if (e2 < e2_min) e2_min = e2;
        if (lw > l_max) l_max = lw;
    }
    double sw = 0.0, sww = 0.0, swx = 0.0, swy = 0.0, sws = 0.0, swc = 0.0;
    for (long i = 0; i < n; i++) {
        double lw = lws[i] - l_max;
        lws[i] = lw;
        double w = exp(lw);
        ws[i] = w;
        sw += w;
        sww += w * w;
        swx += w * xs[i];
        swy += w * ys[i];
        sws += w * sin(yaws[i]);
        swc += w * cos(yaws[i]);
    }
    est[0] = swx / sw;
    est[1] = swy / sw;
    est[2] = atan2(sws, swc);
    est[3] = sw * sw / sww;
    est[4] = e2_min;
    est[5] = sw;
    est[6] = l_max;
}

static void resample(const double *xs, const double *ys, const double *yaws, const double *ws,
                     long n, long n_keep, double u0, double *xo, double *yo, double *yawo) {
    double total = 0.0;
    for (long i = 0; i < n; i++) total += ws[i];
    double step = total / n_keep;
    long i = 0, last = n - 1;
    double cum = ws[0];
    for (long m = 0; m < n_keep; m++) {
        double target = (u0 + m) * step;
        while (cum <= target && i < last) {
            i++;
            cum += ws[i];
        }
        xo[m] = xs[i];
        yo[m] = ys[i];
        yawo[m] = yaws[i];
    }
}

static void refresh(double *xs, double *ys, double *yaws, long start, long count, double range_m,
                    double bearing, double yaw_c, double sig_r, double sig_b, double sig_yaw,
                    const double *noise) {
    for (long j = 0; j < count; j++) {
        long k = 3 * j;
        double r = range_m + sig_r * noise[k];
        if (r < 0.0) r = -r;
        double b = bearing + sig_b * noise[k + 1];
        xs[start + j] = r * cos(b);
        ys[start + j] = r * sin(b);
        yaws[start + j] = wrap_pi(yaw_c + sig_yaw * noise[k + 2]);
    }
}

static void *xread(FILE *f, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "pf_ref: short workload file\n");
        exit(2);
    }
    return p;
}

static double now_s(void) {      /* CPU time of this process (bench/pf.py times the Python paths likewise) */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pf_ref workload.bin result.bin repeats\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    int64_t *hdr = xread(f, 4 * sizeof(int64_t));
    long n = hdr[0], n_ref = hdr[1], steps = hdr[2], pool = hdr[3];
    double *prm = xread(f, 8 * sizeof(double));
    double *init = xread(f, 3 * n * sizeof(double));
    double *per = xread(f, steps * 8 * sizeof(double));
    double *u0 = xread(f, steps * sizeof(double));
    double *noise = xread(f, pool * 3 * n * sizeof(double));
    double *fresh = xread(f, pool * 3 * n_ref * sizeof(double));
    fclose(f);
    int repeats = atoi(argv[3]);

    double *a[3], *b[3];
    for (int j = 0; j < 3; j++) { a[j] = malloc(n * sizeof(double)); b[j] = malloc(n * sizeof(double)); }
    double *ws = malloc(n * sizeof(double));
    double *lws = calloc(n, sizeof(double));
    double *est = malloc(steps * 7 * sizeof(double));
    double best = INFINITY;
    double *xs = a[0], *ys = a[1], *yaws = a[2], *x2 = b[0], *y2 = b[1], *yaw2 = b[2];
    for (int rep = 0; rep < repeats; rep++) {
        xs = a[0]; ys = a[1]; yaws = a[2]; x2 = b[0]; y2 = b[1]; yaw2 = b[2];
        memcpy(xs, init, n * sizeof(double));
        memcpy(ys, init + n, n * sizeof(double));
        memcpy(yaws, init + 2 * n, n * sizeof(double));
        memset(lws, 0, n * sizeof(double));
        double t0 = now_s();
        for (long s = 0; s < steps; s++) {
            const double *p = per + 8 * s;
            predict_weight(xs, ys, yaws, ws, lws, n, p[0], p[1], p[2], p[3], p[4], p[5], prm[0], prm[1],
                           noise + (s % pool) * 3 * n, prm[2], prm[3], est + 7 * s);
            resample(xs, ys, yaws, ws, n, n - n_ref, u0[s], x2, y2, yaw2);
            memset(lws, 0, n * sizeof(double));      /* weights back to uniform after resampling */
            double *t;
            t = xs; xs = x2; x2 = t;
            t = ys; ys = y2; y2 = t;
            t = yaws; yaws = yaw2; yaw2 = t;
            refresh(xs, ys, yaws, n - n_ref, n_ref, p[5] - prm[0], p[6], p[7], prm[4], prm[5],
                    prm[6], fresh + (s % pool) * 3 * n_ref);
        }
        double us = (now_s() - t0) * 1e6 / steps;
        if (us < best) best = us;
    }
    FILE *o = fopen(argv[2], "wb");
    if (!o) { perror(argv[2]); return 2; }
    fwrite(&best, sizeof(double), 1, o);
    fwrite(xs, sizeof(double), n, o);
    fwrite(ys, sizeof(double), n, o);
    fwrite(yaws, sizeof(double), n, o);
    fwrite(est, sizeof(double), steps * 7, o);
    fclose(o);
    return 0;
}
