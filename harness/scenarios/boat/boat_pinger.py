"""Scenario `boat-pinger`: acoustic pinger localisation with RANSAC over time-difference contours (RobotX AAVS
III-D-1, figs. 5-8; ``onboard.vessel.pinger``) and the hydrophone-placement sweep on the WAM-V deck.

Each of ``trials`` seeded trials puts a pinger at a range drawn from ``range_m`` (30-80 m) and a random
bearing from the boat's start; the boat approaches it on a short simulated path (``speed_mps``, a heading
``heading_offset_deg`` at most off the bearing, a constant yaw rate up to ``yaw_rate_radps``) and hears a
ping every ``ping_interval_s`` through the simulated hydrophones (``harness.sim.hydrophones``: sound speed,
arrival-time noise ``timing_sigma_s``); the locator is given the poses with the estimator's error
(``pose_sigma_m``, ``yaw_sigma_rad``; 0 by default: the pings' own noise alone). It gets the first 1, 3,
... ``pings`` pings (figs. 7-8: one ping from a small array fixes the bearing, not the range; pings from
different poses triangulate), and the ``outlier_pings`` pings again with ``outlier_prob`` of them outliers
(multipath: one hydrophone hears a late arrival). Errors are the horizontal distances of the fixes from the pinger.

Placement sweep (the paper chose its hydrophone layout in simulation): triangle layouts on the deck
(``deck_length_m`` x ``deck_width_m``, centred): one hydrophone forward at (L/2, 0) and two aft at
(-L/2, +-W/2) for every L in ``placement.lengths_m`` and W in ``placement.widths_m`` (L = 0: a line
across the deck); the objective is the median error of the ``placement.pings``-ping fix over
``placement.trials`` trials (the same pinger positions and paths for every layout); the best layout is
reported with the whole table.

Every trial and every (layout, trial) is a job of the sweep runner (``harness.parallel.ordered_map``,
``workers`` local processes; results do not depend on it).

``success``: median error with 3 pings <= ``max_ratio`` x the single-ping median error (the acceptance,
ranges >= ``success_min_range_m``, 30 m) and the median error of the outlier case <= ``max_outlier_error_m``.
Log: ``/pinger/trial`` (each trial's range and errors), ``/pinger/layout`` (each layout's objective).
Plots: ``pinger_contours`` (figs. 7-8: the contours of one ping and of three, the RANSAC estimate, its
1-sigma ellipse), ``pinger_errors`` (error against range, 1 vs 3 pings) and ``pinger_layouts`` (the sweep).
"""
import math
import time

import numpy as np

from harness.config import POSITIVE, ConfigError, int_at_least, non_empty_list, pair, within
from harness.report.plots import figure, label
from harness.sim.hydrophones import Hydrophones
from harness.sim.rng import RunRandom
from onboard.vessel import pinger as pg

DESCRIPTION = "Pinger RANSAC: 1 vs 3 pings from different poses, 20 % outlier pings, hydrophone layout sweep"

DEFAULTS = {
    "trials": 300,
    "range_m": [30.0, 80.0],             # pinger range from the boat at the first ping
    "range_bins_m": [30.0, 45.0, 60.0, 80.0],
    "speed_mps": 1.5,
    "ping_interval_s": 2.0,
    "heading_offset_deg": 60.0,          # the boat's heading at most this far off the pinger's bearing
    "yaw_rate_radps": 0.1,               # constant yaw rate drawn in [-this, this]
    "hydrophones_body_m": [[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]],     # x_m forward, y_m right (FRD)
    "sound_speed_mps": 1482.0,
    "timing_sigma_s": 2e-6,
    "pose_sigma_m": 0.0,                 # error of the pose the locator is given (the EKF's), per ping
    "yaw_sigma_rad": 0.0,
    "pings": [1, 3, 10],
    "outlier_prob": 0.2,
    "outlier_pings": 10,
    "ransac": {"iterations": 200, "inlier_sigmas": 3.0, "max_range_m": 500.0},
    "max_ratio": 0.25,
    "max_outlier_error_m": 1.0,
    "success_min_range_m": 30.0,         # the 1 vs 3 pings acceptance counts the trials at this range or more
    "placement": {
        "trials": 60,
        "pings": 3,
        "deck_length_m": 4.9,
        "deck_width_m": 2.4,
        "lengths_m": [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 4.9],
        "widths_m": [0.4, 0.8, 1.2, 1.6, 2.0, 2.4],
    },
    "workers": 1,
}


def _layout_list(v):
    return isinstance(v, list) and len(v) >= 2 and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, (int, float)) and math.isfinite(x) for x in p)
        for p in v)


SETTING_RANGES = {
    "trials": int_at_least(3),
    "range_m": pair(within(1.0, 400.0), ordered=True),
    "range_bins_m": non_empty_list(within(0.0, 1000.0)),
    "speed_mps": within(0.0, 10.0),
    "ping_interval_s": within(0.1, 60.0),
    "heading_offset_deg": within(0.0, 180.0),
    "yaw_rate_radps": within(0.0, 1.0),
    "hydrophones_body_m": ("a list of >= 2 [x_m, y_m] pairs", _layout_list),
    "sound_speed_mps": within(1000.0, 2000.0),
    "timing_sigma_s": within(1e-9, 1e-3),
    "pose_sigma_m": within(0.0, 10.0),
    "yaw_sigma_rad": within(0.0, 0.5),
    "pings": non_empty_list(int_at_least(1)),
    "outlier_prob": within(0.0, 0.5),
    "outlier_pings": int_at_least(3),
    "ransac.iterations": int_at_least(1),
    "ransac.inlier_sigmas": within(0.5, 20.0),
    "ransac.max_range_m": POSITIVE,
    "max_ratio": POSITIVE,
    "max_outlier_error_m": POSITIVE,
    "success_min_range_m": within(0.0, 400.0),
    "placement.trials": int_at_least(0),
    "placement.pings": int_at_least(1),
    "placement.deck_length_m": POSITIVE,
    "placement.deck_width_m": POSITIVE,
    "placement.lengths_m": non_empty_list(within(0.0, 100.0)),
    "placement.widths_m": non_empty_list(within(0.01, 100.0)),
    "workers": int_at_least(1),
}
# a few seconds: 40 trials, a 3 x 3 layout grid over 12 trials
REDUCED = {"trials": 40, "placement": {"trials": 12, "lengths_m": [0.0, 2.0, 4.9], "widths_m": [0.8, 1.6, 2.4]}}

TRIAL_TOPIC = "/pinger/trial"
LAYOUT_TOPIC = "/pinger/layout"


def check_settings(config):
    if 1 not in config["pings"] or 3 not in config["pings"]:
        raise ConfigError("boat-pinger: pings (%s) must include 1 and 3 (the acceptance compares them)"
                          % config["pings"])
    if config["range_m"][1] < config["success_min_range_m"]:
        raise ConfigError("boat-pinger: range_m (%s) ends below success_min_range_m (%s): no trial would count "
                          "for the acceptance" % (config["range_m"], config["success_min_range_m"]))
    # every trial locates from one ping: the layout must give a fix from one ping (>= 3 distinct hydrophones,
    # not all on one line), else the first trial's locator raises mid-run: the locator's own check decides
    try:
        pg.checked_inputs(np.zeros((1, len(config["hydrophones_body_m"]) - 1)), np.zeros((1, 3)),
                    config["hydrophones_body_m"], config["sound_speed_mps"], config["timing_sigma_s"])
    except pg.LocatorError as exc:
        raise ConfigError("boat-pinger: hydrophones_body_m %s gives no fix from one ping (%s)"
                          % (config["hydrophones_body_m"], exc))
    p = config["placement"]
    for key, limit in (("lengths_m", p["deck_length_m"]), ("widths_m", p["deck_width_m"])):
        if max(p[key]) > limit + 1e-9:
            raise ConfigError("boat-pinger: placement.%s reaches %g m, beyond the deck (%g m)" % (key, max(p[key]),
                                                                                               limit))


# ---------------------------------------------------------------------------------------------- one trial
def trial_path(seed, cfg, count):
    """``(pinger_ne_m, poses, range_m)`` of one trial: the pinger at a seeded range and bearing from the
    boat's start (0, 0), and ``count`` boat poses (north_m, east_m, yaw_rad) one ping interval apart on a
    constant-speed, constant-yaw-rate path (exact arcs)."""
    rng = RunRandom(seed).stream("pinger_geometry")
    range_m = rng.uniform(*cfg["range_m"])
    bearing = rng.uniform(-math.pi, math.pi)
    yaw = bearing + math.radians(cfg["heading_offset_deg"]) * rng.uniform(-1.0, 1.0)
    rate = cfg["yaw_rate_radps"] * rng.uniform(-1.0, 1.0)
    pinger = np.array([range_m * math.cos(bearing), range_m * math.sin(bearing)])
    dt = cfg["ping_interval_s"]
    v = cfg["speed_mps"]
    poses = np.zeros((count, 3))
    n = e = 0.0
    for i in range(count):
        poses[i] = (n, e, yaw)
        if abs(rate) > 1e-9:
            n += v / rate * (math.sin(yaw + rate * dt) - math.sin(yaw))
            e += v / rate * (math.cos(yaw) - math.cos(yaw + rate * dt))
        else:
            n += v * dt * math.cos(yaw)
            e += v * dt * math.sin(yaw)
        yaw += rate * dt
    return pinger, poses, float(range_m)


def _seen(seed, cfg, poses):
    """The poses the locator is given: the true ones plus the estimator's error (``pose_sigma_m`` per axis,
    ``yaw_sigma_rad``), drawn independently per ping."""
    noise = RunRandom(seed).stream("pose_error").normal(0.0, 1.0, size=poses.shape)
    return poses + noise * np.array([cfg["pose_sigma_m"], cfg["pose_sigma_m"], cfg["yaw_sigma_rad"]])


def _pings(seed, cfg, body, pinger, poses, stream, outlier_prob):
    """Time differences (pings x (K - 1)) and the multipath hydrophone per ping (-1: none)."""
    hyd = Hydrophones(body, {"sound_speed_mps": cfg["sound_speed_mps"], "timing_sigma_s": cfg["timing_sigma_s"],
                             "outlier_prob": outlier_prob}, RunRandom(seed).stream(stream))
    out = [hyd.ping(pinger, p) for p in poses]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def _locate(cfg, tdoa, poses, body, seed):
    r = cfg["ransac"]
    return pg.locate(tdoa, poses, body, sound_speed_mps=cfg["sound_speed_mps"], timing_sigma_s=cfg["timing_sigma_s"],
                     inlier_sigmas=r["inlier_sigmas"], iterations=r["iterations"], max_range_m=r["max_range_m"],
                     seed=seed)


def _err(fix, pinger):
    return float(math.hypot(fix.north_m - pinger[0], fix.east_m - pinger[1]))


def run_job(job):
    """One sweep job: ``("trial", seed, cfg)`` -> errors for every ping count and the outlier case;
    ``("layout", seed, cfg, body)`` -> the placement objective's error for one layout and trial."""
    kind, seed, cfg = job[0], job[1], job[2]
    if kind == "layout":
        body = np.asarray(job[3], dtype=float)
        count = cfg["placement"]["pings"]
        pinger, poses, range_m = trial_path(seed, cfg, count)
        tdoa, _w = _pings(seed, cfg, body, pinger, poses, "hydrophones", 0.0)
        try:
            return {"seed": seed, "error_m": _err(_locate(cfg, tdoa, _seen(seed, cfg, poses), body, seed), pinger)}
        except pg.LocatorError:
            return {"seed": seed, "error_m": None}
    body = np.asarray(cfg["hydrophones_body_m"], dtype=float)
    count = max(max(cfg["pings"]), cfg["outlier_pings"])
    pinger, poses, range_m = trial_path(seed, cfg, count)
    tdoa, _w = _pings(seed, cfg, body, pinger, poses, "hydrophones", 0.0)
    seen = _seen(seed, cfg, poses)
    errors = {}
    fixes = {}
    for n in cfg["pings"]:
        fix = _locate(cfg, tdoa[:n], seen[:n], body, seed)
        errors[str(n)] = _err(fix, pinger)
        fixes[n] = fix
    m = cfg["outlier_pings"]
    otdoa, wrong = _pings(seed, cfg, body, pinger, poses[:m], "hydrophones_outliers", cfg["outlier_prob"])
    ofix = _locate(cfg, otdoa, seen[:m], body, seed)
    # a contour is spoilt when its hydrophone or the reference (0) heard the multipath arrival
    pairs = body.shape[0] - 1
    spoilt = np.zeros((m, pairs), dtype=bool)
    for i, w in enumerate(wrong):
        if w == 0:
            spoilt[i, :] = True
        elif w > 0:
            spoilt[i, w - 1] = True
    return {"seed": seed, "range_m": range_m, "errors_m": errors, "outlier_error_m": _err(ofix, pinger),
            "outlier_pings": int((wrong >= 0).sum()), "spoilt_contours": int(spoilt.sum()),
            "spoilt_rejected": int((spoilt & ~ofix.inlier_mask).sum()),
            "clean_contours": int((~spoilt).sum()), "clean_kept": int((~spoilt & ofix.inlier_mask).sum()),
            "sigma_3_m": float(math.sqrt(np.trace(fixes[3].covariance_m2))) if 3 in fixes else None,
            "inside_3sigma_3": bool(_inside(fixes[3], pinger)) if 3 in fixes else None}


def _inside(fix, pinger, chi2_95_2dof=5.991):
    """Whether the pinger lies inside the fix's 95 % covariance ellipse."""
    e = np.array([pinger[0] - fix.north_m, pinger[1] - fix.east_m])
    try:
        return float(e @ np.linalg.solve(fix.covariance_m2, e)) <= chi2_95_2dof
    except np.linalg.LinAlgError:
        return False


def layouts(placement):
    """The candidate layouts: ``[(length_m, width_m, body_xy)]`` for the triangle family of the docstring."""
    out = []
    for L in placement["lengths_m"]:
        for W in placement["widths_m"]:
            out.append((float(L), float(W), [[L / 2.0, 0.0], [0.0 - L / 2.0, 0.0 - W / 2.0], [0.0 - L / 2.0, W / 2.0]]))
    return out


def _median(values):
    vals = [v for v in values if v is not None]
    return float(np.median(vals)) if vals else None


# ---------------------------------------------------------------------------------------------- run
def run(config, ctx):
    wall0 = time.perf_counter()
    cfg = {k: v for k, v in config.items() if k != "workers"}
    seeds = [ctx.seed * 100000 + k for k in range(config["trials"])]
    lay = layouts(config["placement"])
    pseeds = seeds[:config["placement"]["trials"]] if config["placement"]["trials"] <= len(seeds) else \
        [ctx.seed * 100000 + k for k in range(config["placement"]["trials"])]
    jobs = [("trial", s, cfg) for s in seeds]
    jobs += [("layout", s, cfg, body) for (_L, _W, body) in lay for s in pseeds]
    results = ctx.map(run_job, jobs, config["workers"], "boat-pinger", unit="fixes")
    solve_wall = time.perf_counter() - wall0
    trials = results[:len(seeds)]
    lay_res = results[len(seeds):]

    for k, t in enumerate(trials):
        ctx.log(TRIAL_TOPIC, k, {"seed": t["seed"], "range_m": t["range_m"], "errors_m": t["errors_m"],
                                 "outlier_error_m": t["outlier_error_m"], "outlier_pings": t["outlier_pings"]})
    ranges = np.array([t["range_m"] for t in trials])
    errors = {str(n): np.array([t["errors_m"][str(n)] for t in trials]) for n in config["pings"]}
    far = ranges >= config["success_min_range_m"]
    med = {n: float(np.median(e[far])) if far.any() else None for n, e in errors.items()}
    ratio = med["3"] / med["1"] if far.any() and med["1"] > 0 else None
    by_range = []
    bins = sorted(config["range_bins_m"])
    for lo, hi in zip(bins[:-1], bins[1:]):
        sel = (ranges >= lo) & (ranges < hi) if hi < bins[-1] else (ranges >= lo) & (ranges <= hi)
        row = {"range_m": [lo, hi], "trials": int(sel.sum())}
        for n, e in errors.items():
            row["median_error_%s_pings_m" % n] = float(np.median(e[sel])) if sel.any() else None
        if sel.any() and row["median_error_1_pings_m"] > 0:
            row["ratio_3_to_1"] = row["median_error_3_pings_m"] / row["median_error_1_pings_m"]
        by_range.append(row)
    oerr = np.array([t["outlier_error_m"] for t in trials])
    spoilt = sum(t["spoilt_contours"] for t in trials)
    clean = sum(t["clean_contours"] for t in trials)
    outliers = {
        "pings": config["outlier_pings"], "outlier_prob": config["outlier_prob"],
        "outlier_pings_drawn": int(sum(t["outlier_pings"] for t in trials)),
        "median_error_m": float(np.median(oerr)), "p95_error_m": float(np.percentile(oerr, 95)),
        "clean_median_error_m": med.get(str(config["outlier_pings"])),
        "spoilt_contours": int(spoilt),
        "spoilt_rejected_fraction": float(sum(t["spoilt_rejected"] for t in trials) / spoilt) if spoilt else None,
        "clean_kept_fraction": float(sum(t["clean_kept"] for t in trials) / clean) if clean else None,
    }
    cover = [t["inside_3sigma_3"] for t in trials if t["inside_3sigma_3"] is not None]

    table = []
    per = len(pseeds)
    for k, (L, W, body) in enumerate(lay):
        errs = [r["error_m"] for r in lay_res[k * per:(k + 1) * per]]
        row = {"length_m": L, "width_m": W, "hydrophones_body_m": body,
               "median_error_m": _median(errs), "failed_fixes": int(sum(e is None for e in errs))}
        table.append(row)
        ctx.log(LAYOUT_TOPIC, k, row)
    ranked = [r for r in table if r["median_error_m"] is not None]
    best = min(ranked, key=lambda r: r["median_error_m"]) if ranked else None
    placement = {
        "trials": per, "pings": config["placement"]["pings"],
        "deck_m": [config["placement"]["deck_length_m"], config["placement"]["deck_width_m"]],
        "layouts": table, "best": best,
        "best_on_boundary": bool(best is not None and (
            best["length_m"] in (min(config["placement"]["lengths_m"]), max(config["placement"]["lengths_m"]))
            or best["width_m"] in (min(config["placement"]["widths_m"]), max(config["placement"]["widths_m"])))),
    }
    ctx.timing(wall_s=time.perf_counter() - wall0, solve_wall_s=solve_wall, fixes=len(jobs),
               ms_per_job=1000.0 * solve_wall / max(len(jobs), 1), workers=config["workers"])

    ratio_ok = ratio is not None and ratio <= config["max_ratio"]
    outlier_ok = outliers["median_error_m"] <= config["max_outlier_error_m"]
    _plots(ctx, config, trials, errors, ranges, table, best)
    return {
        "success": bool(ratio_ok and outlier_ok),
        "trials": len(trials),
        "hydrophones_body_m": config["hydrophones_body_m"],
        "timing_sigma_s": config["timing_sigma_s"],
        "median_error_m": {n: v for n, v in med.items()},
        "ratio_3_to_1": ratio,
        "ratio_ok": bool(ratio_ok),
        "by_range": by_range,
        "covariance_95_coverage_3_pings": float(np.mean(cover)) if cover else None,
        "outliers": outliers,
        "outlier_ok": bool(outlier_ok),
        "placement": placement,
    }


# ---------------------------------------------------------------------------------------------- plots
def _ellipse(ax, fix, color, text):
    vals, vecs = np.linalg.eigh(fix.covariance_m2)
    ang = np.linspace(0.0, 2.0 * math.pi, 100)
    pts = (vecs @ (np.sqrt(np.maximum(vals, 0.0))[:, None] * np.stack([np.cos(ang), np.sin(ang)])))
    ax.plot(fix.east_m + pts[1], fix.north_m + pts[0], "-", color=color, linewidth=1.0, label=text)


def _contour_panel(ax, config, body, pinger, poses, tdoa, fix, title):
    colors = ["tab:blue", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
    span = max(np.hypot(*(pinger - poses[0, :2])) * 1.3, 20.0)
    centre = 0.5 * (pinger + poses[0, :2])
    c = config["sound_speed_mps"]
    t = np.linspace(-8.0, 8.0, 1600)
    for i in range(poses.shape[0]):
        h = pg.hydrophones_world(poses[i], body)
        col = colors[i % len(colors)]
        for k in range(1, h.shape[0]):
            f = 0.5 * np.hypot(*(h[k] - h[0]))
            d = np.clip(c * tdoa[i, k - 1], -0.999 * 2 * f, 0.999 * 2 * f)
            pts = pg.contour_points(h[k], h[0], d, t)
            keep = np.hypot(*(pts - centre).T) < span
            pts = np.where(keep[:, None], pts, np.nan)
            ax.plot(pts[:, 1], pts[:, 0], "-", color=col, linewidth=0.9,
                    label="contours of ping %d" % (i + 1) if k == 1 else "_nolegend_")
        ax.plot(h[:, 1], h[:, 0], ".", color="black", markersize=3,
                label="hydrophones" if i == 0 else "_nolegend_")
    ax.plot(poses[:, 1], poses[:, 0], "^", color="gray", label="boat at each ping")
    ax.plot([pinger[1]], [pinger[0]], "o", color="red", label="pinger (truth)")
    ax.plot([fix.east_m], [fix.north_m], "x", color="green", markersize=10, mew=2, label="RANSAC estimate")
    _ellipse(ax, fix, "green", "1-sigma covariance")
    ax.set_xlim(centre[1] - span, centre[1] + span)
    ax.set_ylim(centre[0] - span, centre[0] + span)
    ax.set_aspect("equal", adjustable="box")
    label(ax, title, "east (m)", "north (m)")


def _plots(ctx, config, trials, errors, ranges, table, best):
    if ctx.report is None:
        return
    cfg = {k: v for k, v in config.items() if k != "workers"}
    body = np.asarray(config["hydrophones_body_m"], dtype=float)
    seed = trials[0]["seed"]
    pinger, poses, range_m = trial_path(seed, cfg, 3)
    tdoa, _w = _pings(seed, cfg, body, pinger, poses, "hydrophones", 0.0)
    poses = _seen(seed, cfg, poses)
    fig, (a, b) = figure(1, 2, title="RANSAC pinger fix at %.0f m (robotx figs. 7-8)" % range_m, size_in=(13, 6.4))
    f1 = _locate(cfg, tdoa[:1], poses[:1], body, seed)
    f3 = _locate(cfg, tdoa, poses, body, seed)
    _contour_panel(a, config, body, pinger, poses[:1], tdoa[:1], f1,
                   "one ping: error %.1f m" % math.hypot(f1.north_m - pinger[0], f1.east_m - pinger[1]))
    _contour_panel(b, config, body, pinger, poses, tdoa, f3,
                   "three pings, three poses: error %.2f m" % math.hypot(f3.north_m - pinger[0], f3.east_m - pinger[1]))
    ctx.report.save_figure(fig, "pinger_contours")

    fig, (a, b) = figure(1, 2, title="boat-pinger: %d seeded trials" % len(trials))
    marks = {"1": ("o", "tab:red"), "3": ("s", "tab:blue")}
    for n, e in errors.items():
        mk, col = marks.get(n, ("^", "tab:green"))
        a.semilogy(ranges, np.maximum(e, 1e-3), mk, color=col, markersize=3, linestyle="none",
                   label="%s ping%s" % (n, "" if n == "1" else "s"))
    a.semilogy(ranges, np.maximum([t["outlier_error_m"] for t in trials], 1e-3), "v", color="black", markersize=3,
               linestyle="none", label="%d pings, %.0f %% outlier pings" % (config["outlier_pings"],
                                                                             100 * config["outlier_prob"]))
    label(a, "fix error against range", "pinger range at the first ping (m)", "error (m, log)")
    ns = list(errors)
    meds = [float(np.median(errors[n])) for n in ns]
    a2 = b
    a2.bar(range(len(ns)), meds, color="tab:blue", label="median error, clean pings")
    a2.bar([len(ns)], [float(np.median([t["outlier_error_m"] for t in trials]))], color="black",
           label="median error, %.0f %% outlier pings" % (100 * config["outlier_prob"]))
    a2.set_xticks(range(len(ns) + 1))
    a2.set_xticklabels(["%s ping%s" % (n, "" if n == "1" else "s") for n in ns]
                       + ["%d pings" % config["outlier_pings"]])
    a2.set_yscale("log")
    label(a2, "median error against the number of pings", "pings per fix", "median error (m, log)")
    ctx.report.save_figure(fig, "pinger_errors")

    lengths = sorted({r["length_m"] for r in table})
    widths = sorted({r["width_m"] for r in table})
    grid = np.full((len(lengths), len(widths)), np.nan)
    for r in table:
        if r["median_error_m"] is not None:
            grid[lengths.index(r["length_m"]), widths.index(r["width_m"])] = r["median_error_m"]
    fig, (a, b) = figure(1, 2, title="Hydrophone placement on the %g x %g m deck (objective: median %d-ping error)"
                         % (config["placement"]["deck_length_m"], config["placement"]["deck_width_m"],
                            config["placement"]["pings"]))
    im = a.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
    a.set_xticks(range(len(widths)))
    a.set_xticklabels(["%g" % w for w in widths])
    a.set_yticks(range(len(lengths)))
    a.set_yticklabels(["%g" % L for L in lengths])
    cb = fig.colorbar(im, ax=a)
    cb.set_label("median error (m)")
    if best is not None:
        a.plot([widths.index(best["width_m"])], [lengths.index(best["length_m"])], "*", color="red", markersize=14,
               label="best layout")
    label(a, "layout sweep (triangle: bow + two aft)", "aft spacing W (m)", "bow-aft length L (m)")
    L, W = config["placement"]["deck_length_m"], config["placement"]["deck_width_m"]
    b.plot([-W / 2, W / 2, W / 2, -W / 2, -W / 2], [-L / 2, -L / 2, L / 2, L / 2, -L / 2], "-", color="gray",
           label="deck outline")
    if best is not None:
        bb = np.array(best["hydrophones_body_m"])
        b.plot(bb[:, 1], bb[:, 0], "o", color="red", label="best layout (%.2f m)" % best["median_error_m"])
    cur = np.array(config["hydrophones_body_m"])
    b.plot(cur[:, 1], cur[:, 0], "s", color="tab:blue", fillstyle="none", label="layout of the study")
    b.set_aspect("equal", adjustable="datalim")
    label(b, "hydrophones on the deck (body frame)", "y right (m)", "x forward (m)")
    ctx.report.save_figure(fig, "pinger_layouts")
