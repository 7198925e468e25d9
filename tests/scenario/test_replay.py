"""Record at the app boundary, replay on the desktop (``python -m harness replay``).

A waypoints run records its ground-robot app into log.mcap; replaying that log rebuilds the app from
its recorded settings, feeds the recorded inputs and ticks, and gets every output back bit for bit.
A log whose end is cut or corrupt replays its readable prefix and exits 2; a log whose outputs
differ from what the app computes exits 3 and names the first differing time; a file that is no
recording is one line and exit 2.
"""
import json
import os
import subprocess
import sys

import pytest

from harness.replay import EXIT_BAD_LOG, EXIT_DIVERGED, EXIT_IDENTICAL, main_replay
from onboard.core.samples import ImuSample, PoseSample
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.mcap_log import McapLog

pytestmark = pytest.mark.scenario
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A short waypoints run (seed 3, 12 simulated seconds, an aiding dropout inside) and its log."""
    out = tmp_path_factory.mktemp("wp")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "waypoints", "--seed", "3", "--out", str(out),
                           "--quiet", "--set", "max_duration_s=12", "--set", "aiding.dropout_start_s=4",
                           "--set", "aiding.dropout_duration_s=1"], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return out / "log.mcap"


def _replay(log, out, capsys):
    code = main_replay([str(log), "--out", str(out)])
    captured = capsys.readouterr()
    report = json.loads((out / "replay.json").read_text()) if (out / "replay.json").exists() else None
    return code, captured, report


def test_a_recorded_run_replays_bit_exactly(recorded, tmp_path, capsys):
    code, captured, report = _replay(recorded, tmp_path / "r", capsys)
    assert code == EXIT_IDENTICAL, captured.err
    assert report["identical"] and report["app"] == "ground_robot" and report["damage"] is None
    assert report["ticks"] == 1200 and report["inputs"] > 1200
    for name in ("estimate", "wheels"):
        t = report["topics"][name]
        assert t["logged"] == t["replayed"] > 100 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None
    assert (tmp_path / "r" / "replay.png").stat().st_size > 10000


@pytest.mark.parametrize("damage", ["cut", "flipped byte"])
def test_a_damaged_log_replays_its_prefix_and_exits_2(recorded, tmp_path, capsys, damage):
    data = bytearray(recorded.read_bytes())
    if damage == "cut":
        data = data[:len(data) * 2 // 3]
    else:
        data[len(data) // 2] ^= 0xFF
    log = tmp_path / "damaged.mcap"
    log.write_bytes(bytes(data))
    code, captured, report = _replay(log, tmp_path / "r", capsys)
    assert code == EXIT_BAD_LOG
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "cut or corrupt" in err[0] and "Traceback" not in captured.err
    assert report["damage"] and report["identical"]            # the readable prefix replays identically
    assert 0 < report["topics"]["wheels"]["replayed"] < 1200 // 2


def test_not_a_recording_is_one_line(tmp_path, capsys):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file")
    assert main_replay([str(junk)]) == EXIT_BAD_LOG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "not a readable MCAP recording" in err[0]
    assert main_replay([str(tmp_path / "missing.mcap")]) == EXIT_BAD_LOG
    empty = tmp_path / "empty.mcap"
    McapLog(str(empty)).close()
    assert main_replay([str(empty)]) == EXIT_BAD_LOG
    assert "no app recording" in capsys.readouterr().err


class _Motors:
    def command(self, cmd):
        pass

    def stop(self, now_us):
        pass


def test_outputs_that_differ_from_the_app_exit_3(tmp_path, capsys):
    """A recording whose wheel command at 0.5 s was altered: the replay finds it there."""
    log = McapLog(str(tmp_path / "altered.mcap"))

    def sink(topic, time_us, msg):
        if topic == "/app/out/wheels" and time_us == 500000:
            msg = dict(msg.as_dict(), left_radps=msg.left_radps + 1e-9)
        log.log(topic, time_us, msg)

    app = GroundRobotRuntime([(2.0, 0.0)], _Motors())
    app.record(sink)
    for t in range(0, 1000000, 10000):
        app.on_imu(ImuSample(t + 10000, 10000, (0.0, 0.0, -0.0980665), (0.0, 0.0, 0.0)))
        if t % 100000 == 0:
            app.on_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
        app.step(t)
    log.close()
    code, captured, report = _replay(tmp_path / "altered.mcap", tmp_path / "r", capsys)
    assert code == EXIT_DIVERGED and "DIVERGED" in captured.out
    assert report["topics"]["wheels"]["first_divergence_us"] == 500000
    assert report["topics"]["wheels"]["max_abs_diff"] == pytest.approx(1e-9, rel=1e-3)
    assert report["topics"]["estimate"]["first_divergence_us"] is None


def test_replay_help():
    proc = subprocess.run([sys.executable, "-m", "harness", "replay", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "Exit status" in proc.stdout


def test_mission_commands_are_inputs_and_replay(tmp_path, capsys):
    """hold and set_waypoints enter through the ``mission`` entry point (MissionCmd): a recording with a
    hold, then a new mission mid-run, replays bit for bit (the rebuilt app starts on the recorded
    first way-points and receives the same commands at the same place in the tick sequence)."""
    log = McapLog(str(tmp_path / "missions.mcap"))
    app = GroundRobotRuntime([(2.0, 0.0)], _Motors())
    app.record(log.log)
    app.hold(time_us=0)
    for t in range(0, 2000000, 10000):
        if t == 500000:
            app.set_waypoints([(1.0, 1.0), (0.0, 0.0, -1)], time_us=t)
        app.on_imu(ImuSample(t + 10000, 10000, (0.01, 0.0, -0.0980665), (0.0, 0.0, 0.001)))
        if t % 100000 == 0:
            app.on_pose(PoseSample(t, (0.001 * t * 1e-4, 0.0, 0.0), (0.0, 0.0, 0.0)))
        app.step(t)
    log.close()
    assert app.drive.follower.directions == [1, -1] and not app.drive.holding
    code, captured, report = _replay(tmp_path / "missions.mcap", tmp_path / "r", capsys)
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    assert report["inputs"] == 200 + 20 + 2
    assert report["topics"]["estimate"]["logged"] > 50 and report["topics"]["wheels"]["max_abs_diff"] == 0


def test_mission_cmd_sample():
    from onboard.core.samples import MissionCmd, SampleError
    cmd = MissionCmd(5, [[1, 2], (3.0, 4.0, -1)])
    assert cmd.waypoints_ne_m == ((1.0, 2.0), (3.0, 4.0, -1)) and not cmd.hold
    assert cmd.as_dict() == {"time_us": 5, "waypoints_ne_m": [(1.0, 2.0), (3.0, 4.0, -1)], "hold": False}
    assert MissionCmd(5, hold=True).waypoints_ne_m == ()
    for bad in ({"waypoints_ne_m": []}, {"waypoints_ne_m": [(1.0,)]}, {"waypoints_ne_m": [(1.0, 2.0, 0)]},
                {"waypoints_ne_m": [(float("nan"), 0.0)]}, {"waypoints_ne_m": [(1.0, 2.0)], "hold": True},
                {"waypoints_ne_m": [5]}):
        with pytest.raises(SampleError):
            MissionCmd(0, **bad)


def _edited_recording(path, edit):
    """A short ground-robot recording (0.3 s) written through ``edit(topic, msg) -> msg`` (a recording whose
    settings or records were edited by hand)."""
    log = McapLog(str(path))

    def sink(topic, time_us, msg):
        log.log(topic, time_us, edit(topic, json.loads(json.dumps(msg)) if isinstance(msg, dict) else msg))

    app = GroundRobotRuntime([(2.0, 0.0)], _Motors())
    app.record(sink)
    for t in range(0, 300000, 10000):
        app.on_imu(ImuSample(t + 10000, 10000, (0.0, 0.0, -0.0980665), (0.0, 0.0, 0.0)))
        if t % 100000 == 0:
            app.on_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
        app.step(t)
    log.close()
    return path


def _edit_config(change):
    def edit(topic, msg):
        if topic == "/app/config":
            change(msg)
        return msg
    return edit


EDITED = {
    "no config": (_edit_config(lambda m: m.pop("config")), "no config"),
    "config a list": (_edit_config(lambda m: m.update(config=[1, 2])), "config"),
    "app a list": (_edit_config(lambda m: m.update(app=[1])), "app"),
    "no runtime": (_edit_config(lambda m: m["config"].pop("runtime")), "runtime"),
    "no estimator": (_edit_config(lambda m: m["config"].pop("estimator")), "estimator"),
    "waypoints not numbers": (_edit_config(lambda m: m["config"].update(waypoints_ne_m="x")), "ground_robot"),
    "no waypoints": (_edit_config(lambda m: m["config"].update(waypoints_ne_m=[])), "way-point list is empty"),
    "inputs garbage": (lambda t, m: _same_schema(m, {"garbage": 1}) if t.startswith("/app/in/") else m, "/app/in/"),
    "ticks garbage": (lambda t, m: {"x": 1} if t == "/app/step" else m, "/app/step"),
}


def _same_schema(msg, data):
    """``data`` logged under ``msg``'s schema (its type's name)."""
    return type(type(msg).__name__, (), {"as_dict": lambda self: data})()


@pytest.mark.parametrize("what", sorted(EDITED))
def test_a_recording_edited_by_hand_is_one_line_and_exit_2(tmp_path, capsys, what):
    """A recording whose settings or records were edited (a key removed, a wrong type, garbage in an input or
    a tick) cannot be rebuilt or fed: one line naming what is wrong, exit 2, no report written."""
    edit, needle = EDITED[what]
    log = _edited_recording(tmp_path / "edited.mcap", edit)
    for main in (main_replay, _main_conformance_pure):
        assert main([str(log), "--out", str(tmp_path / "r")]) == EXIT_BAD_LOG
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
        assert not (tmp_path / "r" / "replay.json").exists() and not (tmp_path / "r" / "conformance.json").exists()


def _main_conformance_pure(argv):
    from harness.conformance import main_conformance
    return main_conformance(argv + ["--target", "pure"])


def test_a_report_folder_that_cannot_be_written_is_one_line(tmp_path, capsys):
    log = _edited_recording(tmp_path / "a.mcap", lambda t, m: m)
    for out in (str(log), str(tmp_path / "a.mcap" / "r")):
        assert main_replay([str(log), "--out", out]) == EXIT_BAD_LOG
        err = capsys.readouterr().err
        assert err.startswith("error: cannot write the report folder %s: " % out) and err.count("\n") == 1, err


@pytest.mark.parametrize("tolerance", ["nan", "-1", "inf", "x"])
def test_the_tolerance_is_a_finite_number_at_least_0(tmp_path, capsys, tolerance):
    with pytest.raises(SystemExit) as exc:
        main_replay([str(tmp_path / "a.mcap"), "--tolerance", tolerance])
    assert exc.value.code == 2
    assert "argument --tolerance: expected a number >= 0, got %r" % tolerance in capsys.readouterr().err
