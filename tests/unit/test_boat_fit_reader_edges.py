"""The boat-fit log readers (``boat_log``) on edge inputs: a CSV with CR line ends (as old spreadsheet programs
write) reads like the same file with LF; a csv parse error names the line it is on; an MCAP message with an
integer beyond the float range is a one-line ConfigError (or a message without a time), never an
OverflowError; a thrust sample without a time is dropped and noted, not used as the last row's thrust."""
import io
import json

import numpy as np
import pytest
from mcap.writer import Writer

from harness.training.boat_fit import boat_log
from onboard.core.settings import ConfigError
from onboard.vessel import log_topics as lt

HEADER = "time_s,thrust_left_n,thrust_right_n,gnss_north_m,gnss_east_m,yaw_rad,yaw_rate_radps"
ROWS = ["0.0,10,20,1.5,2.5,0.1,0.01", "0.1,11,21,,,0.2,0.02", "0.2,12,22,1.7,2.7,,0.03"]


def test_cr_line_ends_read_as_lf_line_ends():
    lf = boat_log.read_csv_bytes(("\n".join([HEADER] + ROWS) + "\n").encode(), "lf")
    for end in ("\r", "\r\n"):
        other = boat_log.read_csv_bytes((end.join([HEADER] + ROWS) + end).encode(), "other")
        for col in boat_log.LOG_COLUMNS:
            assert np.array_equal(other[col], lf[col], equal_nan=True), (end, col)


def test_a_csv_parse_error_names_its_own_line():
    rows = [HEADER] + ROWS + ["0.3,13,23,,,0.4," + "1" * 200000]       # line 5: a field over the csv limit
    with pytest.raises(ConfigError, match=r"^log: line 5: not a CSV row \(field larger than field limit"):
        boat_log.read_csv_bytes(("\n".join(rows) + "\n").encode(), "log")


def test_a_stray_carriage_return_splits_its_line_and_names_it():
    rows = [HEADER] + ROWS + ["0.3,13\r5,23,,,0.4,0.04"]                 # line 5
    with pytest.raises(ConfigError, match=r"^log: line 5: 2 values, expected 7"):
        boat_log.read_csv_bytes(("\n".join(rows) + "\n").encode(), "log")


def _mcap(messages):
    buf = io.BytesIO()
    w = Writer(buf)
    w.start()
    schema = w.register_schema("x", "jsonschema", b"{}")
    channels = {}
    for topic, msg in messages:
        if topic not in channels:
            channels[topic] = w.register_channel(topic, "json", schema)
        w.add_message(channels[topic], 0, msg if isinstance(msg, bytes) else json.dumps(msg).encode(), 0)
    w.finish()
    return buf.getvalue()


def _recording(rows=40):
    out = []
    for i in range(rows):
        t = i * 100000
        out.append((lt.THRUST_TOPIC, {"time_us": t, "thrust_left_n": 1.0, "thrust_right_n": 2.0}))
        out.append((lt.HEADING_TOPIC, {"time_us": t, "yaw_rad": 0.0}))
        out.append((lt.GNSS_TOPIC, {"time_us": t, "pos_ne_m": [0.0, 0.0]}))
    return out


def test_an_integer_beyond_the_float_range_is_infinite_not_an_overflow():
    huge = b"1" + b"0" * 400
    value = _mcap(_recording() + [(lt.HEADING_TOPIC, b'{"time_us": 100000, "yaw_rad": ' + huge + b"}")])
    with pytest.raises(ConfigError, match="yaw_rad is infinite"):
        boat_log.read_mcap_bytes(value, "rec")
    when = _mcap(_recording() + [(lt.HEADING_TOPIC, b'{"time_us": ' + huge + b', "yaw_rad": 0.5}')])
    log = boat_log.read_mcap_bytes(when, "rec")
    assert not (log["yaw_rad"] == 0.5).any()
    assert any("/app/in/heading message(s) without a time" in n for n in log["notes"]), log["notes"]


def test_a_thrust_sample_without_a_time_is_dropped_and_noted():
    good = boat_log.read_mcap_bytes(_mcap(_recording()), "rec")
    bad = _recording() + [(lt.THRUST_TOPIC, {"time_us": None, "thrust_left_n": 555.0, "thrust_right_n": 666.0})]
    log = boat_log.read_mcap_bytes(_mcap(bad), "rec")
    assert len(log["time_s"]) == len(good["time_s"]) == 39
    for col in boat_log.LOG_COLUMNS:
        assert np.array_equal(log[col], good[col], equal_nan=True), col
    assert "1 /app/out/thrust message(s) without a time dropped" in log["notes"]


def test_too_few_timed_thrust_samples_is_one_line():
    msgs = [(lt.THRUST_TOPIC, {"time_us": t, "thrust_left_n": 1.0, "thrust_right_n": 1.0}) for t in (0, None, None, 5)]
    with pytest.raises(ConfigError, match=r"2 message\(s\) with a time on /app/out/thrust"):
        boat_log.read_mcap_bytes(_mcap(msgs), "rec")
