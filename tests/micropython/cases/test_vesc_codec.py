"""VESC codec (onboard.comms.vesc.codec) in CPython and real MicroPython: same bytes, same values."""
import struct

from onboard.comms.vesc import codec


def _hex(b):
    return "".join("%02x" % x for x in b)


def test_published_vectors():
    assert _hex(codec.encode_frame(codec.set_duty(0.25))) == "020505000061a82fae03"
    assert _hex(codec.encode_frame(codec.set_rpm(3000))) == "020508000 00bb8f80403".replace(" ", "")
    assert _hex(codec.encode_frame(codec.get_values())) == "0201044084" + "03"


def _reply():
    b = bytes([4]) + struct.pack(">hhiiiihihiiiiiiB", 452, 613, 1234, -567, 12, 1230, -456, -12345,
                                 251, 15000, 2500, 360000, 10000, -987654, 987654, 5)
    return b + struct.pack(">iBhhhiiB", 90500000, 7, 450, 451, 452, 1500, -2500, 1)


def test_decode_with_garbage_and_bad_crc():
    good = codec.encode_frame(_reply())
    bad = bytearray(codec.encode_frame(codec.set_rpm(5)))
    bad[3] ^= 0x10
    dec = codec.FrameDecoder()
    out = dec.feed(b"\x00\x55\x99" + bytes(bad) + good[:20])
    out += dec.feed(good[20:])
    assert len(out) == 1
    assert dec.crc_errors == 1
    assert dec.skipped_bytes == 3 + len(bad)
    v = codec.decode_values(out[0])
    assert v.rpm_erpm == -12345.0 and v.controller_id == 7 and v.fault_code == 5


def golden_decoded_values():
    v = codec.decode_values(_reply())
    return [v.temp_fet_degc, v.temp_motor_degc, v.avg_motor_current_a, v.avg_input_current_a,
            v.duty, v.rpm_erpm, v.v_in_v, v.amp_hours_ah, v.watt_hours_wh, v.tachometer_ticks,
            v.fault_code, v.pid_pos_deg, v.controller_id, v.avg_vd_v, v.avg_vq_v, v.status]


def golden_frame_bytes():
    out = []
    for p in (codec.set_current(-12.5), codec.set_current_brake(4.0), codec.forward_can(2, codec.get_values()),
              codec.encode_values(codec.decode_values(_reply()))):
        out.extend(codec.encode_frame(p))
    return out
