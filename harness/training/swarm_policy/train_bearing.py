"""Train the learned bearing / orientation estimator (uwb-pocket-drones IV-A, V-C) supervised.

Data from harness/training/swarm_policy/bearing_data.py (noise-free; fresh UWB/velocity noise on every
batch, pocket V-C.1), sequences of length n drawn from the recordings, cross-entropy of the
two 18-class heads backpropagated only for steps with at least k predecessors (pocket V-C.2,
fig. 2), orientation loss only for drone (not goal) sequences. RMSProp, minibatch 30
(pocket V-C.3); the weights with the best validation accuracy are kept. GRU layer instead
of the paper's 512 LSTM cells (see onboard/swarm/bearing_net.py).

    .venv/bin/python -m harness.training.swarm_policy.train_bearing --help

Writes models/swarm/bearing/weights.npz and train_card.json, each whole. Needs PyTorch (requirements-train.txt).
Out-of-range numbers, a missing or damaged ``--data-policy`` weights.npz and an output folder that cannot be
created are refused before training (one line, exit status 2).
"""
import argparse
import os
import sys
import time

import numpy as np

from harness.config import ConfigError, non_negative_int, positive_float, positive_int
from harness.report.run_report import report_folder
from harness.training.npz_files import read_npz, save_weights
from harness.training.swarm_policy import bearing_data as bd
from harness.sim.swarm_arena import DEFAULTS as SIM_DEFAULTS
from onboard.swarm.bearing_net import BEARING, N_BINS, ORIENTATION, BearingNet, angle_to_class, decode, softmax

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_DIR = os.path.join(REPO, "models", "swarm", "bearing")
IN_SCALE = np.array([10.0, 0.5, 2.0, 2.0, 2.0, 2.0], np.float32)   # dt/0.1 s, d/2 m, v/0.5 m/s
DATA_STEPS = 400          # steps of every recorded sequence (make_dataset)
VAL_STEPS = 200           # steps of the validation sequences train() evaluates
NOISE = {"range_bias_m": SIM_DEFAULTS["range_bias_m"], "range_sigma_m": SIM_DEFAULTS["range_sigma_m"],
         "vel_sigma_mps": SIM_DEFAULTS["vel_noise_mps"]}


def make_dataset(seed, steps=DATA_STEPS, scale=1, q_fn=None):
    """Noise-free recordings: 2 m arenas with 2 drones (pocket V-C.1) and 4 m arenas with 3 drones (flights)."""
    rng = np.random.default_rng(seed)
    parts = [bd.collect(rng, 64 * scale, 2, steps, 2.0, q_fn=q_fn), bd.collect(rng, 32 * scale, 3, steps, 4.0, q_fn=q_fn)]
    x = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[2] for p in parts])
    has = np.concatenate([p[3] for p in parts])
    return x, b, y, has


def _windows(rng, n_seq, T, batch, n):
    s = rng.integers(0, n_seq, batch)
    t0 = rng.integers(0, T - n + 1, batch)
    return s, t0


def evaluate(weights, x, b, y, has, rng, k, net=None):
    """Accuracy (exact bin, +-1 bin) and mean absolute decoded error (deg) on whole noisy sequences, steps >= k.
    ``net``: any runner with ``run(xs) -> logits`` (e.g. the int8 ``BearingPolicy``); default BearingNet(weights)."""
    net = net if net is not None else BearingNet(weights)
    xn = bd.add_noise(x, has, rng, **NOISE)
    logits = net.run(xn)[:, k:]
    pb = softmax(logits[..., BEARING])
    po = softmax(logits[..., ORIENTATION])
    cb = angle_to_class(b[:, k:])
    co = angle_to_class(y[has][:, k:])
    acc_b = float((pb.argmax(-1) == cb).mean())
    near_b = float((np.abs((pb.argmax(-1) - cb + N_BINS // 2) % N_BINS - N_BINS // 2) <= 1).mean())
    acc_o = float((po[has].argmax(-1) == co).mean())
    eb = np.abs(np.angle(np.exp(1j * (decode(pb)[0] - b[:, k:]))))
    eo = np.abs(np.angle(np.exp(1j * (decode(po[has])[0] - y[has][:, k:]))))
    return {"bearing_acc": acc_b, "bearing_acc_pm1": near_b, "orientation_acc": acc_o,
            "bearing_mae_deg": float(np.degrees(eb.mean())), "orientation_mae_deg": float(np.degrees(eo.mean()))}


def train(seed=1, iters=2500, hidden=64, seq_len=80, k=10, batch=30, lr=2e-3, optimizer="adam", data_scale=1,
          max_minutes=None, data_policy=None, cell="gru", log=print):
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    t0 = time.time()
    q_fn = None
    if data_policy:
        from onboard.swarm.dqn import DqnFloat
        q_fn = DqnFloat.load(os.path.join(data_policy, "weights.npz")).q_values_batch
    x, b, y, has = make_dataset(seed, scale=data_scale, q_fn=q_fn)
    n_seq, T = x.shape[:2]
    perm = rng.permutation(n_seq)
    n_val = max(8, n_seq // 10)
    val, tr = perm[:n_val], perm[n_val:]
    log("data: %d sequences x %d steps (%.0fs)" % (n_seq, T, time.time() - t0))
    if cell == "gru":
        gru = torch.nn.GRU(bd.N_IN, hidden, batch_first=True)
    else:
        gru = torch.nn.RNN(bd.N_IN, hidden, nonlinearity="tanh", batch_first=True)
    head = torch.nn.Linear(hidden, 2 * N_BINS)
    params = list(gru.parameters()) + list(head.parameters())
    opt = (torch.optim.RMSprop(params, lr=lr) if optimizer == "rmsprop" else torch.optim.Adam(params, lr=lr))
    scale = torch.from_numpy(IN_SCALE)
    cls_b = angle_to_class(b)
    cls_o = angle_to_class(y)
    best = None
    history = []
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, iters, eta_min=lr * 0.05)
    every = max(1, iters // 10)
    for it in range(iters):
        out_of_time = max_minutes is not None and time.time() - t0 > 60.0 * max_minutes
        si, st = _windows(rng, len(tr), T, batch, seq_len)
        s = tr[si]
        idx_t = st[:, None] + np.arange(seq_len)
        xb = bd.add_noise(x[s[:, None], idx_t], has[s], rng, **NOISE)       # fresh noise per batch
        out, _ = gru(torch.from_numpy(xb) * scale)
        logits = head(out)[:, k:]                                           # only steps with >= k predecessors
        tb = torch.from_numpy(cls_b[s[:, None], idx_t][:, k:])
        to = torch.from_numpy(cls_o[s[:, None], idx_t][:, k:])
        lb = torch.nn.functional.cross_entropy(logits[..., BEARING].reshape(-1, N_BINS), tb.reshape(-1))
        mask = torch.from_numpy(has[s])
        lo = torch.nn.functional.cross_entropy(logits[mask][..., ORIENTATION].reshape(-1, N_BINS),
                                               to[mask].reshape(-1)) if mask.any() else 0.0
        loss = lb + lo
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)
        opt.step()
        sched.step()
        if (it + 1) % every == 0 or it == iters - 1 or out_of_time:
            w = weights_of(gru, head)
            ev = evaluate(w, x[val][:24, :VAL_STEPS], b[val][:24, :VAL_STEPS], y[val][:24, :VAL_STEPS], has[val][:24],
                          np.random.default_rng(seed + 7), k)
            history.append({"iter": it + 1, "loss": float(loss.detach()), **ev})
            log("iter %5d loss %.3f bearing acc %.2f (+-1 bin %.2f, mae %.1f deg) orientation acc %.2f (mae %.1f deg) (%.0fs)"
                % (it + 1, float(loss.detach()), ev["bearing_acc"], ev["bearing_acc_pm1"], ev["bearing_mae_deg"],
                   ev["orientation_acc"], ev["orientation_mae_deg"], time.time() - t0))
            score = ev["bearing_acc_pm1"] - ev["bearing_mae_deg"] / 180 - ev["orientation_mae_deg"] / 180
            if best is None or score > best[0]:
                best = (score, w, ev)
        if out_of_time:
            log("stopping at iteration %d: time budget of %.1f min used" % (it + 1, max_minutes))
            break
    return best[1], {"best_validation": best[2], "history": history, "train_wall_s": time.time() - t0,
                     "sequences": int(n_seq), "steps_per_sequence": int(T)}


def weights_of(gru, head):
    return {"w_ih": gru.weight_ih_l0.detach().numpy().copy(), "w_hh": gru.weight_hh_l0.detach().numpy().copy(),
            "b_ih": gru.bias_ih_l0.detach().numpy().copy(), "b_hh": gru.bias_hh_l0.detach().numpy().copy(),
            "w_out": head.weight.detach().numpy().copy(), "b_out": head.bias.detach().numpy().copy(),
            "in_scale": IN_SCALE.copy()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--iters", type=positive_int, default=2500)
    p.add_argument("--hidden", type=positive_int, default=64)
    p.add_argument("--cell", choices=("gru", "rnn"), default="gru",
                   help="gru, or rnn (Elman, tanh: exports to int8 .tflite, harness/training/swarm_policy/export_bearing.py)")
    p.add_argument("--seq-len", type=positive_int, default=80)
    p.add_argument("--k", type=non_negative_int, default=10, help="backpropagate only steps with >= k predecessors")
    p.add_argument("--data-policy", default=None,
                   help="DQN model folder flying the data drones (pocket V-C.1); default: a goal walker")
    p.add_argument("--batch", type=positive_int, default=30, help="sequences per minibatch (paper: 30)")
    p.add_argument("--lr", type=positive_float, default=2e-3)
    p.add_argument("--data-scale", type=positive_int, default=1, help="multiply the number of recorded arenas")
    p.add_argument("--max-minutes", type=positive_float, default=None, help="stop (keeping the best weights) after this long")
    p.add_argument("--optimizer", choices=("adam", "rmsprop"), default="adam",
                   help="paper: RMSProp; Adam converges in fewer iterations here")
    p.add_argument("--out", default=MODEL_DIR)
    a = p.parse_args(argv)
    if a.seq_len > DATA_STEPS:
        p.error("--seq-len must be <= %d (the recorded sequences' steps), got %d" % (DATA_STEPS, a.seq_len))
    if a.k >= min(a.seq_len, VAL_STEPS):
        p.error("--k must be < --seq-len and < %d (the validation sequences' steps), got %d" % (VAL_STEPS, a.k))
    if a.data_policy:                             # read by train(): a missing or damaged file is one line first
        from onboard.swarm.dqn import DqnFloat

        from harness.training.swarm_policy.export_dqn import finite
        try:
            read_npz(os.path.join(a.data_policy, "weights.npz"), "--data-policy DQN weights", finite(DqnFloat))
        except ConfigError as exc:
            print("train_bearing: %s" % exc, file=sys.stderr)
            return 2
    try:                                          # before training: a folder it cannot write is one line
        report_folder(a.out, "output folder")
    except ConfigError as exc:
        print("train_bearing: %s" % exc, file=sys.stderr)
        return 2
    weights, info = train(seed=a.seed, iters=a.iters, hidden=a.hidden, seq_len=a.seq_len, k=a.k,
                          optimizer=a.optimizer, batch=a.batch, lr=a.lr, data_scale=a.data_scale,
                          max_minutes=a.max_minutes, data_policy=a.data_policy, cell=a.cell)
    card = {
        "model": "learned bearing / orientation estimator (uwb-pocket-drones IV-A)",
        "inputs": ["dt_s", "range_m", "vx_own_body_mps", "vy_own_body_mps", "vx_obj_body_mps", "vy_obj_body_mps"],
        "input_scale": IN_SCALE.tolist(),
        "outputs": "logits: 18 bearing bins then 18 relative-orientation bins (20 deg, from -180 deg)",
        "architecture": "%s(%d) + linear(36); paper: LSTM(512)" % ({"gru": "GRU", "rnn": "Elman RNN (tanh)"}[a.cell], a.hidden),
        "training": {"seed": a.seed, "iters": a.iters, "batch": a.batch, "seq_len": a.seq_len, "k": a.k,
                     "optimizer": "%s %g, cosine decay, grad clip 5" % (a.optimizer, a.lr), "noise": NOISE,
                     "max_minutes": a.max_minutes, "data_policy": a.data_policy,
                     "data": "%d arenas 2 m x 2 drones + %d arenas 4 m x 3 drones, 400 steps of 0.1 s, "
                             % (64 * a.data_scale, 32 * a.data_scale)
                             + ("DQN %s" % a.data_policy if a.data_policy else "goal walker")
                             + " with 30 % random moves; goal sequences use a random fixed point"},
        "command": "make train-swarm",
        **info,
    }
    # card.json of this folder belongs to the int8 export (harness/training/swarm_policy/export_bearing.py)
    return save_weights(a.out, weights, card, "train_bearing")


if __name__ == "__main__":
    sys.exit(main())
