"""Transports (onboard.comms.transport) and VescLink.connect: reopening holds one port, a vanished peer is
reported, URIs with bad numbers are a TransportError naming the bad part."""
import os
import socket

import pytest

from onboard.comms import transport as tr
from onboard.comms.vesc.link import VescLink


@pytest.fixture
def pty_path():
    master, slave = os.openpty()
    yield os.ttyname(slave)
    os.close(master)
    os.close(slave)


def test_reopening_a_serial_transport_closes_the_port_it_held(pty_path):
    t = tr.SerialTransport(pty_path).open()
    first = t._ser
    t.open()
    assert not first.is_open and t.is_open
    t.close()
    assert not t.is_open


def test_reopening_a_udp_transport_closes_the_socket_it_held():
    t = tr.UdpTransport("127.0.0.1", 9).open()
    first = t._sock
    t.open()
    assert first.fileno() == -1 and t._sock.fileno() != -1
    t.close()


@pytest.mark.parametrize("uri, words", [
    ("udp://127.0.0.1:70000", "1..65535"),
    ("udp://127.0.0.1:0", "1..65535"),
    ("udp://127.0.0.1:\u00b2", "host:port"),
    ("serial:///dev/null?baud=\u00b2", "baud must be"),
    ("serial:///dev/null?baud=fast", "baud must be"),
    ("serial:///dev/null?baud=0", "baud must be"),
    ("serial:///dev/null?speed=9600", "unknown serial URI option"),
])
def test_uris_with_bad_numbers_are_a_transport_error_naming_them(uri, words):
    with pytest.raises(tr.TransportError, match=words.replace(".", r"\.")):
        tr.open_transport(uri)


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_udp_peer_whose_port_is_closed_is_reported_as_closed():
    t = tr.open_transport("udp://127.0.0.1:%d" % _free_udp_port())
    t.write(b"hello")                                 # the refusal (ICMP) comes back to this socket
    with pytest.raises(tr.TransportClosed, match="refused"):
        t.read(100, 0.5)
    t.close()


def test_a_udp_transport_reads_its_peer_only():
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t = tr.UdpTransport("127.0.0.1", peer.getsockname()[1]).open()
    t.write(b"ping")
    data, addr = peer.recvfrom(100)
    stranger.sendto(b"spoofed", addr)
    peer.sendto(b"pong", addr)
    assert data == b"ping" and t.read(100, 0.5) == b"pong"
    t.close()
    peer.close()
    stranger.close()


def test_a_loop_transport_whose_other_end_closed_reads_what_was_left_then_raises():
    a, b = tr.LoopTransport.pair()
    b.write(b"last")
    b.close()
    assert a.read(2) == b"la" and a.read() == b"st"
    with pytest.raises(tr.TransportClosed):
        a.read()
    with pytest.raises(tr.TransportClosed):
        a.write(b"x")
    b.open()                                          # the other end is back
    a.write(b"again")
    assert b.read() == b"again" and a.read() == b""


def test_loop_uri_is_a_loopback():
    t = tr.open_transport("loop://")
    t.write(b"echo")
    assert t.read() == b"echo"


def test_vesc_link_connect_on_an_open_link_closes_the_transport_it_held():
    opened = []

    def open_fn():
        a, _b = tr.LoopTransport.pair()
        opened.append(a)
        return a

    link = VescLink("x", open_fn)
    assert link.connect(0) and link.connect(10)
    assert opened[0].closed and not opened[1].closed and link.transport is opened[1]

    def refuse():
        raise tr.TransportError("gone")

    link.open_fn = refuse
    assert not link.connect(20)
    assert opened[1].closed and link.transport is None and not link.up


def test_a_udp_read_returns_a_long_datagram_whole():
    """A signed frame with the largest payload is 4115 bytes: read() with its default max_bytes (4096) cut it
    (the rest of a datagram is discarded by the kernel), so it could never verify."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    t = tr.UdpTransport("127.0.0.1", peer.getsockname()[1]).open()
    t.write(b"hello")
    _data, addr = peer.recvfrom(100)
    big = bytes(range(256)) * 20
    peer.sendto(big, addr)
    peer.sendto(b"small", addr)
    assert t.read(timeout_s=0.5) == big and t.read(16, 0.5) == b"small"
    t.close()
    peer.close()
