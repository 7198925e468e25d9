"""Part: way-point following on the estimated pose -> wheel speeds -> motors (pure, MicroPython).

Rate group ``control`` (control_rate_hz): the way-point follower runs on the estimator's
``nav_state()`` (the *estimated* pose), its twist becomes wheel speeds (thesis 5.1.2,
:func:`onboard.control.diffdrive.wheel_speeds`) and ``motors.command(WheelCmd)``. While the
node's failsafe is engaged, before the estimator is initialised, while holding, or once the
mission is complete, ``motors.stop(now_us)`` is called instead (motors off); so it is on a tick whose estimate the follower
refuses (a non-finite pose: counted in ``control_faults``).

``motors`` is any object with ``command(wheel_cmd)`` and ``stop(now_us)`` (a VESC driver,
the AVR link, PWM pins, a simulated base). Logs ``/estimate``, ``/cmd/twist``,
``/cmd/wheels`` on the node's log; outputs ``estimate`` (NavState) and ``wheels`` (WheelCmd, a
stop as zeros) while the node records.
"""
from onboard.control.diffdrive import wheel_speeds
from onboard.control.pid import PidInputError
from onboard.control.waypoint import WaypointFollower
from onboard.core.samples import WheelCmd


class WaypointDrive:
    def __init__(self, waypoints_ne_m, motors, estimator, control_rate_hz, wheelbase_m, wheel_radius_m,
                 max_wheel_radps, follower_config=None):
        self.motors = motors
        self.estimator = estimator
        self.control_rate_hz = control_rate_hz
        self.wheelbase_m = wheelbase_m
        self.wheel_radius_m = wheel_radius_m
        self.max_wheel_radps = max_wheel_radps
        self.follower = WaypointFollower(waypoints_ne_m, follower_config)
        self.stop_commands = 0
        self.control_faults = 0         # control ticks whose estimate the follower refused (motors stopped)
        self.last_cmd = None
        self.mission_complete_us = None
        self.holding = False
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("control", self.control_rate_hz, self._control)

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

    def _control(self, now_us):
        node = self._node
        if node.failsafe.engaged or not self.estimator.initialized or self.holding:
            self._stop(now_us)
            return
        nav = self.estimator.nav_state()
        try:
            twist = self.follower.update(nav.pos_ned_m[0], nav.pos_ned_m[1], nav.euler_rad[2], now_us)
        except PidInputError:
            self.control_faults += 1
            self._stop(now_us)
            return
        if self.follower.done:
            if self.mission_complete_us is None:
                self.mission_complete_us = now_us
            self._stop(now_us)
            return
        left, right = wheel_speeds(twist.speed_body_mps, twist.yaw_rate_radps, self.wheelbase_m,
                                   self.wheel_radius_m, self.max_wheel_radps)
        cmd = WheelCmd(now_us, left, right)
        self.last_cmd = cmd
        self.motors.command(cmd)
        node.output("estimate", now_us, nav)       # recorded while the node records
        node.output("wheels", now_us, cmd)
        if node.logging:
            node.log("/estimate", now_us, nav)
            node.log("/cmd/twist", now_us, twist)
            node.log("/cmd/wheels", now_us, cmd)

    def _stop(self, now_us):
        self.stop_commands += 1
        self.last_cmd = WheelCmd(now_us, 0.0, 0.0)
        self.motors.stop(now_us)
        self._node.output("wheels", now_us, self.last_cmd)
        if self._node.logging:
            self._node.log("/cmd/wheels", now_us, self.last_cmd)

    def report(self):
        return {"waypoints_reached": self.follower.index, "stop_commands": self.stop_commands,
                "control_faults": self.control_faults}
