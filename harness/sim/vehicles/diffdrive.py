"""Differential-drive (tracked skid-steer) ground robot: ground truth for the harness.

Wheel speeds follow their commands with a first-order lag (motor time constant)
and a speed limit; the body twist comes from the wheel speeds (thesis 5.1.2, see
onboard.control.diffdrive) with a skid-steer turning efficiency (< 1 for tracks
that slip when turning); the pose is integrated exactly along the arc per step.
Frames: NED plane, yaw from north towards east.
"""
import math
import numbers

from onboard.control.diffdrive import body_twist
from onboard.core.settings import ANY_NUMBER, POSITIVE, UNIT_OPEN, checked, pair

DEFAULTS = {
    "wheelbase_m": 0.30,
    "wheel_radius_m": 0.05,
    "motor_time_constant_s": 0.08,
    "max_wheel_radps": 25.0,
    "turn_efficiency": 0.9,          # skid-steer: achieved / kinematic yaw rate
    "start_ne_m": [0.0, 0.0],
    "start_yaw_deg": 0.0,
}
SETTING_RANGES = {"wheelbase_m": POSITIVE, "wheel_radius_m": POSITIVE, "motor_time_constant_s": POSITIVE,
                  "max_wheel_radps": POSITIVE, "turn_efficiency": UNIT_OPEN, "start_ne_m": pair(ANY_NUMBER),
                  "start_yaw_deg": ANY_NUMBER}


def _finite_number(v):
    """A finite real number (int, float, numpy scalar) within the floats, not a bool."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:               # an int beyond the floats
        return False


class DiffDriveRobot:
    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "DiffDriveRobot")
        self.cfg = cfg
        self.north_m = float(cfg["start_ne_m"][0])
        self.east_m = float(cfg["start_ne_m"][1])
        self.yaw_rad = math.radians(cfg["start_yaw_deg"])
        self.left_radps = 0.0
        self.right_radps = 0.0
        self.left_cmd_radps = 0.0
        self.right_cmd_radps = 0.0
        self.rejected_commands = 0
        self.speed_mps = 0.0
        self.yaw_rate_radps = 0.0
        self.distance_m = 0.0

    def command(self, left_radps, right_radps):
        """Wheel speed commands (rad/s), clamped to +-``max_wheel_radps``. A pair holding NaN, inf, a bool or
        a non-number is refused (the commands held stay; counted in ``rejected_commands``); returns whether it
        was taken."""
        if not (_finite_number(left_radps) and _finite_number(right_radps)):
            self.rejected_commands += 1
            return False
        lim = self.cfg["max_wheel_radps"]
        self.left_cmd_radps = max(-lim, min(lim, left_radps))
        self.right_cmd_radps = max(-lim, min(lim, right_radps))
        return True

    def step(self, dt_s):
        """Advance the physics by dt_s seconds (0: nothing moves); ValueError for a negative, NaN or infinite
        dt_s, the state unchanged."""
        if not 0.0 <= dt_s < math.inf:
            raise ValueError("DiffDriveRobot.step: dt_s must be a finite number of seconds >= 0, got %r" % (dt_s,))
        a = 1.0 - math.exp(-dt_s / self.cfg["motor_time_constant_s"])
        self.left_radps += a * (self.left_cmd_radps - self.left_radps)
        self.right_radps += a * (self.right_cmd_radps - self.right_radps)
        speed, yaw_rate = body_twist(self.left_radps, self.right_radps, self.cfg["wheelbase_m"],
                                     self.cfg["wheel_radius_m"])
        yaw_rate *= self.cfg["turn_efficiency"]
        dyaw = yaw_rate * dt_s
        if abs(dyaw) > 1e-9:
            # exact arc: chord along the mid heading with length 2 R sin(dyaw/2)
            chord = 2.0 * speed / yaw_rate * math.sin(0.5 * dyaw)
        else:
            chord = speed * dt_s
        mid = self.yaw_rad + 0.5 * dyaw
        self.north_m += chord * math.cos(mid)
        self.east_m += chord * math.sin(mid)
        self.yaw_rad += dyaw
        self.speed_mps = speed
        self.yaw_rate_radps = yaw_rate
        self.distance_m += abs(speed) * dt_s

    def vel_ned_mps(self):
        return (self.speed_mps * math.cos(self.yaw_rad), self.speed_mps * math.sin(self.yaw_rad), 0.0)


class SimMotors:
    """The runtime's motor interface onto the simulated robot (stands in for VESC/AVR drivers)."""

    def __init__(self, robot):
        self.robot = robot
        self.stops = 0

    def command(self, wheel_cmd):
        self.robot.command(wheel_cmd.left_radps, wheel_cmd.right_radps)

    def stop(self, now_us):
        self.stops += 1
        self.robot.command(0.0, 0.0)
