"""Scenario `vesc-waypoints`: the Pi ground robot drives two simulated VESCs over ptys.

The board application (boards.rpi.app.RpiGroundRobot: GroundRobotRuntime + VESC driver + MPU-6050
driver) runs in the simulated ground world (``harness.sim.ground_world``). Its motors path: the VESC
driver opens the simulated VESCs' pseudo-terminals with pyserial (the real serial path) and speaks the
VESC UART protocol (SetRPM from the wheel commands, GetValues telemetry, keep-alive); the motors' eRPM
(first-order speed loop with a current limit, in the simulated VESCs) turn the robot's tracks
(``harness.sim.vesc_tracks``). Its IMU path: the board's MPU-6050 driver reads a register-level
simulated chip on a simulated I2C bus. The aiding pose is the world's (ag2u eq. 13). Topologies:
``two_uarts`` (one pty per VESC) or ``can_forward`` (right VESC behind the left one, COMM_FORWARD_CAN
on one UART). Fault injection: unplug/replug a port, raise a VESC fault code.

The app records at its boundary into log.mcap (IMU and pose samples, the driver's fault sets,
ticks, commands): ``python -m harness replay REPORT/log.mcap`` re-runs it.
"""
import math

from boards.rpi import board as C
from boards.rpi.app import RpiGroundRobot
from boards.rpi.imu_mpu6050 import Mpu6050
from boards.rpi.vesc_motors import DRIVE_SETTING_RANGES
from harness.config import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, RATE_HZ, WAYPOINTS_NE_M, ConfigError, int_within,
                            mounted, one_of)
from harness.sim.ground_world import GroundWorld, plot_over_time, plot_trajectory
from harness.sim.i2c import MPU6050_DEFAULTS, MPU6050_SETTING_RANGES, PlanarMotionSource, SimI2cBus, SimMpu6050
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, SETTING_RANGES as POSE_RANGES
from harness.sim.sensors.sim_sensor import SimSensor
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, SETTING_RANGES as VEHICLE_RANGES
from harness.sim.vesc import SETTING_RANGES as SIM_VESC_RANGES
from harness.sim.vesc_tracks import SIDES, TOPOLOGIES, TRACK_VESC, SimVescTracks
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS, SETTING_RANGES as FOLLOWER_RANGES
from onboard.core.units import hz_to_period_us
from onboard.runtime.ground_robot import SETTING_RANGES as RUNTIME_RANGES, rate_rules, runtime_config
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "Pi ground robot drives two simulated VESCs over ptys (VESC UART protocol) to way-points"

DEFAULTS = {
    "max_duration_s": 60.0,             # simulated s; the run ends earlier when the last way-point is reached
    "physics_hz": 1000,                 # robot and motor physics steps per simulated second
    "uart_service_hz": 1000,            # how often the simulated VESCs read and answer their UART
    "record_hz": 20,                    # truth/estimate/eRPM records (metrics, plots, /truth) per second
    "topology": "two_uarts",            # two_uarts (a pty per VESC) | can_forward (right VESC behind the left on CAN)
    "waypoints_ne_m": [[2.0, 0.0], [2.0, 1.5], [0.5, 1.5]],     # [north_m, east_m]
    "vehicle": dict(VEHICLE_DEFAULTS),  # the simulated robot (its motor lag is the VESCs' here)
    "aiding": dict(POSE_DEFAULTS),      # rate and errors of the aiding pose (ag2u eq. 13)
    "imu": dict(MPU6050_DEFAULTS),      # rate and errors of the simulated MPU-6050 (harness.sim.i2c)
    "vesc": dict(TRACK_VESC),           # the simulated VESCs' motor model (harness.sim.vesc)
    "drive": {"gear_ratio": C.GEAR_RATIO, "pole_pairs": C.MOTOR_POLE_PAIRS,       # motor eRPM per wheel rad/s
              "telemetry_rate_hz": C.TELEMETRY_RATE_HZ, "stop_brake_current_a": C.STOP_BRAKE_CURRENT_A},
    "runtime": {"control_rate_hz": 50, "imu_timeout_us": 50000, "aiding_timeout_us": 500000},
    "follower": dict(FOLLOWER_DEFAULTS),
    # injected faults, at simulated s (< 0: none): a port unplugged (and plugged back), a VESC fault code
    # (5: OVER_TEMP_FET) raised on one motor for fault_duration_s
    "faults": {"unplug_s": -1.0, "replug_s": -1.0, "unplug_port": "left",
               "vesc_fault_s": -1.0, "fault_code": 5, "fault_motor": "right", "fault_duration_s": 0.5},
}

# a run of a few simulated seconds (the identical-seed test, `run --reduced`)
REDUCED = {"max_duration_s": 8.0, "waypoints_ne_m": [[1.0, 0.0]]}

# checked before anything runs (harness.config rules; the blocks' rules from their components);
# the fault times (< 0: none) take any number; the fault code is a byte of the VESC's replies (mc_fault_code,
# 0 = FAULT_CODE_NONE: no fault)
SETTING_RANGES = dict({"max_duration_s": POSITIVE, "physics_hz": RATE_HZ, "uart_service_hz": RATE_HZ,
                       "record_hz": RATE_HZ, "topology": one_of(*TOPOLOGIES),
                       "waypoints_ne_m": WAYPOINTS_NE_M, "faults.unplug_port": one_of("left", "right"),
                       "faults.fault_motor": one_of("left", "right"), "faults.fault_code": int_within(1, 255),
                       "faults.fault_duration_s": NON_NEGATIVE, "faults.unplug_s": ANY_NUMBER,
                       "faults.replug_s": ANY_NUMBER, "faults.vesc_fault_s": ANY_NUMBER},
                      **mounted(DEFAULTS, ("vehicle", VEHICLE_RANGES), ("imu", MPU6050_SETTING_RANGES),
                                ("aiding", POSE_RANGES), ("vesc", SIM_VESC_RANGES), ("drive", DRIVE_SETTING_RANGES),
                                ("runtime", RUNTIME_RANGES), ("follower", FOLLOWER_RANGES)))
SETTING_RANGES.update(rate_rules("imu.rate_hz", "aiding.rate_hz", "runtime.control_rate_hz", "drive.telemetry_rate_hz"))


def check_settings(config):
    """A port is plugged back in after it is unplugged: a replug time before the unplug time would plug in a
    port still plugged (nothing happens) and time the recovery from it."""
    faults = config["faults"]
    if faults["unplug_s"] >= 0 and 0 <= faults["replug_s"] < faults["unplug_s"]:
        raise ConfigError("setting config.faults.replug_s must be < 0 (never) or at least config.faults.unplug_s "
                          "(%r), got %r" % (faults["unplug_s"], faults["replug_s"]))


class I2cImu(SimSensor):
    """The Pi's MPU-6050 on a simulated I2C bus (``bus``): every tick writes the robot's specific force
    (m/s^2) and rate (rad/s), body FRD, with white noise (random stream "imu_noise"), into the
    register-level simulated chip, whose data registers the board's driver reads in the app's io group.
    The chip's constant gyro bias is drawn once (random stream "imu")."""

    def __init__(self, robot, random, config):
        self.bus = SimI2cBus()
        chip = self.bus.attach(C.MPU6050_I2C_ADDR, SimMpu6050())
        chip.gyro_bias_radps = tuple(float(v) for v in
                                     random.stream("imu").normal(0.0, math.radians(config["gyro_bias_sigma_dps"]), 3))
        SimSensor.__init__(self, config["rate_hz"], lambda motion: chip.set_motion(*motion))
        self.motion = PlanarMotionSource(robot)
        self.noise = random.stream("imu_noise")
        self.accel_noise_mps2 = config["accel_noise_mps2"]
        self.gyro_noise_radps = math.radians(config["gyro_noise_dps"])

    def sample(self, now_us):
        f, w = self.motion.sample(now_us)
        noise = self.noise
        f = [f[i] + float(noise.normal(0.0, self.accel_noise_mps2)) for i in range(3)]
        w = [w[i] + float(noise.normal(0.0, self.gyro_noise_radps)) for i in range(3)]
        return f, w


def run(config, ctx):
    drive = config["drive"]
    tracks = SimVescTracks(config["vesc"], config["topology"],
                           C.erpm_per_radps(drive["gear_ratio"], drive["pole_pairs"]),
                           config["vehicle"]["max_wheel_radps"], drive["stop_brake_current_a"], log=ctx.log)
    try:
        tracking = tracks.track_rpm(1.0 / config["physics_hz"], drive["telemetry_rate_hz"])
        world = GroundWorld(config["vehicle"], ctx.random, ctx.log)
        imu = I2cImu(world.robot, ctx.random, config["imu"])
        app = RpiGroundRobot(config["waypoints_ne_m"], tracks.driver,
                             imu=Mpu6050(imu.bus, C.MPU6050_I2C_ADDR, rate_hz=config["imu"]["rate_hz"]),
                             runtime_config=runtime_config(config["runtime"], config["imu"]["rate_hz"],
                                                           config["aiding"]["rate_hz"], config["vehicle"]),
                             follower_config=config["follower"], log=ctx.log,
                             telemetry_rate_hz=drive["telemetry_rate_hz"])
        world.start(app, record=ctx.log, code_version=code_version())
        world.show(ctx.mcap, config["waypoints_ne_m"])  # Foxglove views on /viz/... (docs/foxglove/README.md)
        app.start(0)
        tracks.attach(world, config["uart_service_hz"])
        world.drive(config["physics_hz"], tracks=tracks)
        world.add_sensor(imu)
        world.add_aiding(config["aiding"], app.runtime.on_pose)
        events = _inject_faults(world, tracks, config["faults"])
        motors = tracks.driver.motors
        world.record(config["record_hz"], logged=("erpm",), extra=lambda t: {
            "erpm": (tracks.left.erpm, tracks.right.erpm),
            "cmd_erpm": (motors["left"].target_erpm, motors["right"].target_erpm)})
        world.run_mission(config["max_duration_s"], 20000, ctx.progress(config["max_duration_s"], "vesc-waypoints"),
                          each_step=tracking.check)
        rep = app.report()                       # before shutdown closes the links
        app.shutdown(world.clock.now_us(), reason="mission end")
        # let the VESCs receive the shutdown commands (release) before reading their state
        world.clock.advance(2 * hz_to_period_us(config["uart_service_hz"]))
        metrics = world.mission_metrics(config["waypoints_ne_m"])
        metrics.update(tracking.metrics(), **_vesc_metrics(config, world, tracks, rep, events))
        metrics["imu_reads"] = app.imu.reads
        metrics["rates_hz"] = {name: g["achieved_hz"] for name, g in app.scheduler.report()["groups"].items()}
        if ctx.report is not None:
            _plots(ctx.report, world.rec, config)
        return metrics
    finally:
        tracks.close()


def _inject_faults(world, tracks, faults):
    """Schedule the configured faults; {"unplugged_us" | "replugged_us" | "vesc_fault_us": time} as they fire."""
    events = {}

    def at(time_s, name, action):
        def fire(t):
            action(t)
            events[name] = t
        world.at_s(time_s, fire)
    if faults["unplug_s"] >= 0:
        port = tracks.port_of[faults["unplug_port"]]
        at(faults["unplug_s"], "unplugged_us", lambda t: port.unplug())
        if faults["replug_s"] >= 0:
            at(faults["replug_s"], "replugged_us", lambda t: port.plug())
    if faults["vesc_fault_s"] >= 0:
        sim = tracks.sims[faults["fault_motor"]]
        at(faults["vesc_fault_s"], "vesc_fault_us",
           lambda t: sim.inject_fault(faults["fault_code"], t, faults["fault_duration_s"]))
    return events


def _vesc_metrics(config, world, tracks, rep, events):
    """The motors path's outcome: the driver's and the links' counters, the simulated VESCs' state at the
    end, the fault events, and how the robot reacted to the injected faults."""
    rec = world.rec
    out = {
        "topology": config["topology"],
        "max_abs_erpm": max([abs(e) for pair in rec["erpm"] for e in pair] or [1.0]),
        "failsafe_engagements": rep["runtime"]["failsafe_engagements"],
        "fault_events": rep["fault_events"],
        "fault_events_count": len(rep["fault_events"]),
        "driver": {k: rep["motors"][k] for k in ("commands", "stops", "refused_commands",
                                                   "unrouted_replies", "bad_replies", "faults")},
        "links": rep["motors"]["links"],
        "sim_ports": [p.report() for p in tracks.ports],
        "sim_vesc": {n: {"timeouts": s.timeouts, "fault_code": s.fault_code, "mode": s.mode, "erpm": s.erpm,
                         "commands": {str(k): v for k, v in sorted(s.commands.items(), key=lambda kv: str(kv[0]))}}
                     for n, s in tracks.sims.items()},
        "events_us": events,
        "released_at_end": all(s.mode == "released" for s in tracks.sims.values()),
        "imu_errors": rep["imu_errors"],
    }
    t_s = rec["t_s"]
    for key in ("unplugged_us", "vesc_fault_us"):        # robot speed 1 s after a fault
        if key in events:
            t_f = events[key] * 1e-6
            after = [abs(v) for t, v in zip(t_s, rec["speed_mps"]) if t_f + 1.0 <= t <= t_f + 1.5]
            out[key.replace("_us", "") + "_speed_after_1s_mps"] = max(after) if after else None
    if "replugged_us" in events:                         # driving resumed after a replug
        t_r = events["replugged_us"] * 1e-6
        moving = [t for t, fs, e in zip(t_s, rec["failsafe"], rec["erpm"])
                  if t > t_r and not fs and max(abs(e[0]), abs(e[1])) > 100.0]
        out["resumed_after_replug_s"] = (moving[0] - t_r) if moving else None
    return out


def _plots(report, rec, config):
    plot_trajectory(report, rec, config["vehicle"]["start_ne_m"], config["waypoints_ne_m"],
                    "vesc-waypoints (%s): truth vs onboard estimate" % config["topology"])
    plot_over_time(report, "erpm", "track motors: SetRPM commands and simulated VESC speed", rec["t_s"], [
        ("%s motor" % side, "speed (eRPM)", [
            ([e[k] for e in rec["erpm"]], "motor (simulated VESC)", {"color": "C%d" % k, "lw": 2}),
            ([e[k] for e in rec["cmd_erpm"]], "commanded (SetRPM)", {"color": "k", "ls": "--", "lw": 1})])
        for k, side in enumerate(SIDES)], shading=[(rec["failsafe"], "runtime failsafe engaged", "red")])
