"""SipHash-2-4: a 64-bit MAC with a 128-bit key (pure, MicroPython-compatible).

Aumasson & Bernstein, "SipHash: a fast short-input PRF" (2012), section 2: the key k = k0 | k1 (two
64-bit little-endian words) initialises four words

    v0 = k0 ^ 0x736f6d6570736575   v1 = k1 ^ 0x646f72616e646f6d
    v2 = k0 ^ 0x6c7967656e657261   v3 = k1 ^ 0x7465646279746573

the message is cut into 64-bit little-endian words m_i, the last one padded with zeros and holding
len(m) mod 256 in its top byte; each m_i is absorbed as v3 ^= m_i, c = 2 SipRounds, v0 ^= m_i; then
v2 ^= 0xff, d = 4 SipRounds, and the tag is v0 ^ v1 ^ v2 ^ v3, sent as 8 little-endian bytes.
A SipRound (the paper's Fig. 2.1) is four add-rotate-xor steps on the words.

Why it is written here: the AVR robot link (firmware/arduino/robot_link/siphash.c, the same algorithm
in C) needs a MAC that an 8-bit MCU computes in well under a millisecond; the host that signs its
commands and the MicroPython boards need the identical function, and there is no maintained SipHash
package for MicroPython (CPython's own SipHash is internal to ``hash()`` and not keyed by the caller).
Checked against the reference implementation's 64 test vectors (key 00..0f, messages of 0..63 bytes
00 01 02 ...) in tests/firmware/test_avr_signing.py, in Python and in the C build for the host.
"""

MASK64 = (1 << 64) - 1
KEY_BYTES = 16
TAG_BYTES = 8


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK64


def _round(v0, v1, v2, v3):
    """One SipRound (paper section 2, Fig. 2.1)."""
    v0 = (v0 + v1) & MASK64
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & MASK64
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & MASK64
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & MASK64
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def _le64(data, i):
    x = 0
    for k in range(7, -1, -1):
        x = (x << 8) | data[i + k]
    return x


def siphash24(key, msg):
    """SipHash-2-4 of ``msg`` (bytes) under the 16-byte ``key``: the 8-byte tag (little-endian). ValueError for
    a key that is not 16 bytes, and for a key or message given as text or as an integer (``bytes(5)`` would MAC
    five zero bytes)."""
    for value, what in ((key, "key"), (msg, "message")):
        if isinstance(value, (str, int, bool)):      # (a bool is no int in MicroPython)
            raise ValueError("SipHash %s must be bytes, got %s" % (what, type(value).__name__))
    if len(key) != KEY_BYTES:
        raise ValueError("SipHash needs a 16-byte key, got %d bytes" % len(key))
    msg = bytes(msg)
    k0 = _le64(key, 0)
    k1 = _le64(key, 8)
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(msg)
    end = n - (n % 8)
    for i in range(0, end, 8):
        m = _le64(msg, i)
        v3 ^= m
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
        v0 ^= m
    last = (n & 0xFF) << 56
    for k in range(n - end):
        last |= msg[end + k] << (8 * k)
    v3 ^= last
    v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    tag = v0 ^ v1 ^ v2 ^ v3
    return bytes([(tag >> (8 * k)) & 0xFF for k in range(8)])
