"""Scenario `fil-avr`: way-point mission with the AVR firmware as the robot's low level.

The "Raspberry Pi" side is the AVR robot's host app (boards.arduino.app.AvrGroundRobot: the ground
robot's planar EKF + way-point follower + watchdog on one Node) in the simulated ground world
(``harness.sim.ground_world``), with the AVR link driver (boards/arduino) as its motors and its IMU
source. The driver speaks the robot link protocol over a pseudo-terminal to the real firmware ELF
(firmware/arduino, Uno or 32U4 build) running in simavr (``harness.sim.avr_bridge``). Its motors path:
the bridge generates the XOR-ed quadrature encoder edges (thesis 4.3.1) from the simulated wheels and
reads the PWM/direction pins back to drive the robot's motors; the firmware closes the wheel speed loop
on its encoders. Its IMU path: the bridge emulates the MPU-6050 on I2C (ag2u eq. 10 errors through the
chip's low-pass), the firmware reads it and streams it in its telemetry. The runtime closes the
position loop on that IMU + the world's aiding pose (ag2u eq. 13). Everything advances in lockstep on
one simulated clock.

Optional link dropout: the host's commands stop reaching the board for a while; the firmware's
250 ms failsafe must stop the motors, and the mission resumes afterwards.
"""
import time

from boards.arduino import board as AVR
from boards.arduino.app import AvrGroundRobot
from harness.config import POSITIVE, RATE_HZ, WAYPOINTS_NE_M, mounted, one_of
from harness.sim.avr_bridge import (LINK_DROPOUT_RANGES, PLANT_DEFAULTS, PLANT_SETTING_RANGES, AvrBridge, AvrPlant,
                                    DroppableMotors, ensure_built, open_link, size_report)
from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.ground_world import GroundWorld, plot_over_time, plot_trajectory
from harness.sim.sensors.imu import DEFAULTS as IMU_DEFAULTS, SETTING_RANGES as IMU_RANGES
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, SETTING_RANGES as POSE_RANGES
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, SETTING_RANGES as VEHICLE_RANGES
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS, SETTING_RANGES as FOLLOWER_RANGES
from onboard.core.units import s_to_us
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS, SETTING_RANGES as RUNTIME_RANGES, runtime_config
from onboard.runtime.mcap_log import code_version
from onboard.runtime.scheduler import GROUP_RATES

DESCRIPTION = "way-points with the real AVR firmware (simavr, pty link) as the robot's low level"

_VEHICLE = dict(VEHICLE_DEFAULTS)
_VEHICLE["max_wheel_radps"] = PLANT_DEFAULTS["motor_no_load_radps"]

DEFAULTS = {
    "board": "uno",                       # "uno" (ATmega328P) or "leonardo" (ATmega32U4)
    "max_duration_s": 60.0,               # simulated s; the run ends earlier when the last way-point is reached
    "record_hz": 20,                      # truth/estimate/duty records (metrics, plots, /truth) per second
    "waypoints_ne_m": [[2.0, 0.0], [2.0, 1.5], [0.5, 1.5], [0.5, 0.3]],    # [north_m, east_m]
    "vehicle": _VEHICLE,                  # the simulated robot; its top wheel speed is the motors' no-load speed
    "plant": dict(PLANT_DEFAULTS),        # motors, encoders and MPU-6050 around the firmware (harness.sim.avr_bridge)
    # errors of the simulated MPU-6050 (ag2u eq. 10); its output rate is plant.imu_update_hz, the host's
    # IMU rate the firmware's telemetry rate (boards.arduino.board.TELEMETRY_PERIOD_US)
    "imu": {k: v for k, v in IMU_DEFAULTS.items() if k != "rate_hz"},
    "aiding": dict(POSE_DEFAULTS),        # rate and errors of the aiding pose (ag2u eq. 13)
    "runtime": {k: RUNTIME_DEFAULTS[k] for k in ("control_rate_hz", "imu_timeout_us",
                                                  "aiding_timeout_us", "latching_failsafe")},
    "follower": dict(FOLLOWER_DEFAULTS),
    "link_dropout": {"start_s": None, "duration_s": 0.0},     # host commands lost from start_s (null: never), s
}

# a run of a few simulated seconds (the identical-seed test, `run --reduced`)
REDUCED = {"max_duration_s": 3.0, "waypoints_ne_m": [[0.5, 0.0]]}


# checked before the firmware is built or simavr starts (harness.config rules; the blocks' rules from their
# components); link_dropout.start_s is null (none) or a time inside the run
SETTING_RANGES = {**{"board": one_of(*sorted(AVR.BOARDS)), "max_duration_s": POSITIVE, "record_hz": RATE_HZ,
                     "waypoints_ne_m": WAYPOINTS_NE_M},
                  **LINK_DROPOUT_RANGES,
                  **mounted(DEFAULTS, ("vehicle", VEHICLE_RANGES), ("plant", PLANT_SETTING_RANGES), ("imu", IMU_RANGES),
                            ("aiding", POSE_RANGES), ("runtime", RUNTIME_RANGES), ("follower", FOLLOWER_RANGES))}
# the host's scheduler runs the IMU group at the firmware's telemetry rate (fixed), the aiding and control groups
_IMU_RATE_HZ = 1000000 // AVR.TELEMETRY_PERIOD_US
SETTING_RANGES[("aiding.rate_hz", "runtime.control_rate_hz")] = (
    "rates one scheduler can run with the IMU group at the firmware's telemetry rate (%d Hz): each divides the "
    "fastest, whose period is a whole number of microseconds" % _IMU_RATE_HZ,
    lambda aiding_hz, control_hz: GROUP_RATES[1](_IMU_RATE_HZ, aiding_hz, control_hz))


def run(config, ctx):
    board = config["board"]
    ensure_built()
    wall_start = time.perf_counter()
    world = GroundWorld(config["vehicle"], ctx.random, ctx.log)
    bridge = AvrBridge(board)
    serial = None
    try:
        serial, link = open_link(bridge, log=ctx.log)
        plant = AvrPlant(bridge, world.robot, world.imu_model(config["imu"]), config["plant"])
        motors = DroppableMotors(link)
        app = AvrGroundRobot(config["waypoints_ne_m"], link,
                             runtime_config(config["runtime"], _IMU_RATE_HZ,
                                            config["aiding"]["rate_hz"], config["vehicle"], AVR.MAX_WHEEL_RADPS),
                             follower_config=config["follower"], log=ctx.log, motors=motors)
        world.start(app, record=ctx.log, code_version=code_version())
        world.show(ctx.mcap, config["waypoints_ne_m"])  # Foxglove views on /viz/... (docs/foxglove/README.md)
        world.clock.call_every(plant.dt_us, _cosim(plant, serial, link), start_us=plant.dt_us,
                               priority=PRIORITY_PHYSICS)
        world.add_aiding(config["aiding"], app.runtime.on_pose)
        world.record(config["record_hz"], logged=("duty",), extra=lambda t: {
            "duty": (plant.duty_left, plant.duty_right),
            "cmd": (app.runtime.last_cmd.left_radps, app.runtime.last_cmd.right_radps)
            if app.runtime.last_cmd is not None else (0.0, 0.0),
            "fw_failsafe": 1 if link.telemetry is not None and link.telemetry.faults & 0x0001 else 0})
        _link_dropout(world, motors, config["link_dropout"])
        world.run_mission(config["max_duration_s"], 1000000,
                          ctx.progress(config["max_duration_s"], "fil-avr (%s)" % board))
        # let the stop command reach the board, then read its counters
        link.ping(world.clock.now_us())
        link.request_status(world.clock.now_us())
        world.clock.advance(30000)
        wall_s = time.perf_counter() - wall_start
        ctx.timing(wall_time_s=wall_s, sim_to_wall=world.sim_time_s / wall_s if wall_s > 0 else None)
        fw = link.status.fields if link.status is not None else {}
        bridge_stats = bridge.stats()
    finally:
        if serial is not None:
            serial.close()
        bridge.close()

    metrics = world.mission_metrics(config["waypoints_ne_m"])
    metrics.update(_avr_metrics(board, app, link, motors, fw, bridge_stats))
    if ctx.report is not None:
        _plots(ctx.report, world.rec, config)
    return metrics


def _avr_metrics(board, app, link, motors, fw, bridge_stats):
    """The low level's outcome: the runtime's failsafe and rejected samples, the link's latency and
    counters, the firmware's own counters (its status), its size, and the bridge's byte counts."""
    rep = app.runtime.report()
    lat = link.cmd_latency_stats
    size = size_report(board)
    return {
        "board": board,
        "mcu": AVR.BOARDS[board]["mcu"],
        "runtime_failsafe_engagements": rep["failsafe_engagements"],
        "rejected_samples": rep["rejected_samples"],
        "cmd_to_telemetry_latency_us": {"mean": lat["sum_us"] / lat["n"] if lat["n"] else None,
                                        "max": lat["max_us"] if lat["n"] else None, "n": lat["n"]},
        "ping_rtt_us": link.ping_rtt_us,
        "link": link.counters(),
        "commands_dropped_by_dropout": motors.dropped,
        "firmware": fw,
        "firmware_flash_bytes": size["flash_bytes"],
        "firmware_ram_bytes": size["ram_bytes"],
        "bridge": {k: bridge_stats[k] for k in ("tx_bytes", "rx_bytes", "tx_dropped", "resets",
                                                "imu_burst_reads", "backpressure_waits")},
    }


def _cosim(plant, serial, link):
    """The lockstep step: the plant (robot, encoders, IMU) and, at a window's end, the firmware; then the
    host reads every byte the firmware sent and the driver decodes it at the same simulated time."""
    def step(t):
        st = plant.step(t, serial.tx_bytes)
        if st is not None:
            serial.sync_rx(st.tx_bytes)
            link.poll(t)
    return step


def _link_dropout(world, motors, drop):
    """Mute the host's commands for ``duration_s`` from ``start_s`` (None: never)."""
    if drop["start_s"] is not None and drop["duration_s"] > 0:
        start_us = s_to_us(drop["start_s"])
        world.clock.call_at(start_us, lambda t: setattr(motors, "muted", True))
        world.clock.call_at(start_us + s_to_us(drop["duration_s"]), lambda t: setattr(motors, "muted", False))


def _plots(report, rec, config):
    plot_trajectory(report, rec, config["vehicle"]["start_ne_m"], config["waypoints_ne_m"],
                    "fil-avr (%s firmware in simavr): truth vs onboard estimate" % config["board"])
    panels = [("%s wheel" % side, "speed (rad/s)", [
        ([w[k] for w in rec["wheels_radps"]], "truth", {"color": "C%d" % k, "lw": 2}),
        ([c[k] for c in rec["cmd"]], "commanded (host)", {"color": "k", "ls": "--", "lw": 1})])
        for k, side in enumerate(("left", "right"))]
    panels.append(("PWM duty read back from the firmware's pins", "duty (-1..1)", [
        ([d[0] for d in rec["duty"]], "left", {"color": "C0", "lw": 2}),
        ([d[1] for d in rec["duty"]], "right", {"color": "C1", "ls": "--", "lw": 1})]))
    plot_over_time(report, "wheels", "AVR low level: commands, wheel speeds, duty", rec["t_s"], panels,
                   shading=[(rec["fw_failsafe"], "firmware failsafe engaged", "red")])
