"""Sandbox reference simulator: frame time at 1x and 2x terrain side, side by side in one run.

Workload: the example experiment (``harness/scenarios/leveling/sandbox/experiment.ini``: a 128 x 128 tileable
heightmap at 0.02 m, the Dagu Rover 5 class robot, 10 ms frames of 10 substeps, 2 erosion iterations per
frame) driven by the Alg. 5 schedule (seeded, ``--frames`` frames, 25-frame segments); "2x" is the same
heightmap tiled 2 x 2 (256 x 256 cells: the side doubled, the area x4, the same slopes under the robot), the
same start and the same command stream. Both contact tests of :mod:`harness.sim.sandbox.terrain` are run:
"mesh" (the default: every cell's ray cast against each track at every substep, as the thesis's SCM, Chrono
3.0) and "patch" (only the cells around the track); they must end in bit-identical terrains and poses (checked).
Each round runs a fresh world per size and contact test, alternating (``--rounds`` rounds; each keeps its
best round, so a burst of load on a shared host hits all alike). Times are CPU time of the process
(``time.process_time``; single-threaded, compute-bound loop).

Also timed apart, per frame: one erosion pass of the whole terrain and, for "mesh", the whole-map ray casts
(2 tracks x substeps calls of ``ray_cast_mesh``): the parts that grow with the area; the rest (contact,
traction, sinkage and bulldozing under the robot) does not depend on the terrain's size.
And counted (not timed), over one more run of the stream per size: the cells the erosion actually changes per
frame and the largest slope step left above the angle of repose after a frame (is the erosion converged?).

Writes bench/results/sandbox_speed.json.
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from results_file import write_results  # noqa: E402 (bench/ is the script's folder)
from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI  # noqa: E402
from harness.sim.sandbox import schedule  # noqa: E402
from harness.sim.sandbox.config import load_experiment  # noqa: E402
from harness.sim.sandbox.world import SandboxWorld  # noqa: E402


def _world(exp, tiles, contact_test="mesh"):
    heights = np.tile(exp.heights_m, (tiles, tiles))
    north, east, yaw = exp.start
    return SandboxWorld(exp.terrain(heights, contact_test), north, east, yaw, exp.vehicle, exp.soil,
                        exp.frame_dt_us, exp.substeps, exp.erosion_iterations)


def _time_frames(world, speed, yaw_rate):
    t0 = time.process_time()
    for v, w in zip(speed, yaw_rate):
        world.frame(v, w)
    return (time.process_time() - t0) / len(speed)


def _time_erosion(world, repeats=50):
    t0 = time.process_time()
    for _ in range(repeats):
        world.terrain.erode(world.erosion_iterations)
    return (time.process_time() - t0) / repeats


def _time_ray_casts(world, repeats=20):
    """CPU time (s) of one frame's whole-map ray casts: 2 tracks x substeps calls at the robot's pose."""
    r = world.robot
    calls = []
    for (tn, te), sign in zip(r.track_centres(), (-1.0, 1.0)):
        base = r.base_m - sign * 0.5 * r.gauge_m * r.tan_roll
        calls.append((tn, te, r.yaw_rad, r.length_m, r.width_m, base, r.tan_pitch, r.tan_roll))
    cast = world.terrain.ray_cast_mesh
    t0 = time.process_time()
    for _ in range(repeats * world.substeps):
        for args in calls:
            cast(*args)
    return (time.process_time() - t0) / repeats


def _erosion_activity(world, speed, yaw_rate):
    """Per frame over the command stream: the cells the erosion changes (> 1e-12 m) and, after the frame, the
    largest step above the angle of repose (m): how much of the whole-tile pass does work."""
    terrain = world.terrain
    erode = terrain.erode
    changed = []

    def counting_erode(iterations=None):
        before = terrain.height_m.copy()
        erode(iterations)
        changed.append(int((np.abs(terrain.height_m - before) > 1e-12).sum()))

    terrain.erode = counting_erode
    max_step = terrain._tan_repose * terrain.cell_m
    worst = 0.0
    try:
        for v, w in zip(speed, yaw_rate):
            world.frame(v, w)
            h = terrain.height_m
            for axis in (0, 1):
                worst = max(worst, float((np.abs(np.roll(h, -1, axis=axis) - h) - max_step).max()))
    finally:
        del terrain.erode
    return {"cells": int(terrain.height_m.size), "changed_cells_mean": float(np.mean(changed)),
            "changed_cells_max": int(np.max(changed)), "max_excess_over_repose_m": max(worst, 0.0),
            "repose_step_m": max_step}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    exp = load_experiment(EXAMPLE_INI)
    rng = np.random.default_rng(0)
    speed, yaw_rate, _, _, _ = schedule.commands(args.frames, 25, 0.25, np.pi / 2, rng.uniform)
    sizes = {"1x": 1, "2x": 2}
    tests = ("mesh", "patch")
    runs = [(name, test) for test in tests for name in sizes]
    best = {k: float("inf") for k in runs}
    erosion = {k: float("inf") for k in sizes}
    rays = {k: float("inf") for k in sizes}
    final = {}
    for _ in range(args.rounds):
        for name, test in runs:
            world = _world(exp, sizes[name], test)
            best[(name, test)] = min(best[(name, test)], _time_frames(world, speed, yaw_rate))
            final[(name, test)] = (world.robot.north_m, world.robot.east_m, world.robot.yaw_rad,
                                   world.terrain.height_m.tobytes(), world.terrain.sunk_m.tobytes())
            if test == "mesh":
                rays[name] = min(rays[name], _time_ray_casts(world))
                erosion[name] = min(erosion[name], _time_erosion(world))
    rows = {}
    for name, tiles in sizes.items():
        side = exp.heights_m.shape[0] * tiles
        mesh, patch = best[(name, "mesh")], best[(name, "patch")]
        rows[name] = {"cells_per_side": side, "side_m": side * exp.cell_m,
                      "frame_us": mesh * 1e6, "erosion_us_per_frame": erosion[name] * 1e6,
                      "ray_casts_us_per_frame": rays[name] * 1e6,
                      "rest_us_per_frame": (mesh - erosion[name] - rays[name]) * 1e6,
                      "frames_per_s": 1.0 / mesh, "patch_frame_us": patch * 1e6}
    ratio = best[("2x", "mesh")] / best[("1x", "mesh")]
    ratio_patch = best[("2x", "patch")] / best[("1x", "patch")]
    print("Sandbox frame time (CPU), %d frames x %d rounds, best round; Alg. 5 commands, %d substeps/frame"
          % (args.frames, args.rounds, exp.substeps))
    print("%-4s %10s %12s %12s %12s %12s %10s %14s" % ("size", "cells", "frame (us)", "rays (us)", "erosion (us)",
                                                       "rest (us)", "frames/s", "patch (us)"))
    for name, r in rows.items():
        print("%-4s %10s %12.0f %12.0f %12.0f %12.0f %10.1f %14.0f" % (
            name, "%dx%d" % (r["cells_per_side"], r["cells_per_side"]), r["frame_us"], r["ray_casts_us_per_frame"],
            r["erosion_us_per_frame"], r["rest_us_per_frame"], r["frames_per_s"], r["patch_frame_us"]))
    print("2x / 1x frame time, contact test mesh (default): %.2f (ray casts %.2f, erosion %.2f, rest %.2f); "
          "patch: %.2f" % (ratio, rows["2x"]["ray_casts_us_per_frame"] / rows["1x"]["ray_casts_us_per_frame"],
                           rows["2x"]["erosion_us_per_frame"] / rows["1x"]["erosion_us_per_frame"],
                           rows["2x"]["rest_us_per_frame"] / rows["1x"]["rest_us_per_frame"], ratio_patch))
    same_path = bool(np.allclose(final[("1x", "mesh")][:3], final[("2x", "mesh")][:3], atol=1e-9))
    print("same path on both sizes (the 2x map repeats the 1x one): %s" % same_path)
    identical = all(final[(name, "mesh")] == final[(name, "patch")] for name in sizes)
    print("mesh and patch contact tests end bit-identical (pose, heights, sinkage): %s" % identical)
    activity = {name: _erosion_activity(_world(exp, tiles), speed, yaw_rate) for name, tiles in sizes.items()}
    for name, a in activity.items():
        print("%s: erosion changes %.1f cells per frame on average (at most %d) of %d; largest step above repose "
              "after a frame %.3f mm (repose step %.1f mm)" % (name, a["changed_cells_mean"], a["changed_cells_max"],
                                                              a["cells"], a["max_excess_over_repose_m"] * 1e3,
                                                              a["repose_step_m"] * 1e3))
    write_results("sandbox_speed", {
        "workload": {"experiment": os.path.relpath(EXAMPLE_INI, REPO), "frames": args.frames, "rounds": args.rounds,
                     "substeps": exp.substeps, "frame_dt_us": exp.frame_dt_us,
                     "erosion_iterations": exp.erosion_iterations, "clock": "process CPU time, best round"},
        "contact_test": "mesh (default; patch_frame_us: the patch test)",
        "sizes": rows, "ratio_2x_over_1x": ratio, "ratio_2x_over_1x_patch": ratio_patch,
        "same_path_on_both_sizes": same_path, "mesh_and_patch_bit_identical": identical,
        "erosion_activity": activity,
        "python": platform.python_version(), "machine": platform.machine(),
    })


if __name__ == "__main__":
    main()
