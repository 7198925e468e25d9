"""Swarm action integration (pure) on bad numbers: run under CPython (pytest) and inside MicroPython."""
from onboard.swarm import actions as A

_NAN = float("nan")
_INF = float("inf")


def _refused(vx, vy, action, dt_s, error):
    try:
        A.update_setpoint(vx, vy, action, dt_s)
    except error:
        return True
    return False


def test_a_hold_time_that_is_not_finite_or_negative_is_refused():
    """dt nan from rest raised ZeroDivisionError (0 <= nan is false, then / speed 0); dt nan while moving gave a
    nan setpoint; dt < 0 made slowing down speed up (0.5 -> 0.6 m/s)."""
    for dt_s in (_NAN, _INF, -_INF, -0.1, None, "0.1", True):
        assert _refused(0.0, 0.0, A.SLOW_DOWN, dt_s, A.SetpointInputError), dt_s
        assert _refused(0.5, 0.0, A.SLOW_DOWN, dt_s, A.SetpointInputError), dt_s
        assert _refused(0.5, 0.0, 0, dt_s, A.SetpointInputError), dt_s
    assert issubclass(A.SetpointInputError, ValueError)


def test_a_velocity_that_is_not_finite_is_refused():
    for vx, vy in ((_NAN, 0.0), (0.0, _INF), (None, 0.0), (0.0, "0")):
        for action in (0, 3, A.SLOW_DOWN):
            assert _refused(vx, vy, action, 0.1, A.SetpointInputError), (vx, vy, action)


def test_a_bool_action_is_refused():
    """True was taken as action 1 (bool is an int)."""
    for bad in (True, False):
        assert _refused(0.0, 0.0, bad, 0.1, A.ActionError), bad


def test_valid_numbers_still_integrate():
    assert A.update_setpoint(0.0, 0.0, A.SLOW_DOWN, 0.0) == (0.0, 0.0)
    assert A.update_setpoint(0.5, 0.0, 0, 0.0) == (0.5, 0.0)
    assert A.update_setpoint(0, 0, 0, 1) == (1.0, 0.0)


def golden_bad_number_outcomes():
    out = []
    for dt_s in (_NAN, -0.1, 0.0, 0.1):
        try:
            vx, vy = A.update_setpoint(0.3, -0.4, A.SLOW_DOWN, dt_s)
            out.append(vx)
            out.append(vy)
        except A.SetpointInputError:
            out.append(-1.0)
    return out
