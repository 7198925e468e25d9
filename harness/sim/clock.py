"""Deterministic simulated time: the world and the runtime advance in lockstep.

``SimClock`` is a discrete-event clock with the same ``now_us()`` /
``sleep_until_us()`` interface as the board clock, so the runtime's scheduler runs
on it unchanged. Sleeping does not wait: it fires every simulated process due
up to the deadline (sensor samples, physics steps, radio events), in time order,
then returns. Events at the same time fire by ``priority`` (lower first), then
in the order they were scheduled, so runs are reproducible.
"""
import heapq

from onboard.core.units import hz_to_period_us

# Same-time ordering: physics first, then sensors sample it, then everything else.
PRIORITY_PHYSICS = 0
PRIORITY_SENSOR = 10
PRIORITY_DEFAULT = 20


class SimClockError(RuntimeError, ValueError):
    """A time or period the clock cannot take: in the past, not positive, NaN or infinite (a ValueError, as
    all bad input; a RuntimeError for the callers that catch it as one)."""


def _time_us(time_us, what="time"):
    """``time_us`` as an integer number of microseconds; SimClockError for NaN or an infinity."""
    try:
        return int(time_us)
    except (ValueError, OverflowError):
        raise SimClockError("%s %r us is not a finite number of microseconds" % (what, time_us)) from None


class SimClock:
    def __init__(self, start_us=0):
        self._now_us = _time_us(start_us, "start")
        self._queue = []
        self._seq = 0
        self.events_fired = 0

    def now_us(self):
        return self._now_us

    def call_at(self, time_us, fn, priority=PRIORITY_DEFAULT):
        """Run ``fn(now_us)`` once at ``time_us`` (not before now)."""
        try:
            time_us = int(time_us)
        except (ValueError, OverflowError):
            time_us = _time_us(time_us)     # raises its SimClockError
        if time_us < self._now_us:
            raise SimClockError("cannot schedule at %d us, already at %d us" % (time_us, self._now_us))
        heapq.heappush(self._queue, (time_us, priority, self._seq, fn))
        self._seq += 1

    def reserve(self, time_us, priority=PRIORITY_DEFAULT):
        """The place ``call_at(time_us, fn, priority)`` would give an event now, without scheduling it:
        a key for :meth:`call_reserved`. Lets a caller whose deadline keeps moving (a radio's timer
        re-armed on every frame) keep one event in the queue instead of one per move, while the event
        that finally fires still fires exactly where call_at would have put it."""
        time_us = _time_us(time_us)
        if time_us < self._now_us:
            raise SimClockError("cannot schedule at %d us, already at %d us" % (time_us, self._now_us))
        key = (time_us, priority, self._seq)
        self._seq += 1
        return key

    def call_reserved(self, key, fn):
        """Run ``fn(now_us)`` once at a key from :meth:`reserve` (its time not passed yet)."""
        if key[0] < self._now_us:
            raise SimClockError("cannot schedule at %d us, already at %d us" % (key[0], self._now_us))
        heapq.heappush(self._queue, (key[0], key[1], key[2], fn))

    def call_every(self, period_us, fn, start_us=None, priority=PRIORITY_DEFAULT):
        """Run ``fn(now_us)`` every ``period_us`` from ``start_us`` (default: now)."""
        period_us = _time_us(period_us, "period")
        if period_us <= 0:
            raise SimClockError("period must be positive, got %d us" % period_us)
        first = self._now_us if start_us is None else _time_us(start_us)

        def periodic(now_us):
            fn(now_us)
            self.call_at(now_us + period_us, periodic, priority)

        self.call_at(first, periodic, priority)

    def every_hz(self, rate_hz, fn, priority=PRIORITY_DEFAULT, start_us=None):
        """Run ``fn(now_us)`` at ``rate_hz`` (Hz, a rate whose period is a whole number of microseconds,
        else ValueError) from ``start_us`` (default: now); returns the period (us)."""
        period_us = hz_to_period_us(rate_hz)
        self.call_every(period_us, fn, start_us=start_us, priority=priority)
        return period_us

    def advance_to(self, time_us):
        """Fire every event due at or before ``time_us``, then set the time to ``time_us``."""
        try:
            time_us = int(time_us)
        except (ValueError, OverflowError):
            time_us = _time_us(time_us)     # raises its SimClockError
        if time_us < self._now_us:
            raise SimClockError("time cannot go back from %d to %d us" % (self._now_us, time_us))
        q = self._queue
        while q and q[0][0] <= time_us:
            t, _prio, _seq, fn = heapq.heappop(q)
            self._now_us = t
            fn(t)
            self.events_fired += 1
        self._now_us = time_us

    def advance(self, dt_us):
        self.advance_to(self._now_us + _time_us(dt_us, "step"))

    def sleep_until_us(self, deadline_us):
        """Board-clock interface: simulated time jumps to the deadline (never backwards),
        firing every event due up to and including it."""
        self.advance_to(max(deadline_us, self._now_us))
