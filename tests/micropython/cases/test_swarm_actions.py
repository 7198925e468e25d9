"""Swarm DQN actions (pure): run under CPython (pytest) and inside MicroPython."""
import math

from onboard.swarm import actions as A


def test_eight_directions_45_deg_apart():
    assert A.N_ACTIONS == 9 and A.SLOW_DOWN == 8
    for k in range(8):
        ux, uy = A.DIRECTIONS_BODY[k]
        assert abs(math.atan2(uy, ux) - math.atan2(math.sin(k * math.pi / 4), math.cos(k * math.pi / 4))) < 1e-12


def test_speed_capped_at_one_mps():
    vx, vy = 0.0, 0.0
    for _ in range(50):
        vx, vy = A.update_setpoint(vx, vy, 1, 0.1)
    assert abs(math.sqrt(vx * vx + vy * vy) - 1.0) < 1e-12
    assert abs(vx - vy) < 1e-12            # action 1 = 45 deg


def test_slow_down_reaches_rest_and_keeps_direction():
    vx, vy = A.update_setpoint(0.6, -0.8, A.SLOW_DOWN, 0.1)
    assert abs(math.sqrt(vx * vx + vy * vy) - 0.9) < 1e-12
    assert abs(math.atan2(vy, vx) - math.atan2(-0.8, 0.6)) < 1e-12
    for _ in range(20):
        vx, vy = A.update_setpoint(vx, vy, A.SLOW_DOWN, 0.1)
    assert (vx, vy) == (0.0, 0.0)


def test_bad_action_rejected():
    for bad in (-1, 9, 2.0, None):
        try:
            A.update_setpoint(0.0, 0.0, bad, 0.1)
        except A.ActionError:
            pass
        else:
            raise AssertionError("accepted action %r" % (bad,))


def golden_setpoint_sequence():
    vx, vy = 0.0, 0.0
    out = []
    for k in range(12):
        vx, vy = A.update_setpoint(vx, vy, (3 * k) % 9, 0.1)
        out.append(vx)
        out.append(vy)
    return out
