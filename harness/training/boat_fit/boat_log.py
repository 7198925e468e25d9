"""A user's boat log for the model fit: a CSV file or a boat app's MCAP recording, read into the log dict
of ``harness.training.boat_fit`` and checked; a malformed log raises ``ConfigError`` with one line.

CSV (format in ``harness/training/boat_fit/README.md``): a header naming exactly the columns
``time_s,thrust_left_n,thrust_right_n,gnss_north_m,gnss_east_m,yaw_rad,yaw_rate_radps`` (any order), then
one row per IMU sample: time (s, increasing), the thrusts applied from this row's time to the next (N),
the GNSS fix in local NED (m; both cells empty where there is no fix), the heading (rad, from north
towards east) and the yaw rate (rad/s, + turning right); the last two may be empty where that sensor had
no sample.

MCAP: the topics of ``onboard.vessel.log_topics`` (the boat app's recording). Rows are the thrust samples'
times: row j at the time of thrust sample j takes the thrusts of sample j + 1 (held over the interval
ending there; a thrust sample without a time is dropped and counted); each GNSS fix, heading and yaw rate
goes to the row nearest its ``time_us`` (within half a row interval; farther ones are dropped and counted).
"""
import csv
import io
import json
import math

import numpy as np

from harness.training.boat_fit.fit_windows import LOG_COLUMNS
from onboard.core.settings import ConfigError
from onboard.vessel import log_topics

MCAP_MAGIC = b"\x89MCAP0\r\n"
THRUST_COLUMNS = ("thrust_left_n", "thrust_right_n")
GNSS_COLUMNS = ("gnss_north_m", "gnss_east_m")
# Magnitudes no boat log can hold (a unit or parsing error in the file: values like 1e300 overflow the fit's
# squares into inf): per column, (largest |value|, what it would mean)
PLAUSIBLE_ABS = {"thrust_left_n": (1e5, "N of thrust (10 t)"), "thrust_right_n": (1e5, "N of thrust (10 t)"),
                 "gnss_north_m": (1e7, "m from the local origin"), "gnss_east_m": (1e7, "m from the local origin"),
                 "yaw_rad": (1e4, "rad of heading"), "yaw_rate_radps": (1e3, "rad/s of yaw rate")}


def read_log(path):
    """The checked log dict of the file at ``path`` (MCAP when it starts with the MCAP magic, else CSV), plus
    ``source`` ("csv"/"mcap") and ``notes`` (list of lines: what the reader dropped)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ConfigError("cannot read the log %s: %s" % (path, exc.strerror or exc))
    if not data:
        raise ConfigError("%s: the log is empty" % path)
    if data.startswith(MCAP_MAGIC):
        return read_mcap_bytes(data, path)
    return read_csv_bytes(data, path)


# ---------------------------------------------------------------------------------------------- CSV
class _CheckedRows:
    """A csv.reader whose parse errors (a field over the csv module's size limit) are one-line ConfigErrors
    naming the line they were found on."""

    def __init__(self, reader, name):
        self.reader = reader
        self.name = name

    @property
    def line_num(self):
        return self.reader.line_num

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.reader)
        except csv.Error as exc:
            # line_num counts the lines read so far, the one that failed included
            raise ConfigError("%s: line %d: not a CSV row (%s)" % (self.name, self.reader.line_num,
                                                                   str(exc).split(" - ")[0]))


def read_csv_bytes(data, name="log"):
    """The checked log of a CSV file's bytes (module docstring)."""
    if b"\x00" in data[:4096]:
        raise ConfigError("%s: neither a CSV log nor an MCAP recording (binary data)" % name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError("%s: not a UTF-8 text CSV (byte %d)" % (name, exc.start))
    # newline="": the csv module splits the rows itself (LF, CRLF or CR line ends alike)
    rows = _CheckedRows(csv.reader(io.StringIO(text, newline="")), name)
    header = None
    for header in rows:
        if any(cell.strip() for cell in header):
            break
    if not header or not any(cell.strip() for cell in header):
        raise ConfigError("%s: the log is empty" % name)
    cols = [cell.strip() for cell in header]
    missing = [c for c in LOG_COLUMNS if c not in cols]
    unknown = [c for c in cols if c not in LOG_COLUMNS]
    dup = sorted(set(c for c in cols if cols.count(c) > 1))
    if missing or unknown or dup:
        parts = []
        if missing:
            parts.append("missing column(s) %s" % ", ".join(missing))
        if unknown:
            parts.append("unknown column(s) %s" % ", ".join(repr(c) for c in unknown))
        if dup:
            parts.append("repeated column(s) %s" % ", ".join(dup))
        raise ConfigError("%s: line 1: %s (the header must name exactly %s)" % (name, "; ".join(parts),
                                                                                ",".join(LOG_COLUMNS)))
    where = [cols.index(c) for c in LOG_COLUMNS]
    values = []
    lines = []
    for row in rows:
        line = rows.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(cols):
            raise ConfigError("%s: line %d: %d values, expected %d (%s)" % (name, line, len(row), len(cols),
                                                                           ",".join(cols)))
        out = []
        for k, j in enumerate(where):
            cell = row[j].strip()
            if not cell:
                out.append(math.nan)
                continue
            try:
                out.append(float(cell))
            except ValueError:
                raise ConfigError("%s: line %d: %s is not a number: %r" % (name, line, LOG_COLUMNS[k], cell[:20]))
        values.append(out)
        lines.append(line)
    if not values:
        raise ConfigError("%s: the log has a header but no rows" % name)
    arr = np.array(values, dtype=float)
    log = {c: arr[:, k].copy() for k, c in enumerate(LOG_COLUMNS)}
    check_log(log, name, lambda i: "line %d" % lines[i])
    log["source"] = "csv"
    log["notes"] = []
    return log


# ---------------------------------------------------------------------------------------------- MCAP
def _mcap_messages(data, name):
    """{topic: [data dict]} of the fit topics, and a note when the file is cut or damaged after some."""
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader
    out = {topic: [] for topic in log_topics.FIT_TOPICS}
    channels = {}
    schemas = {}
    note = None
    count = 0
    try:
        for record in StreamReader(io.BytesIO(data), validate_crcs=True).records:
            if isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
            elif isinstance(record, Message):
                topic, _schema = channels.get(record.channel_id, ("", ""))
                if topic in out:
                    out[topic].append(json.loads(record.data))
                    count += 1
    except Exception as exc:        # noqa: BLE001 - a damaged file breaks the reader (mcap, zstd, json) anywhere
        if not count:
            raise ConfigError("%s: not a readable MCAP recording (%s: %s)" % (name, type(exc).__name__, exc))
        note = "%s is cut or damaged after %d messages of the fit topics (%s); the fit uses what came before" % (
            name, count, type(exc).__name__)
    return out, note


def _field(msg, key, topic, name):
    try:
        v = msg[key]
    except (KeyError, TypeError):
        raise ConfigError("%s: a %s message has no field %r (see onboard/vessel/log_topics.py)" % (name, topic, key))
    return v


def read_mcap_bytes(data, name="log"):
    """The checked log of a boat app's MCAP recording (module docstring)."""
    msgs, note = _mcap_messages(data, name)
    thrust = msgs[log_topics.THRUST_TOPIC]
    if len(thrust) < 3:
        raise ConfigError("%s: %d message(s) on %s; the fit needs the thrusts of every step (see "
                          "onboard/vessel/log_topics.py)" % (name, len(thrust), log_topics.THRUST_TOPIC))
    t_us = np.array([_num(_field(m, "time_us", log_topics.THRUST_TOPIC, name), name) for m in thrust])
    t_l = np.array([_num(_field(m, "thrust_left_n", log_topics.THRUST_TOPIC, name), name) for m in thrust])
    t_r = np.array([_num(_field(m, "thrust_right_n", log_topics.THRUST_TOPIC, name), name) for m in thrust])
    notes = [note] if note else []
    timed = np.isfinite(t_us)             # a sample without a time has no interval to be held over
    if not timed.all():
        notes.append("%d %s message(s) without a time dropped" % (int((~timed).sum()), log_topics.THRUST_TOPIC))
        t_us, t_l, t_r = t_us[timed], t_l[timed], t_r[timed]
        if len(t_us) < 3:
            raise ConfigError("%s: %d message(s) with a time on %s; the fit needs the thrusts of every step (see "
                              "onboard/vessel/log_topics.py)" % (name, len(t_us), log_topics.THRUST_TOPIC))
    order = np.argsort(t_us, kind="stable")
    t_us, t_l, t_r = t_us[order], t_l[order], t_r[order]
    rows_us = t_us[:-1]
    n = len(rows_us)
    log = {"time_s": rows_us * 1e-6, "thrust_left_n": t_l[1:], "thrust_right_n": t_r[1:]}
    for c in GNSS_COLUMNS + ("yaw_rad", "yaw_rate_radps"):
        log[c] = np.full(n, np.nan)
    half = 0.5 * float(np.median(np.diff(rows_us))) if n > 1 else 0.0

    def place(topic, getter, columns):
        dropped = 0
        for m in msgs[topic]:
            t = _num(_field(m, "time_us", topic, name), name)
            if not math.isfinite(t):
                dropped += 1
                continue
            j = int(np.searchsorted(rows_us, t))
            best = min((k for k in (j - 1, j) if 0 <= k < n), key=lambda k: abs(rows_us[k] - t), default=None)
            if best is None or abs(rows_us[best] - t) > half:
                dropped += 1
                continue
            for col, v in zip(columns, getter(m)):
                log[col][best] = v
        if dropped:
            notes.append("%d %s message(s) without a time or outside the thrust samples' times dropped"
                         % (dropped, topic))

    def gnss(m):
        pos = _field(m, "pos_ne_m", log_topics.GNSS_TOPIC, name)
        if not isinstance(pos, (list, tuple)) or len(pos) != 2:
            raise ConfigError("%s: a %s message's pos_ne_m is not [north_m, east_m]" % (name, log_topics.GNSS_TOPIC))
        return (_num(pos[0], name), _num(pos[1], name))
    place(log_topics.GNSS_TOPIC, gnss, GNSS_COLUMNS)
    place(log_topics.HEADING_TOPIC, lambda m: (_num(_field(m, "yaw_rad", log_topics.HEADING_TOPIC, name), name),),
          ("yaw_rad",))
    place(log_topics.YAW_RATE_TOPIC,
          lambda m: (_num(_field(m, "yaw_rate_radps", log_topics.YAW_RATE_TOPIC, name), name),), ("yaw_rate_radps",))
    check_log(log, name, lambda i: "the row at %.6f s" % log["time_s"][i])
    log["source"] = "mcap"
    log["notes"] = notes
    return log


def _num(v, name):
    """A JSON number (null: NaN, as ``McapLog`` writes non-finite numbers; an integer beyond the float range:
    infinite, as a JSON float beyond it reads)."""
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError("%s: not a number in the recording: %r" % (name, v))
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


# ---------------------------------------------------------------------------------------------- checks
def check_log(log, name="log", where=None):
    """Raise ConfigError (one line, naming the first bad row through ``where(i)``) unless ``log`` is a log
    the fit can use: at least 2 rows, finite strictly increasing time, finite thrusts in every row, GNSS
    north and east given together (finite) and at least one fix, at least one heading, nothing infinite and
    nothing beyond :data:`PLAUSIBLE_ABS`."""
    where = where or (lambda i: "row %d" % (i + 1))
    t = np.asarray(log["time_s"], float)
    if len(t) < 2:
        raise ConfigError("%s: %d row(s); the fit needs a log of many seconds" % (name, len(t)))
    for col in LOG_COLUMNS:
        v = np.asarray(log[col], float)
        bad = np.flatnonzero(np.isinf(v))
        if len(bad):
            raise ConfigError("%s: %s: %s is infinite" % (name, where(int(bad[0])), col))
    bad = np.flatnonzero(~np.isfinite(t))
    if len(bad):
        raise ConfigError("%s: %s: time_s is empty or NaN" % (name, where(int(bad[0]))))
    bad = np.flatnonzero(np.diff(t) <= 0)
    if len(bad):
        i = int(bad[0]) + 1
        raise ConfigError("%s: %s: time_s %.6f does not increase (previous %.6f); rows must be in time order"
                          % (name, where(i), t[i], t[i - 1]))
    for col in THRUST_COLUMNS:
        bad = np.flatnonzero(~np.isfinite(np.asarray(log[col], float)))
        if len(bad):
            raise ConfigError("%s: %s: %s is empty or NaN (the thrusts must be given in every row)"
                              % (name, where(int(bad[0])), col))
    for col, (bound, meaning) in PLAUSIBLE_ABS.items():
        v = np.asarray(log[col], float)
        bad = np.flatnonzero(np.abs(v) > bound)
        if len(bad):
            i = int(bad[0])
            raise ConfigError("%s: %s: %s is %g, beyond %g %s; a unit or format error?"
                              % (name, where(i), col, v[i], bound, meaning))
    north, east = np.asarray(log["gnss_north_m"], float), np.asarray(log["gnss_east_m"], float)
    half = np.flatnonzero(np.isfinite(north) != np.isfinite(east))
    if len(half):
        i = int(half[0])
        given, empty = GNSS_COLUMNS if np.isfinite(north[i]) else GNSS_COLUMNS[::-1]
        raise ConfigError("%s: %s: %s given without %s" % (name, where(i), given, empty))
    if not np.isfinite(north).any():
        raise ConfigError("%s: no GNSS fix in the log (gnss_north_m and gnss_east_m are empty in every row); the "
                          "fit compares the model's path with the fixes" % name)
    if not np.isfinite(np.asarray(log["yaw_rad"], float)).any():
        raise ConfigError("%s: no heading in the log (yaw_rad is empty in every row); the EKF that seeds the fit "
                          "needs it" % name)


def write_csv(path, log):
    """Write a log dict as the CSV format (empty cells for NaN), e.g. a simulated log for ``boat-fit``."""
    with open(path, "w", newline="") as fh:
        fh.write(",".join(LOG_COLUMNS) + "\n")
        cols = [np.asarray(log[c], float) for c in LOG_COLUMNS]
        for i in range(len(cols[0])):
            fh.write(",".join("" if not math.isfinite(col[i]) else repr(float(col[i])) for col in cols) + "\n")
