"""One soil-mapping episode end to end (harness; NumPy, SciPy): a track loader cuts lanes through a soil
world, the onboard blind map follows its blade from the measured kinematics, and every cut's samples give
a per-cut property estimate, scored against the truth fields.

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader" (Alg. 1: blind mapping feeds the estimator the FEE geometry per
sweep; section 3.1: estimates against the pseudo ground truth); reading aid ``shared/papers/notes/soil.md``
(scenario ``soil-homogeneous`` of section 5.4, H3 and H8 of section 3). This is a plain function, not a
registered scenario.

Pipeline per run (:func:`run_episode`): truth fields (``soil_world``) and terrain (``soil_terrain``); an
onboard ``GridMap`` started from the truth surface and loose layer, with a ``BlindMapper`` whose swell,
loose unit weight, blade size and erosion settings are the truth's ("matched"); the loader
(``track_loader``) runs its operator's lanes; the mapper gets every measured blade pose of a lane and is
reset between lanes; each lane is one cut: its valid sweeps and the measured force of the chosen
``sensor_path`` make a ``CutWindow`` (samples where the machine moved at least ``min_speed_mps``), which
``onboard.soil.cut_estimator`` estimates.

Sensor paths: ``"force"`` (the blade force sensor, F_x and F_z), ``"drive+pressure"`` (F_x from the drive
torque, F_z from the lift-cylinder pressure given that F_x), ``"drive"`` (F_x only).

Metrics (:func:`score`): per property the bias, RMSE, RMSE normalised by the mean |truth| (``nrmse``),
the fraction of cuts whose error lies within 1 and 2 stated sigmas (``coverage_1s``, ``coverage_2s``) and
the fraction flagged not identifiable; the force prediction error of the fitted FEE (mean over cuts of
the per-cut MAE, N and % of the mean |F|); the blind map's volume bookkeeping and the truth terrain's
conservation error.
"""
import math
import time

import numpy as np

from onboard.core.settings import ConfigError, NON_NEGATIVE, checked, int_at_least, one_of
from onboard.soil.blind_map import BlindMapper
from onboard.soil import blind_map_numpy
from onboard.soil.cut_estimator import CutEstimateError, CutEstimator, window_from_sweeps
from onboard.soil.fee import THETA_U_NAMES
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap
from onboard.soil.grid_map_numpy import load
from harness.sim import soil_world
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from harness.sim.track_loader import TrackLoader, fx_from_drive, fz_from_pressure

DEFAULTS = {
    "seed": 1,
    "world": {"size_m": [16.0, 10.0], "cell_m": 0.1, "soil": "loam", "relative_density_pct": 50.0},
    "terrain": {},
    "loader": {"operator": {"random": {"enabled": True},
                            "lanes": {"count": 3, "start_ne_m": [1.0, 2.0], "length_m": 8.0, "spacing_m": 2.5}}},
    "blind_map": {"pile_length_m": 2.0},
    "estimator": {},
    "sensor_path": "force",
    "min_speed_mps": 0.05,
    "min_samples": 60,
}
SETTING_RANGES = {
    "seed": int_at_least(0),
    "sensor_path": one_of("force", "drive+pressure", "drive"),
    "min_speed_mps": NON_NEGATIVE,
    "min_samples": int_at_least(10),
}
# the blocks handed to the components are checked by them
_BLOCKS = ("world", "terrain", "loader", "blind_map", "estimator")


def _settings(config):
    config = dict(config or {})
    blocks = {k: config.pop(k) for k in _BLOCKS if k in config}
    cfg = checked({k: v for k, v in DEFAULTS.items() if k not in _BLOCKS}, SETTING_RANGES, config, "soil episode")
    for k in _BLOCKS:
        merged = _merge(DEFAULTS[k], blocks.get(k, {}))
        cfg[k] = merged
    return cfg


def _merge(base, over):
    out = dict(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


class _Cut:
    def __init__(self, lane):
        self.lane = lane
        self.records = []
        self.samples = []


def run_episode(config=None):
    """Run one episode (module docstring) and return ``{"metrics": score(...), "cuts": [per-cut dicts],
    "truth": {property: mean truth}, "timing": {...}}``."""
    cfg = _settings(config)
    t_start = time.perf_counter()
    rnd = RunRandom(cfg["seed"])
    fields = soil_world.build_fields(cfg["world"], rnd.stream("soil_fields"))
    terrain = SoilTerrain(fields, cfg["terrain"], rnd.stream("soil_terrain"))
    loader = TrackLoader(terrain, cfg["loader"], rnd)
    lcfg = loader.config
    tcfg = terrain.config
    grid = GridMap({"size_m": list(cfg["world"]["size_m"]), "cell_m": cfg["world"]["cell_m"]})
    if (grid.n_north, grid.n_east) != (terrain.n_north, terrain.n_east):
        raise ConfigError("soil episode: map and world grids differ")
    load(grid, ELEVATION, terrain.height_m)
    load(grid, LOOSE, terrain.loose_m)
    bm_cfg = _merge({"blade_width_m": lcfg["blade"]["width_m"], "blade_height_m": lcfg["blade"]["height_m"],
                     "swell": terrain.swell, "loose_unit_weight_npm3": terrain.loose_unit_weight_npm3,
                     "erosion": {"cohesion_pa": tcfg["loose"]["cohesion_pa"],
                                 "friction_rad": tcfg["loose"]["friction_rad"]}}, cfg["blind_map"])
    mapper = BlindMapper(grid, bm_cfg, erode_fn=blind_map_numpy.erode)
    cuts = []
    state = {"cut": None, "lane": None}
    t_map = [0.0]

    def on_sample(sample):
        if sample.lane != state["lane"]:
            _close(state, mapper, cuts, t_map)
            state["lane"] = sample.lane
            state["cut"] = _Cut(sample.lane)
            mapper.reset()
        cut = state["cut"]
        cut.samples.append(sample)
        t0 = time.perf_counter()
        rec = mapper.on_blade_pose(sample.blade_pose)
        t_map[0] += time.perf_counter() - t0
        if rec is not None:
            cut.records.append(rec)

    steps = loader.run(on_sample)
    _close(state, mapper, cuts, t_map)
    t_sim = time.perf_counter() - t_start
    estimator = CutEstimator(cfg["estimator"])
    truth = {name: float(np.mean(fields.values[name])) for name in THETA_U_NAMES}
    truth_vec = np.array([truth[k] for k in THETA_U_NAMES])
    results = []
    t_est = 0.0
    for cut in cuts:
        window = _window(cut, cfg, lcfg)
        row = {"lane": list(cut.lane), "sweeps": len(cut.records), "valid_sweeps": sum(r.valid for r in cut.records),
               "samples": len(window)}
        if len(window) < cfg["min_samples"]:
            row["skipped"] = "too few samples"
            results.append(row)
            continue
        t0 = time.perf_counter()
        try:
            est = estimator.estimate(window)
        except CutEstimateError as exc:
            row["skipped"] = str(exc)
            results.append(row)
            continue
        t_est += time.perf_counter() - t0
        row.update(est.as_dict())
        row["error"] = dict(zip(THETA_U_NAMES, (float(v) for v in est.theta - truth_vec)))
        row["true_force_mean_n"] = float(np.mean([abs(s.truth["fx_n"]) for s in cut.samples if s.phase == "cut"]))
        results.append(row)
    vols = terrain.volumes()
    return {"metrics": score(results, truth), "cuts": results, "truth": truth,
            "steps": steps, "stalls": loader.stalls, "slip_steps": loader.slip_steps,
            "terrain": {"bank_equivalent_m3": vols["bank_equivalent_m3"], "pile_m3": vols["pile_m3"],
                        "bank_cut_m3": terrain.totals.bank_cut_m3, "spilled_m3": terrain.totals.spilled_m3},
            "map": {"sweeps": mapper.sweeps, "lost_m3": mapper.lost_m3},
            "timing": {"simulation_s": t_sim, "blind_map_s": t_map[0], "estimator_s": t_est,
                       "blind_map_ms_per_sweep": 1e3 * t_map[0] / max(mapper.sweeps, 1),
                       "estimator_s_per_cut": t_est / max(sum("theta" in r for r in results), 1)}}


def _close(state, mapper, cuts, t_map):
    cut = state["cut"]
    if cut is None:
        return
    t0 = time.perf_counter()
    rec = mapper.flush()
    t_map[0] += time.perf_counter() - t0
    if rec is not None:
        cut.records.append(rec)
    cuts.append(cut)
    state["cut"] = None


def _window(cut, cfg, lcfg):
    """The cut's CutWindow on the configured sensor path, samples where the machine moved."""
    samples = [s for s in cut.samples if s.phase == "cut"]
    path = cfg["sensor_path"]
    if path == "force":
        forces = {s.time_us: s.blade_force_n for s in samples}
        comps = ("fx", "fz")
    else:
        dt = 1.0 / 60.0
        fx = fx_from_drive(lcfg, [s.drive_torque_nm for s in samples], [s.speed_mps for s in samples],
                           [s.chassis_euler_rad[1] for s in samples], dt)
        fz = fz_from_pressure(lcfg, [s.lift_pressure_pa for s in samples], [s.lift_m for s in samples], fx)
        forces = {s.time_us: (float(a), float(b)) for s, a, b in zip(samples, fx, fz)}
        comps = ("fx", "fz") if path == "drive+pressure" else ("fx",)
    window = window_from_sweeps(cut.records, forces, comps)
    if len(window) == 0:
        return window
    speed = {s.time_us: s.speed_mps for s in samples}
    moving = np.array([speed.get(int(t), 0.0) >= cfg["min_speed_mps"] for t in window.time_us])
    return window.select(moving)


def score(results, truth):
    """Per-property bias, RMSE, nrmse (RMSE / mean |truth|), coverage within 1 and 2 stated sigmas and the
    flagged fraction over the estimated cuts, and the mean force prediction error (N, %)."""
    done = [r for r in results if "theta" in r]
    out = {"cuts": len(results), "estimated": len(done)}
    if not done:
        return out
    for k in THETA_U_NAMES:
        err = np.array([r["error"][k] for r in done])
        sig = np.array([r["sigma"][k] for r in done])
        rmse = float(np.sqrt(np.mean(err * err)))
        scale = abs(truth[k])
        out[k] = {"bias": float(err.mean()), "rmse": rmse,
                  "nrmse": rmse / scale if scale > 0 else math.inf,
                  "coverage_1s": float(np.mean(np.abs(err) <= sig)),
                  "coverage_2s": float(np.mean(np.abs(err) <= 2.0 * sig)),
                  "flagged": float(np.mean([r["flags"][k] for r in done]))}
    finite = {k: out[k]["nrmse"] for k in THETA_U_NAMES if math.isfinite(out[k]["nrmse"])}
    out["best_nrmse"] = min(finite, key=finite.get) if finite else None
    out["force_mae_n"] = float(np.mean([r["force_mae_n"] for r in done]))
    out["force_mae_pct"] = float(np.mean([r["force_mae_pct"] for r in done]))
    return out
