"""Seeded sensor noise and biases of one simulated Crazyflie's logged estimates.

A real Crazyflie 2.x never logs a perfectly flat estimate: on the ground its ``stabilizer.roll`` jitters by
hundredths of a degree around the IMU's mounting tilt, ``acc.z`` reads about 1 g with milli-g noise and
``gyro.*`` show a small residual bias under ~0.1 deg/s of noise. This module adds that to the values the
log service sends; the simulated flight itself (``vehicle``, ``commander``) keeps the noise-free estimate,
so the closed loop's own millimetre jitter is not modelled.

Per drone, drawn once (the first row of its stream): the IMU mounting tilt ``mount_roll_deg`` /
``mount_pitch_deg`` (N(0, attitude_bias_deg); the estimator's level, so it shows in the logged attitude and
in ``acc.x``/``acc.y``), the gyro's residual bias per axis (N(0, gyro_bias_degps); integrated, the z bias is
the yaw estimate's drift) and the accelerometer's bias per axis (N(0, acc_bias_g)). Per log instant, one
row of ``N_PER_INSTANT`` standard normal draws scales into white noise of every logged quantity, whichever
are switched on, so switching a group off leaves the other group's numbers unchanged.

Two groups, each switched by a setting:

* ``attitude_imu`` (on by default): stabilizer / stateEstimate roll, pitch, yaw and the quaternion,
  ``gyro.*`` (deg/s), ``acc.*`` (g), ``stateEstimate.a*`` (g) and ``stateEstimateZ.rateYaw``;
* ``position_velocity_vbat`` (off by default in the library, on in ``python -m harness crazyflies``):
  position and velocity of stateEstimate / stateEstimateZ / kalman and ``pm.vbat``.

Default magnitudes are those of a Crazyflie 2.1's BMI088 IMU and Loco-positioned Kalman estimate at rest,
rounded (gyro noise density about 0.014 deg/s/sqrt(Hz) over the firmware's ~100 Hz gyro filter; accelerometer
about 175 ug/sqrt(Hz) over its ~30 Hz filter; attitude jitter of order 0.01-0.1 deg): assumptions of this
simulator, not measurements of one drone. Motor vibration, much larger on a flying drone, is not modelled.
"""
import math

from onboard.core.settings import BOOLEAN, NON_NEGATIVE

DEFAULTS = {
    "attitude_imu": True,            # noise + biases on attitude, gyro.*, acc.*, stateEstimate.a*
    "position_velocity_vbat": False,  # noise on position, velocity (stateEstimate, kalman) and pm.vbat
    "attitude_noise_deg": 0.02,      # roll / pitch jitter per log instant (1 sigma)
    "attitude_bias_deg": 0.3,        # IMU mounting tilt per drone, roll and pitch (1 sigma)
    "yaw_noise_deg": 0.005,          # yaw jitter per log instant (1 sigma)
    "gyro_noise_degps": 0.15,        # gyro.* white noise (1 sigma)
    "gyro_bias_degps": 0.01,         # residual gyro bias per axis after the startup calibration (1 sigma)
    "acc_noise_g": 0.002,            # acc.* and stateEstimate.a* white noise (1 sigma)
    "acc_bias_g": 0.005,             # accelerometer bias per axis (1 sigma)
    "position_noise_m": 0.01,        # stateEstimate.x/y/z jitter (1 sigma)
    "velocity_noise_mps": 0.01,      # stateEstimate.vx/vy/vz jitter (1 sigma)
    "vbat_noise_v": 0.005,           # pm.vbat jitter (1 sigma)
}
SETTING_RANGES = {key: (BOOLEAN if isinstance(value, bool) else NON_NEGATIVE) for key, value in DEFAULTS.items()}

# slots of one instant's row of standard normal draws
ROLL, PITCH, YAW, GYRO, ACC, POS, VEL, VBAT = 0, 1, 2, 3, 6, 9, 12, 15
N_PER_INSTANT = 16
# slots of the per-drone row
N_PER_DRONE = 8                      # mount roll, mount pitch, gyro bias x y z, acc bias x y z
BATCH_INSTANTS = 256                 # rows drawn at once (the same numbers as one row at a time)


class SensorNoise:
    """Noise of one drone. ``rng``: a numpy Generator (the fleet's ``crazyflie.sensors.<i>`` stream);
    ``cfg``: DEFAULTS-shaped settings (checked by the caller). The yaw drift counts from the first
    logged instant (``start_us``), where the startup gyro calibration is taken to end."""

    def __init__(self, cfg, rng):
        self.cfg = cfg
        self.rng = rng
        self.start_us = None
        drone = rng.standard_normal(N_PER_DRONE).tolist()
        self.mount_roll_deg = cfg["attitude_bias_deg"] * drone[0]
        self.mount_pitch_deg = cfg["attitude_bias_deg"] * drone[1]
        self.gyro_bias_degps = [cfg["gyro_bias_degps"] * d for d in drone[2:5]]
        self.acc_bias_g = [cfg["acc_bias_g"] * d for d in drone[5:8]]
        self._rows = []
        self._time_us = None
        self._row = None

    @property
    def imu_on(self):
        return self.cfg["attitude_imu"]

    @property
    def estimate_on(self):
        return self.cfg["position_velocity_vbat"]

    def at(self, time_us):
        """The row of standard normal draws of the log instant ``time_us`` (a new row per instant)."""
        if time_us != self._time_us:
            if self.start_us is None:
                self.start_us = time_us
            if not self._rows:
                self._rows = self.rng.standard_normal((BATCH_INSTANTS, N_PER_INSTANT)).tolist()[::-1]
            self._row = self._rows.pop()
            self._time_us = time_us
        return self._row

    # ---------------------------------------------------------------- the logged quantities
    def attitude_deg(self, time_us, roll_deg, pitch_deg, yaw_deg):
        """(roll, pitch, yaw) in degrees as logged: + mounting tilt + jitter; yaw + the integrated gyro z
        bias. pitch is the firmware's legacy pitch (positive nose up), yaw counter-clockwise."""
        if not self.imu_on:
            return roll_deg, pitch_deg, yaw_deg
        n = self.at(time_us)
        c = self.cfg
        drift_deg = self.gyro_bias_degps[2] * max(0, time_us - self.start_us) * 1e-6     # after at(): set
        return (roll_deg + self.mount_roll_deg + c["attitude_noise_deg"] * n[ROLL],
                pitch_deg + self.mount_pitch_deg + c["attitude_noise_deg"] * n[PITCH],
                yaw_deg + drift_deg + c["yaw_noise_deg"] * n[YAW])

    def gyro_degps(self, time_us, rates_degps):
        """gyro.x/y/z (deg/s, body x forward, y left, z up) from the true body rates."""
        if not self.imu_on:
            return tuple(rates_degps)
        n = self.at(time_us)
        s = self.cfg["gyro_noise_degps"]
        return tuple(rates_degps[k] + self.gyro_bias_degps[k] + s * n[GYRO + k] for k in range(3))

    def acc_g(self, time_us, specific_force_g):
        """acc.x/y/z (g, body) from the specific force along the thrust axis (``specific_force_g``: 1 at
        rest or in a level hover): seen through the mounting tilt, + bias + noise."""
        if not self.imu_on:
            return 0.0, 0.0, specific_force_g
        n = self.at(time_us)
        r = math.radians(self.mount_roll_deg)
        p = math.radians(self.mount_pitch_deg)
        f = specific_force_g
        clean = (-math.sin(p) * f, math.sin(r) * math.cos(p) * f, math.cos(r) * math.cos(p) * f)
        s = self.cfg["acc_noise_g"]
        return tuple(clean[k] + self.acc_bias_g[k] + s * n[ACC + k] for k in range(3))

    def world_acc_g(self, time_us, acc_g):
        """stateEstimate.ax/ay/az (g, world, gravity removed): + noise."""
        if not self.imu_on:
            return tuple(acc_g)
        n = self.at(time_us)
        s = self.cfg["acc_noise_g"]
        return tuple(acc_g[k] + s * n[ACC + k] for k in range(3))

    def position_m(self, time_us, xyz_m):
        if not self.estimate_on:
            return tuple(xyz_m)
        n = self.at(time_us)
        s = self.cfg["position_noise_m"]
        return tuple(xyz_m[k] + s * n[POS + k] for k in range(3))

    def velocity_mps(self, time_us, v_mps):
        if not self.estimate_on:
            return tuple(v_mps)
        n = self.at(time_us)
        s = self.cfg["velocity_noise_mps"]
        return tuple(v_mps[k] + s * n[VEL + k] for k in range(3))

    def vbat_v(self, time_us, v):
        if not self.estimate_on:
            return v
        return v + self.cfg["vbat_noise_v"] * self.at(time_us)[VBAT]


def quaternion(roll_deg, pitch_legacy_deg, yaw_deg):
    """(qw, qx, qy, qz) of the Crazyflie's attitude (Z-Y-X: yaw CCW about z up, pitch about y left with the
    legacy nose-up sign flipped, roll about x forward)."""
    r = math.radians(roll_deg) * 0.5
    p = -math.radians(pitch_legacy_deg) * 0.5
    y = math.radians(yaw_deg) * 0.5
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy)
