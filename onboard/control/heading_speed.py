"""Heading and speed control of a skid-steer surface vessel (pure): two PIDs and thrust allocation
through the inverse thrust map.

Frames and signs as ``onboard.vessel.model`` (robotx eqs. 1-6 in NED/FRD): yaw from north towards east,
a larger left thrust turns the boat right. Each control step:

- heading error e_psi = wrap(psi_ref - psi) (rad) -> yaw moment demand N = PID(e_psi) (N m), with the
  measured yaw rate as the derivative term (no derivative kick on a new reference);
- speed error e_u = u_ref - u (m/s) -> surge force demand X = X_ff + PID(e_u) (N), with the steady-state
  feed-forward X_ff = drag_n_per_mps * u_ref;
- allocation, from X = T_l + T_r and N = arm (T_l - T_r) (the truth vessel's and the model's thrust
  geometry): T_l = X/2 + N/(2 arm), T_r = X/2 - N/(2 arm); when a side exceeds its limit the yaw moment
  keeps priority (the surge share is reduced first);
- commands c = ThrustMap.inverse(T) (the static curve's inverse: the command that gives T in steady state).
"""
import math

from onboard.control.pid import Pid, PidInputError, is_finite_number
from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked

DEFAULTS = {
    "heading_kp_nm_per_rad": 300.0,
    "heading_ki_nm_per_rad_s": 20.0,
    "heading_kd_nm_per_radps": 250.0,     # on the measured yaw rate
    "speed_kp_n_per_mps": 150.0,
    "speed_ki_n_per_m": 20.0,
    "drag_n_per_mps": 100.0,              # feed-forward surge force per m/s of reference speed
    "arm_m": 1.027,                       # half the distance between the outboards
    "max_forward_n": 242.7,               # per-side thrust limits (the thrust map's table ends)
    "max_reverse_n": 101.9,
    "max_moment_nm": 250.0,
}
SETTING_RANGES = {k: (POSITIVE if k in ("arm_m", "max_forward_n", "max_reverse_n", "max_moment_nm") else NON_NEGATIVE)
                  for k in DEFAULTS}


def wrap_pi(a):
    return math.atan2(math.sin(a), math.cos(a))


class HeadingSpeedController:
    """``step(psi_ref_rad, u_ref_mps, psi_rad, r_radps, u_mps, now_us)`` -> (cmd_left, cmd_right) in
    [-1, 1]; ``thrust_map``: an ``onboard.vessel.thrust_map.ThrustMap`` (its ``inverse``).
    ``last_thrust_n`` the allocated (T_l, T_r) (N)."""

    def __init__(self, thrust_map, config=None):
        cfg = self.cfg = checked(DEFAULTS, SETTING_RANGES, config, "heading/speed controller")
        self.thrust_map = thrust_map
        self.heading = Pid(cfg["heading_kp_nm_per_rad"], cfg["heading_ki_nm_per_rad_s"], 0.0,
                           output_limit=cfg["max_moment_nm"], integral_limit=2.0)
        self.speed = Pid(cfg["speed_kp_n_per_mps"], cfg["speed_ki_n_per_m"], 0.0,
                         output_limit=2.0 * cfg["max_forward_n"], integral_limit=5.0)
        self.last_thrust_n = (0.0, 0.0)
        self.steps = 0

    def reset(self):
        self.heading.reset()
        self.speed.reset()

    def allocate(self, x_n, n_nm):
        """(T_l, T_r) in N for surge force ``x_n`` and yaw moment ``n_nm`` within the per-side limits, the
        moment first."""
        c = self.cfg
        hi, lo = c["max_forward_n"], -c["max_reverse_n"]
        n_nm = max(-c["max_moment_nm"], min(c["max_moment_nm"], n_nm))
        d = n_nm / (2.0 * c["arm_m"])                     # T_l - X/2 = X/2 - T_r = d
        d = max(-(hi - lo) / 2.0, min((hi - lo) / 2.0, d))
        half = x_n / 2.0
        half = max(lo + abs(d), min(hi - abs(d), half))
        return (half + d, half - d)

    def step(self, psi_ref_rad, u_ref_mps, psi_rad, r_radps, u_mps, now_us):
        """Raises ``PidInputError`` (a ValueError) for a non-finite input or time going backwards, with
        both PIDs unchanged."""
        for name, v in (("psi_ref_rad", psi_ref_rad), ("u_ref_mps", u_ref_mps), ("psi_rad", psi_rad),
                        ("r_radps", r_radps), ("u_mps", u_mps)):
            if not is_finite_number(v):
                raise PidInputError("heading/speed controller: %s must be a finite number, got %r" % (name, v))
        c = self.cfg
        e_psi = wrap_pi(psi_ref_rad - psi_rad)
        e_u = u_ref_mps - u_mps
        self.heading.check(e_psi, now_us)      # both checked before either moves
        self.speed.check(e_u, now_us)
        n_nm = self.heading.update(e_psi, now_us) - c["heading_kd_nm_per_radps"] * r_radps
        x_n = c["drag_n_per_mps"] * u_ref_mps + self.speed.update(e_u, now_us)
        t_l, t_r = self.allocate(x_n, n_nm)
        self.last_thrust_n = (t_l, t_r)
        self.steps += 1
        return (self.thrust_map.inverse(t_l), self.thrust_map.inverse(t_r))
