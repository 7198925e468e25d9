"""Pose samples around the filter's estimate for training under uncertainty (ag2u eq. 1), pure Python.

    {x_k}_{k=0}^{K-1} ~ N(x_est, Sigma)                                  (ag2u eq. 1)

x_est is the estimated pose (NED position m, Z-Y-X Euler attitude rad) and Sigma the
ESKF's 6x6 covariance of [dp_ned_m, dpsi_ned_rad] (``Eskf.pose_covariance()``, or
the full 15x15 ``Eskf.covariance()``, whose pose block is used). Position samples
are x_est + dp; the attitude error is a navigation-frame rotation, so attitude
samples are composed as rotations, h(F(Psi_est) F(dpsi)) (as in ag2u eq. 12),
never by adding angles - which keeps yaw correct across +-pi. Runs on MicroPython.
"""
import math

from onboard.core.rotations import d2e, e2d

POSE_DIM = 6
# Slots of a sampled pose [north_m, east_m, down_m, roll_rad, pitch_rad, yaw_rad] (and of x_est).
SAMPLE_NORTH = 0
SAMPLE_EAST = 1
SAMPLE_DOWN = 2
SAMPLE_ROLL = 3
SAMPLE_PITCH = 4
SAMPLE_YAW = 5


class SamplingError(ValueError):
    """Malformed estimate or covariance (wrong size, non-finite, not symmetric PSD)."""


def _flat(values):
    out = []
    for v in values:
        try:
            n = len(v)
        except TypeError:
            out.append(float(v))
            continue
        for j in range(n):
            out.append(float(v[j]))
    return out


def _pose_vector(x_est):
    if hasattr(x_est, "pos_ned_m") and hasattr(x_est, "euler_rad"):
        x = [float(v) for v in x_est.pos_ned_m] + [float(v) for v in x_est.euler_rad]
    else:
        x = _flat(x_est)
    if len(x) != POSE_DIM:
        raise SamplingError("x_est must be 6 numbers (pos_ned_m, euler_rad), got %d" % len(x))
    for v in x:
        if v != v or v in (float("inf"), float("-inf")):
            raise SamplingError("x_est has non-finite values")
    return x


def _pose_block(cov):
    c = _flat(cov)
    if len(c) == 225:
        c = [c[i * 15 + j] for i in range(POSE_DIM) for j in range(POSE_DIM)]
    elif len(c) != 36:
        raise SamplingError("cov must be 6x6 or the ESKF's 15x15, got %d entries" % len(c))
    scale = 0.0
    for i in range(POSE_DIM):
        d = c[i * POSE_DIM + i]
        if d != d or d < 0.0 or d == float("inf"):
            raise SamplingError("cov diagonal must be finite and >= 0")
        if d > scale:
            scale = d
    for i in range(POSE_DIM):
        for j in range(i + 1, POSE_DIM):
            a = c[i * POSE_DIM + j]
            b = c[j * POSE_DIM + i]
            if a != a or b != b or abs(a - b) > 1e-9 * (scale + 1e-300):
                raise SamplingError("cov must be symmetric")
    return c, scale


def psd_factor(cov, n):
    """Lower-triangular L with L L^T = cov for a symmetric positive *semi*-definite n x n matrix.

    Pivots below 1e-12 of the largest diagonal are treated as zero (that direction
    has no spread); a clearly negative pivot, or a clearly nonzero covariance with such a
    zero-spread direction (|t| above sqrt((pivot + 1e-9 scale) scale): no PSD matrix has it),
    raises SamplingError.
    """
    scale = 0.0
    for i in range(n):
        if cov[i * n + i] > scale:
            scale = cov[i * n + i]
    tol = 1e-12 * scale
    low = [0.0] * (n * n)
    for j in range(n):
        s = cov[j * n + j]
        for k in range(j):
            s -= low[j * n + k] * low[j * n + k]
        if s < -1e-9 * (scale + 1e-300):
            raise SamplingError("cov is not positive semi-definite")
        if s <= tol:
            # a zero-spread direction: PSD needs |cov_ij - sum_k L_ik L_jk| <= sqrt(s * cov_ii) for every i > j
            lim2 = (max(s, 0.0) + 1e-9 * scale) * scale
            for i in range(j + 1, n):
                t = cov[i * n + j]
                for k in range(j):
                    t -= low[i * n + k] * low[j * n + k]
                if t * t > lim2:
                    raise SamplingError("cov is not positive semi-definite")
            continue
        d = math.sqrt(s)
        low[j * n + j] = d
        for i in range(j + 1, n):
            t = cov[i * n + j]
            for k in range(j):
                t -= low[i * n + k] * low[j * n + k]
            low[i * n + j] = t / d
    return low


def _normal_source(rng):
    if hasattr(rng, "standard_normal"):        # numpy Generator
        return lambda: float(rng.standard_normal())
    if hasattr(rng, "gauss"):                  # random.Random (CPython)
        return lambda: rng.gauss(0.0, 1.0)
    if hasattr(rng, "random"):                 # MicroPython's random: Box-Muller
        def draw():
            u1 = rng.random()
            while u1 <= 0.0:
                u1 = rng.random()
            return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * rng.random())
        return draw
    raise SamplingError("rng needs standard_normal(), gauss() or random()")


def sample_poses(x_est, cov, k, rng):
    """K poses drawn from N(x_est, Sigma) (ag2u eq. 1).

    x_est: 6 numbers [north_m, east_m, down_m, roll_rad, pitch_rad, yaw_rad] or a NavState /
    PoseSample. cov: 6x6 covariance of [dp_ned_m, dpsi_ned_rad] (flat, nested, or a 2-D array),
    or the ESKF's 15x15. rng: numpy Generator, random.Random, or anything with random().
    Returns a list of k lists [north_m, east_m, down_m, roll_rad, pitch_rad, yaw_rad].
    """
    x = _pose_vector(x_est)
    c, _scale = _pose_block(cov)
    k = int(k)
    if k < 0:
        raise SamplingError("k must be >= 0")
    low = psd_factor(c, POSE_DIM)
    normal = _normal_source(rng)
    d_est = e2d(x[3:6])
    out = []
    for _ in range(k):
        z = [normal() for _i in range(POSE_DIM)]
        e = [0.0] * POSE_DIM
        for i in range(POSE_DIM):
            s = 0.0
            for j in range(i + 1):
                s += low[i * POSE_DIM + j] * z[j]
            e[i] = s
        f = e2d(e[3:6])
        d = [0.0] * 9
        for i in range(3):
            for j in range(3):
                d[i * 3 + j] = d_est[i * 3] * f[j] + d_est[i * 3 + 1] * f[3 + j] + d_est[i * 3 + 2] * f[6 + j]
        att = d2e(d)                                         # h(F(Psi_est) F(dpsi))
        out.append([x[0] + e[0], x[1] + e[1], x[2] + e[2], att[0], att[1], att[2]])
    return out
