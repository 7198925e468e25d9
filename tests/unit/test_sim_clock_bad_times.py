"""SimClock: a NaN or infinite time is a clear SimClockError, and SimClockError is a ValueError (bad input)."""
import math

import pytest

from harness.sim.clock import SimClock, SimClockError


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_non_finite_times_raise_a_clock_error_and_change_nothing(bad):
    clock = SimClock(start_us=500)
    fired = []
    clock.call_at(1000, fired.append)
    for call in (lambda: clock.call_at(bad, fired.append), lambda: clock.reserve(bad),
                 lambda: clock.call_every(bad, fired.append), lambda: clock.call_every(10, fired.append, start_us=bad),
                 lambda: clock.advance_to(bad), lambda: clock.advance(bad)):
        with pytest.raises(SimClockError, match="not a finite number of microseconds"):
            call()
    if bad > 0 or bad != bad:
        with pytest.raises(SimClockError, match="not a finite number of microseconds"):
            clock.sleep_until_us(bad)
    else:
        clock.sleep_until_us(bad)                # a deadline in the past: time does not move
    with pytest.raises(SimClockError):
        SimClock(start_us=bad)
    assert clock.now_us() == 500
    clock.advance_to(2000)
    assert fired == [1000]


def test_clock_errors_are_value_errors():
    clock = SimClock(start_us=10)
    with pytest.raises(ValueError):
        clock.call_at(5, lambda t: None)
    with pytest.raises(ValueError):
        clock.call_every(0, lambda t: None)
    with pytest.raises(RuntimeError):            # callers that catch it as a RuntimeError still do
        clock.advance_to(0)
