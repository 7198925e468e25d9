"""Seeded studies of the grid leveling world (Cook thesis 4.2.2): repeated runs to the level condition and
parameter sweeps (figs. 4.2-4.3: mean cycles to level against the constant rho or against k).

A plain tool until the harness's scenario and sweep commands take it over::

    python -m harness.sim.leveling_study runs --runs 30 --workers 2          # 32x32, 8 agents, 30 seeds
    python -m harness.sim.leveling_study sweep --path probabilistic.rho \\
        --values 0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9 --runs 30 --rows 16 --cols 16 --agents 4
    python -m harness.sim.leveling_study sweep --path probabilistic.k --values 1,2,4,6,8,10,12 \\
        --set probabilistic.rho_mode=k

Every run is seeded (seeds 0..runs-1 under each setting, so the settings are compared on the same
terrains and placements) and the results do not depend on ``--workers``. ``--json PATH`` writes them.
"""
import argparse
import json
import math
import sys

from harness.parallel import ordered_map
from harness.sim.leveling_grid import run_level_grid


def _run_job(job):
    config, seed = job
    return run_level_grid(config, seed)


def _set_path(config, path, value):
    node = config
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return config


def _copy(config):
    return json.loads(json.dumps(config))


# Student t 0.975 quantiles for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(dof):
    """The 0.975 quantile of Student's t with ``dof`` degrees of freedom (table to 30, then the
    Cornish-Fisher series in 1/dof, within 1e-3)."""
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof * dof)


def summary(values):
    """{n, mean, sd, ci95 (half width, Student t), median, min, max} of a list of numbers."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    q = t975(n - 1) if n > 1 else 0.0
    ordered = sorted(values)
    mid = n // 2
    median = ordered[mid] if n % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
    return {"n": n, "mean": mean, "sd": sd, "ci95": q * sd / math.sqrt(n) if n > 1 else 0.0,
            "median": median, "min": ordered[0], "max": ordered[-1]}


def repeated_runs(config=None, runs=30, workers=1, first_seed=0):
    """``runs`` seeded runs of one configuration: {runs, level_reached, volume_errors, cycles (summary
    over the runs that levelled), units_moved (summary), metrics (per run)}."""
    config = _copy(config or {})
    metrics = list(ordered_map(_run_job, [(config, first_seed + s) for s in range(runs)], workers))
    levelled = [m for m in metrics if m["level_reached"]]
    return {
        "runs": runs, "level_reached": len(levelled),
        "volume_errors": [m["volume_error"] for m in metrics],
        "cycles": summary([m["cycles_to_level"] for m in levelled]) if levelled else None,
        "units_moved": summary([m["units_moved"] for m in metrics]),
        "metrics": metrics,
    }


def sweep(path, values, config=None, runs=30, workers=1):
    """Mean cycles to level for each value of the setting ``path`` (dotted, e.g. ``probabilistic.rho``):
    {path, values, rows: [{value, level_reached, cycles, units_moved}], argmin, end_ratios} where
    ``end_ratios`` are (mean at the first value, mean at the last) / the smallest mean (U-shape: both > 1).
    Runs that did not level count at ``max_cycles`` in the means (``level_reached`` says how many)."""
    rows = []
    for v in values:
        cfg = _set_path(_copy(config or {}), path, v)
        metrics = list(ordered_map(_run_job, [(cfg, s) for s in range(runs)], workers))
        cycles = [m["cycles_to_level"] if m["level_reached"] else m["cycles"] for m in metrics]
        rows.append({"value": v, "level_reached": sum(1 for m in metrics if m["level_reached"]),
                     "cycles": summary(cycles), "units_moved": summary([m["units_moved"] for m in metrics]),
                     "volume_errors": sorted(set(m["volume_error"] for m in metrics))})
    means = [r["cycles"]["mean"] for r in rows]
    best = min(range(len(rows)), key=lambda i: means[i])
    return {"path": path, "values": list(values), "runs": runs, "rows": rows, "argmin": rows[best]["value"],
            "end_ratios": [means[0] / means[best], means[-1] / means[best]]}


def _parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def _config_from(args):
    config = {"agents": args.agents, "terrain": {"rows": args.rows, "cols": args.cols}}
    if args.max_cycles is not None:
        config["max_cycles"] = args.max_cycles
    for item in args.set or []:
        key, _, value = item.partition("=")
        _set_path(config, key, _parse_value(value))
    return config


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m harness.sim.leveling_study", description=__doc__.split("\n")[0])
    p.add_argument("study", choices=("runs", "sweep"))
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--rows", type=int, default=32)
    p.add_argument("--cols", type=int, default=32)
    p.add_argument("--agents", type=int, default=8)
    p.add_argument("--max-cycles", type=int, default=None)
    p.add_argument("--path", default="probabilistic.rho", help="setting swept (dotted)")
    p.add_argument("--values", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9")
    p.add_argument("--set", action="append", help="extra setting PATH=VALUE (JSON value)")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    config = _config_from(args)
    if args.study == "runs":
        out = repeated_runs(config, args.runs, args.workers)
        c, u = out["cycles"], out["units_moved"]
        print("%d/%d runs levelled; volume errors %s" % (out["level_reached"], out["runs"],
                                                          sorted(set(out["volume_errors"]))))
        if c:
            print("cycles to level: mean %.0f +- %.0f (95 %%), median %.0f, min %d, max %d"
                  % (c["mean"], c["ci95"], c["median"], c["min"], c["max"]))
        print("units moved: mean %.0f, min %d, max %d" % (u["mean"], u["min"], u["max"]))
    else:
        values = [_parse_value(v) for v in args.values.split(",")]
        out = sweep(args.path, values, config, args.runs, args.workers)
        print("| %s | levelled | mean cycles | 95 %% CI | units moved |" % args.path)
        print("|---|---|---|---|---|")
        for r in out["rows"]:
            print("| %s | %d/%d | %.0f | %.0f | %.0f |" % (r["value"], r["level_reached"], out["runs"],
                                                         r["cycles"]["mean"], r["cycles"]["ci95"],
                                                         r["units_moved"]["mean"]))
        print("argmin %s; ends / min: %.2f, %.2f" % (out["argmin"], out["end_ratios"][0], out["end_ratios"][1]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
