"""swarm-fixed / swarm-random at the edges of their allowed settings: a single drone (no pair, so no
separation to report; the direct world flies 2 or more, checked before anything flies) and a flight shorter
than half a control period (no step recorded, its replays no track) finish with a report, not a crash;
random goals or starts that cannot fit that far apart are refused before anything flies."""
import json

import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.scenarios import check_metrics, prepare
from harness.scenarios.context import RunContext

pytestmark = pytest.mark.scenario


@pytest.mark.parametrize("name", ["swarm-fixed", "swarm-random"])
def test_one_drone_has_no_separation_and_finite_metrics(name):
    module, config = prepare(name, {"drone_counts": [1], "episode": {"max_duration_s": 1.0}}, reduced=True)
    metrics = module.run(config, RunContext(1))
    check_metrics(name, metrics)          # was: min_separation_m inf, not JSON
    assert metrics["min_separation_m"] is None
    assert metrics["per_drone_count"]["1"]["min_separation_m"] is None


@pytest.mark.parametrize("over", [{"drone_counts": [1]}, {"drone_counts": [3, 1]},
                                  {"drone_counts": [2], "large_swarm": {"drones": 1}}])
def test_one_drone_on_the_direct_world_is_a_config_error(over):
    with pytest.raises(ConfigError, match="the direct world .* flies 2 drones or more, got 1"):
        prepare("swarm-fixed", dict(over, episode={"link": "direct"}), reduced=True)


def test_two_drones_still_report_their_separation():
    module, config = prepare("swarm-fixed", {"episode": {"link": "direct", "max_duration_s": 1.0}}, reduced=True)
    metrics = module.run(config, RunContext(1))
    assert 0.0 < metrics["min_separation_m"] == metrics["per_drone_count"]["2"]["min_separation_m"]


def test_flight_without_a_step_writes_its_report(tmp_path):
    out = tmp_path / "run"
    code = main(["run", "swarm-fixed", "--reduced", "--quiet", "--out", str(out),
                 "--set", "episode.link=\"direct\"", "--set", "episode.max_duration_s=0.001"])
    assert code == 3                      # mission failed (no goal reached), not a crash in the plots
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["goals_reached"] == 0 and metrics["success"] is False


@pytest.mark.parametrize("over,needle", [
    ({"episode": {"goal_separation_m": 3.0}}, "goal_separation_m: 6 random goals"),
    ({"large_swarm": {"drones": 40, "arena_m": 2.0}}, "(the large swarm's flights)"),
])
def test_random_points_that_cannot_fit_are_a_config_error(over, needle):
    """More random goals (or starts) than fit their square that far apart, for any seed: refused before
    anything flies (was: ValueError from the sampler mid-run)."""
    with pytest.raises(ConfigError, match="cannot be .* m apart in the") as err:
        prepare("swarm-random", over, reduced=True)
    assert needle in str(err.value)
    prepare("swarm-fixed", over, reduced=True)          # fixed goals are laid out, not drawn


def test_the_fit_bound_is_never_below_a_square_grid():
    from harness.scenarios.swarm.flight import most_points_apart
    for k in range(1, 8):                # (k + 1)^2 points of a grid with spacing 1 in a square of side k
        assert most_points_apart(float(k), 1.0) >= (k + 1) ** 2
    assert most_points_apart(3.2, 0.0) == float("inf")


def test_replays_of_flights_without_a_step_compare_without_tracks(tmp_path):
    """compare_estimators on flights too short for any track: the hybrid-vs-PF comparison has no share
    ahead (was: None > None, a TypeError after the flights)."""
    out = tmp_path / "run"
    code = main(["run", "swarm-random", "--reduced", "--quiet", "--out", str(out),
                 "--set", "episode.link=\"direct\"", "--set", "episode.max_duration_s=0.001",
                 "--set", "episode.compare_estimators=true"])
    assert code == 3
    comparison = json.loads((out / "metrics.json").read_text())["estimator_comparison"]
    versus = [v for k, v in comparison.items() if k.startswith("hybrid_vs_pf_")]
    assert versus and all(v["hybrid_converged_share_ahead_s"] == [] for v in versus)
