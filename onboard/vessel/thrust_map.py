"""Thrust map of an electric outboard: throttle command -> thrust in newtons, and its inverse (pure).

The RobotX AAVS paper (III-B) maps recorded throttle commands to the forces m_l, m_r of eqs. 2 and 5
through a "transfer function" whose form it does not give. Here (reading aid 2.2): a first-order lag
of the normalised shaft speed n behind the command, exact for a command held over the step,

    n' = n + (cmd - n) (1 - exp(-dt / lag_tau_s))

followed by an asymmetric static curve T = curve(n): piecewise linear through the table
(``command_points``, ``forward_n``) for n >= 0 and through (-``command_points``, -``reverse_n``) for n < 0.
The default table is VRX's fitted WAM-V curve (reading aid 2.2). Commands are clamped to [-1, 1]; a
non-finite command is no thrust (0), and :meth:`ThrustMap.step` with either command non-finite commands
both sides 0, as ``onboard.vessel.outboards.VescOutboards.command`` stops both motors for it.

:meth:`ThrustMap.inverse` is the static curve's inverse (the steady-state command that gives a thrust),
for a controller's thrust allocation; thrusts beyond the table's ends give +-1 and a non-finite thrust
gives 0. :meth:`ThrustMap.step` raises :class:`ThrustMapInputError` (a ``ValueError``) for a step length
that is negative or not finite, with the shaft speeds unchanged.
"""
import math

from onboard.core.settings import NON_NEGATIVE, ConfigError, checked


def _increasing_from_zero(v):
    if not isinstance(v, list) or len(v) < 2 or v[0] != 0:
        return False
    for i in range(len(v) - 1):
        if not v[i] < v[i + 1]:
            return False
    return True


class ThrustMapInputError(ValueError):
    """A step length the thrust map cannot take (negative or not finite); one line."""


INCREASING_FROM_ZERO = ("a list of at least 2 strictly increasing numbers starting at 0", _increasing_from_zero)

DEFAULTS = {
    "lag_tau_s": 0.5,                                        # shaft-speed time constant (s); 0: no lag
    "command_points": [0.0, 0.1, 0.25, 0.5, 0.75, 1.0],      # normalised command (1 = full throttle)
    "forward_n": [0.0, 3.3, 14.3, 80.6, 181.9, 242.7],       # thrust at +command_points (N)
    "reverse_n": [0.0, 0.3, 1.9, 15.3, 56.4, 101.9],         # thrust magnitude at -command_points (N)
}
SETTING_RANGES = {
    "lag_tau_s": NON_NEGATIVE,
    "command_points": INCREASING_FROM_ZERO,
    "forward_n": INCREASING_FROM_ZERO,
    "reverse_n": INCREASING_FROM_ZERO,
}


def _clamped_command(command):
    """A command clamped to [-1, 1]; 0 for NaN or an infinity (``max(-1, min(1, nan))`` would be 1)."""
    if not command - command == 0:
        return 0.0
    return max(-1.0, min(1.0, command))


def _interp(x, xs, ys):
    """Piecewise-linear y(x) through ascending xs; held at the ends."""
    if x <= xs[0]:
        return ys[0]
    last = len(xs) - 1
    if x >= xs[last]:
        return ys[last]
    i = 1
    while xs[i] < x:
        i += 1
    a = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[i - 1] + a * (ys[i] - ys[i - 1])


class ThrustMap:
    """Two outboards' thrust from their commands: lag state per side plus the static curve."""

    def __init__(self, settings=None, owner="thrust map"):
        cfg = checked(DEFAULTS, SETTING_RANGES, settings, owner)
        pts = cfg["command_points"]
        if len(cfg["forward_n"]) != len(pts) or len(cfg["reverse_n"]) != len(pts):
            raise ConfigError("%s settings forward_n and reverse_n must have as many entries as command_points (%d)"
                              % (owner, len(pts)))
        if pts[len(pts) - 1] != 1:
            raise ConfigError("%s setting command_points must end at 1 (full throttle), got %r" % (owner, pts))
        self.cfg = cfg
        self.lag_tau_s = cfg["lag_tau_s"]
        self.command_points = [float(v) for v in pts]
        self.forward_n = [float(v) for v in cfg["forward_n"]]
        self.reverse_n = [float(v) for v in cfg["reverse_n"]]
        self.shaft = [0.0, 0.0]          # normalised shaft speed (left, right) after the lag

    def reset(self, shaft_left=0.0, shaft_right=0.0):
        self.shaft = [float(shaft_left), float(shaft_right)]

    def static(self, command):
        """Steady-state thrust (N) of a command in [-1, 1] (clamped): the static curve."""
        c = _clamped_command(command)
        if c >= 0.0:
            return _interp(c, self.command_points, self.forward_n)
        return -_interp(-c, self.command_points, self.reverse_n)

    def inverse(self, thrust_n):
        """Command in [-1, 1] whose steady-state thrust is ``thrust_n`` (N); +-1 beyond the curve's ends, 0 for
        NaN (``_interp`` would pass a NaN through)."""
        if not thrust_n == thrust_n:
            return 0.0
        if thrust_n >= 0.0:
            return _interp(thrust_n, self.forward_n, self.command_points)
        return -_interp(-thrust_n, self.reverse_n, self.command_points)

    def lag_factor(self, dt_s):
        """1 - exp(-dt / tau): the fraction of the command step the shaft takes in ``dt_s``."""
        if self.lag_tau_s <= 0.0:
            return 1.0
        return 1.0 - math.exp(-dt_s / self.lag_tau_s)

    def step(self, command_left, command_right, dt_s):
        """Advance both lags by ``dt_s`` seconds with the commands held (clamped to [-1, 1]; both 0 when either
        is not finite); returns the thrusts (T_l, T_r) in N at the end of the step (the m_l, m_r of robotx
        eqs. 2 and 5). A ``dt_s`` that is negative or not finite raises :class:`ThrustMapInputError` with the
        shaft speeds unchanged (a NaN would stick in them and give no thrust from then on)."""
        if not (dt_s - dt_s == 0 and dt_s >= 0):
            raise ThrustMapInputError("thrust map: step length must be a finite number >= 0 s, got %r" % (dt_s,))
        a = self.lag_factor(dt_s)
        if not (command_left - command_left == 0 and command_right - command_right == 0):
            cl = cr = 0.0                # the outboards stop both motors for a non-finite command
        else:
            cl = _clamped_command(command_left)
            cr = _clamped_command(command_right)
        self.shaft[0] += (cl - self.shaft[0]) * a
        self.shaft[1] += (cr - self.shaft[1]) * a
        return (self.static(self.shaft[0]), self.static(self.shaft[1]))
