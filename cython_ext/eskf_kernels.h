/* Numeric kernels of the 15-state ES-EKF (cython_ext/eskf.pyx calls them; header only, static functions;
 * the kernels' source is cython_ext/eskf_kernels_impl.h).
 *
 * State layout as onboard/estimators/eskf.py: error state (dp_ned_m, dpsi_rad, dv_ned_mps, dba_mps2,
 * dbg_radps) at 0, 3, 6, 9, 12; P is the 15x15 covariance, flat row-major; D is D_ned_to_body, flat
 * row-major. Every entry of P is computed with the same operations, in the same order, as the pure
 * module's _propagate / _fuse, so the two builds agree bit for bit (tests/unit/test_eskf_kernels.py).
 *
 * Portable CPU dispatch: on x86-64 with GCC the kernels' one source is compiled twice, for the
 * baseline (SSE2) and inside #pragma GCC target("avx2"); eskf_kernels_select picks one through two
 * function pointers (eskf.pyx does it at import from __builtin_cpu_supports("avx2")). The AVX2 build has
 * no FMA (the "fma" target is not named; contraction is off too), so every product and sum rounds as in
 * the baseline build: the variants give bit-identical results (tested on both). Never add "fma" to it:
 * GCC 12's vectoriser then forms vfmaddsub from a*b+c / a*b-c pairs even with contraction off.
 * Elsewhere (ARM boards, other compilers) only the baseline build exists.
 */
#ifndef ESKF_KERNELS_H
#define ESKF_KERNELS_H

#include <math.h>
#include <string.h>

#define ESKF_NS 15
#define ESKF_NM 6
#define ESKF_NSS 225
#define ESKF_POS 0
#define ESKF_ATT 3
#define ESKF_VEL 6
#define ESKF_BACC 9
#define ESKF_BGYR 12
#define ESKF_NOT_PD (-1)
#define ESKF_GATED 0
#define ESKF_FUSED 1

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ESKF_HAS_AVX2 1
#else
#define ESKF_HAS_AVX2 0
#endif

/* No contraction of a*b+c into one fused multiply-add anywhere below (the ARM boards have FMA): each
 * product and sum rounds as in the pure path. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("-ffp-contract=off")
#endif

/* ag2u eq. 3: D_ned_to_body of Z-Y-X Euler angles (transpose of euler_to_dcm). */
static inline void eskf_e2d(double roll, double pitch, double yaw, double *d)
{
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

/* |cos(pitch)| below which eskf_d2e treats the attitude as near gimbal lock (rotations.GIMBAL_COS). */
#define ESKF_GIMBAL_COS 1e-4

/* ag2u eq. 7: (roll, pitch, yaw) of D_ned_to_body; rotations.d2e's operations in its order (so the residual
 * of ag2u eq. 6 has the pure path's bits). R = D^T, so R[7] = d[5], R[8] = d[8], R[6] = d[2], R[0] = d[0],
 * R[3] = d[1], R[1] = d[3], R[2] = d[6], R[4] = d[4], R[5] = d[7]. Near gimbal lock (pitch within 1e-4 rad
 * of +-pi/2) roll comes from the last row (0 where cos(pitch) is at the rounding level), pitch from
 * atan2(-R[6], cos(pitch)) and yaw from R's top-left block given that roll, so the angles rebuild R. */
static inline void eskf_d2e(const double *d, double *e)
{
    double cp = sqrt(d[5] * d[5] + d[8] * d[8]);
    double s, sr, cr;
    if (cp < ESKF_GIMBAL_COS) {
        e[0] = cp > 1e-15 ? atan2(d[5], d[8]) : 0.0;
        sr = sin(e[0]);
        cr = cos(e[0]);
        e[1] = atan2(-d[2], cp);
        e[2] = atan2(sr * d[6] - cr * d[3], cr * d[4] - sr * d[7]);
        return;
    }
    s = -d[2];
    if (s > 1.0)
        s = 1.0;
    else if (s < -1.0)
        s = -1.0;
    e[1] = asin(s);
    e[0] = atan2(d[5], d[8]);
    e[2] = atan2(d[1], d[0]);
}

/* One Gram-Schmidt pass on the rows (as rotations.dcm_orthonormalize). */
static inline void eskf_orthonormalize(double *r)
{
    double a0 = r[0], a1 = r[1], a2 = r[2];
    double b0 = r[3], b1 = r[4], b2 = r[5];
    double n0 = sqrt(a0 * a0 + a1 * a1 + a2 * a2);
    double dd, n1;
    a0 = a0 / n0;
    a1 = a1 / n0;
    a2 = a2 / n0;
    dd = a0 * b0 + a1 * b1 + a2 * b2;
    b0 = b0 - dd * a0;
    b1 = b1 - dd * a1;
    b2 = b2 - dd * a2;
    n1 = sqrt(b0 * b0 + b1 * b1 + b2 * b2);
    b0 = b0 / n1;
    b1 = b1 / n1;
    b2 = b2 / n1;
    r[0] = a0;
    r[1] = a1;
    r[2] = a2;
    r[3] = b0;
    r[4] = b1;
    r[5] = b2;
    r[6] = a1 * b2 - a2 * b1;
    r[7] = a2 * b0 - a0 * b2;
    r[8] = a0 * b1 - a1 * b0;
}

#define ESKF_FN(name) name##_default
#include "eskf_kernels_impl.h"
#undef ESKF_FN
#if ESKF_HAS_AVX2
#pragma GCC target("avx2")
#define ESKF_FN(name) name##_avx2
#include "eskf_kernels_impl.h"
#undef ESKF_FN
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

typedef void (*eskf_predict_fn)(double *, double *, double *, double *, const double *, const double *, double,
                                double, double, double, double, double, const double *, const double *);
typedef int (*eskf_update_fn)(double *, double *, double *, double *, double *, double *, double,
                              const double *, const double *, const double *, double *, double *);
static eskf_predict_fn eskf_predict = eskf_predict_default;
static eskf_update_fn eskf_update = eskf_update_default;

/* 1 when this CPU can run the AVX2 build (always 0 where it is not compiled). */
static int eskf_cpu_has_avx2(void)
{
#if ESKF_HAS_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
#else
    return 0;
#endif
}

/* Selects the kernels: use_avx2 != 0 picks the AVX2 build where this CPU has it. Returns the variant now
 * in use: 1 AVX2, 0 baseline. */
static int eskf_kernels_select(int use_avx2)
{
#if ESKF_HAS_AVX2
    if (use_avx2 && eskf_cpu_has_avx2()) {
        eskf_predict = eskf_predict_avx2;
        eskf_update = eskf_update_avx2;
        return 1;
    }
#endif
    eskf_predict = eskf_predict_default;
    eskf_update = eskf_update_default;
    return 0;
}

#endif
