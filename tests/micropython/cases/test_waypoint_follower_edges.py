"""The way-point follower on a dense path and on bad way-points: many way-points inside the accept radius at
once are all reached in one step (no recursion per way-point: MicroPython's stack holds only a few dozen
frames, CPython's a thousand), and a way-point that is not a pair or triple of finite numbers with a direction
of exactly +1 or -1 is refused when the mission is built, naming the way-point.

Runs under CPython (pytest) and inside MicroPython (no pytest: bad input is checked with try/except).
"""
from onboard.control.waypoint import WaypointFollower

NAN = float("nan")


def test_dense_waypoints_inside_the_radius_are_reached_in_one_step():
    f = WaypointFollower([(0.0001 * k, 0.0) for k in range(2000)] + [(5.0, 0.0)])
    cmd = f.update(0.0, 0.0, 0.0, 1000)
    # the way-points closer than the 0.15 m accept radius (k < 1500) are reached at once, in order
    assert f.index == 1500 and len(f.reached_us) == 1500 and f.reached_us[-1] == 1000
    assert cmd.speed_body_mps > 0.0                   # driving on, north, to way-point 1500


def test_all_waypoints_reached_at_once_finish_the_mission():
    f = WaypointFollower([(0.0, 0.0)] * 3000)
    cmd = f.update(0.0, 0.0, 0.0, 5)
    assert f.done and cmd.speed_body_mps == 0.0 and cmd.yaw_rate_radps == 0.0 and len(f.reached_us) == 3000


def _refused(waypoints, words):
    try:
        WaypointFollower(waypoints)
    except ValueError as e:
        for w in words:
            assert w in str(e), (w, str(e))
        return
    raise AssertionError("accepted %r" % (waypoints,))


def test_bad_waypoints_are_refused_with_their_index():
    _refused([(1.0, 0.0), (NAN, 2.0)], ("way-point 1", "finite"))
    _refused([(1.0, float("inf"))], ("way-point 0",))
    _refused([(1.0, 0.0), (1.0,)], ("way-point 1",))
    _refused([(1.0, 0.0, 1, 7)], ("way-point 0",))
    _refused([("1", 0.0)], ("way-point 0",))
    _refused([(True, 0.0)], ("way-point 0",))
    _refused([5.0], ("way-point 0",))
    _refused([(0.0, 0.0, 1.5)], ("way-point 0 direction",))       # was truncated to +1
    _refused([(0.0, 0.0, True)], ("way-point 0 direction",))


def test_directions_as_written_are_kept():
    f = WaypointFollower([(1.0, 0.0), (2.0, 0.0, -1), (3.0, 0.0, 1.0), [4.0, 5.0]])
    assert f.directions == [1, -1, 1, 1]
    assert f.waypoints_ne_m == [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 5.0)]
    assert type(f.directions[2]) is int
