"""Pocket-drone DQN-shaped policy (7 -> 100 -> 100 -> 9) distilled from a synthetic teacher.

A small fixed model of the shape of the swarm's DQN (uwb-pocket-drones-coordination IV-C; the
trained one is models/swarm/dqn): it gives tests, benchmarks and the AVR kernel a committed model, trained on
something meaningful: the network regresses the action values of a one-step look-ahead
teacher.

Input state (paper IV-C): ``(v_x, v_y, d_x, d_y, o_x, o_y, dt)`` -- own velocity (m/s),
goal and obstacle positions relative to the drone (m), time since the last update (s).
Actions: 0..7 accelerate at ``k * 45 deg`` (k = 0 is +x), 8 slow down.

Teacher action score: the desired acceleration direction combines goal attraction
(saturating beyond 1 m), obstacle repulsion (Gaussian, 0.4 m) and velocity damping scaled by
``dt``: ``a_des = d / max(|d|, 1) + 1.5 exp(-|o|^2 / (2 * 0.4^2)) (-o / |o|) - v dt / 0.3``;
accelerating at ``k * 45 deg`` scores ``1 - min(angle, 90 deg) / 90 deg`` for the angle
between its direction and ``a_des`` (in [0, 1]); slowing down scores ``1.2 exp(-|d|^2 / (2 * 0.2^2)) - 0.2`` (it wins within
about 0.15 m of the goal). Scores are linear in the angle (not its cosine) so the best two
actions separate quickly away from the bisectors, which is where int8 rounding can flip
the argmax.

Training: numpy, Adam on the mean squared Q error, ReLU hidden layers, inputs
normalized by the training set's mean/std (stored in the card). Run::

    python -m harness.training.dqn_teacher --out models/pocket-dqn --seed 1

A negative seed or an ``--out`` folder it cannot create is one line on stderr and exit status 2, before
training; every file is written whole.
"""
import argparse
import math
import os
import sys

import numpy as np

from harness.config import ConfigError, non_negative_int, positive_int
from harness.data_files import npz_bytes
from harness.report.run_report import report_folder, write_whole
from harness.sim.rng import RunRandom
from harness.training.quantize import build_mlp_int8, mlp_forward, write_model_dir

N_ACTIONS = 9
ACCEL_MPS2 = 1.0
SPEED_CAP_MPS = 1.0
FEATURES = [
    {"name": "v_x", "unit": "m/s", "meaning": "own velocity, x"},
    {"name": "v_y", "unit": "m/s", "meaning": "own velocity, y"},
    {"name": "d_x", "unit": "m", "meaning": "goal position relative to the drone, x"},
    {"name": "d_y", "unit": "m", "meaning": "goal position relative to the drone, y"},
    {"name": "o_x", "unit": "m", "meaning": "obstacle (nearest drone) relative position, x"},
    {"name": "o_y", "unit": "m", "meaning": "obstacle (nearest drone) relative position, y"},
    {"name": "dt", "unit": "s", "meaning": "time since the last update"},
]
ACTIONS = [{"name": "accel_%03ddeg" % (45 * k), "accel_mps2": [round(ACCEL_MPS2 * math.cos(math.radians(45 * k)), 6),
                                                             round(ACCEL_MPS2 * math.sin(math.radians(45 * k)), 6)]}
           for k in range(8)] + [{"name": "slow_down", "accel_mps2": None}]
# Named slices of the state vector (no magic indexes).
VEL = slice(0, 2)
GOAL = slice(2, 4)
OBST = slice(4, 6)
DT = 6
HALF_PI = 0.5 * math.pi


def sample_states(rng, n):
    """Random states [n, 7]: speed <= 1 m/s, goal in a 4 m box, obstacle in 3 m box, dt 0.05-0.25 s."""
    s = np.empty((n, 7))
    ang = rng.uniform(-math.pi, math.pi, n)
    spd = SPEED_CAP_MPS * np.sqrt(rng.uniform(0, 1, n))
    s[:, 0], s[:, 1] = spd * np.cos(ang), spd * np.sin(ang)
    s[:, GOAL] = rng.uniform(-2.0, 2.0, (n, 2))
    s[:, OBST] = rng.uniform(-1.5, 1.5, (n, 2))
    s[:, DT] = rng.uniform(0.05, 0.25, n)
    return s


def teacher_q(states):
    """Teacher action scores [n, 9] (see module docstring)."""
    v = states[:, VEL]
    d = states[:, GOAL]
    o = states[:, OBST]
    dt = states[:, DT:DT + 1]
    dist = np.linalg.norm(d, axis=1, keepdims=True)
    odist = np.linalg.norm(o, axis=1, keepdims=True)
    a_des = (d / np.maximum(dist, 1.0)
             - 1.5 * np.exp(-odist ** 2 / (2 * 0.4 ** 2)) * o / np.maximum(odist, 1e-6)
             - v * dt / 0.3)
    a_dir = a_des / np.maximum(np.linalg.norm(a_des, axis=1, keepdims=True), 1e-9)
    q = np.empty((states.shape[0], N_ACTIONS))
    for k in range(8):
        u = np.array(ACTIONS[k]["accel_mps2"]) / ACCEL_MPS2
        angle = np.arccos(np.clip(a_dir @ u, -1.0, 1.0))
        q[:, k] = 1.0 - np.minimum(angle, HALF_PI) / HALF_PI
    q[:, 8] = 1.2 * np.exp(-dist[:, 0] ** 2 / (2 * 0.2 ** 2)) - 0.2
    return q


def train_mlp(x, y, sizes, rng, epochs=40, batch=256, lr=2e-3):
    """Adam on MSE; returns [(W, b, act)] with ReLU hidden layers and a linear output."""
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        w = rng.normal(0.0, math.sqrt(2.0 / n_in), (n_out, n_in))
        params.append([w, np.zeros(n_out)])
    m = [[np.zeros_like(p) for p in layer] for layer in params]
    v = [[np.zeros_like(p) for p in layer] for layer in params]
    beta1, beta2, eps, t = 0.9, 0.999, 1e-8, 0
    n = x.shape[0]
    for epoch in range(epochs):
        order = rng.permutation(n)
        step_lr = lr * (0.5 * (1 + math.cos(math.pi * epoch / epochs)) * 0.95 + 0.05)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            hs = [x[idx]]
            for li, (w, b) in enumerate(params):
                z = hs[-1] @ w.T + b
                hs.append(np.maximum(z, 0.0) if li < len(params) - 1 else z)
            grad = 2.0 * (hs[-1] - y[idx]) / len(idx)
            t += 1
            for li in range(len(params) - 1, -1, -1):
                w, b = params[li]
                gw = grad.T @ hs[li]
                gb = grad.sum(axis=0)
                if li > 0:
                    grad = (grad @ w) * (hs[li] > 0)
                for pi, g in enumerate((gw, gb)):
                    m[li][pi] = beta1 * m[li][pi] + (1 - beta1) * g
                    v[li][pi] = beta2 * v[li][pi] + (1 - beta2) * g * g
                    mh = m[li][pi] / (1 - beta1 ** t)
                    vh = v[li][pi] / (1 - beta2 ** t)
                    params[li][pi] -= step_lr * mh / (np.sqrt(vh) + eps)
    acts = ["RELU"] * (len(params) - 1) + ["NONE"]
    return [(w, b, a) for (w, b), a in zip(params, acts)]


def int8_outputs(tflite_bytes, x_q):
    """Run the exported model with LiteRT (reference kernels) on int8 inputs [n, 7]."""
    from onboard.policy.litert import LiteRTPolicy
    return LiteRTPolicy(tflite_bytes).run_batch_q(x_q)


def train_and_export(out_dir, seed=1, n_train=30000, n_test=10000, n_calib=20000, epochs=30,
                     per_channel=True):
    """Train, quantize, evaluate and write ``out_dir``; returns the card."""
    rr = RunRandom(seed)
    x_train = sample_states(rr.stream("train-states"), n_train)
    x_test = sample_states(rr.stream("test-states"), n_test)
    x_calib = sample_states(rr.stream("calib-states"), n_calib)
    y_train, y_test = teacher_q(x_train), teacher_q(x_test)
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)

    def norm(x):
        return (x - mean) / std

    layers = train_mlp(norm(x_train), y_train, [7, 100, 100, 9], rr.stream("init"), epochs=epochs)
    q_float = mlp_forward(layers, norm(x_test))
    x_train_n = norm(x_train)
    tfl, info = build_mlp_int8(layers, norm(x_calib), per_channel=per_channel,
                               description="pocket-drone DQN shape 7-100-100-9, teacher-distilled",
                               input_range=(x_train_n.min(), x_train_n.max()))
    s_in, zp_in = info["input"]["scale"], info["input"]["zero_point"]
    x_q = np.clip(np.floor(np.abs(norm(x_test) / s_in) + 0.5) * np.sign(norm(x_test)) + zp_in,
                  -128, 127).astype(np.int8)
    y_q = int8_outputs(tfl, x_q).astype(np.int64)
    q_int8 = info["output"]["scale"] * (y_q - info["output"]["zero_point"])
    err = np.abs(q_int8 - q_float)
    teacher_best = y_test.argmax(axis=1)
    metrics = {
        "test_samples": n_test,
        "float_q_rmse": float(np.sqrt(np.mean((q_float - y_test) ** 2))),
        "float_argmax_agreement_with_teacher": float(np.mean(q_float.argmax(axis=1) == teacher_best)),
        "int8_argmax_agreement_with_float": float(np.mean(y_q.argmax(axis=1) == q_float.argmax(axis=1))),
        "int8_argmax_agreement_with_teacher": float(np.mean(y_q.argmax(axis=1) == teacher_best)),
        "int8_vs_float_max_abs_error": float(err.max()),
        "int8_vs_float_mean_abs_error": float(err.mean()),
        "output_scale": info["output"]["scale"],
        "int8_vs_float_max_abs_error_in_output_steps": float(err.max() / info["output"]["scale"]),
    }
    card = {
        "name": "pocket-dqn",
        "version": 1,
        "description": "DQN-shaped action-value network of the pocket-drone paper (IV-C): 7 inputs, "
                       "two ReLU hidden layers of 100, 9 action values. Distilled from a synthetic "
                       "one-step look-ahead teacher (harness/training/dqn_teacher.py) until the "
                       "swarm lane trains the real DQN.",
        "paper": "uwb-pocket-drones-coordination IV-C",
        "op_set": ["FULLY_CONNECTED"],
        "inputs": [{"name": "input", "shape": [1, 7], "dtype": "int8",
                    "quantization": {"scale": s_in, "zero_point": zp_in},
                    "features": FEATURES,
                    "normalization": {"mean": [float(v) for v in mean], "std": [float(v) for v in std],
                                      "formula": "x_model = (x - mean) / std, then round(x_model / scale) + zero_point"}}],
        "outputs": [{"name": "output", "shape": [1, 9], "dtype": "int8",
                     "quantization": info["output"], "unit": "action score (teacher units, in [-0.2, 1])",
                     "meaning": "value per action (stands in for the DQN Q values); act = argmax",
                     "actions": ACTIONS}],
        "quantization": {"weights": "symmetric int8 per output channel" if per_channel else "symmetric int8 per tensor",
                         "bias": "int32, scale = s_in * s_w", "activations": "asymmetric int8",
                         "calibration": "%d representative states from the training distribution" % n_calib,
                         "layers": info["layers"]},
        "training": {"seed": seed, "framework": "numpy (Adam, MSE)", "samples": n_train,
                     "epochs": epochs, "teacher": "harness.training.dqn_teacher.teacher_q",
                     "command": "python -m harness.training.dqn_teacher --out %s --seed %d" % (out_dir, seed)},
        "metrics": metrics,
    }
    card["float_reference"] = {"file": "float_weights.npz",
                               "layers": "W0 b0 W1 b1 W2 b2 (float32, y = W x + b), ReLU hidden",
                               "normalization": "mean, std arrays as in the card"}
    card = write_model_dir(out_dir, tfl, card)
    arrays = {"mean": mean, "std": std}
    for i, (w, b, _) in enumerate(layers):
        arrays["W%d" % i] = w.astype(np.float32)
        arrays["b%d" % i] = b.astype(np.float32)
    write_whole(os.path.join(out_dir, "float_weights.npz"), npz_bytes(arrays))
    return card


def load_float_reference(model_dir):
    """(float layers, mean, std) saved next to a model by :func:`train_and_export` (the file is closed on
    return)."""
    with np.load(os.path.join(model_dir, "float_weights.npz")) as z:
        n = sum(1 for k in z.files if k.startswith("W"))
        layers = [(z["W%d" % i].astype(np.float64), z["b%d" % i].astype(np.float64),
                   "RELU" if i < n - 1 else "NONE") for i in range(n)]
        return layers, z["mean"], z["std"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="models/pocket-dqn")
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--epochs", type=positive_int, default=30)
    p.add_argument("--per-tensor", action="store_true", help="per-tensor instead of per-channel weights")
    args = p.parse_args(argv)
    try:                                          # before training: a folder it cannot write is one line
        report_folder(args.out, "output folder")
    except ConfigError as exc:
        print("dqn_teacher: %s" % exc, file=sys.stderr)
        return 2
    try:
        card = train_and_export(args.out, seed=args.seed, epochs=args.epochs, per_channel=not args.per_tensor)
    except OSError as exc:
        print("dqn_teacher: cannot write the model in %s: %s" % (args.out, exc.strerror or exc), file=sys.stderr)
        return 2
    for k, v in sorted(card["metrics"].items()):
        print("%-45s %s" % (k, v))
    print("wrote %s/model.tflite (%d bytes) and card.json" % (args.out, card["size_bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
