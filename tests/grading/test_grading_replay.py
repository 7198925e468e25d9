"""Record and replay of the grading dozer (``python -m harness run grading`` -> log.mcap -> ``harness replay``).

The grading scenario records its onboard app (the ground robot with the ES-EKF, or the Pi app on
simulated VESCs with ``motors=vesc``): IMU and aiding samples, the leg commands (``hold`` at the
placed start, then ``set_waypoints`` per leg, through the ``mission`` entry point), ticks and
commands. The replay rebuilds an identical ``EskfPoseEstimator`` from the recorded settings and gets
every command back bit for bit; ``--impl`` rebuilds it with another implementation: Cython is
bit-identical to pure Python, NumPy differs by rounding only.
"""
import json
import math
import subprocess
import sys

import pytest
from mcap.reader import make_reader

from harness.replay import EXIT_BAD_LOG, EXIT_DIVERGED, EXIT_IDENTICAL, _estimator, main_replay
from onboard.estimators.eskf import IMPL_MODULES
from onboard.estimators.eskf_pose import EskfPoseEstimator
from onboard.impl import available
from onboard.runtime.ground_robot import GroundRobotRuntime

pytestmark = pytest.mark.scenario
IMPLS = available(IMPL_MODULES)


@pytest.fixture(scope="module", params=["direct", "vesc"])
def recorded(request, tmp_path_factory):
    """A two-leg grading run (seed 2) recorded into log.mcap, with the motors given."""
    out = tmp_path_factory.mktemp("grading-" + request.param)
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "grading", "--seed", "2", "--out", str(out),
                           "--quiet", "--set", "max_legs=2", "--set", "motors=" + request.param,
                           "--set", "estimator_impl=pure"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return request.param, out / "log.mcap"


def _replay(log, out, capsys, *args):
    code = main_replay([str(log), "--out", str(out)] + list(args))
    captured = capsys.readouterr()
    report = json.loads((out / "replay.json").read_text()) if (out / "replay.json").exists() else None
    return code, captured, report


def test_a_grading_run_replays_bit_exactly(recorded, tmp_path, capsys):
    motors, log = recorded
    with open(log, "rb") as fh:
        missions = [json.loads(m.data) for _s, channel, m in make_reader(fh).iter_messages()
                    if channel.topic == "/app/in/mission"]
    # the placed start's hold, then per leg: forward to green, reverse to red
    assert missions[0]["hold"] and missions[0]["waypoints_ne_m"] == []
    assert len(missions) == 3 and all(not m["hold"] and [w[2] for w in m["waypoints_ne_m"]] == [1, -1]
                                      for m in missions[1:])
    code, captured, report = _replay(log, tmp_path / "r", capsys)
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    assert report["app"] == ("rpi_ground_robot" if motors == "vesc" else "ground_robot")
    assert report["estimator"] == "eskf" and report["impl"] == report["recorded_impl"] == "pure"
    for name in ("estimate", "wheels"):
        t = report["topics"][name]
        assert t["logged"] == t["replayed"] > 1000 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None


def test_a_grading_run_logs_its_samples_commands_and_truth(recorded):
    """Besides the app's recording, the run's log holds the simulated samples, the app's estimates and
    commands, the truth (with the blade's load) every loop step, and one record per leg."""
    motors, log = recorded
    counts = {}
    truth = None
    with open(log, "rb") as fh:
        for _s, channel, m in make_reader(fh).iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/truth":
                truth = json.loads(m.data)
    for topic in ("/imu", "/aiding/pose", "/estimate", "/cmd/wheels", "/truth"):
        assert counts.get(topic, 0) > 100, (topic, sorted(counts))
    assert counts["/grading/leg"] == 2 and "blade_load_m3" in truth and len(truth["pos_ned_m"]) == 3
    if motors == "vesc":
        assert counts["/vesc/left/telemetry"] > 100 and counts["/shutdown"] == 1


@pytest.mark.parametrize("impl", [i for i in ("cython", "numpy") if i in IMPLS])
def test_replay_with_another_eskf_implementation(recorded, tmp_path, capsys, impl):
    """Cython is bit-identical to the recorded pure-Python ESKF; NumPy's sums round differently
    (differences of ~1e-15 in the estimate, ~1e-13 rad/s in the wheel commands)."""
    _motors, log = recorded
    code, captured, report = _replay(log, tmp_path / "r", capsys, "--impl", impl)
    assert report["impl"] == impl and report["recorded_impl"] == "pure"
    assert "implementation %s (recorded: pure)" % impl in captured.out
    if impl == "cython":
        assert code == EXIT_IDENTICAL, captured.out
    else:
        assert code in (EXIT_IDENTICAL, EXIT_DIVERGED)
        assert report["topics"]["estimate"]["max_abs_diff"] < 1e-9
        assert report["topics"]["wheels"]["max_abs_diff"] < 1e-6
    for t in report["topics"].values():
        assert t["logged"] == t["replayed"]


def test_recipe_config_rebuilds_an_identical_eskf():
    """kind, full settings, consider sigma and implementation: the rebuilt estimator is configured as
    the recorded one (consider variances bit for bit)."""
    consider = [0.05, 0.05, 0.05, math.radians(1.0), math.radians(1.0), math.radians(5.0)]
    est = EskfPoseEstimator({"init_pos_sigma_m": [0.05] * 3, "gate_nis": 30.0}, "pure", consider_sigma=consider)
    app = GroundRobotRuntime([(1.0, 0.0)], None, estimator=est)
    cfg = json.loads(json.dumps(app.recipe_config()))
    assert cfg["estimator"]["kind"] == "eskf" and cfg["estimator"]["impl"] == "pure"
    rebuilt = _estimator(cfg["estimator"])
    assert rebuilt.eskf.cfg == est.eskf.cfg and rebuilt.consider_var == est.consider_var
    assert rebuilt.impl == "pure"


def test_impl_on_a_planar_recording_is_one_line(tmp_path, capsys):
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "grading", "--seed", "2", "--out",
                           str(tmp_path / "run"), "--quiet", "--set", "max_legs=1", "--set", "estimator=planar"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    code, captured, _report = _replay(tmp_path / "run" / "log.mcap", tmp_path / "r", capsys)
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    code, captured, _report = _replay(tmp_path / "run" / "log.mcap", tmp_path / "r2", capsys, "--impl", "pure")
    err = captured.err.strip().splitlines()
    assert code == EXIT_BAD_LOG and len(err) == 1 and "estimator is 'planar'" in err[0]
