"""Scenario `vesc-waypoints`: the Pi ground robot drives two simulated VESCs over ptys.

The board application (boards.rpi.app.RpiGroundRobot: GroundRobotRuntime + VESC
driver + MPU-6050 driver) runs on the simulated clock. Its VESC driver opens the
simulated VESCs' pseudo-terminals with pyserial (the real serial path) and speaks
the VESC UART protocol: SetRPM from the wheel commands, GetValues telemetry,
keep-alive. The motors' eRPM (first-order speed loop with a current limit, in the
simulated VESCs) turn the robot's wheels; the IMU driver reads a register-level
simulated MPU-6050 on a simulated I2C bus; the aiding pose is the harness's
(ag2u eq. 13) sensor. Topologies: ``two_uarts`` (one pty per VESC) or
``can_forward`` (right VESC behind the left one, COMM_FORWARD_CAN on one UART).
Fault injection: unplug/replug a port, raise a VESC fault code.

The app records at its boundary into log.mcap (IMU and pose samples, the driver's fault sets,
ticks, commands): ``python -m harness replay REPORT/log.mcap`` re-runs it.
"""
import collections
import math

from boards.rpi import board as C
from boards.rpi.app import RpiGroundRobot
from boards.rpi.imu_mpu6050 import Mpu6050
from harness.sim.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock
from harness import setting_ranges as RANGES
from harness.config import ANY_NUMBER, NON_NEGATIVE, POSITIVE, WAYPOINTS_NE_M, check_ranges, int_at_least, one_of
from harness.metrics import path_error_m
from harness.scenarios.waypoints import viz_record, viz_start
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, AidingPoseSensor
from harness.sim.i2c import PlanarMotionSource, SimI2cBus, SimMpu6050
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, DiffDriveRobot
from harness.sim.vesc_tracks import TOPOLOGIES, TRACK_VESC, SimVescTracks
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS
from onboard.core.units import hz_to_period_us, s_to_us
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "Pi ground robot drives two simulated VESCs over ptys (VESC UART protocol) to way-points"

DEFAULTS = {
    "max_duration_s": 60.0,
    "physics_hz": 1000,
    "uart_service_hz": 1000,
    "record_hz": 20,
    "topology": "two_uarts",                 # or "can_forward"
    "waypoints_ne_m": [[2.0, 0.0], [2.0, 1.5], [0.5, 1.5]],
    "vehicle": dict(VEHICLE_DEFAULTS),
    "aiding": dict(POSE_DEFAULTS),
    "imu": {"rate_hz": 100, "gyro_bias_sigma_dps": 0.3, "gyro_noise_dps": 0.05,
            "accel_noise_mps2": 0.02},
    "vesc": dict(TRACK_VESC),
    "drive": {"gear_ratio": C.GEAR_RATIO, "pole_pairs": C.MOTOR_POLE_PAIRS,
              "telemetry_rate_hz": C.TELEMETRY_RATE_HZ, "stop_brake_current_a": C.STOP_BRAKE_CURRENT_A},
    "runtime": {"control_rate_hz": 50, "imu_timeout_us": 50000, "aiding_timeout_us": 500000},
    "follower": dict(FOLLOWER_DEFAULTS),
    "faults": {"unplug_s": -1.0, "replug_s": -1.0, "unplug_port": "left",
               "vesc_fault_s": -1.0, "fault_code": 5, "fault_motor": "right", "fault_duration_s": 0.5},
}


def _rms(values):
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


# checked before anything runs (harness.config rules; the shared blocks from harness.setting_ranges);
# the fault times (< 0: none) take any number
SETTING_RANGES = dict({"max_duration_s": POSITIVE, "physics_hz": int_at_least(1), "uart_service_hz": int_at_least(1),
                       "record_hz": int_at_least(1), "topology": one_of(*TOPOLOGIES),
                       "waypoints_ne_m": WAYPOINTS_NE_M, "faults.unplug_port": one_of("left", "right"),
                       "faults.fault_motor": one_of("left", "right"), "faults.fault_code": int_at_least(0),
                       "faults.fault_duration_s": NON_NEGATIVE, "faults.unplug_s": ANY_NUMBER,
                       "faults.replug_s": ANY_NUMBER, "faults.vesc_fault_s": ANY_NUMBER},
                      **RANGES.mounted(DEFAULTS, ("vehicle", RANGES.VEHICLE), ("imu", RANGES.IMU),
                                       ("aiding", RANGES.AIDING), ("vesc", RANGES.VESC_SIM),
                                       ("drive", RANGES.VESC_DRIVE), ("runtime", RANGES.RUNTIME),
                                       ("follower", RANGES.FOLLOWER)))


def run(config, ctx):
    check_ranges(config, SETTING_RANGES)
    drive = config["drive"]
    telemetry = collections.defaultdict(list)        # motor -> [(time_us, erpm)]
    tracks = SimVescTracks(config["vesc"], config["topology"],
                           C.erpm_per_radps(drive["gear_ratio"], drive["pole_pairs"]),
                           config["vehicle"]["max_wheel_radps"], drive["stop_brake_current_a"],
                           on_telemetry=lambda s: telemetry[s.motor].append((s.time_us, s.erpm)), log=ctx.log)
    try:
        return _run(config, ctx, tracks, telemetry)
    finally:
        tracks.close()


def _run(config, ctx, tracks, telemetry):
    clock = SimClock()
    vcfg = dict(config["vehicle"])
    robot = DiffDriveRobot(vcfg)
    drive = config["drive"]
    left, right, sims = tracks.left, tracks.right, tracks.sims
    port_of, unique_ports, motors = tracks.port_of, tracks.ports, tracks.driver

    # ---- IMU: board driver on a simulated I2C bus with a register-level MPU-6050
    bus = SimI2cBus()
    mpu = bus.attach(C.MPU6050_I2C_ADDR, SimMpu6050())
    rng_imu = ctx.random.stream("imu")
    icfg = config["imu"]
    mpu.gyro_bias_radps = tuple(float(v) for v in rng_imu.normal(0.0, math.radians(icfg["gyro_bias_sigma_dps"]), 3))
    motion = PlanarMotionSource(robot)
    imu = Mpu6050(bus, C.MPU6050_I2C_ADDR, rate_hz=icfg["rate_hz"])

    runtime_cfg = dict(config["runtime"])
    runtime_cfg.update(imu_rate_hz=icfg["rate_hz"], aiding_rate_hz=config["aiding"]["rate_hz"],
                       wheelbase_m=vcfg["wheelbase_m"], wheel_radius_m=vcfg["wheel_radius_m"],
                       max_wheel_radps=vcfg["max_wheel_radps"])
    app = RpiGroundRobot(config["waypoints_ne_m"], motors, imu=imu, runtime_config=runtime_cfg,
                         follower_config=config["follower"], log=ctx.log,
                         telemetry_rate_hz=drive["telemetry_rate_hz"])
    app.record(ctx.log, code_version())     # the app at its boundary: `python -m harness replay log.mcap`
    viz = viz_start(ctx, config)            # Foxglove views on /viz/... (docs/foxglove/README.md)
    app.start(0)

    # ---- lockstep world: UART service, then physics, then sensors (same-time order)
    physics_dt_s = 1.0 / config["physics_hz"]
    ref = {"left": 0.0, "right": 0.0}
    # (time_us, reference erpm after the physics step at that time, under SetRPM?)
    ref_hist = {name: collections.deque([(0, 0.0, False)], maxlen=64) for name in ("left", "right")}
    a_ref = 1.0 - math.exp(-physics_dt_s / config["vesc"]["speed_time_constant_s"])

    def physics(t):
        for name, sim in sims.items():
            sim.step(physics_dt_s, t)
            # independent reference: first-order response to the SetRPM the VESC received
            if sim.mode == "rpm":
                ref[name] += a_ref * (sim.setpoint - ref[name])
            else:
                ref[name] = sim.erpm
            ref_hist[name].append((t, ref[name], sim.mode == "rpm"))
        w_left, w_right = tracks.wheel_radps()
        robot.left_radps = robot.left_cmd_radps = w_left
        robot.right_radps = robot.right_cmd_radps = w_right
        robot.step(physics_dt_s)

    noise = ctx.random.stream("imu_noise")

    def imu_tick(t):
        f, w = motion.sample(t)
        f = [f[i] + float(noise.normal(0.0, icfg["accel_noise_mps2"])) for i in range(3)]
        w = [w[i] + float(noise.normal(0.0, math.radians(icfg["gyro_noise_dps"]))) for i in range(3)]
        mpu.set_motion(f, w)

    aiding = AidingPoseSensor(lambda: ((robot.north_m, robot.east_m, 0.0), (0.0, 0.0, robot.yaw_rad)),
                              ctx.random.stream("aiding"), config["aiding"])

    def aiding_tick(t):
        s = aiding.sample(t)
        if s is not None:
            app.runtime.on_pose(s)
            ctx.log("/aiding/pose", t, s)

    clock.call_every(hz_to_period_us(config["uart_service_hz"]), tracks.service,
                     start_us=hz_to_period_us(config["uart_service_hz"]), priority=PRIORITY_PHYSICS - 1)
    clock.call_every(hz_to_period_us(config["physics_hz"]), physics,
                     start_us=hz_to_period_us(config["physics_hz"]), priority=PRIORITY_PHYSICS)
    clock.call_every(hz_to_period_us(icfg["rate_hz"]), imu_tick, priority=PRIORITY_SENSOR)
    clock.call_every(hz_to_period_us(config["aiding"]["rate_hz"]), aiding_tick, priority=PRIORITY_SENSOR)

    # ---- fault injection
    fcfg = config["faults"]
    events = {}
    if fcfg["unplug_s"] >= 0:
        port = port_of[fcfg["unplug_port"]]

        def unplug(t):
            port.unplug()
            events["unplugged_us"] = t
        clock.call_at(s_to_us(fcfg["unplug_s"]), unplug)
        if fcfg["replug_s"] >= 0:
            def replug(t):
                port.plug()
                events["replugged_us"] = t
            clock.call_at(s_to_us(fcfg["replug_s"]), replug)
    if fcfg["vesc_fault_s"] >= 0:
        def fault(t):
            sims[fcfg["fault_motor"]].inject_fault(fcfg["fault_code"], t, fcfg["fault_duration_s"])
            events["vesc_fault_us"] = t
        clock.call_at(s_to_us(fcfg["vesc_fault_s"]), fault)

    # ---- recording
    rec = {"t_s": [], "truth": [], "failsafe": [], "speed": [], "erpm": [], "cmd_erpm": []}

    def record(t):
        rec["t_s"].append(t * 1e-6)
        rec["truth"].append((robot.north_m, robot.east_m))
        rec["failsafe"].append(1 if app.runtime.failsafe.engaged else 0)
        rec["speed"].append(robot.speed_mps)
        rec["erpm"].append((left.erpm, right.erpm))
        rec["cmd_erpm"].append((motors.motors["left"].target_erpm, motors.motors["right"].target_erpm))
        ctx.log("/truth", t, {"time_us": t, "pos_ned_m": [robot.north_m, robot.east_m, 0.0],
                              "yaw_rad": robot.yaw_rad, "speed_mps": robot.speed_mps,
                              "erpm": [left.erpm, right.erpm]})
        viz_record(viz, t, robot, app.runtime.estimator.nav_state(), app.runtime.follower.index)

    clock.call_every(hz_to_period_us(config["record_hz"]), record, priority=PRIORITY_SENSOR + 1)

    # rpm tracking: each telemetry sample against the reference within one polling period
    window_us = hz_to_period_us(drive["telemetry_rate_hz"]) + 5000
    track_err = {"left": [], "right": []}

    def check_tracking():
        for name in ("left", "right"):
            for t_s, erpm in telemetry[name][len(track_err[name]):]:
                window = [(r, in_rpm) for (t_r, r, in_rpm) in ref_hist[name] if t_s - window_us <= t_r <= t_s]
                if any(in_rpm for _r, in_rpm in window):
                    track_err[name].append(min(abs(erpm - r) for r, _in_rpm in window))
                else:
                    track_err[name].append(None)          # not under SetRPM: not a tracking sample

    end_us = s_to_us(config["max_duration_s"])
    progress = ctx.progress(config["max_duration_s"], "vesc-waypoints")
    t = 0
    chunk_us = 20000
    while t < end_us and app.runtime.mission_complete_us is None:
        t = min(end_us, t + chunk_us)
        app.run(clock, t)
        check_tracking()
        if t % 1000000 == 0:
            progress.update_to(t * 1e-6)
    progress.close()
    rep = app.report()                       # before shutdown closes the links
    app.shutdown(clock.now_us(), reason="mission end")
    # let the VESCs receive the shutdown commands (release) before reading their state
    clock.advance(2 * hz_to_period_us(config["uart_service_hz"]))

    errs = {n: [e for e in track_err[n] if e is not None] for n in track_err}
    max_erpm = max([abs(e) for pair in rec["erpm"] for e in pair] or [1.0])
    polyline = [tuple(vcfg["start_ne_m"])] + [tuple(w) for w in config["waypoints_ne_m"]]
    path_err = [path_error_m(p, polyline) for p in rec["truth"]]
    final = config["waypoints_ne_m"][-1]
    n_wp = len(config["waypoints_ne_m"])
    metrics = {
        "success": app.runtime.follower.index == n_wp,
        "topology": config["topology"],
        "waypoints_reached": app.runtime.follower.index,
        "waypoints_total": n_wp,
        "time_to_complete_s": (app.runtime.mission_complete_us * 1e-6
                               if app.runtime.mission_complete_us is not None else None),
        "sim_time_s": clock.now_us() * 1e-6,
        "final_position_error_m": math.hypot(robot.north_m - final[0], robot.east_m - final[1]),
        "path_error_rms_m": _rms(path_err),
        "path_error_max_m": max(path_err) if path_err else 0.0,
        "telemetry_samples": {n: len(telemetry[n]) for n in telemetry},
        "rpm_tracking_rms_erpm": {n: _rms(errs[n]) for n in errs},
        "rpm_tracking_max_erpm": {n: (max(errs[n]) if errs[n] else None) for n in errs},
        "rpm_tracking_samples": {n: len(errs[n]) for n in errs},
        "max_abs_erpm": max_erpm,
        "failsafe_engagements": rep["runtime"]["failsafe_engagements"],
        "fault_events": rep["fault_events"],
        "fault_events_count": len(rep["fault_events"]),
        "driver": {k: rep["motors"][k] for k in ("commands", "stops", "refused_commands",
                                                   "unrouted_replies", "bad_replies", "faults")},
        "links": rep["motors"]["links"],
        "sim_ports": [p.report() for p in unique_ports],
        "sim_vesc": {n: {"timeouts": s.timeouts, "fault_code": s.fault_code, "mode": s.mode,
                         "erpm": s.erpm, "commands": {str(k): v for k, v in sorted(s.commands.items(),
                                                                                 key=lambda kv: str(kv[0]))}}
                     for n, s in sims.items()},
        "events_us": events,
        "released_at_end": all(s.mode == "released" for s in sims.values()),
        "imu_reads": imu.reads,
        "imu_errors": rep["imu_errors"],
        "rates_hz": {name: g["achieved_hz"] for name, g in app.scheduler.report()["groups"].items()},
    }
    _after_fault_metrics(metrics, rec, events)
    if ctx.report is not None:
        _plots(ctx.report, rec, config, polyline)
    return metrics


def _after_fault_metrics(metrics, rec, events):
    """Robot speed 1 s after a fault and whether driving resumed after a replug."""
    t_s = rec["t_s"]
    for key in ("unplugged_us", "vesc_fault_us"):
        if key in events:
            t_f = events[key] * 1e-6
            after = [abs(v) for t, v in zip(t_s, rec["speed"]) if t_f + 1.0 <= t <= t_f + 1.5]
            metrics[key.replace("_us", "") + "_speed_after_1s_mps"] = max(after) if after else None
    if "replugged_us" in events:
        t_r = events["replugged_us"] * 1e-6
        moving = [t for t, fs, e in zip(t_s, rec["failsafe"], rec["erpm"])
                  if t > t_r and not fs and max(abs(e[0]), abs(e[1])) > 100.0]
        metrics["resumed_after_replug_s"] = (moving[0] - t_r) if moving else None


def _plots(report, rec, config, polyline):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.plot([w[1] for w in polyline], [w[0] for w in polyline], "k--", lw=1, label="planned path")
    ax.plot([p[1] for p in rec["truth"]], [p[0] for p in rec["truth"]], "C0", lw=2, label="ground truth")
    ax.scatter([w[1] for w in polyline[1:]], [w[0] for w in polyline[1:]], c="C3", zorder=5, label="way-points")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("vesc-waypoints (%s)" % config["topology"])
    report.save_figure(fig, "trajectory")

    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    t = rec["t_s"]
    for k, name in enumerate(("left", "right")):
        axes[k].plot(t, [e[k] for e in rec["cmd_erpm"]], "k--", lw=1, label="commanded (SetRPM)")
        axes[k].plot(t, [e[k] for e in rec["erpm"]], "C%d" % k, label="motor (simulated VESC)")
        axes[k].set_ylabel("%s [erpm]" % name)
        axes[k].grid(True, alpha=0.3)
        if any(rec["failsafe"]):
            axes[k].fill_between(t, 0, 1, where=[f == 1 for f in rec["failsafe"]], color="red", alpha=0.15,
                                 transform=axes[k].get_xaxis_transform(), label="failsafe")
        axes[k].legend(fontsize=8, loc="upper right")
    axes[1].set_xlabel("time [s]")
    report.save_figure(fig, "erpm")
