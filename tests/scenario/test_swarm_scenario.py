"""Scenario tier: swarm-fixed / swarm-random in reduced form (committed models, no training).

The reduced runs fly through the deployment path: simulated Crazyflies driven by
boards.crazyflie over the official cflib (UDP), ranges from onboard.comms.uwb on the DW1000
channel simulator (token ring; the large swarm on the scalable broadcast mode).
"""
import json
import math

import pytest

from harness.scenarios import prepare
from harness.scenarios.context import RunContext

pytestmark = pytest.mark.scenario
KEYS = ("goals_reached", "goals_total", "min_separation_m", "mean_position_error_m", "mean_orientation_error_deg")


def _run(name, seed, drone_counts=(2,), large=0, large_s=3.0, **episode):
    mod, cfg = prepare(name, {"drone_counts": list(drone_counts), "episodes": 1,
                              "large_swarm": {"drones": large, "max_duration_s": large_s},
                              "episode": dict({"max_duration_s": 6.0, "compare_estimators": False}, **episode)})
    return mod.run(cfg, RunContext(seed))


def _check_deployment_path(rep, mode):
    assert rep["world"] == "cflib" and rep["uwb_mode"] == mode
    assert rep["driver_faults"] == [] and rep["sim_internal_errors"] == 0
    assert rep["setpoints_sent"] > 0 and rep["log_packets_received"] > 0
    assert rep["uwb"]["frames"] > 0 and rep["uwb"]["ranges"] > 0


@pytest.mark.parametrize("name,goals_per_drone,episode", [
    ("swarm-fixed", 1, {"policy": "int8", "agent_mode": "hybrid", "estimator": "int8"}),
    ("swarm-random", 3, {"policy": "int8-pure", "agent_mode": "pf"}),
])
def test_reduced_swarm_run_over_cflib_and_uwb(name, goals_per_drone, episode):
    """The deployment path end to end: cflib/UDP Crazyflies, UWB ranges, the int8 DQN (LiteRT or the pure
    kernel) and, in the hybrid configuration, the int8 learned estimator through LiteRT."""
    m = _run(name, 3, **episode)
    for k in KEYS:
        assert k in m
    assert m["link"] == "cflib"
    assert m["goals_total"] == 2 * goals_per_drone
    assert 0 <= m["goals_reached"] <= m["goals_total"]
    assert 0.0 < m["min_separation_m"] < 10.0
    # errors are averaged over tracks after they converged (6 s may be too short for any to converge)
    assert m["estimation_tracks"] >= 2 * 2 and 0 <= m["estimation_tracks_converged"] <= m["estimation_tracks"]
    if m["estimation_tracks_converged"]:
        assert math.isfinite(m["mean_position_error_m"]) and m["mean_position_error_m"] < 0.5
    else:
        assert m["mean_position_error_m"] is None and m["mean_orientation_error_deg"] is None
    assert m["sim_time_s"] > 0
    _check_deployment_path(m["world_reports"][0], "token_ring")
    # 2 drones, 6 s at 10 Hz: each drone needs one range per period; the token ring delivers several
    rep = m["world_reports"][0]
    assert rep["uwb"]["ranges"] >= 2 * 6 * 10 * 3
    # ... and the filters take every one of them (but those of the last period, after the last decision)
    assert rep["uwb"]["ranges"] - 2 * 10 <= rep["ranges_used"] <= rep["uwb"]["ranges"]


def test_large_swarm_uses_the_scalable_ranging_mode():
    m = _run("swarm-fixed", 4, drone_counts=(), large=8, large_s=3.0)
    ls = m["large_swarm"]
    assert ls["drones"] == 8 and ls["uwb_mode"] == "broadcast" and ls["goals_total"] == 8
    assert 0.0 <= ls["success_rate"] <= 1.0 and ls["min_separation_m"] > 0.0


def test_same_seed_same_flight_on_every_pf_path():
    a = _run("swarm-fixed", 5, impl="cython", link="direct")
    b = _run("swarm-fixed", 5, impl="pure", link="direct")
    for k in KEYS:
        assert a[k] == pytest.approx(b[k], abs=1e-9)


def test_estimator_comparison_replays_every_configuration_per_track():
    """The offline replay (pocket VI-A) of a direct-link flight through every configuration of the
    scenario, with convergence over all tracks and the hybrid-vs-pure rows at 100 and 1000 particles."""
    mod, cfg = prepare("swarm-random", {"drone_counts": [2], "episodes": 1, "large_swarm": {"drones": 0},
                                        "episode": {"max_duration_s": 8.0, "goals_per_drone": 1, "link": "direct",
                                                    "n_particles": 100, "compare_estimators": True}})
    m = mod.run(cfg, RunContext(6))
    comp = m["estimator_comparison"]
    for label in ("hybrid-100", "hybrid-100-paper", "pf-100", "learned"):
        row = comp[label]
        assert row["flights"] == 1 and row["tracks"] == 4            # 2 drones x (1 neighbour + 1 goal)
        assert row["converged_tracks"] + row["never_converged_tracks"] == row["tracks"]
        shares = [row["converged_fraction_within_s"][k] for k in ("2", "4", "6", "8", "10", "15")]
        assert shares == sorted(shares) and 0.0 <= shares[0] and shares[-1] * row["tracks"] <= row["converged_tracks"]
        curve = row["average_run_error_m"]
        assert curve["tracks"][0] == row["tracks"] and len(curve["t_s"]) == len(curve["error_m"]) == 40
        if row["median_convergence_time_all_tracks_s"] is not None:
            assert row["median_convergence_time_all_tracks_s"] >= row["median_convergence_time_s"] - 1e-9
    for n in (100, 1000):
        cmp = comp["hybrid_vs_pf_%d" % n]
        assert set(cmp) == {"hybrid_converges_more_tracks", "hybrid_lower_error", "hybrid_median_convergence_faster",
                            "hybrid_median_convergence_faster_converged_only", "hybrid_converged_share_ahead_s",
                            "hybrid_average_run_converges_faster"}
        h, p = comp["hybrid-%d" % n], comp["pf-%d" % n]
        # the verdict compares both configurations over the same (all) tracks
        assert cmp["hybrid_median_convergence_faster"] == (
            h["median_convergence_time_all_tracks_s"] is not None and
            (p["median_convergence_time_all_tracks_s"] is None or
             h["median_convergence_time_all_tracks_s"] < p["median_convergence_time_all_tracks_s"]))


def test_average_run_curve_is_pocket_fig6():
    """Mean over the tracks alive at each time since their first estimate; converged when that average stays
    below the threshold for the hold time."""
    from harness.scenarios.swarm.study import _curve_converged_s, average_run_error
    tracks = {"a": [(10.0 + 0.1 * k, 1.0 if k < 20 else 0.2) for k in range(40)],      # 2 s at 1 m, then 0.2 m
              "b": [(3.0 + 0.1 * k, 0.4) for k in range(10)]}                          # 1 s at 0.4 m, then gone
    c = average_run_error(tracks, bin_s=0.5, span_s=4.0)
    assert c["t_s"] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
    assert c["tracks"] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert c["error_m"] == pytest.approx([0.7, 0.7, 1.0, 1.0, 0.2, 0.2, 0.2, 0.2])
    assert _curve_converged_s(c, 0.5, 1.0) == 2.0
    assert _curve_converged_s(c, 0.1, 1.0) is None


def test_cli_exit_code_says_whether_every_flight_succeeded(tmp_path):
    """`python -m harness run swarm-*` exits 0 when every flight reached its goals without a close pair, 3
    when one did not (here: 2 drones on the direct link - the flights' configuration reaches both goals
    within the 60 s, not within 3 s)."""
    from harness.cli import main
    base = ["run", "swarm-fixed", "--seed", "3", "--quiet", "--set", "drone_counts=[2]", "--set",
            "large_swarm.drones=0", "--set", "episode.compare_estimators=false", "--set", "episode.link=direct"]
    assert main(base + ["--out", str(tmp_path / "ok")]) == 0
    assert main(base + ["--set", "episode.max_duration_s=3", "--out", str(tmp_path / "short")]) == 3
    m = json.loads((tmp_path / "short" / "metrics.json").read_text())
    assert m["success"] is False and m["goals_reached"] < m["goals_total"]


@pytest.mark.parametrize("overrides,needle", [
    ({"episodes": 0}, "config.episodes must be an integer >= 1, got 0"),
    ({"drone_counts": [2, 0]}, "config.drone_counts must be a list of integers >= 1"),
    ({"drone_counts": [], "large_swarm": {"drones": 0}}, "nothing to fly"),
    ({"episode": {"n_particles": 0}}, "config.episode.n_particles must be an integer >= 2, got 0"),
    ({"episode": {"arena_m": 0.0}}, "config.episode.arena_m must be a number > 0"),
    ({"episode": {"vel_noise_mps": -1.0}}, "config.episode.vel_noise_mps must be a number >= 0"),
    ({"episode": {"link": "radio"}}, "config.episode.link must be one of 'cflib', 'direct', got 'radio'"),
    ({"episode": {"impl": "fortran"}}, "config.episode.impl must be one of"),
    ({"episode": {"pf_config": {"resample_neff_fraction": 0.0}}}, "config.episode.pf_config.resample_neff_fraction must be a number in (0, 1], got 0.0"),
    ({"large_swarm": {"uwb_mode": "mesh"}}, "config.large_swarm.uwb_mode must be one of"),
    ({"estimators": {"pf-100": {"n_particles": 1}}}, "config.estimators.pf-100: SwarmAgent setting pf_config: ParticleFilter setting n_particles must be an integer >= 2"),
    ({"estimators": {"learned": {"mode": "oracle"}}}, "config.estimators.learned: SwarmAgent setting mode must be one of"),
])
def test_bad_settings_are_one_line_config_errors_before_anything_flies(overrides, needle, tmp_path, capsys):
    """Checked before the models load or a drone connects; the CLI prints one line and exits 2."""
    from harness.cli import main
    from harness.config import ConfigError

    with pytest.raises(ConfigError) as exc:
        prepare("swarm-random", overrides)
    assert needle in str(exc.value)
    # the same through the command line (one --set per leaf setting)
    def leaves(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict) and v:
                yield from leaves(v, prefix + k + ".")
            else:
                yield prefix + k, v
    argv = ["run", "swarm-random", "--quiet", "--out", str(tmp_path / "out")]
    for key, value in leaves(overrides):
        argv += ["--set", "%s=%s" % (key, json.dumps(value))]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: setting config.") or err.startswith("error: nothing to fly"), err
    assert err.count("\n") == 1
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("name", ["swarm-fixed", "swarm-random"])
def test_the_study_settings_file_turns_on_the_larger_swarm_and_the_replays(name):
    """The defaults fly within a minute; harness/scenarios/swarm/study.toml (`--config`) is the paper's study."""
    from harness.config import load_file
    from harness.scenarios.swarm.study import STUDY_CONFIG
    _mod, default = prepare(name)
    assert default["large_swarm"]["drones"] == 0 and default["episode"]["compare_estimators"] is False
    _mod, study = prepare(name, load_file(STUDY_CONFIG))
    assert study["drone_counts"] == [2, 3, 4] and study["large_swarm"]["drones"] == 8
    assert study["episode"]["compare_estimators"] is True


def test_study_flights_on_the_sweep_runner_do_not_depend_on_the_worker_count():
    """The flights after the first are jobs of the sweep runner (study.fly): three 2-drone flights of 2 s (the
    direct link: the runner is under test, not cflib), each replayed through one estimator configuration, flown
    in this process and on a pool of two worker processes give the same metrics (every flight rebuilds its
    random streams from the run seed and its name)."""
    def study(workers):
        mod, cfg = prepare("swarm-fixed", {
            "drone_counts": [2], "episodes": 3, "workers": workers, "large_swarm": {"drones": 0},
            "estimators": {"pf-100": {"mode": "pf", "n_particles": 100}},
            "episode": {"max_duration_s": 2.0, "compare_estimators": True, "link": "direct"}})
        ctx = RunContext(5)
        return mod.run(cfg, ctx), ctx.timings

    inline, inline_timing = study(1)
    pooled, pooled_timing = study(2)
    assert inline["episodes"] == 3 and inline["estimator_comparison"] is not None
    assert json.dumps(inline, sort_keys=True) == json.dumps(pooled, sort_keys=True)
    assert inline_timing["runner"]["workers"] == 1 and pooled_timing["runner"]["workers"] == 2
    assert pooled_timing["runner"]["jobs"] == 2 and pooled_timing["runner"]["failed"] == 0
