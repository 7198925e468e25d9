"""One robot's onboard app: a Node owns one scheduler, one watchdog + failsafe, one log, named watched
inputs; parts attach to it (pure, runs on MicroPython).

An app is a *recipe*: a short list of parts added to a Node. A part is any object with
``attach(node)``, in which it declares

- its rate groups: ``node.every(name, rate_hz, fn)`` with ``fn(now_us)``; input drivers that
  poll hardware declare theirs with ``io=True``: io groups run first in each tick, then the
  watchdog is checked (so a sample read this tick counts as fresh), then the other groups in
  the order they were declared;
- the inputs it watches: ``node.watch(name, timeout_us)``; its entry points feed them with
  ``node.feed(name, time_us)``; a stale input engages the failsafe (reason ``stale:<name>``);
- its entry points: plain methods that drivers (real or simulated) call.

and optionally ``report()`` (its counters, merged into :meth:`Node.report` under the part's
name). Parts talk through plain attributes of each other or small queues, never through the
harness. The scheduler is built once, at the first ``step``/``run`` (or :meth:`start`): rate
ratios are checked then, and no group can be added afterwards.

``node.log(topic, time_us, msg)`` forwards to the log given (an MCAP writer on a host) or does
nothing without one.

Recording at the app's boundary (:meth:`Node.record`): parts wrap their entry points with
``node.entry(name, fn)`` and hand what leaves the app to ``node.output(name, time_us, msg)``.
Once a sink ``sink(topic, time_us, msg)`` is set, the node writes, in the order they happen:

- ``/app/config`` once: ``{"app": name, "config": ..., "code_version": ...}``, what rebuilds the app;
- ``/app/in/<name>``: every sample that enters an entry point, before the part sees it;
- ``/app/step``: ``{"time_us", "tick"}`` for every tick, written after its io groups ran (so what
  the drivers it polls read in that tick is recorded before it) and before the watchdog check and
  the other groups; ``tick`` is the scheduler's tick index, so ticks skipped after an overrun
  replay as they ran. Every group of a tick gets the tick's time;
- ``/app/out/<name>``: every command and estimate the parts output.

``harness replay`` feeds the inputs and steps back in that order to a rebuilt app and compares
its outputs with the recorded ones.

A sink that holds what it is given and writes it in batches (``McapLog``, ``RingLogSink``: a
``write_held()`` method) writes a batch when it is full, inside the tick that fills it; between
ticks, :meth:`Node.idle` has it write what it holds, so that the encoding and the writes fall in
the time the app waits for its next tick instead of in a tick. :meth:`Node.run` calls it before
each wait; an app stepped by hand calls it after its step (or never: the batches are then written
in the ticks).
"""
from onboard.runtime.scheduler import Scheduler, SchedulerConfigError
from onboard.runtime.watchdog import Failsafe, Watchdog


# topics of a recording at the app's boundary (see the module docstring)
CONFIG_TOPIC = "/app/config"
STEP_TOPIC = "/app/step"
IN_PREFIX = "/app/in/"
OUT_PREFIX = "/app/out/"


class NodeConfigError(ValueError):
    pass


class Node:
    """latching_failsafe: a tripped failsafe stays engaged until ``failsafe.reset()`` once its reasons cleared.
    start_us: time the watched inputs count from before their first sample.
    log: optional ``log(topic, time_us, msg)``."""

    def __init__(self, name="node", latching_failsafe=False, start_us=0, log=None):
        self.name = name
        self.failsafe = Failsafe(latching=latching_failsafe)
        self.watchdog = Watchdog(self.failsafe, start_us=start_us)
        self._log = log
        self._io_groups = []
        self._groups = []
        self.parts = []          # (name, part) in the order they were added
        self._part_names = set()
        self.scheduler = None
        self._recorder = None
        self._write_held = None  # the recording sink's write_held(), when it holds what it is given
        self.entries = {}        # entry-point name -> the wrapped entry point (node.entry)

    # ------------------------------------------------------------ building
    def add(self, name, part):
        """Attach ``part`` under ``name`` (its key in :meth:`report`); returns the part."""
        if self.scheduler is not None:
            raise NodeConfigError("part %r added after node %r started" % (name, self.name))
        if name in self._part_names:
            raise NodeConfigError("part %r added twice to node %r" % (name, self.name))
        self._part_names.add(name)
        self.parts.append((name, part))
        attach = getattr(part, "attach", None)
        if attach is not None:
            attach(self)
        return part

    def part(self, name):
        """The part added under ``name``."""
        for part_name, part in self.parts:
            if part_name == name:
                return part
        raise KeyError(name)

    def every(self, name, rate_hz, fn, io=False):
        """Run ``fn(now_us)`` at ``rate_hz`` (a whole-number fraction of the fastest group's rate)."""
        if self.scheduler is not None:
            raise NodeConfigError("rate group %r declared after node %r started" % (name, self.name))
        (self._io_groups if io else self._groups).append((name, rate_hz, fn))

    def watch(self, name, timeout_us):
        """Watch input ``name``: stale after ``timeout_us`` without a :meth:`feed`."""
        self.watchdog.add_input(name, timeout_us)

    def feed(self, name, time_us):
        self.watchdog.feed(name, time_us)

    def log(self, topic, time_us, msg):
        if self._log is not None:
            self._log(topic, time_us, msg)

    @property
    def logging(self):
        return self._log is not None

    # ------------------------------------------------------------ recording at the boundary
    def entry(self, name, fn):
        """``fn`` (an entry point taking one sample) wrapped so that, while recording, each sample is
        written on ``/app/in/<name>`` before ``fn`` sees it."""
        if name in self.entries:
            raise NodeConfigError("entry point %r declared twice on node %r" % (name, self.name))
        topic = IN_PREFIX + name

        def entry_point(sample):
            if self._recorder is not None:
                self._recorder(topic, sample.time_us, sample)
            return fn(sample)
        self.entries[name] = entry_point
        return entry_point

    def output(self, name, time_us, msg):
        """A command or estimate leaving the app: written on ``/app/out/<name>`` while recording."""
        if self._recorder is not None:
            self._recorder(OUT_PREFIX + name, time_us, msg)

    @property
    def recording(self):
        return self._recorder is not None

    def record(self, sink, app, config, code_version="", time_us=0):
        """Start recording into ``sink(topic, time_us, msg)``: ``/app/config`` now, then every input,
        tick and output. ``app`` and ``config`` name the recipe and what rebuilds it."""
        self._recorder = sink
        self._write_held = _batch_writer(sink)
        sink(CONFIG_TOPIC, time_us, {"app": app, "config": config, "code_version": code_version,
                                      "node": self.name})
        self.start().tick_hook = self._record_tick

    def _record_tick(self, now_us, tick_index):
        self._recorder(STEP_TOPIC, now_us, {"time_us": now_us, "tick": tick_index})

    def idle(self):
        """Between ticks: the recording sink writes what it holds (see the module docstring)."""
        write_held = self._write_held
        if write_held is not None:
            write_held()

    # ------------------------------------------------------------ running
    def start(self):
        """Build the scheduler (rate ratios checked here); idempotent."""
        if self.scheduler is None:
            groups = self._io_groups + self._groups
            if not groups:
                raise SchedulerConfigError("node %r has no rate group" % (self.name,))
            self.scheduler = Scheduler(groups, watchdog=self.watchdog, io_groups=len(self._io_groups))
        return self.scheduler

    def step(self, now_us, clock=None):
        """Run the groups due at this tick; returns the next deadline (us)."""
        if self.scheduler is None:
            self.start()
        return self.scheduler.step(now_us, clock)

    def run(self, clock, until_us):
        """Run ticks on ``clock`` until (excluding) ``until_us``; returns the ticks run. While recording
        into a batching sink, :meth:`idle` runs before each wait for the next tick."""
        if self.scheduler is None:
            self.start()
        if self._write_held is not None:
            clock = _IdleFirst(clock, self._write_held)
        return self.scheduler.run(clock, until_us)

    @property
    def base_rate_hz(self):
        return self.start().base_rate_hz

    def report(self):
        """The scheduler's report (rates, runs, watchdog), failsafe engagements, and each part's counters."""
        out = {"scheduler": self.start().report(), "failsafe_engagements": self.failsafe.engage_count}
        for name, part in self.parts:
            rep = getattr(part, "report", None)
            if rep is not None:
                out[name] = rep()
        return out


def _batch_writer(sink):
    """The ``write_held()`` of a batching sink (the sink, or the object whose bound method it is), or None."""
    write_held = getattr(sink, "write_held", None)
    if write_held is None:
        write_held = getattr(getattr(sink, "__self__", None), "write_held", None)
    return write_held


class _IdleFirst:
    """``clock`` whose ``sleep_until_us`` first runs ``idle()`` (the recording sink's writes)."""

    def __init__(self, clock, idle):
        self._clock = clock
        self._idle = idle

    def now_us(self):
        return self._clock.now_us()

    def sleep_until_us(self, deadline_us):
        self._idle()
        self._clock.sleep_until_us(deadline_us)

    def __getattr__(self, name):
        return getattr(self._clock, name)
