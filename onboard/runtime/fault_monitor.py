"""Part: a driver's faults mirrored into the node's failsafe (pure, runs on MicroPython).

Rate group ``motors`` (rate_hz): ``driver.poll(now_us)`` (telemetry, keep-alive, reconnects),
then the driver's fault set ``driver.faults()`` is read; whenever it differs from the last one
read it enters the app through the entry point ``faults_entry`` (default ``motor_faults``) as a
:class:`onboard.core.samples.FaultSet` (recorded on ``/app/in/motor_faults`` while the node
records, so a replay feeds the same sets at the same ticks). On each set that enters, every
fault engages the failsafe with reason ``<prefix><fault>`` (so the controllers stop the robot)
and a fault that is gone clears its reason (a link that comes back). Each change is kept in
``fault_events`` as ``(time_us, "engaged"/"cleared", reason)`` and logged on ``/faults``.

A replayed app's driver stand-in reports no faults: the recorded sets arrive at the entry point.
"""
from onboard.core.samples import FaultSet

FAULTS_ENTRY = "motor_faults"


class FaultMonitor:
    def __init__(self, driver, rate_hz, prefix="motors:", group="motors", faults_entry=FAULTS_ENTRY):
        self.driver = driver
        self.rate_hz = rate_hz
        self.prefix = prefix
        self.group = group
        self.faults_entry = faults_entry
        self._reasons = set()
        self._last_read = ()            # the driver's fault set as last read (sorted names)
        self.fault_events = []
        self._node = None
        self.on_faults = self._on_faults

    def attach(self, node):
        self._node = node
        self.on_faults = node.entry(self.faults_entry, self._on_faults)
        node.every(self.group, self.rate_hz, self._poll)

    def _poll(self, now_us):
        self.driver.poll(now_us)
        self.sync_faults(now_us)

    def sync_faults(self, now_us):
        """Read the driver's faults; a set that differs from the last one read enters through
        :attr:`on_faults` (stamped ``now_us``)."""
        sample = FaultSet(now_us, self.driver.faults())
        if sample.faults != self._last_read:
            self._last_read = sample.faults
            self.on_faults(sample)

    def _on_faults(self, sample):
        """Entry point: mirror the fault set ``sample`` (FaultSet) into the node's failsafe."""
        node = self._node
        now_us = sample.time_us
        now = set(self.prefix + f for f in sample.faults)
        for reason in sorted(now - self._reasons):
            node.failsafe.engage(reason, now_us)
            self._event(now_us, "engaged", reason)
        for reason in sorted(self._reasons - now):
            node.failsafe.clear(reason)
            self._event(now_us, "cleared", reason)
        self._reasons = now

    def _event(self, now_us, event, reason):
        self.fault_events.append((now_us, event, reason))
        if self._node.logging:
            self._node.log("/faults", now_us, {"time_us": now_us, "event": event, "reason": reason})

    def report(self):
        return {"fault_events": [list(e) for e in self.fault_events]}
