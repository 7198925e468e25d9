"""Rate-group scheduler driven by a clock object; time is passed to every step.

The scheduler ticks at a base rate (the fastest group). Each group runs every
``base_rate_hz / rate_hz`` ticks; the ratio must be a whole number, checked at
construction. ``run(clock, until_us)`` sleeps on the clock until each tick and
calls ``step(now_us)``; on hardware that clock is the board's monotonic clock,
in tests the harness's simulated clock. Late ticks are counted as overruns and
the ticks they cover are skipped (never run twice to catch up), so achieved
rates can be compared with declared ones in ``report()``.
"""
from onboard.core.units import hz_to_period_us


class SchedulerConfigError(ValueError):
    pass


def _group_rates_ok(*rates_hz):
    for r in rates_hz:
        if not (isinstance(r, int) and not isinstance(r, bool) and r > 0):
            return False
    base = max(rates_hz)
    if 1000000 % base:
        return False
    for r in rates_hz:
        if base % r:
            return False
    return True


# A settings rule (onboard.core.settings) relating the rates (Hz) of one scheduler's groups: what the
# Scheduler checks at construction, checked with the other settings before anything starts.
GROUP_RATES = ("rates one scheduler can run: each divides the fastest, whose period is a whole number of "
               "microseconds", _group_rates_ok)


class RateGroup:
    """A callback ``fn(now_us)`` run at ``rate_hz``; keeps its own statistics."""

    def __init__(self, name, rate_hz, fn):
        self.name = name
        self.rate_hz = rate_hz
        self.fn = fn
        self.divisor = 1
        self.runs = 0
        self.first_run_us = None
        self.last_run_us = None
        self.max_exec_us = 0
        self.total_exec_us = 0

    def achieved_hz(self):
        if self.runs < 2 or self.last_run_us == self.first_run_us:
            return 0.0
        return (self.runs - 1) * 1e6 / (self.last_run_us - self.first_run_us)


class Scheduler:
    """Runs rate groups at whole-number fractions of a base rate.

    groups: list of ``(name, rate_hz, fn)``; the base rate is the highest rate.
    watchdog: optional :class:`onboard.runtime.watchdog.Watchdog`, checked every tick
    after the first ``io_groups`` groups (the input drivers polled this tick) and before
    the rest, so a stale input engages the failsafe before control runs.
    """

    def __init__(self, groups, watchdog=None, io_groups=0):
        if not groups:
            raise SchedulerConfigError("scheduler needs at least one rate group")
        self.groups = []
        names = set()
        for name, rate_hz, fn in groups:
            if name in names:
                raise SchedulerConfigError("rate group %r declared twice" % (name,))
            names.add(name)
            if not (isinstance(rate_hz, int) and not isinstance(rate_hz, bool) and rate_hz > 0):
                raise SchedulerConfigError("rate of group %r must be a positive whole number of Hz, got %r"
                                           % (name, rate_hz))
            self.groups.append(RateGroup(name, rate_hz, fn))
        self.base_rate_hz = max(g.rate_hz for g in self.groups)
        for g in self.groups:
            if self.base_rate_hz % g.rate_hz != 0:
                raise SchedulerConfigError(
                    "rate group %r at %d Hz is not a whole-number fraction of the base rate %d Hz"
                    % (g.name, g.rate_hz, self.base_rate_hz))
            g.divisor = self.base_rate_hz // g.rate_hz
        try:
            self.period_us = hz_to_period_us(self.base_rate_hz)
        except ValueError as exc:
            raise SchedulerConfigError(str(exc))
        self.watchdog = watchdog
        if not (0 <= io_groups <= len(self.groups)):
            raise SchedulerConfigError("io_groups must be between 0 and %d, got %r" % (len(self.groups), io_groups))
        self.io_groups = io_groups
        self.tick_hook = None         # optional fn(now_us, tick_index), called after the io groups (recording)
        self.tick_index = 0
        self.ticks_run = 0
        self.overruns = 0
        self.skipped_ticks = 0
        self.start_us = None

    def step(self, now_us, clock=None):
        """Run the groups due at the current tick; returns the next deadline (us).

        Every group gets the tick's time ``now_us`` (the time passed in, whatever the groups
        before it took). The first ``io_groups`` groups (input drivers) run, then the tick is
        reported to ``tick_hook`` and the watchdog is checked, then the other groups. With
        ``clock`` given, each group's execution time is measured on it (on the simulated clock a
        group that "takes time" advances it).
        """
        if self.start_us is None:
            self.start_us = now_us
        t_start = now_us
        groups = self.groups
        for index in range(len(groups) + 1):
            if index == self.io_groups:
                self._checkpoint(now_us)
            if index == len(groups):
                break
            g = groups[index]
            if self.tick_index % g.divisor == 0:
                g.fn(now_us)
                g.runs += 1
                if g.first_run_us is None:
                    g.first_run_us = now_us
                g.last_run_us = now_us
                if clock is not None:
                    t_end = clock.now_us()
                    exec_us = t_end - t_start
                    g.total_exec_us += exec_us
                    if exec_us > g.max_exec_us:
                        g.max_exec_us = exec_us
                    t_start = t_end
        self.ticks_run += 1
        self.tick_index += 1
        return self.start_us + self.tick_index * self.period_us

    def _checkpoint(self, now_us):
        """Between the io groups and the rest: the tick hook (recording), then the watchdog."""
        if self.tick_hook is not None:
            self.tick_hook(now_us, self.tick_index)
        if self.watchdog is not None:
            self.watchdog.check(now_us)

    def run(self, clock, until_us):
        """Run ticks on ``clock`` until (excluding) ``until_us``; returns the number of ticks run."""
        if self.start_us is None:
            self.start_us = clock.now_us()
        ran = 0
        while True:
            deadline = self.start_us + self.tick_index * self.period_us
            if deadline >= until_us:
                return ran
            clock.sleep_until_us(deadline)
            now = clock.now_us()
            late_ticks = (now - deadline) // self.period_us
            if late_ticks > 0:
                # the previous tick overran into later ones: skip them, never double-run
                self.overruns += 1
                self.skipped_ticks += late_ticks
                self.tick_index += late_ticks
            self.step(now, clock)
            ran += 1

    def report(self):
        """Declared vs achieved rates, run counts, overruns, execution times (us)."""
        groups = {}
        for g in self.groups:
            groups[g.name] = {
                "declared_hz": g.rate_hz,
                "achieved_hz": g.achieved_hz(),
                "runs": g.runs,
                "max_exec_us": g.max_exec_us,
                "mean_exec_us": (g.total_exec_us / g.runs) if g.runs else 0.0,
            }
        out = {"base_rate_hz": self.base_rate_hz, "ticks_run": self.ticks_run,
               "overruns": self.overruns, "skipped_ticks": self.skipped_ticks, "groups": groups}
        if self.watchdog is not None:
            out["watchdog"] = self.watchdog.report()
        return out
