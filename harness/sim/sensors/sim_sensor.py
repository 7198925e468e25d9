"""The simulated sensor's base: it samples the world on the simulated clock and calls the app's entry point.

This is the PX4 sensor-simulator pattern: a simulated sensor hands its sample to the same entry point
the real driver calls (``GroundRobotRuntime.on_imu``, ``on_pose``, a device's register file), so the
app under test cannot tell the simulated world from the robot. Every ``1 / rate_hz`` seconds
:meth:`SimSensor.tick` asks :meth:`SimSensor.sample` for a sample (None: none this tick, e.g. the
first IMU interval or an aiding dropout), passes it to ``entry`` and logs it on ``topic``.
"""
from harness.sim.clock import PRIORITY_SENSOR


def _no_log(topic, time_us, message):
    return None


class SimSensor:
    """A sensor at ``rate_hz`` (Hz, a whole-microsecond period) that calls ``entry(sample)``.

    topic: the log topic of its samples (None: not logged); log: ``log(topic, time_us, sample)``.
    Subclasses implement :meth:`sample`; :class:`ModelSensor` wraps a sensor model that has one.
    ``samples`` counts the samples handed to ``entry``.
    """

    priority = PRIORITY_SENSOR      # same-time order on the clock: after physics, before the app's tick

    def __init__(self, rate_hz, entry, topic=None, log=None):
        self.rate_hz = rate_hz
        self.entry = entry
        self.topic = topic
        self.log = log if log is not None and topic is not None else _no_log
        self.samples = 0

    def sample(self, now_us):
        """The sample at ``now_us`` (us), or None."""
        raise NotImplementedError

    def attach(self, clock):
        """Tick on ``clock`` (a :class:`harness.sim.clock.SimClock`) from now on; returns self."""
        clock.every_hz(self.rate_hz, self.tick, self.priority)
        return self

    def tick(self, now_us):
        s = self.sample(now_us)
        if s is not None:
            self.samples += 1
            self.entry(s)
            self.log(self.topic, now_us, s)


class ModelSensor(SimSensor):
    """A :class:`SimSensor` around a sensor model whose ``sample(now_us)`` returns a sample or None
    (``harness.sim.sensors.imu.PlanarImu``: ag2u eq. 10; ``harness.sim.sensors.pose.AidingPoseSensor``:
    ag2u eq. 13)."""

    def __init__(self, model, rate_hz, entry, topic=None, log=None):
        SimSensor.__init__(self, rate_hz, entry, topic, log)
        self.model = model

    def sample(self, now_us):
        return self.model.sample(now_us)
