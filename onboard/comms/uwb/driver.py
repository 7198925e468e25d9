"""Binds a protocol node to a radio (pure, MicroPython-compatible).

The radio is passed in; it needs one method, ``transmit(frame_bytes, dx_ticks)`` (``dx_ticks``
None: send now; otherwise a DW1000 delayed transmission at that raw radio time), and reports
back through the board's event loop, which calls :meth:`UwbDriver.on_event` with
``("rx", frame_bytes, raw_rx_ticks)``, ``("tx_done", raw_tx_ticks)``, ``("tx_error", reason)``
or ``("timer",)``. On hardware that is a DW1000 interrupt handler plus a timer; in the harness
it is :class:`harness.sim.radio.uwb_channel.UwbNetwork`.
"""


class UwbDriver:
    def __init__(self, node, radio):
        self.node = node
        self.radio = radio

    def start(self, now_us):
        """Returns (range samples, next deadline in node-local us or None)."""
        acts, deadline = self.node.start(now_us)
        return self._execute(acts), deadline

    def on_event(self, event, now_us):
        """Feed one radio/timer event; returns (range samples, next deadline)."""
        out = self.node.on_event(event, now_us)
        acts = out[0]
        if not acts:                     # most frames a node hears ask nothing of it: its own
            return out                   # (empty action list, deadline) is the answer, no new objects
        return self._execute(acts), out[1]

    def on_rx(self, data, raw_rx_ticks, now_us):
        """``on_event(("rx", data, raw_rx_ticks), now_us)`` without the event tuple (a frame heard: the radio's
        most frequent event); returns (range samples, next deadline)."""
        out = self.node.on_rx(data, raw_rx_ticks, now_us)
        if not out[0]:
            return out
        return self._execute(out[0]), out[1]

    def set_velocity(self, vx_mps, vy_mps):
        return self.node.set_velocity(vx_mps, vy_mps)

    def _execute(self, acts):
        samples = []
        for a in acts:
            if a[0] == "tx":
                self.radio.transmit(a[1], a[2])
            elif a[0] == "range":
                samples.append(a[1])
        return samples
