"""The differential-drive ground robot's app: a recipe of parts on a :class:`Node` (pure).

Parts (in this order on the node):

- ``estimation`` (:class:`onboard.runtime.estimation.PoseEstimation`): entry points
  ``on_imu(ImuSample)`` / ``on_pose(PoseSample)``, rate groups ``predict`` (imu_rate_hz) and
  ``aiding`` (aiding_rate_hz), watched inputs ``imu`` and ``aiding``; the estimator is the
  planar EKF unless another one following ``onboard.estimators.base`` is given;
- ``drive`` (:class:`onboard.control.waypoint_drive.WaypointDrive`): rate group ``control``
  (control_rate_hz), way-point follower on the estimated pose -> wheel speeds -> ``motors``.

Mission commands enter through the entry point ``mission`` (a
:class:`onboard.core.samples.MissionCmd`, recorded on ``/app/in/mission`` while the node records):
:meth:`GroundRobotRuntime.set_waypoints` (a new way-point list) and :meth:`GroundRobotRuntime.hold`
(stand still) build one and hand it there.

A stale input engages the node's failsafe and the drive stops the motors. Pass ``node`` to
add these parts to a node that carries more (the Raspberry Pi app adds its IMU and pose
drivers and its motor telemetry to the same node: one scheduler, one watchdog).
"""

from onboard.control.waypoint_drive import WaypointDrive
from onboard.core.samples import MissionCmd
from onboard.core.settings import BOOLEAN, POSITIVE, RATE_HZ, checked, int_at_least
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.estimation import PoseEstimation
from onboard.runtime.node import Node
from onboard.runtime.scheduler import GROUP_RATES

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
RATES = ("imu_rate_hz", "aiding_rate_hz", "control_rate_hz")      # its rate groups predict, aiding, control
SETTING_RANGES = {
    "imu_rate_hz": RATE_HZ, "aiding_rate_hz": RATE_HZ, "control_rate_hz": RATE_HZ,
    "imu_timeout_us": int_at_least(1), "aiding_timeout_us": int_at_least(1),
    "wheelbase_m": POSITIVE, "wheel_radius_m": POSITIVE, "max_wheel_radps": POSITIVE,
    "queue_limit": int_at_least(1), "latching_failsafe": BOOLEAN,
    RATES: GROUP_RATES,
}


def runtime_config(runtime, imu_rate_hz, aiding_rate_hz, vehicle, max_wheel_radps=None):
    """The runtime's settings (checked) for a robot: a scenario's ``runtime`` block (the settings it exposes
    of :data:`DEFAULTS`; None: the defaults), the rates (Hz) at which its IMU and aiding pose arrive, and the
    geometry of its ``vehicle`` block (``wheelbase_m``, ``wheel_radius_m``, ``max_wheel_radps``;
    ``max_wheel_radps`` given here instead when the motors' controller caps the wheels, rad/s)."""
    cfg = dict(runtime or {})
    cfg.update(imu_rate_hz=imu_rate_hz, aiding_rate_hz=aiding_rate_hz, wheelbase_m=vehicle["wheelbase_m"],
               wheel_radius_m=vehicle["wheel_radius_m"],
               max_wheel_radps=vehicle["max_wheel_radps"] if max_wheel_radps is None else max_wheel_radps)
    return checked(DEFAULTS, SETTING_RANGES, cfg, "GroundRobotRuntime")


def rate_rules(imu, aiding, control, *others):
    """The settings rule relating the rates of a scenario that runs this app: ``imu``, ``aiding``,
    ``control`` (and ``others``: more rate groups on the same node, e.g. the motors' telemetry) are the
    dotted paths of the scenario's settings that set them (Hz); together they must be rates one scheduler
    runs (:data:`onboard.runtime.scheduler.GROUP_RATES`). Each rate's own rule (e.g. ``RATE_HZ``) comes
    with its block."""
    return {(imu, aiding, control) + tuple(others): GROUP_RATES}

MISSION_ENTRY = "mission"


class GroundRobotRuntime:
    def __init__(self, waypoints_ne_m, motors, config=None, follower_config=None,
                 estimator=None, log=None, start_us=0, node=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "GroundRobotRuntime")
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
        self.on_mission = node.entry(MISSION_ENTRY, self._on_mission)
        self._start_us = start_us
        self.step = node.step
        self.run = node.run

    # ------------------------------------------------------------ mission commands (entry point ``mission``)
    def set_waypoints(self, waypoints_ne_m, time_us=None):
        """Start a new mission (e.g. the next grading leg) from the current state: way-points
        ``(north_m, east_m[, direction])``. ``time_us``: when it was issued (default: the nominal time
        of the node's last tick)."""
        self.on_mission(MissionCmd(self._last_tick_us() if time_us is None else time_us, waypoints_ne_m))

    def hold(self, time_us=None):
        """Stand still until the next :meth:`set_waypoints` (the estimator keeps running); ``time_us``
        as in :meth:`set_waypoints`."""
        self.on_mission(MissionCmd(self._last_tick_us() if time_us is None else time_us, hold=True))

    def _on_mission(self, cmd):
        if cmd.hold:
            self.drive.hold()
        else:
            self.drive.set_waypoints(cmd.waypoints_ne_m)

    def _last_tick_us(self):
        """Nominal time (us) of the node's last tick (its deadline); ``start_us`` before the first."""
        sched = self.node.scheduler
        if sched is None or sched.start_us is None or sched.tick_index == 0:
            return self._start_us
        return sched.start_us + (sched.tick_index - 1) * sched.period_us

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
        """What rebuilds this app (``harness replay``): way-points (``[north_m, east_m, direction]``),
        runtime and follower settings, and the estimator (:meth:`estimator_config`)."""
        follower = self.follower
        return {"waypoints_ne_m": [[w[0], w[1], d] for w, d in zip(follower.waypoints_ne_m, follower.directions)],
                "runtime": dict(self.cfg), "follower": dict(follower.cfg), "estimator": self.estimator_config()}

    def estimator_config(self):
        """The estimator's kind and settings: ``{"kind": "planar", "config"}`` for the planar EKF,
        ``{"kind": "eskf", "config" (the ES-EKF's full settings), "consider_sigma" (1-sigma of the
        consider error: m, m, m, rad, rad, rad), "impl" (pure | cython | numpy)}`` for
        :class:`onboard.estimators.eskf_pose.EskfPoseEstimator`; else its class name and ``cfg``."""
        est = self.estimator
        if isinstance(est, PlanarEkf):
            return {"kind": "planar", "config": dict(getattr(est, "cfg", {}))}
        eskf = getattr(est, "eskf", None)
        if eskf is not None and hasattr(est, "consider_sigma"):
            return {"kind": "eskf", "config": _plain(eskf.cfg), "impl": est.impl,
                    "consider_sigma": list(est.consider_sigma)}
        return {"kind": type(est).__name__, "config": _plain(getattr(est, "cfg", {}))}

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


def _plain(cfg):
    """A settings dict with its vectors as lists (JSON-ready)."""
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in cfg.items()}
