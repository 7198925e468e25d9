"""Scenario uwb-ranging: runs through the registry, both modes range every pair, seeds reproduce."""
import json

from harness.report import RunReport
from harness.scenarios import load
from harness.scenarios.context import RunContext


def _config(module):
    cfg = json.loads(json.dumps(module.DEFAULTS))
    cfg.update(n_nodes=[2, 5], duration_s=0.6)
    return cfg


def test_uwb_ranging_scenario_metrics_and_plot(tmp_path):
    module = load("uwb-ranging")
    cfg = _config(module)
    report = RunReport(str(tmp_path), "uwb-ranging", 3, cfg)
    m = module.run(cfg, RunContext(3, report=report))
    report.finish(m)
    assert (tmp_path / "uwb_rate_and_error_vs_n.png").exists()
    for mode in ("token_ring", "broadcast"):
        for n in ("2", "5"):
            r = m["results"][mode][n]
            assert r["pairs_ranged"] == r["pairs"]
            assert abs(r["error_mean_m"]) < 0.05 and 0.2 < r["error_std_m"] < 0.3   # paper: 0.0086, 0.2476
    hz = m["per_pair_hz"]
    assert hz["token_ring"]["5"] > 20.0 and hz["broadcast"]["5"] > 4 * hz["token_ring"]["5"]
    m2 = module.run(cfg, RunContext(3))
    assert json.dumps(m2, sort_keys=True) == json.dumps(m, sort_keys=True)
