"""The nine discrete actions of the pocket-drone DQN and what they do to the velocity setpoint (pure).

uwb-pocket-drones IV-C / III-C: "fixed acceleration in eight different directions with a 45 deg
spacing. Additionally it has the option to slow down ... nine actions in total. The speed of the
drone is capped at 1 m/s." Actions are in the drone's own body frame (planar FRD: x forward,
y right); action k < 8 accelerates towards angle k * 45 deg from x towards y, action 8
(``SLOW_DOWN``) decelerates towards rest. The runtime integrates the action into a body-frame
velocity setpoint, which the Crazyflie's velocity controller tracks (pocket III-C: "velocity
commands, which are then executed in a closed loop fashion"); the action is held between
policy updates (frame skipping, pocket V-B).
"""
import math

N_ACTIONS = 9
N_DIRECTIONS = 8
SLOW_DOWN = 8
ACCEL_MPS2 = 1.0            # magnitude of every action's acceleration
MAX_SPEED_MPS = 1.0         # pocket III-C speed cap

_STEP_RAD = 2.0 * math.pi / N_DIRECTIONS
DIRECTIONS_BODY = tuple((math.cos(k * _STEP_RAD), math.sin(k * _STEP_RAD)) for k in range(N_DIRECTIONS))


class ActionError(ValueError):
    """An action index outside 0..8."""


class SetpointInputError(ValueError):
    """A velocity (m/s) or hold time (s) that is not a finite number, or a negative hold time."""


_INF = float("inf")


def finite_number(v):
    """Whether ``v`` is a finite number: an int or a float (a NumPy scalar too), not a bool or text."""
    kind = type(v)
    if kind is int:                      # the common cases first (every policy step and range)
        return True
    if kind is float:
        return v == v and v != _INF and v != -_INF
    if isinstance(v, (bool, str, bytes)):
        return False
    try:
        v = float(v)
    except (TypeError, ValueError, OverflowError):
        return False
    return v == v and v != _INF and v != -_INF


def update_setpoint(vx_mps, vy_mps, action, dt_s, accel_mps2=ACCEL_MPS2, max_speed_mps=MAX_SPEED_MPS):
    """Velocity setpoint (body frame, m/s) after holding ``action`` for dt_s seconds.

    k < 8: ``v += a * dt * (cos 45k, sin 45k)``, then the speed is capped at max_speed;
    8: the speed drops by ``a * dt`` towards 0 (direction kept).

    An action that is not an int in 0..8 (a bool included) raises :class:`ActionError`; a velocity
    that is not a finite number, or a dt_s that is not a finite number >= 0, raises
    :class:`SetpointInputError`.
    """
    if not isinstance(action, int) or isinstance(action, bool) or action < 0 or action >= N_ACTIONS:
        raise ActionError("action must be an int in 0..%d, got %r" % (N_ACTIONS - 1, action))
    if not (finite_number(vx_mps) and finite_number(vy_mps)):
        raise SetpointInputError("velocity setpoint must be two finite numbers (m/s), got %r" % ((vx_mps, vy_mps),))
    if not finite_number(dt_s) or dt_s < 0:
        raise SetpointInputError("dt_s must be a finite number >= 0 (s), got %r" % (dt_s,))
    if action == SLOW_DOWN:
        speed = math.sqrt(vx_mps * vx_mps + vy_mps * vy_mps)
        if speed <= accel_mps2 * dt_s:
            return 0.0, 0.0
        scale = (speed - accel_mps2 * dt_s) / speed
        return vx_mps * scale, vy_mps * scale
    ux, uy = DIRECTIONS_BODY[action]
    vx = vx_mps + accel_mps2 * dt_s * ux
    vy = vy_mps + accel_mps2 * dt_s * uy
    speed = math.sqrt(vx * vx + vy * vy)
    if speed > max_speed_mps:
        vx *= max_speed_mps / speed
        vy *= max_speed_mps / speed
    return vx, vy
