"""The vehicle behind one simulated Crazyflie: a ``harness.sim.vehicles.drone2d.Drone2D`` seen the way
the firmware's estimator, sensors and power management see it.

Frames: the Crazyflie world frame is x forward (= north), y left (= west), z up, yaw counter-clockwise
in degrees; the Drone2D is NED with height up. Conversion between the two happens here and in
``commander`` only. The state estimate is the ground truth plus ``est_offset_m`` (CF frame, m), which a
write of ``kalman.resetEstimation`` sets so that the estimate restarts at ``kalman.initialX/Y/Z`` (the
firmware's Kalman reset). ``ranging(time_us)`` gives up to ``N_RANGES`` UWB distances (m, None: no
measurement), read once per log instant for the ranging log group. The logged values pass through
``noise`` (a ``sensor_noise.SensorNoise``: seeded sensor noise and biases, on the log only; None: exact).
"""
import math

from harness.sim.crazyflie.sensor_noise import quaternion
from onboard.core.units import G_MPS2

N_RANGES = 8                            # ranging.distance0..7
BATTERY_EMPTY_V = 3.0                   # pm.batteryLevel: 0 % here ...
BATTERY_FULL_V = 4.2                    # ... and 100 % here, linear in between
PM_STATE_LOW_POWER = 3                  # pm.state below pm.lowVoltage (firmware PMStates lowPower)


class SimVehicle:
    """The Drone2D ``model`` integrated in ``physics_dt_us`` steps up to ``time_us`` (us)."""

    def __init__(self, model, params, ranging=None, start_us=0, physics_dt_s=0.005, noise=None):
        self.model = model
        self.ranging = ranging
        self.noise = noise
        self.time_us = int(start_us)
        self.physics_dt_us = max(1, int(round(physics_dt_s * 1e6)))
        self.est_offset_m = [0.0, 0.0, 0.0]   # estimate minus truth, CF frame
        self._range_cache = None
        self._low_voltage = params.get("pm", "lowVoltage")
        self._initial = [params.get("kalman", k) for k in ("initialX", "initialY", "initialZ")]
        params.watch("kalman", "resetEstimation", self._reset_estimation)

    def step(self, dt_us):
        """Integrate the model over ``dt_us`` microseconds."""
        self.model.step(dt_us * 1e-6)
        self.time_us += dt_us

    def estimate_xyz_yaw(self):
        """Estimated position (m, CF world frame) and yaw (deg, CCW) as the firmware logs them."""
        v = self.model
        o = self.est_offset_m
        return (v.north_m + o[0], -v.east_m + o[1], v.height_m + o[2], -math.degrees(v.yaw_rad))

    def _reset_estimation(self, p):
        if p.value:
            v = self.model
            init = tuple(q.value for q in self._initial)
            truth = (v.north_m, -v.east_m, v.height_m)
            self.est_offset_m = [init[k] - truth[k] for k in range(3)]
            p.value = 0                       # the firmware clears the flag once reset

    # ---------------------------------------------------------------- commands in the CF frame
    def command_world_velocity(self, vx_mps, vy_mps, yaw_rate_degps):
        """Velocity (m/s, CF world x forward, y left) and yaw rate (deg/s, CCW)."""
        self.model.command_velocity(vx_mps, -vy_mps, -math.radians(yaw_rate_degps))

    def command_estimated_height(self, z_m):
        """Hold the height at which the *estimate* reads ``z_m`` (m, up)."""
        self.model.command_height(z_m - self.est_offset_m[2])

    # ---------------------------------------------------------------- sensors
    def new_log_instant(self):
        """The next log packets describe a new instant: ranges are measured again when read."""
        self._range_cache = None

    def ranges(self):
        """N_RANGES distances (m) or None, measured once per log instant at ``time_us``."""
        if self._range_cache is None:
            vals = list(self.ranging(self.time_us)) if self.ranging is not None else []
            vals = (vals + [None] * N_RANGES)[:N_RANGES]
            self._range_cache = vals
        return self._range_cache

    def range_state(self):
        """ranging.state: bit i set when distance i is a measurement."""
        bits = 0
        for i, d in enumerate(self.ranges()):
            if d is not None:
                bits |= 1 << i
        return bits

    def flying(self):
        return self.model.airborne and self.model.motors_on

    # ---------------------------------------------------------------- what the log reads (CF frame)
    def _tilt_deg(self):
        """(roll, legacy pitch) in degrees a multirotor needs for its horizontal acceleration: nose down to
        accelerate forward (stateEstimate.pitch is the firmware's legacy pitch, positive nose up), left
        side down to accelerate left."""
        v = self.model
        psi = -v.yaw_rad
        ax, ay = v.acc_north_mps2, -v.acc_east_mps2
        a_fwd = math.cos(psi) * ax + math.sin(psi) * ay
        a_left = -math.sin(psi) * ax + math.cos(psi) * ay
        return -math.degrees(math.atan2(a_left, G_MPS2)), -math.degrees(math.atan2(a_fwd, G_MPS2))

    def logged_attitude_deg(self):
        """(roll, legacy pitch, yaw) in degrees as logged (stabilizer.*, stateEstimate.*)."""
        roll, pitch = self._tilt_deg()
        yaw = self.estimate_xyz_yaw()[3]
        if self.noise is None:
            return roll, pitch, yaw
        return self.noise.attitude_deg(self.time_us, roll, pitch, yaw)

    def logged_position_m(self):
        xyz = self.estimate_xyz_yaw()[:3]
        return xyz if self.noise is None else self.noise.position_m(self.time_us, xyz)

    def logged_velocity_mps(self):
        v = self.model
        vel = (v.vel_north_mps, -v.vel_east_mps, v.climb_mps)
        return vel if self.noise is None else self.noise.velocity_mps(self.time_us, vel)

    def logged_world_acc_g(self):
        v = self.model
        acc = (v.acc_north_mps2 / G_MPS2, -v.acc_east_mps2 / G_MPS2, 0.0)
        return acc if self.noise is None else self.noise.world_acc_g(self.time_us, acc)

    def logged_gyro_degps(self):
        """gyro.x/y/z (deg/s, body x forward, y left, z up): the planar model turns about z only."""
        rates = (0.0, 0.0, -math.degrees(self.model.yaw_rate_radps))
        return rates if self.noise is None else self.noise.gyro_degps(self.time_us, rates)

    def logged_acc_g(self):
        """acc.x/y/z (g, body): the specific force along the thrust axis, 1 g at rest and in a level hover
        (on the ground the floor's reaction, in the air the thrust that also tilts for acceleration)."""
        v = self.model
        f_g = math.hypot(1.0, math.hypot(v.acc_north_mps2, v.acc_east_mps2) / G_MPS2)
        return (0.0, 0.0, f_g) if self.noise is None else self.noise.acc_g(self.time_us, f_g)

    def logged_vbat_v(self):
        vbat = self.model.battery_v
        return vbat if self.noise is None else self.noise.vbat_v(self.time_us, vbat)

    def log_sources(self):
        """Sources of the stateEstimate, stateEstimateZ, kalman, stabilizer attitude, gyro, acc, pm, ranging
        and sys.isFlying/isTumbled log variables (units as firmware_toc lists them)."""
        v = self.model

        def pick(fn, k, scale=1.0):
            return lambda: scale * fn()[k]

        def quat(k):
            return lambda: quaternion(*self.logged_attitude_deg())[k]

        def body_vel(k):
            def f():
                psi = math.radians(self.logged_attitude_deg()[2])
                vx, vy, _vz = self.logged_velocity_mps()
                return (math.cos(psi) * vx + math.sin(psi) * vy, -math.sin(psi) * vx + math.cos(psi) * vy)[k]
            return f

        def pm_state():
            return PM_STATE_LOW_POWER if v.battery_v < self._low_voltage.value else 0

        def rng(i):
            def f():
                d = self.ranges()[i]
                return 0.0 if d is None else d
            return f

        pos, vel, att = self.logged_position_m, self.logged_velocity_mps, self.logged_attitude_deg
        s = {
            "x_m": pick(pos, 0), "y_m": pick(pos, 1), "z_m": pick(pos, 2), "yaw_deg": pick(att, 2),
            "vx_mps": pick(vel, 0), "vy_mps": pick(vel, 1), "vz_mps": pick(vel, 2),
            "ax_g": pick(self.logged_world_acc_g, 0), "ay_g": pick(self.logged_world_acc_g, 1),
            "az_g": pick(self.logged_world_acc_g, 2),
            "roll_deg": pick(att, 0), "pitch_deg": pick(att, 1),
            "qw": quat(0), "qx": quat(1), "qy": quat(2), "qz": quat(3),
            "x_mm": pick(pos, 0, 1000.0), "y_mm": pick(pos, 1, 1000.0), "z_mm": pick(pos, 2, 1000.0),
            "vx_mmps": pick(vel, 0, 1000.0), "vy_mmps": pick(vel, 1, 1000.0), "vz_mmps": pick(vel, 2, 1000.0),
            "yaw_rate_mradps": pick(self.logged_gyro_degps, 2, 1000.0 * math.pi / 180.0),
            "vx_body_mps": body_vel(0), "vy_body_mps": body_vel(1),
            "gyro_x_degps": pick(self.logged_gyro_degps, 0), "gyro_y_degps": pick(self.logged_gyro_degps, 1),
            "gyro_z_degps": pick(self.logged_gyro_degps, 2),
            "acc_x_g": pick(self.logged_acc_g, 0), "acc_y_g": pick(self.logged_acc_g, 1),
            "acc_z_g": pick(self.logged_acc_g, 2),
            "var_pos_m2": lambda: 1e-4, "var_vel_m2ps2": lambda: 1e-4,
            "is_flying": lambda: 1 if self.flying() else 0, "zero": lambda: 0,
            "vbat_v": self.logged_vbat_v, "vbat_mv": lambda: 1000.0 * self.logged_vbat_v(),
            "pm_state": pm_state,
            "battery_level": lambda: max(0.0, min(100.0, (v.battery_v - BATTERY_EMPTY_V)
                                                  / (BATTERY_FULL_V - BATTERY_EMPTY_V) * 100.0)),
            "ranging_state": self.range_state,
        }
        for i in range(N_RANGES):
            s["distance%d" % i] = rng(i)
        return s
