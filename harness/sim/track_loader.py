"""A compact-track-loader-like machine with an articulated blade cutting a soil world, its lane-cutting
operator and its 60 Hz sensors (harness; NumPy).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader", section 3 (the CAT 299D3 XE CTL with an articulated blade, the
data-collection controller holding blade height and roll relative to the surface with an anti-stall raise,
swept and random-walk setpoints, 60 Hz observations) and section 4 (a real machine's force from a dynamics
model or hydraulic pressure); reading aid ``shared/papers/notes/soil.md`` sections 2.8, 5.3 and decision
A18 (mass 5,000 kg, traction coefficient 0.7, blade 1.85 x 0.6 m: assumptions, the paper gives none).

Machine (frames NED / FRD, CONVENTIONS.md): the chassis drives straight lanes at yaw = the lane's heading;
it rests on the truth surface under its tracks (height, pitch and roll from the four track-contact corners,
``track_length_m`` x ``track_gauge_m``). The blade's cutting-edge centre sits ``blade.offset_m`` ahead of the
chassis centre and ``lift`` [m] above the track-contact plane (body frame (offset, 0, -lift)); its attitude is
the chassis attitude times the blade's own roll (about body x) and tilt (about body y, positive tilting its
top back: rake from the horizontal rho_h = pi/2 - pitch). Lift, tilt and roll follow their commands through
first-order lags with rate limits. Longitudinal dynamics: m dv/dt = F_drive - F_x - c_rr N - m g sin(pitch),
N = m g cos(pitch) + F_z (the soil's vertical force on the blade, positive down); the drive force comes
from a PI speed loop, limited by the drive's force and by traction mu N (beyond it the tracks slip at the
commanded speed); v never goes negative while cutting. The speed loop's output, the tractive effort it
commands (``drive_command_n``: the PI demand clipped to the drive's force, before the traction limit), is
the cascaded controller's track command the paper's network reads among its actions (notes section 2.8):
in steady cutting it rises with the drawbar pull the blade and the slope demand. When the drive cannot fail
the soil the machine stalls: the blade then carries the drive's force, not the FEE's failure force, and cuts nothing.

Sensors, every step of 1/60 s (``LoaderSample``): chassis pose and speed, track speeds, blade pose and the
actuator positions (kinematics), the blade force (the paper's simulator force: noise 2 % + 200 N and a
constant bias per run, assumptions from the notes), a drive-torque path (sprocket torque of both tracks,
from which the onboard ``onboard.soil.machine_forces.fx_from_drive`` recovers the horizontal force only)
and a lift-cylinder pressure path (the arm's moment balance ``machine_forces.lift_moment_nm``, from which
``fz_from_pressure`` recovers the vertical force given F_x).
The optional front/rear single-beam LIDARs are ``harness.sim.soil_lidar`` (they read this machine's truth poses).

Operator (``operator`` settings): cuts ``lanes.count`` parallel lanes (``lanes.passes`` passes each) of
``lanes.length_m`` (or for ``max_lane_s``): it drives at the speed setpoint, holds the cutting edge
``depth_m`` below the surface it sees just ahead of the blade (entering over ``entry_m``) and the blade's
roll at ``roll_rad`` to the surface's cross slope, at the tilt setpoint; when the speed stays below
``anti_stall.speed_ratio`` of its setpoint for ``anti_stall.delay_s`` it raises the blade at
``anti_stall.raise_mps`` (recovering at ``anti_stall.recover_mps``); at a lane's end it stops and lifts the
blade (the pile stays), and the machine is placed at the next lane's start (the turn-around is not
simulated). With ``random.enabled`` the depth, speed, tilt and roll setpoints ramp to new uniformly drawn
targets every ``random.change_s`` (x 0.5..1.5), for data collection.
"""
import math

import numpy as np

from onboard.core.rotations import dcm_mul, dcm_to_euler, euler_to_dcm
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, pair, within, ANY_NUMBER
from onboard.soil.blind_map import BladePose
from onboard.soil.machine_forces import lift_moment_nm
from harness.sim.blade_force import TruthBladeForce

GRAVITY_MPS2 = 9.80665
RATE_HZ = 60

DEFAULTS = {
    "mass_kg": 5000.0,
    "traction_coefficient": 0.7,
    "rolling_resistance": 0.04,
    "track_length_m": 2.0,            # track contact length
    "track_gauge_m": 1.6,
    "sprocket_radius_m": 0.35,
    "drive": {"max_force_n": 45000.0, "kp_n_per_mps": 30000.0, "ki_n_per_m": 30000.0},
    "blade": {
        "width_m": 1.85,
        "height_m": 0.6,
        "offset_m": 2.0,              # edge centre ahead of the chassis centre
        "mass_kg": 600.0,             # blade and arms, carried by the lift cylinders
        "pivot_m": [0.3, 0.9],        # arm pivot (forward of the chassis centre, above the track plane)
        "cylinder_arm_m": 0.35,       # lever of the lift cylinders about the pivot
        "cylinder_area_m2": 0.0157,   # piston area of the two lift cylinders together
        "lift_range_m": [-0.4, 0.8],
        "lift_tau_s": 0.15,
        "lift_rate_mps": 0.4,
        "tilt_range_rad": [-0.1, 0.6],
        "tilt_tau_s": 0.2,
        "tilt_rate_radps": 0.5,
        "roll_range_rad": [-0.2, 0.2],
        "roll_tau_s": 0.2,
        "roll_rate_radps": 0.5,
    },
    "sensors": {
        "force_rel_sigma": 0.02,      # blade force noise: rel * |F| + abs, per component
        "force_abs_sigma_n": 200.0,
        "force_bias_sigma_n": 200.0,  # constant bias per run and component
        "torque_sigma_nm": 150.0,     # sprocket torque (both tracks)
        "torque_bias_sigma_nm": 50.0,
        "pressure_sigma_pa": 1.0e5,   # lift-cylinder pressure
        "speed_sigma_mps": 0.005,
        "position_sigma_m": 0.003,    # chassis and blade positions
        "angle_sigma_rad": 0.002,     # chassis and blade attitudes, actuator angles
        "cylinder_sigma_m": 0.001,    # lift actuator position
    },
    "operator": {
        "speed_mps": 1.0,
        "depth_m": 0.12,
        "tilt_rad": 0.17,             # blade tilt setpoint (rho_h = 90 deg - chassis pitch - tilt)
        "roll_rad": 0.0,              # blade roll relative to the surface's cross slope
        "look_ahead_m": 0.3,          # where the operator reads the surface ahead of the edge
        "entry_m": 0.5,               # travel over which the depth ramps in
        "lift_s": 1.0,                # time spent lifting at a lane's end
        "max_lane_s": 60.0,           # a lane not finished by then ends (a machine stuck for good)
        "anti_stall": {"speed_ratio": 0.4, "delay_s": 0.3, "raise_mps": 0.15, "recover_mps": 0.05},
        "random": {
            "enabled": False,
            "change_s": 2.0,
            "ramp_s": 0.7,
            "speed_mps": [0.6, 1.4],
            "depth_m": [0.04, 0.16],
            "tilt_rad": [0.0, 0.4],
            "roll_rad": [-0.05, 0.05],
        },
        "lanes": {
            "count": 1,
            "passes": 1,
            "start_ne_m": [1.0, 2.0],  # chassis centre at the first lane's start
            "heading_rad": 0.0,
            "length_m": 6.0,           # edge travel per lane
            "spacing_m": 1.7,          # between lanes, to the right of the heading
        },
    },
}
_RANGE = pair(ANY_NUMBER, ordered=True)
SETTING_RANGES = {
    "mass_kg": POSITIVE,
    "traction_coefficient": within(0.05, 2.0),
    "rolling_resistance": within(0.0, 0.5),
    "track_length_m": POSITIVE,
    "track_gauge_m": POSITIVE,
    "sprocket_radius_m": POSITIVE,
    "drive.max_force_n": POSITIVE,
    "drive.kp_n_per_mps": NON_NEGATIVE,
    "drive.ki_n_per_m": NON_NEGATIVE,
    "blade.width_m": POSITIVE,
    "blade.height_m": POSITIVE,
    "blade.offset_m": POSITIVE,
    "blade.mass_kg": NON_NEGATIVE,
    "blade.pivot_m": pair(ANY_NUMBER),
    "blade.cylinder_arm_m": POSITIVE,
    "blade.cylinder_area_m2": POSITIVE,
    "blade.lift_range_m": _RANGE,
    "blade.lift_tau_s": POSITIVE,
    "blade.lift_rate_mps": POSITIVE,
    "blade.tilt_range_rad": _RANGE,
    "blade.tilt_tau_s": POSITIVE,
    "blade.tilt_rate_radps": POSITIVE,
    "blade.roll_range_rad": _RANGE,
    "blade.roll_tau_s": POSITIVE,
    "blade.roll_rate_radps": POSITIVE,
    "sensors.force_rel_sigma": NON_NEGATIVE,
    "sensors.force_abs_sigma_n": NON_NEGATIVE,
    "sensors.force_bias_sigma_n": NON_NEGATIVE,
    "sensors.torque_sigma_nm": NON_NEGATIVE,
    "sensors.torque_bias_sigma_nm": NON_NEGATIVE,
    "sensors.pressure_sigma_pa": NON_NEGATIVE,
    "sensors.speed_sigma_mps": NON_NEGATIVE,
    "sensors.position_sigma_m": NON_NEGATIVE,
    "sensors.angle_sigma_rad": NON_NEGATIVE,
    "sensors.cylinder_sigma_m": NON_NEGATIVE,
    "operator.speed_mps": POSITIVE,
    "operator.depth_m": ANY_NUMBER,
    "operator.tilt_rad": ANY_NUMBER,
    "operator.roll_rad": ANY_NUMBER,
    "operator.look_ahead_m": NON_NEGATIVE,
    "operator.entry_m": NON_NEGATIVE,
    "operator.lift_s": NON_NEGATIVE,
    "operator.max_lane_s": POSITIVE,
    "operator.anti_stall.speed_ratio": within(0.0, 1.0),
    "operator.anti_stall.delay_s": NON_NEGATIVE,
    "operator.anti_stall.raise_mps": NON_NEGATIVE,
    "operator.anti_stall.recover_mps": NON_NEGATIVE,
    "operator.random.enabled": BOOLEAN,
    "operator.random.change_s": POSITIVE,
    "operator.random.ramp_s": NON_NEGATIVE,
    "operator.random.speed_mps": pair(POSITIVE, ordered=True),
    "operator.random.depth_m": _RANGE,
    "operator.random.tilt_rad": _RANGE,
    "operator.random.roll_rad": _RANGE,
    "operator.lanes.count": int_at_least(1),
    "operator.lanes.passes": int_at_least(1),
    "operator.lanes.start_ne_m": pair(ANY_NUMBER),
    "operator.lanes.heading_rad": ANY_NUMBER,
    "operator.lanes.length_m": POSITIVE,
    "operator.lanes.spacing_m": ANY_NUMBER,
}


def time_of_step_us(k):
    """Time [us] of step ``k`` at 60 Hz, whole microseconds (the average rate is exact)."""
    return k * 1000000 // RATE_HZ


class LoaderSample:
    """What the sensors read at ``time_us`` (measured values, SI units) and the truth beside them.

    Measured: ``chassis_ned_m`` (north, east, down), ``chassis_euler_rad`` (roll, pitch, yaw),
    ``speed_mps`` (ground speed along the heading), ``track_speed_mps`` (left, right), ``blade_pose``
    (``onboard.soil.blind_map.BladePose`` from the kinematics), ``lift_m``, ``tilt_rad``, ``blade_roll_rad``
    (actuator positions), ``blade_force_n`` (fx, fz; module docstring for the signs), ``drive_torque_nm``
    (both sprockets), ``lift_pressure_pa``; the operator's ``commands`` {"speed_mps", "depth_m", "tilt_rad",
    "roll_rad", "lift_m"} and ``phase`` ("cut", "lift"), ``lane`` (index of lane and pass); the controller's
    own ``drive_command_n`` (the tractive effort [N] the track speed loop commands, both tracks: a command,
    known without any sensor).
    Truth: ``truth`` {"fx_n", "fz_n" (acting on the blade), "failing" (False while stalled), "pile_m3",
    "depth_m" (mean strip depth), "speed_mps", "blade_pose", "drive_force_n", "slipping", "normal_n" (the
    tracks' normal load), "force" (the ``blade_force.BladeForce``), "chassis_pose" (north, east, down, roll,
    pitch, yaw of :meth:`TrackLoader.chassis_pose`)}."""

    __slots__ = ("time_us", "chassis_ned_m", "chassis_euler_rad", "speed_mps", "track_speed_mps", "blade_pose",
                 "lift_m", "tilt_rad", "blade_roll_rad", "blade_force_n", "drive_torque_nm", "lift_pressure_pa",
                 "commands", "phase", "lane", "truth", "drive_command_n")


def _lag(x, cmd, tau, rate, lo, hi, dt):
    """First-order lag of time constant ``tau`` towards ``cmd``, rate-limited, clipped to [lo, hi]."""
    cmd = min(max(cmd, lo), hi)
    dx = (cmd - x) * min(dt / tau, 1.0)
    lim = rate * dt
    dx = min(max(dx, -lim), lim)
    return min(max(x + dx, lo), hi)


class TrackLoader:
    """The machine on a ``harness.sim.soil_terrain.SoilTerrain`` (module docstring); settings
    :data:`DEFAULTS`; ``random``: a ``harness.sim.rng.RunRandom`` (streams "loader_sensors",
    "loader_operator")."""

    def __init__(self, terrain, config=None, random=None, force_model=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "track loader")
        self.config = cfg
        self.terrain = terrain
        self.truth_force = force_model or TruthBladeForce()
        if random is None:
            from harness.sim.rng import RunRandom
            random = RunRandom(0)
        self.sensor_rng = random.stream("loader_sensors")
        self.operator_rng = random.stream("loader_operator")
        s = cfg["sensors"]
        self.force_bias_n = self.sensor_rng.normal(0.0, s["force_bias_sigma_n"], 2) if s["force_bias_sigma_n"] > 0 \
            else np.zeros(2)
        self.torque_bias_nm = float(self.sensor_rng.normal(0.0, s["torque_bias_sigma_nm"])) \
            if s["torque_bias_sigma_nm"] > 0 else 0.0
        self.step_index = 0
        self.north_m = 0.0
        self.east_m = 0.0
        self.yaw_rad = 0.0
        self.speed_mps = 0.0
        b = cfg["blade"]
        self.lift_m = b["lift_range_m"][1]
        self.tilt_rad = 0.0
        self.roll_rad = 0.0
        self._integral_n = 0.0
        self.stalls = 0
        self.slip_steps = 0

    # ---------------------------------------------------------------- kinematics
    def chassis_pose(self):
        """(north, east, down [m], roll, pitch, yaw [rad]) of the chassis centre on the track-contact plane,
        from the truth surface under the four track corners."""
        cfg = self.config
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        hl, hg = 0.5 * cfg["track_length_m"], 0.5 * cfg["track_gauge_m"]
        fwd = np.array([hl, hl, -hl, -hl])
        right = np.array([-hg, hg, -hg, hg])
        pn = self.north_m + fwd * c - right * s
        pe = self.east_m + fwd * s + right * c
        h = self.terrain.surface_at(pn, pe)
        front, rear = 0.5 * (h[0] + h[1]), 0.5 * (h[2] + h[3])
        left, rightside = 0.5 * (h[0] + h[2]), 0.5 * (h[1] + h[3])
        pitch = math.atan2(front - rear, cfg["track_length_m"])
        roll = math.atan2(left - rightside, cfg["track_gauge_m"])
        return self.north_m, self.east_m, -float(h.mean()), roll, pitch, self.yaw_rad

    def blade_pose(self, time_us, chassis=None):
        """The true ``BladePose`` from the chassis pose and the actuator positions."""
        n, e, d, roll, pitch, yaw = chassis or self.chassis_pose()
        r = euler_to_dcm(roll, pitch, yaw)
        off = self.config["blade"]["offset_m"]
        body = (off, 0.0, -self.lift_m)
        pos = [n + r[0] * body[0] + r[1] * body[1] + r[2] * body[2],
               e + r[3] * body[0] + r[4] * body[1] + r[5] * body[2],
               d + r[6] * body[0] + r[7] * body[1] + r[8] * body[2]]
        rb = dcm_mul(r, euler_to_dcm(self.roll_rad, self.tilt_rad, 0.0))
        br, bp, by = dcm_to_euler(rb)
        return BladePose(time_us, pos[0], pos[1], pos[2], br, bp, by)

    def place(self, north_m, east_m, yaw_rad, lift_m=None):
        """Put the chassis at (north, east) heading ``yaw_rad`` at rest, the blade at ``lift_m`` (default:
        its current lift), without cutting; a pile the blade carried stays where the blade left it."""
        self.terrain.drop_pile(None, self.config["blade"]["width_m"])
        self.north_m, self.east_m, self.yaw_rad = float(north_m), float(east_m), float(yaw_rad)
        self.speed_mps = 0.0
        self._integral_n = 0.0
        if lift_m is not None:
            self.lift_m = float(lift_m)
        self.terrain.place_blade(self.blade_pose(time_of_step_us(self.step_index)))

    # ---------------------------------------------------------------- one step
    def step(self, commands, phase="cut", lane=(0, 0)):
        """Sense at the current time, then advance 1/60 s under ``commands`` {"speed_mps", "lift_m",
        "tilt_rad", "roll_rad"} (and the operator's "depth_m" for the record). Returns the
        :class:`LoaderSample` of the current time."""
        cfg = self.config
        b = cfg["blade"]
        k = self.step_index
        t_us = time_of_step_us(k)
        dt = (time_of_step_us(k + 1) - t_us) * 1e-6
        chassis = self.chassis_pose()
        pose = self.blade_pose(t_us, chassis)
        pitch = chassis[4]
        v = self.speed_mps
        fb = self.truth_force.force(self.terrain, pose, b["width_m"], v)
        m = cfg["mass_kg"]
        normal = max(m * GRAVITY_MPS2 * math.cos(pitch) + fb.fz_n, 0.0)
        traction = cfg["traction_coefficient"] * normal
        dr = cfg["drive"]
        err = commands["speed_mps"] - v
        demand = dr["kp_n_per_mps"] * err + self._integral_n
        drive = min(max(demand, -dr["max_force_n"]), dr["max_force_n"])
        drive_command = drive               # the loop's command, before the traction limit
        slipping = abs(drive) > traction
        if slipping:
            drive = math.copysign(traction, drive)
            self.slip_steps += 1
        else:
            self._integral_n = min(max(self._integral_n + dr["ki_n_per_m"] * err * dt, -dr["max_force_n"]),
                                   dr["max_force_n"])
        grav = m * GRAVITY_MPS2 * math.sin(pitch)
        rolling = cfg["rolling_resistance"] * normal
        fx, fz, failing = fb.fx_n, fb.fz_n, True
        push = drive - grav
        if v <= 1e-9 and push - rolling <= fx:
            # stalled: the soil holds the blade with what the drive pushes, and does not fail
            failing = False
            self.stalls += 1
            held = max(push, 0.0)
            scale = held / fx if fx > 0.0 else 0.0
            fx, fz = min(held, fx), fz * min(scale, 1.0)
            v_new = 0.0
        else:
            v_new = max(v + (drive - fx - rolling - grav) / m * dt, 0.0)
        track_speed = commands["speed_mps"] if slipping else v
        sample = self._sense(t_us, chassis, pose, v, track_speed, fx, fz, drive, commands, phase, lane)
        sample.drive_command_n = drive_command
        sample.truth = {"fx_n": fx, "fz_n": fz, "failing": failing, "pile_m3": self.terrain.pile_m3,
                        "depth_m": fb.depth_m_mean, "speed_mps": v, "blade_pose": pose, "drive_force_n": drive,
                        "slipping": slipping, "normal_n": normal, "force": fb, "chassis_pose": chassis}
        # actuators and motion to the next step
        self.lift_m = _lag(self.lift_m, commands["lift_m"], b["lift_tau_s"], b["lift_rate_mps"],
                           b["lift_range_m"][0], b["lift_range_m"][1], dt)
        self.tilt_rad = _lag(self.tilt_rad, commands["tilt_rad"], b["tilt_tau_s"], b["tilt_rate_radps"],
                             b["tilt_range_rad"][0], b["tilt_range_rad"][1], dt)
        self.roll_rad = _lag(self.roll_rad, commands["roll_rad"], b["roll_tau_s"], b["roll_rate_radps"],
                             b["roll_range_rad"][0], b["roll_range_rad"][1], dt)
        travel = 0.5 * (v + v_new) * dt
        self.north_m += travel * math.cos(self.yaw_rad)
        self.east_m += travel * math.sin(self.yaw_rad)
        self.speed_mps = v_new
        self.step_index = k + 1
        self.terrain.move_blade(self.blade_pose(time_of_step_us(k + 1)), b["width_m"], b["height_m"])
        return sample

    def _sense(self, t_us, chassis, pose, v, track_speed, fx, fz, drive, commands, phase, lane):
        cfg = self.config
        s = cfg["sensors"]
        b = cfg["blade"]
        rng = self.sensor_rng
        out = LoaderSample()
        out.time_us = t_us
        ps, an = s["position_sigma_m"], s["angle_sigma_rad"]
        nz = rng.normal(0.0, 1.0, 16)
        out.chassis_ned_m = (chassis[0] + ps * nz[0], chassis[1] + ps * nz[1], chassis[2] + ps * nz[2])
        out.chassis_euler_rad = (chassis[3] + an * nz[3], chassis[4] + an * nz[4], chassis[5] + an * nz[5])
        out.speed_mps = v + s["speed_sigma_mps"] * nz[6]
        out.track_speed_mps = (track_speed + s["speed_sigma_mps"] * nz[7], track_speed + s["speed_sigma_mps"] * nz[8])
        out.blade_pose = BladePose(t_us, pose.north_m + ps * nz[9], pose.east_m + ps * nz[10],
                                   pose.down_m + ps * nz[11], pose.roll_rad + an * nz[12],
                                   pose.pitch_rad + an * nz[13], pose.yaw_rad + an * nz[14])
        out.lift_m = self.lift_m + s["cylinder_sigma_m"] * nz[15]
        na = rng.normal(0.0, 1.0, 6)
        out.tilt_rad = self.tilt_rad + an * na[0]
        out.blade_roll_rad = self.roll_rad + an * na[1]
        fs = s["force_abs_sigma_n"]
        fr = s["force_rel_sigma"]
        out.blade_force_n = (fx + self.force_bias_n[0] + (fr * abs(fx) + fs) * na[2],
                             fz + self.force_bias_n[1] + (fr * abs(fz) + fs) * na[3])
        out.drive_torque_nm = drive * cfg["sprocket_radius_m"] + self.torque_bias_nm + s["torque_sigma_nm"] * na[4]
        moment = lift_moment_nm(cfg, self.lift_m, fx, fz)
        out.lift_pressure_pa = moment / (b["cylinder_arm_m"] * b["cylinder_area_m2"]) + s["pressure_sigma_pa"] * na[5]
        out.commands = dict(commands)
        out.phase = phase
        out.lane = lane
        return out

    # ---------------------------------------------------------------- the operator's lanes
    def run(self, on_sample=None, max_steps=None):
        """Cut the operator's lanes (module docstring), calling ``on_sample(sample)`` for every 60 Hz
        sample; returns the number of steps run. ``max_steps`` stops early."""
        steps = 0
        for sample in self.lanes():
            steps += 1
            if on_sample is not None:
                on_sample(sample)
            if max_steps is not None and steps >= max_steps:
                break
        return steps

    def lanes(self):
        """Generator of the operator's lanes (module docstring): one step of 1/60 s per item, yielding its
        :class:`LoaderSample`."""
        op = LaneOperator(self.config["operator"], self.operator_rng)
        lanes = self.config["operator"]["lanes"]
        c, s = math.cos(lanes["heading_rad"]), math.sin(lanes["heading_rad"])
        off = self.config["blade"]["offset_m"]
        for lane in range(lanes["count"]):
            for npass in range(lanes["passes"]):
                n0 = lanes["start_ne_m"][0] - lane * lanes["spacing_m"] * s
                e0 = lanes["start_ne_m"][1] + lane * lanes["spacing_m"] * c
                if lane or npass:
                    pose = self.terrain._last_pose
                    if pose is not None:
                        self.terrain.erode((pose.north_m, pose.east_m), 3.0, 50, None)
                op.start_lane(self)
                self.place(n0, e0, lanes["heading_rad"])
                self.lift_m += op.edge_error_m(self, self.blade_pose(0), 0.0)
                self.place(n0, e0, lanes["heading_rad"])
                edge0 = np.array([n0 + off * c, e0 + off * s])
                while True:
                    pose = self.blade_pose(time_of_step_us(self.step_index))
                    travelled = float((np.array([pose.north_m, pose.east_m]) - edge0) @ np.array([c, s]))
                    cmd, phase = op.commands(self, pose, travelled, lanes["length_m"])
                    if phase == "done":
                        break
                    yield self.step(cmd, phase, (lane, npass))


def lanes_duration_s(operator):
    """Rough simulated time [s] of the lanes of the ``operator`` settings (for progress bars): length over
    the speed setpoint (the random range's middle when random), a 30 % margin, the lift, per lane and
    pass."""
    lanes = operator["lanes"]
    speed = sum(operator["random"]["speed_mps"]) / 2.0 if operator["random"]["enabled"] else operator["speed_mps"]
    one = min(1.3 * lanes["length_m"] / speed, operator["max_lane_s"]) + operator["lift_s"]
    return one * lanes["count"] * lanes["passes"]


class LaneOperator:
    """The operator of :meth:`TrackLoader.lanes` (module docstring); ``config`` is the loader's
    ``operator`` block, ``rng`` a numpy Generator."""

    def __init__(self, config, rng):
        self.config = config
        self.rng = rng
        self.raise_m = 0.0
        self.slow_s = 0.0
        self.lift_left_s = 0.0
        self.setpoints = {}
        self._targets = {}
        self._from = {}
        self._t = 0.0
        self._next_change = 0.0

    def start_lane(self, loader):
        cfg = self.config
        self.raise_m = 0.0
        self.slow_s = 0.0
        self.lift_left_s = cfg["lift_s"]
        self.lane_s = 0.0
        self.phase = "cut"
        self.setpoints = {k: cfg[k] for k in ("speed_mps", "depth_m", "tilt_rad", "roll_rad")}
        if cfg["random"]["enabled"]:
            self._draw()
            self.setpoints = dict(self._targets)
            self._from = dict(self._targets)
            self._t = 0.0
            self._next_change = self._interval()

    def _interval(self):
        return self.config["random"]["change_s"] * self.rng.uniform(0.5, 1.5)

    def _draw(self):
        r = self.config["random"]
        self._targets = {k: float(self.rng.uniform(*r[k])) for k in ("speed_mps", "depth_m", "tilt_rad", "roll_rad")}

    def _update_random(self, dt):
        r = self.config["random"]
        self._t += dt
        if self._t >= self._next_change:
            self._from = dict(self.setpoints)
            self._draw()
            self._t = 0.0
            self._next_change = self._interval()
        u = 1.0 if r["ramp_s"] <= 0 else min(self._t / r["ramp_s"], 1.0)
        for k in self._targets:
            self.setpoints[k] = self._from[k] + u * (self._targets[k] - self._from[k])

    def surface_ahead(self, loader, pose):
        """(height [m, up] of the surface the operator sees ahead of the blade centre, its cross slope
        [rad, positive when the right side is lower])."""
        cfg = self.config
        c, s = math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)
        half = 0.5 * loader.config["blade"]["width_m"]
        x = cfg["look_ahead_m"]
        lat = np.array([-half, 0.0, half])
        pn = pose.north_m + x * c - lat * s
        pe = pose.east_m + x * s + lat * c
        h = loader.terrain.surface_at(pn, pe)
        return float(h[1]), math.atan2(float(h[0] - h[2]), 2.0 * half)

    def edge_error_m(self, loader, pose, travelled_m):
        """Change of lift [m] that puts the edge at the depth setpoint (after the entry ramp and the
        anti-stall raise) below the surface ahead."""
        cfg = self.config
        ramp = 1.0 if cfg["entry_m"] <= 0 else min(max(travelled_m, 0.0) / cfg["entry_m"], 1.0)
        depth = self.setpoints.get("depth_m", cfg["depth_m"]) * ramp - self.raise_m
        ground, _slope = self.surface_ahead(loader, pose)
        return (ground - depth) - (-pose.down_m)

    def commands(self, loader, pose, travelled_m, length_m):
        """(commands, phase) for the next step; phase "done" ends the lane."""
        cfg = self.config
        dt = 1.0 / RATE_HZ
        self.lane_s += dt
        if self.phase == "cut" and (travelled_m >= length_m or self.lane_s >= cfg["max_lane_s"]):
            self.phase = "lift"
        if self.phase == "lift":
            self.lift_left_s -= dt
            if self.lift_left_s < 0.0:
                return None, "done"
            b = loader.config["blade"]
            return {"speed_mps": 0.0, "lift_m": b["lift_range_m"][1], "tilt_rad": loader.tilt_rad,
                    "roll_rad": 0.0, "depth_m": 0.0}, "lift"
        if cfg["random"]["enabled"]:
            self._update_random(dt)
        sp = self.setpoints
        a = cfg["anti_stall"]
        if loader.speed_mps < a["speed_ratio"] * sp["speed_mps"]:
            self.slow_s += dt
        else:
            self.slow_s = 0.0
        if self.slow_s >= a["delay_s"]:
            self.raise_m += a["raise_mps"] * dt
        else:
            self.raise_m = max(self.raise_m - a["recover_mps"] * dt, 0.0)
        lift = loader.lift_m + self.edge_error_m(loader, pose, travelled_m)
        _h, cross = self.surface_ahead(loader, pose)
        chassis_roll = loader.chassis_pose()[3]
        return {"speed_mps": sp["speed_mps"], "lift_m": lift, "tilt_rad": sp["tilt_rad"],
                "roll_rad": cross + sp["roll_rad"] - chassis_roll, "depth_m": sp["depth_m"]}, "cut"
