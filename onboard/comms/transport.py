"""Byte transports chosen by URI: ``serial://``, ``loop://``, ``udp://``.

Every transport has ``open() / write(data) / read(max_bytes, timeout_s) / close()``.
``read`` returns whatever bytes arrived within ``timeout_s`` (possibly ``b""``).
A port that vanishes (USB unplugged, pty closed) raises :class:`TransportClosed`
from ``read``/``write`` so the caller can report the fault, stop safely and
reconnect; it never hangs. ``open()`` on an open transport closes what it held
first (a reopen holds one port or socket, never two).

- ``serial:///dev/ttyUSB0?baud=115200`` (or a bare path): pyserial. Also opens the
  harness's pseudo-terminals, so the same code path runs in tests and on hardware.
- ``loop://``: in-memory loopback for tests (what it writes it reads back); ``LoopTransport.pair()``
  gives two ends instead.
- ``udp://host:port`` (port 1..65535): datagrams to and from a fixed peer (each ``write`` is one
  datagram; the socket is connected to the peer, so datagrams from anyone else are not read, and a
  peer whose port is closed raises :class:`TransportClosed`).
"""
import collections
import socket


class TransportError(IOError):
    """A transport could not be opened or used."""


class TransportClosed(TransportError):
    """The other end went away (port unplugged, pty closed, socket shut)."""


class Transport:
    def open(self):
        raise NotImplementedError

    def write(self, data):
        raise NotImplementedError

    def read(self, max_bytes=4096, timeout_s=0.0):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()


class SerialTransport(Transport):
    """A serial port (or pty slave path) through pyserial, raw 8N1."""

    def __init__(self, port, baudrate=115200):
        self.port = port
        self.baudrate = int(baudrate)
        self._ser = None

    def open(self):
        import serial  # pyserial; imported here so MicroPython/pure users never need it
        self.close()
        try:
            self._ser = serial.Serial(self.port, self.baudrate, timeout=0, write_timeout=1.0)
        except (serial.SerialException, OSError) as exc:
            raise TransportError("cannot open serial port %s: %s" % (self.port, exc))
        return self

    @property
    def is_open(self):
        return self._ser is not None and self._ser.is_open

    def write(self, data):
        import serial
        if self._ser is None:
            raise TransportClosed("serial port %s is not open" % self.port)
        try:
            self._ser.write(data)
        except (serial.SerialException, OSError) as exc:
            self._drop()
            raise TransportClosed("serial port %s went away: %s" % (self.port, exc))

    def read(self, max_bytes=4096, timeout_s=0.0):
        import serial
        if self._ser is None:
            raise TransportClosed("serial port %s is not open" % self.port)
        try:
            self._ser.timeout = timeout_s
            first = self._ser.read(1)
            if not first:
                return b""
            self._ser.timeout = 0
            return first + self._ser.read(max_bytes - 1)
        except (serial.SerialException, OSError, TypeError) as exc:
            # pyserial raises SerialException("device reports readiness to read but returned no
            # data") when the other end of a pty/USB port is gone.
            self._drop()
            raise TransportClosed("serial port %s went away: %s" % (self.port, exc))

    def _drop(self):
        try:
            self._ser.close()
        except Exception:
            pass
        self._ser = None

    def close(self):
        if self._ser is not None:
            self._drop()


class LoopTransport(Transport):
    """In-memory byte pipe; ``a, b = LoopTransport.pair()`` writes on a arrive at b and back. Once the other
    end is closed (a vanished port), ``write`` raises TransportClosed and so does ``read`` when it has nothing
    left that arrived before."""

    def __init__(self):
        self._rx = collections.deque()
        self.peer = None
        self.closed = False

    @classmethod
    def pair(cls):
        a, b = cls(), cls()
        a.peer, b.peer = b, a
        return a, b

    def open(self):
        self.closed = False
        return self

    def write(self, data):
        if self.closed or self.peer is None or self.peer.closed:
            raise TransportClosed("loop transport closed")
        self.peer._rx.extend(bytes(data))

    def read(self, max_bytes=4096, timeout_s=0.0):
        if self.closed:
            raise TransportClosed("loop transport closed")
        if not self._rx and self.peer is not None and self.peer.closed:
            raise TransportClosed("loop transport's other end closed")
        n = min(max_bytes, len(self._rx))
        return bytes(self._rx.popleft() for _ in range(n))

    def close(self):
        self.closed = True


MAX_DATAGRAM = 65535


class UdpTransport(Transport):
    """UDP datagrams to and from ``host:port`` (port 1..65535) on an ephemeral local port. ``read`` returns one
    whole datagram (whatever ``max_bytes`` is: a datagram is never cut), or ``b""``."""

    def __init__(self, host, port, bind_host="127.0.0.1"):
        if isinstance(port, str) and _decimal(port):
            port = int(port)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise TransportError("udp port must be an integer in 1..65535, got %r" % (port,))
        self.addr = (host, port)
        self.bind_host = bind_host
        self._sock = None

    def open(self):
        self.close()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self.bind_host, 0))
            sock.connect(self.addr)          # only the peer's datagrams are read; its ICMP refusals are seen
        except OSError as exc:
            sock.close()
            raise TransportError("cannot open udp transport to %s:%d: %s" % (self.addr + (exc,)))
        self._sock = sock
        return self

    def write(self, data):
        if self._sock is None:
            raise TransportClosed("udp transport not open")
        try:
            self._sock.send(bytes(data))
        except ConnectionRefusedError as exc:
            raise TransportClosed("udp peer %s:%d refused: %s" % (self.addr + (exc,)))

    def read(self, max_bytes=4096, timeout_s=0.0):
        if self._sock is None:
            raise TransportClosed("udp transport not open")
        self._sock.settimeout(timeout_s if timeout_s > 0 else 0.0)
        try:
            data = self._sock.recv(MAX_DATAGRAM)   # one whole datagram: a shorter buffer cuts it silently
        except (socket.timeout, BlockingIOError):
            return b""
        except ConnectionRefusedError as exc:
            raise TransportClosed("udp peer %s:%d refused: %s" % (self.addr + (exc,)))
        return data

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _decimal(text):
    """True for a non-empty run of ASCII digits (``str.isdigit`` also takes "²" and other digits ``int`` refuses)."""
    return bool(text) and all("0" <= ch <= "9" for ch in text)


def open_transport(uri):
    """Open a transport from a URI (see module docstring); raises TransportError with the reason."""
    if uri.startswith("loop://"):
        loop = LoopTransport()
        loop.peer = loop                     # a loopback: its writes come back on its reads
        return loop.open()
    if uri.startswith("udp://"):
        rest = uri[len("udp://"):]
        host, _, port = rest.partition(":")
        if not _decimal(port):
            raise TransportError("udp URI needs host:port, got %r" % uri)
        return UdpTransport(host, int(port)).open()
    if uri.startswith("serial://"):
        rest = uri[len("serial://"):]
        path, _, query = rest.partition("?")
        baud = 115200
        for kv in filter(None, query.split("&")):
            key, _, value = kv.partition("=")
            if key != "baud":
                raise TransportError("unknown serial URI option %r in %r" % (kv, uri))
            if not _decimal(value) or int(value) < 1:
                raise TransportError("serial URI baud must be a positive whole number, got %r in %r" % (value, uri))
            baud = int(value)
        return SerialTransport(path, baud).open()
    if uri.startswith("/"):
        return SerialTransport(uri).open()
    raise TransportError("unknown transport URI %r (use serial://PATH, loop://, udp://HOST:PORT)" % uri)
