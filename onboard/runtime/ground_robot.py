"""The differential-drive ground robot's app: a recipe of parts on a :class:`Node` (pure).

Parts (in this order on the node):

- ``estimation`` (:class:`onboard.runtime.estimation.PoseEstimation`): entry points
  ``on_imu(ImuSample)`` / ``on_pose(PoseSample)``, rate groups ``predict`` (imu_rate_hz) and
  ``aiding`` (aiding_rate_hz), watched inputs ``imu`` and ``aiding``; the estimator is the
  planar EKF unless another one following ``onboard.estimators.base`` is given;
- ``drive`` (:class:`onboard.control.waypoint_drive.WaypointDrive`): rate group ``control``
  (control_rate_hz), way-point follower on the estimated pose -> wheel speeds -> ``motors``.

A stale input engages the node's failsafe and the drive stops the motors. Pass ``node`` to
add these parts to a node that carries more (the Raspberry Pi app adds its IMU and pose
drivers and its motor telemetry to the same node: one scheduler, one watchdog).
"""
from onboard.control.waypoint_drive import WaypointDrive
from onboard.core.settings import with_defaults
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.estimation import PoseEstimation
from onboard.runtime.node import Node

DEFAULTS = {
    "imu_rate_hz": 100,
    "aiding_rate_hz": 10,
    "control_rate_hz": 50,
    "imu_timeout_us": 50000,
    "aiding_timeout_us": 500000,
    "wheelbase_m": 0.30,
    "wheel_radius_m": 0.05,
    "max_wheel_radps": 25.0,
    "queue_limit": 64,
    "latching_failsafe": False,
}


class GroundRobotRuntime:
    def __init__(self, waypoints_ne_m, motors, config=None, follower_config=None,
                 estimator=None, log=None, start_us=0, node=None):
        cfg = with_defaults(DEFAULTS, config, "GroundRobotRuntime")
        self.cfg = cfg
        self.motors = motors
        if node is None:
            node = Node("ground_robot", latching_failsafe=cfg["latching_failsafe"], start_us=start_us, log=log)
        self.node = node
        self.estimation = node.add("estimation", PoseEstimation(
            estimator if estimator is not None else PlanarEkf(), cfg["imu_rate_hz"], cfg["aiding_rate_hz"],
            cfg["imu_timeout_us"], cfg["aiding_timeout_us"], cfg["queue_limit"]))
        self.drive = node.add("drive", WaypointDrive(
            waypoints_ne_m, motors, self.estimation.estimator, cfg["control_rate_hz"], cfg["wheelbase_m"],
            cfg["wheel_radius_m"], cfg["max_wheel_radps"], follower_config))
        # the parts' entry points and commands, as drivers and missions call them
        self.on_imu = self.estimation.on_imu
        self.on_pose = self.estimation.on_pose
        self.set_waypoints = self.drive.set_waypoints
        self.hold = self.drive.hold
        self.step = node.step
        self.run = node.run

    # ------------------------------------------------------------ the parts' state, read by name
    @property
    def estimator(self):
        return self.estimation.estimator

    @property
    def follower(self):
        return self.drive.follower

    @property
    def failsafe(self):
        return self.node.failsafe

    @property
    def watchdog(self):
        return self.node.watchdog

    @property
    def scheduler(self):
        return self.node.start()

    @property
    def mission_complete_us(self):
        return self.drive.mission_complete_us

    @property
    def last_cmd(self):
        return self.drive.last_cmd

    @property
    def stop_commands(self):
        return self.drive.stop_commands

    @property
    def rejected_samples(self):
        return self.estimation.rejected_samples

    @property
    def dropped_samples(self):
        return self.estimation.dropped_samples

    APP = "ground_robot"

    def recipe_config(self):
        """What rebuilds this app (``harness replay``): way-points, runtime and follower settings, and
        the estimator's kind and settings."""
        est = self.estimator
        kind = "planar" if isinstance(est, PlanarEkf) else type(est).__name__
        return {"waypoints_ne_m": [list(w) for w in self.follower.waypoints_ne_m], "runtime": dict(self.cfg),
                "follower": dict(self.follower.cfg),
                "estimator": {"kind": kind, "config": dict(getattr(est, "cfg", {}))}}

    def record(self, sink, code_version="", time_us=0):
        """Record the app at its boundary into ``sink(topic, time_us, msg)`` (:meth:`Node.record`)."""
        self.node.record(sink, self.APP, self.recipe_config(), code_version, time_us)

    def report(self):
        """Scheduler (rates, watchdog), estimator counters, rejected/dropped samples, failsafe
        engagements, way-points reached."""
        return {"scheduler": self.scheduler.report(), "estimator": self.estimator.counters(),
                "rejected_samples": self.rejected_samples, "dropped_samples": self.dropped_samples,
                "failsafe_engagements": self.failsafe.engage_count,
                "waypoints_reached": self.follower.index}
