"""Strapdown inertial navigation from IMU increments (ag2u eqs. 4a-4c), pure Python.

Runs unchanged on MicroPython. Euler integration, Earth rotation neglected, gravity
+z in NED. The nominal state is

- ``pos_ned_m``        position, NED, m
- ``vel_ned_mps``      velocity, NED, m/s
- ``D_ned_to_body``    attitude as the paper's D_n^b (flat row-major 3x3; R_body_to_ned = D^T)
- ``accel_bias_mps2``  accelerometer bias estimate, body FRD, m/s^2 (fed back by the ESKF)
- ``gyro_bias_radps``  gyro bias estimate, body FRD, rad/s (fed back by the ESKF)

One step with increments q_v (``dvel_body_mps``) and q_t (``dang_body_rad``) over dt:

    q_t' = q_t - b_g * dt,  q_v' = q_v - b_a * dt                  (bias compensation)
    D_n^b[k] = F(q_t') * D_n^b[k-1]                                (ag2u eq. 4a)
    v[k] = v[k-1] + D_b^n[k] * q_v' + (0, 0, g * dt)               (ag2u eq. 4b)
    p[k] = p[k-1] + v[k] * dt                                      (ag2u eq. 4c)

with F = :func:`onboard.core.rotations.e2d` (ag2u eq. 3), i.e. the angle increment is
read as (roll, pitch, yaw) of a small rotation, exactly as in the paper. A physical
gyro's increment is a rotation vector; the two agree to first order (the difference
is a second-order coning-like term, absorbed by the gyro-bias state under noise).
The harness's clean IMU increments are generated consistently with this operator so
that the noise-less setting reconstructs the trajectory exactly.
"""
from onboard.core.rotations import d2e, dcm_orthonormalize, e2d
from onboard.core.units import G_MPS2


class Strapdown:
    """Nominal INS state and its Euler integration (ag2u eqs. 4a-4c)."""

    def __init__(self, pos_ned_m=(0.0, 0.0, 0.0), vel_ned_mps=(0.0, 0.0, 0.0),
                 euler_rad=(0.0, 0.0, 0.0), gravity_mps2=G_MPS2):
        self.gravity_mps2 = float(gravity_mps2)
        self.reset(pos_ned_m, vel_ned_mps, euler_rad)

    def reset(self, pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2=(0.0, 0.0, 0.0),
              gyro_bias_radps=(0.0, 0.0, 0.0)):
        """Set the initial conditions (position m, velocity m/s, Z-Y-X Euler rad, biases)."""
        self.pos_ned_m = [float(v) for v in pos_ned_m]
        self.vel_ned_mps = [float(v) for v in vel_ned_mps]
        self.D_ned_to_body = e2d([float(v) for v in euler_rad])
        self.accel_bias_mps2 = [float(v) for v in accel_bias_mps2]
        self.gyro_bias_radps = [float(v) for v in gyro_bias_radps]

    def step(self, dt_s, dvel_body_mps, dang_body_rad):
        """Integrate one IMU sample; returns the compensated velocity increment in NED (m/s).

        The returned D_b^n[k] * q_v' is what the error-state filter linearises about
        (the specific-force term of its system matrix).
        """
        ba = self.accel_bias_mps2
        bg = self.gyro_bias_radps
        dang = [dang_body_rad[0] - bg[0] * dt_s,
                dang_body_rad[1] - bg[1] * dt_s,
                dang_body_rad[2] - bg[2] * dt_s]
        dvx = dvel_body_mps[0] - ba[0] * dt_s
        dvy = dvel_body_mps[1] - ba[1] * dt_s
        dvz = dvel_body_mps[2] - ba[2] * dt_s
        # ag2u eq. 4a: D_n^b[k] = F(q_t) * D_n^b[k-1]
        f = e2d(dang)
        d = self.D_ned_to_body
        nd = [0.0] * 9
        for i in range(3):
            f0 = f[i * 3]
            f1 = f[i * 3 + 1]
            f2 = f[i * 3 + 2]
            for j in range(3):
                nd[i * 3 + j] = f0 * d[j] + f1 * d[3 + j] + f2 * d[6 + j]
        self.D_ned_to_body = nd
        # ag2u eq. 4b: v[k] = v[k-1] + D_b^n[k] q_v + (0, 0, g dt), with D_b^n = (D_n^b)^T
        dv_n = nd[0] * dvx + nd[3] * dvy + nd[6] * dvz
        dv_e = nd[1] * dvx + nd[4] * dvy + nd[7] * dvz
        dv_d = nd[2] * dvx + nd[5] * dvy + nd[8] * dvz
        v = self.vel_ned_mps
        v[0] = v[0] + dv_n
        v[1] = v[1] + dv_e
        v[2] = v[2] + (dv_d + self.gravity_mps2 * dt_s)
        # ag2u eq. 4c: p[k] = p[k-1] + v[k] dt
        p = self.pos_ned_m
        p[0] = p[0] + v[0] * dt_s
        p[1] = p[1] + v[1] * dt_s
        p[2] = p[2] + v[2] * dt_s
        return [dv_n, dv_e, dv_d]

    def correct_attitude(self, dpsi_ned_rad):
        """Apply a small NED-frame attitude correction: D <- D * F(dpsi), then re-orthonormalise.

        With R_body_to_ned = D^T this is R <- F(dpsi)^T R, the left (navigation-frame)
        rotation by dpsi, the inverse of the residual of ag2u eq. 6 as used here.
        """
        f = e2d(dpsi_ned_rad)
        d = self.D_ned_to_body
        nd = [0.0] * 9
        for i in range(3):
            d0 = d[i * 3]
            d1 = d[i * 3 + 1]
            d2 = d[i * 3 + 2]
            for j in range(3):
                nd[i * 3 + j] = d0 * f[j] + d1 * f[3 + j] + d2 * f[6 + j]
        self.D_ned_to_body = dcm_orthonormalize(nd)

    def euler_rad(self):
        """(roll, pitch, yaw) in rad from D_n^b (ag2u eq. 7, h)."""
        return d2e(self.D_ned_to_body)

    def R_body_to_ned(self):
        d = self.D_ned_to_body
        return [d[0], d[3], d[6], d[1], d[4], d[7], d[2], d[5], d[8]]
