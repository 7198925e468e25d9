"""A sweep's table: every metric of every cell (a combination of settings) over its seeds, with its mean
and 95 % interval, as JSON, CSV and Markdown.

Numbers get the mean and the Student t interval of the mean (``t975``); yes/no metrics (``success``,
``*_reached``) the fraction of seeds and its Wilson score interval. Nested tables of metrics become
dotted names (``estimator.updates``); text and lists are left out of the table (they stay in the
per-seed results); a metric that is null for a seed counts for the others (``n`` says how many).
"""
import csv
import io
import json
import math
import os

from harness.report.run_report import write_whole

Z975 = 1.959964
INTERVAL = ("Student t interval of the mean for numbers, Wilson score interval for yes/no metrics (the fraction "
            "of seeds)")

# Student t 0.975 quantiles for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(dof):
    """The 0.975 quantile of Student's t with ``dof`` >= 1 degrees of freedom (table to 30, then the
    Cornish-Fisher series in 1/dof, within 1e-3)."""
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = Z975
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof * dof)


# Beyond this magnitude a sum or a square of the values can overflow the floats: such values are summed scaled
# by the largest magnitude (below it, unscaled: the same numbers as always)
_SCALE_ABOVE = 1e150


def number_summary(values):
    """{kind, n, mean, sd, ci95 [low, high] (Student t of the mean), min, max}. With one value the sample
    sd and the interval are undefined: sd None and ci95 [None, None] (not a zero-width interval). Values of
    magnitude beyond 1e150 are summed scaled (no overflow); a figure that is still beyond the floats (an sd of
    values near 1e308) is None."""
    n = len(values)
    scale = max(abs(v) for v in values)
    if not scale > _SCALE_ABOVE:
        scale = 1.0
    scaled = [v / scale for v in values] if scale != 1.0 else values
    mean = math.fsum(scaled) / n * scale
    if n < 2:
        return {"kind": "number", "n": n, "mean": mean, "sd": None, "ci95": [None, None],
                "min": min(values), "max": max(values)}
    mean_scaled = mean / scale
    sd = math.sqrt(math.fsum((v - mean_scaled) ** 2 for v in scaled) / (n - 1)) * scale
    half = t975(n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    return {"kind": "number", "n": n, "mean": mean, "sd": _finite_or_none(sd),
            "ci95": [_finite_or_none(low), _finite_or_none(high)], "min": min(values), "max": max(values)}


def _finite_float(x):
    """Whether the number ``x`` is a finite float (an int beyond the floats' range is not)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _finite_or_none(x):
    return x if math.isfinite(x) else None


def fraction_summary(flags):
    """{kind, n, mean (the fraction of yes), ci95 [low, high] (Wilson score interval), min, max} of booleans."""
    n = len(flags)
    k = sum(1 for f in flags if f)
    p = k / n
    z2 = Z975 * Z975
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z975 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return {"kind": "fraction", "n": n, "mean": p, "sd": None,
            "ci95": [max(0.0, centre - half), min(1.0, centre + half)], "min": float(k == n), "max": float(k > 0)}


def metric_leaves(metrics, prefix=""):
    """(dotted name, value) of every number, boolean and null in a (nested) metrics table, in its order."""
    for key, value in metrics.items():
        path = prefix + str(key)
        if isinstance(value, dict):
            yield from metric_leaves(value, path + ".")
        elif value is None or isinstance(value, (bool, int, float)):
            yield path, value


def summarise(results):
    """{metric: summary} over a cell's per-seed metrics tables (:func:`number_summary`,
    :func:`fraction_summary`), metrics in the order they first appear; non-finite numbers (and integers beyond
    the floats' range, which are no finite float) are left out."""
    values = {}
    for metrics in results:
        for path, value in metric_leaves(metrics):
            values.setdefault(path, [])
            if value is not None and (isinstance(value, bool) or _finite_float(value)):
                values[path].append(value)
    out = {}
    for path, vals in values.items():
        if not vals:
            out[path] = {"kind": "none", "n": 0, "mean": None, "sd": None, "ci95": [None, None], "min": None,
                         "max": None}
        elif all(isinstance(v, bool) for v in vals):
            out[path] = fraction_summary(vals)
        else:
            out[path] = number_summary([float(v) for v in vals])
    return out


def cell_label(settings):
    """``imu.rate_hz=100, aiding.pos_sigma_m=0.2`` (``defaults`` for none)."""
    return ", ".join("%s=%s" % (k, json.dumps(v)) for k, v in settings.items()) or "defaults"


def build_table(scenario, seeds, axes, cells, rows, reduced=False):
    """The sweep's table: ``cells`` the settings of each cell (dotted key -> value, in grid order),
    ``rows`` the per-job records (``cell`` index, ``seed``, ``metrics`` or ``error``/``message``)."""
    out_cells = []
    for c, settings in enumerate(cells):
        mine = [r for r in rows if r["cell"] == c]
        good = [r["metrics"] for r in mine if "metrics" in r]
        out_cells.append({"settings": settings, "label": cell_label(settings), "jobs": len(mine),
                          "failed": len(mine) - len(good), "metrics": summarise(good)})
    return {"scenario": scenario, "seeds": list(seeds), "reduced": bool(reduced), "axes": axes,
            "interval": "95 %: " + INTERVAL,
            "cells": out_cells,
            "failures": [{"settings": cells[r["cell"]], "seed": r["seed"], "error": r["error"],
                          "message": r["message"]} for r in rows if "error" in r]}


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.4g" % value
    return str(value)


def write_table(out_dir, table):
    """table.json, table.csv and table.md in ``out_dir``, each written whole; returns their names. In table.csv a
    setting that is no number or text is JSON (``true``, ``null``, ``[1, 2]``)."""
    write_whole(os.path.join(out_dir, "table.json"), json.dumps(table, indent=2, allow_nan=False) + "\n")
    axes = list(table["axes"])
    rows = io.StringIO(newline="")
    w = csv.writer(rows)
    w.writerow(axes + ["metric", "kind", "n", "mean", "ci95_low", "ci95_high", "sd", "min", "max"])
    for cell in table["cells"]:
        head = [_csv_setting(cell["settings"].get(a)) for a in axes]
        for name, s in cell["metrics"].items():
            w.writerow(head + [name, s["kind"], s["n"]] + ["" if v is None else repr(v) for v in (
                s["mean"], s["ci95"][0], s["ci95"][1], s["sd"], s["min"], s["max"])])
    write_whole(os.path.join(out_dir, "table.csv"), rows.getvalue())
    cells = table["cells"]
    names = []
    for cell in cells:
        names += [n for n in cell["metrics"] if n not in names]
    seeds = table["seeds"]
    lines = ["# Sweep of %s%s: %d seeds per cell (%s)" % (table["scenario"], " (reduced)" if table["reduced"] else "",
                                                        len(seeds), _seed_text(seeds)), "",
             "Mean over the seeds [95 %% interval: %s; none with one seed]; n: the seeds with the metric."
             % INTERVAL, "",
             "| metric | " + " | ".join(_md_cell(c["label"]) for c in cells) + " |",
             "|---|" + "---|" * len(cells)]
    for name in names:
        row = []
        for cell in cells:
            s = cell["metrics"].get(name)
            if s is None or s["n"] == 0:
                row.append("-")
            elif s["ci95"][0] is None:          # one seed: no interval, the value alone
                row.append("%s (n %d)" % (_fmt(s["mean"]), s["n"]))
            else:
                row.append("%s [%s, %s] (n %d)" % (_fmt(s["mean"]), _fmt(s["ci95"][0]), _fmt(s["ci95"][1]), s["n"]))
        lines.append("| %s | %s |" % (_md_cell(name), " | ".join(row)))
    lines.append("| jobs failed | %s |" % " | ".join("%d of %d" % (c["failed"], c["jobs"]) for c in cells))
    if table["failures"]:
        lines += ["", "## Failed jobs", ""]
        lines += ["- %s, seed %d: %s: %s" % (cell_label(f["settings"]), f["seed"], f["error"], f["message"])
                  for f in table["failures"]]
    write_whole(os.path.join(out_dir, "table.md"), "\n".join(lines) + "\n")
    return ["table.json", "table.csv", "table.md"]


def _csv_setting(value):
    """A cell's setting in table.csv: a number or a text as it is, anything else (true/false, null, a list, a
    table) as JSON, as the cell's label writes it."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    return json.dumps(value)


def _md_cell(text):
    """``text`` as one cell of a Markdown table: a ``|`` in it (a text setting, a metric's name) escaped, so it
    does not split the cell."""
    return text.replace("|", "\\|")


def _seed_text(seeds):
    """``1-8`` for consecutive seeds, else the list."""
    if seeds and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return "seeds %d-%d" % (seeds[0], seeds[-1]) if len(seeds) > 1 else "seed %d" % seeds[0]
    return "seeds " + ", ".join(str(s) for s in seeds)
