"""Scenario `waypoints`: a skid-steer ground robot visits a list of way-points.

The onboard GroundRobotRuntime (planar EKF + way-point follower + watchdog) runs on
the simulated clock in lockstep with the robot's physics, fed by a simulated IMU
(ag2u eq. 10 errors) and a lower-rate noisy aiding pose (ag2u eq. 13), through the
same entry points a real driver calls. Outcome metrics come from ground truth.
"""
import math

from harness.metrics import rms, tracking_errors
from harness.sim.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock
from harness import setting_ranges as RANGES
from harness.config import POSITIVE, WAYPOINTS_NE_M, check_ranges, int_at_least
from harness.sim.sensors.imu import DEFAULTS as IMU_DEFAULTS, PlanarImu
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, AidingPoseSensor
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, DiffDriveRobot, SimMotors
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS
from onboard.core.rotations import quat_from_euler
from onboard.core.units import hz_to_period_us, s_to_us
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS, GroundRobotRuntime
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "skid-steer robot follows way-points with IMU + aiding-pose EKF (default scenario)"

DEFAULTS = {
    "max_duration_s": 120.0,
    "physics_hz": 1000,
    "record_hz": 20,
    "waypoints_ne_m": [[3.0, 0.0], [3.0, 2.5], [0.5, 2.5], [0.5, 0.5], [2.0, 1.2]],
    "vehicle": dict(VEHICLE_DEFAULTS),
    "imu": dict(IMU_DEFAULTS),
    "aiding": dict(POSE_DEFAULTS),
    "runtime": {k: RUNTIME_DEFAULTS[k] for k in ("control_rate_hz", "imu_timeout_us",
                                                  "aiding_timeout_us", "latching_failsafe")},
    "follower": dict(FOLLOWER_DEFAULTS),
}


# checked before anything runs (harness.config rules; the shared blocks from harness.setting_ranges)
SETTING_RANGES = dict({"max_duration_s": POSITIVE, "physics_hz": int_at_least(1), "record_hz": int_at_least(1),
                       "waypoints_ne_m": WAYPOINTS_NE_M},
                      **RANGES.mounted(DEFAULTS, ("vehicle", RANGES.VEHICLE), ("imu", RANGES.IMU),
                                       ("aiding", RANGES.AIDING), ("runtime", RANGES.RUNTIME),
                                       ("follower", RANGES.FOLLOWER)))


def run(config, ctx):
    check_ranges(config, SETTING_RANGES)
    clock = SimClock()
    robot = DiffDriveRobot(config["vehicle"])
    motors = SimMotors(robot)
    runtime_cfg = dict(config["runtime"])
    runtime_cfg.update(imu_rate_hz=config["imu"]["rate_hz"], aiding_rate_hz=config["aiding"]["rate_hz"],
                       wheelbase_m=config["vehicle"]["wheelbase_m"],
                       wheel_radius_m=config["vehicle"]["wheel_radius_m"],
                       max_wheel_radps=config["vehicle"]["max_wheel_radps"])
    runtime = GroundRobotRuntime(config["waypoints_ne_m"], motors, runtime_cfg,
                                 follower_config=config["follower"], log=ctx.log)
    runtime.record(ctx.log, code_version())     # the app at its boundary: `python -m harness replay log.mcap`
    viz = viz_start(ctx, config)                # Foxglove views on /viz/... (docs/foxglove/README.md)
    imu = PlanarImu(robot, ctx.random.stream("imu"), config["imu"])
    aiding = AidingPoseSensor(lambda: ((robot.north_m, robot.east_m, 0.0), (0.0, 0.0, robot.yaw_rad)),
                              ctx.random.stream("aiding"), config["aiding"])

    physics_dt_s = 1.0 / config["physics_hz"]
    clock.call_every(hz_to_period_us(config["physics_hz"]), lambda t: robot.step(physics_dt_s),
                     start_us=hz_to_period_us(config["physics_hz"]), priority=PRIORITY_PHYSICS)

    def imu_tick(t):
        s = imu.sample(t)
        if s is not None:
            runtime.on_imu(s)
            ctx.log("/imu", t, s)

    def aiding_tick(t):
        s = aiding.sample(t)
        if s is not None:
            runtime.on_pose(s)
            ctx.log("/aiding/pose", t, s)

    clock.call_every(hz_to_period_us(config["imu"]["rate_hz"]), imu_tick, priority=PRIORITY_SENSOR)
    clock.call_every(hz_to_period_us(config["aiding"]["rate_hz"]), aiding_tick, priority=PRIORITY_SENSOR)

    rec = {"t_s": [], "truth": [], "est": [], "yaw_true": [], "yaw_est": [], "failsafe": []}

    def record(t):
        nav = runtime.estimator.nav_state()
        rec["t_s"].append(t * 1e-6)
        rec["truth"].append((robot.north_m, robot.east_m))
        rec["est"].append((nav.pos_ned_m[0], nav.pos_ned_m[1]))
        rec["yaw_true"].append(robot.yaw_rad)
        rec["yaw_est"].append(nav.euler_rad[2])
        rec["failsafe"].append(1 if runtime.failsafe.engaged else 0)
        ctx.log("/truth", t, {"time_us": t, "pos_ned_m": [robot.north_m, robot.east_m, 0.0],
                              "yaw_rad": robot.yaw_rad, "speed_mps": robot.speed_mps,
                              "wheels_radps": [robot.left_radps, robot.right_radps]})
        viz_record(viz, t, robot, nav, runtime.follower.index)

    clock.call_every(hz_to_period_us(config["record_hz"]), record, priority=PRIORITY_SENSOR + 1)

    end_us = s_to_us(config["max_duration_s"])
    chunk_us = 1000000
    progress = ctx.progress(config["max_duration_s"], "waypoints")
    t = 0
    while t < end_us and runtime.mission_complete_us is None:
        t = min(end_us, t + chunk_us)
        runtime.run(clock, t)
        progress.update_to(t * 1e-6)
    progress.close()

    path_err, est_err, yaw_err = tracking_errors(rec, config["vehicle"]["start_ne_m"], config["waypoints_ne_m"])
    rep = runtime.report()
    n_wp = len(config["waypoints_ne_m"])
    final = config["waypoints_ne_m"][-1]
    metrics = {
        "success": runtime.follower.index == n_wp,
        "waypoints_reached": runtime.follower.index,
        "waypoints_total": n_wp,
        "time_to_complete_s": (runtime.mission_complete_us * 1e-6
                               if runtime.mission_complete_us is not None else None),
        "sim_time_s": clock.now_us() * 1e-6,
        "path_error_rms_m": rms(path_err),
        "path_error_max_m": max(path_err) if path_err else 0.0,
        "final_position_error_m": math.hypot(robot.north_m - final[0], robot.east_m - final[1]),
        "estimate_position_error_rms_m": rms(est_err),
        "estimate_yaw_error_rms_deg": rms(yaw_err),
        "distance_travelled_m": robot.distance_m,
        "failsafe_engagements": rep["failsafe_engagements"],
        "rejected_samples": rep["rejected_samples"],
        "estimator": rep["estimator"],
        "rates_hz": {name: {"declared": g["declared_hz"], "achieved": g["achieved_hz"]}
                     for name, g in rep["scheduler"]["groups"].items()},
        "scheduler_overruns": rep["scheduler"]["overruns"],
        "watchdog_trips": {k: v["trips"] for k, v in rep["scheduler"]["watchdog"].items()},
    }
    if ctx.report is not None:
        _plots(ctx.report, rec, config, path_err, est_err, yaw_err)
    return metrics


# ---------------------------------------------------------------------------------------------- Foxglove views
# Topics for Foxglove's 3D panel (frames: onboard.runtime.mcap_log; layout: docs/foxglove/), next to the
# scenario's own topics, which they leave unchanged. vesc-waypoints and fil-avr write them too.
VIZ_TF_STATIC = "/viz/tf_static"        # foxglove.FrameTransform world (ENU) -> ned, once at t = 0
VIZ_TF = "/viz/tf"                      # foxglove.FrameTransform ned -> base_link (true body frame)
VIZ_TRUTH_POSE = "/viz/truth/pose"      # foxglove.PoseInFrame (ned): ground truth
VIZ_ESTIMATE_POSE = "/viz/estimate/pose"  # foxglove.PoseInFrame (ned): the onboard estimate
VIZ_WAYPOINTS = "/viz/waypoints"        # foxglove.SceneUpdate: way-points, start, planned path


class _Viz:
    def __init__(self, mcap, config):
        self.mcap = mcap
        self.waypoints_ne_m = config["waypoints_ne_m"]
        self.start_ne_m = config["vehicle"]["start_ne_m"]
        self.reached = 0


def viz_start(ctx, config):
    """The run's Foxglove views (None without a log): the static frames and the mission's markers at t = 0."""
    mcap = getattr(ctx.report, "mcap", None)
    if mcap is None or not hasattr(mcap, "log_pose"):
        return None
    viz = _Viz(mcap, config)
    mcap.log_frames(VIZ_TF_STATIC, 0)
    mcap.log_waypoints(VIZ_WAYPOINTS, 0, viz.waypoints_ne_m, viz.start_ne_m, 0)
    return viz


def viz_record(viz, t, robot, nav, reached):
    """One record tick of the views: true body frame and pose, estimated pose (``nav``, a NavState), and
    the markers again when another way-point was reached."""
    if viz is None:
        return
    q_true = quat_from_euler(0.0, 0.0, robot.yaw_rad)
    pos_true = (robot.north_m, robot.east_m, 0.0)
    viz.mcap.log_body_transform(VIZ_TF, t, pos_true, q_true)
    viz.mcap.log_pose(VIZ_TRUTH_POSE, t, pos_true, q_true)
    viz.mcap.log_pose(VIZ_ESTIMATE_POSE, t, nav.pos_ned_m, quat_from_euler(*nav.euler_rad))
    if reached != viz.reached:
        viz.reached = reached
        viz.mcap.log_waypoints(VIZ_WAYPOINTS, t, viz.waypoints_ne_m, viz.start_ne_m, reached)


def _plots(report, rec, config, path_err, est_err, yaw_err):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 6))
    tn = [p[0] for p in rec["truth"]]
    te = [p[1] for p in rec["truth"]]
    en = [p[0] for p in rec["est"]]
    ee = [p[1] for p in rec["est"]]
    wps = [tuple(config["vehicle"]["start_ne_m"])] + [tuple(w) for w in config["waypoints_ne_m"]]
    ax.plot([w[1] for w in wps], [w[0] for w in wps], "k--", lw=1, label="planned path")
    ax.plot(te, tn, "C0", lw=2, label="ground truth")
    ax.plot(ee, en, "C1", lw=1, label="onboard estimate")
    ax.scatter([w[1] for w in wps[1:]], [w[0] for w in wps[1:]], c="C3", zorder=5, label="way-points")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title("waypoints: truth vs estimate")
    report.save_figure(fig, "trajectory")

    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    t = rec["t_s"]
    axes[0].plot(t, est_err, "C1")
    axes[0].set_ylabel("est. position\nerror [m]")
    axes[1].plot(t, yaw_err, "C2")
    axes[1].set_ylabel("est. yaw\nerror [deg]")
    axes[2].plot(t, path_err, "C0")
    axes[2].set_ylabel("path error [m]")
    axes[2].set_xlabel("time [s]")
    for a in axes:
        a.grid(True, alpha=0.3)
    if any(rec["failsafe"]):
        for a in axes:
            a.fill_between(t, 0, 1, where=[f == 1 for f in rec["failsafe"]], color="red", alpha=0.15,
                           transform=a.get_xaxis_transform(), label="failsafe")
        axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle("errors over time (from ground truth)")
    report.save_figure(fig, "errors")
