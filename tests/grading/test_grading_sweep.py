"""Reduced Table I sweep in CI with the committed agents (ag2u): agent2 beats agent1 under
sensor-fusion noise. Seeded, deterministic: it fails if a change degrades agent2 or the loop."""
import json

import pytest

from harness.grading.agents import PolicyDecider, load_agent
from harness.grading.sweep import run_cell, sweep

pytestmark = [pytest.mark.scenario, pytest.mark.slow]


def test_agent2_makes_better_decisions_than_agent1_under_sensor_fusion_noise():
    deciders = {a: PolicyDecider(*load_agent(a)) for a in ("agent1", "agent2")}
    cells = {a: run_cell(deciders, a, "sensor_fusion", rollouts=4, seed=3) for a in deciders}
    assert cells["agent2"]["success_fraction"] > cells["agent1"]["success_fraction"]
    assert cells["agent2"]["decisions"] > 0 and cells["agent1"]["decisions"] > 0


def test_sweep_writes_tables_and_figure(tmp_path):
    table1, table2, fig5 = sweep(str(tmp_path), rollouts=1, seed=2, heading_levels_deg=(0, 40),
                                 fig5_rollouts=1, show_progress=False)
    assert set(table1) == {"noise_less", "sensor_fusion", "extreme"}
    for row in table1.values():
        assert 0.0 <= row["agent1"] <= 1.0 and 0.0 <= row["agent2"] <= 1.0
    assert json.loads((tmp_path / "table1.json").read_text()) == table1
    assert (tmp_path / "fig5.png").stat().st_size > 5000
    assert "Table I" in (tmp_path / "results.md").read_text()
    assert [c["heading_sigma_deg"] for c in fig5["agent1"]] == [0, 40]
