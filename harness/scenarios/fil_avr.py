"""Scenario `fil-avr`: way-point mission with the AVR firmware as the robot's low level.

The "Raspberry Pi" side is the AVR robot's host app (boards.arduino.app.AvrGroundRobot:
the ground robot's planar EKF + way-point follower + watchdog on one Node) with the AVR
link driver (boards/arduino) as its ``motors`` and its IMU source. The driver speaks the robot link protocol over a pseudo-terminal to the real
firmware ELF (firmware/arduino, Uno or 32U4 build) running in simavr; the bridge
emulates the MPU-6050 on I2C, generates the XOR-ed quadrature encoder edges (thesis
4.3.1) from the simulated wheels and reads the PWM/direction pins back to drive the
simulated motors of a skid-steer robot. The firmware closes the wheel speed loop on its
encoders; the runtime closes the position loop on IMU (from the firmware's telemetry)
+ aiding pose (ag2u eq. 13). Everything advances in lockstep on one simulated clock.

Optional link dropout: the host's commands stop reaching the board for a while; the
firmware's 250 ms failsafe must stop the motors, and the mission resumes afterwards.
"""
import math
import time

from boards.arduino import board as AVR
from boards.arduino.app import AvrGroundRobot
from harness.sim.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock
from harness import setting_ranges as RANGES
from harness.config import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, WAYPOINTS_NE_M, check_ranges, int_at_least, one_of,
                            or_null)
from harness.sim.avr_bridge import PLANT_DEFAULTS, AvrBridge, AvrPlant, ensure_built, open_link, size_report
from harness.metrics import rms as _rms, tracking_errors
from harness.scenarios.waypoints import viz_record, viz_start
from harness.sim.sensors.imu import DEFAULTS as IMU_DEFAULTS, PlanarImu
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, AidingPoseSensor
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, DiffDriveRobot
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS
from onboard.core.units import hz_to_period_us, s_to_us
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "way-points with the real AVR firmware (simavr, pty link) as the robot's low level"

_VEHICLE = dict(VEHICLE_DEFAULTS)
_VEHICLE["max_wheel_radps"] = PLANT_DEFAULTS["motor_no_load_radps"]

DEFAULTS = {
    "board": "uno",                       # "uno" (ATmega328P) or "leonardo" (ATmega32U4)
    "max_duration_s": 60.0,
    "record_hz": 20,
    "waypoints_ne_m": [[2.0, 0.0], [2.0, 1.5], [0.5, 1.5], [0.5, 0.3]],
    "vehicle": _VEHICLE,
    "plant": dict(PLANT_DEFAULTS),
    "imu": dict(IMU_DEFAULTS),            # errors of the simulated MPU-6050 (ag2u eq. 10)
    "aiding": dict(POSE_DEFAULTS),
    "runtime": {k: RUNTIME_DEFAULTS[k] for k in ("control_rate_hz", "imu_timeout_us",
                                                  "aiding_timeout_us", "latching_failsafe")},
    "follower": dict(FOLLOWER_DEFAULTS),
    "link_dropout": {"start_s": None, "duration_s": 0.0},
}


class _DroppableMotors:
    """The runtime's motors: the AVR link, with a switch that stops commands reaching it."""

    def __init__(self, link):
        self.link = link
        self.muted = False
        self.dropped = 0

    def command(self, wheel_cmd):
        if self.muted:
            self.dropped += 1
            return None
        return self.link.command(wheel_cmd)

    def stop(self, now_us):
        if self.muted:
            self.dropped += 1
            return None
        return self.link.stop(now_us)


# checked before the firmware is built or simavr starts (harness.config rules; the shared blocks from
# harness.setting_ranges); link_dropout.start_s is null (none) or a time
SETTING_RANGES = dict({"board": one_of(*sorted(AVR.BOARDS)), "max_duration_s": POSITIVE,
                       "record_hz": int_at_least(1),
                       "waypoints_ne_m": WAYPOINTS_NE_M, "plant.physics_hz": int_at_least(1),
                       "plant.bridge_window_us": int_at_least(1), "plant.motor_no_load_radps": POSITIVE,
                       "plant.imu_update_hz": int_at_least(1), "plant.imu_model": one_of("noisy", "truth"),
                       "plant.imu_dlpf_hz": POSITIVE, "link_dropout.duration_s": NON_NEGATIVE,
                       "link_dropout.start_s": or_null(ANY_NUMBER)},
                      **RANGES.mounted(DEFAULTS, ("vehicle", RANGES.VEHICLE), ("imu", RANGES.IMU),
                                       ("aiding", RANGES.AIDING), ("runtime", RANGES.RUNTIME),
                                       ("follower", RANGES.FOLLOWER)))


def run(config, ctx):
    check_ranges(config, SETTING_RANGES)
    board = config["board"]
    ensure_built()
    wall_start = time.perf_counter()
    clock = SimClock()
    robot = DiffDriveRobot(config["vehicle"])
    imu_model = PlanarImu(robot, ctx.random.stream("imu"), config["imu"])
    bridge = AvrBridge(board)
    serial = link = None
    try:
        serial, link = open_link(bridge, log=ctx.log)
        plant = AvrPlant(bridge, robot, imu_model, config["plant"])
        motors = _DroppableMotors(link)
        runtime_cfg = dict(config["runtime"])
        runtime_cfg.update(imu_rate_hz=1000000 // AVR.TELEMETRY_PERIOD_US,
                           aiding_rate_hz=config["aiding"]["rate_hz"],
                           wheelbase_m=config["vehicle"]["wheelbase_m"],
                           wheel_radius_m=config["vehicle"]["wheel_radius_m"],
                           max_wheel_radps=AVR.MAX_WHEEL_RADPS)
        app = AvrGroundRobot(config["waypoints_ne_m"], link, runtime_cfg, follower_config=config["follower"],
                             log=ctx.log, motors=motors)
        runtime = app.runtime
        app.record(ctx.log, code_version())     # `python -m harness replay log.mcap`
        viz = viz_start(ctx, config)            # Foxglove views on /viz/... (docs/foxglove/README.md)
        aiding = AidingPoseSensor(lambda: ((robot.north_m, robot.east_m, 0.0), (0.0, 0.0, robot.yaw_rad)),
                                  ctx.random.stream("aiding"), config["aiding"])
        rec = {"t_s": [], "truth": [], "est": [], "yaw_true": [], "yaw_est": [], "duty": [],
               "wheels": [], "cmd": [], "fw_failsafe": []}

        def cosim(t):
            st = plant.step(t, serial.tx_bytes)
            if st is not None:
                serial.sync_rx(st.tx_bytes)
                link.poll(t)

        def aiding_tick(t):
            s = aiding.sample(t)
            if s is not None:
                runtime.on_pose(s)
                ctx.log("/aiding/pose", t, s)

        def record(t):
            nav = runtime.estimator.nav_state()
            tel = link.telemetry
            rec["t_s"].append(t * 1e-6)
            rec["truth"].append((robot.north_m, robot.east_m))
            rec["est"].append((nav.pos_ned_m[0], nav.pos_ned_m[1]))
            rec["yaw_true"].append(robot.yaw_rad)
            rec["yaw_est"].append(nav.euler_rad[2])
            rec["duty"].append((plant.duty_left, plant.duty_right))
            rec["wheels"].append((robot.left_radps, robot.right_radps))
            cmd = runtime.last_cmd
            rec["cmd"].append((cmd.left_radps, cmd.right_radps) if cmd is not None else (0.0, 0.0))
            rec["fw_failsafe"].append(1 if tel is not None and tel.faults & 0x0001 else 0)
            ctx.log("/truth", t, {"time_us": t, "pos_ned_m": [robot.north_m, robot.east_m, 0.0],
                                  "yaw_rad": robot.yaw_rad, "duty": [plant.duty_left, plant.duty_right],
                                  "wheels_radps": [robot.left_radps, robot.right_radps]})
            viz_record(viz, t, robot, nav, runtime.follower.index)

        clock.call_every(plant.dt_us, cosim, start_us=plant.dt_us, priority=PRIORITY_PHYSICS)
        clock.call_every(hz_to_period_us(config["aiding"]["rate_hz"]), aiding_tick, priority=PRIORITY_SENSOR)
        clock.call_every(hz_to_period_us(config["record_hz"]), record, priority=PRIORITY_SENSOR + 1)
        drop = config["link_dropout"]
        if drop.get("start_s") is not None and drop.get("duration_s", 0) > 0:
            start_us = s_to_us(drop["start_s"])
            clock.call_at(start_us, lambda t: setattr(motors, "muted", True))
            clock.call_at(start_us + s_to_us(drop["duration_s"]), lambda t: setattr(motors, "muted", False))

        end_us = s_to_us(config["max_duration_s"])
        progress = ctx.progress(config["max_duration_s"], "fil-avr (%s)" % board)
        t = 0
        while t < end_us and runtime.mission_complete_us is None:
            t = min(end_us, t + 1000000)
            app.run(clock, t)
            progress.update_to(t * 1e-6)
        progress.close()
        # let the stop command reach the board, then read its counters
        link.ping(clock.now_us())
        link.request_status(clock.now_us())
        clock.advance(30000)
        wall_s = time.perf_counter() - wall_start
        fw = link.status.fields if link.status is not None else {}
        bridge_stats = bridge.stats()
    finally:
        if serial is not None:
            serial.close()
        bridge.close()

    path_err, est_err, yaw_err = tracking_errors(rec, config["vehicle"]["start_ne_m"], config["waypoints_ne_m"])
    rep = runtime.report()
    n_wp = len(config["waypoints_ne_m"])
    final = config["waypoints_ne_m"][-1]
    lat = link.cmd_latency_stats
    sim_s = clock.now_us() * 1e-6
    size = size_report(board)
    metrics = {
        "board": board,
        "mcu": AVR.BOARDS[board]["mcu"],
        "success": runtime.follower.index == n_wp,
        "waypoints_reached": runtime.follower.index,
        "waypoints_total": n_wp,
        "time_to_complete_s": (runtime.mission_complete_us * 1e-6
                               if runtime.mission_complete_us is not None else None),
        "sim_time_s": sim_s,
        "wall_time_s": wall_s,
        "sim_to_wall": sim_s / wall_s if wall_s > 0 else None,
        "path_error_rms_m": _rms(path_err),
        "path_error_max_m": max(path_err) if path_err else 0.0,
        "final_position_error_m": math.hypot(robot.north_m - final[0], robot.east_m - final[1]),
        "estimate_position_error_rms_m": _rms(est_err),
        "estimate_yaw_error_rms_deg": _rms(yaw_err),
        "distance_travelled_m": robot.distance_m,
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
    if ctx.report is not None:
        _plots(ctx.report, rec, config, board)
    return metrics


def _plots(report, rec, config, board):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 6))
    wps = [tuple(config["vehicle"]["start_ne_m"])] + [tuple(w) for w in config["waypoints_ne_m"]]
    ax.plot([w[1] for w in wps], [w[0] for w in wps], "k--", lw=1, label="planned path")
    ax.plot([p[1] for p in rec["truth"]], [p[0] for p in rec["truth"]], "C0", lw=2, label="ground truth")
    ax.plot([p[1] for p in rec["est"]], [p[0] for p in rec["est"]], "C1", lw=1, label="onboard estimate")
    ax.scatter([w[1] for w in wps[1:]], [w[0] for w in wps[1:]], c="C3", zorder=5, label="way-points")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title("fil-avr (%s firmware in simavr)" % board)
    report.save_figure(fig, "trajectory")

    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    t = rec["t_s"]
    for i, side in enumerate(("left", "right")):
        axes[0].plot(t, [c[i] for c in rec["cmd"]], "C%d--" % i, lw=1, label="%s command" % side)
        axes[0].plot(t, [w[i] for w in rec["wheels"]], "C%d" % i, lw=1.5, label="%s truth" % side)
        axes[1].plot(t, [d[i] for d in rec["duty"]], "C%d" % i, label=side)
    axes[0].set_ylabel("wheel speed\n[rad/s]")
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].set_ylabel("PWM duty\n(read back)")
    axes[1].legend(fontsize=7)
    axes[2].plot(t, rec["fw_failsafe"], "C3")
    axes[2].set_ylabel("firmware\nfailsafe")
    axes[2].set_xlabel("time [s]")
    for a in axes:
        a.grid(True, alpha=0.3)
    fig.suptitle("AVR low level: commands, wheel speeds, duty")
    report.save_figure(fig, "wheels")
