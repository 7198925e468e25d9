"""Export the Elman-RNN bearing estimator to a full-int8 ``.tflite`` + card for the policy backends.

One recurrent step is one inference (onboard/policy/README.md, "Recurrent models"): the
input is ``[x (6), h (H)]`` (``x`` = (dt, range, v_own, v_obj), normalised by the card with the
training's input scaling; ``h`` the state, mean 0 / std 1), and the graph is

    FULLY_CONNECTED([W_ih | W_hh], b_ih + b_hh) -> TANH -> state h' (output 1, scale 1/128)
    h' -> FULLY_CONNECTED(W_out, b_out) -> 36 logits (output 0: 18 bearing + 18 orientation bins)

only FULLY_CONNECTED and TANH, so LiteRT (reference kernels), the pure int8 kernel and the C
kernel all run it. Activation ranges are calibrated on noisy recorded sequences run through
the float network. The card's metrics compare the int8 model, stepped through whole sequences
with its own quantised state, with the float network on held-out sequences (decoded bearing /
orientation error, pocket IV-A), so "int8 hurts" is measured, not assumed.

    .venv/bin/python -m harness.swarm.export_bearing --dir models/swarm/bearing
"""
import argparse
import json
import os

import numpy as np

from harness.swarm import bearing_data as bd
from harness.swarm.train_bearing import NOISE
from harness.training.quantize import activation_qparams, quantize_weights, write_model_dir
from harness.training.tflite_builder import TfliteBuilder
from onboard.policy.card import CARD_SCHEMA
from onboard.swarm.bearing_net import BEARING, N_BINS, N_IN, ORIENTATION, BearingNet, BearingPolicy, decode, softmax

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEARING_DIR = os.path.join(REPO, "models", "swarm", "bearing")
INPUT_NAMES = [("dt_s", "s", "time since the previous range to this object"),
               ("range_m", "m", "UWB range"),
               ("vx_own_body_mps", "m/s", "own velocity, body x"), ("vy_own_body_mps", "m/s", "own velocity, body y"),
               ("vx_obj_body_mps", "m/s", "object velocity in its own body frame, x (ranging frame; goal 0)"),
               ("vy_obj_body_mps", "m/s", "object velocity in its own body frame, y")]


def _sequences(seed, n_envs=12, steps=200):
    rng = np.random.default_rng(seed)
    x, b, y, has = bd.collect(rng, n_envs, 2, steps, 2.0)
    x2, b2, y2, has2 = bd.collect(rng, n_envs // 2, 3, steps, 4.0)
    x, b, y, has = (np.concatenate(p) for p in ((x, x2), (b, b2), (y, y2), (has, has2)))
    return bd.add_noise(x, has, rng, **NOISE), b, y, has


def _float_trace(net, xs):
    """Per step: inputs [x_n, h] [B, T, 6 + H], pre-activations [B, T, H], logits [B, T, 36]."""
    B, T, _ = xs.shape
    H = net.hidden
    w = net.w
    xn = xs * w["in_scale"]
    h = np.zeros((B, H))
    ins, pres, outs = [], [], []
    for t in range(T):
        ins.append(np.concatenate([xn[:, t], h], -1))
        pre = xn[:, t] @ w["w_ih"].T + w["b_ih"] + h @ w["w_hh"].T + w["b_hh"]
        h = np.tanh(pre)
        pres.append(pre)
        outs.append(h @ w["w_out"].T + w["b_out"])
    return np.stack(ins, 1), np.stack(pres, 1), np.stack(outs, 1)


def build(net, calib_xs):
    """int8 .tflite bytes and quantisation info for the Elman net, calibrated on noisy sequences."""
    if net.cell != "rnn":
        raise ValueError("only the Elman (rnn) cell exports to FULLY_CONNECTED + TANH; this net is %r" % net.cell)
    H = net.hidden
    w = net.w
    ins, pres, logits = _float_trace(net, calib_xs)
    b = TfliteBuilder("pocket-drone bearing/orientation estimator, Elman RNN step (uwb-pocket-drones IV-A)")
    in_scale, in_zp = activation_qparams(ins.min(), ins.max())
    t_in = b.add_tensor("input", [1, N_IN + H], "int8", scale=in_scale, zero_point=in_zp)
    w1 = np.concatenate([w["w_ih"], w["w_hh"]], 1)
    b1 = w["b_ih"] + w["b_hh"]
    q1, s1 = quantize_weights(w1, per_channel=True)
    bs1 = (np.float32(in_scale) * s1).astype(np.float32)
    t_w1 = b.add_tensor("cell/weights", [H, N_IN + H], "int8", data=q1, scale=s1, zero_point=0)
    t_b1 = b.add_tensor("cell/bias", [H], "int32", data=np.round(b1 / bs1.astype(np.float64)).astype(np.int32),
                        scale=bs1, zero_point=0)
    pre_scale, pre_zp = activation_qparams(pres.min(), pres.max())
    t_pre = b.add_tensor("cell/pre", [1, H], "int8", scale=pre_scale, zero_point=pre_zp)
    b.add_op("FULLY_CONNECTED", [t_in, t_w1, t_b1], [t_pre], activation="NONE")
    t_state = b.add_tensor("state", [1, H], "int8", scale=1.0 / 128.0, zero_point=0)
    b.add_op("TANH", [t_pre], [t_state])
    q2, s2 = quantize_weights(w["w_out"], per_channel=True)
    bs2 = (np.float32(1.0 / 128.0) * s2).astype(np.float32)
    t_w2 = b.add_tensor("head/weights", [2 * N_BINS, H], "int8", data=q2, scale=s2, zero_point=0)
    t_b2 = b.add_tensor("head/bias", [2 * N_BINS], "int32",
                        data=np.round(w["b_out"] / bs2.astype(np.float64)).astype(np.int32), scale=bs2, zero_point=0)
    out_scale, out_zp = activation_qparams(logits.min(), logits.max())
    t_out = b.add_tensor("logits", [1, 2 * N_BINS], "int8", scale=out_scale, zero_point=out_zp)
    b.add_op("FULLY_CONNECTED", [t_state, t_w2, t_b2], [t_out], activation="NONE")
    info = {"input": {"scale": in_scale, "zero_point": in_zp}, "pre": {"scale": pre_scale, "zero_point": pre_zp},
            "state": {"scale": 1.0 / 128.0, "zero_point": 0}, "logits": {"scale": out_scale, "zero_point": out_zp}}
    return b.finish([t_in], [t_out, t_state]), info


def angle_errors_deg(run_seq, xs, b, y, has, k=10):
    """Mean |decoded - true| bearing and orientation errors (deg) over steps >= k of whole sequences."""
    eb, eo = [], []
    for s in range(len(xs)):
        logits = run_seq(xs[s])
        pb = softmax(logits[k:, BEARING])
        po = softmax(logits[k:, ORIENTATION])
        eb.append(np.abs(np.angle(np.exp(1j * (decode(pb)[0] - b[s, k:])))))
        if has[s]:
            eo.append(np.abs(np.angle(np.exp(1j * (decode(po)[0] - y[s, k:])))))
    return float(np.degrees(np.mean(eb))), float(np.degrees(np.mean(eo)))


def export(model_dir=BEARING_DIR, seed=1):
    from onboard.policy.policy import make_policy

    net = BearingNet.load(os.path.join(model_dir, "weights.npz"))
    calib_xs, _, _, _ = _sequences(seed)
    tfl, info = build(net, calib_xs)
    H = net.hidden
    features = [{"name": n, "unit": u, "meaning": m} for n, u, m in INPUT_NAMES] + \
        [{"name": "h%d" % i, "unit": "1", "meaning": "recurrent state (the previous step's output 1)"} for i in range(H)]
    std = [float(1.0 / v) for v in net.w["in_scale"]] + [1.0] * H
    card = {
        "schema": CARD_SCHEMA,
        "name": "swarm-bearing",
        "version": 1,
        "description": "Learned bearing / relative-orientation estimator of the pocket-drone paper (IV-A), one "
                       "Elman-RNN step per inference; the state travels as the last H inputs / output 1.",
        "paper": "uwb-pocket-drones-coordination IV-A",
        "op_set": ["FULLY_CONNECTED", "TANH"],
        "inputs": [{"name": "input", "shape": [1, N_IN + H], "dtype": "int8", "quantization": info["input"],
                    "features": features,
                    "normalization": {"mean": [0.0] * (N_IN + H), "std": std,
                                      "formula": "x_model = (x - mean) / std, then round(x_model / scale) + zero_point"}}],
        "outputs": [{"name": "logits", "shape": [1, 2 * N_BINS], "dtype": "int8", "quantization": info["logits"],
                     "unit": "logit", "meaning": "18 bearing bins then 18 relative-orientation bins (20 deg from -180)"},
                    {"name": "state", "shape": [1, H], "dtype": "int8", "quantization": info["state"],
                     "unit": "1", "meaning": "next recurrent state (feed back as the last H inputs)"}],
        "quantization": {"weights": "symmetric int8 per output channel", "bias": "int32, scale = s_in * s_w",
                         "activations": "asymmetric int8; state TANH 1/128",
                         "calibration": "%d noisy sequences x %d steps (harness/swarm/bearing_data.py)"
                                        % calib_xs.shape[:2], "info": info},
        "training": {"framework": "torch (harness/swarm/train_bearing.py --cell rnn)", "data": "see train_card.json",
                     "command": "make train-swarm"},
        "float_reference": {"file": "weights.npz"},
    }
    # int8 vs float on held-out sequences, both stepped through whole sequences
    xs, b, y, has = _sequences(seed + 1, n_envs=6, steps=150)
    lite = BearingPolicy(make_policy(tfl, card, "litert"))
    pure = BearingPolicy(make_policy(tfl, card, "pure"))

    def run_policy(pol):
        def run_seq(seq):
            h = pol.new_state()
            out = []
            for t in range(len(seq)):
                h, logits = pol.step_logits(h, seq[t])
                out.append(logits)
            return np.array(out)
        return run_seq

    fb, fo = angle_errors_deg(lambda seq: net.run(seq[None])[0], xs, b, y, has)
    qb, qo = angle_errors_deg(run_policy(lite), xs, b, y, has)
    seq = xs[0, :40]
    same = np.array_equal(run_policy(lite)(seq), run_policy(pure)(seq))
    card["metrics"] = {"held_out_sequences": int(len(xs)), "steps": int(xs.shape[1]),
                       "float_bearing_mae_deg": fb, "float_orientation_mae_deg": fo,
                       "int8_bearing_mae_deg": qb, "int8_orientation_mae_deg": qo,
                       "pure_equals_litert_40_steps": bool(same)}
    return write_model_dir(model_dir, tfl, card)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", default=BEARING_DIR)
    a = p.parse_args(argv)
    card = export(a.dir, a.seed)
    print(json.dumps(card["metrics"], indent=2))


if __name__ == "__main__":
    main()
