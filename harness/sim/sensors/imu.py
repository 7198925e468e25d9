"""Simulated IMU: velocity and angle increments with the ag2u eq. 10 error model.

q_v^e = q_v^t + b_c*dt + a_rw*sqrt(dt)*n,  q_t^e = q_t^t + d_c*dt + g_rw*sqrt(dt)*n   (ag2u eq. 10)

with constant biases b_c, d_c drawn once per run from N(0, sigma) and unit normal n
per sample. Clean increments come from consecutive truth states of a planar vehicle:
dang = yaw change about body z; dvel = R_ned_to_body(mid) * (dv_ned - g_ned*dt),
i.e. integrated specific force (a level IMU at rest reads dvel_z = -g*dt).
"""
import math

from onboard.core.samples import ImuSample
from onboard.core.settings import NON_NEGATIVE, RATE_HZ, checked
from onboard.core.units import G_MPS2

DEFAULTS = {
    "rate_hz": 100,
    "accel_bias_sigma_mps2": 0.05,
    "gyro_bias_sigma_dps": 0.3,
    "accel_rw_mps_per_sqrt_s": 0.01,
    "gyro_rw_dps_per_sqrt_s": 0.02,
}
SETTING_RANGES = {"rate_hz": RATE_HZ, "accel_bias_sigma_mps2": NON_NEGATIVE, "gyro_bias_sigma_dps": NON_NEGATIVE,
                  "accel_rw_mps_per_sqrt_s": NON_NEGATIVE, "gyro_rw_dps_per_sqrt_s": NON_NEGATIVE}


class PlanarImu:
    """IMU on a planar vehicle exposing north_m/east_m/yaw_rad/vel_ned_mps()."""

    def __init__(self, vehicle, rng, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "PlanarImu")
        self.cfg = cfg
        self.vehicle = vehicle
        self.rng = rng
        self.accel_bias_mps2 = [float(v) for v in rng.normal(0.0, cfg["accel_bias_sigma_mps2"], 3)]
        self.gyro_bias_radps = [float(v) for v in rng.normal(0.0, math.radians(cfg["gyro_bias_sigma_dps"]), 3)]
        self._last = None

    def _truth(self):
        v = self.vehicle
        return (v.yaw_rad, v.vel_ned_mps())

    def sample(self, now_us):
        """ImuSample for the interval since the previous call (None on the first call). ``now_us`` (us) must
        be later than the previous call's (ValueError otherwise; the sensor's state and noise stream stay as
        they were). The yaw change is taken in (-pi, pi], so a vehicle that wraps its yaw reads the short
        way round."""
        last = self._last
        if last is not None and not now_us > last[0]:
            raise ValueError("PlanarImu: sample at %r us is not after the previous sample at %d us"
                             % (now_us, last[0]))
        truth = self._truth()
        self._last = (now_us, truth)
        if last is None:
            return None
        t0, (yaw0, vel0) = last
        yaw1, vel1 = truth
        dt_us = now_us - t0
        dt = dt_us * 1e-6
        dyaw = yaw1 - yaw0
        if dyaw > math.pi:
            dyaw -= 2.0 * math.pi
        elif dyaw <= -math.pi:
            dyaw += 2.0 * math.pi
        mid = yaw0 + 0.5 * dyaw
        c, s = math.cos(mid), math.sin(mid)
        dv_n = vel1[0] - vel0[0]
        dv_e = vel1[1] - vel0[1]
        clean_dvel = (c * dv_n + s * dv_e, -s * dv_n + c * dv_e, -G_MPS2 * dt)
        clean_dang = (0.0, 0.0, dyaw)
        cfg = self.cfg
        n_acc = self.rng.standard_normal(3)
        n_gyr = self.rng.standard_normal(3)
        arw = cfg["accel_rw_mps_per_sqrt_s"] * math.sqrt(dt)
        grw = math.radians(cfg["gyro_rw_dps_per_sqrt_s"]) * math.sqrt(dt)
        dvel = [clean_dvel[i] + self.accel_bias_mps2[i] * dt + arw * float(n_acc[i]) for i in range(3)]
        dang = [clean_dang[i] + self.gyro_bias_radps[i] * dt + grw * float(n_gyr[i]) for i in range(3)]
        return ImuSample(now_us, dt_us, dvel, dang)
