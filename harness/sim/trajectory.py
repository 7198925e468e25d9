"""True trajectories of a dozer and their clean IMU increments (ag2u section IV-A).

A trajectory is a list of *legs*; each leg goes from the previous pose to the
leg's end pose in ``duration_s``:

- position: straight line between the two positions (the paper's linear
  interpolation of the shortest straight path), ``p = p0 + s (p1 - p0)``;
- attitude: spherical linear interpolation between the two quaternions,
  ``q = slerp(q0, q1, s)`` - what ag2u Algorithm 1 approximates with a fixed
  increment quaternion, done exactly (constant rotation axis, the short arc);
- ``s(tau)``, tau = elapsed / duration in [0, 1]: ``"linear"`` (uniform steps, as in
  Algorithm 1; velocity jumps at leg ends) or ``"smooth"`` (minimum-jerk
  10 tau^3 - 15 tau^4 + 6 tau^5: the dozer starts and stops every leg, the
  acceleration stays finite). Both keep the path a straight line.

The trajectory is sampled on the IMU grid (e.g. 100 Hz) and the clean inertial
increments follow from it (ag2u Algorithm 2): a second-order difference of the
positions for the velocity increments and a first-order difference of the
attitudes for the angle increments, both in body axes. They are generated to be
exactly consistent with the strapdown equations (ag2u eqs. 4a-4c, see
onboard.estimators.ins), so the noise-less setting reconstructs the trajectory to
rounding:

    v[k] = (p[k] - p[k-1]) / dt                                  (inverse of eq. 4c)
    q_v[k] = D_n^b[k] (v[k] - v[k-1] - (0, 0, g dt))             (inverse of eq. 4b)
    q_t[k] = h(D_n^b[k] D_n^b[k-1]^T)                            (inverse of eq. 4a)

``gyro_increments="rotvec"`` instead gives the body rotation vector between
samples, what a physical gyro integrates (it differs from the Euler-angle form of
eq. 4a at second order).
"""
import math
import numbers

import numpy as np

from onboard.core.rotations import GIMBAL_COS, quat_from_euler
from onboard.core.units import G_MPS2, US_PER_S, hz_to_period_us, s_to_us

PROFILES = ("linear", "smooth")


class TrajectoryError(ValueError):
    """A leg list or sampling setting cannot make a trajectory."""


def _profile(tau, profile):
    if profile == "linear":
        return tau
    if profile == "smooth":
        return tau * tau * tau * (10.0 + tau * (-15.0 + 6.0 * tau))
    raise TrajectoryError("unknown profile %r (choose from %s)" % (profile, ", ".join(PROFILES)))


def slerp_array(q0, q1, s):
    """Slerp from q0 (s=0) to q1 (s=1) for an array of fractions s; returns (len(s), 4), w >= 0.

    Short arc (q1 is negated when q0.q1 < 0); normalised lerp where the two are
    nearly equal. Exact counterpart of ag2u Algorithm 1 (see module docstring).
    """
    q0 = np.asarray(q0, dtype=float)
    q1 = np.asarray(q1, dtype=float)
    s = np.asarray(s, dtype=float)[:, None]
    d = float(q0 @ q1)
    if d < 0.0:
        q1 = -q1
        d = -d
    if d > 0.9999995:
        q = q0 + s * (q1 - q0)
    else:
        theta = math.acos(min(1.0, d))
        st = math.sin(theta)
        q = (np.sin((1.0 - s) * theta) / st) * q0 + (np.sin(s * theta) / st) * q1
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0.0] *= -1.0
    return q


def quat_to_dcm_array(q):
    """R_body_to_ned (N, 3, 3) of unit quaternions (N, 4) (w, x, y, z)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    R = np.empty((len(q), 3, 3))
    R[:, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[:, 0, 1] = 2.0 * (x * y - w * z)
    R[:, 0, 2] = 2.0 * (x * z + w * y)
    R[:, 1, 0] = 2.0 * (x * y + w * z)
    R[:, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[:, 1, 2] = 2.0 * (y * z - w * x)
    R[:, 2, 0] = 2.0 * (x * z - w * y)
    R[:, 2, 1] = 2.0 * (y * z + w * x)
    R[:, 2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return R


def dcm_to_euler_array(R):
    """(roll, pitch, yaw) rad (N, 3) of R_body_to_ned (N, 3, 3), as rotations.dcm_to_euler.

    Near gimbal lock (|cos(pitch)| < rotations.GIMBAL_COS: pitch within 1e-4 rad of +-pi/2) the same branch
    as rotations.dcm_to_euler: pitch = atan2(-R[2, 0], cos(pitch)), roll from the last row (0 where
    cos(pitch) is at the rounding level, below 1e-15) and yaw from R's top-left block given that roll, so
    the angles rebuild R. Other rows keep the generic formulas (asin, atan2 of the last row and first
    column)."""
    pitch = np.arcsin(np.clip(-R[:, 2, 0], -1.0, 1.0))
    roll = np.arctan2(R[:, 2, 1], R[:, 2, 2])
    yaw = np.arctan2(R[:, 1, 0], R[:, 0, 0])
    cp = np.sqrt(R[:, 2, 1] * R[:, 2, 1] + R[:, 2, 2] * R[:, 2, 2])
    lock = cp < GIMBAL_COS
    if lock.any():
        L = R[lock]
        c = cp[lock]
        r = np.where(c > 1e-15, np.arctan2(L[:, 2, 1], L[:, 2, 2]), 0.0)
        sr = np.sin(r)
        cr = np.cos(r)
        roll[lock] = r
        pitch[lock] = np.arctan2(-L[:, 2, 0], c)
        # sin(roll) R[0, 2] - cos(roll) R[0, 1] = sin(yaw), cos(roll) R[1, 1] - sin(roll) R[1, 2] = cos(yaw)
        yaw[lock] = np.arctan2(sr * L[:, 0, 2] - cr * L[:, 0, 1], cr * L[:, 1, 1] - sr * L[:, 1, 2])
    return np.stack([roll, pitch, yaw], axis=1)


def rotvec_of_dcm_array(R):
    """Rotation vectors (N, 3) of rotation matrices (N, 3, 3) (angles well below pi)."""
    v = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=1)
    sin_a = 0.5 * np.linalg.norm(v, axis=1)
    cos_a = 0.5 * (np.trace(R, axis1=1, axis2=2) - 1.0)
    angle = np.arctan2(sin_a, cos_a)
    scale = np.where(sin_a > 1e-12, angle / np.where(sin_a > 1e-12, 2.0 * sin_a, 1.0), 0.5)
    return v * scale[:, None]


class Trajectory:
    """A trajectory sampled every ``dt_us`` (arrays indexed by sample k = 0..N-1).

    t_us (N,) int; pos_ned_m (N, 3); quat (N, 4) of R_body_to_ned; R_body_to_ned (N, 3, 3);
    euler_rad (N, 3); vel_ned_mps (N, 3) = (p[k] - p[k-1]) / dt with the vehicle at rest
    before k = 0 (the velocity the INS of eq. 4c carries).
    """

    def __init__(self, t_us, pos_ned_m, quat, dt_us):
        self.t_us = np.asarray(t_us, dtype=np.int64)
        self.pos_ned_m = np.asarray(pos_ned_m, dtype=float)
        self.quat = np.asarray(quat, dtype=float)
        self.dt_us = int(dt_us)
        self.R_body_to_ned = quat_to_dcm_array(self.quat)
        self.euler_rad = dcm_to_euler_array(self.R_body_to_ned)
        dt = self.dt_us / US_PER_S
        prev = np.vstack([self.pos_ned_m[:1], self.pos_ned_m[:-1]])
        self.vel_ned_mps = (self.pos_ned_m - prev) / dt

    def __len__(self):
        return len(self.t_us)

    @property
    def duration_s(self):
        return (self.t_us[-1] - self.t_us[0]) / US_PER_S

    def index_at(self, time_us):
        k = int(round((int(time_us) - int(self.t_us[0])) / self.dt_us))
        if not 0 <= k < len(self):
            raise TrajectoryError("time %d us is outside the trajectory" % time_us)
        return k

    def clean_increments(self, gravity_mps2=G_MPS2, gyro_increments="euler"):
        """Clean IMU increments for samples k = 1..N-1 (ag2u Algorithm 2), body FRD.

        Returns (dvel_body_mps (N-1, 3), dang_body_rad (N-1, 3)); row k-1 covers the
        interval (t[k-1], t[k]].
        """
        dt = self.dt_us / US_PER_S
        v = self.vel_ned_mps
        dv_ned = v[1:] - v[:-1]
        dv_ned[:, 2] -= gravity_mps2 * dt
        R = self.R_body_to_ned
        # q_v[k] = D_n^b[k] (v[k] - v[k-1] - g dt e_z), D_n^b = R^T
        dvel = np.einsum("nji,nj->ni", R[1:], dv_ned)
        # body-frame rotation between samples: R[k-1]^T R[k] = F(q_t)^T (eq. 4a with D = R^T)
        body = np.einsum("nji,njk->nik", R[:-1], R[1:])
        if gyro_increments == "euler":
            # q_t = h(D[k] D[k-1]^T) = Euler angles of R[k-1]^T R[k], so that F(q_t) D[k-1] = D[k]
            dang = dcm_to_euler_array(body)
        elif gyro_increments == "rotvec":
            dang = rotvec_of_dcm_array(body)
        else:
            raise TrajectoryError("gyro_increments must be 'euler' or 'rotvec', got %r" % (gyro_increments,))
        return dvel, dang


def _is_sequence(v):
    """A list, tuple or array (not a string or a table)."""
    return hasattr(v, "__len__") and hasattr(v, "__getitem__") and not isinstance(v, (str, bytes, dict))


def _leg_rows(legs):
    if not _is_sequence(legs):
        raise TrajectoryError("legs must be a list of [north_m, east_m, down_m, roll_deg, pitch_deg, yaw_deg, "
                              "duration_s] rows, got %r" % (legs,))
    rows = []
    for i, leg in enumerate(legs):
        if not _is_sequence(leg) or len(leg) != 7 \
                or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in leg):
            raise TrajectoryError("leg %d must be [north_m, east_m, down_m, roll_deg, pitch_deg, yaw_deg, "
                                  "duration_s] numbers, got %r" % (i, leg))
        row = [float(v) for v in leg]
        if not all(math.isfinite(v) for v in row):
            raise TrajectoryError("leg %d has non-finite values" % i)
        if row[6] < 0.0 or (i > 0 and row[6] <= 0.0):
            raise TrajectoryError("leg %d needs a positive duration_s" % i)
        rows.append(row)
    if len(rows) < 2:
        raise TrajectoryError("a trajectory needs a start pose and at least one leg")
    return rows


def leg_samples(legs, rate_hz):
    """(rows, dt_us, samples per leg) of ``legs`` (as :func:`generate` takes them) sampled at ``rate_hz``:
    the legs checked (TrajectoryError: malformed, non-finite, a duration not positive or not a whole multiple of
    the sample period ``dt_us``) without sampling them."""
    rows = _leg_rows(legs)
    dt_us = hz_to_period_us(rate_hz)
    counts = []
    for i in range(1, len(rows)):
        dur_us = s_to_us(rows[i][6])
        n = dur_us // dt_us
        if n == 0:
            raise TrajectoryError("leg %d duration %r s is shorter than the %d us sample period"
                                  % (i, rows[i][6], dt_us))
        if n * dt_us != dur_us:
            raise TrajectoryError("leg %d duration %r s is not a multiple of the %d us sample period"
                                  % (i, rows[i][6], dt_us))
        counts.append(n)
    return rows, dt_us, counts


def generate(legs, rate_hz, profile="smooth"):
    """Sample the legs at ``rate_hz``.

    legs: rows [north_m, east_m, down_m, roll_deg, pitch_deg, yaw_deg, duration_s]; the
    first row is the start pose (its duration ignored), each next row the pose reached
    at the end of its leg. Leg durations must be whole multiples of the sample period.
    """
    rows, dt_us, counts = leg_samples(legs, rate_hz)
    pos = [np.array(rows[0][:3])]
    quat = [np.array(quat_from_euler(*[math.radians(a) for a in rows[0][3:6]]))]
    t_list = [0]
    t0_us = 0
    for i in range(1, len(rows)):
        p0 = np.array(rows[i - 1][:3])
        p1 = np.array(rows[i][:3])
        q0 = np.array(quat_from_euler(*[math.radians(a) for a in rows[i - 1][3:6]]))
        q1 = np.array(quat_from_euler(*[math.radians(a) for a in rows[i][3:6]]))
        n = counts[i - 1]
        tau = np.arange(1, n + 1) / float(n)
        s = _profile(tau, profile)
        s[-1] = 1.0
        pos.append(p0[None, :] + s[:, None] * (p1 - p0)[None, :])
        quat.append(slerp_array(q0, q1, s))
        t_list.append(t0_us + np.arange(1, n + 1, dtype=np.int64) * dt_us)
        t0_us += n * dt_us
    t_us = np.concatenate([np.array([0], dtype=np.int64)] + [np.asarray(t) for t in t_list[1:]])
    return Trajectory(t_us, np.vstack(pos), np.vstack(quat), dt_us)


def dozer_legs(duration_s=120.0, push_m=3.0, push_s=8.0, reverse_s=6.0, turn_s=3.0, hold_s=2.0,
               headings_deg=(0.0, 35.0, 80.0, 140.0, 200.0, 255.0, 310.0, 20.0, 110.0)):
    """A dozer-like grading pattern: hold, then repeated (turn, push up a pile, reverse).

    Each push climbs a little (z up 5-10 cm) with some pitch and roll from the sand,
    each reverse comes back to the line's start level; the heading changes between
    cycles so that every axis of the IMU sees gravity and motion from several sides
    (what makes the biases observable). Stops when ``duration_s`` is reached.
    """
    legs = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, hold_s]]
    t = hold_s
    n, e = 0.0, 0.0
    i = 0
    while True:
        yaw = headings_deg[i % len(headings_deg)]
        if t + turn_s + push_s + reverse_s > duration_s + 1e-9:
            break
        legs.append([n, e, 0.0, 0.0, 0.0, yaw, turn_s])
        y = math.radians(yaw)
        climb = -0.05 - 0.05 * (i % 2)
        pitch = 3.0 + 2.0 * (i % 3)
        roll = (2.0 if i % 2 == 0 else -2.5)
        pn, pe = n + push_m * math.cos(y), e + push_m * math.sin(y)
        legs.append([pn, pe, climb, roll, pitch, yaw, push_s])
        # reverse most of the way, ending a little to the side for the next cut
        rn = n + 0.2 * push_m * math.cos(y) + 0.3 * math.cos(y + math.pi / 2)
        re = e + 0.2 * push_m * math.sin(y) + 0.3 * math.sin(y + math.pi / 2)
        legs.append([rn, re, 0.0, 0.0, 0.0, yaw, reverse_s])
        n, e = rn, re
        t += turn_s + push_s + reverse_s
        i += 1
    if t < duration_s - 1e-9:
        last = list(legs[-1])
        last[6] = round(duration_s - t, 6)
        legs.append(last)
    return legs
