"""Way-point follower for planar robots: heading PID + speed schedule (pure Python).

Drives toward the active way-point; it is reached within ``accept_radius_m``.
A way-point is ``(north_m, east_m)`` or ``(north_m, east_m, direction)`` with
direction +1 (drive forward, default) or -1 (reverse to it, e.g. a dozer backing
up to the start of its next grading leg).
Speed falls with the heading error (cos law, zero beyond 90 deg: turn in place) and
near a way-point where the robot stops (the final one, a repeat of it, or one where the
direction reverses); yaw rate comes from a PID on the wrapped heading error.
"""
import math

from onboard.control.pid import Pid, PidInputError, is_finite_number
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
                        output_limit=cfg["max_yaw_rate_radps"], angle_error=True)

    @property
    def done(self):
        return self.index >= len(self.waypoints_ne_m)

    def update(self, north_m, east_m, yaw_rad, now_us):
        """TwistCmd toward the active way-point from the (estimated) pose. A pose or ``now_us`` that is not a
        finite number raises :class:`onboard.control.pid.PidInputError` (a ValueError) before any way-point is
        marked reached, the follower unchanged."""
        for name, v in (("north_m", north_m), ("east_m", east_m), ("yaw_rad", yaw_rad), ("now_us", now_us)):
            if not is_finite_number(v) or isinstance(v, bool):
                raise PidInputError("way-point follower: %s must be a finite number, got %r" % (name, v))
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
        if self._stops_here(direction):
            speed *= min(1.0, dist / self.cfg["slow_radius_m"])
        return TwistCmd(now_us, speed, yaw_rate)

    def _stops_here(self, direction):
        """True when the robot stops at the active way-point: it is the last, or the next way-point that is not
        a repeat of it (the same position and direction) reverses the direction or does not exist."""
        wps = self.waypoints_ne_m
        target = wps[self.index]
        nxt = self.index + 1
        while nxt < len(wps) and wps[nxt] == target and self.directions[nxt] == direction:
            nxt += 1
        return nxt == len(wps) or self.directions[nxt] != direction
