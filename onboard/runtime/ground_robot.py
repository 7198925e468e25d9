"""Runtime of a differential-drive ground robot: estimator + way-point follower + motors.

Entry points called by drivers (real or simulated alike): ``on_imu(ImuSample)``,
``on_pose(PoseSample)``. Samples are queued (bounded) and consumed by rate groups:

- ``predict`` (imu_rate_hz): IMU samples -> estimator prediction
- ``aiding`` (aiding_rate_hz): pose samples -> estimator update
- ``control`` (control_rate_hz): way-point follower on the *estimated* pose ->
  wheel speeds (thesis 5.1.2) -> ``motors.command(WheelCmd)``

The watchdog trips the failsafe when IMU or aiding goes stale; while the failsafe
is engaged, or once the mission is complete, ``motors.stop(now_us)`` is called
instead (motors off). Bad samples are rejected and counted, never fused.

``motors`` is any object with ``command(wheel_cmd)`` and ``stop(now_us)`` (a VESC
driver, the AVR link, a simulated base). ``log(topic, time_us, msg)`` is optional.
"""
from onboard.control.diffdrive import wheel_speeds
from onboard.control.waypoint import WaypointFollower
from onboard.core.samples import WheelCmd
from onboard.core.settings import with_defaults
from onboard.estimators.planar_ekf import EstimatorInputError, PlanarEkf
from onboard.runtime.scheduler import Scheduler
from onboard.runtime.watchdog import Failsafe, Watchdog

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
                 estimator=None, log=None, start_us=0):
        cfg = with_defaults(DEFAULTS, config, "GroundRobotRuntime")
        self.cfg = cfg
        self.motors = motors
        self.log = log
        self.estimator = estimator if estimator is not None else PlanarEkf()
        self.follower = WaypointFollower(waypoints_ne_m, follower_config)
        self.failsafe = Failsafe(latching=cfg["latching_failsafe"])
        self.watchdog = Watchdog(self.failsafe, start_us=start_us)
        self.watchdog.add_input("imu", cfg["imu_timeout_us"])
        self.watchdog.add_input("aiding", cfg["aiding_timeout_us"])
        self.scheduler = Scheduler([
            ("predict", cfg["imu_rate_hz"], self._predict),
            ("aiding", cfg["aiding_rate_hz"], self._aiding),
            ("control", cfg["control_rate_hz"], self._control),
        ], watchdog=self.watchdog)
        self._imu_queue = []
        self._pose_queue = []
        self.dropped_samples = 0
        self.rejected_samples = 0
        self.stop_commands = 0
        self.last_cmd = None
        self.mission_complete_us = None
        self.holding = False

    def set_waypoints(self, waypoints_ne_m, follower_config=None):
        """Start a new mission (e.g. the next grading leg) from the current state."""
        self.follower = WaypointFollower(waypoints_ne_m, follower_config or self.follower.cfg)
        self.mission_complete_us = None
        self.holding = False

    def hold(self):
        """Stand still (motors stopped every control tick) until the next :meth:`set_waypoints`; the
        estimator keeps running. For a robot placed where its mission starts: it waits while the filter
        settles instead of chasing the first fixes' error."""
        self.holding = True

    # ------------------------------------------------------------ driver entry points
    def on_imu(self, sample):
        self._enqueue(self._imu_queue, sample, "imu")

    def on_pose(self, sample):
        self._enqueue(self._pose_queue, sample, "aiding")

    def _enqueue(self, queue, sample, stream):
        if not sample.is_finite():
            self.rejected_samples += 1          # never fused, never feeds the watchdog
            return
        if len(queue) >= self.cfg["queue_limit"]:
            queue.pop(0)
            self.dropped_samples += 1
        queue.append(sample)
        self.watchdog.feed(stream, sample.time_us)

    # ------------------------------------------------------------ scheduling
    def step(self, now_us):
        """Run the rate groups due now; returns the next deadline (us)."""
        return self.scheduler.step(now_us)

    def run(self, clock, until_us):
        return self.scheduler.run(clock, until_us)

    # ------------------------------------------------------------ rate groups
    def _predict(self, now_us):
        queue = self._imu_queue
        self._imu_queue = []
        for s in queue:
            try:
                self.estimator.predict(s)
            except EstimatorInputError:
                self.rejected_samples += 1

    def _aiding(self, now_us):
        queue = self._pose_queue
        self._pose_queue = []
        for s in queue:
            try:
                self.estimator.update_pose(s)
            except EstimatorInputError:
                self.rejected_samples += 1

    def _control(self, now_us):
        if self.failsafe.engaged or not self.estimator.initialized or self.holding:
            self._stop(now_us)
            return
        nav = self.estimator.nav_state()
        twist = self.follower.update(nav.pos_ned_m[0], nav.pos_ned_m[1], nav.euler_rad[2], now_us)
        if self.follower.done:
            if self.mission_complete_us is None:
                self.mission_complete_us = now_us
            self._stop(now_us)
            return
        cfg = self.cfg
        left, right = wheel_speeds(twist.speed_body_mps, twist.yaw_rate_radps, cfg["wheelbase_m"],
                                   cfg["wheel_radius_m"], cfg["max_wheel_radps"])
        cmd = WheelCmd(now_us, left, right)
        self.last_cmd = cmd
        self.motors.command(cmd)
        if self.log is not None:
            self.log("/estimate", now_us, nav)
            self.log("/cmd/twist", now_us, twist)
            self.log("/cmd/wheels", now_us, cmd)

    def _stop(self, now_us):
        self.stop_commands += 1
        self.last_cmd = WheelCmd(now_us, 0.0, 0.0)
        self.motors.stop(now_us)
        if self.log is not None:
            self.log("/cmd/wheels", now_us, self.last_cmd)

    def report(self):
        out = {"scheduler": self.scheduler.report(), "estimator": self.estimator.counters(),
               "rejected_samples": self.rejected_samples, "dropped_samples": self.dropped_samples,
               "failsafe_engagements": self.failsafe.engage_count,
               "waypoints_reached": self.follower.index}
        return out
