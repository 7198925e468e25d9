"""The host side of the AVR link's signed commands: the key, and the counter every command carries.

:class:`CommandSigner` makes the signature trailer (``protocol.sign_trailer``: key id, 48-bit counter,
SipHash-2-4 tag) of each command the driver sends. Its counter strictly increases and follows a stamp of
10 us units of the host's wall clock (as MAVLink 2 signing does): ``counter = max(last + 1, stamp)``
with ``stamp = stamp_base + now_us // 10``. The firmware keeps the last accepted counter's mark
``reserve`` ahead in EEPROM (2 s of these stamps), so

- a host that restarts without storage starts above what the firmware accepted before (its wall clock
  went on);
- after the firmware reboots, the host's commands are refused until its stamp passes the saved mark
  (at most 2 s), and a recorded old frame is never accepted.

Nothing here reads a clock: the caller passes ``stamp_base`` (``stamp_base_10us(unix_time_us, now_us)``
from its wall clock once at start-up) and ``now_us`` per command. Keys are 16 bytes, read from a key
file of 32 hex digits (the file the firmware was built with, ``make KEY=file``); a key is never logged
or printed (``fingerprint`` names it).
"""
from boards.arduino import protocol as P
from onboard.comms.signed_frame import SigningError, key_fingerprint

STAMP_US = 10                 # one counter step of the stamp


def key_from_hex(text):
    """The 16-byte link key written as 32 hex digits (whitespace ignored); SigningError when malformed."""
    text = "".join(str(text).split())
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise SigningError("an AVR link key must be 32 hex digits (128 bits)")
    if len(key) != P.KEY_LEN:
        raise SigningError("an AVR link key must be 32 hex digits (128 bits), got %d digits" % len(text))
    return key


def read_key_file(path):
    """The key in ``path`` (32 hex digits); SigningError naming the file (never its content)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        raise SigningError("cannot read the AVR link key file %s: %s" % (path, exc.strerror or exc))
    try:
        return key_from_hex(text)
    except SigningError as exc:
        raise SigningError("%s: %s" % (path, exc))


def stamp_base_10us(unix_time_us, now_us):
    """The stamp base that makes ``stamp_base + now_us // 10`` the wall clock in 10 us units."""
    return int(unix_time_us) // STAMP_US - int(now_us) // STAMP_US


class CommandSigner:
    """Signs commands with ``key`` as ``key_id``. ``counter``: the last counter used (0: none);
    ``stamp_base``: see :func:`stamp_base_10us` (None: the counter only counts up by one)."""

    def __init__(self, key, key_id=0, stamp_base=None, counter=0):
        self.key = bytes(key)
        if len(self.key) != P.KEY_LEN:
            raise SigningError("an AVR link key has %d bytes, got %d" % (P.KEY_LEN, len(self.key)))
        if not isinstance(key_id, int) or not 0 <= key_id <= 255:
            raise SigningError("key_id must be 0..255, got %r" % (key_id,))
        self.key_id = key_id
        self.stamp_base = stamp_base
        self.counter = int(counter)
        self.signed = 0

    def next_counter(self, now_us=None):
        counter = self.counter + 1
        if self.stamp_base is not None and now_us is not None:
            stamp = self.stamp_base + int(now_us) // STAMP_US
            if stamp > counter:
                counter = stamp
        if counter > P.SIG_COUNTER_MAX:
            raise SigningError("the 48-bit command counter is exhausted")
        return counter

    def trailer(self, msg_type, seq, body, now_us=None):
        """The signature trailer of one command (the counter is used up)."""
        counter = self.next_counter(now_us)
        out = P.sign_trailer(self.key, self.key_id, counter, msg_type, seq, body)
        self.counter = counter
        self.signed += 1
        return out

    def fingerprint(self):
        return key_fingerprint(self.key)

    def __repr__(self):
        return "CommandSigner(key=%s, key_id=%d, counter=%d)" % (self.fingerprint(), self.key_id, self.counter)
