"""The boat's two electric outboards (skid steer) as motor controllers on serial links speaking the VESC
UART protocol (``onboard.comms.vesc``): the driver the boat app commands them with.

Throttle commands in [-1, 1] (+ pushes the boat forward) go out as SetRPM of ``direction * throttle *
max_erpm`` (eRPM at full throttle); ``stop(now_us)`` releases both motors (SetCurrent 0).
``poll(now_us)`` (the app's telemetry rate group) reconnects vanished links, reads the GetValues replies
into :class:`OutboardTelemetry` samples and requests the next ones. Each link serves one outboard and
answers requests in order, so a reply is stamped with the time its request was sent: the telemetry says
what the motor did at that time (robotx IV's hardware-in-the-loop finding, a motor interface that lags,
is measured from command to telemetry this way: ``harness.sim.wamv_thrusters.estimate_lag_s``).
"""
from onboard.comms.vesc import codec
from onboard.comms.vesc.link import VescLink
from onboard.core.samples import _Sample
from onboard.core.settings import POSITIVE, checked, one_of

SIDES = ("left", "right")
MAX_PENDING = 16

DEFAULTS = {
    "max_erpm": 10000.0,           # eRPM at full throttle (|throttle| = 1)
    "direction_left": 1,           # +1 or -1: the motor's eRPM sign that pushes the boat forward
    "direction_right": 1,
}
SETTING_RANGES = {"max_erpm": POSITIVE, "direction_left": one_of(1, -1), "direction_right": one_of(1, -1)}


class OutboardTelemetry(_Sample):
    """One GetValues reply of one outboard: ``throttle`` (shaft speed as a fraction of full throttle, +
    forward), ``erpm`` as reported, ``fault_code`` (mc_fault_code); ``time_us`` when it was requested."""
    FIELDS = ("time_us", "side", "throttle", "erpm", "fault_code")

    def __init__(self, time_us, side, throttle, erpm, fault_code):
        self.time_us = int(time_us)
        self.side = str(side)
        self.throttle = float(throttle)
        self.erpm = float(erpm)
        self.fault_code = int(fault_code)


class VescOutboards:
    """Left and right outboards, each on its own link. ``links``: {"left": open_fn, "right": open_fn} (an
    ``open_fn`` returns an opened transport) or ready :class:`VescLink` objects; ``config``: DEFAULTS
    overrides."""

    def __init__(self, links, config=None, link_config=None):
        self.cfg = checked(DEFAULTS, SETTING_RANGES, config, "VescOutboards")
        if set(links) != set(SIDES):
            raise ValueError("VescOutboards needs links 'left' and 'right', got %s" % sorted(links))
        self.links = {}
        for side in SIDES:
            spec = links[side]
            self.links[side] = spec if isinstance(spec, VescLink) else VescLink(side, spec, link_config)
        self.direction = {"left": self.cfg["direction_left"], "right": self.cfg["direction_right"]}
        self._pending = {side: [] for side in SIDES}      # request times awaiting a reply, oldest first
        self.telemetry = {side: None for side in SIDES}
        self.commands = 0
        self.refused_commands = 0
        self.stops = 0
        self.bad_replies = 0
        self.unanswered = 0

    def start(self, now_us):
        for link in self.links.values():
            link.connect(now_us)

    def command(self, throttle_left, throttle_right, now_us):
        """Send the throttles (clamped to [-1, 1]); a non-finite one stops both instead. True when both
        links took their command."""
        if not all(t == t and abs(t) != float("inf") for t in (throttle_left, throttle_right)):
            self.refused_commands += 1
            self.stop(now_us)
            return False
        self.commands += 1
        ok = True
        for side, t in (("left", throttle_left), ("right", throttle_right)):
            t = max(-1.0, min(1.0, float(t)))
            ok = self.links[side].send(codec.set_rpm(self.direction[side] * t * self.cfg["max_erpm"]), now_us) and ok
        return ok

    def stop(self, now_us):
        """Release both motors (SetCurrent 0); True when both links took it."""
        self.stops += 1
        ok = True
        for side in SIDES:
            ok = self.links[side].send(codec.set_current(0.0), now_us) and ok
        return ok

    def poll(self, now_us):
        """Reconnect, read replies, request the next telemetry; returns the new OutboardTelemetry samples."""
        samples = []
        for side in SIDES:
            link = self.links[side]
            was_up = link.up
            if not link.service(now_us) or not was_up:
                self.unanswered += len(self._pending[side])
                self._pending[side] = []
                if not link.up:
                    continue
            for payload in link.receive(now_us):
                s = self._on_payload(side, payload)
                if s is not None:
                    samples.append(s)
            if link.send(codec.get_values(), now_us):
                self._pending[side].append(now_us)
                if len(self._pending[side]) > MAX_PENDING:
                    self._pending[side].pop(0)
                    self.unanswered += 1
        return samples

    def _on_payload(self, side, payload):
        if not payload or payload[0] != codec.COMM_GET_VALUES:
            return None
        try:
            values = codec.decode_values(payload)
        except codec.VescDecodeError:
            self.bad_replies += 1
            return None
        if not self._pending[side]:
            self.bad_replies += 1                  # a reply nobody asked for
            return None
        t_us = self._pending[side].pop(0)
        rpm = values.rpm_erpm if values.rpm_erpm is not None else 0.0
        sample = OutboardTelemetry(t_us, side, self.direction[side] * rpm / self.cfg["max_erpm"], rpm,
                                   values.fault_code or 0)
        self.telemetry[side] = sample
        return sample

    def close(self):
        for link in self.links.values():
            link.close()

    def report(self):
        return {"commands": self.commands, "refused_commands": self.refused_commands, "stops": self.stops,
                "bad_replies": self.bad_replies, "unanswered": self.unanswered,
                "links": {side: link.report() for side, link in self.links.items()}}
