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
malformed input; it never raises anything else on arbitrary bytes. Encoding takes only integers
(``int``, ``bool`` included) for the header fields, timestamps, entries and TOKEN/DISCOVER fields:
anything else is a FrameError, checked before any conversion (the compiled build converts to C
integers only values already checked, so both builds refuse the same input the same way).
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
# BCAST entries that fit in the longest frame (what set_entries / set_entry_bytes accept)
MAX_BCAST_ENTRIES = (MAX_FRAME_LEN - HEADER_LEN - TS_LEN - CRC_LEN) // BCAST_ENTRY_LEN
_TS_MAX = (1 << 40) - 1
_MAX_ID = MAX_NODE_ID      # (private copies: C integers where compiled)
_VERSION_BITS = VERSION << 4
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


def _ts_at(data, off):
    return ((data[off] << 32) | (data[off + 1] << 24) | (data[off + 2] << 16)
            | (data[off + 3] << 8) | data[off + 4])


_INF = float("inf")


def _vel_mmps(v_mps):
    """``v_mps`` (m/s) as int16 mm/s: ``int(round(v_mps * 1000.0))`` (Python's round: half to even), clamped
    to +-32767; FrameError for a non-finite value. The rounding is done with exact double operations (the
    fraction ``x - int(x)`` of a double is exact), so the compiled build gives the same integers in C."""
    v = float(v_mps)
    if v != v or v == _INF or v == -_INF:
        raise FrameError("field", "velocity must be finite, got %r" % (v_mps,))
    x = v * 1000.0
    if x >= 32767.5:                  # rounds to 32768 or more: clamped
        return _VEL_MAX_MMPS
    if x <= -32767.5:
        return -_VEL_MAX_MMPS
    mm = int(x)                       # toward zero
    frac = x - mm
    if frac > 0.5 or (frac == 0.5 and mm & 1):
        mm += 1
    elif frac < -0.5 or (frac == -0.5 and mm & 1):
        mm -= 1
    return mm


def pack_entry(out, off, node_id, seq, rx_ts):
    """Write one BCAST entry into the bytearray ``out`` at ``off`` (BCAST_ENTRY_LEN bytes): id u8, seq u8 (of the
    neighbour's last BCAST heard) and its 40-bit RX timestamp, big-endian. FrameError ("field") for an id, seq or
    timestamp that is not an integer or out of range (``out`` unchanged then): checked here, before the compiled
    build converts anything to a C integer."""
    if not isinstance(node_id, int) or not isinstance(seq, int) or not isinstance(rx_ts, int) \
            or not 0 <= node_id <= MAX_NODE_ID or not 0 <= seq <= 255 or rx_ts < 0 or rx_ts > NO_TIMESTAMP:
        raise _entry_error(node_id, seq, rx_ts)
    _pack_int_entry(out, off, node_id, seq, rx_ts)


def _pack_int_entry(out, off, node_id, seq, rx_ts):
    """:func:`pack_entry` for a caller whose values are integers by construction (C integers where compiled, passed
    without Python objects: the broadcast node's neighbour records): the same range checks."""
    if not 0 <= node_id <= _MAX_ID or not 0 <= seq <= 255 or rx_ts < 0 or rx_ts > _TS_MAX:
        raise _entry_error(node_id, seq, rx_ts)
    out[off] = node_id
    out[off + 1] = seq
    _put_ts(out, off + 2, rx_ts)


def _entry_error(node_id, seq, rx_ts):
    """The FrameError ("field") for a BCAST entry that is not three integers in range."""
    return FrameError("field", "bad entry (id, seq, rx_ts) %r: integers in 0..%d, 0..255, 0..2**40-1"
                      % ((node_id, seq, rx_ts), MAX_NODE_ID))


def _too_many_entries(n):
    """The FrameError ("long") for ``n`` BCAST entries, more than MAX_BCAST_ENTRIES."""
    return FrameError("long", "%d BCAST entries, at most %d fit in a frame" % (n, MAX_BCAST_ENTRIES))


def _put_ts(out, off, ts):
    """Write the 40-bit timestamp ``ts`` (checked by the caller) into the bytearray ``out`` at ``off``, big-endian."""
    out[off] = (ts >> 32) & 0xFF
    out[off + 1] = (ts >> 24) & 0xFF
    out[off + 2] = (ts >> 16) & 0xFF
    out[off + 3] = (ts >> 8) & 0xFF
    out[off + 4] = ts & 0xFF


def _put_header(out, t, src, dst, seq, epoch, vx, vy):
    """Write the 9-byte header (module docstring) into the bytearray ``out``: fields checked by the caller, the
    velocities in mm/s (int16, two's complement)."""
    out[0] = _VERSION_BITS | t
    out[1] = src
    out[2] = dst
    out[3] = seq
    out[4] = epoch
    out[5] = (vx >> 8) & 0xFF
    out[6] = vx & 0xFF
    out[7] = (vy >> 8) & 0xFF
    out[8] = vy & 0xFF


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
        off = self.entry_offset(node_id)
        if off < 0:
            return None
        return (self.entry_seq_at(off), self.entry_ts_at(off))

    def entry_offset(self, node_id):
        """Where ``node_id``'s entry (its first) starts in the packed BCAST entries, or -1: read it with
        :meth:`entry_seq_at` and :meth:`entry_ts_at` (what :meth:`entry_for` does, without the tuple)."""
        idx = self._index
        if idx is None:
            # by id (a byte): 1 + the number of its first entry, 16 bits big-endian, 0 for none
            idx = bytearray(512)
            e = self._entries
            end = len(e)
            off = 0
            k = 1
            while off < end:
                i = 2 * e[off]
                if idx[i] == 0 and idx[i + 1] == 0:
                    idx[i] = k >> 8
                    idx[i + 1] = k & 0xFF
                off += BCAST_ENTRY_LEN
                k += 1
            self._index = idx
        if node_id < 0 or node_id > 255:
            return -1
        i = 2 * node_id
        k = (idx[i] << 8) | idx[i + 1]
        if k == 0:
            return -1
        return (k - 1) * BCAST_ENTRY_LEN

    def entry_seq_at(self, off):
        """The seq of the entry at ``off`` (:meth:`entry_offset`)."""
        e = self._entries
        return e[off + 1]

    def entry_ts_at(self, off):
        """The RX timestamp (40-bit ticks) of the entry at ``off`` (:meth:`entry_offset`)."""
        e = self._entries
        ts = e[off + 2]                          # _ts_at(e, off + 2), a byte at a time
        ts = (ts << 8) | e[off + 3]
        ts = (ts << 8) | e[off + 4]
        ts = (ts << 8) | e[off + 5]
        ts = (ts << 8) | e[off + 6]
        return ts

    def entries(self):
        """List of (node_id, seq, rx_ts) for a BCAST frame."""
        e = self._entries
        out = []
        for off in range(0, len(e), BCAST_ENTRY_LEN):
            out.append((e[off], e[off + 1], _ts_at(e, off + 2)))
        return out

    def set_entries(self, entries):
        """Set BCAST entries from a sequence of (node_id, seq, rx_ts) (integers, :func:`pack_entry`), at most
        MAX_BCAST_ENTRIES of them (FrameError "long"); the frame is unchanged where one is refused."""
        if type(entries) is not list:
            entries = list(entries)
        if len(entries) > MAX_BCAST_ENTRIES:
            raise _too_many_entries(len(entries))
        step = BCAST_ENTRY_LEN
        out = bytearray(step * len(entries))
        off = 0
        for node_id, seq, rx_ts in entries:
            pack_entry(out, off, node_id, seq, rx_ts)
            off += step
        self._entries = bytes(out)
        self._index = None

    def set_entry_bytes(self, data):
        """Set BCAST entries from their packed bytes (``bytes`` or ``bytearray``: :func:`pack_entry`'s, one entry
        after another, at most MAX_BCAST_ENTRIES). FrameError for another type ("type"), a length that is not a
        whole number of entries ("length") or too many entries ("long"); the frame is unchanged then."""
        if type(data) is not bytes:
            if not isinstance(data, (bytes, bytearray)):
                raise FrameError("type", "BCAST entries must be bytes, got %s" % type(data).__name__)
            data = bytes(data)
        n = len(data)
        if n % BCAST_ENTRY_LEN:
            raise FrameError("length", "%d bytes of BCAST entries is not a multiple of %d" % (n, BCAST_ENTRY_LEN))
        if n > MAX_BCAST_ENTRIES * BCAST_ENTRY_LEN:
            raise _too_many_entries(n // BCAST_ENTRY_LEN)
        self._entries = data
        self._index = None

    # -- codec ---------------------------------------------------------------
    def encode(self):
        """Bytes of this frame including the CRC. Raises FrameError on out-of-range fields.

        The Frame that :func:`decode` builds from the returned bytes object is built here from the encoded
        fields and kept for it (``_encoded``: a frame is encoded once and heard by every receiver, none of
        which decodes it again)."""
        t = self.type
        if not isinstance(t, int) or t not in TYPE_NAMES:
            raise FrameError("type", "unknown frame type %r" % (t,))
        src = self.src
        dst = self.dst
        seq = self.seq
        epoch = self.epoch
        # integers only (a float is refused, not truncated: the compiled build converts them to C integers below)
        if not isinstance(src, int) or not isinstance(dst, int) or not isinstance(seq, int) \
                or not isinstance(epoch, int):
            raise FrameError("field", "src/dst/seq/epoch must be integers, got %r" % ((src, dst, seq, epoch),))
        if not 0 <= src <= MAX_NODE_ID:
            raise FrameError("field", "src=%r outside 0..%d" % (src, MAX_NODE_ID))
        if not 0 <= dst <= BROADCAST_ID:
            raise FrameError("field", "dst=%r outside 0..%d" % (dst, BROADCAST_ID))
        if not 0 <= seq <= 255:
            raise FrameError("field", "seq=%r outside 0..%d" % (seq, 255))
        if not 0 <= epoch <= 255:
            raise FrameError("field", "epoch=%r outside 0..%d" % (epoch, 255))
        vel = self.vel_mps
        vx = _vel_mmps(vel[0])
        vy = _vel_mmps(vel[1])
        # decode's Frame for these bytes: the header as decode reads it back, the payload fields below
        g = Frame(int(t), int(src), int(dst), int(seq), int(epoch), (vx * 0.001, vy * 0.001))
        if t == BCAST:
            ts = _checked_ts(self.tx_prev)
            e = bytes(self._entries)
            if len(e) % BCAST_ENTRY_LEN:      # only where _entries was written directly (set_entry_bytes checks)
                raise FrameError("length", "%d bytes of BCAST entries is not a multiple of %d"
                                 % (len(e), BCAST_ENTRY_LEN))
            out = bytearray(HEADER_LEN + TS_LEN)
            _put_header(out, t, src, dst, seq, epoch, vx, vy)
            _put_ts(out, HEADER_LEN, ts)
            out += e
            g.tx_prev = int(ts)
            g._entries = e
        elif t == RESPONSE or t == FINAL or t == REPORT:
            tss = [_checked_ts(x) for x in self.ts]
            plen = TS_LEN * len(tss)
            if plen not in FIXED_PAYLOAD_LEN[t]:
                raise FrameError("length", "%s needs %r timestamps bytes, got %d"
                                 % (TYPE_NAMES[t], FIXED_PAYLOAD_LEN[t], plen))
            out = bytearray(HEADER_LEN + plen)
            _put_header(out, t, src, dst, seq, epoch, vx, vy)
            for k in range(len(tss)):
                _put_ts(out, HEADER_LEN + k * TS_LEN, tss[k])
            g.ts = tuple([int(x) for x in tss])
        else:
            out = bytearray(HEADER_LEN)
            _put_header(out, t, src, dst, seq, epoch, vx, vy)
            if t == TOKEN:
                _check_ints((self.pass_no, self.members), "pass_no/members")
                g.pass_no = self.pass_no & 0xFFFF
                g.members = self.members & 0xFFFFFFFF
                out += struct.pack(">HI", g.pass_no, g.members)
            elif t == DISCOVER:
                _check_ints((self.invite_first, self.invite_count, self.join_slot_us, self.members),
                            "invite_first/invite_count/join_slot_us/members")
                if not 0 <= self.invite_first <= 255 or not 0 <= self.invite_count <= 255 \
                        or not 0 <= self.join_slot_us <= 0xFFFF:
                    raise FrameError("field", "invite_first/count/join_slot_us %r outside u8/u8/u16" % (
                        (self.invite_first, self.invite_count, self.join_slot_us),))
                out += struct.pack(">BBHI", self.invite_first, self.invite_count, self.join_slot_us,
                                   self.members & 0xFFFFFFFF)
                g.invite_first = int(self.invite_first)
                g.invite_count = int(self.invite_count)
                g.join_slot_us = int(self.join_slot_us)
                g.members = self.members & 0xFFFFFFFF
        n = len(out)
        if n + CRC_LEN > MAX_FRAME_LEN:
            raise FrameError("long", "frame of %d bytes exceeds %d" % (n + CRC_LEN, MAX_FRAME_LEN))
        c = _crc(out)
        out.append((c >> 8) & 0xFF)
        out.append(c & 0xFF)
        data = bytes(out)
        _encoded[0] = (data, g)       # one store: bytes and Frame always travel together
        return data


def _checked_ts(ts):
    """``ts`` itself where it is an integer within 40 bits (0 .. 2**40 - 1), else FrameError ("field")."""
    if not isinstance(ts, int):
        raise FrameError("field", "timestamp must be an integer, got %r" % (ts,))
    if ts < 0 or ts > _TS_MAX:
        raise FrameError("field", "timestamp %r outside 40 bits" % (ts,))
    return ts


def _check_ints(values, names):
    """FrameError ("field") unless every item of the tuple ``values`` (the fields ``names``) is an integer."""
    for v in values:
        if not isinstance(v, int):
            raise FrameError("field", "%s must be integers, got %r" % (names, values))


# One-slot lists, each holding a (bytes object, its Frame) pair replaced as a whole (a reader never sees one
# frame's bytes with another's Frame); the sentinel object is no caller's data.
_NO_DATA = object()
_memo = [(_NO_DATA, None)]      # the last decoded immutable bytes object and its Frame
_encoded = [(_NO_DATA, None)]   # the last encoded bytes object and the Frame decode gives for it (Frame.encode)


def decode(data):
    """Decode ``data`` (bytes-like) into a :class:`Frame`; raises FrameError on any malformed input.

    Decoded frames are read-only by convention: decoding the very same ``bytes`` object again
    (a simulated broadcast reaching N receivers) returns the same Frame without redoing the work,
    and so does decoding the bytes object the last :meth:`Frame.encode` returned (its Frame was built
    there from the encoded fields).
    """
    m = _memo[0]
    if data is m[0]:
        return m[1]
    m = _encoded[0]
    if data is m[0]:
        f = m[1]
    else:
        f = _decode(data)
    if type(data) is bytes:
        _memo[0] = (data, f)
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
