"""Scenario `soil-blind-map`: blind mapping alone (LIDAR off) against the truth heightmap, the soil paper's
Fig. 10 (section 3): the loader cuts its lanes over mixture-of-Gaussians terrain, the onboard map follows
the blade from the measured kinematics only (Algs. 1-3, 5), and its height error against the truth surface
is split into the cut interior, the cut edges and the deposit, with the map's volume error.

Cases (``cases``): ``matched``, the world's loose soil flowing by the onboard erosion model and settings
(eq. 12 with the paper's c_l = 25 Pa, phi_l = 0.26 rad); ``mismatched``, the paper's case: the world's
loose soil flows by another law at its own repose (``mismatch``: the "repose" model at 0.6 rad, its pile
too) while the map keeps the paper's fixed settings. Both cases run the same seed (the same terrain, the
same operator). Once the last lane is done the blade has left and the loose soil comes to rest: the world
and the map each run ``settle_iterations`` passes of their own erosion; then the map is compared with the
truth (zones and volumes: ``harness.scenarios.soil.soil_episode.map_errors``).

Acceptance (reading aid notes H5, our thresholds): matched, interior MAE <= ``acceptance.interior_of_depth``
of the mean cut depth and volume error <= ``acceptance.volume_error_pct``; mismatched, edge and deposit MAE
each >= ``acceptance.concentration`` x the interior MAE. Plots: the height error map of each case and the
MAE per zone. Log (the first case): the machine's samples (``/loader/machine``), the operator's commands
(``/loader/cmd``), the truth (``/loader/truth``) and every sweep of the map (``/soil/sweep``).

LIDAR (``lidar``: the front and rear single-beam LIDARs of ``harness.sim.soil_lidar``, off by default so the
blind-mapping results above are unchanged): with ``lidar.enabled`` every case is also run with the LIDARs
on (same seed, same world and operator: the LIDARs draw only from their own streams), their scans fused
into the map where the beams see (``onboard.soil.lidar_map``), and ``metrics["lidar"][case]`` holds both
maps' height errors over the same zones (those of the map without, as in the blind-mapping figures),
overall and split into the cells the LIDARs saw last (``seen``: the map's final height there is the one
its last fused LIDAR return left, blind mapping has not changed it since; the truth may have, e.g. a pile
pushed over ground the front LIDAR saw before) and the others, with the fusion's counters. The LIDAR
acceptance (``lidar_acceptance``): in the seen cells of the edges and of the deposit the MAE with the
LIDARs is at most ``seen_mae_ratio`` of the MAE without, judged where the LIDARs saw at least
``min_seen_cells`` cells of the zone last (a short run's few cells are reported, not judged); every check of
the blind-mapping acceptance stays on the LIDAR-off runs. Plot ``lidar_map_error``: the map's error with the LIDARs and the MAE per
zone, seen cells, off and on.
"""
import time

import numpy as np

from harness.config import NON_NEGATIVE, POSITIVE, ConfigError, int_at_least, non_empty_list, one_of, under, within
from harness.report.plots import figure, label
from harness.scenarios.soil import soil_episode as ep
from harness.sim import soil_lidar
from harness.sim.rng import RunRandom
from harness.sim.track_loader import lanes_duration_s

DESCRIPTION = ("soil paper fig. 10: blind mapping alone (LIDAR off) vs the truth heightmap, matched / mismatched "
               "erosion; with lidar.enabled also with the front/rear LIDARs fused, on vs off")

CASES = ("matched", "mismatched")
DEFAULTS = {
    "cases": ["matched", "mismatched"],
    "mismatch": {"erosion_model": "repose", "repose_rad": 0.6},   # the world's loose soil in case mismatched
    "edge_cells": 2,                  # cells either side of the cut's border that are its edges
    "settle_iterations": 0,           # erosion passes of the world and the map once the blade has left
    "acceptance": {"interior_of_depth": 0.10, "volume_error_pct": 1.0, "concentration": 2.0},
    "lidar": soil_lidar.DEFAULTS,     # the front/rear LIDARs; enabled: each case also run with them on
    "lidar_acceptance": {"seen_mae_ratio": 1.0, "min_seen_cells": 100},
    "episode": ep.episode_defaults(
        terrain={"relief": {"count": 5, "height_m": [-0.15, 0.15], "sigma_m": [1.5, 3.0]}},
        app={"estimation": False}),
}
SETTING_RANGES = {
    "cases": non_empty_list(one_of(*CASES)), "mismatch.erosion_model": one_of("eq12", "repose"),
    "mismatch.repose_rad": within(0.05, 1.4), "edge_cells": int_at_least(1), "settle_iterations": int_at_least(0),
    "acceptance.interior_of_depth": POSITIVE, "acceptance.volume_error_pct": NON_NEGATIVE,
    "acceptance.concentration": POSITIVE, "lidar_acceptance.seen_mae_ratio": POSITIVE,
    "lidar_acceptance.min_seen_cells": int_at_least(1)}
SETTING_RANGES.update(under("episode", ep.SETTING_RANGES))
SETTING_RANGES.update(under("lidar", soil_lidar.SETTING_RANGES))

# a run of a few seconds (`run --reduced`): one 3 m lane per case on a small world
REDUCED = {"episode": {"world": {"size_m": [8.0, 5.0]}, "terrain": {"relief": {"count": 2}},
                       "loader": {"operator": {"lanes": {"count": 1, "length_m": 3.0}}}}}


def check_settings(config):
    if len(set(config["cases"])) != len(config["cases"]):
        raise ConfigError("setting config.cases lists a case twice: %s" % config["cases"])
    ep.check_episode(config["episode"])


def case_config(config, case):
    """The episode settings of ``case``: as configured (matched), or the world's loose soil replaced by
    ``mismatch`` (its erosion law and repose, its pile's repose)."""
    episode = ep.merge_blocks(config["episode"], {})
    if case == "mismatched":
        m = config["mismatch"]
        episode["terrain"] = ep.merge_blocks(episode["terrain"], {
            "erosion": {"model": m["erosion_model"], "repose_rad": m["repose_rad"]},
            "loose": {"friction_rad": m["repose_rad"]} if m["erosion_model"] == "eq12" else {},
            "pile": {"repose_rad": m["repose_rad"]}})
    return episode


def settle(episode, iterations):
    """Once the blade has left, the loose soil of the world and of the onboard map comes to rest: each runs
    ``iterations`` passes of its own erosion over the whole grid (the map: Alg. 5 with its settings)."""
    if iterations <= 0:
        return
    world, grid = episode.world, episode.grid
    world.terrain.settle(iterations)
    centre = (grid.origin_n_m + 0.5 * grid.n_north * grid.cell_m, grid.origin_e_m + 0.5 * grid.n_east * grid.cell_m)
    episode.app.part("mapping").mapper.settle(centre, 0.5 * max(grid.n_north, grid.n_east) * grid.cell_m + grid.cell_m,
                                              iterations)


SEEN_TOL_M = 1e-3       # a cell's height this close to its last LIDAR-fused height: the LIDAR had the last word


def _zone_error(err, mask):
    e = err[mask]
    return {"cells": int(mask.sum()), "mae_m": float(np.mean(np.abs(e))) if e.size else None,
            "p95_m": float(np.percentile(np.abs(e), 95)) if e.size else None}


def lidar_comparison(off, on, edge_cells=2):
    """The height errors of the map without (``off``) and with (``on``) the LIDARs (two episodes of the same
    seed) over the same zones, the blind map's (``soil_episode.map_zones`` of the map without); per zone
    {"off", "on"} over all its cells, over the cells the LIDARs saw last (``seen``: the final height within
    ``SEEN_TOL_M`` of the one the cell's last fused return left) and over the others (``unseen``);
    ``seen_fraction``, the ``on`` run's whole ``map_errors`` and the fusion's counters."""
    from onboard.soil.lidar_map import LIDAR_HEIGHT, LIDAR_POINTS
    truth = off.world.final_surface_m()
    if not np.array_equal(truth, on.world.final_surface_m()):
        raise RuntimeError("soil-blind-map: the LIDAR run's truth differs from the run without (same seed)")
    h_off, h_on = ep.map_heights(off.grid), ep.map_heights(on.grid)
    zones = ep.map_zones(off.world, h_off, edge_cells)
    shape = (on.grid.n_north, on.grid.n_east)
    last = np.array(on.grid.layer(LIDAR_HEIGHT)).reshape(shape)
    points = np.array(on.grid.layer(LIDAR_POINTS)).reshape(shape)
    seen = (points > 0) & (np.abs(h_on - np.nan_to_num(last)) <= SEEN_TOL_M)
    out = {}
    for name, mask in zones.items():
        row = {"seen_fraction": float(seen[mask].mean()) if mask.any() else 0.0}
        for part, sel in (("all", mask), ("seen", mask & seen), ("unseen", mask & ~seen)):
            row[part] = {"off": _zone_error(h_off - truth, sel), "on": _zone_error(h_on - truth, sel)}
        out[name] = row
    out["map_errors_on"] = ep.map_errors(on, edge_cells)
    out["counters"] = on.app.part("mapping").lidar.counters()
    return out


def run(config, ctx):
    results = {}
    lidar_results = {}
    episodes = {}
    episodes_on = {}
    for k, case in enumerate(config["cases"]):
        episode_cfg = case_config(config, case)
        progress = ctx.progress(lanes_duration_s(episode_cfg["loader"]["operator"]), "soil-blind-map %s" % case)
        log = ctx.log if (k == 0 and ctx.report is not None) else None
        t0 = time.perf_counter()
        e = ep.run_episode(episode_cfg, RunRandom(ctx.seed), log=log, progress=progress, record=log)
        progress.close()
        settle(e, config["settle_iterations"])
        ctx.timing(**{"%s_wall_s" % case: time.perf_counter() - t0,
                      "%s_blind_map_ms_per_sweep" % case: e.timing["blind_map_ms_per_sweep"]})
        errors = ep.map_errors(e, config["edge_cells"])
        errors["sweeps"] = e.app.part("mapping").mapper.sweeps
        errors["sim_time_s"] = e.sim_s
        results[case] = errors
        episodes[case] = e
        if config["lidar"]["enabled"]:
            progress = ctx.progress(lanes_duration_s(episode_cfg["loader"]["operator"]),
                                    "soil-blind-map %s lidar" % case)
            t0 = time.perf_counter()
            e_on = ep.run_episode(episode_cfg, RunRandom(ctx.seed), progress=progress, lidar=config["lidar"])
            progress.close()
            settle(e_on, config["settle_iterations"])
            ctx.timing(**{"%s_lidar_wall_s" % case: time.perf_counter() - t0,
                          "%s_lidar_fusion_wall_s" % case: e_on.timing["lidar_fusion_wall_s"]})
            lidar_results[case] = lidar_comparison(e, e_on, config["edge_cells"])
            episodes_on[case] = e_on
    acc = config["acceptance"]
    checks = {}
    if "matched" in results:
        m = results["matched"]
        checks["matched_interior"] = m["interior_mae_of_depth"] is not None and \
            m["interior_mae_of_depth"] <= acc["interior_of_depth"]
        checks["matched_volume"] = m["volume_error_pct"] <= acc["volume_error_pct"]
    if "mismatched" in results:
        m = results["mismatched"]
        checks["mismatched_concentrated"] = all(
            m[key] is not None and m[key] >= acc["concentration"] for key in ("edges_over_interior",
                                                                              "deposit_over_interior"))
    if lidar_results:
        ratio = config["lidar_acceptance"]["seen_mae_ratio"]
        for case, row in lidar_results.items():
            for zone in ("edges", "deposit"):
                seen = row[zone]["seen"]
                if seen["off"]["cells"] < config["lidar_acceptance"]["min_seen_cells"]:
                    continue
                checks["lidar_%s_%s_seen" % (case, zone)] = seen["off"]["mae_m"] is not None and \
                    seen["on"]["mae_m"] <= ratio * seen["off"]["mae_m"]
    metrics = dict(results)
    if lidar_results:
        metrics["lidar"] = lidar_results
    metrics["acceptance"] = checks
    metrics["success"] = bool(checks) and all(checks.values())
    if ctx.report is not None:
        _plots(ctx.report, episodes, results)
        if lidar_results:
            _lidar_plots(ctx.report, episodes_on, lidar_results)
    return metrics


def _lidar_plots(report, episodes_on, lidar_results):
    cases = list(episodes_on)
    fig, axes = figure(1, len(cases) + 1, title="With the front/rear LIDARs: onboard map - truth surface")
    axes = np.atleast_1d(axes)
    for ax, case in zip(axes, cases):
        _error_map(ax, episodes_on[case], "%s erosion, LIDARs on" % case)
    ax = axes[-1]
    zones = ("interior", "edges", "deposit")
    x = np.arange(len(zones))
    bars = [(case, side) for case in cases for side in ("off", "on")]
    width = 0.8 / len(bars)
    for k, (case, side) in enumerate(bars):
        mae = [lidar_results[case][z]["seen"][side]["mae_m"] for z in zones]
        ax.bar(x + (k - 0.5 * (len(bars) - 1)) * width, [0.0 if v is None else 1e3 * v for v in mae], width,
               label="%s, LIDAR %s" % (case, side))
    ax.set_xticks(x)
    ax.set_xticklabels(zones)
    label(ax, "MAE in the cells the LIDARs saw last", "zone", "MAE (mm)")
    report.save_figure(fig, "lidar_map_error")


def _error_map(ax, episode, title):
    """The episode's onboard map minus the truth surface [m] as an image on ``ax`` (colour limits: the 99th
    percentile of |error|)."""
    g = episode.grid
    err = ep.map_heights(g) - episode.world.final_surface_m()
    lim = max(float(np.percentile(np.abs(err), 99)), 1e-3)
    im = ax.imshow(err, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                   extent=(0.0, g.n_east * g.cell_m, 0.0, g.n_north * g.cell_m))
    bar = ax.figure.colorbar(im, ax=ax)
    bar.set_label("map - truth height (m)")
    label(ax, title, "east (m)", "north (m)")


def _plots(report, episodes, results):
    cases = list(episodes)
    fig, axes = figure(1, len(cases) + 1, title="Blind mapping alone: onboard map - truth surface (soil paper fig. 10)")
    axes = np.atleast_1d(axes)
    for ax, case in zip(axes, cases):
        _error_map(ax, episodes[case], "%s erosion" % case)
    ax = axes[-1]
    zones = ("interior", "edges", "deposit")
    x = np.arange(len(zones))
    width = 0.8 / len(cases)
    for k, case in enumerate(cases):
        ax.bar(x + (k - 0.5 * (len(cases) - 1)) * width, [1e3 * results[case][z]["mae_m"] for z in zones], width,
               label=case)
    ax.set_xticks(x)
    ax.set_xticklabels(zones)
    label(ax, "height MAE per zone", "zone", "MAE (mm)")
    report.save_figure(fig, "blind_map_error")
