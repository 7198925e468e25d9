"""The link layer of one simulated Crazyflie (crazyflie-firmware crtp.c and crtpservice.c).

``LinkService.receive`` is where every datagram enters: it splits the CRTP header, keeps the packet
counters every service shares, and turns a service's exception on a short or garbled packet into a
count instead of a crash (the firmware's services read fixed-size fields and answer what they can).
``LinkService.handle`` answers the link-control port 15: echo (cflib's latency pings), source (the
"Bitcraze Crazyflie" magic), sink, and channel 3, the null packet that the radio link polls with and
cflib's UDP scan probes with (answered with a null packet). The two legacy UDP datagrams that older
cflib drivers opened and closed a "connection" with call ``on_connect(client)`` /
``on_disconnect(client)``. The radio link has no loss or retries here: UDP on loopback, one datagram
per CRTP packet; ``silent`` cuts the link (nothing answered, nothing logged) for fault tests.
"""
import struct

from harness.sim.crazyflie import crtp

# Counters in SimCrazyflie.stats that the link keeps; "malformed" and "unknown" are counted by every
# service for packets too short for their fields or with a command the simulation does not know.
COUNTERS = ("rx_packets", "tx_packets", "malformed", "unknown", "legacy_handshakes", "echo", "dropped_silent",
            "internal_errors")

# What a service may raise on a truncated or garbled packet: counted as malformed.
PACKET_ERRORS = (struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError)


def _ignore(_client):
    return None


class LinkService:
    """Port 15 and the datagram entry point; ``rssi`` (-dBm, as the firmware's radio.rssi) is what the
    radio log group reports."""

    def __init__(self, stats, rssi):
        self.stats = stats
        self.rssi = rssi
        self.silent = False
        self.on_connect = _ignore
        self.on_disconnect = _ignore

    def receive(self, datagram, route, now_us, client):
        """Count ``datagram`` and hand its (port, channel, data) to ``route(port, channel, data, now_us,
        client)``; returns the reply datagrams. Empty, over-long and silent-link datagrams get none."""
        stats = self.stats
        stats["rx_packets"] += 1
        if self.silent:
            stats["dropped_silent"] += 1
            return []
        try:
            port, channel, data = crtp.split(datagram)
        except ValueError:
            stats["malformed"] += 1
            return []
        if len(data) > crtp.MAX_DATA:
            stats["malformed"] += 1
            return []
        try:
            replies = route(port, channel, bytes(data), now_us, client)
        except PACKET_ERRORS:
            stats["malformed"] += 1
            replies = []
        except Exception:            # a bug must not take the simulated drone down; must stay 0
            stats["internal_errors"] += 1
            replies = []
        stats["tx_packets"] += len(replies)
        return replies

    def handle(self, channel, data, _now_us, client):
        """Port 15 (link control)."""
        if channel == crtp.LINK_CH_ECHO:
            self.stats["echo"] += 1
            return [crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, data)]
        if channel == crtp.LINK_CH_SOURCE:
            return [crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_SOURCE,
                                crtp.LINK_SOURCE_MAGIC.ljust(crtp.MAX_DATA, b"\0"))]
        if channel == crtp.LINK_CH_SINK:
            return []
        # channel 3: null packets (the scan probe b"\xff") and the legacy UDP handshake
        full = crtp.NULL_PACKET + data
        if full == crtp.LEGACY_UDP_CONNECT:
            self.stats["legacy_handshakes"] += 1
            self.on_connect(client)
            return []
        if full == crtp.LEGACY_UDP_DISCONNECT:
            self.stats["legacy_handshakes"] += 1
            self.on_disconnect(client)
            return []
        if not data:
            return [crtp.NULL_PACKET]
        self.stats["unknown"] += 1
        return []

    def log_sources(self):
        """The radio log group: radio.rssi, radio.isConnected (always: a silent link logs nothing)."""
        return {"rssi": lambda: self.rssi, "one": lambda: 1}
