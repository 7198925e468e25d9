"""The thesis's leveling robot in the loop: the AVR leveler firmware in simavr on a deformable mound.

Pieces (the lockstep machinery is :mod:`harness.sim.avr_bridge`'s):

- :func:`leveler_elf` / :class:`LevelerBridge`: the ``leveler`` build of firmware/arduino (32U4, AltIMU-10 v4,
  Dagu Rover 5 profile, 9600-baud link) in ``avr_bridge``; the AltIMU's output registers are set with the
  bridge's ``altimu`` command (LSM303D accel + mag, L3GD20H gyro, LPS25H pressure).
- :class:`MoundTerrain`: a height grid (metres, cell (i, j) centred at north (i + 0.5) cell_m, east
  (j + 0.5) cell_m) that wraps around at its borders (a torus: the robot leaving one side enters the other),
  with Gaussian mounds, bilinear height, erosion to the angle of repose and the tracks' action; both move
  material between cells and conserve volume exactly up to float rounding.
- :class:`LevelerPlant`: a Dagu Rover 5 (skid-steer :class:`DiffDriveRobot`, sprocket radius and gauge from
  ``boards.arduino.board.ROVER5``) driven by the firmware's PWM, its encoders, and its attitude on the
  terrain: pitch and roll from the terrain heights under the front/rear and left/right of the chassis, the
  AltIMU's specific force f_body = R_ned_to_body (a_ned - g_ned) and body rates from the Z-Y-X Euler rates,
  plus white noise.

Tracks' action (a stand-in for track slip and bulldozing, not a soil model; its two constants are tuning
settings with no measured basis), over each terrain step:

- thrust: a track that climbs needs traction, slips and throws soil back. Moving ``d`` metres with a pitch
  ``theta`` along the direction of travel (uphill positive) moves ``thrust_m3_per_m * d * max(0, sin theta)``
  of soil from under the chassis (in proportion to each cell's height above the footprint's lowest cell,
  at most half of that relief) to the strip of ``spoil_strip_m`` just behind it (downhill while climbing);
- shear: the cells under the chassis move towards the footprint's mean height by the fraction
  ``min(1, shear_per_m * s)``, s the distance the tracks slid, (|v| + |yaw rate| gauge / 2) dt (turning
  and spinning in place included).

Both conserve volume exactly (up to float rounding). Erosion then relaxes slopes steeper than the angle
of repose.
"""
import math
import os

import numpy as np

from boards.arduino import board as C
from harness.sim.avr_bridge import (FIRMWARE_DIR, PLANT_DEFAULTS, PLANT_SETTING_RANGES, AvrBridge, AvrPlant,
                                    FilRig, open_link)
from onboard.core.settings import (NON_NEGATIVE, POSITIVE, RATE_HZ, ConfigError, checked, int_at_least, is_number,
                                   pair, setting_problem, within)
from onboard.core.units import G_MPS2

LPS25H_TEMP_RAW_25C = int(round((25.0 - 42.5) * 480.0))   # LPS25H: T = 42.5 + raw / 480 degC


def leveler_elf():
    return os.path.join(FIRMWARE_DIR, "build", C.LEVELER_BUILD, "robot_link.elf")


def leveler_size_report():
    """Flash/RAM of the leveler build (written by `make -C firmware/arduino size`)."""
    import json
    with open(os.path.join(FIRMWARE_DIR, "build", C.LEVELER_BUILD, "size.json")) as f:
        return json.load(f)


class LevelerBridge(AvrBridge):
    """avr_bridge running the leveler ELF (32U4 pins: the 'leonardo' board's); ``run`` takes the AltIMU's raw
    outputs (11 integers, see ``altimu_raw``) instead of the MPU-6050's."""

    def __init__(self, reply_timeout_s=20.0, env=None):
        super().__init__("leonardo", elf=leveler_elf(), reply_timeout_s=reply_timeout_s, env=env)

    def _imu_command(self, imu_raw):
        """The bridge command setting the emulated AltIMU-10 v4's registers (raw counts, the bridge's order)."""
        return "altimu " + " ".join("%d" % v for v in imu_raw)

    def set_device_present(self, device, present):
        """One AltIMU device ('lsm303d', 'l3gd20h', 'lps25h') stops / starts answering on the bus."""
        self._call("altimu_present %s %d" % (device, 1 if present else 0))


# ---------------------------------------------------------------- terrain
MAX_CELLS = 1024 * 1024             # the height grid's cells (the default 1.2 m at 2 cm: 3600)
TERRAIN_DEFAULTS = {
    "size_m": [1.2, 1.2],              # north, east extent; the grid wraps around at its borders
    "cell_m": 0.02,
    "mounds": [[0.6, 0.6, 0.05, 0.2]],    # [north_m, east_m, height_m, sigma_m] Gaussian mounds (max slope 8.7 deg)
    "repose_deg": 34.0,
    "erosion_period_s": 0.1,
    "thrust_m3_per_m": 0.004,          # tracks' thrust: soil thrown back per m climbed, per unit sin(pitch)
    "spoil_strip_m": 0.06,             # ... into this strip behind the chassis
    "shear_per_m": 0.5,                # tracks' shear: fraction of the footprint's relief levelled per m slid
    "footprint_m": [0.25, 0.22],       # chassis length, width (Dagu Rover 5)
}
TERRAIN_RANGES = {
    "size_m": pair(POSITIVE), "cell_m": POSITIVE, "repose_deg": within(1.0, 89.0), "erosion_period_s": POSITIVE,
    "shear_per_m": NON_NEGATIVE, "footprint_m": pair(POSITIVE), "thrust_m3_per_m": NON_NEGATIVE,
    "spoil_strip_m": POSITIVE,
    "mounds": ("a list of [north_m, east_m, height_m, sigma_m] with height_m >= 0 and sigma_m > 0",
               lambda v: isinstance(v, list) and all(
                   isinstance(m, list) and len(m) == 4 and all(isinstance(x, (int, float)) and math.isfinite(x)
                                                               for x in m) and m[2] >= 0 and m[3] > 0 for m in v)),
    ("cell_m", "size_m"): ("a cell at most a tenth of the world's smaller side",
                           lambda cell, size: cell * 10 <= min(size)),
    ("size_m", "cell_m"): ("at most %d cells (1024 x 1024: the grid, its erosion and the track patches run every "
                           "step)" % MAX_CELLS,
                           lambda size, cell: round(size[0] / cell) * round(size[1] / cell) <= MAX_CELLS),
}


class MoundTerrain:
    """Height grid on a torus (see the module doc); heights in metres."""

    def __init__(self, config=None):
        cfg = checked(TERRAIN_DEFAULTS, TERRAIN_RANGES, config, "MoundTerrain")
        self.cfg = cfg
        self.cell_m = float(cfg["cell_m"])
        self.rows = int(round(cfg["size_m"][0] / self.cell_m))
        self.cols = int(round(cfg["size_m"][1] / self.cell_m))
        self.size_n_m = self.rows * self.cell_m
        self.size_e_m = self.cols * self.cell_m
        n = (np.arange(self.rows) + 0.5) * self.cell_m
        e = (np.arange(self.cols) + 0.5) * self.cell_m
        self.north_m, self.east_m = np.meshgrid(n, e, indexing="ij")
        self.height_m = np.zeros((self.rows, self.cols))
        for north, east, height, sigma in cfg["mounds"]:
            dn = self._wrap(self.north_m - north, self.size_n_m)
            de = self._wrap(self.east_m - east, self.size_e_m)
            self.height_m += height * np.exp(-(dn * dn + de * de) / (2.0 * sigma * sigma))
        self.initial_volume_m3 = self.volume_m3()
        self._tan_repose = math.tan(math.radians(cfg["repose_deg"]))
        self.cut_m3 = 0.0                  # volume the tracks moved (sum of the cut parts)
        self.eroded_m3 = 0.0

    @staticmethod
    def _wrap(d, size):
        return (d + 0.5 * size) % size - 0.5 * size

    def volume_m3(self):
        return float(self.height_m.sum()) * self.cell_m * self.cell_m

    def rms_m(self):
        """Root-mean-square height about the mean (the roughness the leveling lowers)."""
        h = self.height_m
        return float(np.sqrt(np.mean((h - h.mean()) ** 2)))

    def max_gradient(self):
        """Largest height difference between 4-neighbours over the cell size (a slope, m/m)."""
        h = self.height_m
        g = max(float(np.max(np.abs(h - np.roll(h, 1, 0)))), float(np.max(np.abs(h - np.roll(h, 1, 1)))))
        return g / self.cell_m

    def height_at(self, north_m, east_m):
        """Bilinear height (m) at a point (wrapped onto the torus)."""
        x = (north_m / self.cell_m - 0.5) % self.rows
        y = (east_m / self.cell_m - 0.5) % self.cols
        i0, j0 = int(math.floor(x)), int(math.floor(y))
        fx, fy = x - i0, y - j0
        i1, j1 = (i0 + 1) % self.rows, (j0 + 1) % self.cols
        i0 %= self.rows
        j0 %= self.cols
        h = self.height_m
        return ((1 - fx) * ((1 - fy) * h[i0, j0] + fy * h[i0, j1]) + fx * ((1 - fy) * h[i1, j0] + fy * h[i1, j1]))

    def attitude(self, north_m, east_m, yaw_rad):
        """(pitch_rad, roll_rad) of a chassis of ``footprint_m`` resting on the terrain: Z-Y-X Euler angles,
        pitch positive nose up, roll positive right side down."""
        length, width = self.cfg["footprint_m"]
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        hl, hw = 0.5 * length, 0.5 * width
        front = self.height_at(north_m + hl * c, east_m + hl * s)
        rear = self.height_at(north_m - hl * c, east_m - hl * s)
        right = self.height_at(north_m - hw * s, east_m + hw * c)     # right of heading: (-sin, cos)
        left = self.height_at(north_m + hw * s, east_m - hw * c)
        return math.atan2(front - rear, length), math.atan2(left - right, width)

    def _along_across(self, north_m, east_m, yaw_rad):
        dn = self._wrap(self.north_m - north_m, self.size_n_m)
        de = self._wrap(self.east_m - east_m, self.size_e_m)
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        return dn * c + de * s, -dn * s + de * c

    def footprint(self, north_m, east_m, yaw_rad):
        """Boolean mask of the cells whose centres lie under the chassis."""
        length, width = self.cfg["footprint_m"]
        along, across = self._along_across(north_m, east_m, yaw_rad)
        return (np.abs(along) <= 0.5 * length) & (np.abs(across) <= 0.5 * width)

    def track_action(self, north_m, east_m, yaw_rad, moved_m, slid_m, pitch_rad):
        """The tracks' thrust and shear (module doc) for ``moved_m`` travelled (signed: negative backwards)
        and ``slid_m`` slid at ``pitch_rad`` (nose up positive)."""
        length, width = self.cfg["footprint_m"]
        along, across = self._along_across(north_m, east_m, yaw_rad)
        beside = np.abs(across) <= 0.5 * width
        mask = beside & (np.abs(along) <= 0.5 * length)
        if not mask.any():
            return
        area = self.cell_m * self.cell_m
        uphill = math.sin(pitch_rad) * (1.0 if moved_m >= 0 else -1.0)
        volume = self.cfg["thrust_m3_per_m"] * abs(moved_m) * max(0.0, uphill)
        if volume > 0.0:
            if moved_m >= 0:
                strip = beside & (along < -0.5 * length) & (along >= -0.5 * length - self.cfg["spoil_strip_m"])
            else:
                strip = beside & (along > 0.5 * length) & (along <= 0.5 * length + self.cfg["spoil_strip_m"])
            h = self.height_m[mask]
            relief = h - h.min()
            available = float(relief.sum()) * area
            n_strip = int(strip.sum())
            if available > 0.0 and n_strip:
                volume = min(volume, 0.5 * available)
                self.height_m[mask] = h - relief * (volume / available)
                self.height_m[strip] += volume / (n_strip * area)
                self.cut_m3 += volume
        k = min(1.0, self.cfg["shear_per_m"] * slid_m)
        if k > 0.0:
            h = self.height_m[mask]
            excess = h - h.mean()
            self.height_m[mask] = h - k * excess
            self.cut_m3 += k * float(excess[excess > 0].sum()) * area

    def erode(self):
        """One relaxation pass: between 4-neighbours, an eighth of the height difference beyond the angle of
        repose flows downhill (each cell gives at most half its excess over its four neighbours)."""
        h = self.height_m
        limit = self._tan_repose * self.cell_m
        delta = np.zeros_like(h)
        moved = 0.0
        for axis in (0, 1):
            for shift in (1, -1):
                diff = h - np.roll(h, shift, axis)
                flow = np.maximum(diff - limit, 0.0) * 0.125
                delta -= flow
                delta += np.roll(flow, -shift, axis)
                moved += float(flow.sum())
        self.height_m = h + delta
        self.eroded_m3 += moved * self.cell_m * self.cell_m

    def stats(self):
        return {"rms_m": self.rms_m(), "max_gradient": self.max_gradient(),
                "volume_error_m3": self.volume_m3() - self.initial_volume_m3}


# ---------------------------------------------------------------- plant
# avr_bridge's plant settings less its MPU-6050 model; 5 ms lockstep windows (the firmware's tick is 10 ms,
# a host byte at 9600 baud takes 1 ms); motors a little faster than the firmware's 9.3 rad/s model
_MPU_ONLY = ("imu_model", "imu_dlpf_hz")
LEVELER_PLANT_DEFAULTS = {k: v for k, v in PLANT_DEFAULTS.items() if k not in _MPU_ONLY}
LEVELER_PLANT_DEFAULTS.update({
    "motor_no_load_radps": 9.6,
    "bridge_window_us": 5000,
    "accel_noise_mps2": 0.05,          # white noise std of each specific force sample
    "gyro_noise_radps": 0.005,
    "terrain_step_us": 10000,          # tracks' action every this long
})
LEVELER_PLANT_RANGES = dict({k: v for k, v in PLANT_SETTING_RANGES.items() if k not in _MPU_ONLY},
                            accel_noise_mps2=NON_NEGATIVE, gyro_noise_radps=NON_NEGATIVE,
                            terrain_step_us=int_at_least(1))


def erosion_period_us(period_s):
    """A terrain's ``erosion_period_s`` on the plant's microsecond clock, as LevelerPlant schedules it (truncated)."""
    return int(period_s * 1e6)


# LevelerPlant erodes at most once per physics step (1 / plant physics_hz): an erosion period shorter than the
# step would erode less often than configured (and one under 1 us truncates to 0 us). The rule relates the
# terrain's and the plant's settings as the fil-leveler scenario and LevelerRig name them.
EROSION_STEP_RULE = (
    "an erosion period of at least one physics step (1 / physics_hz: the plant erodes at most once a step)",
    lambda period_s, hz: not (is_number(period_s) and RATE_HZ[1](hz)) or erosion_period_us(period_s) >= 1000000 // hz)
LEVELER_RANGES = {("terrain.erosion_period_s", "plant.physics_hz"): EROSION_STEP_RULE}


def check_erosion_step(terrain_cfg, plant_cfg, owner=None):
    """Raise ConfigError (one line naming ``terrain.erosion_period_s`` and ``plant.physics_hz``) unless the
    terrain's erosion period (MoundTerrain settings) is at least the plant's physics step (LevelerPlant
    settings): :data:`LEVELER_RANGES`."""
    line = setting_problem({"terrain": {"erosion_period_s": terrain_cfg["erosion_period_s"]},
                            "plant": {"physics_hz": plant_cfg["physics_hz"]}}, LEVELER_RANGES, owner)
    if line:
        raise ConfigError(line)


def rover5_vehicle(start_ne_m=(0.3, 0.3), start_yaw_deg=45.0, motor_no_load_radps=9.6):
    """DiffDriveRobot settings of the Dagu Rover 5 (boards.arduino.board.ROVER5)."""
    return {"wheelbase_m": C.ROVER5["track_gauge_m"], "wheel_radius_m": C.ROVER5["sprocket_radius_m"],
            "max_wheel_radps": motor_no_load_radps, "motor_time_constant_s": 0.08, "turn_efficiency": 0.7,
            "start_ne_m": list(start_ne_m), "start_yaw_deg": start_yaw_deg}


def _clamp(v, lo, hi):
    return max(lo, min(hi, int(round(v))))


class LevelerPlant(AvrPlant):
    """The Rover 5 on a :class:`MoundTerrain` around the leveler firmware (see the module doc). ``rand`` is a
    numpy Generator (harness.sim.rng) for the IMU noise."""

    def __init__(self, bridge, robot, terrain, rand, config=None):
        cfg = checked(LEVELER_PLANT_DEFAULTS, LEVELER_PLANT_RANGES, config, "LevelerPlant")
        check_erosion_step(terrain.cfg, cfg, "LevelerPlant")
        base = {k: cfg[k] for k in PLANT_DEFAULTS if k not in _MPU_ONLY}
        base.update(imu_model="noisy", imu_dlpf_hz=0.0)      # _imu_raw below replaces the MPU-6050 model
        super().__init__(bridge, robot, None, base)
        self.lcfg = cfg
        self.terrain = terrain
        self.rand = rand
        self.pitch_rad, self.roll_rad = terrain.attitude(robot.north_m, robot.east_m, robot.yaw_rad)
        self._prev = None              # (t_us, roll, pitch, yaw, vel_ned) at the last IMU update
        self._slid_m = 0.0
        self._moved_m = 0.0
        self._next_terrain_us = cfg["terrain_step_us"]
        self._next_erosion_us = erosion_period_us(terrain.cfg["erosion_period_s"])

    def _imu_raw(self, t_us):
        """AltIMU raw outputs (chip axes x forward, y left, z up) for the interval ending at t_us."""
        r = self.robot
        pitch, roll = self.terrain.attitude(r.north_m, r.east_m, r.yaw_rad)
        self.pitch_rad, self.roll_rad = pitch, roll
        vel = r.vel_ned_mps()
        prev = self._prev
        self._prev = (t_us, roll, pitch, r.yaw_rad, vel)
        if prev is None:
            return None
        dt = (t_us - prev[0]) * 1e-6
        a_n, a_e = (vel[0] - prev[4][0]) / dt, (vel[1] - prev[4][1]) / dt
        dyaw = (r.yaw_rad - prev[3] + math.pi) % (2 * math.pi) - math.pi
        roll_dot, pitch_dot, yaw_dot = (roll - prev[1]) / dt, (pitch - prev[2]) / dt, dyaw / dt
        # specific force in NED (vertical acceleration neglected), rotated into the body: R_ned_to_body = R^T
        f_ned = (a_n, a_e, -G_MPS2)
        cy, sy = math.cos(r.yaw_rad), math.sin(r.yaw_rad)
        cp, sp = math.cos(pitch), math.sin(pitch)
        cr, sr = math.cos(roll), math.sin(roll)
        x1 = cy * f_ned[0] + sy * f_ned[1]          # Rz^T
        y1 = -sy * f_ned[0] + cy * f_ned[1]
        z1 = f_ned[2]
        x2 = cp * x1 - sp * z1                      # Ry^T
        z2 = sp * x1 + cp * z1
        f_body = (x2, cr * y1 + sr * z2, -sr * y1 + cr * z2)   # Rx^T
        # body rates from Z-Y-X Euler rates
        w_body = (roll_dot - yaw_dot * sp, pitch_dot * cr + yaw_dot * sr * cp, -pitch_dot * sr + yaw_dot * cr * cp)
        an, gn = self.lcfg["accel_noise_mps2"], self.lcfg["gyro_noise_radps"]
        z = self.rand.standard_normal(6)
        sign = C.CHIP_TO_BODY_SIGN
        accel = [_clamp(sign[i] * (f_body[i] + an * z[i]) / C.ALTIMU_ACCEL_MPS2_PER_LSB, -32768, 32767)
                 for i in range(3)]
        gyro = [_clamp(sign[i] * (w_body[i] + gn * z[3 + i]) / C.ALTIMU_GYRO_RADPS_PER_LSB, -32768, 32767)
                for i in range(3)]
        # magnetometer: a horizontal field of 0.2 gauss to the north, 0.4 gauss down, in the body
        m_ned = (0.2, 0.0, 0.4)
        mx1 = cy * m_ned[0] + sy * m_ned[1]
        my1 = -sy * m_ned[0] + cy * m_ned[1]
        mx2 = cp * mx1 - sp * m_ned[2]
        mz2 = sp * mx1 + cp * m_ned[2]
        m_body = (mx2, cr * my1 + sr * mz2, -sr * my1 + cr * mz2)
        mag = [_clamp(sign[i] * m_body[i] / C.ALTIMU_MAG_GAUSS_PER_LSB, -32768, 32767) for i in range(3)]
        pressure = int(round(1013.25 * C.ALTIMU_PRESSURE_LSB_PER_HPA))
        return accel + gyro + mag + [pressure, LPS25H_TEMP_RAW_25C]

    def step(self, t_us, host_tx_bytes):
        r = self.robot
        st = super().step(t_us, host_tx_bytes)
        # the world wraps around (a torus)
        r.north_m %= self.terrain.size_n_m
        r.east_m %= self.terrain.size_e_m
        dt_s = self.dt_us * 1e-6
        self._slid_m += (abs(r.speed_mps) + abs(r.yaw_rate_radps) * 0.5 * C.ROVER5["track_gauge_m"]) * dt_s
        self._moved_m += r.speed_mps * dt_s
        if t_us >= self._next_terrain_us:
            self._next_terrain_us += self.lcfg["terrain_step_us"]
            self.terrain.track_action(r.north_m, r.east_m, r.yaw_rad, self._moved_m, self._slid_m, self.pitch_rad)
            self._slid_m = 0.0
            self._moved_m = 0.0
        if t_us >= self._next_erosion_us:
            self._next_erosion_us += erosion_period_us(self.terrain.cfg["erosion_period_s"])
            self.terrain.erode()
        return st


class LevelerRig(FilRig):
    """Leveler bridge + driver + plant on one simulated clock (tests, bench): :class:`FilRig`'s stepping on the
    leveler build, the mound terrain and the Rover 5."""

    def __init__(self, seed=1, terrain=None, plant=None, vehicle=None):
        from harness.sim.rng import RunRandom
        from harness.sim.vehicles.diffdrive import DiffDriveRobot
        self.terrain = MoundTerrain(terrain)
        plant_cfg = checked(LEVELER_PLANT_DEFAULTS, LEVELER_PLANT_RANGES, plant, "LevelerPlant")
        check_erosion_step(self.terrain.cfg, plant_cfg, "LevelerRig")       # before the firmware starts
        self.robot = DiffDriveRobot(dict(rover5_vehicle(motor_no_load_radps=plant_cfg["motor_no_load_radps"]),
                                         **(vehicle or {})))
        self.bridge = LevelerBridge()
        try:
            self.serial, self.link = open_link(self.bridge)
        except Exception:
            self.bridge.close()
            raise
        self.plant = LevelerPlant(self.bridge, self.robot, self.terrain, RunRandom(seed).stream("leveler_imu"),
                                  plant_cfg)
        self.t_us = 0
        self.messages = []
        self.keep_messages = True
