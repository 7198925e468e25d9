"""Ring log (onboard.runtime.ring_log): runs under CPython (pytest) and inside MicroPython.

Written samples read back equal and in order; the file never grows past its size; a full log wraps
(oldest overwritten, the newest run read back); a torn last write and a flipped byte in a middle
record lose only that record (dropped / torn counted); a second session ignores the first's records.
"""
from onboard.core.samples import ImuSample, NavState, PoseSample, WheelCmd
from onboard.runtime.ring_log import (HEADER_BYTES, RECORD_OVERHEAD_BYTES, SESSION_MAX, RingLogError, RingLogSink, _header,
                                      crc32, crc32_pure, read_log, serial_order)

_counter = [0]


def _path(name):
    """A fresh file path: a temporary folder on CPython, /tmp inside MicroPython."""
    _counter[0] += 1
    try:
        import os
        import tempfile
        return os.path.join(tempfile.mkdtemp(), name)
    except ImportError:
        return "/tmp/ring_%d_%s" % (_counter[0], name)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _size(path):
    with open(path, "rb") as f:
        f.seek(0, 2)
        return f.tell()


def _imu(k):
    dt_us = 10000
    return ImuSample((k + 1) * dt_us, dt_us, (0.001 * k, -0.002, 0.1 / 3.0), (1e-300, 0.0, -0.5 ** 40 * k))


def _tick(sink, k):
    """One tick as the node records it: an IMU input, the step, two outputs, a pose every 10th."""
    t_us = (k + 1) * 10000
    sink("/app/in/imu", t_us, _imu(k))
    if k % 10 == 0:
        sink("/app/in/aiding", t_us, PoseSample(t_us, (0.1 * k, 2.0 / 3.0, 0.0), (0.0, 0.0, 0.01 * k)))
    sink("/app/step", t_us, {"time_us": t_us, "tick": k})
    sink("/app/out/estimate", t_us, NavState(t_us - 5000, (k * 0.1, 1.0, 0.0), (0.5, 0.0, 0.0),
                                             (0.0, 0.0, k * 0.01)))
    sink("/app/out/wheels", t_us, WheelCmd(t_us, 1.0 + k / 7.0, -2.5))


def _expected(k):
    t_us = (k + 1) * 10000
    out = [("/app/in/imu", t_us, _imu(k))]
    if k % 10 == 0:
        out.append(("/app/in/aiding", t_us, PoseSample(t_us, (0.1 * k, 2.0 / 3.0, 0.0), (0.0, 0.0, 0.01 * k))))
    out.append(("/app/step", t_us, {"time_us": t_us, "tick": k}))
    out.append(("/app/out/estimate", t_us, NavState(t_us - 5000, (k * 0.1, 1.0, 0.0), (0.5, 0.0, 0.0),
                                                    (0.0, 0.0, k * 0.01))))
    out.append(("/app/out/wheels", t_us, WheelCmd(t_us, 1.0 + k / 7.0, -2.5)))
    return out


# payload bytes of each topic's records as _tick writes them (int64 time + doubles; the estimate's time
# differs from the record's, so it carries the record time too)
PAYLOAD_BYTES = {"/app/in/imu": 64, "/app/in/aiding": 56, "/app/step": 16, "/app/out/estimate": 88,
                 "/app/out/wheels": 24}

CONFIG = {"app": "mp_ground_robot", "config": {"runtime": {"imu_rate_hz": 100, "wheelbase_m": 0.3},
                                               "waypoints_ne_m": [[2.0, 0.0, 1]]},
          "code_version": "test", "node": "ground_robot"}


def _same(got, want):
    assert len(got) == len(want), (len(got), len(want))
    for (topic, t_us, _, msg), (w_topic, w_t_us, w_msg) in zip(got, want):
        assert topic == w_topic and t_us == w_t_us, (topic, t_us, w_topic, w_t_us)
        assert msg == w_msg, (topic, msg, w_msg)


def test_crc32_is_the_zlib_crc():
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32_pure(b"123456789") == 0xCBF43926
    assert crc32_pure(b"6789", crc32_pure(b"12345")) == 0xCBF43926


def test_written_records_read_back_in_order_bit_exact():
    path = _path("log.bin")
    sink = RingLogSink(path, 64 * 1024, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    for k in range(40):
        _tick(sink, k)
    sink.close()
    log = read_log(_read(path))
    assert log.config == CONFIG and log.config_time_us == 0 and log.session == 1 and log.header_ok
    want = []
    for k in range(40):
        want.extend(_expected(k))
    _same(log.records, want)
    assert log.dropped == 0 and log.torn == 0 and log.stale == 0 and log.undecodable == 0
    assert not log.damaged and log.first_seq == 0 and log.last_seq == len(want) - 1
    assert sink.records == len(want) and sink.wraps == 0
    # the compact encoding: an IMU record is the 14-byte frame + int64 x2 + 6 doubles
    assert RECORD_OVERHEAD_BYTES == 14
    assert _size(path) == 64 * 1024


def test_other_field_kinds_and_bad_messages():
    path = _path("kinds.bin")
    sink = RingLogSink(path, 8192, meta_bytes=1024)
    sink("/app/config", 5, CONFIG)
    sink("/app/in/pose", 7, PoseSample(7, (1.0, 2.0, 3.0), (0.0, 0.1, 0.2), (0.01, 0.02, 0.03)))
    sink("/app/in/pose", 8, PoseSample(8, (1.0, 2.0, 3.0), (0.0, 0.1, 0.2)))
    sink("/app/out/flags", 9, {"ok": True, "names": ("a", "b"), "n": -3, "x": float("inf")})
    sink("/app/out/bad", 9, object())                       # not a sample or dict: counted, skipped
    sink("/app/out/big", 9, {"n": 1 << 70})                  # beyond int64: as JSON, exact
    sink.close()
    assert sink.unencodable == 1
    sink("/app/out/after", 10, {"n": 1})                     # closed: ignored
    log = read_log(_read(path))
    assert log.config_time_us == 5 and len(log.records) == 4 and log.records[3][3] == {"n": 1 << 70}
    assert log.records[0][3].cov_pos_m2 == (0.01, 0.02, 0.03) and log.records[1][3].cov_pos_m2 is None
    topic, t_us, type_name, flags = log.records[2]
    assert topic == "/app/out/flags" and t_us == 9 and type_name == ""
    assert flags["ok"] is True and flags["names"] == ["a", "b"] and flags["n"] == -3 and flags["x"] == float("inf")


def test_full_log_wraps_keeps_the_newest_run_within_its_size():
    path = _path("wrap.bin")
    size = 6000
    sink = RingLogSink(path, size, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    n_ticks = 120
    for k in range(n_ticks):
        _tick(sink, k)
        assert _size(path) == size
    sink.close()
    assert sink.wraps >= 3
    log = read_log(_read(path))
    want = []
    for k in range(n_ticks):
        want.extend(_expected(k))
    assert log.config == CONFIG                  # the meta area is never overwritten
    assert log.dropped == 0 and log.torn == 0 and log.last_seq == len(want) - 1
    assert 0 < log.first_seq and len(log.records) == log.last_seq - log.first_seq + 1
    _same(log.records, want[log.first_seq:])
    # what the data area holds, less at most the zeroed end and the record cut by the newest one
    held = 0
    for topic, _, _, _ in log.records:
        held += RECORD_OVERHEAD_BYTES + PAYLOAD_BYTES[topic]
    largest = RECORD_OVERHEAD_BYTES + PAYLOAD_BYTES["/app/out/estimate"]
    assert size - HEADER_BYTES - 1024 - 2 * largest <= held <= size - HEADER_BYTES - 1024


def test_a_torn_last_write_loses_only_that_record():
    path = _path("torn.bin")
    sink = RingLogSink(path, 16384, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    for k in range(10):
        _tick(sink, k)
    sink.flush()
    before = _read(path)
    sink("/app/in/imu", 999, ImuSample(999, 10, (1.0, 2.0, 3.0), (4.0, 5.0, 6.0)))
    sink.close()
    after = _read(path)
    start = 0
    while before[start] == after[start]:
        start += 1
    end = len(after)
    while before[end - 1] == after[end - 1]:
        end -= 1
    cut = (start + end) // 2                      # the write stopped half way
    torn = after[:cut] + before[cut:]
    log = read_log(torn)
    want = []
    for k in range(10):
        want.extend(_expected(k))
    _same(log.records, want)
    assert log.torn == 1 and log.dropped == 0 and log.damaged
    # the file cut in the middle of its last record (a pull cut short): same records, torn counted
    cut_file = read_log(after[:cut])
    _same(cut_file.records, want)
    assert cut_file.torn == 1 and cut_file.truncated_bytes == len(after) - cut


def test_a_flipped_byte_in_a_middle_record_drops_that_record_only():
    path = _path("flip.bin")
    sink = RingLogSink(path, 16384, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    for k in range(20):
        _tick(sink, k)
    sink.close()
    data = bytearray(_read(path))
    clean = read_log(bytes(data))
    want = []
    for k in range(20):
        want.extend(_expected(k))
    _same(clean.records, want)
    # the 30th record starts after the header, the meta area and 29 records
    offset = HEADER_BYTES + 1024
    for topic, _, _ in want[:29]:
        offset += RECORD_OVERHEAD_BYTES + PAYLOAD_BYTES[topic]
    data[offset + RECORD_OVERHEAD_BYTES] ^= 0x10
    log = read_log(bytes(data))
    assert log.dropped == 1 and log.torn == 0 and log.damaged
    _same(log.records, want[:29] + want[30:])


def test_a_new_session_ignores_the_previous_ones_records():
    path = _path("sessions.bin")
    first = RingLogSink(path, 16384, meta_bytes=1024)
    first("/app/config", 0, CONFIG)
    for k in range(30):
        _tick(first, k)
    first.close()
    second = RingLogSink(path, 16384, meta_bytes=1024)
    assert second.session == 2 and not second.created
    second("/app/config", 0, CONFIG)
    for k in range(3):
        _tick(second, k)
    second.close()
    log = read_log(_read(path))
    want = []
    for k in range(3):
        want.extend(_expected(k))
    assert log.session == 2 and log.stale > 0 and log.dropped == 0
    _same(log.records, want)
    assert _size(path) == 16384


def test_sizes_are_checked():
    for size in (0, HEADER_BYTES + 1024 + 100):
        try:
            RingLogSink(_path("small.bin"), size, meta_bytes=1024)
        except RingLogError:
            continue
        raise AssertionError("size %d accepted" % size)
    sink = RingLogSink(_path("meta.bin"), 4096, meta_bytes=64)
    try:
        sink("/app/config", 0, CONFIG)
    except RingLogError as exc:
        assert "meta area" in str(exc)
    else:
        raise AssertionError("a config larger than the meta area was accepted")
    sink.close()


def test_an_empty_or_foreign_file_reads_as_no_records():
    log = read_log(b"")
    assert log.records == [] and log.config is None and not log.header_ok and log.damaged
    log = read_log(b"not a ring log" * 100)
    assert log.records == [] and log.config is None


def _records_in(path):
    return read_log(_read(path)).records


def test_records_are_held_in_batches_and_a_torn_batch_write_loses_at_most_that_batch():
    path = _path("batches.bin")
    batch = 8
    sink = RingLogSink(path, 64 * 1024, meta_bytes=1024, flush_records=1, batch_records=batch)
    sink("/app/config", 0, CONFIG)
    want = []
    for k in range(12):
        _tick(sink, k)
        want.extend(_expected(k))
        # what a reset now leaves: every record of the batches written, fewer than a batch held
        on_flash = _records_in(path)
        assert len(want) - batch < len(on_flash) <= len(want) and len(on_flash) % batch == 0
        _same(on_flash, want[:len(on_flash)])
    # a reset in the middle of the next batch's write: the records before the cut survive, the cut one
    # is the torn last write, the rest of that batch (and what was held after it) is lost
    before = _read(path)
    n_before = len(_records_in(path))
    k = 12
    while len(_records_in(path)) == n_before:
        _tick(sink, k)
        want.extend(_expected(k))
        k += 1
    after = _read(path)
    assert len(_records_in(path)) == n_before + batch
    start = 0
    while before[start] == after[start]:
        start += 1
    end = len(after)
    while before[end - 1] == after[end - 1]:
        end -= 1
    cut = start + (end - start) * 3 // 5
    log = read_log(after[:cut] + before[cut:])
    kept = len(log.records)
    _same(log.records, want[:kept])
    assert log.torn == 1 and log.dropped == 0
    assert n_before <= kept < n_before + batch
    sink.close()
    _same(_records_in(path), want)              # close() writes what is held


def test_a_known_layout_frames_the_bytes_the_long_way_gives():
    """A message framed with its topic's last layout (compiled on CPython) gives the bytes the field by
    field encoding gives, and one of another shape is left to it (None)."""
    from onboard.runtime.ring_log import _Layout
    sink = RingLogSink(_path("layouts.bin"), 64 * 1024, meta_bytes=2048, batch_records=1)
    sink("/app/config", 0, CONFIG)
    sink("/d", 5, {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": None, "k": -3})
    lay = sink._layouts[("/d", dict)]
    same = [{"time_us": 5, "x": -0.0, "v": (3.0, 1e300), "n": None, "k": 1 << 40},
            {"time_us": 6, "x": 2.0, "v": (0.0, -1.0), "n": None, "k": 0}]
    other = [{"time_us": 5, "x": 1, "v": (1.0, 2.0), "n": None, "k": -3},          # an int for a float
             {"time_us": 5, "x": 1.5, "v": (1.0, 2), "n": None, "k": -3},          # an int in a vector
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0, 3.0), "n": None, "k": -3},   # another length
             {"time_us": 5, "x": 1.5, "v": [1.0, 2.0], "n": None, "k": -3},        # a list
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": 0.0, "k": -3},         # None no more
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": None, "k": True},      # a bool for an int
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": None, "k": 1 << 70},   # beyond int64
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": None},                 # a field less
             {"time_us": 5, "x": 1.5, "v": (1.0, 2.0), "n": None, "k": 1, "z": 0}]  # a field more
    for msg in same:
        for t_us in (msg["time_us"], 99):
            got = lay.frame(msg, t_us, sink.session, sink.records)
            assert got == _Layout.frame(lay, msg, t_us, sink.session, sink.records)
            assert got == sink._encode("/d", t_us, msg)
    for msg in other:
        assert lay.frame(msg, 5, sink.session, sink.records) is None
        assert _Layout.frame(lay, msg, 5, sink.session, sink.records) is None
    sink.close()


def test_a_sample_changed_after_it_was_made_decodes_as_its_constructor_makes_it():
    """For ``onboard.core.samples`` types the known layout checks the shape only: ints in a float vector
    are packed as doubles, and the record reads back as the sample the constructor would make."""
    path = _path("changed.bin")
    sink = RingLogSink(path, 16 * 1024, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    sink("/app/in/imu", 10, ImuSample(10, 10, (1.0, 2.0, 3.0), (4.0, 5.0, 6.0)))
    changed = ImuSample(20, 10, (1.0, 2.0, 3.0), (4.0, 5.0, 6.0))
    changed.dvel_body_mps = (1, 2, 3)
    sink("/app/in/imu", 20, changed)
    sink.close()
    records = _records_in(path)
    assert len(records) == 2 and records[1][3] == ImuSample(20, 10, (1.0, 2.0, 3.0), (4.0, 5.0, 6.0))
    assert records[1][3].dvel_body_mps[0] == 1.0 and type(records[1][3].dvel_body_mps[0]) is float


class _FailingFile:
    """A file on a flash that has gone bad: every write and flush raises OSError (as a full littlefs or a
    buffered file whose data cannot reach the disk does); closing it raises too."""

    def __init__(self):
        self.closed = False

    def seek(self, *args):
        return 0

    def write(self, data):
        raise OSError(28, "no space left on device")

    def flush(self):
        raise OSError(28, "no space left on device")

    def close(self):
        self.closed = True
        raise OSError(28, "no space left on device")


def test_a_failing_flash_stops_the_log_without_stopping_the_app():
    """A write error is counted, kept in ``error`` and stops the log; nothing raises into the app, even
    when the flush and close that follow fail as well."""
    for how in ("batch", "flush", "close"):
        sink = RingLogSink(_path("failing.bin"), 16384, meta_bytes=1024, batch_records=1)
        sink("/app/config", 0, CONFIG)
        real = sink._f
        sink._f = _FailingFile()
        real.close()
        if how == "batch":
            _tick(sink, 0)                      # batch_records=1: the write happens in the call
        elif how == "flush":
            sink.flush()
        else:
            sink._held.append(("/app/step", 1, {"time_us": 1, "tick": 0}))
            sink.close()
        assert sink.closed and sink.write_errors == 1 and "write failed" in sink.error, how
        _tick(sink, 1)                          # ignored once stopped
        sink.flush()
        sink.close()
        assert sink.write_errors == 1


def test_a_session_number_that_wraps_does_not_read_an_old_lap_of_the_same_number():
    """After session SESSION_MAX the counter starts again at 1: records left in the data area by an older
    session 1 (of another layout) must not be read as the new session's."""
    path = _path("wrap_session.bin")
    old = RingLogSink(path, 16384, meta_bytes=1024)
    assert old.session == 1
    old("/app/config", 0, CONFIG)
    for k in range(40):
        old("/app/out/wheels", 1000 * k, {"time_us": 1000 * k, "a": 0.5 * k, "b": 1.5, "c": k})
    old.close()
    with open(path, "r+b") as f:                # the file went through SESSION_MAX - 1 more sessions
        f.write(_header(SESSION_MAX, 16384, 1024))
    new = RingLogSink(path, 16384, meta_bytes=1024)
    assert new.session == 1
    new("/app/config", 0, CONFIG)
    for k in range(3):
        _tick(new, k)
    new.close()
    log = read_log(_read(path))
    want = []
    for k in range(3):
        want.extend(_expected(k))
    assert log.session == 1 and log.dropped == 0 and log.undecodable == 0
    _same(log.records, want)


def test_a_record_whose_crc_holds_but_whose_body_is_short_for_its_topic_is_undecodable():
    """A record of the session with a valid CRC but a payload shorter than its topic's layout (a stale
    record's false resync, a writer bug) is counted ``undecodable``; the reader does not raise."""
    from onboard.runtime.ring_log import _frame
    path = _path("short_body.bin")
    sink = RingLogSink(path, 16384, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    for k in range(3):
        _tick(sink, k)
    sink.close()
    data = bytearray(_read(path))
    log = read_log(bytes(data))
    n = len(log.records)
    pos = HEADER_BYTES + 1024
    for topic, _, _, _ in log.records:
        pos += RECORD_OVERHEAD_BYTES + PAYLOAD_BYTES[topic]
    rec = _frame(2, log.session, log.last_seq + 1, b"\x01\x02\x03")    # id 2: the IMU topic (64 bytes)
    data[pos:pos + len(rec)] = rec
    log = read_log(bytes(data))
    assert log.undecodable == 1 and len(log.records) == n and log.last_seq == n

# ------------------------------------------------------------ the u32 record sequence's wrap
# (~160 days of one session at ~310 records/s). The sink's record counter is started just below 2**32: records
# written across the wrap are all kept and read back in the order written (CPython's struct refused a sequence
# of 2**32: every record from there on was counted unencodable and lost; the reader sorted 0, 1, ... before
# 2**32 - 1 and counted ~2**32 dropped); a bad record across the wrap is one dropped; a full data area wrapping
# at the same time keeps the newest run.
U32 = 1 << 32
WRAP_META = 1024


def _write_from_count(path, n, first_count, size=16384, batch_records=8):
    """n IMU records into a new ring log whose record counter starts at ``first_count``."""
    sink = RingLogSink(path, size, meta_bytes=WRAP_META, batch_records=batch_records)
    sink("/app/config", 0, {"app": "wrap"})
    sink.records = first_count              # as after first_count records of a long session
    for k in range(n):
        sink("/app/in/imu", (k + 1) * 10000, _imu(k))
    sink.close()
    return sink


def _times(log):
    return [r[1] for r in log.records]


def test_records_across_the_sequence_wrap_are_all_kept_in_order():
    path = _path("across.bin")
    sink = _write_from_count(path, 40, U32 - 20)
    assert sink.unencodable == 0 and sink.records == U32 + 20
    log = read_log(_read(path))
    assert log.dropped == 0 and log.torn == 0 and not log.damaged
    assert log.first_seq == U32 - 20 and log.last_seq == 19
    assert _times(log) == [(k + 1) * 10000 for k in range(40)]
    assert log.records[25][3] == _imu(25)


def test_a_bad_record_at_the_wrap_is_one_dropped():
    path = _path("flip.bin")
    _write_from_count(path, 40, U32 - 20)
    data = bytearray(_read(path))
    # the 21st record (sequence 0, the first after the wrap) starts after 20 records of the same size
    offset = HEADER_BYTES + WRAP_META + 20 * (RECORD_OVERHEAD_BYTES + PAYLOAD_BYTES["/app/in/imu"])
    data[offset + RECORD_OVERHEAD_BYTES] ^= 0x10
    log = read_log(bytes(data))
    assert log.dropped == 1 and log.torn == 0 and log.damaged
    assert log.first_seq == U32 - 20 and log.last_seq == 19
    assert _times(log) == [(k + 1) * 10000 for k in range(40) if k != 20]


def test_a_full_data_area_wrapping_with_the_sequence_keeps_the_newest_run_in_order():
    path = _path("full.bin")
    n = 200
    sink = _write_from_count(path, n, U32 - 120, size=HEADER_BYTES + WRAP_META + 4000)
    assert sink.wraps >= 2 and sink.unencodable == 0
    log = read_log(_read(path))
    kept = len(log.records)
    assert 40 < kept < n and log.dropped == 0 and log.torn == 0
    assert log.last_seq == (U32 - 120 + n - 1) % U32 and log.first_seq == (log.last_seq - kept + 1) % U32
    assert _times(log) == [(k + 1) * 10000 for k in range(n - kept, n)]


def test_serial_order_starts_after_the_widest_gap():
    assert serial_order([5, 3, 4]) == [3, 4, 5]
    assert serial_order([1, U32 - 1, 0, U32 - 2]) == [U32 - 2, U32 - 1, 0, 1]
    assert serial_order([7]) == [7]
    assert serial_order([0, U32 - 1]) == [U32 - 1, 0]
