"""Export the swarm DQN to a full-int8 ``.tflite`` + model card through the policy pipeline.

Reads ``models/swarm/dqn/weights.npz`` (float, written by train_dqn), records representative
DQN inputs in the 2-D simulator (greedy float policy on its own flights, estimate noise as in
training), normalises them (card mean/std), quantises with
``harness.training.quantize.build_mlp_int8`` (symmetric per-channel int8 weights, int32 biases,
asymmetric int8 activations, int8 I/O) and writes ``models/swarm/dqn/model.tflite`` +
``card.json`` with ``write_model_dir``. The card's metrics are measured here on held-out
inputs: action agreement of the int8 model run by LiteRT (reference kernels) and by the pure
int8 kernel (``onboard.policy``, bit-exact with each other) with the float DQN.

    .venv/bin/python -m harness.training.swarm_policy.export_dqn --seed 1

Onboard, ``onboard.policy.load_policy("models/swarm/dqn", backend="litert" | "pure")`` runs it;
the swarm agent takes any object with ``act(obs)``. A missing or damaged weights.npz, a negative seed or a
folder it cannot write is one line on stderr and exit status 2 (0 on success).
"""
import argparse
import json
import os
import sys

import numpy as np

from harness.config import ConfigError, non_negative_int
from harness.sim.swarm_arena import SwarmBatch
from harness.training.npz_files import read_npz
from harness.training.quantize import build_mlp_int8, mlp_forward, write_model_dir
from onboard.swarm.actions import DIRECTIONS_BODY, N_ACTIONS
from onboard.swarm.dqn import DqnFloat

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DQN_DIR = os.path.join(REPO, "models", "swarm", "dqn")
STD_FLOOR = 1e-2          # dt is (nearly) constant in training: keep its normalisation finite

FEATURES = [
    {"name": "vx_body_mps", "unit": "m/s", "meaning": "own velocity, body x (forward)"},
    {"name": "vy_body_mps", "unit": "m/s", "meaning": "own velocity, body y (right)"},
    {"name": "goal_x_body_m", "unit": "m", "meaning": "goal position in the body frame, x (particle filter)"},
    {"name": "goal_y_body_m", "unit": "m", "meaning": "goal position in the body frame, y"},
    {"name": "obstacle_x_body_m", "unit": "m", "meaning": "nearest neighbour in the body frame, x"},
    {"name": "obstacle_y_body_m", "unit": "m", "meaning": "nearest neighbour in the body frame, y"},
    {"name": "dt_s", "unit": "s", "meaning": "time since the last policy update"},
]
ACTIONS = [{"name": "accel_%03ddeg" % (45 * k), "accel_body_mps2": [round(ux, 6), round(uy, 6)]}
           for k, (ux, uy) in enumerate(DIRECTIONS_BODY)] + [{"name": "slow_down", "accel_body_mps2": None}]


def finite(build):
    """``build`` for ``read_npz`` that first refuses a weights file with a NaN or infinite number (ValueError
    naming the array: a diverged training's weights, which no export can quantise)."""
    def checked(arrays):
        for name, value in sorted(arrays.items()):
            value = np.asarray(value)
            if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
                raise ValueError("%s holds NaN or infinite numbers" % name)
        return build(arrays)
    return checked


def record_inputs(policy, seed, steps=150, est_noise_m=0.2):
    """DQN inputs [N, 7] seen while the float policy flies 2, 3 and 4 drones (2 m and 4 m arenas)."""
    rng = np.random.default_rng(seed)
    out = []
    for m, arena in ((2, 2.0), (3, 4.0), (4, 4.0)):
        sim = SwarmBatch(8, m, rng, {"arena_m": arena})
        for _ in range(steps):
            obs = sim.dqn_obs(est_noise_m)
            out.append(obs.reshape(-1, obs.shape[-1]))
            sim.step(np.argmax(policy.q_values_batch(obs), -1))
    return np.concatenate(out)


def export(dqn_dir=DQN_DIR, seed=1):
    """Write ``dqn_dir/{model.tflite, card.json}`` from its weights.npz; returns the card. ConfigError (one line)
    when the weights cannot be read."""
    f = read_npz(os.path.join(dqn_dir, "weights.npz"), "DQN weights", finite(DqnFloat))
    w0, b0, w1, b1, w2, b2 = f.w
    calib = record_inputs(f, seed, steps=80)
    test = record_inputs(f, seed + 1, steps=60)
    mean = calib.mean(0)
    std = np.maximum(calib.std(0), STD_FLOOR)

    def norm(x):
        return (x - mean) / std

    # the card's normalisation x_n = (x - mean) / std is folded into the first layer, so the
    # exported network on x_n computes exactly the float DQN on x
    # The output is the advantage Q(s, a) - mean_a Q(s, a) (the mean folded into the last layer):
    # same argmax, but a ~10x narrower int8 output range than raw Q values, whose large common
    # offset would otherwise eat the resolution that separates the actions.
    w2a = w2 - w2.mean(1, keepdims=True)
    b2a = b2 - b2.mean()
    layers = [((w0 * std[:, None]).T, b0 + mean @ w0, "RELU"), (w1.T, b1, "RELU"), (w2a.T, b2a, "NONE")]
    q_ref = f.q_values_batch(calib[:50])
    assert np.allclose(mlp_forward(layers, norm(calib[:50])), q_ref - q_ref.mean(1, keepdims=True), atol=1e-9)

    tfl, info = build_mlp_int8(layers, norm(calib), per_channel=True,
                               description="pocket-drone swarm DQN 7-100-100-9 (uwb-pocket-drones IV-C)")
    from onboard.policy.policy import make_policy
    card = {
        "name": "swarm-dqn",
        "version": 1,
        "description": "Shared swarm DQN of the pocket-drone paper (IV-C): 7 inputs, two ReLU hidden layers "
                       "of 100, 9 action values; trained by harness/training/swarm_policy/train_dqn.py (reward eq. 4).",
        "paper": "uwb-pocket-drones-coordination IV-C",
        "op_set": ["FULLY_CONNECTED"],
        "inputs": [{"name": "input", "shape": [1, 7], "dtype": "int8", "quantization": info["input"],
                    "features": FEATURES,
                    "normalization": {"mean": [float(v) for v in mean], "std": [float(v) for v in std],
                                      "formula": "x_model = (x - mean) / std, then round(x_model / scale) + zero_point"}}],
        "outputs": [{"name": "output", "shape": [1, N_ACTIONS], "dtype": "int8", "quantization": info["output"],
                     "unit": "Q value minus its mean over the 9 actions (reward eq. 4 units)",
                     "meaning": "action advantage (same argmax as the DQN's Q values); act = argmax",
                     "actions": ACTIONS}],
        "quantization": {"weights": "symmetric int8 per output channel", "bias": "int32, scale = s_in * s_w",
                         "activations": "asymmetric int8",
                         "calibration": "%d DQN inputs recorded in the 2-D simulator (float policy, seed %d)"
                                        % (len(calib), seed),
                         "layers": info["layers"]},
        "training": {"seed": seed, "framework": "torch (harness/training/swarm_policy/train_dqn.py), exported by "
                                                "harness/training/swarm_policy/export_dqn.py",
                     "data": "see models/swarm/dqn/train_card.json", "command": "make train-swarm"},
        "float_reference": {"file": "weights.npz", "layers": "w0 b0 w1 b1 w2 b2 (x @ w + b), ReLU hidden"},
    }
    # measure before writing: LiteRT (reference kernels) and the pure int8 kernel against the float DQN
    litert = make_policy(tfl, None, "litert")
    pure = make_policy(tfl, None, "pure")
    q_float = f.q_values_batch(test)
    q_float = q_float - q_float.mean(1, keepdims=True)
    xq = np.clip(np.floor(np.abs(norm(test) / info["input"]["scale"]) + 0.5) * np.sign(norm(test))
                 + info["input"]["zero_point"], -128, 127).astype(np.int8)
    y_lite = np.asarray(litert.run_batch_q(xq))
    n_pure = min(400, len(xq))
    y_pure = np.array([pure.run([list(map(int, row))])[0] for row in xq[:n_pure]])
    q_int8 = info["output"]["scale"] * (y_lite.astype(np.int64) - info["output"]["zero_point"])
    err = np.abs(q_int8 - q_float)
    card["metrics"] = {
        "test_inputs": int(len(test)),
        "int8_litert_argmax_agreement_with_float": float(np.mean(y_lite.argmax(1) == q_float.argmax(1))),
        "int8_vs_float_max_abs_error": float(err.max()),
        "int8_vs_float_mean_abs_error": float(err.mean()),
        "output_scale": float(info["output"]["scale"]),
        "pure_vs_litert_bit_exact_inputs": "%d/%d" % (int(np.sum(np.all(y_pure == y_lite[:n_pure], 1))), n_pure),
    }
    card = write_model_dir(dqn_dir, tfl, card)
    return card


def export_main(tool, export_fn, default_dir, description, argv=None):
    """The exporters' command line (``--seed``, ``--dir``): ``export_fn(dir, seed)`` -> card, its metrics printed;
    the exit status: 0, or 2 after one line on stderr naming ``tool`` (weights unreadable, model not writable)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--dir", default=default_dir)
    a = p.parse_args(argv)
    try:
        card = export_fn(a.dir, a.seed)
    except ConfigError as exc:
        print("%s: %s" % (tool, exc), file=sys.stderr)
        return 2
    except OSError as exc:
        print("%s: cannot write the model in %s: %s" % (tool, a.dir, exc.strerror or exc), file=sys.stderr)
        return 2
    print(json.dumps(card["metrics"], indent=2))
    return 0


def main(argv=None):
    return export_main("export_dqn", export, DQN_DIR, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
