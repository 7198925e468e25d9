"""Scenario `soil-ood`: the learned soil estimator in and out of its training distribution (soil paper
section 3.2: a changed blade pitch put the data out of distribution and the estimates went wrong without
a higher uncertainty; reading aid ``shared/papers/notes/soil.md`` H7).

Every (soil, I_d, seed) runs two soil-sweep episodes (one lane with random setpoints), identical but for
the blade's tilt (pitch) setpoints: ``in_tilt_rad`` inside the training range (the dataset's
0-0.4 rad, ``harness.training.soil_estimator.dataset``) and ``out_tilt_rad`` outside it (the blade's
actuator range widened to ``blade_tilt_range_rad`` so it can get there). Each cut is estimated by the
committed learned estimator with the paper's inputs (no force: ``onboard.soil.learned_estimator``'s
``KINEMATIC_MODEL``, ``models/soil/estimator_kinematic``; ``learned_model`` another) twice: by its
first member alone (the paper's single network: aleatoric sigma from the NLL only) and by the whole
ensemble (the members' spread added, an epistemic option, the stretch goal).

Metrics per condition ("in", "out") and estimator ("single", "ensemble"): per property the mean |error|
normalised by the property's preset range (``abs_err_of_range``), the mean stated sigma likewise
(``sigma_of_range``), the 1-sigma / 2-sigma coverage, and the force prediction error [%]; for the
ensemble the mean epistemic sigma (``epistemic_sigma_of_range``); per estimator and property the ratios
out / in of the error and of the sigma (``ratios``), and ``sigma_rises_out`` (the stated sigma out of
distribution above the one in distribution for most properties: the paper's failure when False for the
single network, the stretch goal when True for the ensemble; reported) and ``epistemic_sigma_rises_out``
(the same for the members' spread alone; eq. 9 pins the stated sigma of a property flagged in the null
space at the ambiguity sigma, in and out alike). ``success``: both conditions
gave finite estimates of at least one cut each (the outcome is the report).
"""
import time

import numpy as np

from harness.config import ConfigError, int_at_least, non_empty_list, one_of, pair, under, within, ANY_NUMBER
from harness.scenarios.soil import soil_episode as ep
from harness.scenarios.soil import soil_sweep
from harness.sim.rng import RunRandom
from harness.sim.soil_world import SOILS
from onboard.soil.fee import THETA_U_NAMES

DESCRIPTION = "soil paper 3.2: the learned estimator's error and sigma in vs out of distribution (blade pitch)"

DEFAULTS = {
    "soils": ["clay", "loam"],
    "relative_density_pct": [30.0, 60.0],
    "seeds": 2,
    "workers": 2,
    "in_tilt_rad": [0.0, 0.4],        # the training range of the random tilt setpoints
    "out_tilt_rad": [0.6, 0.8],       # outside it
    "blade_tilt_range_rad": [-0.1, 0.9],
    "learned_model": None,            # a model folder (weights.npz, card.json); None: models/soil/estimator_kinematic
    "episode": soil_sweep.DEFAULTS["episode"],
}
SETTING_RANGES = {
    "soils": non_empty_list(one_of(*SOILS)),
    "relative_density_pct": non_empty_list(within(0.0, 100.0), "a non-empty list of numbers in [0, 100]"),
    "seeds": int_at_least(1), "workers": int_at_least(1),
    "in_tilt_rad": pair(ANY_NUMBER, ordered=True), "out_tilt_rad": pair(ANY_NUMBER, ordered=True),
    "blade_tilt_range_rad": pair(ANY_NUMBER, ordered=True),
    "learned_model": ("null or a folder path", lambda v: v is None or (isinstance(v, str) and len(v) > 0)),
}
SETTING_RANGES.update(under("episode", ep.SETTING_RANGES))

# a run of a few seconds (`run --reduced`): one soil and density, one 3 m lane per condition
REDUCED = {"soils": ["clay"], "relative_density_pct": [40.0], "seeds": 1, "workers": 1,
           "episode": {"world": {"size_m": [6.0, 5.0]}, "loader": {"operator": {"lanes": {"length_m": 3.0}}}}}

CONDITIONS = ("in", "out")
ESTIMATORS = ("single", "ensemble")


def check_settings(config):
    lo, hi = config["blade_tilt_range_rad"]
    for key in ("in_tilt_rad", "out_tilt_rad"):
        a, b = config[key]
        if a < lo or b > hi:
            raise ConfigError("setting config.%s: %s outside blade_tilt_range_rad %s" % (key, config[key], [lo, hi]))
    if config["episode"]["world"]["file"] is not None or config["episode"]["world"]["field"] != "uniform":
        raise ConfigError("setting config.episode.world: soil-ood builds uniform worlds (field = uniform, no file)")
    ep.check_episode(config["episode"])
    from onboard.soil.learned_estimator import LearnedEstimator, LearnedModelError
    try:
        LearnedEstimator(model_folder(config["learned_model"]))
    except LearnedModelError as exc:
        raise ConfigError("setting config.learned_model: %s" % exc)


def model_folder(learned_model):
    """The model folder of setting ``learned_model`` (None: the kinematic-input model, the paper's network)."""
    from onboard.soil.learned_estimator import KINEMATIC_MODEL
    return KINEMATIC_MODEL if learned_model is None else learned_model


def ood_job(job, log=None):
    """One episode: ``job`` = (episode settings, seed, model folder); its cuts estimated by the first member
    ("single") and the ensemble ("ensemble"): {"single": rows, "ensemble": rows, "sim_s"}."""
    from harness.training.soil_estimator.capture import Capture, learned_rows
    from onboard.soil.learned_estimator import LearnedEstimator
    episode_cfg, seed, model = job
    model = model_folder(model)
    cap = Capture(log)
    e = ep.run_episode(episode_cfg, RunRandom(seed), log=cap.log, on_app=cap.on_app)
    return {"single": learned_rows(e, cap, LearnedEstimator(model, members=1)),
            "ensemble": learned_rows(e, cap, LearnedEstimator(model)), "sim_s": e.sim_s}


def jobs_of(config, seed):
    """[(soil, I_d, k, condition, job)] of every cell, seed and condition, in order (the two conditions of a
    cell and seed share the job seed)."""
    out = []
    for soil in config["soils"]:
        for idd in config["relative_density_pct"]:
            for k in range(config["seeds"]):
                for cond in CONDITIONS:
                    tilt = config["in_tilt_rad"] if cond == "in" else config["out_tilt_rad"]
                    cfg = ep.merge_blocks(config["episode"], {
                        "world": {"soil": soil, "relative_density_pct": float(idd)},
                        "loader": {"blade": {"tilt_range_rad": list(config["blade_tilt_range_rad"])},
                                   "operator": {"random": {"tilt_rad": list(tilt)}}},
                        "app": {"estimation": False}})
                    out.append((soil, float(idd), k, cond, (cfg, seed * 1000 + k, config["learned_model"])))
    return out


def _ranges():
    from harness.training.soil_estimator.train import preset_bounds
    lo, hi = preset_bounds()
    return dict(zip(THETA_U_NAMES, hi - lo))


def condition_metrics(rows, span):
    """Per property abs_err_of_range, sigma_of_range, coverage_1s / _2s (and epistemic_sigma_of_range);
    cuts, force_mae_pct (mean over cuts)."""
    done = [r for r in rows if "theta" in r]
    out = {"cuts": len(done)}
    if not done:
        return out
    for k in THETA_U_NAMES:
        err = np.abs(np.array([r["theta"][k] - r["truth"][k] for r in done]))
        sig = np.array([r["sigma"][k] for r in done])
        epi = np.array([r["sigma_epistemic"][k] for r in done])
        out[k] = {"abs_err_of_range": float(err.mean() / span[k]), "sigma_of_range": float(sig.mean() / span[k]),
                  "epistemic_sigma_of_range": float(epi.mean() / span[k]),
                  "coverage_1s": float(np.mean(err <= sig)), "coverage_2s": float(np.mean(err <= 2.0 * sig))}
    out["force_mae_pct"] = float(np.mean([r["force_mae_pct"] for r in done]))
    return out


def summarise(results_by, span):
    """The metrics (module docstring) from {(estimator, condition): rows}."""
    metrics = {}
    finite = True
    for est in ESTIMATORS:
        m = {cond: condition_metrics(results_by[(est, cond)], span) for cond in CONDITIONS}
        ratios = {}
        rises = 0
        rises_epi = 0
        for k in THETA_U_NAMES:
            if k in m["in"] and k in m["out"]:
                a, b = m["in"][k], m["out"][k]
                ratios[k] = {"error_out_over_in": b["abs_err_of_range"] / max(a["abs_err_of_range"], 1e-12),
                             "sigma_out_over_in": b["sigma_of_range"] / max(a["sigma_of_range"], 1e-12)}
                rises += int(b["sigma_of_range"] > a["sigma_of_range"])
                rises_epi += int(b["epistemic_sigma_of_range"] > a["epistemic_sigma_of_range"])
                finite = finite and all(np.isfinite(v) for v in list(a.values()) + list(b.values()))
        m["ratios"] = ratios
        m["sigma_rises_out"] = bool(ratios) and rises > len(ratios) / 2
        m["epistemic_sigma_rises_out"] = bool(ratios) and rises_epi > len(ratios) / 2
        if "force_mae_pct" in m["in"] and "force_mae_pct" in m["out"]:
            m["force_mae_pct_out_over_in"] = m["out"]["force_mae_pct"] / max(m["in"]["force_mae_pct"], 1e-12)
        metrics[est] = m
    cuts = {cond: metrics["ensemble"][cond]["cuts"] for cond in CONDITIONS}
    metrics["success"] = bool(finite and all(v >= 1 for v in cuts.values()))
    return metrics


def run(config, ctx):
    jobs = jobs_of(config, ctx.seed)
    t0 = time.perf_counter()
    results = soil_sweep.run_episodes(ood_job, [j[4] for j in jobs], config["workers"], ctx, "soil-ood")
    ctx.timing(ood_wall_s=time.perf_counter() - t0, episodes=len(jobs))
    by = {(est, cond): [] for est in ESTIMATORS for cond in CONDITIONS}
    for job, res in zip(jobs, results):
        for est in ESTIMATORS:
            by[(est, job[3])].extend(res[est])
    metrics = summarise(by, _ranges())
    metrics["episodes"] = len(jobs)
    metrics["tilt_rad"] = {"in": list(config["in_tilt_rad"]), "out": list(config["out_tilt_rad"])}
    if ctx.report is not None:
        _plot(ctx.report, metrics)
    return metrics


def _plot(report, metrics):
    from harness.report.plots import figure, label
    from harness.scenarios.soil.soil_homogeneous import UNITS
    fig, axes = figure(1, 2, title="Learned estimator in vs out of distribution (blade pitch; soil paper 3.2)",
                       size_in=(12.0, 4.0), squeeze=False)
    x = np.arange(len(THETA_U_NAMES))
    for col, (key, name) in enumerate((("abs_err_of_range", "mean |error| / range"),
                                       ("sigma_of_range", "mean stated sigma / range"))):
        ax = axes[0, col]
        for i, (est, cond) in enumerate([(e, c) for e in ESTIMATORS for c in CONDITIONS]):
            m = metrics[est][cond]
            vals = [m[k][key] if k in m else np.nan for k in THETA_U_NAMES]
            ax.bar(x + 0.2 * i - 0.3, vals, width=0.2, label="%s, %s" % (est, cond))
        ax.set_xticks(x)
        ax.set_xticklabels([UNITS[k][0] for k in THETA_U_NAMES])
        ax.legend(fontsize=7)
        label(ax, name, "property", name)
    report.save_figure(fig, "ood_error_sigma")
