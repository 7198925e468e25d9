"""Clocks the scheduler runs against.

A clock has ``now_us()`` (integer microseconds, monotonic) and
``sleep_until_us(deadline_us)``. On hardware that is the board's monotonic clock;
in tests the harness's simulated clock (``harness.sim.clock.SimClock``), which steps
the simulated world instead of sleeping.
"""
import time


class MonotonicClock:
    """The host's/board's monotonic clock (CPython ``time.monotonic_ns`` or MicroPython ``time.ticks_us``)."""

    def __init__(self):
        if hasattr(time, "ticks_us"):
            # MicroPython: ticks wrap around; keep a 64-bit unwrapped counter.
            self._last_ticks = time.ticks_us()
            self._elapsed_us = 0
            self._micropython = True
        else:
            self._t0_ns = time.monotonic_ns()
            self._micropython = False

    def now_us(self):
        if self._micropython:
            t = time.ticks_us()
            self._elapsed_us += time.ticks_diff(t, self._last_ticks)
            self._last_ticks = t
            return self._elapsed_us
        return (time.monotonic_ns() - self._t0_ns) // 1000

    def sleep_until_us(self, deadline_us):
        remaining = deadline_us - self.now_us()
        if remaining > 0:
            if self._micropython:
                time.sleep_us(remaining)
            else:
                time.sleep(remaining / 1e6)
