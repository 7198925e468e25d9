"""Export the learned bearing estimator to a full-int8 ``.tflite`` + card for the policy backends.

One recurrent step is one inference (onboard/policy/README.md, "Recurrent models"). Two cells:

* GRU (the committed estimator, :func:`build_gru`): inputs ``x`` (6: dt, range, v_own, v_obj,
  normalised by the card with the training's input scaling) and the state ``h`` (H, scale
  1/128); outputs the 36 logits (18 bearing + 18 orientation bins) and the next state. Ops:
  FULLY_CONNECTED, ADD, MUL, LOGISTIC, TANH (LiteRT reference kernels and the pure int8 kernel).
* Elman RNN (:func:`build`): one input ``[x, h]``,
  ``FULLY_CONNECTED([W_ih | W_hh], b_ih + b_hh) -> TANH -> state``, then the head; only
  FULLY_CONNECTED and TANH, so kernels without MUL (the C kernel) run it too.

Activation ranges are calibrated on noisy recorded sequences run through the float network (for
the GRU: drones flown by the committed DQN, its training data). The card's metrics compare the
int8 model, stepped through whole sequences with its own quantised state, with the float network
on held-out sequences (decoded bearing / orientation error, pocket IV-A), so "int8 hurts" is
measured, not assumed.

    .venv/bin/python -m harness.training.swarm_policy.export_bearing --dir models/swarm/bearing

A missing or damaged weights.npz (the estimator's, or for a GRU the DQN's it was trained on), a negative seed
or a folder it cannot write is one line on stderr and exit status 2 (0 on success).
"""
import os
import sys

import numpy as np

from harness.training.npz_files import read_npz
from harness.training.swarm_policy import bearing_data as bd
from harness.training.swarm_policy.export_dqn import export_main, finite
from harness.training.swarm_policy.train_bearing import NOISE
from harness.training.quantize import (activation_qparams, bias_min_weight_scales, quantize_weights,
                                       write_model_dir)
from harness.training.tflite_builder import TfliteBuilder
from onboard.policy.card import CARD_SCHEMA
from onboard.swarm.bearing_net import (BEARING, N_BINS, N_IN, ORIENTATION, BearingNet, BearingPolicy, decode, sigmoid,
                                      softmax)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BEARING_DIR = os.path.join(REPO, "models", "swarm", "bearing")
DQN_DIR = os.path.join(REPO, "models", "swarm", "dqn")
INPUT_NAMES = [("dt_s", "s", "time since the previous range to this object"),
               ("range_m", "m", "UWB range"),
               ("vx_own_body_mps", "m/s", "own velocity, body x"), ("vy_own_body_mps", "m/s", "own velocity, body y"),
               ("vx_obj_body_mps", "m/s", "object velocity in its own body frame, x (ranging frame; goal 0)"),
               ("vy_obj_body_mps", "m/s", "object velocity in its own body frame, y")]


def _sequences(seed, n_envs=12, steps=200, q_fn=None):
    """Noisy recorded sequences: 2 m arenas with 2 drones and 4 m arenas with 3 drones, moved by a goal
    walker or, with ``q_fn``, flown by a DQN (what the GRU was trained on)."""
    rng = np.random.default_rng(seed)
    x, b, y, has = bd.collect(rng, n_envs, 2, steps, 2.0, q_fn=q_fn)
    x2, b2, y2, has2 = bd.collect(rng, n_envs // 2, 3, steps, 4.0, q_fn=q_fn)
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
    q1, s1 = quantize_weights(w1, per_channel=True, min_scales=bias_min_weight_scales(b1, in_scale))
    bs1 = (np.float32(in_scale) * s1).astype(np.float32)
    t_w1 = b.add_tensor("cell/weights", [H, N_IN + H], "int8", data=q1, scale=s1, zero_point=0)
    t_b1 = b.add_tensor("cell/bias", [H], "int32", data=np.round(b1 / bs1.astype(np.float64)).astype(np.int32),
                        scale=bs1, zero_point=0)
    pre_scale, pre_zp = activation_qparams(pres.min(), pres.max())
    t_pre = b.add_tensor("cell/pre", [1, H], "int8", scale=pre_scale, zero_point=pre_zp)
    b.add_op("FULLY_CONNECTED", [t_in, t_w1, t_b1], [t_pre], activation="NONE")
    t_state = b.add_tensor("state", [1, H], "int8", scale=1.0 / 128.0, zero_point=0)
    b.add_op("TANH", [t_pre], [t_state])
    q2, s2 = quantize_weights(w["w_out"], per_channel=True, min_scales=bias_min_weight_scales(w["b_out"], 1.0 / 128.0))
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


def _gate_slices(H):
    """Rows of torch.nn.GRU's stacked weights per gate (order r, z, n)."""
    return {g: slice(k * H, (k + 1) * H) for k, g in enumerate(("r", "z", "n"))}


def _gru_trace(net, xs):
    """Float GRU over sequences xs [B, T, 6]: every tensor of the int8 graph below, as
    {name: [B * T, width]} (the calibration data of its quantisation)."""
    B, T, _ = xs.shape
    H = net.hidden
    w = net.w
    xn = xs * w["in_scale"]
    wi, wh, bi, bh = w["w_ih"], w["w_hh"], w["b_ih"], w["b_hh"]
    gate = _gate_slices(H)
    h = np.zeros((B, H))
    rec = {}
    for t in range(T):
        x = xn[:, t]
        v = {"x": x, "h": h}
        for g in ("r", "z"):
            v["x_" + g] = x @ wi[gate[g]].T + bi[gate[g]] + bh[gate[g]]
            v["h_" + g] = h @ wh[gate[g]].T
            v["a_" + g] = v["x_" + g] + v["h_" + g]
        v["x_zc"], v["h_zc"], v["a_zc"] = -v["x_z"], -v["h_z"], -v["a_z"]
        r, z = sigmoid(v["a_r"]), sigmoid(v["a_z"])
        v["x_n"] = x @ wi[gate["n"]].T + bi[gate["n"]]
        v["h_n"] = h @ wh[gate["n"]].T + bh[gate["n"]]
        v["r_h_n"] = r * v["h_n"]
        v["a_n"] = v["x_n"] + v["r_h_n"]
        n = np.tanh(v["a_n"])
        h = (1.0 - z) * n + z * h
        v["logits"] = h @ w["w_out"].T + w["b_out"]
        for k, a in v.items():
            rec.setdefault(k, []).append(a)
    return {k: np.concatenate(a) for k, a in rec.items()}


def build_gru(net, calib_xs):
    """int8 .tflite bytes and quantisation info for the GRU net (torch.nn.GRU equations, gates r, z, n),
    calibrated on noisy sequences. Two inputs, x (6, normalised) and the state h (H, scale 1/128), two
    outputs, the 36 logits and the next state (scale 1/128, fed back as input 1). The graph:

        r  = LOGISTIC(FC(x, W_ir, b_ir + b_hr) + FC(h, W_hr))
        z  = LOGISTIC(FC(x, W_iz, b_iz + b_hz) + FC(h, W_hz)),  1 - z = LOGISTIC(the same, negated)
        n  = TANH(FC(x, W_in, b_in) + r * FC(h, W_hn, b_hn))
        h' = (1 - z) * n + z * h
        logits = FC(h', W_out, b_out)

    ``1 - z`` as the logistic of the negated pre-activation (sigma(-a) = 1 - sigma(a)) keeps the op
    set at FULLY_CONNECTED, ADD, MUL, LOGISTIC and TANH, which LiteRT and the pure int8 kernel run.
    """
    if net.cell != "gru":
        raise ValueError("build_gru exports a GRU net; this one is %r" % net.cell)
    H = net.hidden
    w = net.w
    tr = _gru_trace(net, calib_xs)
    gate = _gate_slices(H)
    bld = TfliteBuilder("pocket-drone bearing/orientation estimator, GRU step (uwb-pocket-drones IV-A)")
    info = {}
    state_q = (1.0 / 128.0, 0)

    def act(name, width, q=None):
        scale, zp = q if q is not None else activation_qparams(tr[name].min(), tr[name].max())
        info[name] = {"scale": float(scale), "zero_point": int(zp)}
        return bld.add_tensor(name, [1, width], "int8", scale=scale, zero_point=zp)

    def fc(name, src, w_rows, bias, width):
        q, s = quantize_weights(w_rows, per_channel=True,
                                min_scales=bias_min_weight_scales(bias, info[src]["scale"]))
        bs = (np.float32(info[src]["scale"]) * s).astype(np.float32)
        tw = bld.add_tensor(name + "/weights", list(w_rows.shape), "int8", data=q, scale=s, zero_point=0)
        tb = bld.add_tensor(name + "/bias", [w_rows.shape[0]], "int32",
                            data=np.round(bias / bs.astype(np.float64)).astype(np.int32), scale=bs, zero_point=0)
        out = act(name, width)
        bld.add_op("FULLY_CONNECTED", [tensors[src], tw, tb], [out], activation="NONE")
        tensors[name] = out

    tensors = {"x": act("x", N_IN), "h": act("h", H, state_q)}
    zeros = np.zeros(H)
    for g, sign in (("r", 1.0), ("z", 1.0), ("zc", -1.0)):
        rows = gate["z" if g == "zc" else g]
        fc("x_" + g, "x", sign * w["w_ih"][rows], sign * (w["b_ih"][rows] + w["b_hh"][rows]), H)
        fc("h_" + g, "h", sign * w["w_hh"][rows], zeros, H)
        tensors["a_" + g] = act("a_" + g, H)
        bld.add_op("ADD", [tensors["x_" + g], tensors["h_" + g]], [tensors["a_" + g]])
        tensors[g] = act(g, H, (1.0 / 256.0, -128))               # TFLite's fixed LOGISTIC output
        bld.add_op("LOGISTIC", [tensors["a_" + g]], [tensors[g]])
    fc("x_n", "x", w["w_ih"][gate["n"]], w["b_ih"][gate["n"]], H)
    fc("h_n", "h", w["w_hh"][gate["n"]], w["b_hh"][gate["n"]], H)
    tensors["r_h_n"] = act("r_h_n", H)
    bld.add_op("MUL", [tensors["r"], tensors["h_n"]], [tensors["r_h_n"]])
    tensors["a_n"] = act("a_n", H)
    bld.add_op("ADD", [tensors["x_n"], tensors["r_h_n"]], [tensors["a_n"]])
    tensors["n"] = act("n", H, state_q)                           # TFLite's fixed TANH output
    bld.add_op("TANH", [tensors["a_n"]], [tensors["n"]])
    # both products lie in (-1, 1), as does their sum: the state's 1/128 grid throughout
    tensors["zc_n"] = act("zc_n", H, state_q)
    bld.add_op("MUL", [tensors["zc"], tensors["n"]], [tensors["zc_n"]])
    tensors["z_h"] = act("z_h", H, state_q)
    bld.add_op("MUL", [tensors["z"], tensors["h"]], [tensors["z_h"]])
    tensors["state"] = act("state", H, state_q)
    bld.add_op("ADD", [tensors["zc_n"], tensors["z_h"]], [tensors["state"]])
    fc("logits", "state", w["w_out"], w["b_out"], 2 * N_BINS)
    return bld.finish([tensors["x"], tensors["h"]], [tensors["logits"], tensors["state"]]), info


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


def export(model_dir=BEARING_DIR, seed=1, dqn_dir=DQN_DIR):
    """Export ``<model_dir>/weights.npz`` (GRU or Elman) to ``model.tflite`` + ``card.json`` there. A GRU
    is calibrated and checked on sequences flown by the DQN in ``dqn_dir`` (its training data), the
    Elman net on the goal walker's. ConfigError (one line) when a weights file cannot be read."""
    from onboard.policy.policy import make_policy
    from onboard.swarm.dqn import DqnFloat

    net = read_npz(os.path.join(model_dir, "weights.npz"), "bearing estimator weights", finite(BearingNet))
    H = net.hidden
    gru = net.cell == "gru"
    q_fn = (read_npz(os.path.join(dqn_dir, "weights.npz"), "DQN weights (the GRU's data flights)",
                     finite(DqnFloat)).q_values_batch if gru else None)
    calib_xs, _, _, _ = _sequences(seed, q_fn=q_fn)
    tfl, info = build_gru(net, calib_xs) if gru else build(net, calib_xs)
    x_features = [{"name": n, "unit": u, "meaning": m} for n, u, m in INPUT_NAMES]
    h_features = [{"name": "h%d" % i, "unit": "1", "meaning": "recurrent state (the previous step's output 1)"}
                  for i in range(H)]
    x_std = [float(1.0 / v) for v in net.w["in_scale"]]
    formula = "x_model = (x - mean) / std, then round(x_model / scale) + zero_point"
    if gru:
        inputs = [{"name": "x", "shape": [1, N_IN], "dtype": "int8", "quantization": info["x"], "features": x_features,
                   "normalization": {"mean": [0.0] * N_IN, "std": x_std, "formula": formula}},
                  {"name": "h", "shape": [1, H], "dtype": "int8", "quantization": info["h"], "features": h_features,
                   "normalization": {"mean": [0.0] * H, "std": [1.0] * H, "formula": formula}}]
        op_set = ["FULLY_CONNECTED", "ADD", "MUL", "LOGISTIC", "TANH"]
        what = "one GRU step per inference; the state is input 1 and output 1"
        activations = "asymmetric int8; LOGISTIC 1/256, TANH and the state 1/128"
    else:
        inputs = [{"name": "input", "shape": [1, N_IN + H], "dtype": "int8", "quantization": info["input"],
                   "features": x_features + h_features,
                   "normalization": {"mean": [0.0] * (N_IN + H), "std": x_std + [1.0] * H, "formula": formula}}]
        op_set = ["FULLY_CONNECTED", "TANH"]
        what = "one Elman-RNN step per inference; the state travels as the last H inputs / output 1"
        activations = "asymmetric int8; state TANH 1/128"
    card = {
        "schema": CARD_SCHEMA,
        "name": "swarm-bearing",
        "version": 1,
        "description": "Learned bearing / relative-orientation estimator of the pocket-drone paper (IV-A), " + what + ".",
        "paper": "uwb-pocket-drones-coordination IV-A",
        "op_set": op_set,
        "inputs": inputs,
        "outputs": [{"name": "logits", "shape": [1, 2 * N_BINS], "dtype": "int8", "quantization": info["logits"],
                     "unit": "logit", "meaning": "18 bearing bins then 18 relative-orientation bins (20 deg from -180)"},
                    {"name": "state", "shape": [1, H], "dtype": "int8", "quantization": info["state"],
                     "unit": "1", "meaning": "next recurrent state (feed back as the state input)"}],
        "quantization": {"weights": "symmetric int8 per output channel", "bias": "int32, scale = s_in * s_w",
                         "activations": activations,
                         "calibration": "%d noisy sequences x %d steps (harness/training/swarm_policy/bearing_data.py, %s)"
                                        % (calib_xs.shape[0], calib_xs.shape[1],
                                           "flown by the DQN" if gru else "goal walker"),
                         "info": info},
        "training": {"framework": "torch (harness/training/swarm_policy/train_bearing.py --cell %s)" % net.cell,
                     "data": "see train_card.json", "command": "make train-swarm"},
        "float_reference": {"file": "weights.npz"},
    }
    # int8 vs float on held-out sequences, both stepped through whole sequences
    xs, b, y, has = _sequences(seed + 1, n_envs=6, steps=150, q_fn=q_fn)
    lite = BearingPolicy(make_policy(tfl, card, "litert"))
    pure = BearingPolicy(make_policy(tfl, card, "pure"))

    fb, fo = angle_errors_deg(lambda seq: net.run(seq[None])[0], xs, b, y, has)
    qb, qo = angle_errors_deg(lambda seq: lite.run(seq[None])[0], xs, b, y, has)
    seq = xs[:1, :40]
    same = np.array_equal(lite.run(seq), pure.run(seq))
    card["metrics"] = {"held_out_sequences": int(len(xs)), "steps": int(xs.shape[1]),
                       "float_bearing_mae_deg": fb, "float_orientation_mae_deg": fo,
                       "int8_bearing_mae_deg": qb, "int8_orientation_mae_deg": qo,
                       "pure_equals_litert_40_steps": bool(same)}
    return write_model_dir(model_dir, tfl, card)


def main(argv=None):
    return export_main("export_bearing", export, BEARING_DIR, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
