"""Way-point follower for planar robots: heading PID + speed schedule (pure Python).

Drives toward the active way-point; it is reached within ``accept_radius_m``.
A way-point is ``(north_m, east_m)`` or ``(north_m, east_m, direction)`` with
direction +1 (drive forward, default) or -1 (reverse to it, e.g. a dozer backing
up to the start of its next grading leg).
Speed falls with the heading error (cos law, zero beyond 90 deg: turn in place) and
near the final way-point; yaw rate comes from a PID on the wrapped heading error.
"""
import math

from onboard.control.pid import Pid
from onboard.core.angles import wrap_pi
from onboard.core.samples import TwistCmd
from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked, is_number

DEFAULTS = {
    "cruise_speed_mps": 0.4,
    "accept_radius_m": 0.15,
    "slow_radius_m": 0.5,
    "max_yaw_rate_radps": 1.5,
    "heading_kp": 2.5,
    "heading_ki": 0.0,
    "heading_kd": 0.05,
}
SETTING_RANGES = {"cruise_speed_mps": POSITIVE, "accept_radius_m": POSITIVE, "slow_radius_m": POSITIVE,
                  "max_yaw_rate_radps": POSITIVE, "heading_kp": NON_NEGATIVE, "heading_ki": NON_NEGATIVE,
                  "heading_kd": NON_NEGATIVE}


class WaypointFollower:
    def __init__(self, waypoints_ne_m, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "WaypointFollower")
        if not waypoints_ne_m:
            raise ValueError("way-point list is empty")
        self.cfg = cfg
        self.waypoints_ne_m = []
        self.directions = []
        for i, w in enumerate(waypoints_ne_m):
            if not isinstance(w, (tuple, list)) or len(w) not in (2, 3) or not (is_number(w[0]) and is_number(w[1])):
                raise ValueError("way-point %d must be (north_m, east_m[, direction]) with finite numbers, got %r"
                                 % (i, w))
            d = w[2] if len(w) == 3 else 1
            if isinstance(d, bool) or d not in (1, -1):
                raise ValueError("way-point %d direction must be +1 or -1, got %r" % (i, d))
            self.waypoints_ne_m.append((float(w[0]), float(w[1])))
            self.directions.append(int(d))
        self.index = 0
        self.reached_us = []
        self._pid = Pid(cfg["heading_kp"], cfg["heading_ki"], cfg["heading_kd"],
                        output_limit=cfg["max_yaw_rate_radps"])

    @property
    def done(self):
        return self.index >= len(self.waypoints_ne_m)

    def update(self, north_m, east_m, yaw_rad, now_us):
        """TwistCmd toward the active way-point from the (estimated) pose."""
        while True:                    # every way-point already within the radius is reached at this step
            if self.done:
                return TwistCmd(now_us, 0.0, 0.0)
            tn, te = self.waypoints_ne_m[self.index]
            dn = tn - north_m
            de = te - east_m
            dist = math.sqrt(dn * dn + de * de)
            if not dist < self.cfg["accept_radius_m"]:
                break
            self.index += 1
            self.reached_us.append(now_us)
            self._pid.reset()
        direction = self.directions[self.index]
        # reversing: steer the robot's back towards the way-point
        facing = yaw_rad if direction > 0 else yaw_rad + math.pi
        heading_err = wrap_pi(math.atan2(de, dn) - facing)
        yaw_rate = self._pid.update(heading_err, now_us)
        align = math.cos(heading_err)
        speed = direction * self.cfg["cruise_speed_mps"] * (align if align > 0.0 else 0.0)
        if self.index == len(self.waypoints_ne_m) - 1 or self.directions[self.index + 1] != direction:
            speed *= min(1.0, dist / self.cfg["slow_radius_m"])
        return TwistCmd(now_us, speed, yaw_rate)
