"""One soil-mapping episode end to end, the body of the soil scenarios: a track loader cuts lanes through a
soil world with hidden properties, its onboard app maps the blade-swept soil blind and estimates the soil
of every cut, and the results are scored against the truth.

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader" (Alg. 1: blind mapping feeds the estimator the FEE geometry per
sweep; section 3: blind mapping alone against the true heightmap, Fig. 10; section 3.1: estimates against
the pseudo ground truth, Fig. 11); reading aid ``shared/papers/notes/soil.md`` (sections 3 and 5.4: H3,
H5, H8).

:func:`run_episode`: the world (``harness.sim.soil_loader_world.LoaderWorld``: fields, terrain, loader and
operator) and the app (``onboard.soil.loader_app.loader_app``: blind mapping and per-cut estimation on a
``GridMap`` that starts from the truth surface and loose layer, as the paper's map starts from the
simulator's heightmap) on one clock; the machine's simulated sensors call the app's ``on_machine``. The
onboard map knows the machine (blade width and height) and the soil's loose state (swell, loose unit
weight: matched to the world); its erosion uses its own loose-soil settings (``app.blind_map.erosion``, the
paper's c_l = 25 Pa and phi_l = 0.26 rad), which match the world's unless the world's are changed.

Scores: :func:`score_estimates` (per property: bias, RMSE, RMSE normalised by the mean |truth|, the
fraction of cuts within 1 and 2 stated sigmas, the fraction flagged not identifiable; the force
prediction error in N and % of the mean |F|), where each cut's truth is the soil its blade failed (the
truth properties under the blade's strips in contact, averaged over the cut); :func:`map_errors` (the
onboard map's height error against the truth surface per zone: cut interior, cut edges, deposit; the
volume errors).
"""
import math
import time

import numpy as np

from harness.config import ConfigError, mounted
from harness.sim import soil_terrain, soil_world, track_loader
from harness.sim.soil_loader_world import COMMAND_TOPIC, LoaderWorld
from onboard.runtime.mcap_log import code_version
from onboard.soil import loader_app
from onboard.soil.fee import THETA_U_NAMES
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap
from onboard.soil.grid_map_numpy import load, view

EROSION = "numpy"       # the onboard map's erosion kernel (loader_app.erode_kernel)

# what the episode sets in the onboard map from the machine and the world (not user settings there)
MATCHED_KEYS = ("blade_width_m", "blade_height_m", "swell", "loose_unit_weight_npm3")


def merge_blocks(base, over):
    """A copy of settings ``base`` with ``over`` merged in, nested tables key by key (no checks)."""
    out = dict(base)
    for k, v in (over or {}).items():
        out[k] = merge_blocks(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


APP_DEFAULTS = merge_blocks({k: v for k, v in loader_app.DEFAULTS.items() if k != "blind_map"},
                      {"blind_map": {k: v for k, v in loader_app.DEFAULTS["blind_map"].items()
                                     if k not in MATCHED_KEYS}})
APP_DEFAULTS["blind_map"]["pile_length_m"] = 2.0
# the LIDAR fusion is switched on and given the mounts by the scanners run_episode is given (``lidar``)
APP_DEFAULTS["lidar"] = {k: v for k, v in loader_app.DEFAULTS["lidar"].items() if k not in ("enabled", "mounts")}

DEFAULTS = {
    "world": merge_blocks(soil_world.DEFAULTS, {"size_m": [16.0, 10.0]}),
    "terrain": merge_blocks(soil_terrain.DEFAULTS, {}),
    "loader": merge_blocks(track_loader.DEFAULTS, {"operator": {
        "random": {"enabled": True},
        "lanes": {"count": 3, "start_ne_m": [1.0, 2.0], "length_m": 8.0, "spacing_m": 2.5}}}),
    "app": APP_DEFAULTS,
}
SETTING_RANGES = mounted(DEFAULTS, ("world", soil_world.SETTING_RANGES), ("terrain", soil_terrain.SETTING_RANGES),
                         ("loader", track_loader.SETTING_RANGES), ("app", loader_app.SETTING_RANGES))
BLOCKS = tuple(DEFAULTS)


def episode_defaults(**blocks):
    """:data:`DEFAULTS` with ``blocks`` (e.g. ``loader={...}``) merged in: a scenario's episode defaults."""
    return {k: merge_blocks(DEFAULTS[k], blocks.get(k)) for k in DEFAULTS}


def check_episode(config, where="config"):
    """ConfigError (one line) for episode settings that are only wrong together: the world's fields and a
    user's field file are built (a malformed file is refused here, before anything runs)."""
    soil_world.build_fields(config["world"], np.random.default_rng(0))
    lc = config["app"]["layers"]
    if lc["enabled"] and lc["estimator"] == "learned":
        from onboard.soil.learned_estimator import LearnedEstimator, LearnedModelError
        try:
            LearnedEstimator(lc["learned_model"])
        except LearnedModelError as exc:
            raise ConfigError("setting config.episode.app.layers.learned_model: %s" % exc)


def machine_constants(loader_config):
    """The machine's constants the onboard force paths use (``onboard.soil.machine_forces``), from the
    loader's settings (a calibrated machine)."""
    b = loader_config["blade"]
    return {"mass_kg": loader_config["mass_kg"], "rolling_resistance": loader_config["rolling_resistance"],
            "sprocket_radius_m": loader_config["sprocket_radius_m"],
            "blade": {k: b[k] for k in ("offset_m", "pivot_m", "cylinder_arm_m", "cylinder_area_m2", "mass_kg")}}


class Episode:
    """What :func:`run_episode` leaves: ``world`` (the LoaderWorld: truth terrain, fields, loader), ``grid``
    (the onboard map), ``app`` (the Node), ``estimates`` (the estimation part's rows, each with its
    ``truth``), ``timing`` (wall-clock figures) and ``sim_s`` (simulated seconds)."""


def _timed(fn, acc, key):
    def wrapped(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += time.perf_counter() - t0
    return wrapped


def run_episode(config, random, log=None, progress=None, mcap=None, on_app=None, record=None, lidar=None):
    """Run one episode of ``config`` (:data:`DEFAULTS` layout, checked) drawn from ``random`` (a
    ``harness.sim.rng.RunRandom``); ``log``: the run's log; ``progress``: a progress bar (sim seconds);
    ``mcap``: the run's ``McapLog`` for Foxglove views (the soil layers as ``foxglove.Grid``), or None;
    ``on_app``: ``on_app(app, grid)`` before the run starts (e.g. to watch the app's parts); ``record``: a
    ``sink(topic, time_us, msg)`` the app records at its boundary into (``Node.record``, recipe
    ``loader_app.APP``: ``python -m harness replay`` rebuilds it), by default ``mcap.log`` when ``mcap`` is given;
    ``lidar``: the front/rear LIDARs' settings (``harness.sim.soil_lidar``; None or not ``enabled``: none), whose
    scans go to the app's entry point ``lidar`` (its fusion on, with the same mounts: a calibrated machine).
    Returns an :class:`Episode`."""
    t_start = time.perf_counter()
    world = LoaderWorld(config, random, log)
    terrain, loader = world.terrain, world.loader
    grid = GridMap({"size_m": list(config["world"]["size_m"]), "cell_m": config["world"]["cell_m"]})
    load(grid, ELEVATION, terrain.height_m)
    load(grid, LOOSE, terrain.loose_m)
    lcfg = loader.config
    app_cfg = merge_blocks(config["app"], {"blind_map": {
        "blade_width_m": lcfg["blade"]["width_m"], "blade_height_m": lcfg["blade"]["height_m"],
        "swell": terrain.swell, "loose_unit_weight_npm3": terrain.loose_unit_weight_npm3}})
    if lidar is not None and lidar["enabled"]:
        app_cfg["lidar"] = merge_blocks(app_cfg["lidar"], {"enabled": True, "mounts": lidar["mounts"]})
    view = None
    if mcap is not None:
        view = mcap.log_view
    machine = machine_constants(lcfg)
    app = loader_app.loader_app(grid, app_cfg, machine, loader_app.erode_kernel(EROSION), log=log, view=view)
    mapping = app.part("mapping")
    estimation = app.part("estimation") if app_cfg["estimation"] else None
    if estimation is not None and estimation.on_command is not None:
        _feed_commands(world, estimation.on_command)
    if on_app is not None:
        on_app(app, grid)
    if record is None and mcap is not None:
        record = mcap.log
    if record is not None:      # the starting surface: before the first sample
        app.record(record, loader_app.APP, loader_app.recipe_config(grid, app_cfg, machine, EROSION),
                   code_version(), world.clock.now_us())
    acc = {"map": 0.0, "estimate": 0.0, "lidar": 0.0}
    mapping.mapper.sweep = _timed(mapping.mapper.sweep, acc, "map")
    if mapping.lidar is not None:
        mapping.lidar.fuse = _timed(mapping.lidar.fuse, acc, "lidar")
    if estimation is not None:
        estimation.estimator.estimate = _timed(estimation.estimator.estimate, acc, "estimate")
        if estimation.learned is not None:
            estimation.learned.estimate = _timed(estimation.learned.estimate, acc, "estimate")
    world.add_machine_sensor(mapping.on_machine)
    if mapping.on_lidar is not None:
        from harness.sim.soil_lidar import LidarSensor
        for name, mount in sorted(lidar["mounts"].items()):
            if mount["enabled"]:
                world.add_sensor(LidarSensor(world, name, mapping.on_lidar, random.stream("soil_lidar_" + name),
                                             lidar, log))
    world.progress = progress
    world.start(app)
    sim_s = world.run_lanes(app, finish=lambda: mapping.finish(world.clock.now_us()))
    out = Episode()
    out.world, out.grid, out.app, out.sim_s = world, grid, app, sim_s
    rows = estimation.estimates if estimation is not None else []
    out.estimates = [dict(row, truth=cut_truth(world, row)) for row in rows]
    estimated = sum(1 for r in rows if "theta" in r)
    if estimation is not None:
        estimated += sum(1 for r in estimation.layer_rows if "theta" in r)     # the layers' windows
    sweeps = mapping.mapper.sweeps
    out.timing = {"episode_wall_s": time.perf_counter() - t_start, "blind_map_wall_s": acc["map"],
                  "estimator_wall_s": acc["estimate"],
                  "blind_map_ms_per_sweep": 1e3 * acc["map"] / max(sweeps, 1),
                  "lidar_fusion_wall_s": acc["lidar"],
                  "estimator_s_per_cut": acc["estimate"] / max(estimated, 1),
                  "sim_seconds_per_wall_second": sim_s / max(time.perf_counter() - t_start, 1e-9)}
    return out


def _feed_commands(world, entry):
    """The operator's commands (what the world logs on ``COMMAND_TOPIC`` every step) also go to the app's
    entry point ``entry`` (``loader_app.OperatorCommand``), as a machine's operator interface would, with the
    track speed loop's command ``drive_cmd_n`` [N] logged beside them (the controller model reads it)."""
    world_log = world.log

    def log_and_feed(topic, time_us, msg):
        if topic == COMMAND_TOPIC:
            entry(loader_app.OperatorCommand.from_dict(time_us, msg))
        world_log(topic, time_us, msg)
    world.log = log_and_feed


def cut_truth(world, row):
    """{property: truth} of one estimate row: the truth properties the blade failed (``world.truth_theta``)
    averaged over the cut's samples; the fields' mean where the blade failed nothing."""
    vals = [v for t, v in world.truth_theta.items() if row["t0_us"] <= t <= row["t1_us"]]
    if not vals:
        return {k: float(np.mean(world.fields.values[k])) for k in THETA_U_NAMES}
    mean = np.mean(np.array(vals), axis=0)
    return dict(zip(THETA_U_NAMES, (float(v) for v in mean)))


def score_estimates(rows):
    """Per property (``onboard.soil.fee`` slots): ``bias``, ``rmse``, ``nrmse`` (RMSE / mean |truth|, null
    where the truth is 0), ``coverage_1s`` / ``coverage_2s`` (fraction of cuts whose error is within 1 / 2
    stated sigmas), ``flagged`` (fraction flagged not identifiable); ``best_nrmse`` (the property with the
    lowest nrmse), ``force_mae_n`` and ``force_mae_pct`` (mean over cuts of the per-cut MAE of the fitted FEE
    against the measured force, N and % of the mean |F|); over the rows that hold an estimate."""
    done = [r for r in rows if "theta" in r]
    out = {"cuts": len(rows), "estimated": len(done)}
    if not done:
        return out
    nrmse = {}
    for k in THETA_U_NAMES:
        err = np.array([r["theta"][k] - r["truth"][k] for r in done])
        sig = np.array([r["sigma"][k] for r in done])
        rmse = float(np.sqrt(np.mean(err * err)))
        scale = float(np.mean([abs(r["truth"][k]) for r in done]))
        nrmse[k] = rmse / scale if scale > 0 else None
        out[k] = {"bias": float(err.mean()), "rmse": rmse, "nrmse": nrmse[k],
                  "coverage_1s": float(np.mean(np.abs(err) <= sig)),
                  "coverage_2s": float(np.mean(np.abs(err) <= 2.0 * sig)),
                  "flagged": float(np.mean([r["flags"][k] for r in done]))}
    finite = {k: v for k, v in nrmse.items() if v is not None}
    out["best_nrmse"] = min(finite, key=finite.get) if finite else None
    out["force_mae_n"] = float(np.mean([r["force_mae_n"] for r in done]))
    out["force_mae_pct"] = float(np.mean([r["force_mae_pct"] for r in done]))
    return out


def _grow(mask, cells):
    from scipy.ndimage import binary_dilation
    return binary_dilation(mask, structure=np.ones((2 * cells + 1, 2 * cells + 1), dtype=bool))


def _shrink(mask, cells):
    from scipy.ndimage import binary_erosion
    return binary_erosion(mask, structure=np.ones((2 * cells + 1, 2 * cells + 1), dtype=bool), border_value=0)


def map_zones(world, map_height_m, edge_cells=2, cut_tol_m=1e-3, deposit_tol_m=5e-3):
    """Boolean masks {"interior", "edges", "deposit"} over the grid: the cut C is where the truth bank
    surface went down by more than ``cut_tol_m``; edges are the cells within ``edge_cells`` (Chebyshev) of
    C's border, inside or out; the interior is the rest of C; the deposit is the cells beyond the edges where
    the truth surface or the map rose by more than ``deposit_tol_m``."""
    t = world.terrain
    bank0 = world.initial_height_m - world.initial_loose_m
    cut = (bank0 - (t.height_m - t.loose_m)) > cut_tol_m
    interior = _shrink(cut, edge_cells)
    near = _grow(cut, edge_cells)
    edges = near & ~interior
    truth = world.final_surface_m()
    h0 = world.initial_height_m
    rose = ((truth - h0) > deposit_tol_m) | ((map_height_m - h0) > deposit_tol_m)
    return {"interior": interior, "edges": edges, "deposit": rose & ~near}


def map_heights(grid):
    """The onboard map's elevation layer [m, up] as an (n_north, n_east) array (a copy)."""
    return np.array(view(grid, ELEVATION)).reshape(grid.n_north, grid.n_east)


def map_errors(episode, edge_cells=2):
    """The onboard map's height error against the truth surface (carried pile rendered) at the end: per zone
    of :func:`map_zones` its ``cells``, ``mae_m``, ``rmse_m``, ``p95_m`` and ``bias_m`` (map - truth);
    ``mean_cut_depth_m`` (interior: the truth surface's mean lowering), ``interior_mae_of_depth`` (interior
    MAE / mean cut depth), ``edges_over_interior`` and ``deposit_over_interior`` (MAE ratios); the volumes:
    ``volume_error_pct`` (|map - truth| of the whole surface's volume, what left the map and the carried pile
    included, % of the loose volume the blade moved: s x bank cut + loose cut), ``cut_volume_error_pct``
    and ``deposit_volume_error_pct`` (the volume removed below / added above the initial surface, map
    against truth, % of the truth's)."""
    world = episode.world
    grid = episode.grid
    h_map = map_heights(grid)
    truth = world.final_surface_m()
    zones = map_zones(world, h_map, edge_cells)
    err = h_map - truth
    out = {}
    for name, mask in zones.items():
        e = err[mask]
        out[name] = {"cells": int(mask.sum()),
                     "mae_m": float(np.mean(np.abs(e))) if e.size else 0.0,
                     "rmse_m": float(np.sqrt(np.mean(e * e))) if e.size else 0.0,
                     "p95_m": float(np.percentile(np.abs(e), 95)) if e.size else 0.0,
                     "bias_m": float(np.mean(e)) if e.size else 0.0}
    h0 = world.initial_height_m
    inner = zones["interior"]
    depth = float(np.mean(h0[inner] - truth[inner])) if inner.any() else 0.0
    out["mean_cut_depth_m"] = depth
    mae_i = out["interior"]["mae_m"]
    out["interior_mae_of_depth"] = mae_i / depth if depth > 0 else None
    out["edges_over_interior"] = out["edges"]["mae_m"] / mae_i if mae_i > 0 else None
    out["deposit_over_interior"] = out["deposit"]["mae_m"] / mae_i if mae_i > 0 else None
    area = grid.cell_m * grid.cell_m
    tot = world.terrain.totals
    moved = world.terrain.swell * tot.bank_cut_m3 + tot.loose_cut_m3
    v_map = float(h_map.sum()) * area + episode.app.part("mapping").mapper.lost_m3
    v_truth = float(world.terrain.height_m.sum()) * area + world.terrain.pile_m3 + world.terrain.off_map_m3
    out["moved_m3"] = moved
    out["volume_error_pct"] = 100.0 * abs(v_map - v_truth) / moved if moved > 0 else 0.0
    for name, sign in (("cut", -1.0), ("deposit", 1.0)):
        vm = float(np.sum(np.maximum(sign * (h_map - h0), 0.0))) * area
        vt = float(np.sum(np.maximum(sign * (truth - h0), 0.0))) * area
        out["%s_volume_m3" % name] = {"map": vm, "truth": vt}
        out["%s_volume_error_pct" % name] = 100.0 * abs(vm - vt) / vt if vt > 0 else 0.0
    return out


def finite_or_none(x):
    """``x`` as a float, or None when it is not finite (metrics are finite JSON)."""
    return float(x) if x is not None and math.isfinite(x) else None

