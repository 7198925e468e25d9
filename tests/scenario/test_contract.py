"""The scenario contract (harness/scenarios/__init__.py) that the CLI enforces.

Every registered scenario, run twice through the CLI with the same seed in its REDUCED configuration,
writes byte-identical metrics.json with a boolean ``success``, a non-empty log.mcap and plots whose every
panel has a title, axis labels and a legend for each of its marks. A scenario that breaks the contract
(metrics without ``success``, with wall-clock figures) is refused: exit 2, one line, no metrics.json.
"""
import json
import sys
import types

import pytest

from harness import scenarios
from harness.cli import main
from harness.config import ConfigError
from harness.report import plots
from harness.report.run_report import RunReport
from harness.sim import virtual_board

pytestmark = pytest.mark.scenario


def _marks(name):
    """The markers and skips of the suite for what a scenario needs beyond Python."""
    if name == "mp-board":
        return [pytest.mark.micropython,
                pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")]
    if name == "fil-avr":
        return [pytest.mark.fil]
    return []


ALL = [pytest.param(name, marks=_marks(name)) for name in sorted(scenarios.SCENARIOS)]

# topics each scenario's log must have (its samples and commands); the others: a non-empty log
GROUND_TOPICS = ("/imu", "/aiding/pose", "/estimate", "/cmd/wheels", "/truth")
LOG_TOPICS = {
    "waypoints": GROUND_TOPICS, "vesc-waypoints": GROUND_TOPICS, "fil-avr": ("/avr/telemetry", "/aiding/pose", "/estimate", "/cmd/wheels", "/truth"),      # its IMU is the firmware's "grading": GROUND_TOPICS,
    "ins-eskf": ("/ins_eskf/noise_less/imu", "/ins_eskf/noise_less/aiding/pose", "/ins_eskf/extreme/estimate",
                 "/viz/sensor_fusion/truth/pose"),
    "uwb-ranging": ("/uwb/case", "/uwb/token_ring/n2/range", "/uwb/broadcast/n4/range", "/uwb/broadcast/n4/truth"),
    "mp-board": ("/mp_board/imu", "/mp_board/aiding/pose", "/mp_board/board/state", "/viz/estimate/pose"),
    "swarm-fixed": ("/app/in/range", "/app/out/velocity", "/swarm/truth", "/viz/swarm"),
    "swarm-random": ("/app/in/range", "/app/out/velocity", "/swarm/truth", "/viz/swarm"),
    "level-grid": ("/level/terrain", "/level/agents", "/level/heights"),
    "boat-hil-lag": ("/app/in/gnss", "/app/in/yaw_rate", "/app/out/thrust", "/boat/truth", "/boat/hil_lag/case"),
    "soil-blind-map": ("/loader/machine", "/loader/cmd", "/loader/truth", "/soil/sweep"),
    "soil-homogeneous": ("/loader/machine", "/loader/cmd", "/soil/sweep", "/soil/cut_estimate"),
    "soil-sweep": ("/loader/machine", "/loader/cmd", "/soil/sweep", "/soil/cut_estimate"),
}


def test_every_scenario_defines_the_contract():
    """DESCRIPTION, DEFAULTS, SETTING_RANGES, REDUCED (a dict of known settings) and run; listed together
    so that one run names every scenario still missing a part."""
    missing = []
    for name in sorted(scenarios.SCENARIOS):
        module = scenarios.load(name)
        for part, kind in (("DESCRIPTION", str), ("DEFAULTS", dict), ("SETTING_RANGES", dict), ("REDUCED", dict)):
            if not isinstance(getattr(module, part, None), kind):
                missing.append("%s.%s" % (name, part))
        if not callable(getattr(module, "run", None)):
            missing.append("%s.run" % name)
    assert missing == [], "scenarios without their part of the contract: %s" % ", ".join(missing)


def _mcap_topics(path):
    from mcap.reader import make_reader
    with open(path, "rb") as fh:
        summary = make_reader(fh).get_summary()
    counts = summary.statistics.channel_message_counts
    return {ch.topic: counts.get(cid, 0) for cid, ch in summary.channels.items()}


@pytest.fixture
def plot_problems(monkeypatch):
    """Every figure a run saves is checked (harness.report.plots.problems) on its way to the PNG."""
    found = []
    save = RunReport.save_figure

    def checked_save(self, fig, name):
        found.extend("%s.png: %s" % (name, p) for p in plots.problems(fig))
        return save(self, fig, name)
    monkeypatch.setattr(RunReport, "save_figure", checked_save)
    return found


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", ALL)
def test_same_seed_gives_byte_identical_metrics(name, tmp_path, capsys, plot_problems):
    if name == "fil-avr":
        from harness.sim.avr_bridge import ensure_built
        ensure_built()
    runs = []
    for k in range(2):
        out = tmp_path / ("run%d" % k)
        code = main(["run", name, "--reduced", "--seed", "3", "--quiet", "--out", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 3), err                  # 3: the mission failed, still a valid report
        runs.append(out)
    a, b = ((out / "metrics.json").read_bytes() for out in runs)
    assert a == b
    metrics = json.loads(a)
    assert isinstance(metrics["success"], bool)
    assert scenarios.wall_clock_keys(metrics) == []
    topics = _mcap_topics(runs[0] / "log.mcap")
    assert sum(topics.values()) > 0, "empty log.mcap"
    for topic in LOG_TOPICS.get(name, ()):
        assert topics.get(topic, 0) > 0, "no %s in the log (%s)" % (topic, ", ".join(sorted(topics)))
    run_json = json.loads((runs[0] / "run.json").read_text())
    assert run_json["mcap_messages"] == sum(topics.values())
    assert plot_problems == [], "\n".join(plot_problems)


# ---------------------------------------------------------------------------------------------- refusals
def _fake_scenario(monkeypatch, metrics, extra=None):
    module = types.ModuleType("fake_scenario_for_tests")
    module.DESCRIPTION = "a scenario that returns what the test gives it"
    module.DEFAULTS = {"duration_s": 1.0, "inner": {"gain": 2}}
    module.SETTING_RANGES = {"duration_s": ("a number > 0", lambda v: v > 0)}
    module.REDUCED = {"duration_s": 0.5}
    module.run = lambda config, ctx: dict(metrics)
    for k, v in (extra or {}).items():
        setattr(module, k, v)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(scenarios.SCENARIOS, "fake", module.__name__)
    return module


@pytest.mark.parametrize("metrics,needle", [
    ({"error_m": 0.1}, "without a boolean 'success'"),
    ({"success": 1}, "without a boolean 'success'"),
    ({"success": True, "wall_time_s": 3.2}, "wall-clock figures wall_time_s"),
    ({"success": True, "flights": [{"setup_wall_s": 0.1}]}, "wall-clock figures flights.0.setup_wall_s"),
    ({"success": True, "sim_seconds_per_wall_second": 9.0}, "sim_seconds_per_wall_second"),
    ({"success": True, "error_m": float("nan")}, "not finite JSON"),
])
def test_a_scenario_breaking_the_contract_writes_no_metrics(monkeypatch, tmp_path, capsys, metrics, needle):
    _fake_scenario(monkeypatch, metrics)
    out = tmp_path / "out"
    assert main(["run", "fake", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "scenario fake" in err, err
    assert not (out / "metrics.json").exists()


def test_wall_clock_names():
    clock = ["wall_time_s", "setup_wall_s", "link_wall_s_per_tick", "sim_to_wall", "sim_seconds_per_wall_second",
             "elapsed_s", "wall_s", "sim_seconds_per_cpu_second", "cpu_time_s"]
    outcome = ["wall_height_m", "walls_hit", "firewall", "sim_time_s", "deploy_files", "cpython_version"]
    assert [k for k in clock if not scenarios.WALL_CLOCK_KEY.search(k)] == []
    assert [k for k in outcome if scenarios.WALL_CLOCK_KEY.search(k)] == []


def test_timing_goes_to_run_json(monkeypatch, tmp_path, capsys):
    def run(config, ctx):
        ctx.timing(setup_wall_s=0.25)
        return {"success": True, "duration_s": config["duration_s"]}
    _fake_scenario(monkeypatch, {}, {"run": run})
    out = tmp_path / "out"
    assert main(["run", "fake", "--quiet", "--reduced", "--out", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text()) == {"success": True, "duration_s": 0.5}
    assert json.loads((out / "run.json").read_text())["timing"] == {"setup_wall_s": 0.25}


def test_prepare_merges_layers_in_order_and_checks_before_anything_runs(monkeypatch):
    calls = []
    _fake_scenario(monkeypatch, {}, {"check_settings": lambda config: calls.append(config["duration_s"])})
    module, config = scenarios.prepare("fake", {"inner": {"gain": 3}}, {"duration_s": 4.0}, reduced=True)
    assert config == {"duration_s": 4.0, "inner": {"gain": 3}} and calls == [4.0]
    assert module.DEFAULTS == {"duration_s": 1.0, "inner": {"gain": 2}}      # untouched
    with pytest.raises(ConfigError, match="duration_s"):
        scenarios.prepare("fake", {"duration_s": -1.0})
    with pytest.raises(ConfigError, match="gian"):
        scenarios.prepare("fake", {"inner": {"gian": 3}})
    del sys.modules["fake_scenario_for_tests"].REDUCED
    with pytest.raises(scenarios.ContractError, match="defines no REDUCED"):
        scenarios.prepare("fake", reduced=True)
