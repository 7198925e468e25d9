"""Scenario `soil-strip` (soil paper section 3.2, Fig. 12): clay at I_d 10 % with a strip at I_d 80 % across
the lanes; the loader's scripted operator cuts its lanes across the strip, pass after pass, and its onboard
app fuses the per-window soil estimates into the map's property layers (Alg. 4) and evaluates the FEE index
map on them (``onboard.soil.soil_layers``; reading aid notes H1, H2, H6).

The strip is the world's ``strip`` field builder (``episode.world.strip``: across the lanes, between
``from_m`` and ``to_m`` north), or a user's field file (``--set field.file=PATH``: the TOML regions or .npz
arrays of ``harness/scenarios/soil/README.md``; it replaces the field builder). Which cells are "strip"
is read off the truth: a cell is inside when its true FEE index (section 3.2's geometry with the truth
properties) exceeds the geometric mean of the truth's lowest and highest index (two levels: background and
strip), so a held-out geometry needs no other description.

Metrics over the cells the layers fused at least once (``updates`` > 0), the index map at the end:
``auroc`` of the index separating strip cells from background cells (Mann-Whitney); ``median_inside_n`` /
``median_outside_n`` and their ratio; ``false_high_pct``: background cells whose index lies above the
midpoint between the two medians ("high"); per cut (lane and pass) the medians inside and outside of the
cells it fused, the index right after it (``cuts``), and ``cuts_higher_pct``, the cuts with both and a
higher median inside; H2 (report only): the background cells' index error against the truth by distance
from the start of the push (1 m bins). Passes (H6): over the cells that every pass of their lane fused,
right after each pass of that lane
the median posterior sigma per property relative to the layer prior's (``passes[p].sigma_rel``) and of the
FEE index (``sigma_index_n``, first-order: sqrt(sum_k (df/dtheta_k)^2 var_k)), the median relative error of
the index against the truth (``index_error_rel``); ``sigma_ratio_3_1``: per property and for the index, the
median over those cells of sigma after the third pass over sigma after the first. A property the estimator
flags not identifiable keeps at least its prior variance per estimate (eq. 9's ambiguity floor), so its
posterior can only fall as prior / (n + 1): its ratio cannot go below sqrt(2/4) = 0.71 when one estimate
per pass reaches the cell; the sigma acceptance is judged on the index and on the properties flagged in
fewer than half of the fused windows (``identified``), the others' ratios are reported. Acceptance
(``acceptance.*``): AUROC >= 0.85, ratio >= 2, false high <= 15 %, cuts higher >= 70 %, sigma ratio <= 0.6
(the index and the identified properties) and the index error after the last pass not above the first's.

Outputs: ``fee_index_map.png`` (the index map, the strip outlined, axes in m, a colour bar in kN),
``cut_medians.png`` (per cut, inside and outside), ``sigma_vs_passes.png``; the MCAP log holds the layers
as ``foxglove.Grid`` on ``/soil/grid`` after each cut, every window's estimate on ``/soil/layer_update``.
"""
import math
import time

import numpy as np

from harness.config import POSITIVE, ConfigError, under, within
from harness.report.plots import figure, label
from harness.scenarios.soil import soil_episode as ep
from harness.sim import soil_world
from harness.sim.track_loader import lanes_duration_s
from onboard.core.settings import or_null
from onboard.soil.fee import THETA_U_NAMES
from onboard.soil.grid_map import DEFAULTS as MAP_DEFAULTS
from onboard.soil.grid_map import FEE_INDEX, UPDATES, soil_mean, soil_var
from onboard.soil.grid_map_numpy import view
from onboard.soil.soil_layers import SoilLayers

DESCRIPTION = "soil paper 3.2 / Fig. 12: Bayesian soil layers and the FEE index map over a dense strip"

DEFAULTS = {
    "acceptance": {"auroc": 0.85, "median_ratio": 2.0, "false_high_pct": 15.0, "cuts_higher_pct": 70.0,
                   "sigma_ratio_3_1": 0.6},
    "field": {"file": None},          # a user's field file (.toml regions or .npz); replaces the strip builder
    "episode": ep.episode_defaults(
        world={"size_m": [16.0, 10.0], "soil": "clay", "relative_density_pct": 10.0, "field": "strip",
               "strip": {"axis": "north", "from_m": 7.0, "to_m": 10.0, "relative_density_pct": 80.0}},
        loader={"operator": {"random": {"enabled": False},
                             "lanes": {"count": 4, "passes": 3, "start_ne_m": [1.0, 1.5], "length_m": 11.0,
                                       "spacing_m": 2.0}}},
        app={"sensor_paths": ["force"], "cut_estimates": False, "layers": {"enabled": True}}),
}
PERCENT = within(0.0, 100.0)
SETTING_RANGES = {
    "acceptance.auroc": within(0.5, 1.0),
    "acceptance.median_ratio": POSITIVE,
    "acceptance.false_high_pct": PERCENT,
    "acceptance.cuts_higher_pct": PERCENT,
    "acceptance.sigma_ratio_3_1": POSITIVE,
    "field.file": or_null(("a path ending in .toml or .npz", lambda v: isinstance(v, str)
                           and v.lower().endswith((".toml", ".npz")))),
}
SETTING_RANGES.update(under("episode", ep.SETTING_RANGES))

# a run of a few seconds (`run --reduced`): one 5.5 m lane, three passes, a 2 m strip
REDUCED = {"episode": {"world": {"size_m": [10.0, 4.5], "strip": {"from_m": 4.5, "to_m": 6.5}},
                       "loader": {"operator": {"lanes": {"count": 1, "start_ne_m": [0.5, 2.25],
                                                         "length_m": 5.5}}}}}


def episode_config(config):
    """The episode's settings, the user's field file (``field.file``) in place of the strip builder."""
    cfg = config["episode"]
    if config["field"]["file"] is None:
        return cfg
    return ep.merge_blocks(cfg, {"world": {"file": config["field"]["file"], "field": "uniform"}})


def check_settings(config):
    cfg = episode_config(config)
    if not cfg["app"]["layers"]["enabled"] or not cfg["app"]["estimation"]:
        raise ConfigError("soil-strip needs episode.app.estimation and episode.app.layers.enabled true")
    ep.check_episode(cfg)


def truth_index(fields, layers):
    """The true FEE index [N] per cell (section 3.2's geometry with the truth properties), an array."""
    stack = np.stack([fields.values[k] for k in THETA_U_NAMES], axis=-1)
    flat = stack.reshape(-1, len(THETA_U_NAMES))
    uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    vals = np.array([layers.index_at([float(v) for v in row]) or np.nan for row in uniq])
    return vals[np.asarray(inverse).ravel()].reshape(stack.shape[:2])


def auroc(pos, neg):
    """Area under the ROC curve of scores ``pos`` (positives) against ``neg`` (Mann-Whitney U / n m, ties
    counted half)."""
    from scipy.stats import rankdata
    pos, neg = np.asarray(pos, float), np.asarray(neg, float)
    if pos.size == 0 or neg.size == 0:
        return None
    ranks = rankdata(np.concatenate((pos, neg)))
    u = ranks[:pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def index_sigma(layers, means, variances, step=1e-3):
    """First-order sigma [N] of the FEE index per cell: sqrt(sum_k (df/dtheta_k)^2 var_k), df/dtheta_k by
    central differences of a relative ``step`` of each property's prior sigma; ``means``/``variances``:
    (cells, 5) arrays."""
    prior_sigma = np.array([math.sqrt(MAP_DEFAULTS["soil_prior"][k][1]) for k in THETA_U_NAMES])
    out = np.empty(len(means))
    for c, (m, v) in enumerate(zip(means, variances)):
        total = 0.0
        for k in range(len(THETA_U_NAMES)):
            h = step * prior_sigma[k]
            up, dn = list(map(float, m)), list(map(float, m))
            up[k] += h
            dn[k] -= h
            fu, fd = layers.index_at(up), layers.index_at(dn)
            if fu is None or fd is None:
                total = math.nan
                break
            total += ((fu - fd) / (2.0 * h)) ** 2 * v[k]
        out[c] = math.sqrt(total)
    return out


class Watch:
    """What the run keeps after each fused cut: the index at the cells it fused, its push-start distance,
    and the layers right after it (``on_cut`` is the estimation part's ``after_cut`` callback)."""

    def __init__(self, grid, passes):
        self.grid = grid
        self.cuts = []
        self.passes = passes
        self.snapshots = {}             # (lane, pass) -> the layers right after that cut

    def on_cut(self, cut, rows, now_us):
        idx = view(self.grid, FEE_INDEX)
        cells = sorted({c for r in rows for c in r.get("cell_list", [])})
        start = cut.samples[0].blade_pose if cut.samples else None
        self.cuts.append({"lane": list(cut.lane), "cells": cells,
                          "index_n": idx.ravel()[cells].copy() if cells else np.zeros(0),
                          "start_ne_m": (start.north_m, start.east_m) if start else None})
        self.snapshots[tuple(cut.lane)] = {"mean": np.stack([view(self.grid, soil_mean(k)).ravel().copy()
                                                 for k in THETA_U_NAMES], axis=1),
                               "var": np.stack([view(self.grid, soil_var(k)).ravel().copy()
                                                for k in THETA_U_NAMES], axis=1),
                               "index": idx.ravel().copy()}


def _median(a):
    return float(np.median(a)) if len(a) else None


def run(config, ctx):
    cfg = episode_config(config)
    ops = cfg["loader"]["operator"]
    passes = ops["lanes"]["passes"]
    progress = ctx.progress(lanes_duration_s(ops), "soil-strip")
    watch = {}

    def on_app(app, grid):
        watch["w"] = Watch(grid, passes)
        app.part("estimation").after_cut.append(watch["w"].on_cut)
    t0 = time.perf_counter()
    e = ep.run_episode(cfg, ctx.random, log=ctx.log if ctx.report is not None else None, progress=progress,
                       mcap=ctx.mcap, on_app=on_app)
    progress.close()
    ctx.timing(episode_wall_s=time.perf_counter() - t0, **{k: v for k, v in e.timing.items()
                                                           if k != "episode_wall_s"})
    w = watch["w"]
    grid = e.grid
    est = e.app.part("estimation")
    layers = est.layers
    truth = truth_index(e.world.fields, layers)
    lo, hi = float(np.nanmin(truth)), float(np.nanmax(truth))
    inside_truth = truth > math.sqrt(lo * hi) if hi > lo else np.zeros(truth.shape, dtype=bool)
    idx = view(grid, FEE_INDEX)
    upd = view(grid, UPDATES) > 0
    ins, out = idx[upd & inside_truth], idx[upd & ~inside_truth]
    med_in, med_out = _median(ins), _median(out)
    threshold = 0.5 * (med_in + med_out) if med_in is not None and med_out is not None else None
    acc = config["acceptance"]
    metrics = {"field_file": config["field"]["file"], "sim_time_s": e.sim_s,
               "truth_index_n": {"background": lo, "strip": hi, "ratio": hi / lo if lo > 0 else None},
               "cells": {"fused": int(upd.sum()), "inside": int(ins.size), "outside": int(out.size),
                         "strip_cells": int(inside_truth.sum())},
               "layers": layers.counters(),
               "windows": {"estimated": sum(1 for r in est.layer_rows if "theta" in r),
                           "skipped": sum(1 for r in est.layer_rows if "theta" not in r)},
               "auroc": auroc(ins, out), "median_inside_n": med_in, "median_outside_n": med_out,
               "median_ratio": med_in / med_out if med_in is not None and med_out else None,
               "high_threshold_n": threshold,
               "false_high_pct": 100.0 * float(np.mean(out > threshold)) if threshold is not None and out.size
               else None}
    # per cut
    flat_in = inside_truth.ravel()
    cuts, higher = [], []
    for c in w.cuts:
        cells = np.array(c["cells"], dtype=int)
        m_in = _median(c["index_n"][flat_in[cells]]) if cells.size else None
        m_out = _median(c["index_n"][~flat_in[cells]]) if cells.size else None
        cuts.append({"lane": c["lane"], "cells": int(cells.size), "median_inside_n": m_in, "median_outside_n": m_out})
        if m_in is not None and m_out is not None:
            higher.append(m_in > m_out)
    metrics["cuts"] = cuts
    metrics["cuts_compared"] = len(higher)
    metrics["cuts_higher_pct"] = 100.0 * float(np.mean(higher)) if higher else None
    # H2: background error by distance from the push's start
    metrics["h2_outside_error_by_start_m"] = _h2(w, grid, idx, truth, inside_truth)
    # H6: the cells every pass of their lane fused, after each pass
    metrics["passes"], metrics["sigma_ratio_3_1"], err_growth = _passes(w, layers, truth)
    done = [r for r in est.layer_rows if "theta" in r]
    flagged = {k: float(np.mean([r["flags"][k] for r in done])) if done else 1.0 for k in THETA_U_NAMES}
    metrics["flagged_windows"] = flagged
    identified = [k for k in THETA_U_NAMES if flagged[k] < 0.5]
    metrics["identified"] = identified
    checks = {"auroc": metrics["auroc"] is not None and metrics["auroc"] >= acc["auroc"],
              "median_ratio": metrics["median_ratio"] is not None and metrics["median_ratio"] >= acc["median_ratio"],
              "false_high": metrics["false_high_pct"] is not None
              and metrics["false_high_pct"] <= acc["false_high_pct"],
              "cuts_higher": metrics["cuts_higher_pct"] is not None
              and metrics["cuts_higher_pct"] >= acc["cuts_higher_pct"]}
    if passes >= 3:
        ratios = metrics["sigma_ratio_3_1"]
        checks["sigma_ratio"] = ratios is not None and len(identified) > 0 \
            and all(ratios[k] is not None and ratios[k] <= acc["sigma_ratio_3_1"] for k in identified + ["fee_index"])
        checks["error_not_growing"] = err_growth is not None and err_growth <= 0.0
    metrics["acceptance"] = checks
    metrics["success"] = all(checks.values())
    if ctx.report is not None:
        _plots(ctx.report, grid, idx, upd, inside_truth, cuts, metrics["passes"])
    return metrics


def _h2(w, grid, idx, truth, inside):
    """Median |index - truth| / truth of the background cells by distance of the cell from the start of the
    pushes that fused it (1 m bins; report only, notes H2)."""
    from onboard.soil.grid_map_numpy import centres
    cn, ce = centres(grid)
    cn, ce = cn.ravel(), ce.ravel()
    flat_in = inside.ravel()
    err = (np.abs(idx - truth) / truth).ravel()
    bins = {}
    for c in w.cuts:
        if c["start_ne_m"] is None or not c["cells"]:
            continue
        cells = np.array(c["cells"], dtype=int)
        cells = cells[~flat_in[cells]]
        d = np.hypot(cn[cells] - c["start_ne_m"][0], ce[cells] - c["start_ne_m"][1])
        for b, e in zip(np.floor(d).astype(int), err[cells]):
            bins.setdefault(int(b), []).append(float(e))
    return [{"from_m": float(b), "cells": len(bins[b]), "median_error_rel": float(np.median(bins[b]))}
            for b in sorted(bins)]


def _passes(w, layers, truth):
    """Per pass over the cells every pass of their lane fused (the cells passed over again), each cell's
    layers taken right after its lane's pass: median sigma relative to the prior's per property, median
    index sigma [N], median relative index error, and the share of the first pass's cells that pass fused
    (``coverage``); per property and for the index the median per-cell sigma ratio after the third pass over
    after the first; the change of the index error from the first to the last pass (<= 0: not grown)."""
    lanes = {}
    for c in w.cuts:
        lanes.setdefault(c["lane"][0], {}).setdefault(c["lane"][1], set()).update(c["cells"])
    n_pass = min(len(v) for v in lanes.values()) if lanes else 0
    if n_pass == 0:
        return [], None, None
    prior_sigma = np.array([math.sqrt(MAP_DEFAULTS["soil_prior"][k][1]) for k in THETA_U_NAMES])
    stacks = {p: {"mean": [], "var": [], "index": []} for p in range(n_pass)}
    cells_all, covered, first_total = [], [0] * n_pass, 0
    for lane in sorted(lanes):
        sets = lanes[lane]
        every = np.array(sorted(set.intersection(*(sets[p] for p in range(n_pass)))), dtype=int)
        first_total += len(sets[0])
        for p in range(n_pass):
            covered[p] += len(sets[p] & sets[0])
            snap = w.snapshots[(lane, p)]
            for key in ("mean", "var", "index"):
                stacks[p][key].append(snap[key][every])
        cells_all.append(every)
    cells = np.concatenate(cells_all)
    if cells.size == 0:
        return [], None, None
    t = truth.ravel()[cells]
    rows, snaps = [], []
    for p in range(n_pass):
        snap = {key: np.concatenate(v) for key, v in stacks[p].items()}
        snaps.append(snap)
        sig = np.sqrt(snap["var"]) / prior_sigma
        s_idx = index_sigma(layers, snap["mean"], snap["var"])
        snap["sigma_index"] = s_idx
        rows.append({"pass": p + 1, "cells": int(cells.size), "coverage": covered[p] / float(max(first_total, 1)),
                     "sigma_rel": dict(zip(THETA_U_NAMES, (float(v) for v in np.median(sig, axis=0)))),
                     "sigma_index_n": ep.finite_or_none(float(np.nanmedian(s_idx))),
                     "index_error_rel": float(np.median(np.abs(snap["index"] - t) / t))})
    ratio = None
    if n_pass >= 3:
        s1, s3 = snaps[0], snaps[2]
        per_cell = np.sqrt(s3["var"] / s1["var"])
        ratio = dict(zip(THETA_U_NAMES, (float(v) for v in np.median(per_cell, axis=0))))
        ratio["fee_index"] = ep.finite_or_none(float(np.nanmedian(s3["sigma_index"] / s1["sigma_index"])))
    growth = rows[-1]["index_error_rel"] - rows[0]["index_error_rel"]
    return rows, ratio, growth


def _plots(report, grid, idx, upd, inside, cuts, passes):
    ext = [grid.origin_e_m, grid.origin_e_m + grid.n_east * grid.cell_m,
           grid.origin_n_m, grid.origin_n_m + grid.n_north * grid.cell_m]
    fig, axes = figure(1, 1, title="FEE index map (soil paper section 3.2, Fig. 12): fused soil layers")
    ax = np.ravel(axes)[0]
    shown = np.where(upd, idx * 1e-3, np.nan)
    im = ax.imshow(shown, origin="lower", extent=ext, cmap="viridis", aspect="equal")
    fig.colorbar(im, ax=ax, label="FEE index F^idx (kN)")
    outline = ax.contour(np.linspace(ext[0], ext[1], grid.n_east), np.linspace(ext[2], ext[3], grid.n_north),
                         inside.astype(float), levels=[0.5])
    segments = list(outline.allsegs[0])
    outline.remove()                         # drawn as lines: a legend takes lines, not contour sets
    for k, seg in enumerate(segments):
        ax.plot(seg[:, 0], seg[:, 1], color="lime", linewidth=2, label="dense strip (truth)" if k == 0 else "_")
    ax.set_xlim(ext[0], ext[1])
    ax.set_ylim(ext[2], ext[3])
    label(ax, "index at alpha 0, rho 80 deg, w 1.85 m, d 0.2 m; cells never fused blank", "east (m)", "north (m)")
    report.save_figure(fig, "fee_index_map")

    fig, axes = figure(1, 1, title="Per-cut median FEE index inside and outside the strip")
    ax = np.ravel(axes)[0]
    xs = np.arange(len(cuts))
    ax.plot(xs, [np.nan if c["median_inside_n"] is None else c["median_inside_n"] * 1e-3 for c in cuts], "o",
            label="inside the strip")
    ax.plot(xs, [np.nan if c["median_outside_n"] is None else c["median_outside_n"] * 1e-3 for c in cuts], "s",
            label="outside")
    ax.set_xticks(xs)
    ax.set_xticklabels(["%d.%d" % tuple(c["lane"]) for c in cuts])
    label(ax, "index after each cut, over the cells it fused", "cut (lane.pass)", "median F^idx (kN)")
    report.save_figure(fig, "cut_medians")

    fig, axes = figure(1, 1, title="Posterior spread against passes")
    ax = np.ravel(axes)[0]
    ps = [r["pass"] for r in passes]
    for k in THETA_U_NAMES:
        ax.plot(ps, [r["sigma_rel"][k] for r in passes], "o-", label="sigma %s / prior" % k)
    if passes and all(r["sigma_index_n"] for r in passes):
        ax.plot(ps, [r["sigma_index_n"] / passes[0]["sigma_index_n"] for r in passes], "k^--",
                label="sigma of F^idx / after pass 1")
    ax.set_xticks(ps)
    label(ax, "median over the cells every pass fused", "passes", "relative sigma (-)")
    report.save_figure(fig, "sigma_vs_passes")
