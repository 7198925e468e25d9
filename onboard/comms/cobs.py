"""Consistent Overhead Byte Stuffing (Cheshire & Baker, IEEE/ACM ToN 1999), as the AVR firmware's link frames
use it (firmware ``link_proto``, PROTOCOL.md): pure Python, MicroPython-compatible.

A frame on the wire is ``cobs_encode(payload) + b"\\x00"``; the encoding holds no 0x00, so the 0x00 ends the
frame and a receiver resynchronises at the next one. Written here because the codec is a dozen lines and the
firmware's C decoder is the reference it must match bit for bit (tests/firmware/test_link_protocol.py).
"""


def cobs_encode(data):
    """COBS-encode ``data`` (bytes); the result holds no 0x00 (the frame end is not added)."""
    out = bytearray()
    block = bytearray()
    for b in data:
        if b == 0:
            out.append(len(block) + 1)
            out.extend(block)
            block = bytearray()
        else:
            block.append(b)
            if len(block) == 254:
                out.append(255)
                out.extend(block)
                block = bytearray()
    out.append(len(block) + 1)
    out.extend(block)
    return bytes(out)


def cobs_decode(data):
    """Decode COBS ``data`` (no trailing 0x00). Returns bytes, or None when it is not valid COBS."""
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        code = data[i]
        if code == 0:
            return None
        end = i + code
        if end > n:
            return None
        block = data[i + 1:end]
        if 0 in block:
            return None
        out.extend(block)
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)
