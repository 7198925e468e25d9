"""`python -m harness grading-sweep`: the ag2u results as our own measurements.

- Table I: fraction of successful decisions (blade > 50 % full of the work area's sand in the leg) per noise
  scenario and agent, over ``--rollouts`` episodes each -> table1.json; with 95 % rollout-bootstrap
  intervals for each cell and for the agent2 - agent1 gap -> table1_ci.json (``cell_stats``)
- Table II: mean episode length (s), or "diverged" when most episodes did not finish
  within the leg budget -> table2.json
- Fig. 5: episode time, uncleared volume and successful decisions (with 95 % rollout intervals) vs heading
  noise (0 -> 50 deg) -> fig5.json, fig5.png
plus results.md with the tables. Seeds: rollout r uses world seed ``seed * 1000 + r``, the
same worlds for both agents. ``--set KEY=VALUE`` changes an episode setting for every cell
(e.g. ``--set motors=vesc``, ``--set estimator=planar``); the noise scenario and heading noise
are the sweep's own axes and cannot be set. ``--agent-backend`` runs the agents' int8 exports
(litert, litert-xnnpack, pure-int8) instead of the float weights. ``--workers N`` runs the cells in
N processes (each cell is seeded on its own, so the numbers do not change).
"""
import copy
import json
import os
import sys

from harness.config import ConfigError, merge, non_negative_int, parse_set, positive_int
from harness.report.run_report import report_folder, write_whole
from harness.scenarios.grading.agents import AGENT_BACKENDS, MODEL_DIR, ModelError, load_decider
from harness.scenarios.grading.cell_stats import success_interval, table1_intervals
from harness.scenarios.grading.episode import (DEFAULTS as EPISODE_DEFAULTS, NOISE_SCENARIOS, ExpertDecider, GradingEpisode,
                                     invalid_setting)
from harness.parallel import ordered_map
from harness.sweep_runner import add_engine_arguments
from harness.progress import Progress
from harness.sim.rng import RunRandom

AGENTS = ("agent1", "agent2")
SWEEP_AXES = ("noise", "heading_sigma_deg")      # set per cell by the sweep, not by --set


def episode_config(overrides=None):
    """The episode settings every cell starts from: EPISODE_DEFAULTS with ``overrides`` merged in
    (unknown keys, wrong types or a choice outside its choices raise ConfigError, as for scenarios)."""
    overrides = overrides or {}
    for key in SWEEP_AXES:
        if key in overrides:
            raise ConfigError("grading-sweep sets %s per cell itself; it cannot be overridden" % key)
    config = merge(EPISODE_DEFAULTS, overrides, "episode") if overrides else copy.deepcopy(EPISODE_DEFAULTS)
    problem = invalid_setting(config)
    if problem:
        raise ConfigError("setting episode." + problem)
    return config


def run_cell(deciders, agent, noise, rollouts, seed, heading_sigma_deg=-1.0, max_legs=None, base_config=None):
    """Aggregate metrics of ``rollouts`` episodes of one agent under one noise setting.

    base_config: episode settings to start from (default: EPISODE_DEFAULTS, see episode_config)."""
    finished = 0
    rollout_successes, rollout_decisions = [], []       # per rollout, for the cell's interval (cell_stats)
    times = []
    uncleared = []
    pos_err, yaw_err = [], []
    for r in range(rollouts):
        cfg = copy.deepcopy(base_config or EPISODE_DEFAULTS)
        cfg["noise"] = noise
        cfg["heading_sigma_deg"] = heading_sigma_deg
        if max_legs:
            cfg["max_legs"] = max_legs
        ep = GradingEpisode(cfg, RunRandom(seed * 1000 + r))
        decider = deciders[agent] if agent != "expert" else ExpertDecider(ep.expert)
        m = ep.run(decider)
        rollout_successes.append(m["successful_decisions"])
        rollout_decisions.append(m["legs"])
        finished += 1 if m["finished"] else 0
        times.append(m["episode_time_s"])
        uncleared.append(m["uncleared_m3"])
        pos_err.append(m["position_error_rms_m"])
        yaw_err.append(m["yaw_error_rms_deg"])
    succ, legs = sum(rollout_successes), sum(rollout_decisions)
    return {"success_fraction": succ / legs if legs else 0.0, "decisions": legs,
            "finished_fraction": finished / rollouts, "mean_episode_time_s": sum(times) / rollouts,
            "mean_uncleared_m3": sum(uncleared) / rollouts,
            "position_error_rms_m": sum(pos_err) / rollouts, "yaw_error_rms_deg": sum(yaw_err) / rollouts,
            "rollout_successes": rollout_successes, "rollout_decisions": rollout_decisions}


def run_cell_job(payload):
    """One sweep cell, ``((agent, noise, rollouts, seed, heading_sigma_deg), base_config, model_dir, backend)``,
    for ``ordered_map`` (loads its own decider: int8 interpreters are not shared across a fork)."""
    (agent, noise, rollouts, seed, level), base, model_dir, backend = payload
    deciders = {agent: load_decider(agent, backend, model_dir)}
    return run_cell(deciders, agent, noise, rollouts, seed, heading_sigma_deg=level, base_config=base)


def sweep(out_dir, rollouts=50, seed=1, heading_levels_deg=(0, 10, 20, 30, 40, 50), fig5_rollouts=None,
          model_dir=None, show_progress=True, episode_overrides=None, agent_backend="numpy", workers=1,
          engine="local", address=None):
    """Run every cell (``workers`` at a time on the sweep runner's ``engine``, ``address`` a Ray cluster's;
    the numbers do not depend on them) and write the report."""
    base = episode_config(episode_overrides)
    model_dir = model_dir or MODEL_DIR
    for agent in AGENTS:
        load_decider(agent, agent_backend, model_dir)      # a missing or corrupt model fails before any episode
    fig5_rollouts = fig5_rollouts or max(1, rollouts // 2)
    total = len(NOISE_SCENARIOS) * len(AGENTS) * rollouts + len(heading_levels_deg) * len(AGENTS) * fig5_rollouts
    bar = Progress(total, "grading sweep", enabled=show_progress, unit="episodes")
    # every cell is seeded on its own, so the cells can run in any process and order
    jobs = [(agent, noise, rollouts, seed, -1.0) for noise in NOISE_SCENARIOS for agent in AGENTS]
    jobs += [(agent, "sensor_fusion", fig5_rollouts, seed + 7, level) for level in heading_levels_deg for agent in AGENTS]
    table = {noise: {} for noise in NOISE_SCENARIOS}
    fig5 = {agent: [] for agent in AGENTS}
    done = 0
    for job, cell in zip(jobs, ordered_map(run_cell_job, [(job, base, model_dir, agent_backend) for job in jobs],
                                           workers, engine=engine, address=address)):
        agent, noise, n, _, level = job
        if level < 0.0:
            table[noise][agent] = cell
        else:
            fig5[agent].append(dict(cell, heading_sigma_deg=level))
        done += n
        bar.update_to(done)
    bar.close()
    table1 = {noise: {a: table[noise][a]["success_fraction"] for a in AGENTS} for noise in table}
    table1_ci = table1_intervals(table, AGENTS)
    table2 = {noise: {a: (table[noise][a]["mean_episode_time_s"] if table[noise][a]["finished_fraction"] >= 0.5
                          else "diverged") for a in AGENTS} for noise in table}
    os.makedirs(out_dir, exist_ok=True)
    _write(out_dir, "table1.json", table1)
    _write(out_dir, "table1_ci.json", table1_ci)
    _write(out_dir, "table2.json", table2)
    _write(out_dir, "cells.json", {"rollouts": rollouts, "seed": seed, "episode_overrides": episode_overrides or {},
                                     "agent_backend": agent_backend,
                                     "cells": table})
    _write(out_dir, "fig5.json", fig5)
    _markdown(out_dir, table1_ci, table2, rollouts)
    _plot_fig5(out_dir, fig5)
    return table1, table2, fig5


def _write(out_dir, name, data):
    """One JSON file of the report, whole or not at all (an interrupt leaves no half of one)."""
    write_whole(os.path.join(out_dir, name), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _markdown(out_dir, table1_ci, table2, rollouts):
    level = 100 * table1_ci["level"]
    lines = ["# Grading under uncertainty: our measurements (%d rollouts per cell)" % rollouts, "",
             "Table I - successful decisions (blade > 50 % full of the work area's sand); in brackets the "
             + "%.0f %% interval over the rollouts (%s; it does not cover retraining)" % (level, table1_ci["method"]), "",
             "| scenario | agent1 | agent2 | agent2 - agent1 |", "|---|---|---|---|"]

    def pct(entry):
        return "%.1f %% (%.1f-%.1f)" % tuple(100 * v for v in [entry["success_fraction"]] + entry["ci"])

    for noise, row in table1_ci["scenarios"].items():
        gap = row["gap_agent2_minus_agent1"]
        lines.append("| %s | %s | %s | %+.1f pp (%+.1f to %+.1f) |" % (
            noise, pct(row["agent1"]), pct(row["agent2"]), *(100 * v for v in [gap["value"]] + gap["ci"])))
    lines += ["", "Table II - episode length [s]", "", "| scenario | agent1 | agent2 |", "|---|---|---|"]
    for noise, row in table2.items():
        cells = [("%.0f" % v) if isinstance(v, float) else v for v in (row["agent1"], row["agent2"])]
        lines.append("| %s | %s | %s |" % (noise, cells[0], cells[1]))
    write_whole(os.path.join(out_dir, "results.md"), "\n".join(lines) + "\n")


def _plot_fig5(out_dir, fig5):
    import matplotlib.pyplot as plt

    fig = fig5_figure(fig5)
    fig.savefig(os.path.join(out_dir, "fig5.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


def fig5_figure(fig5):
    """The figure of fig5.png: episode time, uncleared volume and successful decisions (95 % rollout intervals)
    against the heading noise, one line per agent, each panel titled and labelled with its unit."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for agent, style, nudge_deg in zip(AGENTS, ("C3o-", "C0s-"), (-0.6, 0.6)):
        xs = [c["heading_sigma_deg"] for c in fig5[agent]]
        axes[0].plot(xs, [c["mean_episode_time_s"] for c in fig5[agent]], style, label=agent)
        axes[1].plot(xs, [1e3 * c["mean_uncleared_m3"] for c in fig5[agent]], style, label=agent)
        fractions = [success_interval(c["rollout_successes"], c["rollout_decisions"]) for c in fig5[agent]]
        values = [100 * f for f, _ in fractions]
        errors = [[v - 100 * ci[0] for v, (_, ci) in zip(values, fractions)],
                  [100 * ci[1] - v for v, (_, ci) in zip(values, fractions)]]
        axes[2].errorbar([x + nudge_deg for x in xs], values, yerr=errors, fmt=style, capsize=3, label=agent)
    axes[0].set_ylabel("episode time [s]")
    axes[1].set_ylabel("uncleared volume [litre]")
    axes[2].set_ylabel("successful decisions [%] (95 % over rollouts)")
    for a, title in zip(axes, ("mean episode time", "mean uncleared volume at the end",
                               "successful decisions (blade > 50 % full)")):
        a.set_title(title)
        a.set_xlabel("heading noise sigma [deg]")
        a.grid(True, alpha=0.3)
        a.legend()
    fig.suptitle("fig. 5 (ag2u): performance vs attitude noise")
    return fig


def add_parser(sub):
    p = sub.add_parser("grading-sweep", help="reproduce ag2u Table I/II and fig. 5 with the committed agents",
                       description=__doc__)
    p.add_argument("--rollouts", type=positive_int, default=50, help="episodes per scenario and agent (paper: 50)")
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--out", default="reports/grading-sweep")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="episode setting for every cell, e.g. --set motors=vesc (repeatable)")
    p.add_argument("--agent-backend", choices=AGENT_BACKENDS, default="numpy",
                   help="numpy: float weights; litert / litert-xnnpack / pure-int8: the int8 exports")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="processes running the cells (each cell is seeded on its own: same numbers)")
    p.add_argument("--model-dir", default=None,
                   help="agents to sweep: <dir>/agent1, <dir>/agent2 (default: the committed models/grading)")
    p.add_argument("--quiet", action="store_true")
    add_engine_arguments(p)
    p.set_defaults(func=_cmd)


def _cmd(args):
    try:
        overrides = parse_set(args.set)
        episode_config(overrides)                   # bad settings and models refused before the report folder
        for agent in AGENTS:
            load_decider(agent, args.agent_backend, args.model_dir or MODEL_DIR)
        report_folder(args.out)                     # before the hours of rollouts, not after
        table1, table2, _ = sweep(args.out, args.rollouts, args.seed, show_progress=not args.quiet,
                                  episode_overrides=overrides, agent_backend=args.agent_backend,
                                  workers=args.workers, model_dir=args.model_dir, engine=args.engine,
                                  address=args.address)
    except (ModelError, ConfigError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    print(json.dumps({"table1": table1, "table2": table2}, indent=2))
    print("report: %s (table1.json, table1_ci.json, table2.json, fig5.json, fig5.png, results.md)" % args.out)
    return 0
