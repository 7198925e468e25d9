"""Manipulator-free hill-sensing leveling (Cook thesis 7.1.1, Alg. 6 and the spin-at-peak variant; pure,
MicroPython).

A robot without a blade seeks peaks and drives over them so its tracks dislodge material, which the
slopes carry down into the valleys. Each control step takes the robot's pitch (rad, Z-Y-X Euler pitch of
R_body_to_ned: positive nose up, so positive while driving uphill) and the time, and returns the twist it
intends (:class:`onboard.core.samples.TwistCmd`: forward speed m/s, yaw rate rad/s, positive turning
right).

- ``variant = "alg6"`` (Alg. 6): pitch > epsilon: "charge" straight up the slope at ``climb_speed_mps``;
  otherwise a random walk;
- ``variant = "spin"`` (the variant proposed after Alg. 6): keep straight after an incline until a decline
  is detected (pitch < -epsilon: the robot has passed a crest), then spin in place for ``spin_s`` to
  dislodge more material, then resume the random walk. A crest that never turns into a decline (a
  plateau) returns to the random walk after ``crest_timeout_s``.

The thesis's random walk sets "rand()" linear and angular velocities; here each random command is a
speed uniform in ``wander_speed_mps`` and a yaw rate uniform in +-``wander_yaw_rate_radps``, held for
``wander_hold_s`` (0: a new one every step, Alg. 6 as written) and redrawn on leaving a climb. Draws:
two per new random command (speed, then yaw rate), none otherwise. A pitch that is not a finite number,
or a ``now_us`` before the previous step's (time going backwards), is counted in ``bad_inputs`` and answered
with a stop, the state kept; a ``now_us`` that is not a whole number of microseconds raises
:class:`onboard.core.samples.SampleError` (a ValueError), the state kept.
"""
from onboard.core.samples import TwistCmd, _int
from onboard.core.settings import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, is_number, one_of, pair,
                                   within)

WANDER = 0
CLIMB = 1
CREST = 2
SPIN = 3
MODE_NAMES = ("wander", "climb", "crest", "spin")
VARIANTS = ("alg6", "spin")

DEFAULTS = {
    "variant": "alg6",                 # alg6 (Alg. 6) | spin (spin at the peak)
    "pitch_threshold_rad": 0.0873,     # epsilon (5 deg; the thesis gives no value)
    "climb_speed_mps": 0.25,           # v_climb (the Dagu Rover 5's top speed)
    "wander_speed_mps": [0.05, 0.15],  # random-walk speed range
    "wander_yaw_rate_radps": 1.0,      # random-walk yaw rates within +- this
    "wander_hold_s": 1.0,              # a random-walk command is held this long (0: redrawn every step)
    "spin_yaw_rate_radps": 2.0,        # spin in place at this yaw rate (sign: direction)
    "spin_s": 3.0,                     # spin duration at a crest
    "crest_timeout_s": 2.0,            # spin variant: straight on after an incline at most this long
}
SETTING_RANGES = {
    "variant": one_of(*VARIANTS),
    "pitch_threshold_rad": within(0.0, 1.5),
    "climb_speed_mps": POSITIVE,
    "wander_speed_mps": pair(NON_NEGATIVE, ordered=True),
    "wander_yaw_rate_radps": NON_NEGATIVE,
    "wander_hold_s": NON_NEGATIVE,
    "spin_yaw_rate_radps": ANY_NUMBER,
    "spin_s": NON_NEGATIVE,
    "crest_timeout_s": NON_NEGATIVE,
}


def _us(seconds):
    return int(seconds * 1000000 + 0.5)


class HillSensing:
    """Alg. 6 (or its spin-at-peak variant) as a state machine; ``mode`` is WANDER, CLIMB, CREST or SPIN."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "HillSensing")
        self.cfg = cfg
        self.spin_variant = cfg["variant"] == "spin"
        self.eps = float(cfg["pitch_threshold_rad"])
        self.climb_speed = float(cfg["climb_speed_mps"])
        self.speed_lo = float(cfg["wander_speed_mps"][0])
        self.speed_hi = float(cfg["wander_speed_mps"][1])
        self.wander_rate = float(cfg["wander_yaw_rate_radps"])
        self.hold_us = _us(cfg["wander_hold_s"])
        self.spin_rate = float(cfg["spin_yaw_rate_radps"])
        self.spin_us = _us(cfg["spin_s"])
        self.crest_us = _us(cfg["crest_timeout_s"])
        self.mode = WANDER
        self._since_us = None         # when the current mode (or random command) started
        self._last_us = None          # now_us of the last step taken (us)
        self._speed = 0.0
        self._rate = 0.0
        self.steps = 0
        self.climbs = 0
        self.spins = 0
        self.draws = 0
        self.bad_inputs = 0

    @property
    def mode_name(self):
        return MODE_NAMES[self.mode]

    def step(self, pitch_rad, now_us, rand):
        """The twist intended for this control step (``now_us``: int, us)."""
        now_us = _int("HillSensing.step: now_us (us)", now_us)
        if not is_number(pitch_rad) or (self._last_us is not None and now_us < self._last_us):
            self.bad_inputs += 1
            return TwistCmd(now_us, 0.0, 0.0)
        self._last_us = now_us
        self.steps += 1
        eps = self.eps
        mode = self.mode
        if mode == SPIN:
            if now_us - self._since_us < self.spin_us:
                return TwistCmd(now_us, 0.0, self.spin_rate)
            mode = WANDER
            self._since_us = None
        if pitch_rad > eps:
            if mode != CLIMB:
                self.climbs += 1
            self.mode = CLIMB
            return TwistCmd(now_us, self.climb_speed, 0.0)
        if self.spin_variant and (mode == CLIMB or mode == CREST):
            if pitch_rad < -eps:
                self.mode = SPIN
                self.spins += 1
                self._since_us = now_us
                return TwistCmd(now_us, 0.0, self.spin_rate)
            if mode == CLIMB:
                self._since_us = now_us
            if now_us - self._since_us < self.crest_us:
                self.mode = CREST
                return TwistCmd(now_us, self.climb_speed, 0.0)
            mode = WANDER
            self._since_us = None
        if mode != WANDER:
            self._since_us = None
        self.mode = WANDER
        if self._since_us is None or now_us - self._since_us >= self.hold_us:
            u = rand.random()
            self._speed = self.speed_lo + (self.speed_hi - self.speed_lo) * u
            self._rate = (2.0 * rand.random() - 1.0) * self.wander_rate
            self._since_us = now_us
            self.draws += 1
        return TwistCmd(now_us, self._speed, self._rate)
