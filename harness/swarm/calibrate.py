"""Int8 calibration of the swarm DQN and the int8-vs-float check (models/swarm/dqn).

Records DQN inputs in the 2-D simulator (greedy float policy, estimate noise as in training),
saves them as ``calibration.npy`` for :class:`onboard.swarm.dqn.DqnInt8`, and measures on a
separate set how often the int8 policy picks the float policy's action; the figure goes into
``int8.json`` next to the weights.

    .venv/bin/python -m harness.swarm.calibrate --seed 1
"""
import argparse
import json
import os

import numpy as np

from harness.swarm.sim import SwarmBatch
from onboard.swarm.dqn import DqnFloat, DqnInt8

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "swarm", "dqn")


def record_inputs(policy, seed, steps=150):
    rng = np.random.default_rng(seed)
    out = []
    for m, arena in ((2, 2.0), (3, 4.0), (4, 4.0)):
        sim = SwarmBatch(8, m, rng, {"arena_m": arena})
        for _ in range(steps):
            obs = sim.dqn_obs(0.1)
            out.append(obs.reshape(-1, obs.shape[-1]))
            q = np.array([[policy.q_values(o) for o in row] for row in obs])
            sim.step(q.argmax(-1))
    return np.concatenate(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", default=DQN_DIR)
    a = p.parse_args(argv)
    with np.load(os.path.join(a.dir, "weights.npz")) as data:
        weights = {k: data[k] for k in data.files}
    f = DqnFloat(weights)
    cal = record_inputs(f, a.seed, steps=60)
    np.save(os.path.join(a.dir, "calibration.npy"), cal.astype(np.float32))
    q8 = DqnInt8(weights, cal)
    test = record_inputs(f, a.seed + 1, steps=40)
    agree = float(np.mean([f.act(o) == q8.act(o) for o in test]))
    res = {"calibration_inputs": int(len(cal)), "test_inputs": int(len(test)), "int8_action_agreement": agree}
    with open(os.path.join(a.dir, "int8.json"), "w") as fh:
        json.dump(res, fh, indent=2)
        fh.write("\n")
    print(res)


if __name__ == "__main__":
    main()
