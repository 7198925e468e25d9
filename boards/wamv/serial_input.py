"""A serial input of the boat computer that can vanish and come back: the GNSS receiver's and the heading
source's ports (USB serial adapters that get unplugged, or reset and come back under the same name).

It reuses the outboards' reconnect mechanism (``onboard.comms.vesc.link.VescLink``, also the Pi's VESC links):
the port is opened by ``open_fn``; a read that finds it gone (``TransportClosed``: pyserial's OSError or
SerialException) marks the link down, counts it and closes the port, and ``open_fn`` is tried again every
``reconnect_period_us`` (failed tries counted) until it opens. Here the stream is plain bytes (NMEA), not
VESC frames: each read's bytes go through as they came.

:class:`SerialInput` is two things on the app's node:

- the transport the app's reading part polls (``read``: what arrived since the last read; ``b""`` while the
  port is down; never raises): ``boards.wamv.app.GnssNmea`` or ``boards.wamv.heading_nmea.HeadingNmea``;
- an io part (group ``<name>_port`` at ``rate_hz``, the reading part's rate) that reopens the port when its
  retry time has come and reports each loss and each reconnection once, to ``on_change(now_us, name, event,
  error)`` (event ``"lost"`` or ``"reconnected"``; the error that took it down) and in ``report()``
  (``disconnects``: losses, ``reconnects``, ``open_failures``, ``up``, ``last_error``).

While the port is down its samples stop, the app's watched input (``gnss``; ``heading`` and ``imu`` for the
heading source) goes stale and the failsafe stops both outboards (SetCurrent 0); once the port is back and
its samples are fresh, the failsafe lets go and the boat goes on. Time is passed in: ``connect(now_us)``
and the io group's ``now_us``; a loss found by ``read`` is timed at the group's last run.
"""
from onboard.comms.vesc.link import VescLink


class _Bytes:
    """The decoder a VescLink carries, for a stream that is not VESC-framed: each read's bytes as they came."""

    pending = False

    def feed(self, data):
        return [bytes(data)]

    def discard_pending(self):
        pass

    def counters(self):
        return {}


class SerialInput(VescLink):
    """``name``: the input ("gnss", "heading"); ``open_fn()`` -> an opened transport (raises
    ``TransportError``); ``rate_hz``: the io group's rate (Hz); ``reconnect_period_us``: between two tries to
    reopen a vanished port (us); ``on_change``: see the module docstring, or None. Open it with
    :meth:`connect` (the service's start) before the first read."""

    def __init__(self, name, open_fn, rate_hz, reconnect_period_us, on_change=None):
        super().__init__(name, open_fn, {"reconnect_period_us": reconnect_period_us})
        self.decoder = _Bytes()
        self.rate_hz = rate_hz
        self.on_change = on_change
        self.now_us = None
        self._seen_disconnects = 0
        self._seen_connects = None

    def connect(self, now_us):
        self.now_us = now_us
        up = super().connect(now_us)
        if self._seen_connects is None:
            self._seen_connects = self.connects       # the first open is no reconnection
        return up

    # ------------------------------------------------------------ the transport the reading part polls
    def read(self, max_bytes=4096, timeout_s=0.0):
        """The bytes that arrived since the last read (``b""`` while the port is down); never raises."""
        return b"".join(self.receive(self.now_us))

    # ------------------------------------------------------------ io part
    def attach(self, node):
        node.every(self.name + "_port", self.rate_hz, self._service, io=True)

    def _service(self, now_us):
        self.now_us = now_us
        self.service(now_us)                  # reopen when down and the retry time has come
        if self.disconnects != self._seen_disconnects:
            self._seen_disconnects = self.disconnects
            self._changed(now_us, "lost")
        if self._seen_connects is not None and self.connects != self._seen_connects:
            self._seen_connects = self.connects
            self._changed(now_us, "reconnected")

    def _changed(self, now_us, event):
        if self.on_change is not None:
            self.on_change(now_us, self.name, event, self.last_error)

    def report(self):
        out = super().report()
        out["reconnects"] = self.connects - 1 if self.connects else 0
        return out
