"""The way-point follower slows down near a way-point where the robot stops even when that way-point is repeated
(a mission whose last point is written twice, or repeated before a reversal): before, the repeat counted as more
driving, so the robot ran into its final point at cruise speed and stopped dead there. Other paths keep their
speeds. A heading error crossing +-pi (target behind the robot) is differentiated the short way, not as a 2 pi
jump (a derivative kick that saturated the yaw rate). A NaN pose or time is refused before any way-point is
marked reached. Runs under CPython (pytest) and inside MicroPython."""
from onboard.control.waypoint import WaypointFollower


def _speed(waypoints, north_m=1.7):
    """Forward speed command facing north, ``north_m`` along, towards a way-point at 2 m north."""
    return WaypointFollower(waypoints).update(north_m, 0.0, 0.0, 1000).speed_body_mps


def test_a_repeated_final_waypoint_slows_down_like_a_single_one():
    single = _speed([(2.0, 0.0)])
    assert abs(single - 0.4 * 0.3 / 0.5) < 1e-12          # cruise * dist / slow_radius
    assert _speed([(2.0, 0.0), (2.0, 0.0)]) == single
    assert _speed([(2.0, 0.0), (2.0, 0.0), (2.0, 0.0, 1)]) == single


def test_a_repeated_waypoint_before_a_reversal_slows_down():
    stop = _speed([(2.0, 0.0), (0.0, 0.0, -1)])
    assert _speed([(2.0, 0.0), (2.0, 0.0), (0.0, 0.0, -1)]) == stop
    assert abs(stop - 0.4 * 0.3 / 0.5) < 1e-12


def test_driving_on_keeps_cruise_speed():
    assert _speed([(2.0, 0.0), (4.0, 0.0)]) == 0.4
    assert _speed([(2.0, 0.0), (2.0, 0.0), (4.0, 0.0)]) == 0.4
    # the same position with the other direction is a reversal: the robot stops there
    assert _speed([(2.0, 0.0), (2.0, 0.0, -1), (0.0, 0.0, -1)]) == _speed([(2.0, 0.0)])


def test_the_follower_reaches_a_repeated_final_waypoint_and_finishes():
    f = WaypointFollower([(2.0, 0.0), (2.0, 0.0)])
    cmd = f.update(1.9, 0.0, 0.0, 5000)
    assert f.done and cmd.speed_body_mps == 0.0 and f.reached_us == [5000, 5000]


def test_a_heading_error_crossing_pi_gives_no_derivative_kick():
    """Target just behind the robot, its bearing crossing +-pi between two steps: the heading error goes from
    pi - 0.001 to -pi + 0.001 rad, a change of 0.002 rad, not -2 pi (a -15.7 rad/s kick clamped to -1.5)."""
    f = WaypointFollower([(-10.0, 0.01)], {"heading_kp": 0.1, "heading_kd": 0.05})
    first = f.update(0.0, 0.0, 0.0, 0).yaw_rate_radps
    assert abs(first - 0.1 * (3.141592653589793 - 0.001)) < 1e-6
    second = f.update(0.0, 0.02, 0.0, 20000).yaw_rate_radps        # 20 ms later, 2 cm east: bearing -pi + 0.001
    assert abs(second - (0.1 * (-3.141592653589793 + 0.001) + 0.05 * 0.002 / 0.02)) < 1e-6


def test_a_generic_pid_still_differentiates_the_plain_error():
    from onboard.control.pid import Pid
    pid = Pid(0.0, 0.0, 1.0)
    pid.update(3.0, 0)
    assert pid.update(-3.0, 1000000) == -6.0                       # not an angle: the whole change
    wrapped = Pid(0.0, 0.0, 1.0, angle_error=True)
    wrapped.update(3.0, 0)
    assert abs(wrapped.update(-3.0, 1000000) - (2.0 * 3.141592653589793 - 6.0)) < 1e-12
    assert wrapped.update(-2.5, 2000000) == 0.5                    # below pi: the plain difference, bit for bit


def test_a_non_finite_pose_or_time_marks_no_waypoint_reached():
    """Before: with the robot inside the accept radius, the way-point was marked reached (at a NaN time, too) and the
    heading PID reset, and only then did the NaN yaw or time raise."""
    from onboard.control.pid import PidInputError
    nan = float("nan")
    f = WaypointFollower([(0.0, 0.0), (5.0, 0.0)])
    for args in ((0.0, 0.0, nan, 1000), (0.0, 0.0, 0.0, nan), (nan, 0.0, 0.0, 1000), (0.0, float("inf"), 0.0, 1000),
                 (0.0, 0.0, 0.0, None)):
        try:
            f.update(*args)
            raised = False
        except PidInputError:
            raised = True
        assert raised, args
        assert f.index == 0 and f.reached_us == []
    assert f.update(0.0, 0.0, 0.0, 1000).speed_body_mps > 0.0 and f.reached_us == [1000]
