"""Scenario `waypoints`: a skid-steer ground robot visits a list of way-points.

The onboard GroundRobotRuntime (planar EKF + way-point follower + watchdog) runs in the simulated
ground world (``harness.sim.ground_world``), fed by the simulated IMU (ag2u eq. 10 errors) and the
lower-rate noisy aiding pose (ag2u eq. 13) through the same entry points a real driver calls; its
wheel commands reach the robot's motors directly (``SimMotors``). Outcome metrics come from ground
truth. The app records at its boundary into log.mcap: ``python -m harness replay REPORT/log.mcap``.
"""
from harness.config import POSITIVE, RATE_HZ, WAYPOINTS_NE_M, mounted
from harness.sim.ground_world import GroundWorld, plot_over_time, plot_trajectory
from harness.sim.sensors.imu import DEFAULTS as IMU_DEFAULTS, SETTING_RANGES as IMU_RANGES
from harness.sim.sensors.pose import DEFAULTS as POSE_DEFAULTS, SETTING_RANGES as POSE_RANGES
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, SETTING_RANGES as VEHICLE_RANGES, SimMotors
from onboard.control.waypoint import DEFAULTS as FOLLOWER_DEFAULTS, SETTING_RANGES as FOLLOWER_RANGES
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS, SETTING_RANGES as RUNTIME_RANGES
from onboard.runtime.ground_robot import GroundRobotRuntime, rate_rules, runtime_config
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "skid-steer robot follows way-points with IMU + aiding-pose EKF (default scenario)"

DEFAULTS = {
    "max_duration_s": 120.0,            # simulated s; the run ends earlier when the last way-point is reached
    "physics_hz": 1000,                 # robot physics steps per simulated second
    "record_hz": 20,                    # truth/estimate records (metrics, plots, /truth) per second
    "waypoints_ne_m": [[3.0, 0.0], [3.0, 2.5], [0.5, 2.5], [0.5, 0.5], [2.0, 1.2]],   # [north_m, east_m]
    "vehicle": dict(VEHICLE_DEFAULTS),  # the simulated robot (harness.sim.vehicles.diffdrive)
    "imu": dict(IMU_DEFAULTS),          # rate and errors of the simulated IMU (ag2u eq. 10)
    "aiding": dict(POSE_DEFAULTS),      # rate and errors of the aiding pose (ag2u eq. 13)
    "runtime": {k: RUNTIME_DEFAULTS[k] for k in ("control_rate_hz", "imu_timeout_us",
                                                  "aiding_timeout_us", "latching_failsafe")},
    "follower": dict(FOLLOWER_DEFAULTS),
}

# a run of a few simulated seconds (the identical-seed test, `run --reduced`)
REDUCED = {"max_duration_s": 10.0, "waypoints_ne_m": [[1.0, 0.0]]}

# checked before anything runs (harness.config rules; the blocks' rules from their components)
SETTING_RANGES = dict({"max_duration_s": POSITIVE, "physics_hz": RATE_HZ, "record_hz": RATE_HZ,
                       "waypoints_ne_m": WAYPOINTS_NE_M},
                      **mounted(DEFAULTS, ("vehicle", VEHICLE_RANGES), ("imu", IMU_RANGES), ("aiding", POSE_RANGES),
                                ("runtime", RUNTIME_RANGES), ("follower", FOLLOWER_RANGES)))
SETTING_RANGES.update(rate_rules("imu.rate_hz", "aiding.rate_hz", "runtime.control_rate_hz"))


def run(config, ctx):
    world = GroundWorld(config["vehicle"], ctx.random, ctx.log)
    runtime = GroundRobotRuntime(config["waypoints_ne_m"], SimMotors(world.robot),
                                 runtime_config(config["runtime"], config["imu"]["rate_hz"],
                                                config["aiding"]["rate_hz"], config["vehicle"]),
                                 follower_config=config["follower"], log=ctx.log)
    world.start(runtime, record=ctx.log, code_version=code_version())
    world.show(ctx.mcap, config["waypoints_ne_m"])      # Foxglove views on /viz/... (docs/foxglove/README.md)
    world.drive(config["physics_hz"])
    world.add_imu(config["imu"], runtime.on_imu)
    world.add_aiding(config["aiding"], runtime.on_pose)
    world.record(config["record_hz"])
    world.run_mission(config["max_duration_s"], 1000000, ctx.progress(config["max_duration_s"], "waypoints"))

    metrics = world.mission_metrics(config["waypoints_ne_m"])
    rep = runtime.report()
    metrics.update({
        "failsafe_engagements": rep["failsafe_engagements"],
        "rejected_samples": rep["rejected_samples"],
        "estimator": rep["estimator"],
        "rates_hz": {name: {"declared": g["declared_hz"], "achieved": g["achieved_hz"]}
                     for name, g in rep["scheduler"]["groups"].items()},
        "scheduler_overruns": rep["scheduler"]["overruns"],
        "watchdog_trips": {k: v["trips"] for k, v in rep["scheduler"]["watchdog"].items()},
    })
    if ctx.report is not None:
        _plots(ctx.report, world, config)
    return metrics


def _plots(report, world, config):
    rec = world.rec
    plot_trajectory(report, rec, config["vehicle"]["start_ne_m"], config["waypoints_ne_m"],
                    "waypoints: truth vs onboard estimate")
    path_err, est_err, yaw_err = world.errors
    plot_over_time(report, "errors", "errors over time (from ground truth)", rec["t_s"], [
        ("onboard estimate: position", "error (m)", [(est_err, "|estimate - truth|", {"color": "C1"})]),
        ("onboard estimate: yaw", "error (deg)", [(yaw_err, "estimate - truth", {"color": "C2"})]),
        ("true path vs planned path", "distance (m)", [(path_err, "path error", {"color": "C0"})]),
    ], shading=[(rec["failsafe"], "runtime failsafe engaged", "red")])
