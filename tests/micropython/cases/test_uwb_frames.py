"""UWB frame codec and DW1000 timestamp arithmetic: CPython (pytest) and MicroPython tier."""
from onboard.comms.uwb import frames as F
from onboard.comms.uwb import timestamps as T

W = T.WRAP_TICKS


def _raises_frame_error(data):
    try:
        F.decode(data)
    except F.FrameError as exc:
        return exc.kind
    raise AssertionError("decoded garbage %r" % (data,))


def _samples():
    return [
        F.make(F.POLL, 1, 2, 7, 3, (0.25, -1.5)),
        F.make(F.RESPONSE, 2, 1, 7, 3, (0.0, 0.0)),
        F.make(F.RESPONSE, 2, 1, 7, 3, (0.0, 0.0), ts=(W - 1, 12345)),
        F.make(F.FINAL, 1, 2, 7, 3, (0.1, 0.2), ts=(1, W - 2, 1 << 39)),
        F.make(F.REPORT, 2, 1, 7, 3, (0.1, 0.2), ts=(5, 6, 7)),
        F.make(F.TOKEN, 1, 4, 9, 200, (0.0, 0.0), pass_no=65535, members=0x80000013),
        F.make(F.DISCOVER, 0, 255, 1, 1, (0.0, 0.0), invite_first=8, invite_count=8, join_slot_us=400,
               members=0x7),
        F.make(F.JOIN, 9, 0, 1, 1, (0.0, 0.0)),
        F.make(F.BCAST, 3, 255, 250, 0, (-0.5, 0.75), tx_prev=W - 7, entries=[(1, 4, 99), (2, 255, W - 1)]),
        F.make(F.BCAST, 3, 255, 0, 0, (0.0, 0.0), tx_prev=F.NO_TIMESTAMP, entries=[]),
    ]


def test_round_trip_every_type():
    for f in _samples():
        data = f.encode()
        g = F.decode(bytearray(data))       # not the memoised object
        assert (g.type, g.src, g.dst, g.seq, g.epoch) == (f.type, f.src, f.dst, f.seq, f.epoch)
        assert abs(g.vel_mps[0] - f.vel_mps[0]) < 1e-9 and abs(g.vel_mps[1] - f.vel_mps[1]) < 1e-9
        assert g.ts == tuple(f.ts)
        assert (g.pass_no, g.members, g.invite_first, g.join_slot_us) == (f.pass_no, f.members, f.invite_first,
                                                                         f.join_slot_us)
        assert g.tx_prev == f.tx_prev
        assert g.entries() == f.entries()
        assert g.encode() == data


def test_bcast_entry_lookup():
    f = F.decode(_samples()[8].encode())
    assert f.entry_for(2) == (255, W - 1)
    assert f.entry_for(1) == (4, 99)
    assert f.entry_for(9) is None


def test_corrupt_truncated_and_malformed_frames_raise_frame_error():
    good = _samples()[3].encode()
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x10
        assert _raises_frame_error(bytes(bad)) in ("crc",)
    for n in range(len(good)):
        kind = _raises_frame_error(good[:n])
        assert kind in ("short", "crc", "length")
    assert _raises_frame_error(b"") == "short"
    assert _raises_frame_error(None) == "type"
    assert _raises_frame_error(bytes(2000)) == "long"
    # valid CRC but wrong version / type / length
    from onboard.comms.crc import crc16_ccitt_false
    for body, kind in ((bytes([0x21, 1, 2, 3, 0, 0, 0, 0, 0]), "version"),
                       (bytes([0x1F, 1, 2, 3, 0, 0, 0, 0, 0]), "type"),
                       (bytes([0x13, 1, 2, 3, 0, 0, 0, 0, 0, 1, 2]), "length"),
                       (bytes([0x11, 255, 2, 3, 0, 0, 0, 0, 0]), "field")):
        c = crc16_ccitt_false(body)
        assert _raises_frame_error(body + bytes([c >> 8, c & 0xFF])) == kind


def test_random_bytes_never_raise_anything_but_frame_error():
    x = 12345
    for n in range(300):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        length = x % 40
        buf = bytearray()
        for _ in range(length):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            buf.append((x >> 16) & 0xFF)
        try:
            F.decode(bytes(buf))
        except F.FrameError:
            pass


def test_encode_rejects_bad_fields():
    for f in (F.make(F.POLL, 1, 2, 300), F.make(F.POLL, 255, 2, 1), F.make(F.FINAL, 1, 2, 1, ts=(1, 2)),
              F.make(F.FINAL, 1, 2, 1, ts=(1, 2, W)), F.make(F.POLL, 1, 2, 1, 0, (float("nan"), 0.0))):
        try:
            f.encode()
        except F.FrameError:
            continue
        raise AssertionError("encoded %r" % (f,))
    # velocities beyond int16 mm/s saturate instead of wrapping
    g = F.decode(F.make(F.POLL, 1, 2, 1, 0, (100.0, -100.0)).encode())
    assert g.vel_mps == (32.767, -32.767)


def test_wrap_around_arithmetic():
    assert T.diff_ticks(5, W - 5) == 10
    assert T.interval_ticks(5, W - 5) == 10
    for later, earlier in ((5, 5), (W - 5, 5)):
        try:
            T.interval_ticks(later, earlier)
        except T.TimestampError:
            continue
        raise AssertionError("accepted out-of-order timestamps")
    assert T.delayed_tx_time(W - 10, 1000) == (990 & T.DELAYED_TX_MASK)
    assert T.delayed_tx_timestamp(0x3FF, 16436) == 0x200 + 16436


def _ideal_ds(tof, t0, reply1, reply2, wrap_at=0):
    """Six DS-TWR timestamps for an ideal exchange starting at t0 (ticks), both clocks equal."""
    tx_poll = t0
    rx_poll = t0 + tof
    tx_resp = rx_poll + reply1
    rx_resp = tx_resp + tof
    tx_final = rx_resp + reply2
    rx_final = tx_final + tof
    return [v % W for v in (tx_poll, rx_resp, tx_final, rx_poll, tx_resp, rx_final)]


def test_ds_twr_exact_across_the_wrap():
    tof = 640          # ~3 m
    for t0 in (0, W - 1000, W - 64000000, 123456789):
        r = T.ds_twr_range_m(*_ideal_ds(tof, t0, 63897600, 70000000))
        assert abs(r - tof * T.METERS_PER_TICK) < 1e-9
    # SS-TWR with the same ideal clocks is exact too
    ts = _ideal_ds(tof, W - 1000, 63897600, 63897600)
    assert abs(T.ss_twr_range_m(ts[0], ts[1], ts[3], ts[4]) - tof * T.METERS_PER_TICK) < 1e-9


def golden_frames():
    out = []
    for f in _samples():
        out.extend(list(f.encode()))
    return out


def golden_ranges():
    out = []
    for t0, tof, r1, r2 in ((0, 640, 63897600, 63897600), (W - 3000, 1234, 50000000, 90000000),
                            (W - 64000000, 17, 1000, 70000)):
        ts = _ideal_ds(tof, t0, r1, r2)
        # skew the responder's timestamps as a +7 ppm clock would
        ts[4] = (ts[3] + r1 + r1 * 7 // 1000000) % W
        out.append(T.ds_twr_range_m(*ts))
        out.append(T.ss_twr_range_m(ts[0], ts[1], ts[3], ts[4]))
    return out
