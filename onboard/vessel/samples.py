"""Sample types of a surface vessel (pure): what drivers and simulated sensors hand the boat EKF.

Same shape as ``onboard.core.samples``: ``time_us`` (integer microseconds of the runtime's clock; a time
that is not a whole number, e.g. 10.7, an infinity, text or a bool, raises ``SampleError`` as the core samples
do), SI quantities with unit and frame in the field name, ``FIELDS`` in order, ``is_finite()``. A variance
field is None when the source does not report one (the estimator then uses its default).
"""
from onboard.core.samples import SampleError, _int, _Sample, _num, _vec


def _var(name, value):
    return None if value is None else _num(name, value)


def _finite(x):
    """True for a finite float (x - x is NaN for NaN and infinities)."""
    return x - x == 0.0


def _finite_or_none(x):
    return x is None or x - x == 0.0


class ThrustSample(_Sample):
    """Thrust of the two outboards (N, + pushes the boat forward), held over the interval that ends
    at ``time_us``: the input of the vessel model (robotx eqs. 2 and 5, m_l and m_r)."""
    FIELDS = ("time_us", "thrust_left_n", "thrust_right_n")

    def __init__(self, time_us, thrust_left_n, thrust_right_n):
        self.time_us = _int("time_us", time_us)
        self.thrust_left_n = _num("thrust_left_n", thrust_left_n)
        self.thrust_right_n = _num("thrust_right_n", thrust_right_n)

    def is_finite(self):
        """True when no float field is NaN or infinite (the shared ``is_finite``, field by field)."""
        return _finite(self.thrust_left_n) and _finite(self.thrust_right_n)


class PositionSample(_Sample):
    """A GNSS fix in the local NED frame: ``pos_ne_m`` = (north_m, east_m) of the antenna (taken at
    the reference point of the model), ``var_m2`` the variance per axis (m^2) or None."""
    FIELDS = ("time_us", "pos_ne_m", "var_m2")

    def __init__(self, time_us, pos_ne_m, var_m2=None):
        self.time_us = _int("time_us", time_us)
        self.pos_ne_m = _vec("pos_ne_m", pos_ne_m, 2)
        self.var_m2 = _var("var_m2", var_m2)

    def is_finite(self):
        return _finite(self.pos_ne_m[0]) and _finite(self.pos_ne_m[1]) and _finite_or_none(self.var_m2)


class HeadingSample(_Sample):
    """Heading (yaw of FRD in NED, from north towards east, rad) from a magnetometer or an INS;
    ``var_rad2`` its variance or None."""
    FIELDS = ("time_us", "yaw_rad", "var_rad2")

    def __init__(self, time_us, yaw_rad, var_rad2=None):
        self.time_us = _int("time_us", time_us)
        self.yaw_rad = _num("yaw_rad", yaw_rad)
        self.var_rad2 = _var("var_rad2", var_rad2)

    def is_finite(self):
        return _finite(self.yaw_rad) and _finite_or_none(self.var_rad2)


class YawRateSample(_Sample):
    """Yaw rate about body down (rad/s, + turns right) from a gyro; ``var_rad2ps2`` its variance
    ((rad/s)^2) or None."""
    FIELDS = ("time_us", "yaw_rate_radps", "var_rad2ps2")

    def __init__(self, time_us, yaw_rate_radps, var_rad2ps2=None):
        self.time_us = _int("time_us", time_us)
        self.yaw_rate_radps = _num("yaw_rate_radps", yaw_rate_radps)
        self.var_rad2ps2 = _var("var_rad2ps2", var_rad2ps2)

    def is_finite(self):
        return _finite(self.yaw_rate_radps) and _finite_or_none(self.var_rad2ps2)


__all__ = ("SampleError", "ThrustSample", "PositionSample", "HeadingSample", "YawRateSample")
