"""Bad input to the UWB frame codec and the broadcast node gets the same answer on every implementation: the pure
modules and the compiled ones (cython_ext.uwb, built from the same sources, where C integers hold the checked
values). Non-integer header fields, timestamps and entries are refused with a FrameError before any conversion
(never truncated), a BCAST's raw RX timestamp that is not a 40-bit integer is counted as a bad timestamp, packed
entries are checked for type, length and count, and the codec's last-frame caches hold (bytes, Frame) pairs.
"""
import importlib

import pytest

from harness.sim.radio.uwb_channel import PROTOCOL_PACKAGES
from onboard.impl import available

IMPLS = [i for i in ("pure", "cython") if i in available({k: PROTOCOL_PACKAGES[k] + ".broadcast"
                                                          for k in ("pure", "cython")})]
W = 1 << 40


def _mod(impl, name):
    return importlib.import_module(PROTOCOL_PACKAGES[impl] + "." + name)


def _outcome(fn):
    """What calling ``fn`` gives: ("ok", value) or (exception type name, FrameError kind or None, message)."""
    try:
        return ("ok", fn())
    except Exception as exc:   # noqa: BLE001 - the outcome itself is compared
        return (type(exc).__name__, getattr(exc, "kind", None), str(exc))


def _on_every_impl(build):
    """``build(frames_module)`` run on every implementation; the outcomes, which must all be the same."""
    got = {impl: _outcome(lambda: build(_mod(impl, "frames"))) for impl in IMPLS}
    assert len(set(map(repr, got.values()))) == 1, got
    return got[IMPLS[0]]


def _make(ftype_name, *args, **fields):
    return lambda F: F.make(getattr(F, ftype_name), *args, **fields).encode()


# (frame built by make(...).encode(), the FrameError kind it must raise)
BAD_FRAMES = {
    "float ts": (_make("FINAL", 1, 2, 3, ts=(1.5, 2, 3)), "field"),
    "float ts, integral value": (_make("REPORT", 1, 2, 3, ts=(1, 2.0, 3)), "field"),
    "float src": (_make("POLL", 1.5, 255, 0), "field"),
    "float src, integral value": (_make("POLL", 1.0, 255, 0), "field"),
    "float dst": (_make("JOIN", 1, 2.5, 0), "field"),
    "float seq": (_make("POLL", 1, 2, 0.7), "field"),
    "float epoch": (_make("POLL", 1, 2, 3, 4.0), "field"),
    "float type": (lambda F: F.Frame(1.0, 1, 2, 3).encode(), "type"),
    "string seq": (_make("POLL", 1, 2, "3"), "field"),
    "None dst": (_make("POLL", 1, None, 3), "field"),
    "src beyond 64 bits": (_make("POLL", 1 << 70, 2, 3), "field"),
    "seq below -2**63": (_make("POLL", 1, 2, -(1 << 70)), "field"),
    "float tx_prev": (_make("BCAST", 1, 255, 3, tx_prev=12.5), "field"),
    "tx_prev beyond 64 bits": (_make("BCAST", 1, 255, 3, tx_prev=1 << 70), "field"),
    "ts beyond 64 bits": (_make("FINAL", 1, 2, 3, ts=(1, 2, 1 << 64)), "field"),
    "float entry id": (_make("BCAST", 1, 255, 3, entries=[(1.0, 2, 3)]), "field"),
    "float entry seq": (_make("BCAST", 1, 255, 3, entries=[(1, 2.9, 3)]), "field"),
    "float entry ts": (_make("BCAST", 1, 255, 3, entries=[(1, 2, 3.5)]), "field"),
    "entry ts beyond 64 bits": (_make("BCAST", 1, 255, 3, entries=[(1, 2, 1 << 64)]), "field"),
    "float pass_no": (_make("TOKEN", 1, 2, 3, pass_no=1.5), "field"),
    "float members": (_make("TOKEN", 1, 2, 3, members=7.0), "field"),
    "float invite_first": (_make("DISCOVER", 1, 255, 3, invite_first=1.5), "field"),
    "join_slot_us beyond u16": (_make("DISCOVER", 1, 255, 3, join_slot_us=70000), "field"),
    "negative invite_count": (_make("DISCOVER", 1, 255, 3, invite_count=-1), "field"),
}


@pytest.mark.parametrize("case", sorted(BAD_FRAMES))
def test_non_integer_fields_are_refused_alike_on_every_implementation(case):
    """make(FINAL, ..., ts=(1.5, 2, 3)).encode() and the like: FrameError of the same kind and message on the
    pure and the compiled codec (the compiled one used to truncate floats to C integers and encode them)."""
    build, kind = BAD_FRAMES[case]
    got = _on_every_impl(build)
    assert got[:2] == ("FrameError", kind), got


def test_integer_fields_encode_alike_bools_and_the_limits_included():
    """The checks refuse no integer in range: the limits and bools (ints) give the same bytes everywhere."""
    for build in [_make("FINAL", 0, 255, 255, 255, ts=(0, W - 1, True)),
                  _make("POLL", True, False, 1, 0),
                  _make("BCAST", 254, 255, 0, tx_prev=W - 1, entries=[(254, 255, W - 1), (0, 0, 0)]),
                  _make("DISCOVER", 1, 255, 3, invite_first=255, invite_count=True, join_slot_us=0xFFFF,
                        members=-1),
                  _make("TOKEN", 1, 2, 3, pass_no=-1, members=1 << 70)]:
        got = _on_every_impl(build)
        assert got[0] == "ok" and isinstance(got[1], bytes)


@pytest.mark.parametrize("impl", IMPLS)
def test_pack_entry_refuses_non_integers_and_leaves_the_buffer_unchanged(impl):
    F = _mod(impl, "frames")
    for args in [(1.0, 2, 3), (1, 2.0, 3), (1, 2, 3.0), (None, 2, 3), (1, 2, 1 << 70), (1, -1, 3), (255, 0, 0)]:
        out = bytearray(b"\xaa" * 9)
        with pytest.raises(F.FrameError) as exc:
            F.pack_entry(out, 1, *args)
        assert exc.value.kind == "field" and out == bytearray(b"\xaa" * 9)
    out = bytearray(9)
    F.pack_entry(out, 1, 254, 255, W - 1)
    assert out == bytearray([0, 254, 255, 255, 255, 255, 255, 255, 0])
    # the broadcast node's packer (integers by construction): the same range checks
    for args in [(255, 0, 0), (-1, 0, 0), (1, 256, 0), (1, -1, 0), (1, 0, W), (1, 0, -1)]:
        with pytest.raises(F.FrameError) as exc:
            F._pack_int_entry(out, 1, *args)
        assert exc.value.kind == "field"
    F._pack_int_entry(out, 0, 3, 4, 5)
    assert out == bytearray([3, 4, 0, 0, 0, 0, 5, 255, 0])


# -- packed entries (Frame.set_entry_bytes) ---------------------------------------------------------------------
def _entry_bytes(count):
    return bytes(b for k in range(count) for b in (k % 255, k % 256, 0, 0, 0, k >> 8, k & 0xFF))


BAD_ENTRY_BYTES = {
    "partial entry": (_entry_bytes(2) + b"\x01\x02\x03", "length"),
    "one byte": (b"\x01", "length"),
    "partial entry, bytearray": (bytearray(_entry_bytes(1) + b"\x01"), "length"),
    "str": ("abcdefg", "type"),
    "list of ints": ([1, 2, 3, 4, 5, 6, 7], "type"),
    "memoryview": (memoryview(_entry_bytes(1)), "type"),
    "None": (None, "type"),
    "more entries than a frame holds": (_entry_bytes(144), "long"),
    "beyond the 16-bit entry index": (bytes(7 * 65536), "long"),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRY_BYTES))
def test_set_entry_bytes_refuses_bad_entries_alike_and_keeps_the_frame(case):
    """A length that is not a whole number of entries (which decode refuses and entry_for would read past),
    another type than bytes/bytearray, more entries than fit in a frame: FrameError, same kind everywhere, the
    entries held before unchanged."""
    data, kind = BAD_ENTRY_BYTES[case]

    def build(F):
        f = F.Frame(F.BCAST, 3, 255, 7)
        f.set_entries([(9, 1, 100)])
        try:
            f.set_entry_bytes(data)
        finally:
            assert f.entries() == [(9, 1, 100)] and f.entry_for(9) == (1, 100)

    got = _on_every_impl(build)
    assert got[:2] == ("FrameError", kind), got


def test_set_entry_bytes_takes_bytes_and_bytearray_alike_up_to_a_full_frame():
    """bytes and bytearray give the same frame on every implementation; MAX_BCAST_ENTRIES entries encode (the
    longest BCAST) and decode back, one more is refused by set_entries too."""
    def build(F):
        assert F.MAX_BCAST_ENTRIES == 143
        out = []
        for data in (_entry_bytes(3), bytearray(_entry_bytes(3)), _entry_bytes(F.MAX_BCAST_ENTRIES)):
            f = F.Frame(F.BCAST, 3, 255, 7)
            f.tx_prev = 5
            f.set_entry_bytes(data)
            assert type(f._entries) is bytes
            enc = f.encode()
            d = F._decode(bytes(enc))
            assert d.entries() == f.entries() and len(d.entries()) == len(data) // 7
            out.append(enc)
        assert out[0] == out[1] and len(out[2]) == 9 + 5 + 7 * 143 + 2
        f = F.Frame(F.BCAST, 3, 255, 7)
        with pytest.raises(F.FrameError) as exc:
            f.set_entries([(1, 2, 3)] * (F.MAX_BCAST_ENTRIES + 1))
        assert exc.value.kind == "long" and f.entries() == []
        return out

    assert _on_every_impl(build)[0] == "ok"


def test_encode_refuses_entries_that_are_not_whole_instead_of_emitting_an_undecodable_frame():
    """_entries written directly (bypassing set_entry_bytes) with a partial entry: encode raises FrameError
    "length" on every implementation (it used to emit bytes that decode refuses)."""
    def build(F):
        f = F.Frame(F.BCAST, 3, 255, 7)
        f._entries = _entry_bytes(1) + b"\x01"
        return f.encode()

    assert _on_every_impl(build)[:2] == ("FrameError", "length")


# -- the broadcast node's raw RX timestamp ---------------------------------------------------------------------
def _bcast(F, src, seq, entries=()):
    f = F.Frame(F.BCAST, src, F.BROADCAST_ID, seq)
    f.tx_prev = F.NO_TIMESTAMP
    f.set_entries(list(entries))
    return f.encode()


def _node_state(node):
    return (node.report(), sorted((i, r.seq, r.rx_ts, r.heard_us) for i, r in node._nbr.items()), node.joined,
            node.tx_deadline_us)


BAD_RAW_RX = [None, 2.5, 12345.0, -1, W, 1 << 70, -(1 << 70), "12", (1, 2)]


@pytest.mark.parametrize("raw_rx", BAD_RAW_RX, ids=repr)
@pytest.mark.parametrize("via", ["on_rx", "on_event"])
def test_a_bad_raw_rx_timestamp_is_counted_alike_on_every_implementation(raw_rx, via):
    """A valid BCAST with a raw RX timestamp that is not an integer in 0..2**40-1 (None, a float, outside 40 or
    64 bits): counted in bad_timestamps and dropped on both paths (the compiled node raised TypeError or
    OverflowError, or truncated a float); garbage bytes with such a timestamp count a decode error; a BCAST of
    its own or a duplicate is counted as such before the timestamp is looked at. Counters and neighbour tables
    are the same on every implementation."""
    results = {}
    for impl in IMPLS:
        B, F = _mod(impl, "broadcast"), _mod(impl, "frames")
        node = B.BroadcastNode(1, {"mode": "broadcast"})
        node.start(0)

        def rx(data, raw, now_us):
            if via == "on_rx":
                return node.on_rx(data, raw, now_us)
            return node.on_event(("rx", data, raw), now_us)

        steps = []
        steps.append(rx(b"garbage-bytes", raw_rx, 100))                   # decode error, timestamp never read
        steps.append(rx(_bcast(F, 1, 5), raw_rx, 200))                     # own id: ignored
        steps.append(rx(_bcast(F, 2, 5), raw_rx, 300))                     # bad timestamp: dropped
        assert 2 not in node._nbr
        good = _bcast(F, 2, 6, [(1, 0, 77)])
        steps.append(rx(good, 1000, 400))                                  # heard: neighbour 2, joined
        steps.append(rx(bytes(good), raw_rx, 500))                         # duplicate (same seq) first
        steps.append(rx(_bcast(F, 3, 1), raw_rx, 600))                     # bad timestamp: dropped
        steps.append(rx(_bcast(F, 3, 2), 0, 700))                          # the limits are accepted
        steps.append(rx(_bcast(F, 4, 2), W - 1, 800))
        st = node.stats
        assert (st["decode_errors"], st["ignored"], st["duplicates"], st["bad_timestamps"], st["rx"]) == \
               (1, 1, 1, 2, 7), (impl, st)
        assert sorted(node._nbr) == [2, 3, 4] and node._nbr[2].rx_ts == (1000 - node.ant) & (W - 1)
        results[impl] = (repr(steps), _node_state(node))
    assert len(set(map(repr, results.values()))) == 1, results


# -- the codec's last-frame caches -----------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_the_codec_caches_hold_one_bytes_frame_pair_each(impl):
    """frames._memo and frames._encoded each hold one (bytes, Frame) tuple, replaced whole (a reader in another
    thread never pairs one frame's bytes with another's Frame); node_base reads the same list; the empty caches
    match no input (decode(None) is a FrameError, not the cache's placeholder)."""
    F = _mod(impl, "frames")
    data = _bcast(F, 2, 9, [(1, 3, 4)])
    assert type(F._encoded[0]) is tuple and F._encoded[0][0] is data
    kept = F._encoded[0][1]
    assert F.decode(data) is kept
    assert type(F._memo) is list and len(F._memo) == 1 and F._memo[0] == (data, kept)
    other = bytes(_bcast(F, 3, 9))
    g = F.decode(other)
    assert F._memo[0] == (other, g) and F.decode(other) is g and g is not kept
    node = _mod(impl, "broadcast").BroadcastNode(1, {"mode": "broadcast"})
    assert node._decode(other) is g and node._decode(None) is None        # node_base reads the same cache
    assert node.stats["rx"] == 1 and node.decode_error_kinds == {"type": 1}
    for bad in (None, F._memo[0][1], 12):
        with pytest.raises(F.FrameError) as exc:
            F.decode(bad)
        assert exc.value.kind == "type"
