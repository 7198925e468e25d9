"""PID controller with time passed in, output limits and anti-windup (pure Python)."""


class PidInputError(ValueError):
    """A PID error that is not a finite number, or time going backwards; the controller was not changed."""


def is_finite_number(v):
    """True for a number that is neither NaN nor infinite (``v - v`` is NaN for those)."""
    try:
        return v - v == 0
    except TypeError:
        return False


class Pid:
    """u = kp*e + ki*integral(e) + kd*de/dt, clamped to [-output_limit, output_limit].

    The integral is frozen while the output saturates in the direction of the error
    (conditional integration anti-windup). ``update(error, now_us)``; the first call
    has no derivative term. A non-finite error or a ``now_us`` before the previous call's raises
    :class:`PidInputError` and changes nothing (one NaN would otherwise stay in the integral for good).
    """

    def __init__(self, kp, ki=0.0, kd=0.0, output_limit=None, integral_limit=None):
        self.kp = kp
        self.ki = ki
        self.kd = kd
        self.output_limit = output_limit
        self.integral_limit = integral_limit
        self.reset()

    def reset(self):
        self.integral = 0.0
        self._last_error = None
        self._last_us = None

    def check(self, error, now_us):
        """Raise :class:`PidInputError` when :meth:`update` would refuse ``error`` at ``now_us`` (a non-finite
        error, time before the previous update's); changes nothing."""
        if not is_finite_number(error):
            raise PidInputError("PID error must be a finite number, got %r" % (error,))
        if self._last_us is not None and now_us < self._last_us:
            raise PidInputError("PID time went backwards: %d < %d us" % (now_us, self._last_us))

    def update(self, error, now_us):
        self.check(error, now_us)
        dt = 0.0 if self._last_us is None else (now_us - self._last_us) * 1e-6
        deriv = 0.0
        if self._last_error is not None and dt > 0.0:
            deriv = (error - self._last_error) / dt
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
