"""Scenario `grading` (ag2u): a dozer grades randomly dumped sand piles under pose noise.

One episode of the closed loop of ag2u fig. 1 with the heuristic expert deciding
each leg (the learned agent1/agent2 policies plug into the same decider slot).
Perception is the onboard runtime's estimator on simulated IMU + aiding pose under
the chosen noise scenario (noise_less, sensor_fusion, extreme; the aiding error held for
the episode, ag2u eq. 13, or fresh per sample with aiding_error=white); path following uses
the estimated pose, the blade moves sand on the true pose. The onboard app records at its boundary
into log.mcap: ``python -m harness replay REPORT/log.mcap [--impl pure|cython|numpy]`` re-runs it.
"""
import copy

from harness.config import ConfigError, check_ranges, one_of
from harness.scenarios.grading.agents import AGENT_BACKENDS, ModelError, load_decider
from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, SETTING_RANGES as EPISODE_RANGES
from harness.scenarios.grading.episode import ExpertDecider, GradingEpisode, related_setting_problem
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "dozer grades sand piles (ag2u) under a pose-noise scenario; expert or trained agent decides"

DEFAULTS = copy.deepcopy(EPISODE_DEFAULTS)
DEFAULTS["agent"] = "expert"          # expert | agent1 | agent2 (committed models in models/grading/)
DEFAULTS["agent_backend"] = "numpy"   # numpy (float) | litert | litert-xnnpack | pure-int8 (int8 export)


# value ranges of the settings (harness.config rules): the episode's and who decides;
# related_setting_problem adds the checks that relate two settings
SETTING_RANGES = dict(EPISODE_RANGES, agent=one_of("expert", "agent1", "agent2"), agent_backend=one_of(*AGENT_BACKENDS))


def run(config, ctx):
    check_ranges(config, SETTING_RANGES)
    agent = config["agent"]
    problem = related_setting_problem(config)
    if problem:
        raise ConfigError("setting config." + problem)
    if agent == "expert" and config["agent_backend"] != "numpy":
        raise ConfigError("setting config.agent_backend=%s runs a trained agent's int8 model, but config.agent is "
                          "expert: add --set agent=agent1 or --set agent=agent2" % config["agent_backend"])
    try:
        policy = None if agent == "expert" else load_decider(agent, config["agent_backend"])
    except ModelError as exc:
        raise ConfigError(str(exc))
    # the onboard app at its boundary into log.mcap (when there is a report): `python -m harness replay`
    episode = GradingEpisode(config, ctx.random, log=ctx.log,
                             record=ctx.log if ctx.report is not None else None,
                             code_version=code_version() if ctx.report is not None else "")
    progress = ctx.progress(config["max_legs"], "grading legs")

    def decider(ep):
        progress.update_to(len(ep.legs))
        return ExpertDecider(ep.expert)(ep) if policy is None else policy(ep)

    metrics = episode.run(decider)
    progress.close()
    metrics["noise"] = config["noise"]
    metrics["agent"] = agent
    metrics["agent_backend"] = "expert" if policy is None else policy.backend
    metrics["success"] = metrics["finished"]
    for i, leg in enumerate(episode.legs):
        ctx.log("/grading/leg", int(leg["end_time_s"] * 1e6), dict(leg, index=i))
    if ctx.report is not None:
        _plots(ctx.report, episode)
        ctx.report.write_json("legs.json", episode.legs)
    return metrics


def _plots(report, episode):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = episode.world
    extent = (0.0, w.cols * w.cell_m, 0.0, w.rows * w.cell_m)
    vmax = max(float(episode.initial_height_m.max()), 1e-3)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, h, title in ((axes[0], episode.initial_height_m, "before"), (axes[1], w.height_m, "after")):
        im = ax.imshow(h * 100.0, origin="lower", extent=extent, cmap="YlOrBr", vmin=0.0, vmax=vmax * 100.0)
        ax.axhline(w.work_north_max_m, color="k", ls=":", lw=1)
        ax.set_title("heightmap %s [cm]" % title)
        ax.set_xlabel("east [m]")
        ax.set_ylabel("north [m]")
    axes[1].plot([p[1] for p in episode.path_true], [p[0] for p in episode.path_true], "C0", lw=1.5,
                 label="dozer (truth)")
    axes[1].plot([p[1] for p in episode.path_est], [p[0] for p in episode.path_est], "C1", lw=0.8,
                 label="estimate")
    for leg in episode.legs:
        axes[1].plot(leg["green_ne_m"][1], leg["green_ne_m"][0], "o", color="green", ms=6)
        axes[1].plot(leg["red_ne_m"][1], leg["red_ne_m"][0], "o", color="red", ms=6)
    axes[1].legend(loc="lower right", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8)
    report.save_figure(fig, "heightmap")

    fig, ax = plt.subplots(figsize=(7, 3.5))
    fills = [l["blade_fill_fraction"] for l in episode.legs]
    ax.bar(range(1, len(fills) + 1), fills, color=["C2" if f > 0.5 else "C3" for f in fills])
    ax.axhline(0.5, color="k", ls="--", lw=1, label="success threshold (Table I)")
    ax.set_xlabel("leg")
    ax.set_ylabel("blade fill fraction")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    report.save_figure(fig, "blade_fill")
