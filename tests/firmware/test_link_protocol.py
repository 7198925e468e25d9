"""Robot link framing: the Python codec (boards/arduino/protocol.py) against the firmware's C
(link_protocol.c built for the host), and a fuzz of the host decoder."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from boards.arduino import protocol as P
from onboard.comms.crc import crc16_ccitt_false

bodies = st.binary(max_size=P.MAX_BODY)
msg_types = st.integers(0, 255)
seqs = st.integers(0, 255)


# ------------------------------------------------------------------ known values
def test_crc_check_value_python_and_c(clink):
    assert crc16_ccitt_false(b"123456789") == 0x29B1
    assert clink.crc16(b"123456789") == 0x29B1


@pytest.mark.parametrize("raw, encoded", [
    (b"\x00", b"\x01\x01"),
    (b"\x00\x00", b"\x01\x01\x01"),
    (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
    (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
    (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
    (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255)) + b"\x01"),
])
def test_cobs_reference_vectors(raw, encoded, clink):
    assert P.cobs_encode(raw) == encoded
    assert P.cobs_decode(encoded) == raw
    assert clink.cobs_decode(encoded) == raw


def test_frame_layout():
    frame = P.encode_frame(P.MSG_WHEEL_SPEED, 7, P.wheel_speed_body(1000, -1000))
    assert frame.endswith(b"\x00") and b"\x00" not in frame[:-1]
    raw = P.cobs_decode(frame[:-1])
    assert raw[:2] == bytes((P.MSG_WHEEL_SPEED, 7))
    assert raw[2:6] == b"\xe8\x03\x18\xfc"                     # little-endian int16 body
    crc = crc16_ccitt_false(raw[:-2])
    assert raw[-2:] == bytes((crc >> 8, crc & 0xFF))            # big-endian CRC
    assert len(frame) <= P.MAX_ENCODED + 1


def test_encode_rejects_bad_input():
    with pytest.raises(P.ProtocolError):
        P.encode_frame(1, 0, bytes(P.MAX_BODY + 1))
    with pytest.raises(P.ProtocolError):
        P.encode_frame(256, 0)
    with pytest.raises(P.ProtocolError):
        P.wheel_speed_body(40000, 0)


# ------------------------------------------------------------------ Python == C
@settings(max_examples=300)
@given(msg_type=msg_types, seq=seqs, body=bodies)
def test_encode_frame_python_equals_c(msg_type, seq, body, clink):
    assert P.encode_frame(msg_type, seq, body) == clink.encode_frame(msg_type, seq, body)


@settings(max_examples=300)
@given(data=st.binary(max_size=600))
def test_cobs_roundtrip_and_c_decoder(data, clink):
    enc = P.cobs_encode(data)
    assert 0 not in enc
    assert P.cobs_decode(enc) == data
    assert clink.cobs_decode(enc) == data


@settings(max_examples=300)
@given(data=st.binary(max_size=120))
def test_cobs_decode_arbitrary_python_equals_c(data, clink):
    data = data.replace(b"\x00", b"")
    assert P.cobs_decode(data) == clink.cobs_decode(data)


def _stream(rng):
    """Random bytes, with valid and damaged frames mixed in, of random lengths."""
    parts = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.3:
            parts.append(rng.randbytes(rng.randint(0, 70)))
        elif kind < 0.55:
            parts.append(P.encode_frame(rng.randint(0, 255), rng.randint(0, 255),
                                        rng.randbytes(rng.randint(0, P.MAX_BODY))))
        elif kind < 0.75:                                        # truncated frame
            f = P.encode_frame(rng.randint(0, 255), 0, rng.randbytes(rng.randint(0, 20)))
            parts.append(f[:rng.randint(0, len(f) - 1)] + b"\x00")
        elif kind < 0.9:                                         # one byte changed
            f = bytearray(P.encode_frame(rng.randint(0, 255), 1, rng.randbytes(rng.randint(0, 20))))
            f[rng.randrange(len(f))] = rng.randint(0, 255)
            parts.append(bytes(f))
        else:
            parts.append(b"\x00" * rng.randint(1, 3))
    return b"".join(parts)


@settings(max_examples=150)
@given(seed=st.integers(0, 2 ** 63))
def test_c_decoder_equals_python_decoder(seed, clink):
    """The firmware's decoder and the host's accept the same frames and count the same errors."""
    rng = random.Random(seed)
    data = b"".join(_stream(rng) for _ in range(4))
    c_frames, c_counters = clink.decode_stream(data)
    dec = P.FrameDecoder()
    frames = []
    # feed in random chunks: chunking must not matter
    i = 0
    while i < len(data):
        n = rng.randint(1, 40)
        frames += dec.feed(data[i:i + n])
        i += n
    assert [bytes((f.msg_type, f.seq)) + f.body for f in frames] == c_frames
    py = dec.counters()
    del py["bytes_in"]
    assert py == c_counters


# ------------------------------------------------------------------ fuzz: 10^5 streams
STREAMS_PER_EXAMPLE = 500
FUZZ_EXAMPLES = 200          # 200 x 500 = 10^5 streams


@settings(max_examples=FUZZ_EXAMPLES)
@given(st.integers(0, 2 ** 63))
def test_host_decoder_fuzz_no_exception_no_false_accept(seed):
    """10^5 random streams: no exception escapes, every 0x00 yields exactly one outcome
    (frame or counted error), and every accepted frame is byte for byte a valid encoding
    that was present in the stream between two delimiters (no false accept)."""
    rng = random.Random(seed)
    for _ in range(STREAMS_PER_EXAMPLE):
        data = _stream(rng) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 90))
        dec = P.FrameDecoder()
        frames = dec.feed(data)
        segments = set(data.split(b"\x00")[:-1])
        for f in frames:
            enc = P.encode_frame(f.msg_type, f.seq, f.body)
            assert enc[:-1] in segments
            try:
                P.decode_message(f)
            except P.ProtocolError:
                pass                   # well-formed frame, invalid content: rejected cleanly
        # each delimited segment has exactly one outcome; over-long ones are 'oversize'
        pieces = data.split(b"\x00")
        long_ones = sum(1 for p in pieces if len(p) > P.MAX_ENCODED)
        short_delimited = sum(1 for p in pieces[:-1] if len(p) <= P.MAX_ENCODED)
        assert dec.frames_ok + dec.crc_errors + dec.cobs_errors + dec.empty == short_delimited
        assert dec.oversize == long_ones
        assert dec.frames_ok == len(frames)


@settings(max_examples=300)
@given(msg_types, seqs, bodies, st.data())
def test_corrupted_frames_never_accepted(msg_type, seq, body, data):
    """CRC-16/CCITT detects every 1-3 bit error and every burst up to 16 bits in a frame of
    this size: a damaged frame is never accepted, and the next valid frame is (resync)."""
    raw = bytearray(bytes((msg_type, seq)) + body)
    crc = crc16_ccitt_false(raw)
    raw += bytes((crc >> 8, crc & 0xFF))
    nbits = len(raw) * 8
    if data.draw(st.booleans()):
        flips = data.draw(st.sets(st.integers(0, nbits - 1), min_size=1, max_size=3))
    else:
        start = data.draw(st.integers(0, nbits - 1))
        length = data.draw(st.integers(1, 16))
        pattern = data.draw(st.integers(1, (1 << length) - 1)) | 1 | (1 << (length - 1))
        flips = {start + k for k in range(length) if pattern >> k & 1 and start + k < nbits}
    for bit in flips:
        raw[bit // 8] ^= 0x80 >> (bit % 8)
    damaged = P.cobs_encode(bytes(raw)) + b"\x00"
    good = P.encode_frame(P.MSG_PING, 9, b"abcd")
    dec = P.FrameDecoder()
    frames = dec.feed(damaged + good)
    assert len(frames) == 1 and frames[0].seq == 9 and frames[0].body == b"abcd"
    assert dec.crc_errors + dec.cobs_errors == 1


def test_oversize_frame_dropped_then_resync():
    dec = P.FrameDecoder()
    good = P.encode_frame(P.MSG_STOP, 3)
    frames = dec.feed(b"\x55" * (P.MAX_ENCODED + 1) + b"\x00" + good)
    assert dec.oversize == 1 and len(frames) == 1 and frames[0].seq == 3
    # exactly MAX_ENCODED bytes is still a candidate frame (then fails COBS/CRC), not oversize
    dec = P.FrameDecoder()
    dec.feed(b"\x55" * P.MAX_ENCODED + b"\x00")
    assert dec.oversize == 0 and dec.cobs_errors + dec.crc_errors == 1


def test_decode_message_rejects_unknown_type_and_bad_length():
    with pytest.raises(P.ProtocolError):
        P.decode_message(P.Frame(0x7E, 0, b""))
    with pytest.raises(P.ProtocolError):
        P.decode_message(P.Frame(P.MSG_TELEMETRY, 0, bytes(30)))
    m = P.decode_message(P.Frame(P.MSG_PONG, 4, bytes(range(8))))
    assert m.name == "Pong" and m.token == 0x03020100 and m.fw_t_us == 0x07060504
