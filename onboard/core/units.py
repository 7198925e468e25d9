"""Unit conversions done once at driver boundaries (everything inside is SI)."""
import math

G_MPS2 = 9.80665          # standard gravity, m/s^2 (NED: gravity is +z, i.e. down)
US_PER_S = 1000000


_INF = float("inf")


def s_to_us(t_s):
    """Seconds -> integer microseconds (rounded to nearest); ValueError for a NaN or infinite time (also one
    so large that its microseconds overflow a float), text or a boolean."""
    if isinstance(t_s, (str, bytes, bool)):
        # text times US_PER_S is the text repeated a million times; True would be 1 s
        raise ValueError("time %r s is not a number of seconds" % (t_s,))
    t_us = t_s * US_PER_S
    if not isinstance(t_us, int) and not -_INF < t_us < _INF:
        raise ValueError("time %r s is not a finite number of seconds" % (t_s,))
    return int(round(t_us))


def is_whole_us(t_s):
    """Whether ``t_s`` (s, finite) is a whole number of microseconds, to within 1e-6 us (float seconds are not
    exact: 0.01 s is 10000.000000000002 us)."""
    t_us = t_s * US_PER_S
    return abs(t_us - round(t_us)) <= 1e-6


def us_to_s(t_us):
    return t_us / 1e6


def hz_to_period_us(rate_hz):
    """Period in whole microseconds of a rate in Hz; the rate must divide 1 s exactly (ValueError otherwise:
    also for a rate below 1 Hz, zero, negative, NaN, a boolean or no number)."""
    try:
        in_range = not isinstance(rate_hz, bool) and 1 <= rate_hz <= US_PER_S
    except TypeError:
        in_range = False
    if not in_range:
        raise ValueError("rate %r Hz must be a number of Hz in 1..1000000 dividing 1 s" % (rate_hz,))
    period = US_PER_S // int(rate_hz)
    if period * rate_hz != US_PER_S:
        raise ValueError("rate %r Hz has no whole-microsecond period" % (rate_hz,))
    return period


def rpm_to_radps(rpm):
    return rpm * (2.0 * math.pi / 60.0)


def radps_to_rpm(radps):
    return radps * (60.0 / (2.0 * math.pi))
