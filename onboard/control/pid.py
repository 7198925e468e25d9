"""PID controller with time passed in, output limits and anti-windup (pure Python)."""


class PidInputError(ValueError):
    """A PID error that is not a finite number, or time going backwards; the controller was not changed."""


_PI = 3.141592653589793
_TWO_PI = 2.0 * _PI
# the largest finite float: an int beyond it has no float (``float()`` raises OverflowError on CPython)
_FLOAT_MAX = 1.7976931348623157e308


def is_finite_number(v):
    """True for a number that is neither NaN nor infinite (``v - v`` is NaN for those) nor an int too large
    for a float."""
    try:
        return v - v == 0 and -_FLOAT_MAX <= v <= _FLOAT_MAX
    except TypeError:
        return False


class Pid:
    """u = kp*e + ki*integral(e) + kd*de/dt, clamped to [-output_limit, output_limit].

    The integral is frozen while the output saturates in the direction of the error
    (conditional integration anti-windup). ``update(error, now_us)``; the first call
    has no derivative term. A non-finite error or ``now_us``, or a ``now_us`` before the previous call's raises
    :class:`PidInputError` and changes nothing (one NaN would otherwise stay in the integral for good).

    ``angle_error``: the error is an angle wrapped to [-pi, pi) (rad): the derivative takes the short way
    between two errors, so an error crossing +-pi (-3.14 after 3.14 rad) changes by about 0, not by 2 pi.
    """

    def __init__(self, kp, ki=0.0, kd=0.0, output_limit=None, integral_limit=None, angle_error=False):
        self.kp = kp
        self.ki = ki
        self.kd = kd
        self.output_limit = output_limit
        self.integral_limit = integral_limit
        self.angle_error = angle_error
        self.reset()

    def reset(self):
        self.integral = 0.0
        self._last_error = None
        self._last_us = None

    def check(self, error, now_us):
        """Raise :class:`PidInputError` when :meth:`update` would refuse ``error`` at ``now_us`` (a non-finite
        error, a ``now_us`` that is not a finite number of us, time before the previous update's); changes
        nothing."""
        if not is_finite_number(error):
            raise PidInputError("PID error must be a finite number, got %r" % (error,))
        if not is_finite_number(now_us) or isinstance(now_us, bool):
            raise PidInputError("PID time must be a finite number of us, got %r" % (now_us,))
        if self._last_us is not None and now_us < self._last_us:
            raise PidInputError("PID time went backwards: %d < %d us" % (now_us, self._last_us))

    def update(self, error, now_us):
        self.check(error, now_us)
        dt = 0.0 if self._last_us is None else (now_us - self._last_us) * 1e-6
        deriv = 0.0
        if self._last_error is not None and dt > 0.0:
            change = error - self._last_error
            if self.angle_error:
                if change > _PI:
                    change -= _TWO_PI
                elif change < -_PI:
                    change += _TWO_PI
            deriv = change / dt
        candidate = self.integral + error * dt
        if self.integral_limit is not None:
            candidate = max(-self.integral_limit, min(self.integral_limit, candidate))
        u = self.kp * error + self.ki * candidate + self.kd * deriv
        lim = self.output_limit
        if lim is not None and (u > lim or u < -lim):
            u = lim if u > lim else -lim
            # saturated: keep the integral unless the error would unwind it
            if (u > 0) != (error > 0):
                self.integral = candidate
        else:
            self.integral = candidate
        self._last_error = error
        self._last_us = now_us
        return u
