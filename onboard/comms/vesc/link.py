"""One UART link to a VESC and the VESCs behind it on CAN: frames out, payloads in.

The transport is opened by ``open_fn()`` (e.g. ``lambda: SerialTransport(path, 115200).open()``),
so the link can reopen it: when the port vanishes (USB unplugged, pty closed) the
transport raises ``TransportClosed``; the link goes ``down``, counts it, and tries
``open_fn`` again every ``reconnect_period_us`` from ``service(now_us)``. Nothing
here reads a clock or blocks: reads use a zero timeout and are bounded.
"""
from onboard.comms.transport import TransportClosed, TransportError
from onboard.comms.vesc import codec
from onboard.core.settings import checked, int_at_least

DEFAULTS = {
    "reconnect_period_us": 500000,
    "rx_frame_timeout_us": 100000,     # a partial frame older than this is dropped (truncated)
    "max_reads_per_poll": 64,          # bounds one receive() call
}
SETTING_RANGES = {"reconnect_period_us": int_at_least(1), "rx_frame_timeout_us": int_at_least(1),
                  "max_reads_per_poll": int_at_least(1)}


class VescLink:
    def __init__(self, name, open_fn, config=None):
        self.cfg = checked(DEFAULTS, SETTING_RANGES, config, "VescLink")
        self.name = name
        self.open_fn = open_fn
        self.transport = None
        self.decoder = codec.FrameDecoder()
        self.up = False
        self.last_error = None
        self._next_attempt_us = None
        self._last_rx_us = None
        self.tx_frames = 0
        self.tx_bytes = 0
        self.rx_bytes = 0
        self.disconnects = 0
        self.connects = 0
        self.open_failures = 0

    # ------------------------------------------------------------ connection
    def connect(self, now_us):
        """Try to open the transport now; True when the link is up. A transport the link already holds is
        closed once the new one is open (or the open failed): the link holds one port, never two."""
        old = self.transport
        try:
            transport = self.open_fn()
        except TransportError as exc:
            self.transport = None
            self._close_quietly(old)
            self.open_failures += 1
            self.last_error = str(exc)
            self.up = False
            self._next_attempt_us = now_us + self.cfg["reconnect_period_us"]
            return False
        self.transport = transport
        if old is not transport:
            self._close_quietly(old)
        self.decoder.discard_pending()
        self.up = True
        self.connects += 1
        self.last_error = None
        self._last_rx_us = now_us
        return True

    @staticmethod
    def _close_quietly(transport):
        if transport is not None:
            try:
                transport.close()
            except Exception:
                pass

    def _drop(self, now_us, exc):
        if self.up:
            self.disconnects += 1
        self.up = False
        self.last_error = str(exc)
        if self.transport is not None:
            try:
                self.transport.close()
            except Exception:
                pass
        self.transport = None
        self.decoder.discard_pending()
        self._next_attempt_us = now_us + self.cfg["reconnect_period_us"]

    def service(self, now_us):
        """Reconnect when down and the retry time has come; returns ``self.up``."""
        if not self.up and (self._next_attempt_us is None or now_us >= self._next_attempt_us):
            self.connect(now_us)
        return self.up

    def close(self):
        if self.transport is not None:
            try:
                self.transport.close()
            except Exception:
                pass
        self.transport = None
        self.up = False

    # ------------------------------------------------------------ traffic
    def send(self, payload, now_us, can_id=None):
        """Send one command payload (to ``can_id`` through CAN forwarding when given).

        Returns False (and marks the link down) when the port is gone."""
        if not self.up:
            return False
        if can_id is not None:
            payload = codec.forward_can(can_id, payload)
        frame = codec.encode_frame(payload)
        try:
            self.transport.write(frame)
        except TransportClosed as exc:
            self._drop(now_us, exc)
            return False
        self.tx_frames += 1
        self.tx_bytes += len(frame)
        return True

    def receive(self, now_us):
        """All complete payloads received so far (list of bytes); [] when down."""
        if not self.up:
            return []
        out = []
        got_any = False
        for _ in range(self.cfg["max_reads_per_poll"]):
            try:
                data = self.transport.read(4096, 0.0)
            except TransportClosed as exc:
                self._drop(now_us, exc)
                return out
            if not data:
                break
            got_any = True
            self.rx_bytes += len(data)
            out.extend(self.decoder.feed(data))
        if got_any:
            self._last_rx_us = now_us
        elif (self.decoder.pending and self._last_rx_us is not None
              and now_us - self._last_rx_us > self.cfg["rx_frame_timeout_us"]):
            self.decoder.discard_pending()
        return out

    def report(self):
        out = {"up": self.up, "tx_frames": self.tx_frames, "tx_bytes": self.tx_bytes,
               "rx_bytes": self.rx_bytes, "connects": self.connects,
               "disconnects": self.disconnects, "open_failures": self.open_failures,
               "last_error": self.last_error}
        out.update(self.decoder.counters())
        return out
