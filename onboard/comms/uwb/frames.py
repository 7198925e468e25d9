"""Binary UWB frame codec with CRC (pure, MicroPython-compatible).

Layout (big-endian), 9-byte header + payload + 2-byte CRC:

    offset  size  field
    0       1     version (high nibble, = 1) | frame type (low nibble)
    1       1     src node id (0..254)
    2       1     dst node id (0..254; 255 = broadcast)
    3       1     seq: the exchange number for POLL/RESPONSE/FINAL/REPORT (all four frames of
                  one exchange carry the POLL's seq), otherwise the sender's frame counter (mod 256)
    4       1     token epoch (token ring; 0 in broadcast mode)
    5       2     sender velocity x in its own frame, int16 mm/s
    7       2     sender velocity y in its own frame, int16 mm/s  (uwb paper IV: the ranging
                  message also carries the sender's velocity)
    9       n     payload (by type, below)
    9+n     2     CRC-16/CCITT-FALSE of bytes 0..9+n-1 (onboard.comms.crc)

Payloads (timestamps are 40-bit DW1000 ticks, 5 bytes each):
    POLL      -
    RESPONSE  - (DS-TWR) or rx_poll, tx_resp (SS-TWR)
    FINAL     tx_poll, rx_resp, tx_final          (initiator's clock)
    REPORT    rx_poll, tx_resp, rx_final          (responder's clock, so both ends get the range)
    TOKEN     pass_no u16, members u32 bitmap (bit i = node i is in the ring)
    DISCOVER  invite_first u8, invite_count u8, join_slot_us u16, members u32
    JOIN      -
    BCAST     tx_prev (TX timestamp of the sender's previous BCAST, seq-1; 2**40-1 = none),
              then per neighbour: id u8, seq u8 (of the neighbour's last BCAST heard), rx ts (5 bytes)

The DW1000 adds its own 2-byte FCS on air; frames longer than 127 bytes need its
proprietary long-frame mode (up to 1023 bytes), which is what the broadcast mode uses for
large N. Decoding raises :class:`FrameError` (a ValueError) with a ``kind`` for every
malformed input; it never raises anything else on arbitrary bytes.
"""
import struct

from onboard.comms.crc import crc16_ccitt_false

try:  # CPython: the C implementation of the same CRC (poly 0x1021, given init); same result
    from binascii import crc_hqx as _crc_hqx

    def _crc(data):
        return _crc_hqx(data, 0xFFFF)
except ImportError:  # MicroPython
    _crc = crc16_ccitt_false

VERSION = 1
POLL = 1
RESPONSE = 2
FINAL = 3
REPORT = 4
TOKEN = 5
DISCOVER = 6
JOIN = 7
BCAST = 8
TYPE_NAMES = {POLL: "POLL", RESPONSE: "RESPONSE", FINAL: "FINAL", REPORT: "REPORT",
              TOKEN: "TOKEN", DISCOVER: "DISCOVER", JOIN: "JOIN", BCAST: "BCAST"}
# Frames sent only by the token holder: they carry its token epoch.
HOLDER_TYPES = (POLL, FINAL, TOKEN, DISCOVER)

BROADCAST_ID = 255
MAX_NODE_ID = 254
HEADER_LEN = 9
CRC_LEN = 2
TS_LEN = 5
BCAST_ENTRY_LEN = 2 + TS_LEN
MAX_FRAME_LEN = 1023
NO_TIMESTAMP = (1 << 40) - 1
_TS_MAX = (1 << 40) - 1
_HEADER = ">BBBBBhh"
_VEL_MAX_MMPS = 32767

FIXED_PAYLOAD_LEN = {POLL: (0,), RESPONSE: (0, 2 * TS_LEN), FINAL: (3 * TS_LEN,), REPORT: (3 * TS_LEN,),
                     TOKEN: (6,), DISCOVER: (8,), JOIN: (0,)}


class FrameError(ValueError):
    """A frame could not be decoded (or encoded). ``kind`` is one of: short, long, crc,
    version, type, length, field."""

    def __init__(self, kind, message):
        super().__init__("%s: %s" % (kind, message))
        self.kind = kind


def _ts_bytes(ts):
    if ts < 0 or ts > _TS_MAX:
        raise FrameError("field", "timestamp %r outside 40 bits" % (ts,))
    return bytes(((ts >> 32) & 0xFF, (ts >> 24) & 0xFF, (ts >> 16) & 0xFF, (ts >> 8) & 0xFF, ts & 0xFF))


def _ts_at(data, off):
    return ((data[off] << 32) | (data[off + 1] << 24) | (data[off + 2] << 16)
            | (data[off + 3] << 8) | data[off + 4])


_INF = float("inf")


def _vel_mmps(v_mps):
    v = float(v_mps)
    if v != v or v == _INF or v == -_INF:
        raise FrameError("field", "velocity must be finite, got %r" % (v_mps,))
    mm = int(round(v * 1000.0))
    if mm > _VEL_MAX_MMPS:
        mm = _VEL_MAX_MMPS
    elif mm < -_VEL_MAX_MMPS:
        mm = -_VEL_MAX_MMPS
    return mm


class Frame:
    """A decoded (or to-be-encoded) frame. ``vel_mps`` is the sender's (vx, vy) in its own frame, m/s.

    Payload fields by type: ``ts`` (tuple of timestamps: RESPONSE (SS), FINAL, REPORT),
    ``pass_no``/``members`` (TOKEN), ``invite_first``/``invite_count``/``join_slot_us``/``members``
    (DISCOVER), ``tx_prev`` and the raw neighbour entries (BCAST: use :meth:`entry_for`, :meth:`entries`).
    """

    def __init__(self, ftype, src, dst, seq, epoch=0, vel_mps=(0.0, 0.0)):
        self.type = ftype
        self.src = src
        self.dst = dst
        self.seq = seq
        self.epoch = epoch
        self.vel_mps = vel_mps
        # payload fields (set by decode or make where a frame type has them); every field is an instance
        # attribute, so the compiled build (cython_ext/uwb/frames.pxd) can hold them in slots
        self.ts = ()
        self.pass_no = 0
        self.members = 0
        self.invite_first = 0
        self.invite_count = 0
        self.join_slot_us = 0
        self.tx_prev = NO_TIMESTAMP
        self._entries = b""
        self._index = None

    def __repr__(self):
        return "Frame(%s src=%d dst=%d seq=%d epoch=%d)" % (
            TYPE_NAMES.get(self.type, "?"), self.src, self.dst, self.seq, self.epoch)

    # -- broadcast entries -------------------------------------------------
    def entry_for(self, node_id):
        """(seq, rx_ts) of ``node_id``'s last BCAST as heard by the sender, or None."""
        idx = self._index
        if idx is None:
            e = self._entries
            idx = {}
            step = BCAST_ENTRY_LEN
            end = len(e)
            off = 0
            while off < end:
                i = e[off]
                if i not in idx:
                    ts = e[off + 2]                  # _ts_at(e, off + 2), a byte at a time
                    ts = (ts << 8) | e[off + 3]
                    ts = (ts << 8) | e[off + 4]
                    ts = (ts << 8) | e[off + 5]
                    ts = (ts << 8) | e[off + 6]
                    idx[i] = (e[off + 1], ts)
                off += step
            self._index = idx
        return idx.get(node_id)

    def entries(self):
        """List of (node_id, seq, rx_ts) for a BCAST frame."""
        e = self._entries
        out = []
        for off in range(0, len(e), BCAST_ENTRY_LEN):
            out.append((e[off], e[off + 1], _ts_at(e, off + 2)))
        return out

    def set_entries(self, entries):
        """Set BCAST entries from a sequence of (node_id, seq, rx_ts)."""
        if type(entries) is not list:
            entries = list(entries)
        step = BCAST_ENTRY_LEN
        out = bytearray(step * len(entries))
        off = 0
        for node_id, seq, rx_ts in entries:
            if not 0 <= node_id <= MAX_NODE_ID or not 0 <= seq <= 255:
                raise FrameError("field", "bad entry id/seq %r/%r" % (node_id, seq))
            if rx_ts < 0 or rx_ts > _TS_MAX:    # as _ts_bytes, packed with the id and seq at once
                raise FrameError("field", "timestamp %r outside 40 bits" % (rx_ts,))
            ts = rx_ts                          # checked: 40 bits (a C integer where compiled)
            out[off] = node_id
            out[off + 1] = seq
            out[off + 2] = (ts >> 32) & 0xFF
            out[off + 3] = (ts >> 24) & 0xFF
            out[off + 4] = (ts >> 16) & 0xFF
            out[off + 5] = (ts >> 8) & 0xFF
            out[off + 6] = ts & 0xFF
            off += step
        self._entries = bytes(out)
        self._index = None

    # -- codec ---------------------------------------------------------------
    def encode(self):
        """Bytes of this frame including the CRC. Raises FrameError on out-of-range fields."""
        t = self.type
        if t not in TYPE_NAMES:
            raise FrameError("type", "unknown frame type %r" % (t,))
        for name, v, hi in (("src", self.src, MAX_NODE_ID), ("dst", self.dst, BROADCAST_ID),
                            ("seq", self.seq, 255), ("epoch", self.epoch, 255)):
            if not 0 <= v <= hi:
                raise FrameError("field", "%s=%r outside 0..%d" % (name, v, hi))
        head = struct.pack(_HEADER, (VERSION << 4) | t, self.src, self.dst, self.seq, self.epoch,
                           _vel_mmps(self.vel_mps[0]), _vel_mmps(self.vel_mps[1]))
        if t in (RESPONSE, FINAL, REPORT):
            payload = b"".join([_ts_bytes(x) for x in self.ts])
            if len(payload) not in FIXED_PAYLOAD_LEN[t]:
                raise FrameError("length", "%s needs %r timestamps bytes, got %d"
                                 % (TYPE_NAMES[t], FIXED_PAYLOAD_LEN[t], len(payload)))
        elif t == TOKEN:
            payload = struct.pack(">HI", self.pass_no & 0xFFFF, self.members & 0xFFFFFFFF)
        elif t == DISCOVER:
            payload = struct.pack(">BBHI", self.invite_first, self.invite_count,
                                  self.join_slot_us, self.members & 0xFFFFFFFF)
        elif t == BCAST:
            payload = _ts_bytes(self.tx_prev) + self._entries
        else:
            payload = b""
        body = head + payload
        if len(body) + CRC_LEN > MAX_FRAME_LEN:
            raise FrameError("long", "frame of %d bytes exceeds %d" % (len(body) + CRC_LEN, MAX_FRAME_LEN))
        c = _crc(body)
        return body + bytes(((c >> 8) & 0xFF, c & 0xFF))


_memo = [None, None]   # last decoded immutable bytes object and its Frame


def decode(data):
    """Decode ``data`` (bytes-like) into a :class:`Frame`; raises FrameError on any malformed input.

    Decoded frames are read-only by convention: decoding the very same ``bytes`` object again
    (a simulated broadcast reaching N receivers) returns the same Frame without redoing the work.
    """
    if data is _memo[0]:
        return _memo[1]
    f = _decode(data)
    if type(data) is bytes:
        _memo[0] = data
        _memo[1] = f
    return f


def _decode(data):
    try:
        n = len(data)
    except TypeError:
        raise FrameError("type", "frame must be bytes, got %s" % type(data).__name__)
    if n < HEADER_LEN + CRC_LEN:
        raise FrameError("short", "%d bytes, need at least %d" % (n, HEADER_LEN + CRC_LEN))
    if n > MAX_FRAME_LEN:
        raise FrameError("long", "%d bytes exceeds %d" % (n, MAX_FRAME_LEN))
    if type(data) is not bytes:
        data = bytes(data)
    body_len = n - CRC_LEN
    c = _crc(data[:body_len])
    if ((c >> 8) & 0xFF) != data[body_len] or (c & 0xFF) != data[body_len + 1]:
        raise FrameError("crc", "CRC mismatch")
    vt, src, dst, seq, epoch, vx, vy = struct.unpack_from(_HEADER, data, 0)
    if (vt >> 4) != VERSION:
        raise FrameError("version", "version %d, expected %d" % (vt >> 4, VERSION))
    t = vt & 0x0F
    if t not in TYPE_NAMES:
        raise FrameError("type", "unknown frame type %d" % t)
    if src > MAX_NODE_ID:
        raise FrameError("field", "src id %d is reserved" % src)
    plen = body_len - HEADER_LEN
    f = Frame(t, src, dst, seq, epoch, (vx * 0.001, vy * 0.001))
    off = HEADER_LEN
    if t == BCAST:
        if plen < TS_LEN or (plen - TS_LEN) % BCAST_ENTRY_LEN:
            raise FrameError("length", "BCAST payload of %d bytes is not 5 + 7k" % plen)
        f.tx_prev = _ts_at(data, off)
        f._entries = data[off + TS_LEN:body_len]
        return f
    if plen not in FIXED_PAYLOAD_LEN[t]:
        raise FrameError("length", "%s payload of %d bytes, expected %r" % (TYPE_NAMES[t], plen, FIXED_PAYLOAD_LEN[t]))
    if t in (RESPONSE, FINAL, REPORT):
        f.ts = tuple([_ts_at(data, off + k * TS_LEN) for k in range(plen // TS_LEN)])
    elif t == TOKEN:
        f.pass_no, f.members = struct.unpack_from(">HI", data, off)
    elif t == DISCOVER:
        f.invite_first, f.invite_count, f.join_slot_us, f.members = struct.unpack_from(">BBHI", data, off)
    return f


def make(ftype, src, dst, seq, epoch=0, vel_mps=(0.0, 0.0), **fields):
    """Build a Frame with payload fields given by keyword (ts, pass_no, members, ...)."""
    f = Frame(ftype, src, dst, seq, epoch, vel_mps)
    for k in fields:
        if k == "entries":
            f.set_entries(fields[k])
        else:
            setattr(f, k, fields[k])
    return f
