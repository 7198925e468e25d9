"""Rotations: Euler angles <-> direction-cosine matrices <-> quaternions.

Conventions (CONVENTIONS.md):
- Euler angles are ``(roll_rad, pitch_rad, yaw_rad)`` of the aerospace Z-Y-X
  sequence: ``R_body_to_ned = Rz(yaw) * Ry(pitch) * Rx(roll)``.
- A DCM is a flat row-major list of 9 floats.
- Quaternions are ``(w, x, y, z)``, Hamilton product, and represent
  ``R_body_to_ned`` (a body vector v maps to ``q * v * conj(q)`` in NED).

The ag2u paper's operators: ``e2d`` is F(.) of ag2u eq. 3 and returns the
navigation-to-body matrix D_n^b used in eq. 4a; ``d2e`` is h(.) of ag2u eq. 7,
its inverse.
"""
import math

from onboard.core.angles import wrap_pi


class RotationError(ValueError):
    """A rotation input cannot be used (zero-norm quaternion, wrong length)."""


# ---------------------------------------------------------------- Euler <-> DCM

def euler_to_dcm(roll_rad, pitch_rad, yaw_rad):
    """R_body_to_ned (flat 3x3) from Z-Y-X Euler angles in radians."""
    cr = math.cos(roll_rad)
    sr = math.sin(roll_rad)
    cp = math.cos(pitch_rad)
    sp = math.sin(pitch_rad)
    cy = math.cos(yaw_rad)
    sy = math.sin(yaw_rad)
    return [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
            sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
            -sp, cp * sr, cp * cr]


# |cos(pitch)| below which dcm_to_euler treats the attitude as near gimbal lock (pitch within 1e-4 rad of
# +-pi/2): there the rounding of the last row's roll terms (r[7], r[8] ~ cos(pitch)) swamps roll and yaw
GIMBAL_COS = 1e-4


def dcm_to_euler(R_body_to_ned):
    """(roll_rad, pitch_rad, yaw_rad) from R_body_to_ned; pitch clamped to [-pi/2, pi/2].

    Near gimbal lock (pitch within 1e-4 rad of +-pi/2) roll and yaw turn about nearly one axis and only
    their sum or difference is fixed by R: roll is taken from the last row (0 where cos(pitch) is at the
    rounding level) and yaw from R's top-left block given that roll, so the angles rebuild R."""
    r = R_body_to_ned
    cp = math.sqrt(r[7] * r[7] + r[8] * r[8])
    if cp < GIMBAL_COS:
        roll = math.atan2(r[7], r[8]) if cp > 1e-15 else 0.0
        sr = math.sin(roll)
        cr = math.cos(roll)
        pitch = math.atan2(-r[6], cp)
        # sin(roll) * r[2] - cos(roll) * r[1] = sin(yaw), cos(roll) * r[4] - sin(roll) * r[5] = cos(yaw)
        yaw = math.atan2(sr * r[2] - cr * r[1], cr * r[4] - sr * r[5])
        return (roll, pitch, yaw)
    s = -r[6]
    if s > 1.0:
        s = 1.0
    elif s < -1.0:
        s = -1.0
    pitch = math.asin(s)
    roll = math.atan2(r[7], r[8])
    yaw = math.atan2(r[3], r[0])
    return (roll, pitch, yaw)


def e2d(euler_rad):
    """ag2u eq. 3, F(.): Euler angles (roll, pitch, yaw) -> D = R_ned_to_body (flat 3x3).

    Applied to a gyro angle increment it is the attitude update matrix of eq. 4a:
    D_n^b[k] = F(q_t[k]) * D_n^b[k-1].
    """
    r = euler_to_dcm(euler_rad[0], euler_rad[1], euler_rad[2])
    return [r[0], r[3], r[6],
            r[1], r[4], r[7],
            r[2], r[5], r[8]]


def d2e(D_ned_to_body):
    """ag2u eq. 7, h(.): D = R_ned_to_body (flat 3x3) -> (roll, pitch, yaw) radians."""
    d = D_ned_to_body
    return dcm_to_euler([d[0], d[3], d[6],
                         d[1], d[4], d[7],
                         d[2], d[5], d[8]])


def dcm_transpose(R):
    return [R[0], R[3], R[6], R[1], R[4], R[7], R[2], R[5], R[8]]


def dcm_mul(a, b):
    """Product of two flat 3x3 matrices."""
    out = [0.0] * 9
    for i in range(3):
        for j in range(3):
            out[i * 3 + j] = (a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j]
                              + a[i * 3 + 2] * b[6 + j])
    return out


def dcm_apply(R, v):
    """R * v for a flat 3x3 matrix and a 3-vector."""
    return [R[0] * v[0] + R[1] * v[1] + R[2] * v[2],
            R[3] * v[0] + R[4] * v[1] + R[5] * v[2],
            R[6] * v[0] + R[7] * v[1] + R[8] * v[2]]


def dcm_orthonormalize(R):
    """Nearest rotation by one Gram-Schmidt pass on the rows (keeps drift bounded).

    RotationError when the first row is zero (or its squares underflow) or the second row is zero or
    parallel to the first, or either holds a NaN or infinity (or its squares overflow): no rotation is near
    such a matrix."""
    r0 = [R[0], R[1], R[2]]
    r1 = [R[3], R[4], R[5]]
    n0 = math.sqrt(r0[0] * r0[0] + r0[1] * r0[1] + r0[2] * r0[2])
    if n0 == 0.0:
        raise RotationError("cannot orthonormalise the matrix %r: its first row is zero" % (list(R),))
    if not n0 - n0 == 0.0 or not (r1[0] - r1[0]) + (r1[1] - r1[1]) + (r1[2] - r1[2]) == 0.0:
        raise RotationError("cannot orthonormalise the matrix %r: its first two rows are not finite" % (list(R),))
    r0 = [r0[0] / n0, r0[1] / n0, r0[2] / n0]
    d = r0[0] * r1[0] + r0[1] * r1[1] + r0[2] * r1[2]
    r1 = [r1[0] - d * r0[0], r1[1] - d * r0[1], r1[2] - d * r0[2]]
    n1 = math.sqrt(r1[0] * r1[0] + r1[1] * r1[1] + r1[2] * r1[2])
    if n1 == 0.0:
        raise RotationError("cannot orthonormalise the matrix %r: its second row is zero or parallel to the first"
                            % (list(R),))
    r1 = [r1[0] / n1, r1[1] / n1, r1[2] / n1]
    r2 = [r0[1] * r1[2] - r0[2] * r1[1],
          r0[2] * r1[0] - r0[0] * r1[2],
          r0[0] * r1[1] - r0[1] * r1[0]]
    return r0 + r1 + r2


# ---------------------------------------------------------------- quaternions

def quat_mul(p, q):
    """Hamilton product p * q of (w, x, y, z) quaternions."""
    pw, px, py, pz = p[0], p[1], p[2], p[3]
    qw, qx, qy, qz = q[0], q[1], q[2], q[3]
    return (pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw)


def quat_conj(q):
    return (q[0], -q[1], -q[2], -q[3])


def quat_norm(q):
    return math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])


def quat_normalize(q):
    """Unit quaternion with non-negative w (a canonical sign); RotationError for a zero, NaN or infinite one."""
    n = quat_norm(q)
    if not 1e-150 < n < 1e150:
        # zero, NaN or infinite, or squares that underflow or overflow (1e-200, 1e200): scaled by the largest
        # entry first
        m = max(abs(q[0]), abs(q[1]), abs(q[2]), abs(q[3]))
        if not 0.0 < m < float("inf") or not n == n:
            raise RotationError("cannot normalise the quaternion %r (zero, NaN or infinite)" % (tuple(q),))
        q = (q[0] / m, q[1] / m, q[2] / m, q[3] / m)
        n = quat_norm(q)
    if q[0] < 0.0:
        n = -n
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def quat_from_euler(roll_rad, pitch_rad, yaw_rad):
    """Quaternion of R_body_to_ned for Z-Y-X Euler angles."""
    cr = math.cos(0.5 * roll_rad)
    sr = math.sin(0.5 * roll_rad)
    cp = math.cos(0.5 * pitch_rad)
    sp = math.sin(0.5 * pitch_rad)
    cy = math.cos(0.5 * yaw_rad)
    sy = math.sin(0.5 * yaw_rad)
    return (cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy)


def quat_to_dcm(q):
    """R_body_to_ned (flat 3x3) from a unit quaternion."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    return [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
            2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
            2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)]


def dcm_to_quat(R):
    """Unit quaternion (w >= 0) from R_body_to_ned (Shepperd's method, stable everywhere)."""
    tr = R[0] + R[4] + R[8]
    if tr > 0.0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = (0.25 * s, (R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s)
    elif R[0] > R[4] and R[0] > R[8]:
        s = 2.0 * math.sqrt(1.0 + R[0] - R[4] - R[8])
        q = ((R[7] - R[5]) / s, 0.25 * s, (R[1] + R[3]) / s, (R[2] + R[6]) / s)
    elif R[4] > R[8]:
        s = 2.0 * math.sqrt(1.0 + R[4] - R[0] - R[8])
        q = ((R[2] - R[6]) / s, (R[1] + R[3]) / s, 0.25 * s, (R[5] + R[7]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + R[8] - R[0] - R[4])
        q = ((R[3] - R[1]) / s, (R[2] + R[6]) / s, (R[5] + R[7]) / s, 0.25 * s)
    return quat_normalize(q)


def quat_to_euler(q):
    """(roll_rad, pitch_rad, yaw_rad) of a unit quaternion."""
    return dcm_to_euler(quat_to_dcm(q))


def quat_rotate(q, v):
    """Rotate a 3-vector by the unit quaternion q (body -> NED for q_body_to_ned)."""
    return dcm_apply(quat_to_dcm(q), v)


def quat_from_rotvec(rotvec_rad):
    """Quaternion of a rotation vector (axis * angle, radians); RotationError for a NaN or infinite one (or one
    whose angle overflows)."""
    try:
        angle = math.sqrt(rotvec_rad[0] ** 2 + rotvec_rad[1] ** 2 + rotvec_rad[2] ** 2)
    except OverflowError:           # CPython's float ** raises where the square overflows
        angle = float("inf")
    if not angle - angle == 0.0:
        raise RotationError("rotation vector %r is not finite (or its angle overflows)" % (tuple(rotvec_rad),))
    if angle < 1e-12:
        # second-order series keeps small rotations exact to rounding
        return quat_normalize((1.0, 0.5 * rotvec_rad[0], 0.5 * rotvec_rad[1],
                               0.5 * rotvec_rad[2]))
    s = math.sin(0.5 * angle) / angle
    return (math.cos(0.5 * angle), rotvec_rad[0] * s, rotvec_rad[1] * s, rotvec_rad[2] * s)


def quat_to_rotvec(q):
    """Rotation vector (radians) of a unit quaternion, angle in [0, pi]."""
    qn = quat_normalize(q)
    vn = math.sqrt(qn[1] ** 2 + qn[2] ** 2 + qn[3] ** 2)
    if vn < 1e-12:
        return [2.0 * qn[1], 2.0 * qn[2], 2.0 * qn[3]]
    angle = 2.0 * math.atan2(vn, qn[0])
    return [qn[1] * angle / vn, qn[2] * angle / vn, qn[3] * angle / vn]


def quat_slerp(q0, q1, t):
    """Spherical linear interpolation from q0 (t=0) to q1 (t=1) along the short arc.

    This is what ag2u Algorithm 1 approximates with a fixed increment quaternion.
    """
    d = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3]
    if d < 0.0:
        q1 = (-q1[0], -q1[1], -q1[2], -q1[3])
        d = -d
    if d > 0.9999995:
        # nearly identical: normalised lerp avoids dividing by sin(~0)
        return quat_normalize((q0[0] + t * (q1[0] - q0[0]), q0[1] + t * (q1[1] - q0[1]),
                               q0[2] + t * (q1[2] - q0[2]), q0[3] + t * (q1[3] - q0[3])))
    theta = math.acos(d)
    s = math.sin(theta)
    a = math.sin((1.0 - t) * theta) / s
    b = math.sin(t * theta) / s
    return quat_normalize((a * q0[0] + b * q1[0], a * q0[1] + b * q1[1],
                           a * q0[2] + b * q1[2], a * q0[3] + b * q1[3]))


def quat_angle_between(q0, q1):
    """Rotation angle (radians, [0, pi]) between two unit quaternions."""
    d = abs(q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3])
    if d > 1.0:
        d = 1.0
    return 2.0 * math.acos(d)


def yaw_of(R_body_to_ned):
    """Heading (yaw, radians in [-pi, pi)) of a body-to-NED DCM."""
    return wrap_pi(math.atan2(R_body_to_ned[3], R_body_to_ned[0]))
