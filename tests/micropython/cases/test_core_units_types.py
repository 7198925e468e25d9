"""onboard.core.units: a time in seconds or a rate given as text, bytes or a boolean is a ValueError on CPython and
MicroPython. Before: s_to_us("2") built the text repeated a million times and then raised TypeError, s_to_us(True)
was 1000000 us, and hz_to_period_us("100") raised TypeError (not a ValueError)."""
from onboard.core.units import hz_to_period_us, s_to_us


def _value_error(call, arg):
    try:
        out = call(arg)
    except ValueError:
        return
    raise AssertionError("%r gave %r" % (arg, out))


def test_text_bytes_and_booleans_are_no_time():
    for t in ("2", "0.5", b"1", True, False):
        _value_error(s_to_us, t)
    assert s_to_us(2) == 2000000 and s_to_us(0.5) == 500000


def test_text_or_none_is_no_rate():
    for rate in ("100", b"100", None, [100]):
        _value_error(hz_to_period_us, rate)
    assert hz_to_period_us(100) == 10000 and hz_to_period_us(250.0) == 4000
