"""Sample and command types shared by drivers, simulated sensors and the runtime.

Every type carries ``time_us`` (integer microseconds of the clock the runtime
runs on) and SI quantities whose unit and frame are in the field name
(CONVENTIONS.md). Drivers and simulated sensors build the same objects and call
the same runtime entry points. Plain classes (no dataclasses) so they run on
MicroPython; ``FIELDS`` lists the fields in order for logging and equality.
"""


class SampleError(ValueError):
    """A sample was built with a field of the wrong shape or a non-finite value."""


_INF = float("inf")
# what float() takes but no number field does: text ("1.5", or "123" read as the vector 1, 2, 3), bytes, booleans
_NOT_NUMBERS = (str, bytes, bool)


def _big(value):
    """+-inf for an int too large for a float (CPython's float() raises OverflowError; MicroPython's gives inf)."""
    return _INF if value > 0 else -_INF


def _vec(name, value, length):
    """A tuple of ``length`` floats, or SampleError naming the field (not an ordered sequence, text, a wrong
    length, an entry that is not a number or is a boolean); an int too large for a float becomes +-inf (as on
    MicroPython)."""
    if isinstance(value, _NOT_NUMBERS) or isinstance(value, (dict, set)):
        raise SampleError("%s must be a sequence of %d numbers, got %r" % (name, length, value))
    out = []
    try:
        for v in value:
            if isinstance(v, _NOT_NUMBERS):
                raise ValueError
            try:
                out.append(float(v))
            except OverflowError:
                out.append(_big(v))
    except (TypeError, ValueError):
        raise SampleError("%s must be a sequence of %d numbers" % (name, length))
    if len(out) != length:
        raise SampleError("%s must have %d entries, got %d" % (name, length, len(out)))
    return tuple(out)


def _int(name, value):
    """A whole-number field (a time in us, a count, an id), or SampleError naming it (text, None, NaN or
    infinity: ``int()`` raises ValueError / TypeError / OverflowError for them; a float with a fraction, which
    ``int()`` would truncate (10.7 us to 10, a 0.5 us interval to 0), text of digits and a boolean)."""
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        out = None
    if out is None or out != value or isinstance(value, bool):
        raise SampleError("%s must be a whole number, got %r" % (name, value))
    return out


def _num(name, value):
    """A float field, or SampleError naming it (None, text, a boolean); an int too large for a float becomes
    +-inf (as on MicroPython)."""
    if isinstance(value, _NOT_NUMBERS):
        raise SampleError("%s must be a number, got %r" % (name, value))
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SampleError("%s must be a number, got %r" % (name, value))
    except OverflowError:
        return _big(value)


def nan_for_null(values):
    """``values`` (a list as a log recorded it) with every null as NaN, nested lists too (a LIDAR sweep's rows,
    an obstacle list's circles): the logs write a non-finite number as null, and a sample refused when it was
    recorded must be refused again when it is rebuilt."""
    return [_NAN if x is None else (nan_for_null(x) if isinstance(x, list) else x) for x in values]


_NAN = float("nan")


class _Sample:
    FIELDS = ()

    def as_dict(self):
        out = {}
        for name in self.FIELDS:
            v = getattr(self, name)
            if isinstance(v, tuple):
                v = list(v)
            out[name] = v
        return out

    def __eq__(self, other):
        if type(other) is not type(self):
            return False
        for name in self.FIELDS:
            if getattr(self, name) != getattr(other, name):
                return False
        return True

    def __repr__(self):
        parts = []
        for name in self.FIELDS:
            parts.append("%s=%r" % (name, getattr(self, name)))
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))

    def is_finite(self):
        """True when no float field holds NaN or infinity."""
        for name in self.FIELDS:
            v = getattr(self, name)
            vals = v if isinstance(v, tuple) else (v,)
            for x in vals:
                if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
                    return False
        return True


class ImuSample(_Sample):
    """IMU increments over the interval (time_us - dt_us, time_us].

    dvel_body_mps: velocity increment (integrated specific force), body FRD, m/s.
    dang_body_rad: angle increment (integrated angular rate), body FRD, rad.
    These are q_v and q_t of ag2u eqs. 2a-2b.
    """
    FIELDS = ("time_us", "dt_us", "dvel_body_mps", "dang_body_rad")

    def __init__(self, time_us, dt_us, dvel_body_mps, dang_body_rad):
        self.time_us = _int("time_us", time_us)
        self.dt_us = _int("dt_us", dt_us)
        if self.dt_us <= 0:
            raise SampleError("dt_us must be positive, got %d" % self.dt_us)
        self.dvel_body_mps = _vec("dvel_body_mps", dvel_body_mps, 3)
        self.dang_body_rad = _vec("dang_body_rad", dang_body_rad, 3)


class PoseSample(_Sample):
    """Aiding pose measurement: NED position (m) and Z-Y-X Euler attitude (rad).

    euler_rad is (roll, pitch, yaw) of R_body_to_ned. cov_pos_m2 / cov_att_rad2 are
    the per-axis measurement variances (diagonal), or None when unknown.
    """
    FIELDS = ("time_us", "pos_ned_m", "euler_rad", "cov_pos_m2", "cov_att_rad2")

    def __init__(self, time_us, pos_ned_m, euler_rad, cov_pos_m2=None, cov_att_rad2=None):
        self.time_us = _int("time_us", time_us)
        self.pos_ned_m = _vec("pos_ned_m", pos_ned_m, 3)
        self.euler_rad = _vec("euler_rad", euler_rad, 3)
        self.cov_pos_m2 = None if cov_pos_m2 is None else _vec("cov_pos_m2", cov_pos_m2, 3)
        self.cov_att_rad2 = None if cov_att_rad2 is None else _vec("cov_att_rad2", cov_att_rad2, 3)


class GnssSample(_Sample):
    """GNSS fix: WGS-84 latitude/longitude (deg), altitude (m), NED velocity (m/s), accuracies (m, 1 sigma)."""
    FIELDS = ("time_us", "lat_deg", "lon_deg", "alt_m", "vel_ned_mps", "h_acc_m", "v_acc_m")

    def __init__(self, time_us, lat_deg, lon_deg, alt_m, vel_ned_mps=(0.0, 0.0, 0.0),
                 h_acc_m=1.0, v_acc_m=1.0):
        self.time_us = _int("time_us", time_us)
        self.lat_deg = _num("lat_deg", lat_deg)
        self.lon_deg = _num("lon_deg", lon_deg)
        self.alt_m = _num("alt_m", alt_m)
        self.vel_ned_mps = _vec("vel_ned_mps", vel_ned_mps, 3)
        self.h_acc_m = _num("h_acc_m", h_acc_m)
        self.v_acc_m = _num("v_acc_m", v_acc_m)


class RangeSample(_Sample):
    """UWB range to a peer (m) with the peer's velocity ``(vx, vy)`` as it reported it (its own frame, m/s)."""
    FIELDS = ("time_us", "peer_id", "range_m", "peer_vel_mps", "range_std_m")

    def __init__(self, time_us, peer_id, range_m, peer_vel_mps=(0.0, 0.0), range_std_m=0.0):
        self.time_us = _int("time_us", time_us)
        self.peer_id = _int("peer_id", peer_id)
        self.range_m = _num("range_m", range_m)
        self.peer_vel_mps = _vec("peer_vel_mps", peer_vel_mps, 2)
        self.range_std_m = _num("range_std_m", range_std_m)


class WheelSpeedSample(_Sample):
    """Measured wheel angular speeds (rad/s), positive drives the robot forward."""
    FIELDS = ("time_us", "left_radps", "right_radps")

    def __init__(self, time_us, left_radps, right_radps):
        self.time_us = _int("time_us", time_us)
        self.left_radps = _num("left_radps", left_radps)
        self.right_radps = _num("right_radps", right_radps)


class EncoderSample(_Sample):
    """Cumulative wheel encoder counts (ticks) as read from a motor board."""
    FIELDS = ("time_us", "left_ticks", "right_ticks")

    def __init__(self, time_us, left_ticks, right_ticks):
        self.time_us = _int("time_us", time_us)
        self.left_ticks = _int("left_ticks", left_ticks)
        self.right_ticks = _int("right_ticks", right_ticks)


class WheelCmd(_Sample):
    """Wheel angular speed command (rad/s) for a differential-drive / skid-steer base."""
    FIELDS = ("time_us", "left_radps", "right_radps")

    def __init__(self, time_us, left_radps, right_radps):
        self.time_us = _int("time_us", time_us)
        self.left_radps = _num("left_radps", left_radps)
        self.right_radps = _num("right_radps", right_radps)


class TwistCmd(_Sample):
    """Planar body twist command: forward speed (m/s) and yaw rate (rad/s, positive turns right in FRD/NED)."""
    FIELDS = ("time_us", "speed_body_mps", "yaw_rate_radps")

    def __init__(self, time_us, speed_body_mps, yaw_rate_radps):
        self.time_us = _int("time_us", time_us)
        self.speed_body_mps = _num("speed_body_mps", speed_body_mps)
        self.yaw_rate_radps = _num("yaw_rate_radps", yaw_rate_radps)


class VelocitySetpoint(_Sample):
    """Velocity setpoint in the navigation frame (m/s) with a yaw-rate command (rad/s), e.g. for a drone."""
    FIELDS = ("time_us", "vel_ned_mps", "yaw_rate_radps")

    def __init__(self, time_us, vel_ned_mps, yaw_rate_radps=0.0):
        self.time_us = _int("time_us", time_us)
        self.vel_ned_mps = _vec("vel_ned_mps", vel_ned_mps, 3)
        self.yaw_rate_radps = _num("yaw_rate_radps", yaw_rate_radps)


class NavState(_Sample):
    """Estimator output: NED position (m), NED velocity (m/s), Z-Y-X Euler attitude (rad)."""
    FIELDS = ("time_us", "pos_ned_m", "vel_ned_mps", "euler_rad")

    def __init__(self, time_us, pos_ned_m, vel_ned_mps, euler_rad):
        self.time_us = _int("time_us", time_us)
        self.pos_ned_m = _vec("pos_ned_m", pos_ned_m, 3)
        self.vel_ned_mps = _vec("vel_ned_mps", vel_ned_mps, 3)
        self.euler_rad = _vec("euler_rad", euler_rad, 3)


class FaultSet(_Sample):
    """The faults a driver reports at ``time_us`` (e.g. the VESC driver's ``"link_down:left"``,
    ``"vesc_fault:right:OVER_TEMP_FET"``): a sorted tuple of names, empty when none. Handed to an
    app's fault entry point whenever the set changes, so a recording replays the failsafe exactly."""
    FIELDS = ("time_us", "faults")

    def __init__(self, time_us, faults=()):
        self.time_us = _int("time_us", time_us)
        try:
            # one name as text would be taken letter by letter ("link_down" -> "_", "d", "i", ...)
            given = None if isinstance(faults, str) else tuple(faults)
        except TypeError:
            given = None
        if given is None:
            raise SampleError("faults must be a sequence of fault names, got %r" % (faults,))
        names = []
        for f in given:
            if not isinstance(f, str) or not f:
                raise SampleError("faults must be non-empty strings, got %r" % (f,))
            if f not in names:
                names.append(f)
        names.sort()
        self.faults = tuple(names)


# a way-point's (north_m, east_m) or (north_m, east_m, direction) entries (onboard.control.waypoint)
WAYPOINT_NORTH = 0
WAYPOINT_EAST = 1
WAYPOINT_DIRECTION = 2


class MissionCmd(_Sample):
    """A mission command to a way-point driving app at ``time_us``: drive the way-points
    ``waypoints_ne_m`` (each ``(north_m, east_m)`` or ``(north_m, east_m, direction)``, direction +1
    forward / -1 reverse, as ``onboard.control.waypoint.WaypointFollower`` takes them), or, with
    ``hold`` true, stand still where it is (``waypoints_ne_m`` empty) until the next way-points."""
    FIELDS = ("time_us", "waypoints_ne_m", "hold")

    def __init__(self, time_us, waypoints_ne_m=(), hold=False):
        self.time_us = _int("time_us", time_us)
        self.hold = bool(hold)
        out = []
        if isinstance(waypoints_ne_m, (str, bytes, dict)):
            raise SampleError("waypoints_ne_m must be a sequence of way-points, got %r" % (waypoints_ne_m,))
        try:
            given = tuple(waypoints_ne_m)
        except TypeError:
            raise SampleError("waypoints_ne_m must be a sequence of way-points, got %r" % (waypoints_ne_m,))
        for w in given:
            try:
                n = len(w)
            except TypeError:
                raise SampleError("a way-point must be (north_m, east_m[, direction]), got %r" % (w,))
            if n not in (WAYPOINT_DIRECTION, WAYPOINT_DIRECTION + 1):
                raise SampleError("a way-point must be (north_m, east_m[, direction]), got %r" % (w,))
            point = (_num("way-point north_m", w[WAYPOINT_NORTH]), _num("way-point east_m", w[WAYPOINT_EAST]))
            for x in point:
                if x != x or x in (float("inf"), float("-inf")):
                    raise SampleError("way-point %r is not finite" % (w,))
            if n > WAYPOINT_DIRECTION:
                direction = w[WAYPOINT_DIRECTION]
                if direction not in (1, -1):
                    raise SampleError("way-point direction must be +1 or -1, got %r" % (direction,))
                point = point + (_int("direction", direction),)
            out.append(point)
        if self.hold and out:
            raise SampleError("a hold command carries no way-points")
        if not self.hold and not out:
            raise SampleError("a mission command needs way-points (or hold)")
        self.waypoints_ne_m = tuple(out)


class BodyVelocitySample(_Sample):
    """Own velocity in the body frame, ``vel_body_mps`` = (forward, right) in m/s, and the body's
    heading ``yaw_rad`` (rad, from north towards east) in the driver's navigation frame (a swarm
    member's own-velocity entry point, ``onboard.swarm.member``)."""
    FIELDS = ("time_us", "vel_body_mps", "yaw_rad")

    def __init__(self, time_us, vel_body_mps, yaw_rad):
        self.time_us = _int("time_us", time_us)
        self.vel_body_mps = _vec("vel_body_mps", vel_body_mps, 2)
        self.yaw_rad = _num("yaw_rad", yaw_rad)


class GoalRangeSample(_Sample):
    """Range to the goal (m): a UWB beacon at the goal, or the distance from the own position fix."""
    FIELDS = ("time_us", "range_m")

    def __init__(self, time_us, range_m):
        self.time_us = _int("time_us", time_us)
        self.range_m = _num("range_m", range_m)


class GoalReset(_Sample):
    """The mission moved the goal at ``time_us`` (the next one of a sequence): its track starts afresh."""
    FIELDS = ("time_us",)

    def __init__(self, time_us):
        self.time_us = _int("time_us", time_us)


class PitchSample(_Sample):
    """The body's pitch (rad, Z-Y-X Euler pitch, nose up positive) as a board estimated it at ``time_us``
    (the AVR leveler's LEVEL_STATE, ``boards.arduino.leveler_app``)."""
    FIELDS = ("time_us", "pitch_rad")

    def __init__(self, time_us, pitch_rad):
        self.time_us = _int("time_us", time_us)
        self.pitch_rad = _num("pitch_rad", pitch_rad)


class RandomState(_Sample):
    """The state of an app's random draws at ``time_us``, as a JSON string (e.g. a NumPy bit
    generator's ``state``): recorded before each use, so a replay draws the same numbers."""
    FIELDS = ("time_us", "state_json")

    def __init__(self, time_us, state_json):
        self.time_us = _int("time_us", time_us)
        if not isinstance(state_json, str) or not state_json:
            raise SampleError("state_json must be a non-empty JSON string, got %r" % (state_json,))
        self.state_json = state_json
