"""3-DOF skid-steer surface-vessel model of the RobotX AAVS paper, eqs. 1-6 (pure, MicroPython tier).

State (named slots below), NED navigation frame, FRD body frame (CONVENTIONS.md)::

    x = [yaw_rad, yaw_rate_radps, north_m, east_m, surge_mps, sway_mps]

yaw from north towards east, yaw rate + turning right, surge/sway the body-frame velocity over ground
(forward, starboard). Inputs: the left and right outboard thrusts T_l, T_r (N, + forward); the paper's
centre thrust m_c is taken as 0 (a two-thruster WAM-V). Nine constants c1..c9 (robotx III-B):
c1 rotational inertia over moment arm (kg m), c2/c3 linear/quadratic yaw damping (1/s, 1/rad),
c4 system inertia (kg), c5/c6 linear/quadratic surge drag (1/s, 1/m), c7/c8 linear/quadratic sway
drag (1/s, 1/m), c9 the "straightening" uv yaw moment (rad/m^2; c9 < 0 straightens, c9 > 0 is a
destabilising Munk moment).

One explicit step of length dt (robotx eqs. 1-6 in NED/FRD, printed typos resolved as in the reading
aid: eq. 4's sign, eq. 6's c7 multiplying sway, the c9 term (u^2+v^2) sin(2 atan2(v, u)) = 2uv)::

    yaw'   = yaw + r dt                                                        (eq. 1)
    r'     = r + dt ((T_l - T_r)/c1 - c2 r - c3 r|r| - 2 c9 u v)              (eq. 2)
    north' = north + dt (u cos yaw - v sin yaw)                                (eq. 4, corrected)
    east'  = east + dt (u sin yaw + v cos yaw)                                 (eq. 3)
    u'     = u cos(r dt) + v sin(r dt) + dt ((T_l + T_r)/c4 - c5 u - c6 u|u|)  (eq. 5)
    v'     = v cos(r dt) - u sin(r dt) + dt (-c7 v - c8 v|v|)                  (eq. 6, c7 v)

The paper's own frame (``paper_step``): theta counter-clockwise from x = east, omega = -r, x = east,
y = north, u and v unchanged (v to starboard), the same c1..c9. ``to_paper_state`` /
``from_paper_state`` convert; tests check both steps against each other.

Matrices are flat row-major lists (``onboard.core.linalg``).
"""
import math

from onboard.core.angles import wrap_pi
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked

# State slots (robotx III-B: theta, omega, x, y, u, v in NED/FRD).
YAW = 0             # yaw_rad
YAW_RATE = 1        # yaw_rate_radps
NORTH = 2           # north_m
EAST = 3            # east_m
SURGE = 4           # surge_mps (body forward, over ground)
SWAY = 5            # sway_mps (body starboard, over ground)
N_STATE = 6
STATE_NAMES = ("yaw_rad", "yaw_rate_radps", "north_m", "east_m", "surge_mps", "sway_mps")

# Input slots.
THRUST_LEFT = 0     # thrust_left_n
THRUST_RIGHT = 1    # thrust_right_n
N_INPUT = 2

# Parameter slots: c1..c9 of robotx eqs. 2, 5, 6 are params[C1]..params[C9].
C1, C2, C3, C4, C5, C6, C7, C8, C9 = 0, 1, 2, 3, 4, 5, 6, 7, 8
N_PARAM = 9
PARAM_NAMES = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9")

# Priors from the VRX WAM-V (reading aid table 2.1): I_z / arm, N_r / I_z, 0, m, X_u / m, X_uu / m,
# Y_v / m, 0, 0. Units as in the module docstring.
DEFAULTS = {
    "c1": 434.0,
    "c2": 0.90,
    "c3": 0.0,
    "c4": 180.0,
    "c5": 0.285,
    "c6": 0.402,
    "c7": 0.222,
    "c8": 0.0,
    "c9": 0.0,
}
SETTING_RANGES = {
    "c1": POSITIVE,
    "c2": NON_NEGATIVE,
    "c3": NON_NEGATIVE,
    "c4": POSITIVE,
    "c5": NON_NEGATIVE,
    "c6": NON_NEGATIVE,
    "c7": NON_NEGATIVE,
    "c8": NON_NEGATIVE,
    "c9": ANY_NUMBER,
}


def params_from(settings=None, owner="vessel model"):
    """The nine constants as a list (slots C1..C9) from settings overrides ({"c1": ..., ...}; missing
    keys take DEFAULTS); raises ``onboard.core.settings.ConfigError`` for an unknown or bad value."""
    cfg = checked(DEFAULTS, SETTING_RANGES, settings, owner)
    return [cfg[name] for name in PARAM_NAMES]


def params_dict(params):
    """{"c1": ..., ..., "c9": ...} of a parameter list."""
    return {PARAM_NAMES[i]: params[i] for i in range(N_PARAM)}


def _trig(x, dt_s):
    """(cos yaw, sin yaw, cos(r dt), sin(r dt)): the sines and cosines a step and its Jacobian share."""
    r_dt = x[YAW_RATE] * dt_s
    return math.cos(x[YAW]), math.sin(x[YAW]), math.cos(r_dt), math.sin(r_dt)


def _next_state(x, thrust_n, c, dt_s, cy, sy, cr, sr):
    yaw = x[YAW]
    r = x[YAW_RATE]
    u = x[SURGE]
    v = x[SWAY]
    t_l = thrust_n[THRUST_LEFT]
    t_r = thrust_n[THRUST_RIGHT]
    out = [0.0] * N_STATE
    out[YAW] = wrap_pi(yaw + r * dt_s)
    out[YAW_RATE] = r + dt_s * ((t_l - t_r) / c[C1] - c[C2] * r - c[C3] * r * abs(r) - 2.0 * c[C9] * u * v)
    out[NORTH] = x[NORTH] + dt_s * (u * cy - v * sy)
    out[EAST] = x[EAST] + dt_s * (u * sy + v * cy)
    out[SURGE] = u * cr + v * sr + dt_s * ((t_l + t_r) / c[C4] - c[C5] * u - c[C6] * u * abs(u))
    out[SWAY] = v * cr - u * sr + dt_s * (-c[C7] * v - c[C8] * v * abs(v))
    return out


def _state_jacobian(x, c, dt_s, cy, sy, cr, sr):
    r = x[YAW_RATE]
    u = x[SURGE]
    v = x[SWAY]
    n = N_STATE
    f = [0.0] * (n * n)
    f[YAW * n + YAW] = 1.0
    f[YAW * n + YAW_RATE] = dt_s
    f[YAW_RATE * n + YAW_RATE] = 1.0 - dt_s * (c[C2] + 2.0 * c[C3] * abs(r))
    f[YAW_RATE * n + SURGE] = -2.0 * dt_s * c[C9] * v
    f[YAW_RATE * n + SWAY] = -2.0 * dt_s * c[C9] * u
    f[NORTH * n + YAW] = -dt_s * (u * sy + v * cy)
    f[NORTH * n + NORTH] = 1.0
    f[NORTH * n + SURGE] = dt_s * cy
    f[NORTH * n + SWAY] = -dt_s * sy
    f[EAST * n + YAW] = dt_s * (u * cy - v * sy)
    f[EAST * n + EAST] = 1.0
    f[EAST * n + SURGE] = dt_s * sy
    f[EAST * n + SWAY] = dt_s * cy
    f[SURGE * n + YAW_RATE] = dt_s * (v * cr - u * sr)
    f[SURGE * n + SURGE] = cr - dt_s * (c[C5] + 2.0 * c[C6] * abs(u))
    f[SURGE * n + SWAY] = sr
    f[SWAY * n + YAW_RATE] = -dt_s * (v * sr + u * cr)
    f[SWAY * n + SURGE] = -sr
    f[SWAY * n + SWAY] = cr - dt_s * (c[C7] + 2.0 * c[C8] * abs(v))
    return f


def step(x, thrust_n, params, dt_s):
    """State after one explicit step of ``dt_s`` seconds under thrusts (T_l, T_r) in N held over the
    step (robotx eqs. 1-6, NED/FRD form of the module docstring); yaw wrapped to [-pi, pi)."""
    return _next_state(x, thrust_n, params, dt_s, *_trig(x, dt_s))


def jacobian_state(x, thrust_n, params, dt_s):
    """d step / d x: flat 6x6 (row = output slot, column = state slot) of robotx eqs. 1-6 (NED/FRD)."""
    return _state_jacobian(x, params, dt_s, *_trig(x, dt_s))


def step_with_jacobian(x, thrust_n, params, dt_s):
    """(:func:`step`, :func:`jacobian_state`) of one step with their sines and cosines computed once: the
    same numbers as the two calls (robotx eqs. 1-6; the EKF's predict)."""
    trig = _trig(x, dt_s)
    return _next_state(x, thrust_n, params, dt_s, *trig), _state_jacobian(x, params, dt_s, *trig)


def jacobian_thrust(x, thrust_n, params, dt_s):
    """d step / d (T_l, T_r): flat 6x2 (robotx eqs. 2 and 5)."""
    c = params
    g = [0.0] * (N_STATE * N_INPUT)
    g[YAW_RATE * N_INPUT + THRUST_LEFT] = dt_s / c[C1]
    g[YAW_RATE * N_INPUT + THRUST_RIGHT] = -dt_s / c[C1]
    g[SURGE * N_INPUT + THRUST_LEFT] = dt_s / c[C4]
    g[SURGE * N_INPUT + THRUST_RIGHT] = dt_s / c[C4]
    return g


def jacobian_params(x, thrust_n, params, dt_s):
    """d step / d (c1..c9): flat 6x9 (robotx eqs. 2, 5, 6); what a gradient fit of the constants needs."""
    c = params
    r = x[YAW_RATE]
    u = x[SURGE]
    v = x[SWAY]
    t_l = thrust_n[THRUST_LEFT]
    t_r = thrust_n[THRUST_RIGHT]
    p = N_PARAM
    j = [0.0] * (N_STATE * p)
    j[YAW_RATE * p + C1] = -dt_s * (t_l - t_r) / (c[C1] * c[C1])
    j[YAW_RATE * p + C2] = -dt_s * r
    j[YAW_RATE * p + C3] = -dt_s * r * abs(r)
    j[YAW_RATE * p + C9] = -2.0 * dt_s * u * v
    j[SURGE * p + C4] = -dt_s * (t_l + t_r) / (c[C4] * c[C4])
    j[SURGE * p + C5] = -dt_s * u
    j[SURGE * p + C6] = -dt_s * u * abs(u)
    j[SWAY * p + C7] = -dt_s * v
    j[SWAY * p + C8] = -dt_s * v * abs(v)
    return j


def body_to_ned_velocity(x):
    """(v_north_mps, v_east_mps) over ground: the body velocity (u, v) rotated by yaw (eqs. 3-4)."""
    cy = math.cos(x[YAW])
    sy = math.sin(x[YAW])
    u = x[SURGE]
    v = x[SWAY]
    return (u * cy - v * sy, u * sy + v * cy)


# ---------------------------------------------------------------- the paper's own form
# Paper state slots: theta (rad, counter-clockwise from x), omega (rad/s), x (m), y (m), u, v (m/s).
P_THETA, P_OMEGA, P_X, P_Y, P_U, P_V = 0, 1, 2, 3, 4, 5
HALF_PI = 0.5 * math.pi


def to_paper_state(x):
    """Paper state [theta, omega, x, y, u, v] of an NED/FRD state: theta = pi/2 - yaw, omega = -r,
    x = east, y = north, u and v unchanged (v to starboard)."""
    out = [0.0] * N_STATE
    out[P_THETA] = wrap_pi(HALF_PI - x[YAW])
    out[P_OMEGA] = -x[YAW_RATE]
    out[P_X] = x[EAST]
    out[P_Y] = x[NORTH]
    out[P_U] = x[SURGE]
    out[P_V] = x[SWAY]
    return out


def from_paper_state(p):
    """NED/FRD state of a paper state (inverse of :func:`to_paper_state`)."""
    out = [0.0] * N_STATE
    out[YAW] = wrap_pi(HALF_PI - p[P_THETA])
    out[YAW_RATE] = -p[P_OMEGA]
    out[NORTH] = p[P_Y]
    out[EAST] = p[P_X]
    out[SURGE] = p[P_U]
    out[SWAY] = p[P_V]
    return out


def paper_step(p, thrust_n, params, dt_s):
    """One step of robotx eqs. 1-6 as printed, in the paper's frame, with the typos resolved (omega_t and
    w_k read omega_k, eq. 6's left side v, eq. 6's c7 times v, eq. 4's sign: y' = y + dt (u sin theta -
    v cos theta)); the c9 term kept in its printed atan2 form. Thrusts (m_l, m_r) in N, m_c = 0."""
    c = params
    th = p[P_THETA]
    w = p[P_OMEGA]
    u = p[P_U]
    v = p[P_V]
    m_l = thrust_n[THRUST_LEFT]
    m_r = thrust_n[THRUST_RIGHT]
    straighten = c[C9] * (u * u + v * v) * math.sin(2.0 * math.atan2(v, u))
    out = [0.0] * N_STATE
    out[P_THETA] = th + w * dt_s                                                           # eq. 1
    out[P_OMEGA] = w + dt_s * ((m_r - m_l) / c[C1] - c[C2] * w - c[C3] * w * abs(w) + straighten)   # eq. 2
    out[P_X] = p[P_X] + dt_s * (u * math.cos(th) + v * math.sin(th))                        # eq. 3
    out[P_Y] = p[P_Y] + dt_s * (u * math.sin(th) - v * math.cos(th))                        # eq. 4
    out[P_U] = (u * math.cos(w * dt_s) - v * math.sin(w * dt_s)
                + dt_s * ((m_r + m_l) / c[C4] - c[C5] * u - c[C6] * u * abs(u)))           # eq. 5
    out[P_V] = v * math.cos(w * dt_s) + u * math.sin(w * dt_s) + dt_s * (-c[C7] * v - c[C8] * v * abs(v))  # eq. 6
    return out
