"""Scenario `grading` (ag2u): a dozer grades randomly dumped sand piles under pose noise.

One episode of the closed loop of ag2u fig. 1 (``harness.scenarios.grading.episode``) with the
heuristic expert or a trained agent (agent1/agent2) deciding each leg. Perception is the onboard
runtime's estimator on the simulated IMU (ag2u eq. 10) + aiding pose (eq. 13) under the chosen noise
scenario (noise_less, sensor_fusion, extreme; the aiding error held for the episode, or fresh per sample
with aiding_error=white); path following uses the estimated pose, the blade moves sand on the true
pose. The run logs the samples, commands and truth into log.mcap and records the onboard app at its
boundary there: ``python -m harness replay REPORT/log.mcap [--impl pure|cython|numpy]`` re-runs it.
Studies over many episodes (Table I, fig. 5) are ``python -m harness.scenarios.grading.sweep``.
"""
import copy

from harness.config import ConfigError, one_of
from harness.scenarios.grading.agents import AGENT_BACKENDS, ModelError, load_decider
from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, SETTING_RANGES as EPISODE_RANGES
from harness.scenarios.grading.episode import ExpertDecider, GradingEpisode, related_setting_problem
from onboard.core.units import s_to_us
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "dozer grades sand piles (ag2u) under a pose-noise scenario; expert or trained agent decides"

DEFAULTS = copy.deepcopy(EPISODE_DEFAULTS)
DEFAULTS["agent"] = "expert"          # expert | agent1 | agent2 (committed models in models/grading/)
DEFAULTS["agent_backend"] = "numpy"   # numpy (float) | litert | litert-xnnpack | pure-int8 (int8 export)

# a run of a few simulated seconds (the identical-seed test, `run --reduced`): one leg
REDUCED = {"max_legs": 1, "start_settle_s": 1.0}

# value ranges of the settings (harness.config rules): the episode's and who decides;
# check_settings adds the checks that relate two settings
SETTING_RANGES = dict(EPISODE_RANGES, agent=one_of("expert", "agent1", "agent2"), agent_backend=one_of(*AGENT_BACKENDS))


def check_settings(config):
    """Settings that are only wrong together: the world's pile counts and sizes, an int8 backend for the
    expert (which has no model)."""
    problem = related_setting_problem(config)
    if problem:
        raise ConfigError("setting config." + problem)
    if config["agent"] == "expert" and config["agent_backend"] != "numpy":
        raise ConfigError("setting config.agent_backend=%s runs a trained agent's int8 model, but config.agent is "
                          "expert: add --set agent=agent1 or --set agent=agent2" % config["agent_backend"])


def run(config, ctx):
    agent = config["agent"]
    try:
        policy = None if agent == "expert" else load_decider(agent, config["agent_backend"])
    except ModelError as exc:
        raise ConfigError(str(exc))
    # the longest the episode can take (simulated s): the start, then every leg to its timeout
    bound_s = (config["start_settle_s"] if config["start"] == "placed" else config["leg_timeout_s"]) \
        + config["max_legs"] * config["leg_timeout_s"]
    progress = ctx.progress(bound_s, "grading")
    log = ctx.log if ctx.report is not None else None
    episode = GradingEpisode(config, ctx.random, log=log, record=log, code_version=code_version() if log else "",
                             progress=progress)
    try:
        metrics = episode.run(ExpertDecider(episode.expert) if policy is None else policy)
    finally:
        progress.close()
    metrics["noise"] = config["noise"]
    metrics["agent"] = agent
    metrics["agent_backend"] = "expert" if policy is None else policy.backend
    metrics["success"] = metrics["finished"]
    for i, leg in enumerate(episode.legs):
        ctx.log("/grading/leg", s_to_us(leg["end_time_s"]), dict(leg, index=i))
    if ctx.report is not None:
        _plots(ctx.report, episode)
        ctx.report.write_json("legs.json", episode.legs)
    return metrics


def _plots(report, episode):
    from harness.report.plots import figure, label
    w = episode.world
    extent = (0.0, w.cols * w.cell_m, 0.0, w.rows * w.cell_m)
    # heights above the target level (the ground, world.ground_level_m, which need not be 0)
    level_m = episode.target_level_m
    vmax_cm = max(float(episode.initial_height_m.max()) - level_m, 1e-3) * 100.0
    fig, axes = figure(1, 2, title="grading: sand height above the target level before and after the episode",
                       size_in=(12, 5.4))
    for ax, h, when in ((axes[0], episode.initial_height_m, "before"), (axes[1], w.height_m, "after")):
        im = ax.imshow((h - level_m) * 100.0, origin="lower", extent=extent, cmap="YlOrBr", vmin=0.0, vmax=vmax_cm)
        ax.axhline(w.work_north_max_m, color="k", ls=":", lw=1, label="spoil band (north of the line)")
    axes[1].plot([p[1] for p in episode.path_true], [p[0] for p in episode.path_true], "C0", lw=1.5,
                 label="dozer (truth)")
    axes[1].plot([p[1] for p in episode.path_est], [p[0] for p in episode.path_est], "C1", lw=0.8,
                 label="onboard estimate")
    legs = episode.legs
    if legs:
        axes[1].plot([l["green_ne_m"][1] for l in legs], [l["green_ne_m"][0] for l in legs], "o", color="green",
                     ms=6, ls="none", label="push to (green)")
        axes[1].plot([l["red_ne_m"][1] for l in legs], [l["red_ne_m"][0] for l in legs], "o", color="red",
                     ms=6, ls="none", label="back to (red)")
    label(axes[0], "before", "east (m)", "north (m)")
    label(axes[1], "after %d legs" % len(legs), "east (m)", "north (m)")
    fig.colorbar(im, ax=axes, shrink=0.8, label="sand height above the target level (cm)")
    report.save_figure(fig, "heightmap")

    fig, ax = figure(size_in=(7, 3.8))
    fills = [l["blade_fill_fraction"] for l in legs]
    for ok, colour, what in ((True, "C2", "successful (> 0.5)"), (False, "C3", "not successful")):
        idx = [i + 1 for i, f in enumerate(fills) if (f > 0.5) == ok]
        if idx:
            ax.bar(idx, [fills[i - 1] for i in idx], color=colour, label=what)
    ax.axhline(0.5, color="k", ls="--", lw=1, label="success threshold (ag2u Table I)")
    ax.set_ylim(0, 1.05)
    label(ax, "blade fill per leg (peak load / capacity while pushing)", "leg", "blade fill (fraction)")
    report.save_figure(fig, "blade_fill")
