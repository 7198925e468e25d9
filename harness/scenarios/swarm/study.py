"""Shared body of the scenarios ``swarm-fixed`` and ``swarm-random`` (uwb-pocket-drones VI).

Runs ``episodes`` seeded flights for each drone count in ``drone_counts`` (and of the larger swarm,
``large_swarm``), each drone with its own onboard SwarmAgent (learned estimator + particle filters +
DQN); with ``episode.compare_estimators`` it replays every flight offline through each estimator
configuration of ``estimators`` (pocket VI-A, figs. 5-6; the study, ``STUDY_CONFIG``). Metrics: goals_reached, goals_total,
min_separation_m (null without a pair: one drone), mean_position_error_m and
mean_orientation_error_deg (per track after it converged, see episode.track_summary; the
``*_from_3s`` figures average every track from 3 s on), success rate, per-count details,
estimator convergence per configuration, and ``success`` (every flight successful: the CLI exits 3
otherwise).
Plots: trajectories; with the replays, the estimation error over time per configuration (first flight
of each count) and the average run of every configuration over all replayed flights (pocket fig. 6).
Progress bars count each flight's (and replay's) simulated seconds.

The run's log (``log.mcap``) holds the first flight: one member (drone ``record_member``, default 0)
recorded at its boundary (its ranges, velocities, goal ranges, decisions and velocity commands under
``/app/``: ``python -m harness replay log.mcap`` re-runs it bit for bit, ``python -m harness
conformance log.mcap`` on every particle-filter implementation), and every drone's true pose and goal
per period (``/swarm/truth``; Foxglove markers on ``/viz/swarm``). Wall-clock figures (the run's,
each world's set-up and close) go to run.json's ``timing``.
"""
import math
import os
import time

import numpy as np

from harness.config import NON_NEGATIVE, POSITIVE, ConfigError, check_ranges, int_at_least, one_of, under
from harness.report.plots import figure, label
from harness.scenarios.swarm import flight as ep
from harness.sim.rng import RunRandom
from harness.sweep_runner import ENGINES
from onboard.estimators.particle_filter import SETTING_RANGES as PF_RANGES
from onboard.swarm.agent import SETTING_RANGES as AGENT_RANGES, checked_config as agent_checked_config

# every replayed configuration runs the flights' filter settings (adaptive resampling, lost-filter restarts,
# the goal filter's noise), so the configurations differ only in what is compared
FLIGHT_FILTER = {"pf_config": ep.DEFAULTS["pf_config"], "goal_pf_config": ep.DEFAULTS["goal_pf_config"]}
FIXED_REFRESH = dict(ep.DEFAULTS["pf_config"], refresh_mode="fixed")     # the paper's 10 % at every resampling

# The defaults fly one flight per drone count over cflib + UWB (within a minute on 2 cores); the study of the
# paper adds the 8-drone swarm and the offline estimator replays: `--config harness/scenarios/swarm/study.toml`
# (STUDY_CONFIG; ~3 min for swarm-fixed, ~10 min for swarm-random), with `--set episodes=10` its 30 flights.
DEFAULTS = {
    "drone_counts": [2, 3, 4],
    "episodes": 1,                   # flights per drone count
    "min_separation_ok_m": 0.15,
    # the member of the first flight recorded at its boundary into the run's log.mcap (-1: none)
    "record_member": 0,
    # the flights after the first run as jobs of the sweep runner: workers at a time on engine "local" (this
    # machine's processes) or "ray" (a local Ray runtime, or the cluster at $RAY_ADDRESS); same metrics either way
    "workers": 1,
    "engine": "local",
    # the flights' settings; compare_estimators: replay each flight offline through `estimators` (the study)
    "episode": dict({k: v for k, v in ep.DEFAULTS.items() if k not in ("goals", "drones")}, link="cflib",
                    compare_estimators=False),
    # the larger swarm on the scalable (broadcast) ranging mode; drones = 0 skips it (the study: 8)
    "large_swarm": {"drones": 0, "episodes": 1, "uwb_mode": "broadcast", "arena_m": 6.0, "max_duration_s": 60.0},
    # offline replay of every flight's sensor records through these estimator configurations
    # (pocket VI-A, figs. 5-6): the paper's hybrid and pure PF at its particle count, and at 1000
    "estimators": {
        # hybrid: the filter starts at the first range like the pure one and is refreshed around the learned
        # estimate once it has 3 s of history; -paper: started around the learned estimate after 1 s (IV-B).
        # At 100 particles both refresh 10 % at every resampling (pocket IV-B): such a small filter loses
        # tracks, and the steady refresh brings them back; at 1000 particles the hybrid uses the flights'
        # gate (measurements behind these choices: docs/experiments/swarm.md)
        "hybrid-100": dict(FLIGHT_FILTER, mode="hybrid", n_particles=100, pf_init="ring-first", warmup_steps=30,
                           pf_config=FIXED_REFRESH),
        "hybrid-100-paper": dict(FLIGHT_FILTER, mode="hybrid", n_particles=100, learned_refresh="mean",
                                 pf_config=FIXED_REFRESH),
        "pf-100": dict(FLIGHT_FILTER, mode="pf", n_particles=100),
        "hybrid-1000": dict(FLIGHT_FILTER, mode="hybrid", n_particles=1000, pf_init="ring-first", min_confidence=0.9),
        "pf-1000": dict(FLIGHT_FILTER, mode="pf", n_particles=1000),
        # the paper's filter resamples at every range (pocket IV-B); adaptive resampling is our change
        "pf-1000-every-step": dict(FLIGHT_FILTER, mode="pf", n_particles=1000,
                                   pf_config=dict(ep.DEFAULTS["pf_config"], resample_neff_fraction=1.0)),
        "learned": {"mode": "learned"},
    },
}


# value ranges (harness.config rules): the scenario's own settings, the flights' (episode: the flight
# settings, the agent's under their episode names, the particle filters'); check_config adds what relates
# settings (the flights as flown, each replayed estimator configuration)
SETTING_RANGES = dict(
    # distinct: the results are keyed by drone count (a repeat flew the same flights again, counted twice)
    {"drone_counts": ("a list of integers >= 1, each at most once", lambda v: isinstance(v, list) and all(
        isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in v) and len(set(v)) == len(v)),
     "episodes": int_at_least(1), "min_separation_ok_m": NON_NEGATIVE, "record_member": int_at_least(-1),
     "workers": int_at_least(1), "engine": one_of(*ENGINES),
     "large_swarm.drones": int_at_least(0), "large_swarm.episodes": int_at_least(1),
     "large_swarm.uwb_mode": one_of(*ep.UWB_MODES), "large_swarm.arena_m": POSITIVE,
     "large_swarm.max_duration_s": POSITIVE, "episode.n_particles": PF_RANGES["n_particles"]},
    **under("episode", ep.SETTING_RANGES, DEFAULTS["episode"]))
# the agent's settings the episode has (its particle-filter tables are checked setting by setting, below)
SETTING_RANGES.update(under("episode", {k: rule for k, rule in AGENT_RANGES.items()
                                        if k not in ("pf_config", "goal_pf_config")}, DEFAULTS["episode"]))
SETTING_RANGES.update(under("episode.pf_config", PF_RANGES))
SETTING_RANGES.update(under("episode.goal_pf_config", PF_RANGES))


def check_config(config, goals="fixed"):
    """ConfigError naming the first setting outside its choices or range, before anything flies: the
    scenario's own settings, every flight's (episode, and the large swarm's on top of it) and every
    replayed estimator configuration's."""
    check_ranges(config, SETTING_RANGES)
    ls = config["large_swarm"]
    if not config["drone_counts"] and not ls["drones"]:
        raise ConfigError("nothing to fly: config.drone_counts is empty and config.large_swarm.drones is 0")
    counts = config["drone_counts"] + ([ls["drones"]] if ls["drones"] else [])
    if config["episode"]["link"] == "direct" and min(counts) < 2:
        raise ConfigError("setting config.drone_counts, config.large_swarm.drones: the direct world "
                          "(harness.sim.swarm_arena) flies 2 drones or more, got %d (episode.link=\"cflib\" "
                          "flies one)" % min(counts))
    flights = [("episode", _flight_config(config, goals, drones=max(config["drone_counts"] or [2])))]
    if ls["drones"]:
        flights.append(("large_swarm", _flight_config(config, goals, drones=ls["drones"], uwb_mode=ls["uwb_mode"],
                                                      arena_m=ls["arena_m"], max_duration_s=ls["max_duration_s"])))
    for where, cfg in flights:
        try:
            ep.check_config(cfg)
        except ValueError as exc:
            text = str(exc)
            if text.startswith("drones:"):      # the flights' drone count is the study's, not an episode setting
                raise ConfigError("setting config.%s%s" % ("large_swarm.drones" if where == "large_swarm"
                                                           else "drone_counts", text[len("drones"):]))
            raise ConfigError("setting config.episode.%s%s" % (text, " (the large swarm's flights)"
                                                                 if where == "large_swarm" else ""))
    first_drones = config["drone_counts"][0] if config["drone_counts"] else ls["drones"]
    if config["record_member"] >= first_drones:
        raise ConfigError("setting config.record_member: the first flight has %d drones (0..%d), got %d"
                          % (first_drones, first_drones - 1, config["record_member"]))
    n_particles = config["episode"]["n_particles"]
    for name, settings in config["estimators"].items():
        try:
            if not isinstance(settings, dict):
                raise ValueError("must be a table of SwarmAgent settings")
            agent_checked_config(dict({"n_particles": n_particles, "warmup_steps": ep.REPLAY_WARMUP_STEPS},
                                      **settings))
        except (ValueError, TypeError) as exc:
            raise ConfigError("setting config.estimators.%s: %s" % (name, exc))


STUDY_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "study.toml")

# a run of a few seconds (`run --reduced`): one 2-drone flight of 4 s over cflib + UWB, no replays
REDUCED = {"drone_counts": [2], "large_swarm": {"drones": 0},
           "episode": {"max_duration_s": 4.0, "compare_estimators": False}}

WORLD_TIMING_KEYS = ("setup_wall_s", "close_wall_s")      # wall-clock figures of a world's report (run.json)
TRUTH_TOPIC = "/swarm/truth"
VIZ_TOPIC = "/viz/swarm"


def _truth_logger(ctx, m):
    """on_step of the first flight: every drone's true pose and goal into the run's log (None without one)."""
    mcap = ctx.mcap
    if mcap is None:
        return None
    from onboard.runtime.mcap_log import scene_entity, sphere
    mcap.log_frames("/viz/tf_static", 0)
    height_m = -0.5                              # drawn at flight height (up is -z in ned)

    def log(now_us, t_s, pos, yaw, goal):
        mcap.log(TRUTH_TOPIC, now_us, {"time_us": now_us, "mission_s": t_s, "north_m": pos[:, 0].tolist(),
                                       "east_m": pos[:, 1].tolist(), "yaw_rad": yaw.tolist(),
                                       "goal_north_m": goal[:, 0].tolist(), "goal_east_m": goal[:, 1].tolist()})
        entities = []
        for i in range(m):
            rgba = _DRONE_RGBA[i % len(_DRONE_RGBA)]
            entities.append(scene_entity(now_us, "drone%d" % i, spheres=[
                sphere((pos[i, 0], pos[i, 1], height_m), 0.1, rgba),
                sphere((goal[i, 0], goal[i, 1], height_m), 0.06, rgba[:3] + (0.4,))]))
        mcap.log_scene(VIZ_TOPIC, now_us, entities)
    return log


_DRONE_RGBA = ((0.12, 0.47, 0.71, 1.0), (1.0, 0.5, 0.05, 1.0), (0.17, 0.63, 0.17, 1.0), (0.84, 0.15, 0.16, 1.0),
               (0.58, 0.4, 0.74, 1.0), (0.55, 0.34, 0.29, 1.0), (0.89, 0.47, 0.76, 1.0), (0.5, 0.5, 0.5, 1.0))


def _flight_progress(ctx, desc, total_s, log=None):
    """(progress bar, on_step) of one flight: the bar counts its simulated seconds; on_step also logs."""
    bar = ctx.progress(total_s, desc)

    def on_step(now_us, t_s, pos, yaw, goal):
        bar.update_to(t_s)
        if log is not None:
            log(now_us, t_s, pos, yaw, goal)
    return bar, on_step


_MODELS = {}


def _models(policy, estimator):
    """``ep.load_models(policy, estimator)`` once per process (int8 interpreters are not shared across a fork)."""
    key = (os.getpid(), policy, estimator)
    if key not in _MODELS:
        _MODELS[key] = ep.load_models(policy, estimator)
    return _MODELS[key]


def fly(cfg, run_seed, tag, seed, estimators=None, keep_record=False):
    """One flight of the study as a job of the sweep runner (``harness.sweep_runner``): flies ``cfg`` with the
    run's random streams ``swarm.truth.<tag>`` and ``swarm.agents.<tag>`` (``RunRandom(run_seed)``, so the flight
    depends on nothing but its arguments, whatever process runs it) and, with ``estimators``, replays its records
    through those estimator configurations. Returns (metrics, records or None, replay comparison or None)."""
    models = _models(cfg["policy"], cfg["estimator"])
    random = RunRandom(run_seed)
    met, rec = ep.run_episode(cfg, random.stream("swarm.truth." + tag), random.stream("swarm.agents." + tag), models,
                              seed=seed)
    comparison = None
    if estimators:
        comparison = ep.replay_estimators(rec, models, estimators, cfg["n_particles"], seed=run_seed, impl=cfg["impl"])
    return met, (rec if keep_record else None), comparison


def _flights(goals, config):
    """Every flight of the study in order: (group, episode, flight settings, stream tag, flight seed); group is
    the drone count or "large" (the larger swarm)."""
    out = []
    for m in config["drone_counts"]:
        for e in range(config["episodes"]):
            out.append((m, e, _flight_config(config, goals, drones=m), "%d.%d" % (m, e), m * 100 + e))
    ls = config["large_swarm"]
    if ls["drones"]:
        for e in range(ls["episodes"]):
            cfg = _flight_config(config, goals, drones=ls["drones"], uwb_mode=ls["uwb_mode"], arena_m=ls["arena_m"],
                                 max_duration_s=ls["max_duration_s"])
            out.append(("large", e, cfg, "large.%d" % e, 900 + e))
    return out


def _fly_first(ctx, config, flight, n_flights, record):
    """The first flight, in this process: its progress in simulated seconds, its truth on the run's log, its
    recorded member (``record``), its replays with their own progress bar."""
    group, _e, cfg, tag, seed = flight
    drones = cfg["drones"]
    models = _models(cfg["policy"], cfg["estimator"])
    bar, on_step = _flight_progress(ctx, "flight 1/%d: %d drones" % (n_flights, drones), cfg["max_duration_s"],
                                    _truth_logger(ctx, drones))
    met, rec = ep.run_episode(cfg, ctx.random.stream("swarm.truth." + tag), ctx.random.stream("swarm.agents." + tag),
                              models, seed=ctx.seed * 1000 + seed, record=record, on_step=on_step)
    bar.close()
    comparison = None
    if cfg["compare_estimators"] and group != "large":
        bar = ctx.progress(met["sim_time_s"] * len(config["estimators"]),
                           "replay 1/%d: %d estimator configurations" % (n_flights, len(config["estimators"])))
        comparison = ep.replay_estimators(rec, models, config["estimators"], cfg["n_particles"], seed=ctx.seed,
                                          impl=cfg["impl"], on_progress=bar.update_to)
        bar.close()
    return met, rec, comparison


def _fly_all(ctx, config, flights, record, timing):
    """[(metrics, records, comparison)] of every flight in order: the first in this process (_fly_first), the
    others as jobs of the sweep runner on ``config["engine"]`` with ``config["workers"]`` at a time (the
    metrics do not depend on either: tested); records are kept for each group's first flight (the plots).
    The runner's wall-clock figures (per-flight wall time, the engine's overhead) go to ``timing["runner"]``."""
    from harness.sweep_runner import Job, Runner, describe_failure
    results = [_fly_first(ctx, config, flights[0], len(flights), record)]
    want_plots = getattr(ctx, "report", None) is not None
    jobs = [Job(fly, (cfg, ctx.seed, tag, ctx.seed * 1000 + seed,
                      config["estimators"] if cfg["compare_estimators"] and group != "large" else None,
                      want_plots and e == 0),
                info={"seed": ctx.seed, "drones": cfg["drones"], "episode": e}, key=tag)
            for group, e, cfg, tag, seed in flights[1:]]
    if jobs:
        with Runner(config["engine"], config["workers"]) as runner:
            done = runner.run(jobs, show_progress=ctx.show_progress,
                              desc="flights 2-%d on %d %s worker(s)" % (len(flights), config["workers"],
                                                                         config["engine"]))
        if done.failures:
            raise RuntimeError("flight failed: " + describe_failure(done.failures[0]) + "\n"
                               + (done.failures[0]["traceback"] or ""))
        timing["runner"] = {k: v for k, v in done.timing.items() if k != "per_job"}
        results.extend(done.results)
    return results


def run(goals, config, ctx):
    t0 = time.perf_counter()
    per_count = {}
    totals = {"goals_reached": 0, "goals_total": 0, "min_separation_m": math.inf, "episodes": 0, "successes": 0,
              "tracks": 0, "tracks_converged": 0}
    pos_errs, yaw_errs = [], []
    comparisons = {}
    first_recs = {}
    world_reports = []
    sim_s = 0.0
    world_timing = []
    # the first flight's member record_member, recorded into the run's log (a report folder only)
    record = None
    if config["record_member"] >= 0 and getattr(ctx, "report", None) is not None:
        from onboard.runtime.mcap_log import code_version
        record = (ctx.log, code_version(), config["record_member"])
    flights = _flights(goals, config)
    rows_of = {}
    runner_timing = {}
    for (group, e, cfg, _tag, _seed), (met, rec, comparison) in zip(flights, _fly_all(ctx, config, flights, record,
                                                                                     runner_timing)):
        rows_of.setdefault(group, []).append(met)
        sim_s += met["sim_time_s"]
        world_timing.append({k: met["world"].pop(k) for k in WORLD_TIMING_KEYS if k in met["world"]})
        if e == 0 and rec is not None:
            first_recs[group] = rec
        if group == "large":
            continue
        world_reports.append(dict(met["world"], drones=group, episode=e, ranges_used=met["ranges_used"]))
        if comparison is not None:
            comparisons.setdefault(group, []).append(comparison)
        ok = met["goals_reached"] == met["goals_total"] and met["min_separation_m"] >= config["min_separation_ok_m"]
        totals["successes"] += int(ok)
        totals["episodes"] += 1
        totals["goals_reached"] += met["goals_reached"]
        totals["goals_total"] += met["goals_total"]
        totals["tracks"] += met["tracks"]["tracks"]
        totals["tracks_converged"] += met["tracks"]["converged"]
        totals["min_separation_m"] = min(totals["min_separation_m"], met["min_separation_m"])
        if met["mean_position_error_m"] is not None:
            pos_errs.append(met["mean_position_error_m"])
        if met["mean_orientation_error_deg"] is not None:
            yaw_errs.append(met["mean_orientation_error_deg"])
    for m in config["drone_counts"]:
        rows = rows_of[m]
        per_count[str(m)] = {
            "episodes": len(rows),
            "goals_reached": sum(r["goals_reached"] for r in rows),
            "goals_total": sum(r["goals_total"] for r in rows),
            "min_separation_m": _least_separation(r["min_separation_m"] for r in rows),
            "mean_position_error_m": _mean([r["mean_position_error_m"] for r in rows]),
            "mean_orientation_error_deg": _mean([r["mean_orientation_error_deg"] for r in rows]),
            "mean_time_to_complete_s": _mean([r["time_to_complete_s"] for r in rows]),
        }
    large = None
    ls = config["large_swarm"]
    if ls["drones"]:
        rows = rows_of["large"]
        ok = [r["goals_reached"] == r["goals_total"] and r["min_separation_m"] >= config["min_separation_ok_m"]
              for r in rows]
        large = {
            "drones": ls["drones"], "uwb_mode": ls["uwb_mode"] if config["episode"]["link"] == "cflib" else None,
            "arena_m": ls["arena_m"], "episodes": len(rows), "success_rate": sum(ok) / len(rows),
            "goals_reached": sum(r["goals_reached"] for r in rows), "goals_total": sum(r["goals_total"] for r in rows),
            "min_separation_m": _least_separation(r["min_separation_m"] for r in rows),
            "mean_position_error_m": _mean([r["mean_position_error_m"] for r in rows]),
            "mean_orientation_error_deg": _mean([r["mean_orientation_error_deg"] for r in rows]),
            "mean_time_to_complete_s": _mean([r["time_to_complete_s"] for r in rows]),
        }
    estimator = _compare(comparisons, config)
    wall = time.perf_counter() - t0
    ctx.timing(wall_time_s=wall, sim_seconds_per_wall_second=sim_s / wall if wall > 0 else None,
               worlds=world_timing, **runner_timing)
    metrics = {
        "goals_reached": totals["goals_reached"],
        "goals_total": totals["goals_total"],
        "min_separation_m": _least_separation([totals["min_separation_m"]]),
        "mean_position_error_m": _mean(pos_errs),
        "mean_orientation_error_deg": _mean(yaw_errs),
        "estimation_tracks": totals["tracks"],
        "estimation_tracks_converged": totals["tracks_converged"],
        "episodes": totals["episodes"],
        "success_rate": totals["successes"] / totals["episodes"] if totals["episodes"] else None,
        # the mission (CLI exit 0, else 3): every flight, the larger swarm's too, reached all its goals with
        # no pair closer than min_separation_ok_m
        "success": totals["successes"] == totals["episodes"] and (large is None or large["success_rate"] == 1.0),
        "min_separation_ok_m": config["min_separation_ok_m"],
        "per_drone_count": per_count,
        "estimator_comparison": estimator,
        "sim_time_s": sim_s,
        "large_swarm": large,
        "link": config["episode"]["link"],
        "uwb_mode": config["episode"]["uwb_mode"] if config["episode"]["link"] == "cflib" else None,
        "world_reports": world_reports,
        "n_particles": config["episode"]["n_particles"],
    }
    if ctx.report is not None:
        _plots(ctx.report, goals, first_recs, {m: flights[0] for m, flights in comparisons.items()}, estimator)
    return metrics


def _least_separation(values):
    """The least of flights' least pair distances (m); None where no flight had a pair (one drone: its
    distance to no other drone is inf, which JSON cannot hold)."""
    least = min(values, default=math.inf)
    return least if math.isfinite(least) else None


def _flight_config(config, goals, **over):
    """One flight's settings. Random goals come in a sequence of goals_per_drone per drone, so the flight
    gets max_duration_s per goal in the sequence (60 s for three goals timed out 4-drone flights that
    finished in 65-85 s with more time)."""
    cfg = dict(config["episode"], goals=goals, **over)
    if goals == "random":
        cfg["max_duration_s"] = cfg["max_duration_s"] * cfg["goals_per_drone"]
    return cfg


def _compare(comparisons, config):
    """Per configuration over all replayed flights, per track (one drone's estimate of one neighbour or
    goal): errors after that track converged (error below convergence_threshold_m for
    convergence_hold_s), tracks that never converged, median time to converge; the mean from
    converged_after_s on over every track as well; and hybrid vs pure PF at equal particle count."""
    ecfg = config["episode"]
    conv_after = ecfg["converged_after_s"]
    rows = {}
    for m, flights in sorted(comparisons.items()):
        for comp in flights:
            for label, series in comp.items():
                r = rows.setdefault(label, {"tracks": {}, "from_3s": [], "flights": 0, "by_drones": {}})
                for name, ser in series["tracks"].items():
                    r["tracks"]["%d/%d/%s" % (m, r["flights"], name)] = ser
                late = [e for t, e in zip(series["t_s"], series["err_m"]) if t >= conv_after and e == e]
                r["from_3s"].append(_mean(late))
                r["by_drones"].setdefault(str(m), []).append(
                    ep.track_summary(series["tracks"], ecfg["convergence_threshold_m"],
                                     ecfg["convergence_hold_s"])["mean_position_error_m"])
                r["flights"] += 1
    out = {}
    for label, r in rows.items():
        summ = ep.track_summary(r["tracks"], ecfg["convergence_threshold_m"], ecfg["convergence_hold_s"])
        curve = average_run_error(r["tracks"])
        out[label] = {
            "flights": r["flights"],
            "mean_position_error_m": summ["mean_position_error_m"],
            "mean_orientation_error_deg": summ["mean_orientation_error_deg"],
            "tracks": summ["tracks"],
            "converged_tracks": summ["converged"],
            "never_converged_tracks": len(summ["never_converged"]),
            "median_convergence_time_s": summ["median_convergence_s"],
            "mean_convergence_time_s": summ["mean_convergence_s"],
            "median_convergence_time_all_tracks_s": summ["median_convergence_all_tracks_s"],
            "converged_fraction_within_s": summ["converged_fraction_within_s"],
            "mean_position_error_m_from_3s": _mean(r["from_3s"]),
            "mean_position_error_m_by_drones": {k: _mean(v) for k, v in r["by_drones"].items()},
            # pocket fig. 6 ("an average run"): mean error over the tracks alive at each time since their
            # first estimate, and when that average falls below the convergence threshold to stay there
            # for convergence_hold_s
            "average_run_error_m": curve,
            "average_run_converged_s": _curve_converged_s(curve, ecfg["convergence_threshold_m"],
                                                          ecfg["convergence_hold_s"]),
        }
    for n in (100, 1000):
        h, p = out.get("hybrid-%d" % n), out.get("pf-%d" % n)
        if h and p:
            out["hybrid_vs_pf_%d" % n] = {
                "hybrid_converges_more_tracks": h["converged_tracks"] > p["converged_tracks"],
                "hybrid_lower_error": (h["mean_position_error_m"] or 1e9) < (p["mean_position_error_m"] or 1e9),
                # median time to converge over every track, a never-converged track counted as infinitely
                # slow: both configurations judged on the same tracks
                "hybrid_median_convergence_faster": _faster(h["median_convergence_time_all_tracks_s"],
                                                            p["median_convergence_time_all_tracks_s"]),
                # pocket fig. 6: the average run's error falls below the threshold (for good) earlier
                "hybrid_average_run_converges_faster": _faster(h["average_run_converged_s"],
                                                               p["average_run_converged_s"]),
                # ... over each configuration's converged tracks only: survivor-biased (a filter that loses
                # the hard tracks keeps a short median over the easy ones); kept for comparison
                "hybrid_median_convergence_faster_converged_only": _faster(h["median_convergence_time_s"],
                                                                           p["median_convergence_time_s"]),
                # over every track (never converged = infinitely slow): the share converged by each time
                # (None without any track: flights too short for a first estimate, ahead nowhere)
                "hybrid_converged_share_ahead_s": [
                    lim for lim, share in h["converged_fraction_within_s"].items()
                    if share is not None and p["converged_fraction_within_s"][lim] is not None
                    and share > p["converged_fraction_within_s"][lim]],
            }
    return out


AVERAGE_RUN_BIN_S = 0.5
AVERAGE_RUN_SPAN_S = 20.0


def average_run_error(tracks, bin_s=AVERAGE_RUN_BIN_S, span_s=AVERAGE_RUN_SPAN_S):
    """Pocket fig. 6 as a curve: {"t_s": bin starts, "error_m": mean over tracks of each track's mean position
    error in [t, t + bin_s) after its first estimate, "tracks": how many tracks each bin averages}.
    tracks: {name: [(t_s, position_error_m, ...), ...]} as episode.track_summary takes them."""
    n_bins = int(round(span_s / bin_s))
    sums = [0.0] * n_bins
    counts = [0] * n_bins
    for ser in tracks.values():
        if not ser:
            continue
        t0 = ser[0][0]
        acc = {}
        for row in ser:
            k = int((row[0] - t0) / bin_s + 1e-9)
            if k < n_bins and row[1] == row[1]:
                acc.setdefault(k, []).append(row[1])
        for k, errs in acc.items():
            sums[k] += sum(errs) / len(errs)
            counts[k] += 1
    return {"t_s": [k * bin_s for k in range(n_bins)],
            "error_m": [sums[k] / counts[k] if counts[k] else None for k in range(n_bins)],
            "tracks": counts}


def _curve_converged_s(curve, threshold_m, hold_s):
    """First bin start from which the average-run error stays below threshold_m for hold_s (None: never)."""
    t = curve["t_s"]
    bin_s = t[1] - t[0] if len(t) > 1 else AVERAGE_RUN_BIN_S
    errs = [math.nan if v is None else v for v in curve["error_m"]]          # an empty bin breaks the stretch
    return ep.convergence_time_s(t, errs, threshold_m, hold_steps=max(1, int(round(hold_s / bin_s))))


def _faster(t_hybrid_s, t_pf_s):
    """Whether the hybrid's convergence time (a median, or the average run's) beats the pure filter's (None: never)."""
    return t_hybrid_s is not None and (t_pf_s is None or t_hybrid_s < t_pf_s)


def _mean(values):
    v = [x for x in values if x is not None and x == x]
    return float(np.mean(v)) if v else None


def _plots(report, goals, recs, comparisons, estimator=None):
    from matplotlib.lines import Line2D
    # a flight shorter than half a control period records no step: nothing to draw
    recs = {key: rec for key, rec in recs.items() if len(rec["pos"])}
    n = len(recs)
    if n:
        fig, axes = figure(1, n, title="swarm-%s: the first flight of each drone count (truth)" % goals,
                           size_in=(4.8 * n, 5.2), squeeze=False)
        for ax, (key, rec) in zip(axes[0], sorted(recs.items(), key=lambda kv: str(kv[0]))):
            pos = np.array(rec["pos"])
            gl = np.array(rec["goal"])
            m = pos.shape[1]
            for i in range(m):
                ax.plot(pos[:, i, 1], pos[:, i, 0], "C%d" % i, lw=1.5, label="drone %d" % i)
                ax.plot(pos[0, i, 1], pos[0, i, 0], "o", color="C%d" % i)
                ug = np.unique(gl[:, i], axis=0)
                ax.plot(ug[:, 1], ug[:, 0], "*", color="C%d" % i, ms=12)
            ax.set_aspect("equal", adjustable="datalim")
            label(ax, "%d drones%s" % (m, " (scalable ranging)" if key == "large" else ""), "east (m)", "north (m)",
                  legend=False)
            handles, _labels = ax.get_legend_handles_labels()
            handles += [Line2D([], [], ls="", marker="o", color="k", label="start"),
                        Line2D([], [], ls="", marker="*", ms=10, color="k", label="goal")]
            ax.legend(handles=handles, fontsize=7)
        report.save_figure(fig, "trajectories")
    if comparisons:
        fig, axes = figure(2, len(comparisons), title="swarm-%s: estimation error of the replayed estimator "
                           "configurations (first flight; mean over all tracks)" % goals,
                           size_in=(5.5 * len(comparisons), 7), squeeze=False, sharex="col")
        for col, (m, comp) in enumerate(sorted(comparisons.items())):
            for k, (mode, ser) in enumerate(comp.items()):
                style = ("-", "--", "-.", ":")[k % 4]          # configurations that agree stay visible
                axes[0][col].plot(ser["t_s"], ser["err_m"], "C%d" % (k % 10), ls=style, lw=1, label=mode)
                axes[1][col].plot(ser["t_s"], ser["err_yaw_deg"], "C%d" % (k % 10), ls=style, lw=1, label=mode)
            label(axes[0][col], "%d drones: position" % m, "", "position error (m)")
            label(axes[1][col], "%d drones: orientation (neighbours)" % m, "mission time (s)",
                  "orientation error (deg)")
        report.save_figure(fig, "estimation_error")
    if estimator:
        fig, ax = figure(size_in=(7.5, 4.8))
        k = 0
        for name, row in sorted(estimator.items()):
            if not isinstance(row, dict) or "average_run_error_m" not in row:
                continue
            c = row["average_run_error_m"]
            pts = [(t, e) for t, e in zip(c["t_s"], c["error_m"]) if e is not None]
            ax.plot([t + AVERAGE_RUN_BIN_S / 2 for t, _ in pts], [e for _, e in pts], "C%d" % (k % 10), label=name,
                    ls=("-", "--", "-.", ":")[k % 4])
            k += 1
        label(ax, "swarm-%s: average run (pocket fig. 6), all tracks of all replayed flights" % goals,
              "time since the track's first estimate (s)", "mean position error (m)")
        report.save_figure(fig, "average_run_error")
