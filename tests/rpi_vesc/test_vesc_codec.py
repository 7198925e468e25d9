"""VESC codec: published vectors, current GetValues layout, round trips, stream faults."""
import struct

import pytest
from hypothesis import given, strategies as st

from onboard.comms.crc import crc16_xmodem
from onboard.comms.vesc import codec


# ---------------------------------------------------------------- published byte vectors (issue 8)
@pytest.mark.parametrize("payload,expected", [
    (codec.set_duty(0.25), "02 05 05 00 00 61 a8 2f ae 03"),       # SetDutyCycle(25000)
    (codec.set_rpm(3000), "02 05 08 00 00 0b b8 f8 04 03"),        # SetRPM(3000)
    (codec.get_values(), "02 01 04 40 84 03"),                     # GetValues request
])
def test_published_vectors(payload, expected):
    assert codec.encode_frame(payload) == bytes.fromhex(expected.replace(" ", ""))


def test_command_scales():
    assert codec.set_current(-2.5) == bytes([6]) + struct.pack(">i", -2500)
    assert codec.set_current_brake(3.0) == bytes([7]) + struct.pack(">i", 3000)
    assert codec.alive() == bytes([30])
    assert codec.forward_can(2, codec.set_rpm(-100)) == bytes([34, 2, 8]) + struct.pack(">i", -100)
    assert codec.decode_command(codec.set_duty(-0.5)) == (codec.COMM_SET_DUTY, -0.5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "x", None])
def test_non_finite_commands_rejected(bad):
    with pytest.raises(codec.VescEncodeError):
        codec.set_rpm(bad)


def test_out_of_range_commands_rejected():
    with pytest.raises(codec.VescEncodeError):
        codec.set_duty(1.5)
    with pytest.raises(codec.VescEncodeError):
        codec.set_rpm(3e9)
    with pytest.raises(codec.VescEncodeError):
        codec.set_current_brake(-1.0)
    with pytest.raises(codec.VescEncodeError):
        codec.forward_can(300, b"\x04")
    with pytest.raises(codec.VescEncodeError):
        codec.encode_frame(b"")
    with pytest.raises(codec.VescEncodeError):
        codec.encode_frame(bytes(codec.MAX_PAYLOAD + 1))


# ---------------------------------------------------------------- GetValues, current layout
def _current_layout_reply():
    """A FW 5.x/6.x GetValues reply written field by field from commands.c, not by our encoder."""
    b = bytes([4])
    b += struct.pack(">h", 452)            # temp_fet 45.2 C          float16 x10
    b += struct.pack(">h", 613)            # temp_motor 61.3 C        float16 x10
    b += struct.pack(">i", 1234)           # avg_motor_current 12.34 A float32 x100
    b += struct.pack(">i", -567)           # avg_input_current -5.67 A
    b += struct.pack(">i", 12)             # avg_id 0.12 A
    b += struct.pack(">i", 1230)           # avg_iq 12.30 A
    b += struct.pack(">h", -456)           # duty -0.456              float16 x1000
    b += struct.pack(">i", -12345)         # rpm -12345 erpm          float32 x1
    b += struct.pack(">h", 251)            # v_in 25.1 V              float16 x10
    b += struct.pack(">i", 15000)          # amp_hours 1.5 Ah         float32 x1e4
    b += struct.pack(">i", 2500)           # amp_hours_charged 0.25 Ah
    b += struct.pack(">i", 360000)         # watt_hours 36 Wh
    b += struct.pack(">i", 10000)          # watt_hours_charged 1 Wh
    b += struct.pack(">i", -987654)        # tachometer
    b += struct.pack(">i", 987654)         # tachometer_abs
    b += bytes([5])                        # fault code OVER_TEMP_FET
    b += struct.pack(">i", 90500000)       # pid_pos 90.5 deg         float32 x1e6
    b += bytes([7])                        # controller id
    b += struct.pack(">hhh", 450, 451, 452)  # temp mos 1..3
    b += struct.pack(">i", 1500)           # avg_vd 1.5 V             float32 x1e3
    b += struct.pack(">i", -2500)          # avg_vq -2.5 V
    b += bytes([1])                        # status: timeout fired
    return b


def test_decode_current_layout_frame():
    frame = codec.encode_frame(_current_layout_reply())
    dec = codec.FrameDecoder()
    [payload] = dec.feed(frame)
    v = codec.decode_values(payload)
    assert v.temp_fet_degc == pytest.approx(45.2)
    assert v.temp_motor_degc == pytest.approx(61.3)
    assert v.avg_motor_current_a == pytest.approx(12.34)
    assert v.avg_input_current_a == pytest.approx(-5.67)
    assert v.avg_id_a == pytest.approx(0.12)
    assert v.avg_iq_a == pytest.approx(12.30)
    assert v.duty == pytest.approx(-0.456)
    assert v.rpm_erpm == -12345.0
    assert v.v_in_v == pytest.approx(25.1)
    assert v.amp_hours_ah == pytest.approx(1.5)
    assert v.amp_hours_charged_ah == pytest.approx(0.25)
    assert v.watt_hours_wh == pytest.approx(36.0)
    assert v.watt_hours_charged_wh == pytest.approx(1.0)
    assert v.tachometer_ticks == -987654 and v.tachometer_abs_ticks == 987654
    assert v.fault_code == codec.FAULT_OVER_TEMP_FET and codec.fault_name(v.fault_code) == "OVER_TEMP_FET"
    assert v.pid_pos_deg == pytest.approx(90.5)
    assert v.controller_id == 7
    assert (v.temp_mos1_degc, v.temp_mos2_degc, v.temp_mos3_degc) == pytest.approx((45.0, 45.1, 45.2))
    assert v.avg_vd_v == pytest.approx(1.5) and v.avg_vq_v == pytest.approx(-2.5)
    assert v.status == codec.STATUS_TIMEOUT
    assert v.extra_bytes == 0
    assert len(payload) == 74


def test_decode_older_firmware_and_newer_extra_bytes():
    full = _current_layout_reply()
    upto_fault = full[:1 + 2 + 2 + 4 * 4 + 2 + 4 + 2 + 4 * 4 + 4 * 2 + 1]
    v = codec.decode_values(upto_fault)
    assert v.fault_code == 5 and v.controller_id is None and v.status is None
    v = codec.decode_values(full + b"\x01\x02")
    assert v.extra_bytes == 2 and v.status == 1


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_decode_short_or_cut_reply_raises(cut):
    with pytest.raises(codec.VescDecodeError):
        codec.decode_values(_current_layout_reply()[:cut])
    with pytest.raises(codec.VescDecodeError):
        codec.decode_values(_current_layout_reply()[:60])   # ends inside a temp_mos field


def test_decode_rejects_other_payloads():
    with pytest.raises(codec.VescDecodeError):
        codec.decode_values(b"")
    with pytest.raises(codec.VescDecodeError):
        codec.decode_values(codec.set_rpm(5))


def test_selective_reply_roundtrip():
    mask = (1 << 7) | (1 << 15) | (1 << 17)
    v = codec.VescValues(rpm_erpm=-4200.0, fault_code=2, controller_id=3)
    payload = codec.encode_values(v, mask=mask)
    assert len(payload) == 1 + 4 + 4 + 1 + 1
    out = codec.decode_values(payload)
    assert (out.rpm_erpm, out.fault_code, out.controller_id) == (-4200.0, 2, 3)
    assert out.temp_fet_degc is None


# ---------------------------------------------------------------- header boundaries (vedderb/bldc comm/packet.c)
def _frame_with_header(header, payload):
    """A frame built byte by byte around ``payload`` with the given header (not by our encoder)."""
    crc = crc16_xmodem(payload)
    return bytes(header) + payload + bytes((crc >> 8, crc & 0xFF, 3))


def _boundary_payload(n):
    # no byte 2 or 3 inside, so a refused frame cannot resynchronise on its own payload
    return bytes(0x10 + (k * 37) % 0xF0 for k in range(n))


@pytest.mark.parametrize("n,expected_header", [(254, b"\x02\xfe"), (255, b"\x02\xff"), (256, b"\x03\x01\x00")])
def test_encoder_header_at_length_boundary(n, expected_header):
    # packet_send_packet: short header while len <= 255, the 16-bit one from 256 on
    payload = _boundary_payload(n)
    assert codec.encode_frame(payload) == _frame_with_header(expected_header, payload)


@pytest.mark.parametrize("n,header,accepted", [
    (254, b"\x02\xfe", True),
    (255, b"\x02\xff", True),
    (254, b"\x03\x00\xfe", False),       # try_decode_packet: 16-bit length < 255 is refused
    (255, b"\x03\x00\xff", True),        # ... but exactly 255 is accepted
    (256, b"\x03\x01\x00", True),
])
def test_decoder_header_at_length_boundary(n, header, accepted):
    payload = _boundary_payload(n)
    after = codec.encode_frame(codec.alive())
    stream = _frame_with_header(header, payload) + after
    for step in (len(stream), 1):           # whole, and one byte at a time
        dec = codec.FrameDecoder()
        out = []
        for pos in range(0, len(stream), step):
            out.extend(dec.feed(stream[pos:pos + step]))
        if accepted:
            assert out == [payload, codec.alive()]
            assert dec.skipped_bytes == 0 and dec.framing_errors == 0
        else:
            assert out == [codec.alive()]
            assert dec.framing_errors >= 1
        assert dec.pending == 0


def test_decoder_refuses_short_header_of_length_zero():
    # a 256-byte payload cannot be sent with the 1-byte length (256 & 0xFF == 0): zero length is refused
    payload = _boundary_payload(256)
    dec = codec.FrameDecoder()
    assert dec.feed(_frame_with_header(b"\x02\x00", payload) + codec.encode_frame(codec.alive())) == [codec.alive()]
    assert dec.framing_errors >= 1 and dec.pending == 0


# ---------------------------------------------------------------- properties
@given(st.binary(min_size=1, max_size=codec.MAX_PAYLOAD))
def test_frame_roundtrip(payload):
    frame = codec.encode_frame(payload)
    assert frame[0] == (2 if len(payload) <= 255 else 3)
    assert frame[-1] == 3
    dec = codec.FrameDecoder()
    assert dec.feed(frame) == [payload]
    assert dec.pending == 0 and dec.skipped_bytes == 0


@given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=5),
       st.lists(st.integers(1, 40), min_size=1, max_size=20))
def test_stream_split_anywhere(payloads, cuts):
    stream = b"".join(codec.encode_frame(p) for p in payloads)
    dec = codec.FrameDecoder()
    out, pos, k = [], 0, 0
    while pos < len(stream):
        step = cuts[k % len(cuts)]
        out.extend(dec.feed(stream[pos:pos + step]))
        pos += step
        k += 1
    assert out == payloads
    assert dec.skipped_bytes == 0


_FIELD_VALUES = {
    "h": st.integers(-32768, 32767), "i": st.integers(-2 ** 31, 2 ** 31 - 1), "B": st.integers(0, 255)}


@given(st.fixed_dictionaries({row[1]: _FIELD_VALUES[row[2]] for row in codec.GET_VALUES_LAYOUT}))
def test_get_values_roundtrip_exact_on_raw_grid(raw):
    fields = {}
    for _bit, name, _code, scale in codec.GET_VALUES_LAYOUT:
        fields[name] = raw[name] if scale is None else raw[name] / scale
    payload = codec.encode_values(codec.VescValues(**fields))
    again = codec.encode_values(codec.decode_values(payload))
    assert again == payload
    out = codec.decode_values(payload)
    for _bit, name, _code, scale in codec.GET_VALUES_LAYOUT:
        if scale is None:
            assert getattr(out, name) == raw[name]
        else:
            assert getattr(out, name) == pytest.approx(raw[name] / scale, abs=1.0 / scale)


@given(st.floats(-1.0, 1.0, allow_nan=False))
def test_duty_roundtrip(duty):
    cmd, value = codec.decode_command(codec.set_duty(duty))
    assert cmd == codec.COMM_SET_DUTY and abs(value - duty) < 1e-5


@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_rpm_roundtrip(erpm):
    cmd, value = codec.decode_command(codec.set_rpm(erpm))
    assert cmd == codec.COMM_SET_RPM and abs(value - erpm) <= 0.5


# ---------------------------------------------------------------- stream faults
def test_leading_garbage_skipped_and_counted():
    garbage = bytes([0x55, 0xAA, 0x02, 0xC8, 0x00, 0x03, 0xFF])     # includes a false start byte
    dec = codec.FrameDecoder()
    out = dec.feed(garbage + codec.encode_frame(codec.set_rpm(1)))
    assert out == [codec.set_rpm(1)]
    assert dec.skipped_bytes == len(garbage)
    assert dec.pending == 0


def test_bad_crc_skipped_counted_next_frame_kept():
    bad = bytearray(codec.encode_frame(codec.set_rpm(1000)))
    bad[-2] ^= 0xFF
    dec = codec.FrameDecoder()
    out = dec.feed(bytes(bad) + codec.encode_frame(codec.alive()))
    assert out == [codec.alive()]
    assert dec.crc_errors == 1
    assert dec.skipped_bytes == len(bad)


def test_bad_end_byte_counted():
    bad = bytearray(codec.encode_frame(codec.set_rpm(1000)))
    bad[-1] = 0x00
    dec = codec.FrameDecoder()
    assert dec.feed(bytes(bad) + codec.encode_frame(codec.get_values())) == [codec.get_values()]
    assert dec.framing_errors >= 1


def test_truncated_frame_followed_by_good_frame():
    cut = codec.encode_frame(codec.set_rpm(1000))[:6]
    good = codec.encode_frame(codec.set_current(0.0))
    dec = codec.FrameDecoder()
    assert dec.feed(cut) == []
    assert dec.pending == 6
    assert dec.feed(good) == [codec.set_current(0.0)]
    assert dec.truncated == 1 and dec.skipped_bytes == 6 and dec.pending == 0


def test_partial_frame_discarded_on_reset():
    dec = codec.FrameDecoder()
    dec.feed(codec.encode_frame(codec.get_values())[:3])
    dec.discard_pending()
    assert dec.truncated == 1 and dec.pending == 0
    assert dec.feed(codec.encode_frame(codec.get_values())) == [codec.get_values()]


@given(st.binary(max_size=200), st.binary(min_size=1, max_size=100))
def test_random_garbage_never_corrupts_the_next_frame(garbage, payload):
    dec = codec.FrameDecoder()
    tail = codec.encode_frame(payload) + codec.encode_frame(codec.alive()) * 2
    out = dec.feed(garbage + tail)
    # garbage can at worst hide frames it overlaps; the last two alive frames always decode
    assert out[-2:] == [codec.alive(), codec.alive()]
    assert all(isinstance(p, bytes) for p in out)
