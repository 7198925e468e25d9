"""Compact binary ring log in one preallocated file: a board's flight recorder (pure, runs on MicroPython).

:class:`RingLogSink` is a recording sink (``sink(topic, time_us, msg)``, :meth:`Node.record`) that
writes into one file of fixed size on the board's flash; :func:`read_log` reads such a file back
(on the host after ``python -m onboard.deploy BOARD --pull-log``, or on the board).

File layout (little-endian)::

    [0, HEADER_BYTES)                     file header: magic, format version, session, size_bytes,
                                          meta_bytes, CRC-32
    [HEADER_BYTES, data_start)            meta area (meta_bytes): this session's ``/app/config``
                                          (JSON) and its topic definitions, appended once each
    [data_start, size_bytes)              data area: records appended; when the next record does not
                                          fit before the end, the rest is zeroed and writing wraps to
                                          data_start (the oldest records are overwritten)

Record: ``SYNC`` (1 byte), id (u8), payload length (u16, bytes), session (u16), sequence (u32),
payload, CRC-32 (u32, ``binascii.crc32``: the zlib CRC-32) of everything between the sync byte and the
CRC: ``RECORD_OVERHEAD_BYTES`` = 14 bytes per record. A data record's id names a topic definition
(topic, sample type, field names, field layout); its payload is the sample's numeric fields packed
with ``struct`` (integers int64, floats and float vectors as IEEE-754 doubles: bit exact), other
fields (strings, booleans, nested tuples) as JSON text. Id bit ``EXPLICIT_TIME`` set: the payload
starts with the record's time (int64, us) because it differs from the message's own ``time_us``.

The file is created once at its full size (zeros), so the log never grows past ``size_bytes`` of
flash. Each :class:`RingLogSink` opened on it starts a new *session* (the header's counter + 1): the
meta area is rewritten and data records start again at data_start; older sessions' records that
were not overwritten yet are ignored by the reader (counted as ``stale``). After session
``SESSION_MAX`` the file is zeroed again and the count starts again at 1.

Writing in batches: the sink only holds what it is given (``(topic, time_us, msg)``, no encoding on
the app's step) until ``batch_records`` are held, then frames them all and writes them with one
``write`` (two where the data area wraps); :meth:`RingLogSink.write_held` (a recording Node calls it
between ticks, :meth:`onboard.runtime.node.Node.idle`), :meth:`RingLogSink.flush` and
:meth:`RingLogSink.close` write what is held. A message of a shape met before on its topic is framed
by its cached layout (:class:`_Layout`: one ``struct`` call, every value's type checked; where
``exec`` exists the reading, the checks and the packing are compiled for the layout), the same bytes
the field by field encoding gives; any other message takes that long way. For the types of
``onboard.core.samples`` the compiled check is of the shape only (a float where an int was, or the
reverse, decodes to the same sample: the reader rebuilds it through its constructor). Messages must
not change after they are recorded (samples do not).

The sequence is the session's data record count modulo 2**32: at ~310 records/s it wraps after ~160 days of
one session. The data area holds far fewer than 2**31 records, so the records kept always span less than
half the sequence space and the reader orders them in serial-number arithmetic (RFC 1982): the oldest
is the one after the widest gap between the sequence numbers found, modulo 2**32.

Crash safety: a torn write leaves a record whose CRC fails. The reader scans the area record by
record (resynchronising byte by byte after a bad record), keeps the records of the header's session
whose CRC holds, orders them by sequence (modulo 2**32, above) and counts the sequence numbers missing
between the oldest and the newest as ``dropped``; a bad record right after the newest one is the
``torn`` last write.
What a reset or power loss costs: the records held (fewer than ``batch_records``), or, during a
batch's write, the records of that batch from the torn one on: at most ``batch_records`` newest
records, every older one kept. With ``flush_records`` (a littlefs commit every so many records, what
the boards set) the records written but not flushed are lost with a reset too: at most
``flush_records + batch_records - 1`` newest records (the boards: 200 + 8 - 1 = 207, ~0.7 s at ~310
records/s). CRC-32 rather than the link's CRC-16 (``onboard.comms.crc``): the C ``binascii.crc32``
costs ~3 us per record where the pure-Python CRC-16 costs ~100 us (MicroPython 1.27, WebAssembly
build), and 32 bits make a false resync in stale bytes unlikely. A pure-Python CRC-32 stands in on
builds without ``binascii.crc32``.
"""
import json
import struct
import sys

from onboard.runtime.node import CONFIG_TOPIC

try:
    from binascii import crc32 as _crc32_c
except ImportError:          # pragma: no cover - a MicroPython build without binascii.crc32
    _crc32_c = None
try:
    from operator import attrgetter as _attrgetter, itemgetter as _itemgetter
except ImportError:          # pragma: no cover - MicroPython without the operator module
    _attrgetter = _itemgetter = None

MAGIC = b"ORL1"
VERSION = 1
HEADER_FMT = "<4sHHIII"          # magic, version, session, size_bytes, meta_bytes, CRC-32 of the rest
HEADER_CRC_SPAN = 16              # bytes of the header the CRC covers (all fields before it)
HEADER_BYTES = 32                 # the header's reserved space (bytes)
META_BYTES = 4096                 # default meta area (bytes): config JSON (~1.2 kB) + topic definitions
MIN_DATA_BYTES = 1024             # smallest data area accepted (bytes)
PREALLOC_CHUNK_BYTES = 4096       # zeros written per call when the file is created
# records held in RAM before they are encoded and written together: 32 on CPython; 8 on a board (~2 kB of
# RAM held, and a reset there loses little more than the records not yet flushed, see the module docstring)
BATCH_RECORDS = 8 if sys.implementation.name == "micropython" else 32

SYNC = 0xA5
SYNC_BYTE = b"\xa5"
RECORD_HEAD_FMT = "<BBHHI"        # sync, id, payload length (bytes), session, sequence
RECORD_HEAD_BYTES = 10
CRC_FMT = "<I"
CRC_BYTES = 4
RECORD_OVERHEAD_BYTES = RECORD_HEAD_BYTES + CRC_BYTES
MAX_PAYLOAD_BYTES = 0xFFFF
SESSION_MAX = 0xFFFF
SEQ_MASK = 0xFFFFFFFF             # a record's sequence is the data record count modulo 2**32 (u32: wraps)

ID_CONFIG = 0                     # meta: the /app/config record (int64 time_us + JSON)
ID_TOPIC = 1                      # meta: a topic definition
FIRST_TOPIC_ID = 2
MAX_TOPIC_ID = 0x7F
EXPLICIT_TIME = 0x80              # id bit: the payload starts with the record's time (int64, us)
TIME_FMT = "<q"
TIME_BYTES = 8

# field layout codes (one byte per field of a topic definition)
FIELD_NONE = 0                    # None (no bytes)
FIELD_INT = 1                     # int64
FIELD_FLOAT = 2                   # double
FIELD_JSON = 3                    # u16 length + JSON text (str, bool, nested or mixed tuples, ints beyond int64)
FIELD_VECTOR = 0x80               # | n: a tuple of n doubles (n < 128)
MAX_VECTOR = 0x7F
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
JSON_LEN_FMT = "<H"
JSON_LEN_BYTES = 2
TOPIC_DEF_FMT = "<BB"             # the defined id, number of fields; then layout codes, then text

TIME_FIELD = "time_us"
_STRUCT_ERRORS = (TypeError, ValueError, OverflowError, getattr(struct, "error", ValueError))
# what decoding a record whose CRC holds but whose content is malformed raises (RuntimeError: CPython's
# RecursionError, MicroPython's recursion limit, on JSON nested thousands deep; ValueError: bad JSON or UTF-8)
_RECORD_ERRORS = _STRUCT_ERRORS + (IndexError, KeyError, RuntimeError)


class RingLogError(ValueError):
    """A ring log that cannot be created or written as asked (bad size, config too large)."""


# ---------------------------------------------------------------------------------------------- CRC-32
def _crc32_table():
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = None


def crc32_pure(data, crc=0):
    """The zlib CRC-32 of ``data`` continuing from ``crc`` (pure Python, equals ``binascii.crc32``)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _crc32_table()
    table = _TABLE
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32(data, crc=0):
    """The zlib CRC-32 of ``data`` (bytes-like) continuing from ``crc``; unsigned 32-bit."""
    if _crc32_c is None:
        return crc32_pure(data, crc)
    return _crc32_c(data, crc) & 0xFFFFFFFF


if _crc32_c is not None and _crc32_c(b"\xff\xff\xff\xff") > 0:
    crc32 = _crc32_c          # noqa: F811 - CPython's: already unsigned, no wrapper call per record


# ---------------------------------------------------------------------------------------------- framing
def _header(session, size_bytes, meta_bytes):
    body = struct.pack(HEADER_FMT, MAGIC, VERSION, session, size_bytes, meta_bytes, 0)
    head = body[:HEADER_CRC_SPAN]
    crc = struct.pack(CRC_FMT, crc32(head))
    return head + crc + bytes(HEADER_BYTES - HEADER_CRC_SPAN - CRC_BYTES)


def parse_header(data):
    """-> (session, size_bytes, meta_bytes) of a valid file header at the start of ``data``, or None."""
    if len(data) < HEADER_BYTES:
        return None
    magic, version, session, size_bytes, meta_bytes, crc = struct.unpack_from(HEADER_FMT, data, 0)
    if magic != MAGIC or version != VERSION or crc != crc32(data[:HEADER_CRC_SPAN]):
        return None
    return session, size_bytes, meta_bytes


def _frame(rid, session, seq, payload):
    head = struct.pack(RECORD_HEAD_FMT, SYNC, rid, len(payload), session, seq)
    crc = crc32(payload, crc32(head[1:]))
    return head + payload + struct.pack(CRC_FMT, crc)


def _scan(data, start, end):
    """Valid records in ``data[start:end]``: list of (offset, id, session, seq, payload, length)."""
    out = []
    pos = start
    end = min(end, len(data))
    while True:
        pos = data.find(SYNC_BYTE, pos, end)
        if pos < 0 or pos + RECORD_OVERHEAD_BYTES > end:
            return out
        rec = _record_at(data, pos, end)
        if rec is None:
            pos += 1
            continue
        out.append(rec)
        pos += rec[5]


def _record_at(data, pos, end):
    """The record at ``pos`` (see :func:`_scan`) when its CRC holds, else None."""
    _, rid, plen, session, seq = struct.unpack_from(RECORD_HEAD_FMT, data, pos)
    length = RECORD_OVERHEAD_BYTES + plen
    if pos + length > end:
        return None
    body_end = pos + RECORD_HEAD_BYTES + plen
    crc = struct.unpack_from(CRC_FMT, data, body_end)[0]
    if crc32(data[pos + RECORD_HEAD_BYTES:body_end], crc32(data[pos + 1:pos + RECORD_HEAD_BYTES])) != crc:
        return None
    return pos, rid, session, seq, data[pos + RECORD_HEAD_BYTES:body_end], length


# ---------------------------------------------------------------------------------------------- encoding
def _message_fields(msg):
    """-> (type name, field names, values): a sample (``FIELDS``) by its class, a dict by sorted keys."""
    names = getattr(msg, "FIELDS", None)
    if names is not None:
        return type(msg).__name__, names, [getattr(msg, n) for n in names]
    if isinstance(msg, dict):
        names = sorted(msg)
        return "", names, [msg[n] for n in names]
    raise TypeError("cannot record a %s" % type(msg).__name__)


def _code(value):
    """The layout code of one field value (exact types: a bool or an int subclass goes as JSON)."""
    t = type(value)
    if t is float:
        return FIELD_FLOAT
    if t is int:
        # beyond int64 as JSON: MicroPython's struct would wrap such an int silently
        return FIELD_INT if INT64_MIN <= value <= INT64_MAX else FIELD_JSON
    if value is None:
        return FIELD_NONE
    if t is tuple and len(value) <= MAX_VECTOR:
        for x in value:
            if type(x) is not float:
                return FIELD_JSON
        return FIELD_VECTOR | len(value)
    return FIELD_JSON


def _struct_fmt(codes):
    """The ``struct`` format of a layout's numeric fields (JSON fields follow it)."""
    parts = ["<"]
    for c in codes:
        if c == FIELD_INT:
            parts.append("q")
        elif c == FIELD_FLOAT:
            parts.append("d")
        elif c & FIELD_VECTOR:
            parts.append("%dd" % (c & MAX_VECTOR))
    return "".join(parts)


def _packer(fmt):
    """``pack(*values)`` of a ``struct`` format, compiled once where ``struct.Struct`` exists."""
    cls = getattr(struct, "Struct", None)
    if cls is not None:
        return cls(fmt).pack
    return lambda *values: struct.pack(fmt, *values)


_pack_crc = _packer(CRC_FMT)


def _pack_refuses_big_ints():
    """True where ``struct`` raises for an int beyond int64 (CPython); MicroPython's wraps it."""
    try:
        struct.pack("<q", 1 << 64)
    except _STRUCT_ERRORS:
        return True
    return False


_RANGE_BY_STRUCT = _pack_refuses_big_ints()


def _getter(names, of_dict):
    """``fn(msg)`` -> the tuple of ``msg``'s fields ``names`` (attributes, or a dict's keys)."""
    if of_dict:
        if _itemgetter is not None and len(names) > 1:
            return _itemgetter(*names)
        return lambda msg: tuple([msg[n] for n in names])
    if _attrgetter is not None and len(names) > 1:
        return _attrgetter(*names)
    return lambda msg: tuple([getattr(msg, n) for n in names])


def _flattener(codes):
    """``fn(values)`` -> the numbers a layout packs (vector fields spread in place, None fields left
    out), or None when ``values`` do not have the layout's shape (a vector field that is not a
    tuple, a None field that is not None); the element types are checked by the caller."""

    def flatten(values):
        nums = []
        for c, v in zip(codes, values):
            if c & FIELD_VECTOR:
                if type(v) is not tuple:
                    return None
                nums.extend(v)
            elif c == FIELD_NONE:
                if v is not None:
                    return None
            else:
                nums.append(v)
        return nums
    return flatten


class _Layout:
    """How the last message of one class on one topic was laid out, so that the next one of the same
    shape is framed without working its layout out again (:meth:`frame`): its topic definition ``t``,
    the types of its values field by field and flattened (vector elements in place), and the
    ``struct`` packers of a whole record's head + payload (with and without the explicit time). Only
    for layouts of numbers (int64, double, double vectors, None); the others take the long way."""

    def __init__(self, t, of_dict, values, nums, cls=None):
        self.t = t
        self.of_dict = of_dict
        self.get = _getter(t.names, of_dict)
        self.n_fields = len(t.names)
        self.types = tuple(map(type, values))
        self.num_types = tuple(map(type, nums))
        numbers_only = True
        for c in t.codes:
            if c != FIELD_INT and c != FIELD_FLOAT:
                numbers_only = False
        self.flatten = None if numbers_only else _flattener(t.codes)
        self.pack = _packer(RECORD_HEAD_FMT + t.fmt[1:])
        self.pack_timed = _packer(RECORD_HEAD_FMT + "q" + t.fmt[1:])
        self.rid = t.rid
        self.int_fields = tuple([i for i in range(len(t.codes)) if t.codes[i] == FIELD_INT])
        self.time_index = t.time_index
        self.payload_bytes = t.fmt_bytes
        self.timed_bytes = TIME_BYTES + t.fmt_bytes
        compiled = _compiled_frame(self, _normalising_sample(cls))
        if compiled is not None:
            self.frame = compiled

    def frame(self, msg, time_us, session, seq):
        """The record of ``msg`` at ``time_us`` (bytes) when it has this layout's shape, else None.
        Exact: the same bytes the long way gives (every value's type is checked, vector elements
        included; an int beyond int64 is refused)."""
        try:
            if self.of_dict and len(msg) != self.n_fields:
                return None
            values = self.get(msg)
        except (KeyError, AttributeError):
            return None
        flatten = self.flatten
        if flatten is None:
            if tuple(map(type, values)) != self.types:
                return None
            nums = values
        else:
            if len(values) != self.n_fields:
                return None
            nums = flatten(values)
            if nums is None or tuple(map(type, nums)) != self.num_types:
                return None
        if not _RANGE_BY_STRUCT:
            for i in self.int_fields:
                if values[i] < INT64_MIN or values[i] > INT64_MAX:
                    return None
        try:
            if self.time_index < 0 or values[self.time_index] != time_us:
                rec = self.pack_timed(SYNC, self.rid | EXPLICIT_TIME, self.timed_bytes, session, seq, time_us, *nums)
            else:
                rec = self.pack(SYNC, self.rid, self.payload_bytes, session, seq, *nums)
        except _STRUCT_ERRORS:
            return None
        return rec + _pack_crc(crc32(rec[1:]))


_FRAME_SRC = """
def frame(m, time_us, session, seq):
    try:
%s
    except (KeyError, AttributeError, ValueError, TypeError, OverflowError, StructError):
        return None
"""


def _normalising_sample(cls):
    """True for a class of ``onboard.core.samples`` (the type :func:`read_log` rebuilds a record as):
    its constructor makes every int field an int and every number of a float field or vector a
    float, so a value of the other number type decodes to the same sample."""
    if cls is None or not hasattr(cls, "FIELDS"):
        return False
    from onboard.core import samples
    return getattr(samples, cls.__name__, None) is cls


def _compiled_frame(lay, normalising=False):
    """:meth:`_Layout.frame` written out for one layout: the fields read one by one, each value's type
    checked in line (vector elements included) and packed in one call; the same bytes and the same
    refusals as the generic method. ``normalising`` (:func:`_normalising_sample`): only the layout's
    shape is checked (a vector field is a tuple of its length, a None field is None; ``struct``
    refuses a float or an out-of-range int for an int64), not whether a number is an int or a float:
    the record decodes to the same sample. None where ``exec`` is missing."""
    t = lay.t
    lines = []
    if lay.of_dict:
        lines.append("if len(m) != %d: return None" % len(t.names))
    args = []
    checks = []
    for i, (name, c) in enumerate(zip(t.names, t.codes)):
        v = "v%d" % i
        lines.append("%s = m[%r]" % (v, name) if lay.of_dict else "%s = m.%s" % (v, name))
        if c == FIELD_INT:
            if not normalising:
                checks.append("type(%s) is int" % v)
            if not _RANGE_BY_STRUCT:
                checks.append("%d <= %s <= %d" % (INT64_MIN, v, INT64_MAX))
            args.append(v)
        elif c == FIELD_FLOAT:
            if not normalising:
                checks.append("type(%s) is float" % v)
            args.append(v)
        elif c == FIELD_NONE:
            checks.append("%s is None" % v)
        else:
            n = c & MAX_VECTOR
            checks.append("type(%s) is tuple and len(%s) == %d" % (v, v, n))
            elems = ["%s_%d" % (v, k) for k in range(n)]
            lines.append("if not (%s): return None" % " and ".join(checks))
            checks = []
            if n:
                lines.append("%s, = %s" % (", ".join(elems), v) if n == 1 else "%s = %s" % (", ".join(elems), v))
                if not normalising:
                    checks.extend(["type(%s) is float" % e for e in elems])
            args.extend(elems)
    if checks:
        lines.append("if not (%s): return None" % " and ".join(checks))
    tail = ", ".join(["session", "seq"] + args)
    timed = "r = pack_timed(SYNC, RID | EXPLICIT_TIME, TIMED_BYTES, %s)" % ", ".join(
        ["session", "seq", "time_us"] + args)
    if t.time_index < 0:
        lines.append(timed)
    else:
        lines.append("if v%d == time_us: r = pack(SYNC, RID, PAYLOAD_BYTES, %s)" % (t.time_index, tail))
        lines.append("else: " + timed)
    lines.append("return r + pack_crc(crc32(r[1:]))")
    src = _FRAME_SRC % "\n".join("        " + line for line in lines)
    env = {"pack": lay.pack, "pack_timed": lay.pack_timed, "pack_crc": _pack_crc, "crc32": crc32, "SYNC": SYNC,
           "RID": t.rid, "EXPLICIT_TIME": EXPLICIT_TIME,
           "PAYLOAD_BYTES": lay.payload_bytes, "TIMED_BYTES": lay.timed_bytes,
           "StructError": getattr(struct, "error", ValueError)}
    try:
        exec(src, env)
    except Exception:       # pragma: no cover - an interpreter without exec, or a name it cannot compile
        return None
    return env["frame"]


def _numeric(codes):
    """True when a layout holds numbers only (no JSON field)."""
    for c in codes:
        if c == FIELD_JSON:
            return False
    return True


class _Topic:
    """A topic definition: record id, topic, type name, field names, layout codes, struct format."""

    def __init__(self, rid, topic, type_name, names, codes):
        self.rid = rid
        self.topic = topic
        self.type_name = type_name
        self.names = tuple(names)
        self.codes = bytes(codes)
        self.fmt = _struct_fmt(self.codes)
        self.fmt_bytes = struct.calcsize(self.fmt)
        self.time_index = self.names.index(TIME_FIELD) if TIME_FIELD in self.names else -1

    def payload(self):
        text = "%s\n%s\n%s" % (self.topic, self.type_name, ",".join(self.names))
        return struct.pack(TOPIC_DEF_FMT, self.rid, len(self.codes)) + self.codes + text.encode()


def _parse_topic(payload):
    rid, n = struct.unpack_from(TOPIC_DEF_FMT, payload, 0)
    start = struct.calcsize(TOPIC_DEF_FMT)
    codes = payload[start:start + n]
    topic, type_name, names = bytes(payload[start + n:]).decode().split("\n")
    return _Topic(rid, topic, type_name, names.split(",") if names else [], codes)


# ---------------------------------------------------------------------------------------------- writer
class RingLogSink:
    """Recording sink writing a ring log of ``size_bytes`` (bytes of flash, the whole file) at
    ``file_path``: ``sink(topic, time_us, msg)`` as :meth:`onboard.runtime.node.Node.record` calls it.

    meta_bytes: the meta area (config JSON + topic definitions), bytes.
    flush_records: flush the file every this many data records (0: only at :meth:`flush`/:meth:`close`),
    at the end of the batch write that reaches it; on a littlefs flash what is not flushed is lost with
    a reset.
    batch_records: messages held before they are framed and written together (see the module
    docstring for what a reset loses); ``records`` and ``bytes_written`` count what was written.

    A message that cannot be encoded, a topic the meta area has no room for and a record larger than
    the data area are counted and skipped; a write error (flash full or failing) is counted, stops
    the log and is kept in ``error``: recording never stops the app. ``/app/config`` larger than the
    meta area raises :class:`RingLogError` (at the start of recording).
    """

    def __init__(self, file_path, size_bytes, meta_bytes=META_BYTES, flush_records=0, batch_records=BATCH_RECORDS):
        if not isinstance(size_bytes, int) or not isinstance(meta_bytes, int) or meta_bytes < 0:
            raise RingLogError("ring log sizes must be whole numbers of bytes")
        if not isinstance(batch_records, int) or batch_records < 1:
            raise RingLogError("batch_records must be a whole number >= 1, got %r" % (batch_records,))
        if size_bytes < HEADER_BYTES + meta_bytes + MIN_DATA_BYTES:
            raise RingLogError("ring log of %d bytes is too small: header %d + meta %d + at least %d of data"
                               % (size_bytes, HEADER_BYTES, meta_bytes, MIN_DATA_BYTES))
        self.path = file_path
        self.size_bytes = size_bytes
        self.meta_bytes = meta_bytes
        self.data_start = HEADER_BYTES + meta_bytes
        self.flush_records = flush_records
        self.batch_records = batch_records
        self._held = []               # (topic, time_us, msg) recorded, not yet encoded and written
        self._layouts = {}            # (topic, message class) -> _Layout of its last numeric record
        self.records = 0              # data records written
        self.bytes_written = 0        # data record bytes written (headers + payloads + CRCs)
        self.wraps = 0
        self.unencodable = 0
        self.meta_full = 0
        self.too_large = 0
        self.write_errors = 0
        self.error = None
        self.created = False
        self._topics = {}             # (topic, layout codes) -> _Topic, or None when the meta area was full
        self._next_id = FIRST_TOPIC_ID
        self._meta_seq = 0
        self._since_flush = 0
        self._f = None
        self._open()

    # ------------------------------------------------------------ file
    def _open(self):
        prev = None
        try:
            f = open(self.path, "r+b")
        except OSError:
            f = None
        if f is not None:
            f.seek(0, 2)
            if f.tell() == self.size_bytes:
                f.seek(0)
                prev = parse_header(f.read(HEADER_BYTES))
            if (prev is None or prev[1] != self.size_bytes or prev[2] != self.meta_bytes
                    or prev[0] >= SESSION_MAX):
                # (after session SESSION_MAX the number starts again at 1: the file is zeroed, so that no
                # record of an older session of the same number is read as the new one's)
                prev = None
                f.close()
                f = None
        if f is None:
            self._create()
            f = open(self.path, "r+b")
        self.session = 1 if prev is None else prev[0] + 1
        try:
            f.seek(0)
            f.write(_header(self.session, self.size_bytes, self.meta_bytes))
        except OSError:
            f.close()
            raise
        self._f = f
        self._meta_pos = HEADER_BYTES
        self._pos = self.data_start
        f.seek(self._pos)

    def _create(self):
        """The file at its full size, zeros (once: later sessions reuse it)."""
        zeros = bytes(PREALLOC_CHUNK_BYTES)
        left = self.size_bytes
        with open(self.path, "wb") as f:
            while left > 0:
                n = min(left, PREALLOC_CHUNK_BYTES)
                f.write(zeros if n == PREALLOC_CHUNK_BYTES else bytes(n))
                left -= n
        self.created = True

    def _write_meta(self, rid, payload):
        rec = _frame(rid, self.session, self._meta_seq, payload)
        if self._meta_pos + len(rec) > self.data_start:
            return False
        self._f.seek(self._meta_pos)
        self._f.write(rec)
        self._f.seek(self._pos)
        self._meta_pos += len(rec)
        self._meta_seq += 1
        return True

    # ------------------------------------------------------------ sink
    def __call__(self, topic, time_us, msg):
        if self._f is None:
            return
        if topic == CONFIG_TOPIC:
            self.write_held()
            try:
                self._config(time_us, msg)
            except OSError as exc:
                self._failed(exc)
            return
        held = self._held
        held.append((topic, time_us, msg))
        if len(held) >= self.batch_records:
            self.write_held()

    def _failed(self, exc):
        """A write error: counted, kept in ``error``, the log stopped (the file closed; a close that fails
        as well, as a buffered file on a failing flash does, is ignored: recording never stops the app)."""
        self.write_errors += 1
        self.error = "write failed: %s" % (exc,)
        self._held = []
        f = self._f
        self._f = None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass

    def write_held(self):
        """Encode the held messages and write their records, in order, with one ``write`` per run of
        records up to the end of the data area (the rest of the area is zeroed and writing wraps)."""
        held = self._held
        if not held or self._f is None:
            return
        self._held = []
        size = self.size_bytes
        layouts = self._layouts
        session = self.session
        out = []
        append = out.append
        pos = self._pos
        seq = first = self.records
        nbytes = 0
        try:
            for topic, time_us, msg in held:
                lay = layouts.get((topic, type(msg)))
                rec = None if lay is None else lay.frame(msg, time_us, session, seq & SEQ_MASK)
                if rec is None:
                    self.records = seq
                    try:
                        rec = self._encode(topic, time_us, msg)
                    except _STRUCT_ERRORS:
                        self.unencodable += 1
                        continue
                    if rec is None:
                        continue
                n = len(rec)
                if pos + n > size:
                    # zero the rest (no record of an older lap survives there), wrap to the oldest record
                    append(bytes(size - pos))
                    self._f.write(b"".join(out))
                    out = []
                    append = out.append
                    pos = self._pos = self.data_start
                    self._f.seek(pos)
                    self.wraps += 1
                append(rec)
                pos += n
                nbytes += n
                seq += 1
            if out:
                self._f.write(b"".join(out))
            self.bytes_written += nbytes
            written = seq - first
            self.records = seq
            self._pos = pos
            if self.flush_records and written:
                self._since_flush += written
                if self._since_flush >= self.flush_records:
                    self._since_flush = 0
                    self._f.flush()
        except OSError as exc:
            self._failed(exc)

    def _config(self, time_us, msg):
        payload = struct.pack(TIME_FMT, time_us) + json.dumps(msg).encode()
        if not self._write_meta(ID_CONFIG, payload):
            raise RingLogError("%s of %d bytes does not fit the ring log's meta area (%d bytes)"
                               % (CONFIG_TOPIC, len(payload), self.meta_bytes))

    def _encode(self, topic, time_us, msg):
        """The framed record of ``msg`` worked out field by field (bytes), or None when it is skipped
        (counted); a numeric layout is kept for the next messages of its class on the topic."""
        type_name, names, values = _message_fields(msg)
        codes = bytes([_code(v) for v in values])
        key = (topic, codes)
        t = self._topics.get(key, 0)
        if t == 0:
            t = self._define(key, type_name, names, codes)
        if t is None:
            self.meta_full += 1
            return None
        nums = []
        texts = []
        for c, v in zip(t.codes, values):
            if c == FIELD_INT or c == FIELD_FLOAT:
                nums.append(v)
            elif c == FIELD_JSON:
                texts.append(json.dumps(v).encode())
            elif c & FIELD_VECTOR:
                nums.extend(v)
        payload = struct.pack(t.fmt, *nums)
        for text in texts:
            payload += struct.pack(JSON_LEN_FMT, len(text)) + text
        rid = t.rid
        if t.time_index < 0 or values[t.time_index] != time_us:
            rid |= EXPLICIT_TIME
            payload = struct.pack(TIME_FMT, time_us) + payload
        if len(payload) > MAX_PAYLOAD_BYTES:
            self.too_large += 1
            return None
        rec = _frame(rid, self.session, self.records & SEQ_MASK, payload)
        if len(rec) > self.size_bytes - self.data_start:
            self.too_large += 1
            return None
        if not texts and _numeric(t.codes):
            self._layouts[(topic, type(msg))] = _Layout(t, not type_name, values, nums, type(msg))
        return rec

    def _define(self, key, type_name, names, codes):
        t = None
        if self._next_id <= MAX_TOPIC_ID:
            t = _Topic(self._next_id, key[0], type_name, names, codes)
            if self._write_meta(ID_TOPIC, t.payload()):
                self._next_id += 1
            else:
                t = None
        self._topics[key] = t
        return t

    # ------------------------------------------------------------ control
    def flush(self):
        """Write the held records and flush the file."""
        if self._f is not None:
            self.write_held()
        if self._f is not None:
            try:
                self._f.flush()
            except OSError as exc:
                self._failed(exc)

    def close(self):
        """Write the held records, flush and close the file (idempotent); the sink ignores messages
        afterwards."""
        if self._f is not None and self._held:
            self.write_held()
        f = self._f
        if f is not None:
            try:
                f.flush()
                f.close()
            except OSError as exc:
                self._failed(exc)
            self._f = None

    @property
    def closed(self):
        return self._f is None

    def report(self):
        """Counters: session, records, bytes (written), wraps, skipped messages, write errors."""
        return {"session": self.session, "records": self.records, "bytes": self.bytes_written,
                "wraps": self.wraps, "unencodable": self.unencodable, "meta_full": self.meta_full,
                "too_large": self.too_large, "write_errors": self.write_errors, "error": self.error,
                "size_bytes": self.size_bytes}


# ---------------------------------------------------------------------------------------------- reader
class RingLogContents:
    """What :func:`read_log` found.

    config, config_time_us: the session's ``/app/config`` message (dict) and its time (us), or None.
    records: [(topic, time_us, type name, msg)] oldest first; msg is the ``onboard.core.samples`` object
    of that type, or a dict (dict messages, or a type this runtime does not know).
    session: the session read; size_bytes: as the header says (or the data's length without a header).
    dropped: sequence numbers missing between the oldest and the newest record kept (a bad CRC);
    torn: 1 when the record after the newest one was cut (a torn last write); stale: valid records of
    older sessions (ignored); undecodable: records without a topic definition or whose fields do not
    build their sample, and meta records (config, topic definitions) whose content does not parse (their
    CRC holds: a buggy writer or a forged file); first_seq/last_seq: sequence numbers (u32, modulo 2**32)
    of the oldest/newest record (first_seq > 0: the log wrapped and older records were overwritten, or the
    first ones were bad; last_seq < first_seq: the sequence wrapped past 2**32 in between);
    truncated_bytes: how much shorter than size_bytes the data was; header_ok: the file header was valid.
    """

    def __init__(self):
        self.config = None
        self.config_time_us = None
        self.records = []
        self.session = None
        self.size_bytes = 0
        self.header_ok = False
        self.dropped = 0
        self.torn = 0
        self.stale = 0
        self.undecodable = 0
        self.first_seq = None
        self.last_seq = None
        self.truncated_bytes = 0

    @property
    def damaged(self):
        return bool(self.dropped or self.torn or self.undecodable or self.truncated_bytes or not self.header_ok
                    or self.config is None)

    def summary(self):
        return {"session": self.session, "records": len(self.records), "dropped": self.dropped,
                "torn": self.torn, "stale": self.stale, "undecodable": self.undecodable,
                "first_seq": self.first_seq, "last_seq": self.last_seq, "size_bytes": self.size_bytes,
                "truncated_bytes": self.truncated_bytes, "header_ok": self.header_ok,
                "config": self.config is not None}


def read_log(data):
    """Read a ring log file's bytes (``bytes``; may be cut short) -> :class:`RingLogContents`."""
    out = RingLogContents()
    header = parse_header(data)
    if header is not None:
        out.header_ok = True
        out.session, out.size_bytes, meta_bytes = header
    else:
        out.size_bytes = len(data)
        meta_bytes = META_BYTES
    out.truncated_bytes = max(0, out.size_bytes - len(data))
    data_start = HEADER_BYTES + meta_bytes
    found = _scan(data, data_start, out.size_bytes)
    if out.session is None:           # no header: the newest session found
        for rec in found:
            if out.session is None or rec[2] > out.session:
                out.session = rec[2]
    topics = {}
    for _, rid, session, _, payload, _ in _scan(data, HEADER_BYTES, data_start):
        if session != out.session:
            continue
        try:
            if rid == ID_CONFIG:
                config_time_us = struct.unpack_from(TIME_FMT, payload, 0)[0]
                config = json.loads(bytes(payload[TIME_BYTES:]).decode())
                if not isinstance(config, dict):
                    raise ValueError("config is not a JSON object")
                out.config_time_us, out.config = config_time_us, config
            elif rid == ID_TOPIC:
                t = _parse_topic(payload)
                topics[t.rid] = t
        except _RECORD_ERRORS:            # a meta record whose CRC holds but whose content does not parse
            out.undecodable += 1
    kept = {}
    for rec in found:
        if rec[2] != out.session or rec[3] in kept:
            out.stale += 1
        else:
            kept[rec[3]] = rec
    if not kept:
        return out
    seqs = serial_order(kept)
    out.first_seq, out.last_seq = seqs[0], seqs[-1]
    out.dropped = ((out.last_seq - out.first_seq) & SEQ_MASK) + 1 - len(seqs)
    newest = kept[out.last_seq]
    out.torn = _torn_after(data, newest[0] + newest[5], out.size_bytes, out.session,
                           (out.last_seq + 1) & SEQ_MASK)
    from onboard.core import samples
    for seq in seqs:
        _, rid, _, _, payload, _ = kept[seq]
        t = topics.get(rid & MAX_TOPIC_ID)
        if t is None:
            out.undecodable += 1
            continue
        try:
            out.records.append(_decode(t, rid, payload, samples))
        except _RECORD_ERRORS:   # struct.error: a body short for its topic's layout; RuntimeError: JSON too deep
            out.undecodable += 1
    return out


def serial_order(seqs):
    """The distinct u32 sequence numbers ``seqs`` oldest first, in serial-number arithmetic (RFC 1982):
    they span less than 2**31 (one data area's records), so the oldest is the one after the widest gap
    between neighbours modulo 2**32 (the sequence may have wrapped past 2**32 in between)."""
    seqs = sorted(seqs)
    n = len(seqs)
    start = 0
    widest = (seqs[0] - seqs[-1]) & SEQ_MASK          # the gap from the largest round to the smallest
    for i in range(1, n):
        if seqs[i] - seqs[i - 1] > widest:
            widest = seqs[i] - seqs[i - 1]
            start = i
    return seqs[start:] + seqs[:start]


def _torn_after(data, pos, end, session, seq):
    """1 when a record of ``session`` with sequence ``seq`` starts at ``pos`` but is cut or fails its CRC."""
    end = min(end, len(data))
    if pos >= len(data) or data[pos] != SYNC:
        return 0
    if pos + RECORD_HEAD_BYTES > len(data):
        return 1
    _, _, _, s, q = struct.unpack_from(RECORD_HEAD_FMT, data, pos)
    return 1 if s == session and q == seq and _record_at(data, pos, end) is None else 0


def _decode(t, rid, payload, samples):
    off = 0
    time_us = None
    if rid & EXPLICIT_TIME:
        time_us = struct.unpack_from(TIME_FMT, payload, 0)[0]
        off = TIME_BYTES
    nums = struct.unpack_from(t.fmt, payload, off)
    off += t.fmt_bytes
    k = 0
    values = []
    for c in t.codes:
        if c == FIELD_NONE:
            values.append(None)
        elif c == FIELD_INT or c == FIELD_FLOAT:
            values.append(nums[k])
            k += 1
        elif c == FIELD_JSON:
            n = struct.unpack_from(JSON_LEN_FMT, payload, off)[0]
            off += JSON_LEN_BYTES
            values.append(json.loads(bytes(payload[off:off + n]).decode()))
            off += n
        else:
            n = c & MAX_VECTOR
            values.append(tuple(nums[k:k + n]))
            k += n
    fields = dict(zip(t.names, values))
    if time_us is None:
        time_us = fields[TIME_FIELD]
    cls = getattr(samples, t.type_name, None) if t.type_name else None
    msg = cls(**fields) if cls is not None and getattr(cls, "FIELDS", None) == t.names else fields
    return t.topic, time_us, t.type_name, msg


def read_log_file(path):
    """:func:`read_log` of the file at ``path``."""
    with open(path, "rb") as f:
        return read_log(f.read())
