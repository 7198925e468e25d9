"""Authenticated frames for the links that command a robot (pure, MicroPython-compatible).

The idea is MAVLink 2's message signing (a shared secret key, a 48-bit counter that only goes
up, a link id, a truncated SHA-256-based tag); the frame is our own so that one layer carries
any payload (a JSON pose datagram, a line of the line link, a binary command)::

    offset  size  field
    0       1     MAGIC (0xA7)
    1       1     key_id      which provisioned key signed it (0-255)
    2       1     link_id     which link/sender stream (0-255): counters are kept per link
    3       6     counter     48-bit little-endian, strictly increasing per (key_id, link_id)
    9       2     length      payload bytes, little-endian (0..MAX_PAYLOAD)
    11      n     payload
    11+n    8     tag         HMAC-SHA256(key, bytes 0 .. 11+n)[:8]  (RFC 2104, truncated to 64 bits)

A receiver (:class:`FrameVerifier`) accepts a frame only when it is whole, its key id is
provisioned, its tag verifies (compared in constant time), and its counter is above the last
counter accepted on its link; everything else is dropped and counted (``malformed``,
``unknown_key``, ``bad_tag``, ``replayed``), and the verifier's state changes only on an
accepted frame, so a forged frame cannot move the counter. The tag is checked before the
counter: a replayed frame is one that verifies but is old.

Reboots: the last accepted counter must survive them, or a recorded frame could be replayed
after a power cycle. Writing it to flash on every frame would wear the flash, so the verifier
persists a **reserve**: when a counter passes the saved mark it saves ``counter + reserve``
(``persist(mark)``) and, on boot, accepts only counters above the saved mark. A reboot therefore
never accepts an old counter; it rejects at most ``reserve`` counter values of fresh frames,
which a time-based sender (:meth:`FrameSigner.frame` with ``stamp``, e.g. 10 us units of its
wall clock as MAVLink does) passes within ``reserve`` x 10 us (1 s for the default).

Keys are 16-32 random bytes provisioned at deploy time; they are never logged or printed
(:func:`key_fingerprint` names a key in reports). HMAC is written out here (RFC 2104 over
``hashlib.sha256``) because MicroPython firmware ships ``hashlib`` but not ``hmac``;
CPython's ``hmac`` gives the same bytes (tested against RFC 4231's vectors).
"""
import hashlib

MAGIC = 0xA7
HEADER_BYTES = 11
TAG_BYTES = 8
OVERHEAD_BYTES = HEADER_BYTES + TAG_BYTES
MAX_PAYLOAD = 4096
COUNTER_MAX = (1 << 48) - 1
BLOCK_BYTES = 64                   # SHA-256's block size (the HMAC pads its key to it)
DEFAULT_RESERVE = 100000           # counter values saved ahead (1 s of 10 us stamps)
MIN_KEY_BYTES = 16

# what a verifier counts
COUNTERS = ("accepted", "malformed", "unknown_key", "bad_tag", "replayed")


class SigningError(ValueError):
    """A key, id, counter or payload that cannot be signed (one line)."""


def _xor_pad(key, byte):
    return bytes([b ^ byte for b in key]) + bytes([byte]) * (BLOCK_BYTES - len(key))


def hmac_sha256(key, msg):
    """HMAC-SHA256 of ``msg`` under ``key`` (RFC 2104), 32 bytes."""
    if len(key) > BLOCK_BYTES:
        key = hashlib.sha256(key).digest()
    inner = hashlib.sha256(_xor_pad(key, 0x36))
    inner.update(msg)
    outer = hashlib.sha256(_xor_pad(key, 0x5C))
    outer.update(inner.digest())
    return outer.digest()


def same_bytes(a, b):
    """Equal byte strings, compared in time that does not depend on where they differ."""
    if len(a) != len(b):
        return False
    diff = 0
    for x, y in zip(a, b):
        diff |= x ^ y
    return diff == 0


def key_fingerprint(key):
    """A name for a key that does not reveal it: the first 8 hex digits of SHA-256("key-id" + key)."""
    return hashlib.sha256(b"key-id" + bytes(key)).digest()[:4].hex()


def check_key(key):
    """The key as bytes; SigningError for one shorter than MIN_KEY_BYTES."""
    key = bytes(key)
    if len(key) < MIN_KEY_BYTES:
        raise SigningError("a link key must have at least %d bytes, got %d" % (MIN_KEY_BYTES, len(key)))
    return key


def key_from_hex(text):
    """A key written as hex digits (a key file's content, whitespace ignored); SigningError when malformed."""
    text = "".join(str(text).split())
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise SigningError("a link key must be hex digits (e.g. 32 of them for 16 bytes)")
    return check_key(key)


def _byte_id(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
        raise SigningError("%s must be an integer in 0..255, got %r" % (what, value))
    return value


def sign(key, key_id, link_id, counter, payload):
    """One signed frame (bytes) carrying ``payload``; ``counter`` an integer in 0..COUNTER_MAX."""
    if isinstance(counter, bool) or not isinstance(counter, int) or not 0 <= counter <= COUNTER_MAX:
        raise SigningError("counter must be an integer in 0..2^48-1, got %r" % (counter,))
    if len(payload) > MAX_PAYLOAD:
        raise SigningError("payload of %d bytes is over %d" % (len(payload), MAX_PAYLOAD))
    head = (bytes([MAGIC, _byte_id(key_id, "key_id"), _byte_id(link_id, "link_id")])
            + counter.to_bytes(6, "little") + len(payload).to_bytes(2, "little"))
    body = head + bytes(payload)
    return body + hmac_sha256(key, body)[:TAG_BYTES]


def _finite(x):
    """True for a number (no text) that converts to a finite float."""
    if isinstance(x, (str, bytes, bytearray)):
        return False
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return False
    return v == v and v not in (float("inf"), float("-inf"))


class FrameSigner:
    """Signs a sender's frames with ``key`` as ``key_id`` on ``link_id``; counters strictly increase from
    ``counter`` (the last one used, e.g. restored from storage, or 0)."""

    def __init__(self, key, key_id=0, link_id=0, counter=0):
        self.key = check_key(key)
        self.key_id = _byte_id(key_id, "key_id")
        self.link_id = _byte_id(link_id, "link_id")
        self.counter = int(counter)

    def frame(self, payload, stamp=None):
        """The signed frame of ``payload``. ``stamp`` (optional, e.g. the sender's wall clock in 10 us units; a
        finite number, a fraction dropped): the counter becomes max(last + 1, stamp), so a sender that restarts
        without storage still goes up. SigningError for a stamp that is no finite number, and once the counter
        would pass COUNTER_MAX (the signer's counter is then unchanged)."""
        counter = self.counter + 1
        if stamp is not None:
            if isinstance(stamp, bool) or not (isinstance(stamp, int) or _finite(stamp)):
                raise SigningError("stamp must be a finite number, got %r" % (stamp,))
            if stamp > counter:
                counter = int(stamp)
        out = sign(self.key, self.key_id, self.link_id, counter, payload)
        self.counter = counter
        return out


def parse(frame):
    """(key_id, link_id, counter, payload, signed part, tag) of a whole frame, or None when it is not one
    (wrong magic, short, a length that does not match)."""
    if len(frame) < OVERHEAD_BYTES or frame[0] != MAGIC:
        return None
    length = frame[9] | (frame[10] << 8)
    if length > MAX_PAYLOAD or len(frame) != OVERHEAD_BYTES + length:
        return None
    end = HEADER_BYTES + length
    counter = int.from_bytes(bytes(frame[3:9]), "little")
    return frame[1], frame[2], counter, bytes(frame[HEADER_BYTES:end]), bytes(frame[:end]), bytes(frame[end:])


class FrameVerifier:
    """Accepts signed frames (``open``) and counts what it drops.

    ``keys``: {key_id: key bytes}. ``floor``: the counter mark saved before a reboot (frames at or below it
    are refused; 0 for a fresh link). ``persist(mark)``: None, or called with a new mark to save whenever an
    accepted counter passes the saved one (``reserve`` counter values ahead, an integer >= 0, see the module's
    doc); a ``persist`` that raises leaves the verifier as it was (the frame is not accepted; the exception
    reaches the caller). SigningError for a ``reserve`` that is no integer >= 0 (a negative one would save a
    mark below the accepted counter: the last frames would open again after a reboot)."""

    def __init__(self, keys, floor=0, persist=None, reserve=DEFAULT_RESERVE):
        if not keys:
            raise SigningError("a verifier needs at least one key")
        self.keys = {}
        for key_id in keys:
            self.keys[_byte_id(key_id, "key_id")] = check_key(keys[key_id])
        if isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0:
            raise SigningError("a verifier's reserve must be an integer >= 0, got %r" % (reserve,))
        self.floor = int(floor)
        self.persist = persist
        self.reserve = reserve
        self.saved_mark = self.floor
        self.last = {}                     # (key_id, link_id) -> last accepted counter
        self.counts = {}
        for name in COUNTERS:
            self.counts[name] = 0

    def open(self, frame):
        """The payload of an authentic, fresh frame, else None (counted; nothing else changes)."""
        parts = parse(frame)
        if parts is None:
            self.counts["malformed"] += 1
            return None
        key_id, link_id, counter, payload, signed, tag = parts
        key = self.keys.get(key_id)
        if key is None:
            self.counts["unknown_key"] += 1
            return None
        if not same_bytes(hmac_sha256(key, signed)[:TAG_BYTES], tag):
            self.counts["bad_tag"] += 1
            return None
        stream = (key_id, link_id)
        last = self.last.get(stream, self.floor)
        if counter <= last or counter <= self.floor:
            self.counts["replayed"] += 1
            return None
        if counter >= self.saved_mark:
            # saved before anything changes: a persist that raises leaves the frame unaccepted and the
            # mark in memory at the one saved, so the next fresh frame saves it again
            mark = min(counter + self.reserve, COUNTER_MAX)
            if self.persist is not None:
                self.persist(mark)
            self.saved_mark = mark
        self.last[stream] = counter
        self.counts["accepted"] += 1
        return payload

    def report(self):
        """Counters (COUNTERS) and the fingerprints of the provisioned keys (never the keys)."""
        out = dict(self.counts)
        out["keys"] = sorted(key_fingerprint(k) for k in self.keys.values())
        return out
