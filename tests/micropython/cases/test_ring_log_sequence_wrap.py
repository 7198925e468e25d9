"""Ring log (onboard.runtime.ring_log) at the u32 record sequence's wrap (~160 days of one session at ~310
records/s): runs under CPython (pytest) and inside MicroPython.

The sink's record counter is started just below 2**32. Records written across the wrap are all kept and read
back in the order written (CPython's struct refused a sequence of 2**32: every record from there on was
counted unencodable and lost; the reader sorted 0, 1, ... before 2**32 - 1 and counted ~2**32 dropped); a bad
record across the wrap is one dropped; a full data area wrapping at the same time keeps the newest run.
"""
from onboard.core.samples import ImuSample
from onboard.runtime.ring_log import (HEADER_BYTES, RECORD_OVERHEAD_BYTES, RingLogSink, read_log, serial_order)

U32 = 1 << 32
META = 1024
IMU_PAYLOAD_BYTES = 64           # int64 time, int64 dt, two float vectors of 3
_counter = [0]


def _path(name):
    """A fresh file path: a temporary folder on CPython, /tmp inside MicroPython."""
    _counter[0] += 1
    try:
        import os
        import tempfile
        return os.path.join(tempfile.mkdtemp(), name)
    except ImportError:
        return "/tmp/ring_seq_%d_%s" % (_counter[0], name)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _imu(k):
    return ImuSample((k + 1) * 10000, 10000, (0.001 * k, -0.002, 0.5), (0.0, 0.25 * k, -9.81))


def _write(path, n, first_count, size=16384, batch_records=8):
    """n IMU records into a new ring log whose record counter starts at ``first_count``."""
    sink = RingLogSink(path, size, meta_bytes=META, batch_records=batch_records)
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
    sink = _write(path, 40, U32 - 20)
    assert sink.unencodable == 0 and sink.records == U32 + 20
    log = read_log(_read(path))
    assert log.dropped == 0 and log.torn == 0 and not log.damaged
    assert log.first_seq == U32 - 20 and log.last_seq == 19
    assert _times(log) == [(k + 1) * 10000 for k in range(40)]
    assert log.records[25][3] == _imu(25)


def test_a_bad_record_at_the_wrap_is_one_dropped():
    path = _path("flip.bin")
    _write(path, 40, U32 - 20)
    data = bytearray(_read(path))
    # the 21st record (sequence 0, the first after the wrap) starts after 20 records of the same size
    offset = HEADER_BYTES + META + 20 * (RECORD_OVERHEAD_BYTES + IMU_PAYLOAD_BYTES)
    data[offset + RECORD_OVERHEAD_BYTES] ^= 0x10
    log = read_log(bytes(data))
    assert log.dropped == 1 and log.torn == 0 and log.damaged
    assert log.first_seq == U32 - 20 and log.last_seq == 19
    assert _times(log) == [(k + 1) * 10000 for k in range(40) if k != 20]


def test_a_full_data_area_wrapping_with_the_sequence_keeps_the_newest_run_in_order():
    path = _path("full.bin")
    n = 200
    sink = _write(path, n, U32 - 120, size=HEADER_BYTES + META + 4000)
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
