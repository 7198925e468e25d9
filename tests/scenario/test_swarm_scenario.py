"""Scenario tier: swarm-fixed / swarm-random in reduced form (committed models, no training)."""
import math

import pytest

from harness.config import merge
from harness.scenarios import load
from harness.scenarios.context import RunContext

pytestmark = pytest.mark.scenario
KEYS = ("goals_reached", "goals_total", "min_separation_m", "mean_position_error_m", "mean_orientation_error_deg")


def _run(name, seed, **episode):
    mod = load(name)
    cfg = merge(mod.DEFAULTS, {"drone_counts": [2], "episodes": 1,
                               "episode": dict({"max_duration_s": 15.0, "compare_estimators": False}, **episode)},
                name)
    return mod.run(cfg, RunContext(seed))


@pytest.mark.parametrize("name,goals_per_drone", [("swarm-fixed", 1), ("swarm-random", 3)])
def test_reduced_swarm_run_reports_the_metrics(name, goals_per_drone):
    m = _run(name, 3)
    for k in KEYS:
        assert k in m
    assert m["goals_total"] == 2 * goals_per_drone
    assert 0 <= m["goals_reached"] <= m["goals_total"]
    assert 0.0 < m["min_separation_m"] < 10.0
    assert math.isfinite(m["mean_position_error_m"]) and math.isfinite(m["mean_orientation_error_deg"])
    assert m["sim_time_s"] > 0


def test_same_seed_same_flight():
    a = _run("swarm-fixed", 5, impl="cython")
    b = _run("swarm-fixed", 5, impl="pure")
    for k in KEYS:
        assert a[k] == pytest.approx(b[k], abs=1e-9)
