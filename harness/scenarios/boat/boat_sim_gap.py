"""Scenario `boat-sim-gap`: the same autonomy variants scored in an ideal and in a realistic simulation, to test the
RobotX AAVS paper's two principles (section II): the score in simulation is an upper bound on the score in
reality, and the ranking of behaviours carries over from one to the other.

Variants: every arbiter in ``arbiters`` ("damn", "potential_field") x every LIDAR in ``lidars`` ("vlp16",
"planar"), with the hydrophone layout ``layout``. Each variant runs the whole RobotX mission of
``robotx-course`` (``harness.scenarios.boat.robotx_course.run_mission``: the WAM-V app with its EKF,
perception, mission planner, arbiter and pinger locator, the same score) on ``seeds`` generated courses
(or ``course.file``) under two conditions, each a table of ``robotx-course`` settings merged over
``robotx`` (the settings common to both):

- ``ideal``: no wind, current or waves, thrusters without dead band, lag or side-to-side difference
  (``harness.sim.wamv``: ``wind``, ``current``, ``waves``, ``thrusters``), no motor-interface latency
  (``outboard_latency_s``), near-perfect sensors (GNSS 2 cm with no outliers or dropouts, heading 0.05
  deg, gyro 0.01 deg/s: ``harness.sim.sensors.wamv_sensors``; LIDAR without range noise:
  ``harness.sim.lidar``; hydrophone timing 10 ns without multipath: ``harness.sim.hydrophones``);
- ``realistic``: wind 4 m/s gusting, a 0.2 m/s current, waves, the WAM-V's dead band and unequal
  outboards, a 0.3 s motor-interface latency (a tiller-like interface, ``boat-hil-lag``), the GNSS's
  0.5 m noise with outliers and dropouts, a heading offset and gyro bias, LIDAR range noise, 5 us
  hydrophone timing noise with 15 % multipath pings.

The same seed gives the same course, and the same random streams, in both conditions and for every variant.

Metrics: per variant and condition the ``robotx-course`` table (mean score with a bootstrap interval,
completion rate, contacts); ``bound``: per variant whether the ideal mean score is >= the realistic one
and the share of seeds where the ideal run scored at least as much; ``ranking``: the variants ranked by
mean score in each condition and the rank correlations between the two (Spearman's rho and Kendall's
tau-b, ties averaged). ``success``: the ideal score bounds the realistic one for every variant and Kendall's
tau is at least ``min_kendall_tau``.
With a report folder the first run's app records at its boundary into ``OUT/log.mcap`` (``robotx-course``'s
``run_variants``; ``python -m harness replay OUT/log.mcap`` re-runs it).
Log: ``/sim_gap/run``, ``/sim_gap/track``, ``/sim_gap/states``. Plot: ``sim_gap`` (each variant's mean score
with its interval in both conditions).
"""
import copy
import math
import time

from harness.config import ANY_NUMBER, ConfigError, int_at_least, non_empty_list, one_of, within
from harness.report.plots import figure, label
from harness.scenarios.boat import robotx_course as rc
from harness.sim.rng import RunRandom

DESCRIPTION = "Ideal vs realistic simulation: does the ideal score bound the real one, do variant rankings carry over"

CONDITIONS = ("ideal", "realistic")
IDEAL = {
    "wamv": {"wind": {"speed_mps": 0.0, "gust_sigma_mps": 0.0}, "current": {"speed_mps": 0.0},
             "waves": {"force_n": 0.0, "moment_nm": 0.0},
             "thrusters": {"dead_band": 0.0, "efficiency_left": 1.0, "efficiency_right": 1.0, "lag_tau_s": 0.0}},
    "outboard_latency_s": 0.0,
    "gnss": {"sigma_m": 0.02, "outlier_prob": 0.0, "dropout_prob": 0.0},
    "heading": {"sigma_deg": 0.05},
    "gyro": {"sigma_dps": 0.01},
    "lidar": {"range_sigma_m": 0.0},
    "pinger": {"timing_sigma_s": 1e-8, "outlier_prob": 0.0},
}
REALISTIC = {
    "wamv": {"wind": {"speed_mps": 4.0, "gust_sigma_mps": 1.0}, "current": {"speed_mps": 0.2},
             "waves": {"force_n": 20.0, "moment_nm": 15.0}},
    "outboard_latency_s": 0.3,
    "gnss": {"sigma_m": 0.5, "outlier_prob": 0.01, "dropout_prob": 0.005},
    "heading": {"sigma_deg": 1.0, "offset_deg": 1.0},
    "gyro": {"sigma_dps": 0.2, "bias_dps": 0.1},
    "lidar": {"range_sigma_m": 0.05},
    "pinger": {"timing_sigma_s": 5e-6, "outlier_prob": 0.15},
}

DEFAULTS = {
    "seeds": 10,
    "course": {"file": None, "tasks": 0},
    "arbiters": ["damn", "potential_field"],
    "lidars": ["vlp16", "planar"],
    "layout": "wide",
    "robotx": {},                    # robotx-course settings common to both conditions
    "ideal": copy.deepcopy(IDEAL),   # robotx-course settings of each condition (merged over robotx)
    "realistic": copy.deepcopy(REALISTIC),
    "min_kendall_tau": 0.6,
    "bootstrap": 2000,
    "confidence": 0.95,
    "workers": 1,
}


def _table(v):
    return isinstance(v, dict)


SETTING_RANGES = {
    "seeds": int_at_least(1), "course.file": rc.SETTING_RANGES["course.file"], "course.tasks": int_at_least(0),
    # distinct: the variants are keyed by arbiter and lidar (a repeat ran the same seeds again, counted twice)
    "arbiters": non_empty_list(one_of("damn", "potential_field"),
                               "a non-empty list of distinct values of damn, potential_field", distinct=True),
    "lidars": non_empty_list(one_of(*rc.LIDARS), "a non-empty list of distinct values of %s" % ", ".join(rc.LIDARS),
                             distinct=True),
    "layout": ("a name in robotx.hydrophone_layouts (default: wide, compact)", lambda v: isinstance(v, str)),
    "robotx": ("a table of robotx-course settings", _table),
    "min_kendall_tau": within(-1.0, 1.0), "bootstrap": int_at_least(100), "confidence": within(0.5, 0.999),
    "workers": int_at_least(1),
}


def _leaf_rules(prefix, tree):
    """A number rule for every leaf of a condition's table (the ranges are robotx-course's and its components',
    checked by check_settings)."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            out.update(_leaf_rules(prefix + k + ".", v))
        else:
            out[prefix + k] = ANY_NUMBER
    return out


for _cond in CONDITIONS:
    SETTING_RANGES.update(_leaf_rules(_cond + ".", DEFAULTS[_cond]))
# a few seconds: one seed, the speed gate only, both arbiters with the VLP-16 (2 variants x 2 conditions)
REDUCED = {"seeds": 1, "course": {"tasks": 1}, "lidars": ["vlp16"], "bootstrap": 200}


# robotx-course settings this scenario sets itself (its own settings, or per variant): in ``robotx`` or a
# condition's table they would be taken and then ignored
OWN_SETTINGS = {"seeds": "seeds", "course": "course", "arbiter": "arbiters", "lidars": "lidars", "layouts": "layout",
                "bootstrap": "bootstrap", "confidence": "confidence", "workers": "workers",
                "min_completion": None}


def _merged(base, over, where):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k not in out:
            raise ConfigError("boat-sim-gap: %s.%s: unknown robotx-course setting" % (where, k))
        if k in OWN_SETTINGS:
            own = OWN_SETTINGS[k]
            raise ConfigError("boat-sim-gap: %s.%s: %s" % (where, k, "set by boat-sim-gap's own setting %s instead"
                                                             % own if own else "not used by boat-sim-gap"))
        if isinstance(v, dict) and isinstance(out[k], dict):
            out[k] = _merged_free(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _merged_free(base, over):
    """Nested tables merged key by key (the components check their own keys)."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merged_free(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def condition_config(config, condition, arbiter):
    """The robotx-course settings of one condition and arbiter (checked like robotx-course's)."""
    from harness.config import check_ranges
    cfg = _merged(rc.DEFAULTS, config["robotx"], "robotx")
    cfg = _merged(cfg, config[condition], condition)
    cfg["arbiter"] = arbiter
    cfg["course"] = dict(config["course"])
    cfg["lidars"], cfg["layouts"] = list(config["lidars"]), [config["layout"]]
    try:
        check_ranges(cfg, rc.SETTING_RANGES)
    except ConfigError as exc:
        raise ConfigError("boat-sim-gap: %s: %s" % (condition, str(exc).splitlines()[0]))
    rc.check_settings(cfg, "boat-sim-gap: %s" % condition)      # its errors name this scenario and the condition
    return cfg


def check_settings(config):
    if config["course"]["file"]:
        rc.load_user_course(config["course"]["file"], "boat-sim-gap")   # its errors name this scenario
    for cond in CONDITIONS:
        for arb in config["arbiters"]:
            condition_config(config, cond, arb)


# ---------------------------------------------------------------------------------------------- rank statistics
def ranks(values):
    """Ranks 1..n of ``values`` (1 = the largest), ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = 0.5 * (i + j) + 1.0
        i = j + 1
    return out


def spearman(a, b):
    """Spearman's rho of two samples: Pearson's correlation of their (tie-averaged) ranks; None if undefined."""
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    if n < 2:
        return None
    ma, mb = sum(ra) / n, sum(rb) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    saa = sum((x - ma) ** 2 for x in ra)
    sbb = sum((y - mb) ** 2 for y in rb)
    if saa == 0.0 or sbb == 0.0:
        return None
    return sab / math.sqrt(saa * sbb)


def kendall_tau_b(a, b):
    """Kendall's tau-b of two samples (ties in either reduce the denominator); None if undefined."""
    n = len(a)
    conc = disc = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    den = math.sqrt((conc + disc + ties_a) * (conc + disc + ties_b))
    return None if den == 0 else (conc - disc) / den


# ---------------------------------------------------------------------------------------------- the study
def run(config, ctx):
    wall0 = time.perf_counter()
    cl = rc.courses(dict(config, seeds=config["seeds"]), ctx.seed)
    jobs, keys = [], []
    for arb in config["arbiters"]:
        for lid in config["lidars"]:
            for cond in CONDITIONS:
                jc = rc.job_settings(condition_config(config, cond, arb))
                for s, c in cl:
                    jobs.append((s, lid, config["layout"], c, jc))
                    keys.append(("%s+%s" % (arb, lid), cond))
    _, results = rc.run_variants(dict(config), ctx, "/sim_gap", extra_jobs=jobs)
    ctx.timing(**rc.timing_figures(results, wall0), workers=config["workers"])
    for r, (variant, cond) in zip(results, keys):
        r["variant"], r["condition"] = variant, cond
    rc.log_runs(ctx, results, "/sim_gap")
    rng = RunRandom(ctx.seed).stream("bootstrap")
    names = list(dict.fromkeys(k[0] for k in keys))
    table, bound = {}, {}
    for v in names:
        table[v] = {}
        for cond in CONDITIONS:
            mine = [r for r in results if r["variant"] == v and r["condition"] == cond]
            table[v][cond] = rc.variant_summary(mine, config, rng)
        ideal = {r["seed"]: r["score"] for r in results if r["variant"] == v and r["condition"] == "ideal"}
        real = {r["seed"]: r["score"] for r in results if r["variant"] == v and r["condition"] == "realistic"}
        paired = [ideal[s] >= real[s] for s in ideal]
        bound[v] = {"ideal_mean": table[v]["ideal"]["score_mean"],
                    "realistic_mean": table[v]["realistic"]["score_mean"],
                    "ideal_bounds_mean": table[v]["ideal"]["score_mean"] >= table[v]["realistic"]["score_mean"],
                    "seeds_ideal_at_least_realistic": sum(paired) / len(paired)}
    ideal_means = [table[v]["ideal"]["score_mean"] for v in names]
    real_means = [table[v]["realistic"]["score_mean"] for v in names]
    tau = kendall_tau_b(ideal_means, real_means)
    rho = spearman(ideal_means, real_means)
    bounded = all(bound[v]["ideal_bounds_mean"] for v in names)
    carries = tau is not None and tau >= config["min_kendall_tau"]
    metrics = {
        "seeds": config["seeds"], "variants": table, "bound": bound, "ideal_bounds_realistic": bounded,
        "ranking": {"variants": names, "ideal_ranks": ranks(ideal_means), "realistic_ranks": ranks(real_means),
                    "spearman_rho": None if rho is None else round(rho, 4),
                    "kendall_tau_b": None if tau is None else round(tau, 4),
                    "min_kendall_tau": config["min_kendall_tau"], "carries_over": bool(carries)},
        "success": bool(bounded and carries),
    }
    _plot(ctx, table, names, config)
    return metrics


def _plot(ctx, table, names, config):
    if ctx.report is None:
        return
    fig, axes = figure(1, 1, title="boat-sim-gap: mean score, ideal vs realistic simulation (%d seeds, %d%% bootstrap)"
                       % (config["seeds"], round(100 * config["confidence"])), size_in=(9.0, 4.8), squeeze=False)
    ax = axes[0][0]
    width = 0.38
    for k, (cond, color) in enumerate((("ideal", "tab:green"), ("realistic", "tab:red"))):
        xs = [i + (k - 0.5) * width for i in range(len(names))]
        means = [table[v][cond]["score_mean"] for v in names]
        lo = [m - table[v][cond]["score_ci"][0] for m, v in zip(means, names)]
        hi = [table[v][cond]["score_ci"][1] - m for m, v in zip(means, names)]
        ax.bar(xs, means, width, color=color, label=cond)
        ax.errorbar(xs, means, yerr=[lo, hi], fmt="none", ecolor="k", capsize=4,
                    label="interval" if k == 0 else "_")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    label(ax, "score per variant and condition", "arbiter + LIDAR", "score (points)")
    ctx.report.save_figure(fig, "sim_gap")
