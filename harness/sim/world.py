"""A simulated world: one clock, the bodies that move on it, the simulated sensors and devices on that
clock, and the onboard app under test running on the same clock, in lockstep.

A world builder (:class:`harness.sim.ground_world.GroundWorld` for the ground robots; the boat, the
leveling robot and the loader build theirs the same way) subclasses :class:`SimWorld` with its bodies
and the sensors they carry; a scenario then wires what differs (its motors path, its IMU path) and
runs the app with :meth:`SimWorld.run`.

Same-time order on the clock (``harness.sim.clock``): devices that answer a bus, then physics
(``PRIORITY_PHYSICS``), then sensors sampling the new state (``PRIORITY_SENSOR``), then the run's
recording (``PRIORITY_RECORD``), then everything else; the app's tick at that time comes last.
"""
from harness.sim.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock
from onboard.core.units import hz_to_period_us, s_to_us

PRIORITY_RECORD = PRIORITY_SENSOR + 1       # record ticks see the state the sensors just sampled


def _no_log(topic, time_us, message):
    return None


class SimWorld:
    """The clock, the sensors on it, the app and what the run records.

    log: ``log(topic, time_us, message)`` (the run's MCAP log), or None. ``progress``: an object with
    ``update_to(sim_s)`` that :meth:`run` moves along in simulated seconds, or None.
    """

    def __init__(self, log=None):
        self.clock = SimClock()
        self.log = log if log is not None else _no_log
        self.sensors = []
        self.app = None
        self.progress = None

    # ------------------------------------------------------------ what runs on the clock
    def every_hz(self, rate_hz, fn, priority, start_us=None):
        """``fn(now_us)`` at ``rate_hz`` (Hz) from ``start_us`` (default: now); the period (us)."""
        return self.clock.every_hz(rate_hz, fn, priority, start_us)

    def physics(self, rate_hz, step, priority=PRIORITY_PHYSICS):
        """``step(dt_s, now_us)`` at ``rate_hz``, the first at one period (it advances the bodies from
        ``now_us - dt`` to ``now_us``); the period (us)."""
        period_us = hz_to_period_us(rate_hz)
        dt_s = 1.0 / rate_hz
        self.clock.call_every(period_us, lambda now_us: step(dt_s, now_us), start_us=period_us, priority=priority)
        return period_us

    def add_sensor(self, sensor):
        """Attach a :class:`harness.sim.sensors.sim_sensor.SimSensor` to the clock; returns it."""
        self.sensors.append(sensor.attach(self.clock))
        return sensor

    def at_s(self, time_s, fn):
        """``fn(now_us)`` once at ``time_s`` (simulated s), e.g. a fault injected."""
        self.clock.call_at(s_to_us(time_s), fn)

    def recorder(self, rate_hz, fn):
        """``fn(now_us)`` at ``rate_hz`` after the sensors of the same time (the run's recording)."""
        return self.every_hz(rate_hz, fn, PRIORITY_RECORD)

    # ------------------------------------------------------------ the app
    def start(self, app, record=None, code_version=""):
        """``app`` (anything with ``run(clock, until_us)``) runs on this world's clock; with ``record``, a
        ``sink(topic, time_us, msg)``, it records at its boundary from now on (``app.record``:
        ``python -m harness replay`` re-runs the log)."""
        self.app = app
        if record is not None:
            app.record(record, code_version, self.clock.now_us())

    def run(self, until_us, step_us, done=None, each_step=None):
        """Run the app, and the world with it, in steps of ``step_us`` (us) up to ``until_us`` or until
        ``done()`` is true after a step; ``each_step(t_us)`` after every step. Returns whether ``done()``
        became true. The app's ticks run up to (excluding) each step's end. ValueError for a ``step_us`` that
        is not a positive number of microseconds (a step of 0 would never reach ``until_us``)."""
        if isinstance(step_us, bool) or not step_us > 0:
            raise ValueError("run: step_us must be a positive number of microseconds, got %r" % (step_us,))
        clock = self.clock
        t = clock.now_us()
        finished = done is not None and done()
        while t < until_us and not finished:
            t = min(until_us, t + step_us)
            self.app.run(clock, t)
            if each_step is not None:
                each_step(t)
            if self.progress is not None:
                self.progress.update_to(t * 1e-6)
            finished = done is not None and done()
        return finished

    @property
    def sim_time_s(self):
        return self.clock.now_us() * 1e-6
