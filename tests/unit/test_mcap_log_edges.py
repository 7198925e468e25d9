"""Edges of the MCAP log (``onboard.runtime.mcap_log.McapLog``), every file checked with the official ``mcap``
reader: messages after close, log times MCAP cannot carry, a sample on a view's topic, and the writer process
given values marshal would turn into bytes (NumPy scalars and arrays) or a frame it has to pickle."""
import json

import numpy as np
import pytest
from mcap.reader import make_reader

from onboard.core.samples import ImuSample
from onboard.runtime.mcap_log import McapLog, McapLogClosedError, McapLogError


def _read(path):
    """(topic, schema name, log time us, sequence, message) of every message, and the summary's statistics."""
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        stats = reader.get_summary().statistics
        msgs = [(ch.topic, schema.name, msg.log_time // 1000, msg.sequence, json.loads(msg.data))
                for schema, ch, msg in reader.iter_messages(log_time_order=False)]
    return msgs, stats


def _imu(t_us):
    return ImuSample(t_us, 10000, (0.0, 0.5, -9.8), (0.0, 0.0, 0.25))


def test_an_empty_log_closed_twice_opens_in_the_mcap_reader(tmp_path):
    path = str(tmp_path / "empty.mcap")
    log = McapLog(path)
    log.close()
    log.close()
    msgs, stats = _read(path)
    assert msgs == [] and stats.message_count == 0 and stats.channel_count == 0


def test_a_message_after_close_is_refused_not_dropped(tmp_path):
    """log() and log_view() after close() raise (a message held after close would be lost without a word, a
    view added to a finished writer too); the file holds what was logged before the close."""
    path = str(tmp_path / "log.mcap")
    log = McapLog(path)
    log.log("/a", 1, {"k": 1})
    log.close()
    with pytest.raises(McapLogClosedError):
        log.log("/a", 2, {"k": 2})
    with pytest.raises(McapLogClosedError):
        log.log_pose("/viz/pose", 3, (0.0, 0.0, 0.0), yaw_rad=0.0)
    assert isinstance(McapLogClosedError("x"), ValueError)
    assert log.messages == 1
    log.close()
    msgs, stats = _read(path)
    assert [(m[0], m[4]) for m in msgs] == [("/a", {"k": 1})] and stats.message_count == 1


def test_a_log_time_mcap_cannot_carry_is_refused_and_the_file_still_finishes(tmp_path):
    """A negative time, one past uint64 nanoseconds or one that is no number is refused (ValueError, after the
    others of the batch are written) before it reaches the MCAP writer, which would count it in its statistics
    and write half a record into its chunk (struct.error: a file that can no longer be finished); the file
    opens with exactly the good messages."""
    path = str(tmp_path / "log.mcap")
    log = McapLog(path)
    log.log("/a", 1, {"k": 1})
    log.log("/a", -5, {"k": 2})
    log.log("/a", 2 ** 64, {"k": 3})
    log.log("/a", "soon", {"k": 4})
    log.log("/a", float("inf"), {"k": 5})
    log.log("/a", 3, {"k": 6})
    with pytest.raises(ValueError, match="log time"):
        log.flush()
    with pytest.raises(ValueError, match="log time"):
        log.log_view("/viz/pose", -1, "foxglove.PoseInFrame", {})
    log.log("/a", 4, {"k": 7})
    log.close()
    msgs, stats = _read(path)
    assert [(m[2], m[3], m[4]["k"]) for m in msgs] == [(1, 0, 1), (3, 1, 6), (4, 2, 7)]
    assert stats.message_count == 3 and stats.message_start_time == 1000 and stats.message_end_time == 4000
    assert log.messages == 3


def test_a_sample_on_a_view_topic_is_refused(tmp_path):
    """log() on a topic that already carries a Foxglove view is refused (the sample would be written under the
    view's schema), as log_view refuses a topic that carries a sample."""
    path = str(tmp_path / "log.mcap")
    log = McapLog(path)
    assert log.log_pose("/viz/pose", 1, (1.0, 2.0, 0.0), yaw_rad=0.5)
    log.log("/viz/pose", 2, {"x": 1})
    log.log("/a", 2, {"x": 2})
    with pytest.raises(ValueError, match="already carries foxglove.PoseInFrame"):
        log.flush()
    log.log("/a", 3, {"x": 3})
    with pytest.raises(ValueError, match="already carries a sample"):
        log.log_pose("/a", 4, (0.0, 0.0, 0.0), yaw_rad=0.0)
    log.close()
    msgs, _ = _read(path)
    assert [(m[0], m[1], m[2]) for m in msgs] == [("/viz/pose", "foxglove.PoseInFrame", 1), ("/a", "a", 2),
                                                  ("/a", "a", 3)]


def _numpy_messages(log):
    from onboard.vessel.buoy_perception import LidarFrame
    log.log("/imu", 1, _imu(1))
    log.log("/stats", 1, {"err_m": np.float64(0.25), "rows": [np.float64(1.5), 2.0]})
    log.log("/lidar", 2, LidarFrame(2, np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])))
    log.flush()
    log.log("/imu", 3, _imu(3))
    log.log("/stats", 3, {"err_m": 0.5, "rows": []})
    log.close()


def test_the_writer_process_writes_numpy_values_as_the_inline_log_does(tmp_path):
    """marshal writes a NumPy scalar or array (any object with the buffer protocol) as its bytes, which the
    writer process cannot write as JSON: a frame holding one is pickled, and the file is the inline log's,
    byte for byte."""
    _numpy_messages(McapLog(str(tmp_path / "inline.mcap")))
    _numpy_messages(McapLog(str(tmp_path / "process.mcap"), writer_process=True))
    assert (tmp_path / "inline.mcap").read_bytes() == (tmp_path / "process.mcap").read_bytes()
    msgs, _ = _read(str(tmp_path / "process.mcap"))
    assert [m[4] for m in msgs if m[0] != "/imu"] == [
        {"err_m": 0.25, "rows": [1.5, 2.0]}, {"time_us": 2, "points_body_m": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]},
        {"err_m": 0.5, "rows": []}]


def test_a_pickled_frame_does_not_leave_sample_numbers_the_writer_process_never_got(tmp_path):
    """A frame pickled (here: it holds the soil loader's MachineSample, which has no FIELDS) after a sample class
    was numbered for it sends no definition of that number: the number is forgotten, so that the next marshalled
    frame defines it again (the writer process would stop on an unknown number, KeyError)."""
    from onboard.soil.blind_map import BladePose
    from onboard.soil.loader_app import MachineSample

    def write(path, writer_process):
        log = McapLog(path, writer_process=writer_process)
        log.log("/imu", 1, _imu(1))
        log.log("/machine", 1, MachineSample(1, BladePose(1, 1.0, 2.0, 0.5), (1.0, 2.0), 3.0, 4.0, 0.1, 0.5, 0.0,
                                             "cut", (0, 1)))
        log.flush()
        log.log("/imu", 2, _imu(2))
        log.close()
        return log

    write(str(tmp_path / "inline.mcap"), False)
    try:
        write(str(tmp_path / "process.mcap"), True)
    except McapLogError as exc:
        pytest.fail(str(exc))
    assert (tmp_path / "inline.mcap").read_bytes() == (tmp_path / "process.mcap").read_bytes()
    msgs, _ = _read(str(tmp_path / "process.mcap"))
    assert [(m[0], m[2]) for m in msgs] == [("/imu", 1), ("/machine", 1), ("/imu", 2)]


def test_a_message_the_writer_process_cannot_be_sent_loses_none_of_the_others_and_close_finishes_the_file(tmp_path):
    """A message neither marshal nor pickle takes (a function in a dict, not JSON either) is not sent: the
    others of its batch are, close() still ends the writer process's input and waits for it (else it would wait
    for more input and never finish the file), and the error is a TypeError as the inline log raises."""
    for writer_process in (False, True):
        path = str(tmp_path / ("process.mcap" if writer_process else "inline.mcap"))
        log = McapLog(path, writer_process=writer_process)
        log.log("/a", 1, {"x": 1})
        log.log("/b", 2, {"f": lambda: 0})
        log.log("/a", 3, {"x": 3})
        with pytest.raises(TypeError):
            log.close()
        if writer_process:
            assert log._proc.returncode == 0
        assert log.messages == 2
        msgs, stats = _read(path)
        assert [(m[0], m[2], m[4]) for m in msgs] == [("/a", 1, {"x": 1}), ("/a", 3, {"x": 3})]
        assert stats.message_count == 2
    assert (tmp_path / "inline.mcap").read_bytes() == (tmp_path / "process.mcap").read_bytes()


def test_a_relative_path_is_the_callers_with_the_writer_process_too(tmp_path, monkeypatch):
    """The writer process runs in the checkout; a relative path names a file where the caller runs (where the
    inline log writes it), not in the checkout."""
    import os
    from onboard.runtime.mcap_log import REPO
    name = "relative_%d.mcap" % os.getpid()
    monkeypatch.chdir(tmp_path)
    try:
        log = McapLog(name, writer_process=True)
        log.log("/a", 1, {"x": 1})
        log.close()
        assert not os.path.exists(os.path.join(REPO, name))
        msgs, _ = _read(str(tmp_path / name))
        assert [(m[0], m[4]) for m in msgs] == [("/a", {"x": 1})]
    finally:
        if os.path.exists(os.path.join(REPO, name)):
            os.remove(os.path.join(REPO, name))


def test_a_view_at_a_time_that_is_no_number_is_a_value_error(tmp_path):
    log = McapLog(str(tmp_path / "log.mcap"))
    for bad in (float("inf"), float("nan"), None, -1):
        with pytest.raises(ValueError):
            log.log_pose("/viz/pose", bad, (0.0, 0.0, 0.0), yaw_rad=0.0)
    log.close()
    msgs, _ = _read(str(tmp_path / "log.mcap"))
    assert msgs == []


_CTRL_C = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from onboard.runtime.mcap_log import McapLog
log = McapLog(sys.argv[1], writer_process=True)
try:
    for k in range(2000):
        log.log("/a", k, {"k": k})
        if k == 1000:
            log.flush()
            os.killpg(os.getpgrp(), signal.SIGINT)     # Ctrl-C in a terminal: SIGINT to the foreground group
except KeyboardInterrupt:
    pass
finally:
    log.close()
print(log.messages)
"""


def test_ctrl_c_does_not_kill_the_writer_process_in_the_middle_of_the_file(tmp_path):
    """Ctrl-C in a terminal sends SIGINT to the whole foreground process group; the writer process, in a
    session of its own, is not killed by it (exit -2, the file unfinished) and finishes the file with everything
    the interrupted recording process sent before closing its log."""
    import subprocess
    import sys
    from onboard.runtime.mcap_log import REPO
    script = tmp_path / "record.py"
    script.write_text(_CTRL_C)
    path = str(tmp_path / "log.mcap")
    # a session of its own, so that the SIGINT to its process group does not reach pytest
    run = subprocess.run([sys.executable, str(script), path, REPO], capture_output=True, text=True, timeout=60,
                         start_new_session=True)
    assert run.returncode == 0, run.stderr
    msgs, stats = _read(path)
    assert len(msgs) == stats.message_count == int(run.stdout.split()[-1]) >= 1001
    assert [m[4]["k"] for m in msgs] == list(range(len(msgs)))


def test_a_topic_that_is_not_text_loses_none_of_the_others_of_its_batch(tmp_path):
    """A topic of None is refused (TypeError) after the others of its batch are written (an AttributeError in the
    middle of the batch would lose the messages after it)."""
    path = str(tmp_path / "log.mcap")
    log = McapLog(path)
    log.log("/a", 1, {"k": 1})
    log.log(None, 2, {"k": 2})
    log.log("/a", 3, {"k": 3})
    with pytest.raises(TypeError, match="topic"):
        log.close()
    msgs, _ = _read(path)
    assert [(m[0], m[2]) for m in msgs] == [("/a", 1), ("/a", 3)]
