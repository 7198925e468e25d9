"""onboard.core.units.hz_to_period_us: a rate with no whole-microsecond period dividing 1 s is a ValueError on
CPython and MicroPython, never a negative period or a ZeroDivisionError."""
from onboard.core.units import hz_to_period_us


def test_rates_dividing_one_second_give_their_period():
    assert hz_to_period_us(1) == 1000000
    assert hz_to_period_us(200) == 5000
    assert hz_to_period_us(1000.0) == 1000
    assert hz_to_period_us(1000000) == 1


def test_a_zero_negative_fractional_or_boolean_rate_is_a_value_error():
    """-1000 Hz gave a period of -1000 us; 0 and 0.5 Hz raised ZeroDivisionError; True ran at 1 Hz."""
    for rate in (-1000, -1, 0, 0.0, 0.5, 1e-9, float("nan"), float("inf"), float("-inf"), 2000000, True, False,
                 3, 1000.5):
        try:
            period = hz_to_period_us(rate)
        except ValueError:
            continue
        raise AssertionError("rate %r Hz gave period %r us" % (rate, period))
