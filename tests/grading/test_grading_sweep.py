"""Reduced Table I sweep in CI with the committed agents (ag2u) on the reported sweep's noise-less and
sensor-fusion cells (20 rollouts each, seed 1; the reported sweep has 50: harness/scenarios/grading/README.md):
seeded, deterministic quality floors, and the ordering of Table I (agent2 ahead of agent1 by >= 20 pp under
sensor-fusion noise); per-metre accuracy on fresh expert decisions. It fails if a change degrades the agents or
the loop."""
import json

import pytest

from harness.training.grading_policy import dataset
from harness.scenarios.grading.agents import MODEL_DIR, PolicyDecider, load_agent
from harness.config import ConfigError
from harness.scenarios.grading.sweep import run_cell_job, episode_config, run_cell, sweep
from harness.parallel import ordered_map
from harness.training.grading_policy.train_policy import AGENT_OBSERVATION, AGENT_WALL_HEIGHT_M, accuracy

# the module's cells take ~2 min when run alone on a 2-core machine and several times that on a busy one: the
# hang guard gets a margin that no machine speed reaches (pytest-timeout is never a speed check)
pytestmark = [pytest.mark.scenario, pytest.mark.slow, pytest.mark.timeout(3600)]
ROLLOUTS = 20
# the compiled ES-EKF: the pure path's bits (tests/unit/test_eskf_kernels.py), in 0.6 of the CPU time
FAST_ESKF = {"estimator_impl": "cython"}


@pytest.fixture(scope="module")
def ci_cells():
    """The noise-less and sensor-fusion cells of the reported Table I sweep for the committed agents, the first
    20 of its 50 rollouts each (seed 1; rollout r is world seed 1000 + r), in two processes, ~2 min alone. Keyed
    by (noise, agent)."""
    keys = [(noise, agent) for noise in ("sensor_fusion", "noise_less") for agent in ("agent1", "agent2")]
    jobs = [((agent, noise, ROLLOUTS, 1, -1.0), episode_config(FAST_ESKF), MODEL_DIR, "numpy") for noise, agent in keys]
    return dict(zip(keys, ordered_map(run_cell_job, jobs, 2)))


def test_committed_agents_decide_well_without_noise(ci_cells):
    """Seeded regression floor on both agents without noise (seed 1, 20 rollouts, decisions that fill half a
    blade in the work area: agent1 0.851 of 87, agent2 0.902 of 82; 25 rollouts: 0.852 of 108 and 0.902 of 102;
    50 rollouts: 0.901 of 222 and 0.920 of 213; the full sweep is the >= 0.9 check, the paper has 0.96 / 0.98)."""
    for agent in ("agent1", "agent2"):
        assert ci_cells[("noise_less", agent)]["decisions"] > 0
        assert ci_cells[("noise_less", agent)]["success_fraction"] >= 0.8, agent


def test_committed_agent2_decides_well_under_sensor_fusion_noise(ci_cells):
    """Seeded regression floor on agent2 under the episodes' default held aiding error (seed 1, 20 rollouts:
    0.811 of 90; 25 rollouts: 0.835 of 109; 50 rollouts: 0.872 of 218; the paper's agent2: 0.90)."""
    assert ci_cells[("sensor_fusion", "agent1")]["decisions"] > 0
    assert ci_cells[("sensor_fusion", "agent2")]["success_fraction"] >= 0.8


def test_agent2_makes_better_decisions_than_agent1_under_sensor_fusion_noise(ci_cells):
    """ag2u Table I's ordering on the CI cells, by the margin issue 9 asks (>= 20 pp; the paper: 90 vs 50 %).
    Seed 1, 20 rollouts: agent2 0.811 of 90 decisions, agent1 (trained on the noise-free trajectory) 0.275 of 258
    (25 rollouts: 0.835 of 109 against 0.289 of 301; 50 rollouts: 0.872 of 218 vs 0.331 of 602; held-out seed 2:
    0.874 vs 0.291). See
    harness/scenarios/grading/README.md."""
    gap = (ci_cells[("sensor_fusion", "agent2")]["success_fraction"]
           - ci_cells[("sensor_fusion", "agent1")]["success_fraction"])
    assert gap >= 0.20


def test_committed_agents_point_at_the_experts_way_points_on_fresh_expert_decisions():
    """Per-metre accuracy of the committed nets on held-out expert decisions (seed 77, not trained on), each
    from episodes of the noise its expert data came from (agent1: the noise-free trajectory; agent2: sensor
    fusion, `make train-grading`)."""
    for agent, noise in (("agent1", "noise_less"), ("agent2", "sensor_fusion")):
        data = dataset.collect(3, seed=77, noise=noise, config=episode_config(FAST_ESKF))
        weights, card = load_agent(agent)
        assert card["input"]["observation"] == dict(AGENT_OBSERVATION, wall_height_m=AGENT_WALL_HEIGHT_M)
        assert sum(v.nbytes for v in weights.values()) < 2_000_000
        acc = accuracy(weights, card["network"], card["input"]["observation"], data)
        assert acc["green"]["lateral_within_0.2m"] >= 0.7, (agent, acc)
        assert acc["green"]["median_lateral_err_m"] <= 0.12, (agent, acc)


def test_sweep_writes_tables_and_figure(tmp_path):
    # two legs per episode: the files' shape, not the agents' quality (the fixture's cells judge that)
    table1, table2, fig5 = sweep(str(tmp_path), rollouts=1, seed=2, heading_levels_deg=(0, 40),
                                 fig5_rollouts=1, show_progress=False, episode_overrides=dict(FAST_ESKF, max_legs=2))
    assert set(table1) == {"noise_less", "sensor_fusion", "extreme"}
    for row in table1.values():
        assert 0.0 <= row["agent1"] <= 1.0 and 0.0 <= row["agent2"] <= 1.0
    assert json.loads((tmp_path / "table1.json").read_text()) == table1
    intervals = json.loads((tmp_path / "table1_ci.json").read_text())["scenarios"]
    for noise, row in table1.items():
        for agent in ("agent1", "agent2"):
            low, high = intervals[noise][agent]["ci"]
            assert intervals[noise][agent]["success_fraction"] == pytest.approx(row[agent])
            assert low <= row[agent] <= high
        assert intervals[noise]["gap_agent2_minus_agent1"]["value"] == pytest.approx(row["agent2"] - row["agent1"])
    assert (tmp_path / "fig5.png").stat().st_size > 5000
    assert "Table I" in (tmp_path / "results.md").read_text()
    assert [c["heading_sigma_deg"] for c in fig5["agent1"]] == [0, 40]


def test_sweep_in_worker_processes_gives_the_same_numbers(tmp_path):
    kwargs = dict(rollouts=1, seed=2, heading_levels_deg=(30,), fig5_rollouts=1, show_progress=False,
                  episode_overrides={"max_legs": 2})
    serial = sweep(str(tmp_path / "serial"), **kwargs)
    parallel = sweep(str(tmp_path / "parallel"), workers=2, **kwargs)
    assert parallel == serial
    assert (tmp_path / "parallel" / "cells.json").read_text() == (tmp_path / "serial" / "cells.json").read_text()


def test_sweep_settings_reach_every_episode_and_bad_ones_are_refused(tmp_path):
    base = episode_config({"estimator": "planar", "max_legs": 2})
    assert base["estimator"] == "planar" and base["max_legs"] == 2 and base["motors"] == "direct"
    deciders = {"agent1": PolicyDecider(*load_agent("agent1"))}
    cell = run_cell(deciders, "agent1", "noise_less", rollouts=1, seed=3, base_config=base)
    assert 0 < cell["decisions"] <= 2                   # the override's leg budget held
    for bad in ({"noise": "extreme"}, {"heading_sigma_deg": 5.0}, {"motorz": "vesc"}, {"max_legs": "many"},
                {"motors": "can"}, {"vesc": {"topology": "usb"}}, {"max_legs": 0}, {"physics_hz": -1},
                {"erosion_every": 0}, {"blade": {"capacity_m3": 0.0}}, {"world": {"cell_m": 0.0}},
                {"world": {"size_m": [2.5]}}, {"world": {"piles_min": 3, "piles_max": 2}},
                {"vehicle": {"wheelbase_m": 0.0}}, {"leg_timeout_s": float("nan")}, {"estimator_impl": "fortran"}):
        with pytest.raises(ConfigError):
            episode_config(bad)


def test_sweep_cli_reports_a_bad_setting_without_running(tmp_path, capsys):
    from harness.cli import main
    assert main(["grading-sweep", "--rollouts", "1", "--out", str(tmp_path), "--set", "motorz=vesc"]) == 2
    assert "unknown episode setting 'motorz' (did you mean 'motors'?)" in capsys.readouterr().err
    assert not (tmp_path / "table1.json").exists()


def test_sweep_cli_reports_a_missing_model_dir_without_running(tmp_path, capsys):
    from harness.cli import main
    assert main(["grading-sweep", "--rollouts", "1", "--out", str(tmp_path / "out"),
                 "--model-dir", str(tmp_path / "nothing")]) == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "out" / "table1.json").exists()


@pytest.mark.parametrize("args,needle", [(["--rollouts", "0"], "--rollouts: expected an integer >= 1, got '0'"),
                                         (["--workers", "-2"], "--workers: expected an integer >= 1, got '-2'")])
def test_sweep_cli_refuses_an_empty_sweep(tmp_path, capsys, args, needle):
    from harness.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["grading-sweep", "--out", str(tmp_path)] + args)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "table1.json").exists()
