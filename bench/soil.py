"""Soil-mapping benchmark: blind-mapping time per sweep and estimator time per cut on one core, and whether
the loader app keeps up with its 60 Hz samples (goal: >= 10x real time).

Workload (recorded once, seeded): the track loader cuts 3 lanes of 8 m in loam at I_d = 50 % with random
setpoints (the ``soil-homogeneous`` machine and operator); its measured 60 Hz samples are replayed into the
app's parts (``onboard.soil.loader_app``) on a map started from the same truth surface. Side by side in one
run, every path on the same samples:

- ``map_pure``   : blind mapping with the pure erosion kernel (the MicroPython path, here on CPython);
- ``map_numpy``  : the same with the NumPy erosion kernel (what the harness runs; same map, checked);
- ``map_no_erosion`` : NumPy path without erosion (what cutting, depositing and the FEE extraction cost);
- ``map_ahead``  : NumPy path with notes A13's surcharge (loose soil ahead, DDA rays) instead of the carried pile;
- ``estimate``   : the per-cut NLS estimate (force path; SciPy least_squares) of each cut.

Figures: ms per sweep, us per 60 Hz sample, the real-time factor (simulated seconds per wall second) of
mapping alone and of mapping + estimation, and the ratios pure / NumPy and NumPy / no erosion. The process is
pinned to one CPU of its affinity set (``--all-cores`` leaves it). Writes bench/results/soil.json.
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from harness.scenarios.soil import soil_episode as ep  # noqa: E402
from harness.sim import soil_world  # noqa: E402
from harness.sim.rng import RunRandom  # noqa: E402
from harness.sim.soil_loader_world import machine_sample  # noqa: E402
from harness.sim.soil_terrain import SoilTerrain  # noqa: E402
from harness.sim.track_loader import TrackLoader  # noqa: E402
from harness.config import merge  # noqa: E402
from onboard.soil import blind_map, blind_map_numpy, loader_app  # noqa: E402
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap  # noqa: E402
from onboard.soil.grid_map_numpy import load  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)

ROUNDS = 3
GOAL = 10.0                      # real-time factor the app should reach on one core


def pin_to_one_cpu():
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return sorted(os.sched_getaffinity(0))


def record(seed=1):
    """(config, initial height, initial loose, [MachineSample]) of the workload's lanes."""
    cfg = merge(ep.DEFAULTS, {"world": {"size_m": [16.0, 10.0]}}, "bench", ep.SETTING_RANGES)
    rnd = RunRandom(seed)
    fields = soil_world.build_fields(cfg["world"], rnd.stream("soil_fields"))
    terrain = SoilTerrain(fields, cfg["terrain"], rnd.stream("soil_terrain"))
    loader = TrackLoader(terrain, cfg["loader"], rnd)
    h0, l0 = terrain.height_m.copy(), terrain.loose_m.copy()
    samples = [machine_sample(s) for s in loader.lanes()]
    app_cfg = ep.merge_blocks(cfg["app"], {"blind_map": {
        "blade_width_m": loader.config["blade"]["width_m"], "blade_height_m": loader.config["blade"]["height_m"],
        "swell": terrain.swell, "loose_unit_weight_npm3": terrain.loose_unit_weight_npm3}})
    return loader_app.checked_config(app_cfg), ep.machine_constants(loader.config), h0, l0, samples


class _Cuts:
    def __init__(self):
        self.cuts = []

    def submit(self, cut):
        self.cuts.append(cut)


def map_once(app_cfg, h0, l0, samples, erode_fn, overrides=None):
    """(wall s, sweeps, cuts, grid) of the mapping part over every sample."""
    from onboard.runtime.node import Node
    cfg = app_cfg if not overrides else loader_app.checked_config(ep.merge_blocks(app_cfg, overrides))
    grid = GridMap({"size_m": [h0.shape[0] * 0.1, h0.shape[1] * 0.1], "cell_m": 0.1})
    load(grid, ELEVATION, h0)
    load(grid, LOOSE, l0)
    cuts = _Cuts()
    node = Node("bench")
    part = node.add("mapping", loader_app.BlindMapping(grid, cfg, cuts, erode_fn))
    t0 = time.perf_counter()
    part.queue = list(samples)
    part._map(0)
    part.finish()
    wall = time.perf_counter() - t0
    return wall, part.mapper.sweeps, cuts.cuts, grid


MAP_DIFF_MAX_M = 1e-9       # pure vs NumPy map, at most (rounding only)


def best_of(fn, rounds=ROUNDS):
    out = [fn() for _ in range(rounds)]
    return min(out, key=lambda r: r[0]), [r[0] for r in out]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all-cores", action="store_true", help="do not pin the process to one CPU")
    args = ap.parse_args(argv)
    cpus = None if args.all_cores else pin_to_one_cpu()
    app_cfg, machine, h0, l0, samples = record()
    sim_s = (samples[-1].time_us - samples[0].time_us) * 1e-6 + 1.0 / 60.0
    runs = {}
    paths = {"map_pure": (blind_map.erode, None), "map_numpy": (blind_map_numpy.erode, None),
             "map_no_erosion": (blind_map_numpy.erode, {"blind_map": {"erosion": {"enabled": False}}}),
             "map_ahead": (blind_map_numpy.erode, {"blind_map": {"surcharge": "ahead"}})}
    grids = {}
    cuts = None
    for name, (kernel, over) in paths.items():
        (wall, sweeps, c, grid), walls = best_of(lambda: map_once(app_cfg, h0, l0, samples, kernel, over),
                                                 1 if name == "map_pure" else ROUNDS)
        runs[name] = {"wall_s": wall, "rounds_s": walls, "sweeps": sweeps, "ms_per_sweep": 1e3 * wall / sweeps,
                      "us_per_sample": 1e6 * wall / len(samples), "real_time_factor": sim_s / wall}
        grids[name] = grid
        if name == "map_numpy":
            cuts = c
    a, b = grids["map_pure"], grids["map_numpy"]
    diff = max(max(abs(x - y) for x, y in zip(a.layer(n), b.layer(n))) for n in (ELEVATION, LOOSE))
    if not diff <= MAP_DIFF_MAX_M:            # the docstring's "same map, checked": NaN fails too
        raise SystemExit("soil: the pure and NumPy erosion paths made different maps (max diff %g m > %g m); "
                         "nothing written" % (diff, MAP_DIFF_MAX_M))
    estimation = loader_app.CutEstimation(app_cfg, machine)
    per_cut = []
    for cut in cuts:
        t0 = time.perf_counter()
        for _ in range(ROUNDS):
            row = estimation.estimate(cut, "force")
        per_cut.append({"wall_s": (time.perf_counter() - t0) / ROUNDS, "samples": row["samples"],
                        "estimated": "theta" in row})
    est_s = float(np.mean([c["wall_s"] for c in per_cut]))
    map_s = runs["map_numpy"]["wall_s"]
    pipeline = sim_s / (map_s + est_s * len(per_cut))
    out = {
        "samples": len(samples), "sim_s": sim_s, "sweeps": runs["map_numpy"]["sweeps"], "cuts": len(per_cut),
        "blind_map_ms_per_sweep": runs["map_numpy"]["ms_per_sweep"],
        "blind_map_real_time_factor": runs["map_numpy"]["real_time_factor"],
        "estimator_s_per_cut": est_s, "estimator_samples_per_cut": float(np.mean([c["samples"] for c in per_cut])),
        "pipeline_real_time_factor": pipeline, "goal_real_time_factor": GOAL, "keeps_up": pipeline >= GOAL,
        "pure_over_numpy_ratio": runs["map_pure"]["wall_s"] / map_s,
        "numpy_over_no_erosion_ratio": map_s / runs["map_no_erosion"]["wall_s"],
        "ahead_over_gathered_ratio": runs["map_ahead"]["wall_s"] / map_s,
        "pure_numpy_max_abs_diff_m": diff,
        "pure_real_time_factor": runs["map_pure"]["real_time_factor"],
        "runs": runs, "estimates": per_cut, "cpu_count": os.cpu_count(), "pinned_cpus": cpus,
        "python": platform.python_version(),
    }
    print("%-16s %10s %12s %12s %10s" % ("path", "ms/sweep", "us/sample", "x real time", "sweeps"))
    for name, r in runs.items():
        print("%-16s %10.2f %12.1f %12.1f %10d" % (name, r["ms_per_sweep"], r["us_per_sample"], r["real_time_factor"],
                                                 r["sweeps"]))
    print("estimator: %.3f s per cut (%d cuts, %.0f samples each)" % (est_s, len(per_cut),
                                                                      out["estimator_samples_per_cut"]))
    print("mapping + estimation: %.1fx real time (goal >= %.0fx): %s" % (pipeline, GOAL,
                                                                       "keeps up" if out["keeps_up"] else "too slow"))
    print("ratios: pure/numpy %.1fx, numpy/no-erosion %.2fx, ahead/gathered %.2fx; pure vs numpy map max diff %.1e m"
          % (out["pure_over_numpy_ratio"], out["numpy_over_no_erosion_ratio"], out["ahead_over_gathered_ratio"], diff))
    write_results("soil", out)


if __name__ == "__main__":
    main()
