"""MCAP log writing (``onboard.runtime.mcap_log.McapLog``): messages held and written in batches, in the
writer process or in the app's own: the same file byte for byte as one message at a time, in the order
they were logged, the JSON of the old per-message encoding; a recording written through the writer
process replays identically; a writer process that fails gives one line at close."""
import json
import math

import pytest
from mcap.reader import make_reader

from harness.replay import read_recording, replay_events
from onboard.core.samples import ImuSample, NavState, PoseSample, WheelCmd
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.mcap_log import POSE_IN_FRAME, McapLog, McapLogError, _clean, encode_message

NAN = float("nan")


def _messages():
    """A mixed stream (a generator: each item is logged before the next one is made): samples, a
    non-finite one, dicts (one with a nested list, one reused and changed after it was logged), a view
    in the middle."""
    step = {"time_us": 0, "tick": 0}
    for k in range(40):
        t_us = 10000 * k
        out = []
        out.append(("log", "/app/in/imu", t_us, ImuSample(t_us, 10000, (0.1 * k, 0.0, -9.8), (0.0, 1e-300, 0.5 ** 40))))
        step["time_us"], step["tick"] = t_us, k
        out.append(("log", "/app/step", t_us, step))           # the same dict object, changed every tick
        if k % 7 == 3:
            out.append(("log", "/app/in/aiding", t_us, PoseSample(t_us, (1.0, 2.0 / 3.0, NAN), (0.0, 0.0, k * 0.1))))
        if k == 20:
            out.append(("view", "/viz/pose", t_us, (1.0, 2.0, 0.0), 0.5))
        out.append(("log", "/app/out/estimate", t_us, NavState(t_us - 5, (k * 0.1, 1.0, 0.0), (0.5, math.inf, 0.0),
                                                                (0.0, 0.0, k * 0.01))))
        out.append(("log", "/app/out/wheels", t_us, WheelCmd(t_us, 1.0 + k / 7.0, -2.5)))
        out.append(("log", "/app/out/flags", t_us, {"ok": k % 2 == 0, "names": ["a", "é"], "x": [1, NAN]}))
        yield from out


def _write(path, **kwargs):
    log = McapLog(str(path), **kwargs)
    expected = []
    for item in _messages():
        if item[0] == "log":
            _, topic, t_us, msg = item
            log.log(topic, t_us, msg)
            expected.append((topic, t_us, encode_message(msg)))
        else:
            _, topic, t_us, pos, yaw = item
            assert log.log_pose(topic, t_us, pos, yaw_rad=yaw)
            expected.append((topic, t_us, None))
    n = log.messages
    log.close()
    return log, expected, n


def _read(path):
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        return [(ch.topic, msg.log_time // 1000, schema.name if schema else "", msg.data)
                for schema, ch, msg in reader.iter_messages(log_time_order=False)]


def test_batches_write_the_same_file_as_one_message_at_a_time(tmp_path):
    one, expected, n_one = _write(tmp_path / "one.mcap", batch_records=1)
    batched, _, n_batched = _write(tmp_path / "batched.mcap", batch_records=16)
    assert n_one == n_batched == len(expected)
    assert (tmp_path / "one.mcap").read_bytes() == (tmp_path / "batched.mcap").read_bytes()
    got = _read(batched.path)
    assert [(t, ts) for t, ts, _, _ in got] == [(t, ts) for t, ts, _ in expected]   # logged order kept
    for (topic, _, schema, data), (_, _, want) in zip(got, expected):
        if want is not None:
            assert data == want, topic
        else:
            assert schema == POSE_IN_FRAME
    # the dict reused after it was logged: each message as it was when logged
    ticks = [json.loads(data)["tick"] for topic, _, _, data in got if topic == "/app/step"]
    assert ticks == list(range(40))


def test_the_json_is_the_per_message_encoding():
    """encode_message: fields in order, tuples as arrays, NaN/inf as null (what json.dumps wrote before)."""
    for _, topic, _, msg in [m for m in _messages() if m[0] == "log"][:60]:       # the last step dict: fine
        data = msg.as_dict() if hasattr(msg, "as_dict") else dict(msg)
        assert encode_message(msg) == json.dumps(_clean(data), separators=(",", ":")).encode(), topic
    assert encode_message({"a": NAN, "b": (1, -math.inf)}) == b'{"a":null,"b":[1,null]}'


def test_the_writer_process_writes_the_same_file(tmp_path):
    _write(tmp_path / "inline.mcap")
    proc, _, n = _write(tmp_path / "process.mcap", writer_process=True, batch_records=16)
    assert n == len(_read(proc.path))
    assert (tmp_path / "inline.mcap").read_bytes() == (tmp_path / "process.mcap").read_bytes()
    assert proc.writer_cpu_s is not None and proc.writer_cpu_s > 0


def test_the_writer_process_checks_view_topics_and_reports_its_failure_in_one_line(tmp_path):
    log = McapLog(str(tmp_path / "bad.mcap"), writer_process=True)
    log.log("/app/in/imu", 0, ImuSample(10, 10, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="already carries"):
        log.log_pose("/app/in/imu", 0, (0.0, 0.0, 0.0), yaw_rad=0.0)
    log.log("/app/out/odd", 1, {"x": object()})      # not JSON: the writer process stops on it
    with pytest.raises(McapLogError) as err:
        log.close()
    assert "TypeError" in str(err.value) and "\n" not in str(err.value)
    # what came before it is in the file
    assert [t for t, _, _, _ in _read(str(tmp_path / "bad.mcap"))] == ["/app/in/imu"]


class _Motors:
    def command(self, cmd):
        pass

    def stop(self, now_us):
        pass


def test_a_recording_through_the_writer_process_replays_identically(tmp_path):
    path = str(tmp_path / "app.mcap")
    log = McapLog(path, writer_process=True)
    app = GroundRobotRuntime([(1.0, 0.0), (1.0, 1.0)], _Motors())
    app.record(log.log)
    for k in range(300):
        t = k * 10000
        app.on_imu(ImuSample(t + 10000, 10000, (0.002, 0.0, -0.0980665), (0.0, 0.0, 0.001)))
        if k % 10 == 0:
            yaw = 0.1 * t * 1e-6
            app.on_pose(PoseSample(t, (math.sin(yaw), 1.0 - math.cos(yaw), 0.0), (0.0, 0.0, yaw)))
        app.step(t)
    log.close()
    events, damage = read_recording(path)
    assert damage is None and len(events) == log.messages
    result = replay_events(events)
    assert result["identical"]


def test_a_sample_with_a_nested_sample_field_is_written_through_its_as_dict(tmp_path):
    """A sample whose FIELDS hold another sample (not JSON as it is) is encoded with its own as_dict()."""
    from mcap.reader import make_reader

    from onboard.runtime.mcap_log import McapLog

    class Inner:
        FIELDS = ("a_m",)

        def __init__(self):
            self.a_m = 1.5

        def as_dict(self):
            return {"a_m": self.a_m}

    class Outer:
        FIELDS = ("time_us", "inner")

        def __init__(self, t):
            self.time_us, self.inner = t, Inner()

        def as_dict(self):
            return {"time_us": self.time_us, "inner": self.inner.as_dict()}

    log = McapLog(str(tmp_path / "n.mcap"))
    for t in range(3):
        log.log("/outer", t, Outer(t))
    log.close()
    with open(tmp_path / "n.mcap", "rb") as fh:
        got = [json.loads(m.data) for _s, _c, m in make_reader(fh).iter_messages()]
    assert got == [{"time_us": t, "inner": {"a_m": 1.5}} for t in range(3)]
