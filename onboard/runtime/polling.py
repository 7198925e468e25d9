"""Parts that poll input drivers in the node's io phase (pure, runs on MicroPython).

Their rate groups are io groups: they run first in each tick, before the watchdog is
checked, so a sample read this tick counts as fresh.

- :class:`ImuPoll`: ``imu.read(now_us)`` -> ``sink(ImuSample)``; a read that returns None (a
  bus error the driver already counted) is counted in ``imu_errors``; logs ``/imu``.
- :class:`PosePoll`: ``source.poll(now_us)`` -> ``sink(PoseSample)`` for each sample
  received; logs ``/aiding/pose``.
- :class:`DriverPoll`: ``driver.poll(now_us)`` for a driver that delivers its own samples.
"""


class ImuPoll:
    def __init__(self, imu, rate_hz, sink, group="imu"):
        self.imu = imu
        self.rate_hz = rate_hz
        self.sink = sink
        self.group = group
        self.imu_errors = 0
        self._node = None

    def attach(self, node):
        self._node = node
        node.every(self.group, self.rate_hz, self._read, io=True)

    def _read(self, now_us):
        s = self.imu.read(now_us)
        if s is None:
            self.imu_errors += 1
            return
        self.sink(s)
        if self._node.logging:
            self._node.log("/imu", now_us, s)

    def report(self):
        return {"imu_errors": self.imu_errors}


class PosePoll:
    def __init__(self, source, rate_hz, sink, group="pose"):
        self.source = source
        self.rate_hz = rate_hz
        self.sink = sink
        self.group = group
        self._node = None

    def attach(self, node):
        self._node = node
        node.every(self.group, self.rate_hz, self._poll, io=True)

    def _poll(self, now_us):
        for s in self.source.poll(now_us):
            self.sink(s)
            if self._node.logging:
                self._node.log("/aiding/pose", now_us, s)


class DriverPoll:
    """``driver.poll(now_us)`` in the io phase: a driver that reads what arrived on its link and
    delivers the samples through its own callbacks (e.g. ``link.on_imu``)."""

    def __init__(self, driver, rate_hz, group="link"):
        self.driver = driver
        self.rate_hz = rate_hz
        self.group = group

    def attach(self, node):
        node.every(self.group, self.rate_hz, self.driver.poll, io=True)
