"""Input-stream watchdog: commands a safe stop when an input goes stale.

Each input has its own timeout. ``feed(name, now_us)`` marks fresh data (an input
is as fresh as the newest stamp it was fed: a sample arriving late with an older stamp
does not age it); ``check(now_us)`` returns the names that are stale now. The watchdog
counts every fresh->stale transition (``trips``) and drives a :class:`Failsafe`.
"""


class WatchdogConfigError(ValueError):
    pass


class WatchdogTimeError(ValueError):
    """A time (us) given to :meth:`Watchdog.feed` or :meth:`Watchdog.check` that is no finite number: NaN
    compares false with everything, so an input fed or checked with it would never go stale."""


def _finite_time(t_us, name=None):
    """WatchdogTimeError unless ``t_us`` is a finite number (the feed time of input ``name``, or a check time)."""
    try:
        ok = t_us - t_us == 0          # False for NaN and infinities, TypeError for None or text
    except TypeError:
        ok = False
    if not ok or isinstance(t_us, bool):
        what = "watchdog check time" if name is None else "watchdog feed time of %r" % (name,)
        raise WatchdogTimeError("%s must be a finite number of microseconds, got %r" % (what, t_us))


class Failsafe:
    """Safe-stop latch shared by the runtime's parts.

    When engaged, controllers must output a stop command (motors off). With
    ``latching=True`` it stays engaged until ``reset()``; otherwise it releases
    as soon as no reason remains.
    """

    def __init__(self, latching=False):
        self.latching = latching
        self.reasons = set()
        self._latched = False
        self.engage_count = 0
        self.last_engage_us = None

    @property
    def engaged(self):
        return self._latched or bool(self.reasons)

    def engage(self, reason, now_us):
        if not self.engaged:
            self.engage_count += 1
            self.last_engage_us = now_us
        self.reasons.add(reason)
        if self.latching:
            self._latched = True

    def clear(self, reason):
        self.reasons.discard(reason)

    def reset(self):
        """Operator reset of a latched failsafe: releases it when no reason remains and returns True; while a
        reason is present (an input still stale) the latch stays set, so the failsafe does not release by
        itself once that reason clears, and returns False."""
        if self.reasons:
            return False
        self._latched = False
        return True


class _Input:
    def __init__(self, name, timeout_us):
        self.name = name
        self.timeout_us = timeout_us
        self.last_feed_us = None
        self.stale = False
        self.trips = 0
        self.feeds = 0


class Watchdog:
    """Watches named input streams; stale inputs engage the failsafe with reason ``stale:<name>``."""

    def __init__(self, failsafe=None, start_us=0):
        self.failsafe = failsafe if failsafe is not None else Failsafe()
        self.start_us = start_us
        self._inputs = {}

    def add_input(self, name, timeout_us):
        """Watch input ``name``: stale when ``check`` finds it unfed for more than ``timeout_us`` (> 0)."""
        try:
            timeout_us = int(timeout_us)
        except (TypeError, ValueError, OverflowError):
            raise WatchdogConfigError("watchdog timeout for %r must be a whole number of us, got %r"
                                      % (name, timeout_us))
        if timeout_us <= 0:
            raise WatchdogConfigError("watchdog timeout for %r must be positive" % (name,))
        if name in self._inputs:
            raise WatchdogConfigError("watchdog input %r declared twice" % (name,))
        self._inputs[name] = _Input(name, timeout_us)

    def feed(self, name, now_us):
        """Fresh data on input ``name`` stamped ``now_us``; a stamp older than the newest one fed leaves the
        input as fresh as it was. WatchdogTimeError (nothing changed) for a stamp that is no finite number."""
        inp = self._inputs.get(name)
        if inp is None:
            raise WatchdogConfigError("unknown watchdog input %r" % (name,))
        _finite_time(now_us, name)
        if inp.last_feed_us is None or now_us > inp.last_feed_us:
            inp.last_feed_us = now_us
        inp.feeds += 1

    def check(self, now_us):
        """Update staleness at ``now_us``; returns the list of stale input names. WatchdogTimeError (nothing
        changed) for a time that is no finite number."""
        _finite_time(now_us)
        stale = []
        for name in self._inputs:
            inp = self._inputs[name]
            ref = inp.last_feed_us if inp.last_feed_us is not None else self.start_us
            if ref > now_us:
                # fed with a stamp ahead of this clock (the sender's clock jumped): counted as fed now, so
                # silence after it trips within the timeout instead of after the jump
                ref = inp.last_feed_us = now_us
            is_stale = now_us - ref > inp.timeout_us
            if is_stale:
                stale.append(name)
                if not inp.stale:
                    inp.trips += 1
                    self.failsafe.engage("stale:" + name, now_us)
            elif inp.stale:
                self.failsafe.clear("stale:" + name)
            inp.stale = is_stale
        return stale

    def report(self):
        out = {}
        for name in self._inputs:
            inp = self._inputs[name]
            out[name] = {"timeout_us": inp.timeout_us, "feeds": inp.feeds,
                         "trips": inp.trips, "stale": inp.stale}
        return out
