"""The simulated ground world: a skid-steer robot on flat ground, its IMU and aiding pose, and the
ground-robot app on one clock (``waypoints``, ``vesc-waypoints``, ``fil-avr``, the grading dozer).

:class:`GroundWorld` is a :class:`harness.sim.world.SimWorld` with one
:class:`harness.sim.vehicles.diffdrive.DiffDriveRobot` (the truth: NED plane, yaw from north towards
east) and the sensors it carries: the IMU of ag2u eq. 10 (:meth:`GroundWorld.add_imu`, calling the
app's ``on_imu``) and the aiding pose of ag2u eq. 13 (:meth:`GroundWorld.add_aiding`, calling
``on_pose``). A scenario adds what differs: the motors path (the app's commands reach the robot through
``SimMotors``, simulated VESCs or the AVR firmware) and, where the IMU reaches the app through a
device, that IMU path. Then :meth:`GroundWorld.record` keeps the truth and the estimate every record
tick (``/truth`` and the Foxglove views in the log), :meth:`GroundWorld.run_mission` runs the app
until its mission is complete, and :meth:`GroundWorld.mission_metrics` scores the run from ground
truth. :func:`plot_trajectory` and :func:`plot_over_time` draw the report's plots.
"""
import math

from harness.metrics import rms, tracking_errors
from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.sensors.imu import PlanarImu
from harness.sim.sensors.pose import AidingPoseSensor
from harness.sim.sensors.sim_sensor import ModelSensor
from harness.sim.vehicles.diffdrive import DiffDriveRobot
from harness.sim.world import SimWorld
from onboard.core.rotations import quat_from_euler
from onboard.core.units import s_to_us

TRUTH_TOPIC = "/truth"                  # {time_us, pos_ned_m, yaw_rad, speed_mps, wheels_radps, ...} per record tick


class GroundWorld(SimWorld):
    """A skid-steer robot (``vehicle_config``: ``harness.sim.vehicles.diffdrive`` settings) on the world's
    clock. random: the run's :class:`harness.sim.rng.RunRandom` (streams "imu", "aiding"); log: the run's
    ``log(topic, time_us, message)`` or None.

    After :meth:`start`, ``runtime`` is the app's ground-robot runtime
    (:class:`onboard.runtime.ground_robot.GroundRobotRuntime`: estimator, follower, failsafe); after
    :meth:`record`, ``rec`` holds the recorded columns (``t_s``, ``truth`` and ``est`` as (north_m,
    east_m), ``yaw_true`` / ``yaw_est`` (rad), ``failsafe`` (0/1), ``speed_mps``, ``wheels_radps`` and
    the scenario's own).
    """

    def __init__(self, vehicle_config, random, log=None):
        SimWorld.__init__(self, log)
        self.robot = DiffDriveRobot(vehicle_config)
        self.random = random
        self.runtime = None
        self.rec = None
        self.views = None
        self.errors = None

    # ------------------------------------------------------------ the robot and its sensors
    def truth_pose(self):
        """(pos_ned_m (3), euler_rad (3)) of the robot now (flat ground: z, roll, pitch are 0)."""
        r = self.robot
        return (r.north_m, r.east_m, 0.0), (0.0, 0.0, r.yaw_rad)

    def imu_model(self, config):
        """The robot's IMU model (ag2u eq. 10 errors; ``harness.sim.sensors.imu`` settings), random stream
        "imu"; for an IMU path through a device (the AVR firmware) that samples it itself."""
        return PlanarImu(self.robot, self.random.stream("imu"), config)

    def add_imu(self, config, entry, topic="/imu"):
        """The IMU (:meth:`imu_model`) at ``config["rate_hz"]``, calling ``entry(ImuSample)``."""
        return self.add_sensor(ModelSensor(self.imu_model(config), config["rate_hz"], entry, topic, self.log))

    def add_aiding(self, config, entry, topic="/aiding/pose"):
        """The aiding pose (ag2u eq. 13; ``harness.sim.sensors.pose`` settings, random stream "aiding") at
        ``config["rate_hz"]``, calling ``entry(PoseSample)``."""
        sensor = AidingPoseSensor(self.truth_pose, self.random.stream("aiding"), config)
        return self.add_sensor(ModelSensor(sensor, config["rate_hz"], entry, topic, self.log))

    def drive(self, physics_hz, tracks=None, after_step=None):
        """The robot's physics at ``physics_hz``. Its wheels follow their commands (``SimMotors``) through
        the base's motor lag, or, with ``tracks`` (``step(dt_s, now_us) -> (left, right)`` wheel rad/s:
        simulated motor controllers), turn as the tracks' motors turn them. ``after_step(dt_s, now_us)``
        after each step (e.g. the blade moving sand)."""
        robot = self.robot

        def step(dt_s, now_us):
            if tracks is not None:
                robot.left_radps, robot.right_radps = tracks.step(dt_s, now_us)
                robot.left_cmd_radps, robot.right_cmd_radps = robot.left_radps, robot.right_radps
            robot.step(dt_s)
            if after_step is not None:
                after_step(dt_s, now_us)
        return self.physics(physics_hz, step, PRIORITY_PHYSICS)

    # ------------------------------------------------------------ the app, the recording, the run
    def start(self, app, record=None, code_version=""):
        SimWorld.start(self, app, record, code_version)
        self.runtime = getattr(app, "runtime", app)

    def show(self, mcap, waypoints_ne_m):
        """Foxglove views of the run in ``mcap`` (the run's McapLog; None: none), see :class:`FoxgloveViews`."""
        if mcap is not None and hasattr(mcap, "log_pose"):
            self.views = FoxgloveViews(mcap, waypoints_ne_m, self.robot.cfg["start_ne_m"])

    def log_truth(self, now_us, **extra):
        r = self.robot
        msg = {"time_us": now_us, "pos_ned_m": [r.north_m, r.east_m, 0.0], "yaw_rad": r.yaw_rad,
               "speed_mps": r.speed_mps, "wheels_radps": [r.left_radps, r.right_radps]}
        msg.update(extra)
        self.log(TRUTH_TOPIC, now_us, msg)

    def record(self, rate_hz, extra=None, logged=()):
        """Record truth and estimate at ``rate_hz`` into ``rec`` and the log (``/truth``, the views).
        ``extra(now_us)`` -> {column: value} adds the scenario's columns; those named in ``logged`` are
        written on ``/truth`` too."""
        rec = self.rec = {k: [] for k in ("t_s", "truth", "est", "yaw_true", "yaw_est", "failsafe", "speed_mps",
                                          "wheels_radps")}
        robot, runtime = self.robot, self.runtime

        def tick(t):
            nav = runtime.estimator.nav_state()
            rec["t_s"].append(t * 1e-6)
            rec["truth"].append((robot.north_m, robot.east_m))
            rec["est"].append((nav.pos_ned_m[0], nav.pos_ned_m[1]))
            rec["yaw_true"].append(robot.yaw_rad)
            rec["yaw_est"].append(nav.euler_rad[2])
            rec["failsafe"].append(1 if runtime.failsafe.engaged else 0)
            rec["speed_mps"].append(robot.speed_mps)
            rec["wheels_radps"].append((robot.left_radps, robot.right_radps))
            columns = extra(t) if extra is not None else {}
            for key, value in columns.items():
                rec.setdefault(key, []).append(value)
            self.log_truth(t, **{k: columns[k] for k in logged})
            if self.views is not None:
                self.views.record(t, robot, nav, runtime.follower.index)
        self.recorder(rate_hz, tick)
        return rec

    def run_mission(self, duration_s, step_us, progress, each_step=None):
        """Run until the app's mission is complete or ``duration_s`` (simulated s) have passed, in steps of
        ``step_us`` (us; the mission's end is seen at a step's end), ``progress`` moved in simulated s and
        closed at the end; ``each_step(t_us)`` after every step. Returns whether the mission completed."""
        self.progress = progress
        try:
            return self.run(s_to_us(duration_s), step_us, lambda: self.runtime.mission_complete_us is not None,
                            each_step)
        finally:
            progress.close()
            self.progress = None

    def mission_metrics(self, waypoints_ne_m):
        """The mission's outcome from ground truth: success (every way-point reached), way-points reached,
        time to complete (s, None when not), simulated time (s), the true path's distance (m) from the
        planned polyline (start -> way-points: rms and max), the final position's distance (m) from the
        last way-point, the onboard estimate's position (m) and yaw (deg) errors (rms), the distance
        travelled (m). Keeps the per-record errors in ``errors`` (path_m, estimate_m, yaw_deg)."""
        runtime, robot = self.runtime, self.robot
        path_err, est_err, yaw_err = self.errors = tracking_errors(self.rec, robot.cfg["start_ne_m"], waypoints_ne_m)
        n_wp = len(waypoints_ne_m)
        final = waypoints_ne_m[-1]
        done_us = runtime.mission_complete_us
        return {
            "success": runtime.follower.index == n_wp,
            "waypoints_reached": runtime.follower.index,
            "waypoints_total": n_wp,
            "time_to_complete_s": done_us * 1e-6 if done_us is not None else None,
            "sim_time_s": self.sim_time_s,
            "path_error_rms_m": rms(path_err),
            "path_error_max_m": max(path_err) if path_err else 0.0,
            "final_position_error_m": math.hypot(robot.north_m - final[0], robot.east_m - final[1]),
            "estimate_position_error_rms_m": rms(est_err),
            "estimate_yaw_error_rms_deg": rms(yaw_err),
            "distance_travelled_m": robot.distance_m,
        }


# ---------------------------------------------------------------------------------------------- Foxglove views
# Topics for Foxglove's 3D panel (frames: onboard.runtime.mcap_log; layout: docs/foxglove/), next to the
# scenario's own topics, which they leave unchanged.
VIZ_TF_STATIC = "/viz/tf_static"        # foxglove.FrameTransform world (ENU) -> ned, once at t = 0
VIZ_TF = "/viz/tf"                      # foxglove.FrameTransform ned -> base_link (true body frame)
VIZ_TRUTH_POSE = "/viz/truth/pose"      # foxglove.PoseInFrame (ned): ground truth
VIZ_ESTIMATE_POSE = "/viz/estimate/pose"  # foxglove.PoseInFrame (ned): the onboard estimate
VIZ_WAYPOINTS = "/viz/waypoints"        # foxglove.SceneUpdate: way-points, start, planned path


class FoxgloveViews:
    """The run's Foxglove views in ``mcap``: the static frames and the mission's markers at t = 0, then per
    record tick the true body frame and pose, the estimated pose, and the markers again when another
    way-point was reached."""

    def __init__(self, mcap, waypoints_ne_m, start_ne_m):
        self.mcap = mcap
        self.waypoints_ne_m = waypoints_ne_m
        self.start_ne_m = start_ne_m
        self.reached = 0
        mcap.log_frames(VIZ_TF_STATIC, 0)
        mcap.log_waypoints(VIZ_WAYPOINTS, 0, waypoints_ne_m, start_ne_m, 0)

    def record(self, t, robot, nav, reached):
        """One record tick at ``t`` (us): ``robot`` the truth, ``nav`` the estimate (a NavState)."""
        q_true = quat_from_euler(0.0, 0.0, robot.yaw_rad)
        pos_true = (robot.north_m, robot.east_m, 0.0)
        self.mcap.log_body_transform(VIZ_TF, t, pos_true, q_true)
        self.mcap.log_pose(VIZ_TRUTH_POSE, t, pos_true, q_true)
        self.mcap.log_pose(VIZ_ESTIMATE_POSE, t, nav.pos_ned_m, quat_from_euler(*nav.euler_rad))
        if reached != self.reached:
            self.reached = reached
            self.mcap.log_waypoints(VIZ_WAYPOINTS, t, self.waypoints_ne_m, self.start_ne_m, reached)


# ---------------------------------------------------------------------------------------------- report plots
def plot_trajectory(report, rec, start_ne_m, waypoints_ne_m, title):
    """``trajectory.png``: the planned path, the true path, the onboard estimate and the way-points in the
    NED plane (east to the right, north up)."""
    from harness.report.plots import figure, label
    fig, ax = figure(size_in=(6.5, 6))
    path = [tuple(start_ne_m)] + [tuple(w[:2]) for w in waypoints_ne_m]
    ax.plot([p[1] for p in path], [p[0] for p in path], "k--", lw=1, label="planned path")
    ax.plot([p[1] for p in rec["truth"]], [p[0] for p in rec["truth"]], "C0", lw=2.5, label="ground truth")
    ax.plot([p[1] for p in rec["est"]], [p[0] for p in rec["est"]], "C1", lw=1, label="onboard estimate")
    ax.scatter([path[0][1]], [path[0][0]], c="k", marker="s", zorder=5, label="start")
    ax.scatter([p[1] for p in path[1:]], [p[0] for p in path[1:]], c="C3", zorder=5, label="way-points")
    ax.set_aspect("equal")
    label(ax, title, "east (m)", "north (m)")
    report.save_figure(fig, "trajectory")


def plot_over_time(report, name, title, t_s, panels, shading=()):
    """``<name>.png``: panels stacked over time ``t_s`` (s). panels: ``(panel title, y label with unit,
    lines)``, lines: ``(values, legend label, matplotlib line settings)`` drawn in order (a command drawn
    dashed after the response it leads stays visible). shading: ``(flags (0/1 per sample), legend label,
    colour)``, shaded on every panel where a flag is 1, when one is."""
    from harness.report.plots import figure, label
    fig, axes = figure(len(panels), 1, title=title, size_in=(8, 2.4 * len(panels) + 0.6), sharex=True,
                       squeeze=False)
    for ax, (panel_title, ylabel, lines) in zip(axes[:, 0], panels):
        for values, line_label, style in lines:
            ax.plot(t_s, values, label=line_label, **style)
        for flags, flag_label, colour in shading:
            if any(flags):
                ax.fill_between(t_s, 0, 1, where=[f == 1 for f in flags], color=colour, alpha=0.15,
                                transform=ax.get_xaxis_transform(), label=flag_label)
        label(ax, panel_title, "time (s)", ylabel)
    report.save_figure(fig, name)
