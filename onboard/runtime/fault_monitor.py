"""Part: a driver's faults mirrored into the node's failsafe (pure, runs on MicroPython).

Rate group ``motors`` (rate_hz): ``driver.poll(now_us)`` (telemetry, keep-alive, reconnects),
then every fault in ``driver.faults()`` engages the failsafe with reason ``<prefix><fault>``
(so the controllers stop the robot) and a fault that is gone clears its reason (a link that
comes back). Each change is kept in ``fault_events`` as ``(time_us, "engaged"/"cleared",
reason)`` and logged on ``/faults``.
"""


class FaultMonitor:
    def __init__(self, driver, rate_hz, prefix="motors:", group="motors"):
        self.driver = driver
        self.rate_hz = rate_hz
        self.prefix = prefix
        self.group = group
        self._reasons = set()
        self.fault_events = []
        self._node = None

    def attach(self, node):
        self._node = node
        node.every(self.group, self.rate_hz, self._poll)

    def _poll(self, now_us):
        self.driver.poll(now_us)
        self.sync_faults(now_us)

    def sync_faults(self, now_us):
        """Mirror the driver's faults into the node's failsafe."""
        node = self._node
        now = set(self.prefix + f for f in self.driver.faults())
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
