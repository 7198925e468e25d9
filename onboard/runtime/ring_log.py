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
were not overwritten yet are ignored by the reader (counted as ``stale``).

Crash safety: a record is one ``write``; a write torn by a reset or power loss leaves a record whose
CRC fails. The reader scans the area record by record (resynchronising byte by byte after a bad
record), keeps the records of the header's session whose CRC holds, orders them by sequence and
counts the sequence numbers missing between the oldest and the newest as ``dropped``; a bad record
right after the newest one is the ``torn`` last write. CRC-32 rather than the link's CRC-16
(``onboard.comms.crc``): the C ``binascii.crc32`` costs ~3 us per record where the pure-Python
CRC-16 costs ~100 us (MicroPython 1.27, WebAssembly build), and 32 bits make a false resync in
stale bytes unlikely. A pure-Python CRC-32 stands in on builds without ``binascii.crc32``.
"""
import json
import struct

from onboard.runtime.node import CONFIG_TOPIC

try:
    from binascii import crc32 as _crc32_c
except ImportError:          # pragma: no cover - a MicroPython build without binascii.crc32
    _crc32_c = None

MAGIC = b"ORL1"
VERSION = 1
HEADER_FMT = "<4sHHIII"          # magic, version, session, size_bytes, meta_bytes, CRC-32 of the rest
HEADER_CRC_SPAN = 16              # bytes of the header the CRC covers (all fields before it)
HEADER_BYTES = 32                 # the header's reserved space (bytes)
META_BYTES = 4096                 # default meta area (bytes): config JSON (~1.2 kB) + topic definitions
MIN_DATA_BYTES = 1024             # smallest data area accepted (bytes)
PREALLOC_CHUNK_BYTES = 4096       # zeros written per call when the file is created

SYNC = 0xA5
SYNC_BYTE = b"\xa5"
RECORD_HEAD_FMT = "<BBHHI"        # sync, id, payload length (bytes), session, sequence
RECORD_HEAD_BYTES = 10
CRC_FMT = "<I"
CRC_BYTES = 4
RECORD_OVERHEAD_BYTES = RECORD_HEAD_BYTES + CRC_BYTES
MAX_PAYLOAD_BYTES = 0xFFFF
SESSION_MAX = 0xFFFF

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
    flush_records: flush the file every this many data records (0: only at :meth:`flush`/:meth:`close`);
    on a littlefs flash what is not flushed is lost with a reset.

    A message that cannot be encoded, a topic the meta area has no room for and a record larger than
    the data area are counted and skipped; a write error (flash full or failing) is counted, stops
    the log and is kept in ``error``: recording never stops the app. ``/app/config`` larger than the
    meta area raises :class:`RingLogError` (at the start of recording).
    """

    def __init__(self, file_path, size_bytes, meta_bytes=META_BYTES, flush_records=0):
        if not isinstance(size_bytes, int) or not isinstance(meta_bytes, int) or meta_bytes < 0:
            raise RingLogError("ring log sizes must be whole numbers of bytes")
        if size_bytes < HEADER_BYTES + meta_bytes + MIN_DATA_BYTES:
            raise RingLogError("ring log of %d bytes is too small: header %d + meta %d + at least %d of data"
                               % (size_bytes, HEADER_BYTES, meta_bytes, MIN_DATA_BYTES))
        self.path = file_path
        self.size_bytes = size_bytes
        self.meta_bytes = meta_bytes
        self.data_start = HEADER_BYTES + meta_bytes
        self.flush_records = flush_records
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
            if prev is None or prev[1] != self.size_bytes or prev[2] != self.meta_bytes:
                prev = None
                f.close()
                f = None
        if f is None:
            self._create()
            f = open(self.path, "r+b")
        self.session = 1 if prev is None or prev[0] >= SESSION_MAX else prev[0] + 1
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
        try:
            if topic == CONFIG_TOPIC:
                self._config(time_us, msg)
                return
            try:
                rec = self._encode(topic, time_us, msg)
            except _STRUCT_ERRORS:
                self.unencodable += 1
                return
            if rec is not None:
                self._append(rec)
        except OSError as exc:
            self.write_errors += 1
            self.error = "write failed: %s" % (exc,)
            self.close()

    def _config(self, time_us, msg):
        payload = struct.pack(TIME_FMT, time_us) + json.dumps(msg).encode()
        if not self._write_meta(ID_CONFIG, payload):
            raise RingLogError("%s of %d bytes does not fit the ring log's meta area (%d bytes)"
                               % (CONFIG_TOPIC, len(payload), self.meta_bytes))

    def _encode(self, topic, time_us, msg):
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
        rec = _frame(rid, self.session, self.records, payload)
        if len(rec) > self.size_bytes - self.data_start:
            self.too_large += 1
            return None
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

    def _append(self, rec):
        n = len(rec)
        if self._pos + n > self.size_bytes:
            # zero the rest (no record of an older lap survives there), wrap to the oldest record
            self._f.write(bytes(self.size_bytes - self._pos))
            self._pos = self.data_start
            self._f.seek(self._pos)
            self.wraps += 1
        self._f.write(rec)
        self._pos += n
        self.records += 1
        self.bytes_written += n
        if self.flush_records:
            self._since_flush += 1
            if self._since_flush >= self.flush_records:
                self._since_flush = 0
                self._f.flush()

    # ------------------------------------------------------------ control
    def flush(self):
        if self._f is not None:
            self._f.flush()

    def close(self):
        """Flush and close the file (idempotent); the sink ignores messages afterwards."""
        f = self._f
        self._f = None
        if f is not None:
            try:
                f.flush()
            finally:
                f.close()

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
    build their sample; first_seq/last_seq: sequence numbers of the oldest/newest record
    (first_seq > 0: the log wrapped and older records were overwritten, or the first ones were bad);
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
        if rid == ID_CONFIG:
            out.config_time_us = struct.unpack_from(TIME_FMT, payload, 0)[0]
            out.config = json.loads(bytes(payload[TIME_BYTES:]).decode())
        elif rid == ID_TOPIC:
            t = _parse_topic(payload)
            topics[t.rid] = t
    kept = {}
    for rec in found:
        if rec[2] != out.session or rec[3] in kept:
            out.stale += 1
        else:
            kept[rec[3]] = rec
    if not kept:
        return out
    seqs = sorted(kept)
    out.first_seq, out.last_seq = seqs[0], seqs[-1]
    out.dropped = out.last_seq - out.first_seq + 1 - len(seqs)
    newest = kept[out.last_seq]
    out.torn = _torn_after(data, newest[0] + newest[5], out.size_bytes, out.session, out.last_seq + 1)
    from onboard.core import samples
    for seq in seqs:
        _, rid, _, _, payload, _ = kept[seq]
        t = topics.get(rid & MAX_TOPIC_ID)
        if t is None:
            out.undecodable += 1
            continue
        try:
            out.records.append(_decode(t, rid, payload, samples))
        except (ValueError, TypeError, IndexError, KeyError):
            out.undecodable += 1
    return out


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
