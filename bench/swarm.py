"""Swarm benchmark: simulated seconds per wall second of the 4-drone swarm-fixed flight.

Per 0.1 s period each drone runs the learned estimator (GRU) and a 100-particle filter per
neighbour and for its goal, then the DQN, on the committed models; the truth is the 2-D
simulator (link "direct": the cflib/UDP link is not wired into the scenario yet, see
harness/swarm/README.md, so this figure does not include it). Particle-filter kernels
pure vs cython side by side. Writes bench/results/swarm.json (key sim_seconds_per_wall_second,
the cython figure).
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.swarm import episode as ep  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "swarm.json")


def speed(impl, models, repeats=2):
    best = 0.0
    for r in range(repeats):
        cfg = {"drones": 4, "goals": "fixed", "impl": impl, "compare_estimators": False, "max_duration_s": 20.0}
        t0 = time.perf_counter()
        met, _ = ep.run_episode(cfg, np.random.default_rng(1), np.random.default_rng(2), models)
        wall = time.perf_counter() - t0
        best = max(best, met["sim_time_s"] / wall)
    return best, met["sim_time_s"]


def main():
    models = ep.load_models()
    res = {}
    for impl in ("cython", "numpy", "pure"):
        res[impl], sim_s = speed(impl, models)
    out = {"sim_seconds_per_wall_second": res["cython"], "by_pf_impl": res, "drones": 4,
           "sim_seconds": sim_s, "link": "direct (no cflib/UDP yet)", "target": 20.0}
    print("%-10s %s" % ("pf impl", "sim s / wall s (4 drones, swarm-fixed)"))
    for k, v in res.items():
        print("%-10s %.1f" % (k, v))
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(out, fh, indent=2)
        fh.write("\n")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
