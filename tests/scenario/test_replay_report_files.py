"""``python -m harness replay`` / ``conformance`` on damaged or diverging recordings: the report files are
standard JSON (an output that differs in shape has no finite largest difference: null, not ``Infinity``), an
estimate that holds no position does not stop the plot, a file cut only after its data section replays every
tick, and a file cut before its first app record says so in one line."""
import json
import struct

import pytest

from harness.conformance import main_conformance
from harness.replay import EXIT_BAD_LOG, EXIT_DIVERGED, main_replay
from onboard.runtime.mcap_log import McapLog
from tests.scenario.test_replay import _edited_recording

pytestmark = pytest.mark.scenario
TICKS = 30
MCAP_MAGIC_BYTES = 8
DATA_END_OPCODE = 0x0F


def _recording(path, edit=lambda topic, msg: msg):
    """A short ground-robot recording (TICKS ticks of 10 ms, test_replay's) with each record passed through ``edit``."""
    return _edited_recording(path, edit)


def _strict_json(text):
    def refuse(name):
        raise ValueError("%s is not JSON" % name)
    return json.loads(text, parse_constant=refuse)


def _with_extra_field(topic, msg):
    if topic == "/app/out/wheels":
        return dict(msg.as_dict(), extra=1)
    return msg


def test_an_output_that_differs_in_shape_is_reported_as_standard_json(tmp_path, capsys):
    log = _recording(tmp_path / "a.mcap", _with_extra_field)
    assert main_replay([str(log), "--out", str(tmp_path / "r")]) == EXIT_DIVERGED
    report = _strict_json((tmp_path / "r" / "replay.json").read_text())
    assert report["topics"]["wheels"]["max_abs_diff"] is None and report["topics"]["wheels"]["first_divergence_us"] == 0
    assert report["topics"]["estimate"]["max_abs_diff"] == 0
    assert main_conformance([str(log), "--out", str(tmp_path / "c"), "--target", "pure"]) == 3
    checked = _strict_json((tmp_path / "c" / "conformance.json").read_text())
    assert checked["targets"]["pure"]["topics"]["wheels"]["max_abs_diff"] is None
    capsys.readouterr()


def test_an_estimate_without_a_position_is_left_out_of_the_plot(tmp_path, capsys):
    log = _recording(tmp_path / "a.mcap", lambda topic, msg: {"garbage": 1} if topic == "/app/out/estimate" else msg)
    assert main_replay([str(log), "--out", str(tmp_path / "r")]) == EXIT_DIVERGED
    captured = capsys.readouterr()
    assert "DIVERGED" in captured.out and captured.err == ""
    assert (tmp_path / "r" / "replay.png").stat().st_size > 1000


def _data_end_offset(data):
    """The byte offset just after the file's DataEnd record (top-level records: opcode, u64 length, body)."""
    pos = MCAP_MAGIC_BYTES
    while pos < len(data):
        opcode, length = data[pos], struct.unpack_from("<Q", data, pos + 1)[0]
        pos += 9 + length
        if opcode == DATA_END_OPCODE:
            return pos
    raise AssertionError("no DataEnd record")


def test_a_file_cut_after_its_data_section_replays_every_tick(tmp_path, capsys):
    whole = _recording(tmp_path / "a.mcap").read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(whole[:_data_end_offset(whole) + 5])       # the summary section cut short
    assert main_replay([str(cut), "--out", str(tmp_path / "r")]) == EXIT_BAD_LOG
    captured = capsys.readouterr()
    report = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert report["identical"] and report["ticks"] == TICKS
    assert report["topics"]["wheels"]["replayed"] == report["topics"]["wheels"]["logged"] == TICKS // 2
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "after its data section" in err[0] and "all read" in err[0], err


def test_a_file_cut_before_its_first_app_record_says_so_in_one_line(tmp_path, capsys):
    whole = _recording(tmp_path / "a.mcap").read_bytes()
    header_end = MCAP_MAGIC_BYTES + 9 + struct.unpack_from("<Q", whole, MCAP_MAGIC_BYTES + 1)[0]
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(whole[:header_end + 20])
    assert main_replay([str(cut), "--out", str(tmp_path / "r")]) == EXIT_BAD_LOG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is cut or corrupt before its first app record" in err[0], err
    assert ": )" not in err[0]
    assert not (tmp_path / "r" / "replay.json").exists()


def _renamed_field(topic, msg):
    if topic == "/app/out/wheels":
        data = dict(msg.as_dict())
        data["renamed"] = data.pop("left_radps")
        return data
    return msg


def test_an_output_whose_field_was_renamed_diverges(tmp_path, capsys):
    """The same numbers under another field name are not the app's output: the replay diverges there."""
    log = _recording(tmp_path / "a.mcap", _renamed_field)
    assert main_replay([str(log), "--out", str(tmp_path / "r")]) == EXIT_DIVERGED
    report = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert report["topics"]["wheels"]["first_divergence_us"] == 0 and report["topics"]["wheels"]["max_abs_diff"] is None
    assert report["topics"]["estimate"]["first_divergence_us"] is None
    capsys.readouterr()


def _estimator_set_to(value):
    def edit(topic, msg):
        if topic == "/app/config":
            msg = json.loads(json.dumps(msg))
            msg["config"]["estimator"] = value
        return msg
    return edit


@pytest.mark.parametrize("value", [[1], "eskf", 3])
def test_a_recorded_estimator_that_is_no_table_is_one_line_in_conformance(tmp_path, capsys, value):
    log = _recording(tmp_path / "a.mcap", _estimator_set_to(value))
    assert main_conformance([str(log), "--out", str(tmp_path / "c"), "--target", "pure"]) == EXIT_BAD_LOG
    err = capsys.readouterr().err
    assert err.startswith("error: cannot rebuild the recorded app 'ground_robot'") and err.count("\n") == 1, err
    assert not (tmp_path / "c" / "conformance.json").exists()


def test_a_log_without_an_app_recording_whose_end_is_cut_says_there_is_none(tmp_path, capsys):
    log = McapLog(str(tmp_path / "other.mcap"))
    log.log("/other", 5, {"x": 1})
    log.close()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes((tmp_path / "other.mcap").read_bytes()[:-10])
    assert main_replay([str(cut), "--out", str(tmp_path / "r")]) == EXIT_BAD_LOG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no app recording in %s" % cut), err
    assert "struct.error" in err[0]


def test_views_for_an_app_without_views_touch_no_file_least_of_all_the_log(tmp_path, capsys):
    """--views naming the recording itself, or any file, for an app that writes no views: one line, exit 2, and
    the file is left as it was (it used to be emptied and removed: the recording lost)."""
    log = _recording(tmp_path / "a.mcap")
    recorded = log.read_bytes()
    assert main_replay([str(log), "--out", str(tmp_path / "r"), "--views", str(log)]) == EXIT_BAD_LOG
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert log.read_bytes() == recorded
    other = tmp_path / "other.mcap"
    other.write_bytes(b"someone's file")
    assert main_replay([str(log), "--out", str(tmp_path / "r"), "--views", str(other)]) == EXIT_BAD_LOG
    assert "writes no views" in capsys.readouterr().err
    assert other.read_bytes() == b"someone's file"
