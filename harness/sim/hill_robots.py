"""Tracked robots on a deformable heightmap and their simulated IMUs (the hill-sensing levelers' bodies).

:class:`TrackedRobot`: a skid-steer base (Cook thesis 5.1.2 mapping, NED: positive yaw rate turns right)
whose track speeds follow the sprocket commands with a first-order lag ``motor_tau_s``; it moves in the
horizontal plane (north, east, yaw) and rests on the terrain: its pitch and roll are those of the plane
through the terrain heights (bilinear) under the four track ends: pitch = atan((h_front - h_rear) / L)
(nose up positive), roll = atan((h_left - h_right) / B) (right side down positive), height = their mean.
A robot leaving the world across a border comes back across the opposite one (the thesis's Sandbox
wrap-around, section 5.1); its IMU feels the unwrapped path (``odo_north_m``, ``odo_east_m``), so a wrap is
seen only through the terrain's height there (a mound field keeps its mounds off the borders).

:class:`TerrainImu`: velocity and angle increments (:class:`onboard.core.samples.ImuSample`) from the robot's
true motion: dvel = R_body_to_ned(mid)^T (dv_ned - g_ned dt) (integrated specific force) and dang = the body
rates of the Euler-angle change (Z-Y-X), plus a constant bias drawn once and white noise per sample
(ag2u eq. 10's error model), so the tilt the robot estimates sees its forward accelerations, the bumps of
the terrain and the sensor's errors; the robot never reads its true pitch.
"""
import math

from onboard.core.samples import ImuSample
from onboard.core.settings import NON_NEGATIVE, POSITIVE, ConfigError, checked
from onboard.core.units import G_MPS2

VEHICLE_DEFAULTS = {
    "mass_kg": 2.0,                   # Dagu Rover 5 class with battery and electronics
    "track_length_m": 0.18,           # length of track on the ground
    "track_width_m": 0.045,
    "track_gauge_m": 0.19,            # B: distance between the track centre lines
    "sprocket_radius_m": 0.03,
    "max_sprocket_radps": 9.0,
    "motor_tau_s": 0.15,              # first-order lag of the track speed behind its command
}
VEHICLE_SETTING_RANGES = {k: POSITIVE for k in VEHICLE_DEFAULTS}
VEHICLE_SETTING_RANGES[("track_width_m", "track_gauge_m")] = (
    "tracks that do not overlap (track_width_m < track_gauge_m)", lambda w, g: w < g)

IMU_DEFAULTS = {
    "accel_bias_sigma_mps2": 0.05,
    "gyro_bias_sigma_dps": 0.3,
    "accel_noise_mps2": 0.05,         # white noise of each sample's mean specific force (1 sigma)
    "gyro_noise_dps": 0.2,            # white noise of each sample's mean rate (1 sigma)
}
IMU_SETTING_RANGES = {k: NON_NEGATIVE for k in IMU_DEFAULTS}
NOISE_BLOCK = 256                     # samples' noise drawn at once


def height_at(world, north_m, east_m):
    """Bilinear terrain height (m) at a point, clamped to the cell centres at the border."""
    cell = world.cell_m
    x = min(max(north_m / cell - 0.5, 0.0), world.rows - 1.000001)
    y = min(max(east_m / cell - 0.5, 0.0), world.cols - 1.000001)
    i, j = int(x), int(y)
    fx, fy = x - i, y - j
    h = world.height_m
    return ((1.0 - fx) * ((1.0 - fy) * h[i, j] + fy * h[i, j + 1])
            + fx * ((1.0 - fy) * h[i + 1, j] + fy * h[i + 1, j + 1]))


def check_track_covers_cells(vehicle, cell_m):
    """Raise ConfigError (one line naming the settings) unless both sides of a track (``vehicle``'s
    ``track_length_m`` and ``track_width_m``, m) are at least the diagonal of a terrain cell of ``cell_m`` (m).

    A track's contact patch (hill_terrain.TrackContact) is the cells whose centres lie under it, and the bands of
    cells behind and ahead of it as wide as the track: a side of sqrt(2) cells (the cell's diagonal) covers a cell
    centre in every pose; a smaller one may cover none and the press fails mid-run. TrackedRobot checks it when
    built, and the level-hill scenario's check_settings before the run."""
    least = math.sqrt(2.0) * cell_m
    if min(vehicle["track_length_m"], vehicle["track_width_m"]) < least:
        raise ConfigError("vehicle track_length_m x track_width_m %g m x %g m: each side must be at least %.4g m, "
                          "the diagonal of a terrain cell of %g m (a smaller track may cover no cell centre)"
                          % (vehicle["track_length_m"], vehicle["track_width_m"], least, cell_m))


class TrackedRobot:
    def __init__(self, world, north_m, east_m, yaw_rad, vehicle=None):
        cfg = checked(VEHICLE_DEFAULTS, VEHICLE_SETTING_RANGES, vehicle, "vehicle")
        check_track_covers_cells(cfg, world.cell_m)
        self.cfg = cfg
        self.world = world
        self.north_m = float(north_m)
        self.east_m = float(east_m)
        self.yaw_rad = float(yaw_rad)
        self.length_m = float(cfg["track_length_m"])
        self.gauge_m = float(cfg["track_gauge_m"])
        self.radius_m = float(cfg["sprocket_radius_m"])
        self.tau_s = float(cfg["motor_tau_s"])
        self.load_per_track_n = 0.5 * float(cfg["mass_kg"]) * G_MPS2
        self.cmd_left_radps = 0.0
        self.cmd_right_radps = 0.0
        self.rejected_commands = 0
        self.left_mps = 0.0
        self.right_mps = 0.0
        self.distance_m = 0.0
        self.wraps = 0
        self.odo_north_m = self.north_m       # the path without wrap-around (what the IMU feels)
        self.odo_east_m = self.east_m
        self.pitch_rad = 0.0
        self.roll_rad = 0.0
        self.height_m = 0.0
        self.settle()

    # ------------------------------------------------------------ the motors' side
    def command(self, cmd):
        """A WheelCmd: sprocket speeds (rad/s). A command holding NaN or inf is refused (the commands held stay;
        counted in ``rejected_commands``); returns whether it was taken."""
        if not (math.isfinite(cmd.left_radps) and math.isfinite(cmd.right_radps)):
            self.rejected_commands += 1
            return False
        self.cmd_left_radps = cmd.left_radps
        self.cmd_right_radps = cmd.right_radps
        return True

    # ------------------------------------------------------------ motion
    @property
    def speed_mps(self):
        return 0.5 * (self.left_mps + self.right_mps)

    @property
    def yaw_rate_radps(self):
        return (self.left_mps - self.right_mps) / self.gauge_m

    def track_centres(self):
        """((north, east) of the left track's centre, of the right track's)."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        half = 0.5 * self.gauge_m
        return ((self.north_m + s * half, self.east_m - c * half),
                (self.north_m - s * half, self.east_m + c * half))

    def settle(self):
        """Pitch, roll and height from the terrain under the four track ends."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        half_l = 0.5 * self.length_m
        world = self.world
        ends = []
        for tn, te in self.track_centres():
            ends.append((height_at(world, tn + c * half_l, te + s * half_l),
                         height_at(world, tn - c * half_l, te - s * half_l)))
        (lf, lr), (rf, rr) = ends
        self.pitch_rad = math.atan2(0.5 * (lf + rf) - 0.5 * (lr + rr), self.length_m)
        self.roll_rad = math.atan2(0.5 * (lf + lr) - 0.5 * (rf + rr), self.gauge_m)
        self.height_m = 0.25 * (lf + lr + rf + rr)

    def step(self, dt_s):
        """Advance ``dt_s``: track speeds toward their commands, then the pose, then settle on the terrain."""
        a = 1.0 - math.exp(-dt_s / self.tau_s)
        self.left_mps += a * (self.cmd_left_radps * self.radius_m - self.left_mps)
        self.right_mps += a * (self.cmd_right_radps * self.radius_m - self.right_mps)
        v = self.speed_mps
        yaw_rate = self.yaw_rate_radps
        mid = self.yaw_rad + 0.5 * yaw_rate * dt_s
        ground = v * math.cos(self.pitch_rad) * dt_s
        dn, de = math.cos(mid) * ground, math.sin(mid) * ground
        world = self.world
        self.odo_north_m += dn
        self.odo_east_m += de
        self.distance_m += math.hypot(dn, de)
        size_n, size_e = world.rows * world.cell_m, world.cols * world.cell_m
        n, e = self.north_m + dn, self.east_m + de
        if n < 0.0 or n >= size_n or e < 0.0 or e >= size_e:
            self.wraps += 1
            # a tiny negative coordinate's float remainder rounds up to the size itself: that point is 0
            n %= size_n
            e %= size_e
            if n >= size_n:
                n = 0.0
            if e >= size_e:
                e = 0.0
        self.north_m, self.east_m = n, e
        self.yaw_rad = math.atan2(math.sin(self.yaw_rad + yaw_rate * dt_s), math.cos(self.yaw_rad + yaw_rate * dt_s))
        self.settle()

    def press(self, contact, dt_s):
        """Both tracks' sinkage, bulldozing and slip shear at the current pose, each track having run
        |speed| * ``dt_s`` since the last press (:class:`harness.sim.hill_terrain.TrackContact`); the volume
        moved (m^3)."""
        total = 0.0
        width = float(self.cfg["track_width_m"])
        for centre, speed in zip(self.track_centres(), (self.left_mps, self.right_mps)):
            total += contact.press(centre, self.yaw_rad, self.pitch_rad, self.length_m, width,
                                   self.load_per_track_n, 1 if speed >= 0.0 else -1, abs(speed) * dt_s)
        return total


def _r_body_to_ned(roll, pitch, yaw):
    """Row-major 3x3 R_body_to_ned = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return ((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
            (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
            (-sp, cp * sr, cp * cr))


def _wrap(a):
    return math.atan2(math.sin(a), math.cos(a))


class TerrainImu:
    """The IMU of one :class:`TrackedRobot` (module docstring); ``rng`` a NumPy Generator of its own."""

    def __init__(self, robot, rng, config=None):
        cfg = checked(IMU_DEFAULTS, IMU_SETTING_RANGES, config, "imu")
        self.cfg = cfg
        self.robot = robot
        self.rng = rng
        self.accel_bias_mps2 = [float(v) for v in rng.normal(0.0, cfg["accel_bias_sigma_mps2"], 3)]
        self.gyro_bias_radps = [float(v) for v in rng.normal(0.0, math.radians(cfg["gyro_bias_sigma_dps"]), 3)]
        self.accel_sigma = float(cfg["accel_noise_mps2"])
        self.gyro_sigma = math.radians(float(cfg["gyro_noise_dps"]))
        self._last = None              # (time_us, position ned, attitude)
        self._vel = None               # NED velocity over the last interval
        self._noise = []               # unit normal draws, drawn NOISE_BLOCK samples at a time
        self._noise_at = 0

    def _truth(self):
        r = self.robot
        return (r.odo_north_m, r.odo_east_m, -r.height_m), (r.roll_rad, r.pitch_rad, r.yaw_rad)

    def sample(self, now_us):
        """ImuSample over the interval since the previous call (None on the first two calls: a velocity
        needs two positions, an acceleration two velocities). A ``now_us`` not after the previous call's is a
        ValueError (nothing changes)."""
        last = self._last
        if last is not None and not now_us > last[0]:
            raise ValueError("TerrainImu.sample: time %r us is not after the previous sample's %d us"
                             % (now_us, last[0]))
        pos, att = self._truth()
        self._last = (now_us, pos, att)
        if last is None:
            return None
        t0, pos0, att0 = last
        dt_us = now_us - t0
        dt = dt_us * 1e-6
        vel = tuple((p1 - p0) / dt for p1, p0 in zip(pos, pos0))
        vel0 = self._vel
        self._vel = vel
        if vel0 is None:
            return None
        roll0, pitch0, yaw0 = att0
        droll, dpitch, dyaw = att[0] - roll0, att[1] - pitch0, _wrap(att[2] - yaw0)
        roll, pitch, yaw = roll0 + 0.5 * droll, pitch0 + 0.5 * dpitch, yaw0 + 0.5 * dyaw
        R = _r_body_to_ned(roll, pitch, yaw)
        f_ned = (vel[0] - vel0[0], vel[1] - vel0[1], vel[2] - vel0[2] - G_MPS2 * dt)
        if self._noise_at >= len(self._noise):
            self._noise = self.rng.normal(0.0, 1.0, (NOISE_BLOCK, 6)).tolist()
            self._noise_at = 0
        noise = self._noise[self._noise_at]
        self._noise_at += 1
        dvel = tuple(R[0][k] * f_ned[0] + R[1][k] * f_ned[1] + R[2][k] * f_ned[2]
                     + (self.accel_bias_mps2[k] + self.accel_sigma * noise[k]) * dt for k in range(3))
        # body rates of the Euler-angle change (Z-Y-X kinematics), integrated over the interval
        sr, cr = math.sin(roll), math.cos(roll)
        sp, cp = math.sin(pitch), math.cos(pitch)
        p = droll - sp * dyaw
        q = cr * dpitch + sr * cp * dyaw
        r = -sr * dpitch + cr * cp * dyaw
        dang = tuple(v + (self.gyro_bias_radps[k] + self.gyro_sigma * noise[3 + k]) * dt
                     for k, v in enumerate((p, q, r)))
        return ImuSample(now_us, dt_us, dvel, dang)
