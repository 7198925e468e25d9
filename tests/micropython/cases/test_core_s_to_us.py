"""onboard.core.units.s_to_us and is_whole_us: a NaN or infinite time (or one whose microseconds overflow a float) is a ValueError
on CPython and MicroPython, like the other bad inputs of onboard.core.units (inf raised OverflowError, NaN a
ValueError or whatever the interpreter's round gave); finite times keep their microseconds."""
from onboard.core.units import is_whole_us, s_to_us


def test_finite_times_round_to_the_nearest_microsecond():
    assert s_to_us(0) == 0
    assert s_to_us(1) == 1000000
    assert s_to_us(1.5) == 1500000
    assert s_to_us(-2.0) == -2000000
    assert s_to_us(0.0000014) == 1
    assert s_to_us(0.0000016) == 2
    assert s_to_us(120.0) == 120000000
    assert s_to_us(1e12) == 1000000000000000000
    assert s_to_us(10 ** 30) == 10 ** 36            # an integer time stays exact


def test_a_nan_or_infinite_time_is_a_value_error():
    for t in (float("inf"), float("-inf"), float("nan"), 1e303, -1e303):
        try:
            us = s_to_us(t)
        except ValueError as exc:
            assert "finite" in str(exc), str(exc)
            continue
        raise AssertionError("time %r s gave %r us" % (t, us))


def golden_s_to_us():
    return [s_to_us(t) for t in (0.0, 0.25, 1.0000005, -3.2, 86400.0)]


def test_whole_microseconds_are_told_from_fractions_within_float_rounding():
    for t in (0.01, 0.001, 0.0123, 1.0, 3, 1e-6):       # 0.01 s is 10000.000000000002 us: whole
        assert is_whole_us(t), t
    for t in (0.0100005, 1.5e-6, 1.0 / 300.0):
        assert not is_whole_us(t), t
