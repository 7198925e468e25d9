"""``python -m harness level-sweep``: the thesis's grid leveling studies (Cook thesis 4.2.2-4.2.3, figs.
4.2-4.5) on :class:`harness.sim.leveling_grid.LevelingGrid`, through the project's sweep runner.

Studies (``--studies``, default all three):

- ``rho`` (fig. 4.2): cycles to level against the constant pick-up/deposit probability rho
  (``probabilistic.rho_mode = const``), default rho = 0.1 ... 0.9;
- ``k`` (fig. 4.3): cycles to level against k of the height-dependent probabilities (h/(k+h))^2,
  (k/(k+h))^2 (``rho_mode = k``), default k = 1, 2, 4, 6, 8, 10, 12 (units);
- ``memetic`` (figs. 4.4, 4.5): units moved (units laid into another cell than they were taken from;
  pick-ups next to them) and cycles to level of the probabilistic agent
  (constant rho = 0.3) and the memetic MA1 (Alg. 3) and MA2 (Alg. 4, keep threshold 1.0) on
  ``--terrains`` (default mounds, ridges, pits), each memetic variant against the probabilistic one by
  Welch's t-test (two-sided, unequal variances), per terrain and over all terrains pooled.

Level condition: the world's setting (``level.condition``, default range: max - min <= 1 unit), the same
for all three studies, recorded in ``level_sweep.json`` (``setup.level``) and on the first lines of
``results.md``; ``--set level.condition=grad`` halts every run at the thesis's own flatness |grad f| <=
epsilon (Cook thesis 4.1), every 4-neighbour height difference <= ``level.epsilon_units``.

Each cell runs seeds 0 .. runs-1 (the same terrains and placements in every cell); a run that does not
level within ``max_cycles`` counts at ``max_cycles`` in the cycle means (``level_reached`` says how many
did). Means carry their 95 % interval (Student t of the mean, :mod:`harness.sweep_table`). Results do not
depend on ``--workers``/``--engine``.

Output folder (``--out``, default ``reports/level-sweep``): ``level_sweep.json`` (every summary and each
run's metrics), ``rho.png``, ``k.png``, ``memetic.png``, ``results.md`` (the tables). ``--quick``: a
12x12 terrain, 4 agents, 4 runs per cell and fewer values (seconds, for tests and a first look).
"""
import json
import math
import os
import sys

from harness.config import ConfigError, nested, overlay, parse_set, positive_int
from harness.report.run_report import report_folder
from harness.scenarios.leveling.level_grid import NEVER_LEVELS
from harness.sim.leveling_grid import DEFAULTS as GRID_DEFAULTS, SETTING_RANGES as GRID_RANGES, run_level_grid
from harness.sim.voxel_terrain import KINDS
from harness.sweep_runner import add_engine_arguments, runner_from_args
from harness.sweep_table import number_summary
from onboard.core.settings import checked

STUDIES = ("rho", "k", "memetic")
RHO_VALUES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
K_VALUES = (1, 2, 4, 6, 8, 10, 12)
ALGORITHMS = ("probabilistic", "ma1", "ma2")
# --quick: a grid of a few seconds per cell
QUICK = {"agents": 4, "terrain": {"rows": 12, "cols": 12, "features": 6, "max_units": 6}, "max_cycles": 200000}
QUICK_RUNS = 4
QUICK_RHO = (0.1, 0.3, 0.9)
QUICK_K = (1, 6, 12)
CELL_RANGES = {**GRID_RANGES, **NEVER_LEVELS}   # every cell of a study, before it runs
# what a run keeps in level_sweep.json
KEPT = ("seed", "level_reached", "cycles_to_level", "cycles", "units_moved", "units_relocated", "agent_actions", "volume_error",
        "initial_rms_units", "final_range_units", "final_max_gradient_units")


# ------------------------------------------------------------------------------------------ statistics
def _betacf(a, b, x):
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def welch(a, b):
    """Welch's two-sided t-test of mean(a) != mean(b) (unequal variances; as scipy.stats.ttest_ind with
    equal_var=False): {t, dof, p, mean_a, mean_b, ratio (mean_a / mean_b)}. With fewer than two values in
    a sample its variance is undefined and so is the test: t, dof and p are None (no verdict)."""
    na, nb = len(a), len(b)
    ma, mb = math.fsum(a) / na, math.fsum(b) / nb
    ratio = ma / mb if mb else None
    if na < 2 or nb < 2:
        return {"t": None, "dof": None, "p": None, "mean_a": ma, "mean_b": mb, "ratio": ratio}
    va = math.fsum((x - ma) ** 2 for x in a) / (na - 1)
    vb = math.fsum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    if se2 == 0.0:
        same = ma == mb
        return {"t": 0.0 if same else math.copysign(1e300, ma - mb), "dof": float(na + nb - 2),
                "p": 1.0 if same else 0.0, "mean_a": ma, "mean_b": mb, "ratio": ratio}
    t = (ma - mb) / math.sqrt(se2)
    dof = se2 * se2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    p = betainc(0.5 * dof, 0.5, dof / (dof + t * t))
    return {"t": t, "dof": dof, "p": p, "mean_a": ma, "mean_b": mb, "ratio": ratio}


# ------------------------------------------------------------------------------------------ jobs
def run_job(config, seed):
    """One seeded grid run (a sweep job): the kept metrics (``KEPT``) plus ``cycles_or_limit`` (cycles
    to level, or the cycles run when it did not level)."""
    m = run_level_grid(config, seed)
    out = {k: m[k] for k in KEPT}
    out["cycles_or_limit"] = m["cycles_to_level"] if m["level_reached"] else m["cycles"]
    return out


def _cell_summary(runs):
    cycles = [r["cycles_or_limit"] for r in runs]
    units = [r["units_moved"] for r in runs]
    return {"runs": len(runs), "level_reached": sum(1 for r in runs if r["level_reached"]),
            "volume_errors": sorted(set(r["volume_error"] for r in runs)),
            "cycles": number_summary(cycles), "units_moved": number_summary(units),
            "units_relocated": number_summary([r["units_relocated"] for r in runs]),
            "agent_actions": number_summary([r["agent_actions"] for r in runs])}


def _check_cells(cells):
    """ConfigError (one line) for the first cell of ``cells`` ([(label, config)]) that is bad or never levels."""
    for _, cfg in cells:
        checked(GRID_DEFAULTS, CELL_RANGES, cfg, "level-sweep")


def _run_cells(runner, cells, runs):
    """cells: [(label, config)] -> {label: [run results, seeds 0..runs-1]} (one ordered map)."""
    _check_cells(cells)           # a bad or never-levelling cell fails here (one line), before any cell runs
    args = [(cfg, seed) for _, cfg in cells for seed in range(runs)]
    results = list(runner.map(run_job, args))
    return {label: results[i * runs:(i + 1) * runs] for i, (label, _) in enumerate(cells)}


def _param_cells(base, path, values):
    """[(value, config)] of a parameter study: ``base`` with the setting ``path`` at each of ``values``."""
    return [(v, overlay(base, nested({path: v}))) for v in values]


def param_sweep(runner, base, path, values, runs):
    """Cycles to level against the setting ``path`` (figs. 4.2/4.3): {path, values, rows, argmin,
    end_ratios (mean at the first / last value over the smallest mean; None when that is 0), u_shaped}."""
    cells = _param_cells(base, path, values)
    found = _run_cells(runner, cells, runs)
    rows = [dict(value=v, **_cell_summary(found[v])) for v in values]
    means = [r["cycles"]["mean"] for r in rows]
    best = min(range(len(rows)), key=lambda i: means[i])
    # None when the smallest mean is 0 cycles (every run of that value started level): no ratio to it
    ends = [means[0] / means[best], means[-1] / means[best]] if means[best] > 0 else None
    return {"path": path, "values": list(values), "runs": runs, "rows": rows, "argmin": rows[best]["value"],
            "end_ratios": ends, "u_shaped": 0 < best < len(rows) - 1,
            "per_run": {str(v): found[v] for v in values}}


def _significant(test, sign):
    """A Welch test's verdict: its t has the sign ``sign`` and p < 0.05 (False when there is no test)."""
    return test["p"] is not None and test["t"] * sign > 0 and test["p"] < 0.05


def _memetic_cells(base, terrains):
    """[((terrain kind, algorithm), config)] of the memetic study (the probabilistic agent at constant rho 0.3)."""
    cells = []
    for kind in terrains:
        for alg in ALGORITHMS:
            cfg = overlay(base, {"algorithm": alg, "terrain": {"kind": kind}})
            if alg == "probabilistic":
                cfg = overlay(cfg, {"probabilistic": {"rho_mode": "const", "rho": 0.3}})
            cells.append(((kind, alg), cfg))
    return cells


def memetic_study(runner, base, terrains, runs):
    """Probabilistic (rho = 0.3) vs MA1 vs MA2 on each terrain kind (figs. 4.4/4.5) with Welch tests of
    units moved and cycles (each memetic variant against the probabilistic agent)."""
    found = _run_cells(runner, _memetic_cells(base, terrains), runs)
    table = {kind: {alg: _cell_summary(found[(kind, alg)]) for alg in ALGORITHMS} for kind in terrains}
    tests = {}
    for alg in ALGORITHMS[1:]:
        tests[alg] = {}
        for scope in list(terrains) + ["pooled"]:
            kinds = terrains if scope == "pooled" else [scope]
            mine = [r for k in kinds for r in found[(k, alg)]]
            prob = [r for k in kinds for r in found[(k, "probabilistic")]]
            tests[alg][scope] = {
                metric: welch([r[key] for r in mine], [r[key] for r in prob])
                for metric, key in (("units_moved", "units_moved"), ("units_relocated", "units_relocated"),
                                    ("cycles", "cycles_or_limit"))}
    # "units of material moved" (thesis 4.2.3, a unit = one block of one cell): the units that left their
    # cell (units_relocated); a unit lifted and put back into the same cell moved no material. The
    # pick-up count (units_moved) is tested and reported next to it.
    pooled = {alg: tests[alg]["pooled"] for alg in ALGORITHMS[1:]}
    verdict = {alg: {"fewer_units": _significant(pooled[alg]["units_relocated"], -1),
                     "fewer_pickups": _significant(pooled[alg]["units_moved"], -1),
                     "more_cycles": _significant(pooled[alg]["cycles"], 1)} for alg in ALGORITHMS[1:]}
    return {"terrains": list(terrains), "runs": runs, "table": table, "welch": tests, "thesis_holds": verdict,
            "per_run": {"%s/%s" % key: v for key, v in found.items()}}


# ------------------------------------------------------------------------------------------ report
def _ci(s):
    if s["ci95"][0] is None:            # one run: no interval (harness.sweep_table.number_summary)
        return "%.0f (1 run)" % s["mean"]
    return "%.0f [%.0f, %.0f]" % (s["mean"], s["ci95"][0], s["ci95"][1])


def _err(cells):
    """Error bars [below, above] of summaries' 95 % intervals (0 where a cell has one run: no interval)."""
    return [[0.0 if c["ci95"][0] is None else c["mean"] - c["ci95"][0] for c in cells],
            [0.0 if c["ci95"][1] is None else c["ci95"][1] - c["mean"] for c in cells]]


def _ratio(test):
    return "n/a (/ 0)" if test["ratio"] is None else "%.3f" % test["ratio"]


def _p(test):
    return "n/a (< 2 runs)" if test["p"] is None else "%.3g" % test["p"]


CONDITION_TEXT = {"grad": "every 4-neighbour |dh| (the thesis's |grad f|, 4.1)", "range": "max - min",
                  "rms": "rms about the mean"}


def markdown(out):
    lines = ["# level-sweep (Cook thesis figs. 4.2-4.5)", "",
             "Grid %(rows)dx%(cols)d, %(agents)d agents, %(runs)d seeded runs per cell; cycles: mean "
             "[95 %% interval]; runs that did not level count at max_cycles = %(max_cycles)d." % out["setup"],
             "Level condition: %s <= %g unit(s)." % (CONDITION_TEXT[out["setup"]["level"]["condition"]],
                                                    out["setup"]["level"]["epsilon_units"]), ""]
    for name, title in (("rho", "constant rho (fig. 4.2)"), ("k", "k of the height-dependent probabilities "
                                                                   "(fig. 4.3)")):
        s = out.get(name)
        if not s:
            continue
        lines += ["## Cycles to level vs %s" % title, "",
                  "| %s | levelled | cycles | units moved |" % s["path"], "|---|---|---|---|"]
        for r in s["rows"]:
            lines.append("| %s | %d/%d | %s | %s |" % (r["value"], r["level_reached"], r["runs"], _ci(r["cycles"]),
                                                        _ci(r["units_moved"])))
        ends = s["end_ratios"]
        lines += ["", "Minimum at %s; ends / minimum: %s; U-shaped: %s." % (
            s["argmin"], "%.2f, %.2f" % tuple(ends) if ends else "n/a (a mean of 0 cycles: those runs started level)",
            "yes" if s["u_shaped"] else "no"), ""]
    m = out.get("memetic")
    if m:
        lines += ["## Memetic (MA1, MA2) vs probabilistic (rho = 0.3) (figs. 4.4, 4.5)", "",
                  "| terrain | algorithm | levelled | pick-ups | units moved to another cell | cycles "
                  "| agent actions |",
                  "|---|---|---|---|---|---|---|"]
        for kind in m["terrains"]:
            for alg in ALGORITHMS:
                c = m["table"][kind][alg]
                lines.append("| %s | %s | %d/%d | %s | %s | %s | %s |" % (kind, alg, c["level_reached"], c["runs"],
                                                                     _ci(c["units_moved"]), _ci(c["units_relocated"]),
                                                                     _ci(c["cycles"]),
                                                                     _ci(c["agent_actions"])))
        lines += ["", "Welch t-tests against the probabilistic agent (ratio = memetic mean / probabilistic mean):",
                  "", "| variant | terrain | pick-ups ratio | pick-ups p | moved ratio | moved p | cycles ratio "
                  "| cycles p |",
                  "|---|---|---|---|---|---|---|---|"]
        for alg in ALGORITHMS[1:]:
            for scope, t in m["welch"][alg].items():
                u, r, c = t["units_moved"], t["units_relocated"], t["cycles"]
                lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    alg, scope, _ratio(u), _p(u), _ratio(r), _p(r), _ratio(c), _p(c)))
        lines += [""]
        for alg, v in m["thesis_holds"].items():
            lines.append("- %s: fewer units moved to another cell (p < 0.05): %s; more cycles (p < 0.05): %s; "
                         "fewer pick-ups (p < 0.05): %s"
                         % (alg, "yes" if v["fewer_units"] else "no", "yes" if v["more_cycles"] else "no",
                            "yes" if v["fewer_pickups"] else "no"))
        lines.append("")
    return "\n".join(lines)


def _plot_param(out_dir, s, name, xlabel):
    from harness.report.plots import figure, label
    fig, ax = figure(1, 1, title="cycles to level vs %s" % name)
    xs = [r["value"] for r in s["rows"]]
    means = [r["cycles"]["mean"] for r in s["rows"]]
    err = _err([r["cycles"] for r in s["rows"]])
    ax.errorbar(xs, means, yerr=err, color="C0", marker="o", capsize=3, label="mean, 95 % interval")
    label(ax, "%d runs per value" % s["runs"], xlabel, "cycles to level")
    _save(fig, out_dir, name)


def _plot_memetic(out_dir, m):
    _save(memetic_figure(m), out_dir, "memetic")


def memetic_figure(m):
    """The figure of memetic.png (figs. 4.4, 4.5): units moved and cycles to level per terrain and algorithm,
    bars of the means with their 95 % intervals, from :func:`memetic_study`'s results ``m``."""
    from harness.report.plots import figure, label
    fig, ax = figure(1, 2, title="memetic vs probabilistic (%d runs per terrain)" % m["runs"])
    width = 0.27
    for j, alg in enumerate(ALGORITHMS):
        xs = [i + (j - 1) * width for i in range(len(m["terrains"]))]
        for a, metric in ((ax[0], "units_relocated"), (ax[1], "cycles")):
            cells = [m["table"][kind][alg][metric] for kind in m["terrains"]]
            means = [c["mean"] for c in cells]
            err = _err(cells)
            a.bar(xs, means, width, color="C%d" % j, label=alg)
            a.errorbar(xs, means, yerr=err, fmt="none", ecolor="k", capsize=3,
                       label="95 % interval of the mean" if j == 0 else "_nolegend_")
    for a, title, ylabel in ((ax[0], "units moved (fig. 4.4)", "units moved to another cell"),
                             (ax[1], "cycles to level (fig. 4.5)", "cycles")):
        a.set_xticks(range(len(m["terrains"])), m["terrains"])
        label(a, title, "terrain", ylabel)
    return fig


def _save(fig, out_dir, name):
    import matplotlib.pyplot as plt
    fig.savefig(os.path.join(out_dir, name + ".png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


def check_sweep(base, studies=STUDIES, rho_values=RHO_VALUES, k_values=K_VALUES, terrains=KINDS):
    """The grid settings ``base`` merged and checked (one ConfigError line for a bad --set), and every cell of
    every study checked before any runs (a cell of the last study that can never level must not cost the
    earlier studies' runs); returns the merged settings."""
    cfg = checked(GRID_DEFAULTS, GRID_RANGES, base, "level-sweep")
    _check_cells((_param_cells(overlay(base, {"probabilistic": {"rho_mode": "const"}}), "probabilistic.rho",
                               rho_values) if "rho" in studies else [])
                 + (_param_cells(overlay(base, {"probabilistic": {"rho_mode": "k"}}), "probabilistic.k", k_values)
                    if "k" in studies else [])
                 + (_memetic_cells(base, terrains) if "memetic" in studies else []))
    return cfg


def level_sweep(out_dir, studies=STUDIES, runs=30, base=None, rho_values=RHO_VALUES, k_values=K_VALUES,
                terrains=KINDS, runner=None):
    """Run ``studies`` and write the report folder; returns the results (``level_sweep.json``)."""
    from harness.sweep_runner import Runner
    base = overlay(base or {}, {})
    cfg = check_sweep(base, studies, rho_values, k_values, terrains)
    rho_base = overlay(base, {"probabilistic": {"rho_mode": "const"}})
    k_base = overlay(base, {"probabilistic": {"rho_mode": "k"}})
    own = runner is None
    runner = runner or Runner()
    out = {"setup": {"rows": cfg["terrain"]["rows"], "cols": cfg["terrain"]["cols"], "agents": cfg["agents"],
                     "runs": runs, "max_cycles": cfg["max_cycles"], "level": cfg["level"], "base": base}}
    try:
        if "rho" in studies:
            out["rho"] = param_sweep(runner, rho_base, "probabilistic.rho", rho_values, runs)
        if "k" in studies:
            out["k"] = param_sweep(runner, k_base, "probabilistic.k", k_values, runs)
        if "memetic" in studies:
            out["memetic"] = memetic_study(runner, base, terrains, runs)
    finally:
        if own:
            runner.close()
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "level_sweep.json"), "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True, allow_nan=False)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write(markdown(out))
    if "rho" in out:
        _plot_param(out_dir, out["rho"], "rho", "constant pick-up / deposit probability rho")
    if "k" in out:
        _plot_param(out_dir, out["k"], "k", "k of (h/(k+h))^2, (k/(k+h))^2 (units)")
    if "memetic" in out:
        _plot_memetic(out_dir, out["memetic"])
    return out


# ------------------------------------------------------------------------------------------ command line
def _values(text, kind):
    try:
        return tuple(kind(v) for v in text.split(","))
    except ValueError:
        raise ConfigError("level-sweep: expected comma-separated numbers, got %r" % text)


def add_parser(sub):
    p = sub.add_parser("level-sweep", help="thesis figs. 4.2-4.5: cycles vs rho and k, memetic vs probabilistic",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", default=",".join(STUDIES), help="comma-separated subset of %s" % ", ".join(STUDIES))
    p.add_argument("--runs", type=positive_int, default=None, help="seeded runs per cell (default 30; --quick 4)")
    p.add_argument("--rho", default=None, help="constant rho values (default %s)" % ",".join(map(str, RHO_VALUES)))
    p.add_argument("--k", default=None, help="k values, units (default %s)" % ",".join(map(str, K_VALUES)))
    p.add_argument("--terrains", default=",".join(KINDS), help="terrain kinds of the memetic study")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="grid setting for every run (JSON value), e.g. --set agents=8 (repeatable); "
                        "--set level.condition=grad halts at the thesis's |grad| <= 1 unit (4.1)")
    p.add_argument("--quick", action="store_true", help="12x12, 4 agents, 4 runs, 3 values: seconds")
    p.add_argument("--out", default="reports/level-sweep")
    add_engine_arguments(p, workers_help="jobs at a time (default 1)")
    p.set_defaults(func=_cmd)


def _cmd(args):
    studies = tuple(s for s in args.studies.split(",") if s)
    bad = [s for s in studies if s not in STUDIES]
    if bad or not studies:
        raise ConfigError("level-sweep: --studies must be studies among %s%s"
                          % (", ".join(STUDIES), " (unknown: %s)" % ", ".join(bad) if bad else ""))
    terrains = tuple(t for t in args.terrains.split(",") if t)
    bad = [t for t in terrains if t not in KINDS]
    if bad or not terrains:
        raise ConfigError("level-sweep: --terrains must be kinds among %s" % ", ".join(KINDS))
    base = overlay(QUICK if args.quick else {}, parse_set(args.set))
    runs = args.runs or (QUICK_RUNS if args.quick else 30)
    rho = _values(args.rho, float) if args.rho else (QUICK_RHO if args.quick else RHO_VALUES)
    k = _values(args.k, float) if args.k else (QUICK_K if args.quick else K_VALUES)
    check_sweep(base, studies, rho, k, terrains)     # bad settings refused before the report folder is made
    report_folder(args.out)                          # before the runs, not after
    with runner_from_args(args) as runner:
        out = level_sweep(args.out, studies, runs, base, rho, k, terrains, runner)
    print(markdown(out))
    print("report: %s (level_sweep.json, results.md, %s)" % (
        args.out, ", ".join("%s.png" % s for s in studies)))
    return 0


if __name__ == "__main__":
    from harness.cli import main
    sys.exit(main(["level-sweep"] + sys.argv[1:]))
