"""Alexi surrogate vs the Sandbox reference: frame time at 1x and 2x terrain side, side by side in one run
(Cook thesis 6.4; reading aids H9, H10).

Workload: the example experiment (``harness/scenarios/leveling/sandbox/experiment.ini``: 128 x 128 cells at
0.02 m, the Dagu Rover 5 class robot, 10 ms frames); "2x" is the same heightmap tiled 2 x 2 (the side doubled);
the same Alg. 5 command stream (seeded, ``--frames`` frames, 25-frame segments) and start for every
simulator. Reference: the Sandbox with its default contact test ("mesh": every cell ray-cast against each
track at every substep, as the thesis's SCM in Chrono 3.0; :mod:`harness.sim.sandbox.terrain`), and for
comparison with the "patch" test (the cells around the tracks only; bit-identical results, cheaper).
Surrogate: :class:`harness.sim.alexi.sim.AlexiSim` with the committed V2 two-network kinematic nets and the
terrain net (on, and off), int8 through the onboard ``litert`` backend (``--backend pure`` for the pure int8
kernel), without drawing. Each round runs every simulator once per size, alternating; each keeps its best
round. CPU time of the process (``time.process_time``).

Writes bench/results/alexi_speed.json.
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
from harness.sim.alexi import nets as alexi_nets  # noqa: E402
from harness.sim.alexi.sim import AlexiSim  # noqa: E402
from harness.sim.sandbox import schedule  # noqa: E402
from harness.sim.sandbox.config import load_experiment  # noqa: E402
from harness.sim.sandbox.world import SandboxWorld  # noqa: E402

# thesis 6.4 (us per frame)
THESIS = {"v1": {"sandbox_us": 620000, "alexi_us": 285}, "v2": {"sandbox_us": 150000, "alexi_us": 22500},
          "v2_doubled": {"sandbox_us": 470000, "alexi_us": 22500}}


def _time(step, speed, yaw_rate):
    t0 = time.process_time()
    for v, w in zip(speed, yaw_rate):
        step(v, w)
    return (time.process_time() - t0) / len(speed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="litert", choices=("litert", "pure"))
    args = ap.parse_args(argv)
    exp = load_experiment(EXAMPLE_INI)
    rng = np.random.default_rng(0)
    speed, yaw_rate, _, _, _ = schedule.commands(args.frames, 25, 0.25, np.pi / 2, rng.uniform)
    kin = {"speed": alexi_nets.load("v2_speed", "int8", args.backend),
           "dyaw": alexi_nets.load("v2_dyaw", "int8", args.backend)}
    terrain = alexi_nets.load("terrain", "int8", args.backend)
    north, east, yaw = exp.start
    sizes = {"1x": 1, "2x": 2}
    sims = ("sandbox", "alexi_terrain_on", "alexi_terrain_off", "sandbox_patch")
    best = {(s, k): float("inf") for s in sims for k in sizes}
    for _ in range(args.rounds):
        for name, tiles in sizes.items():
            heights = np.tile(exp.heights_m, (tiles, tiles))
            for s, test in (("sandbox", "mesh"), ("sandbox_patch", "patch")):
                world = SandboxWorld(exp.terrain(heights, test), north, east, yaw, exp.vehicle, exp.soil,
                                     exp.frame_dt_us, exp.substeps, exp.erosion_iterations)
                best[(s, name)] = min(best[(s, name)], _time(world.frame, speed, yaw_rate))
            for s, tnet in (("alexi_terrain_on", terrain), ("alexi_terrain_off", None)):
                sim = AlexiSim(heights, exp.cell_m, north, east, yaw, exp.vehicle, kin, tnet, exp.frame_dt_us)
                best[(s, name)] = min(best[(s, name)], _time(sim.frame, speed, yaw_rate))
    rows = {}
    print("Frame time (CPU, best of %d rounds of %d Alg. 5 frames), int8 nets on %s" % (args.rounds, args.frames,
                                                                                         args.backend))
    print("%-18s %8s %12s %10s" % ("simulator", "size", "frame (us)", "frames/s"))
    for s in sims:
        rows[s] = {}
        for name, tiles in sizes.items():
            us = best[(s, name)] * 1e6
            rows[s][name] = {"cells_per_side": exp.heights_m.shape[0] * tiles, "frame_us": us, "frames_per_s": 1e6 / us}
            print("%-18s %8s %12.0f %10.1f" % (s, name, us, 1e6 / us))
    growth = {s: rows[s]["2x"]["frame_us"] / rows[s]["1x"]["frame_us"] for s in sims}
    speedup = {"%s_%s" % (s, k): rows["sandbox"][k]["frame_us"] / rows[s][k]["frame_us"]
               for s in ("alexi_terrain_on", "alexi_terrain_off") for k in sizes}
    for s in sims:
        print("%-18s 2x / 1x frame time: %.3f" % (s, growth[s]))
    for k, v in speedup.items():
        print("Sandbox / %s: %.1fx" % (k, v))
    checks = {"surrogate_within_10pct_when_side_doubles": abs(growth["alexi_terrain_on"] - 1.0) <= 0.10,
              "reference_grows_at_least_2x": growth["sandbox"] >= 2.0,
              "surrogate_at_least_15_fps_with_terrain_net": rows["alexi_terrain_on"]["1x"]["frames_per_s"] >= 15.0}
    for k, v in checks.items():
        print("%-45s %s" % (k, v))
    write_results("alexi_speed", {
        "workload": {"experiment": os.path.relpath(EXAMPLE_INI, REPO), "frames": args.frames, "rounds": args.rounds,
                     "backend": args.backend, "clock": "process CPU time, best round",
                     "reference": "sandbox: contact test mesh (default); sandbox_patch: contact test patch"},
        "sizes": rows, "growth_2x_over_1x": growth, "speedup_reference_over_surrogate": speedup, "checks": checks,
        "thesis_us_per_frame": THESIS, "python": platform.python_version(), "machine": platform.machine(),
    })


if __name__ == "__main__":
    main()
