"""Scenario tier: the waypoints mission through the CLI, seeds, faults and bad input."""
import json
import os
import subprocess
import sys

import pytest

from harness.config import ConfigError, merge
from harness.scenarios import load
from harness.scenarios.context import RunContext
from mcap.reader import make_reader

pytestmark = pytest.mark.scenario
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_default_mission_succeeds_and_writes_report(tmp_path):
    out = tmp_path / "run"
    proc = _cli("run", "waypoints", "--seed", "7", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["success"] is True
    assert metrics["waypoints_reached"] == metrics["waypoints_total"] == 5
    assert metrics["path_error_max_m"] < 0.3
    assert metrics["estimate_position_error_rms_m"] < 0.1
    assert metrics["failsafe_engagements"] == 0
    assert metrics["rates_hz"]["control"]["achieved"] == pytest.approx(50.0)
    assert (out / "trajectory.png").stat().st_size > 10000
    assert (out / "errors.png").stat().st_size > 10000
    with open(out / "log.mcap", "rb") as fh:
        topics = {}
        for _schema, channel, message in make_reader(fh).iter_messages():
            topics[channel.topic] = topics.get(channel.topic, 0) + 1
            if channel.topic == "/imu" and topics["/imu"] == 1:
                assert json.loads(message.data)["dt_us"] == 10000
    assert {"/imu", "/aiding/pose", "/estimate", "/cmd/wheels", "/truth"} <= set(topics)
    assert topics["/imu"] > 2000


def test_identical_seeds_identical_metrics(tmp_path):
    a = _cli("run", "waypoints", "--reduced", "--seed", "3", "--out", str(tmp_path / "a"), "--quiet")
    b = _cli("run", "waypoints", "--reduced", "--seed", "3", "--out", str(tmp_path / "b"), "--quiet")
    c = _cli("run", "waypoints", "--reduced", "--seed", "4", "--out", str(tmp_path / "c"), "--quiet")
    assert a.returncode == b.returncode == c.returncode == 0
    ma = (tmp_path / "a" / "metrics.json").read_text()
    assert ma == (tmp_path / "b" / "metrics.json").read_text()
    assert ma != (tmp_path / "c" / "metrics.json").read_text()


def test_aiding_dropout_stops_robot_then_mission_resumes():
    module = load("waypoints")
    cfg = merge(module.DEFAULTS, {"aiding": {"dropout_start_s": 8.0, "dropout_duration_s": 3.0}})
    metrics = module.run(cfg, RunContext(seed=2))
    assert metrics["watchdog_trips"]["aiding"] == 1
    assert metrics["failsafe_engagements"] == 1
    assert metrics["success"] is True


def test_unknown_scenario_is_one_line_error():
    proc = _cli("run", "no-such-scenario")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "unknown scenario 'no-such-scenario'" in proc.stderr


@pytest.mark.parametrize("content,needle", [
    ("scenario = \"waypoints\"\n[config\n", "not valid TOML"),
    ("scenario = \"waypoints\"\n[config]\nmax_duration_s = \"long\"\n", "must be float"),
    ("scenario = \"waypoints\"\n[config]\nbogus = 1\n", "unknown waypoints setting 'bogus'"),
    ("[config]\nmax_duration_s = 5.0\n", "missing `scenario"),
])
def test_bad_scenario_file_is_one_line_error(tmp_path, content, needle):
    path = tmp_path / "bad.toml"
    path.write_text(content)
    proc = _cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert needle in proc.stderr


def test_scenario_file_runs(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text("scenario = \"waypoints\"\n[config]\nwaypoints_ne_m = [[1.0, 0.0]]\n")
    proc = _cli("run", str(path), "--out", str(tmp_path / "o"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["waypoints_total"] == 1


def test_merge_rejects_wrong_types():
    with pytest.raises(ConfigError):
        merge({"a": {"b": 1.0}}, {"a": 3})


def test_list_and_help():
    proc = _cli("list")
    assert proc.returncode == 0 and "waypoints" in proc.stdout
    assert _cli("run", "--help").returncode == 0
