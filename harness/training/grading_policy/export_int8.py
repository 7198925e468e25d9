"""Int8 export of a grading agent's FCN through the policy pipeline (ag2u IV-A).

    python -m harness.training.grading_policy.export_int8 --agent agent1|agent2 [--calib-episodes 12]

reads ``models/grading/<agent>/{weights.npz,card.json}`` (shapes and widths from the
card, so it re-runs unchanged on retrained weights) and writes
``models/grading/<agent>/int8/{model.tflite,card.json}``:

- graph: ``crop_m`` int8 [1, rows, cols, 1] (metres above target; the network's
  ``input_scale`` is folded into the stem filter) -> CONV_2D 3x3 + RELU (stem) ->
  per residual block CONV_2D 3x3 dilation d + RELU, CONV_2D 3x3 dilation d, ADD + RELU ->
  CONV_2D 1x1 head -> ``logits`` int8 [1, rows, cols, 2] (NHWC: channel 0 green push
  target, channel 1 red next-leg start; each decision is a channel's argmax);
- quantization (harness.training.quantize's scheme): symmetric per-channel int8 filters,
  int32 biases at s_in * s_w (a filter whose bias would not fit gets a wider scale,
  ``quantize.bias_min_weight_scales``), asymmetric int8 activations whose ranges are the min/max
  over calibration crops rendered in expert episodes (agent1: at the true pose; agent2:
  also at K poses drawn from the ESKF's N(x_est, Sigma), ag2u eq. 1, as it was trained),
  except the logits' lower bound: ``--logit-margin`` below the smallest per-crop map
  maximum (lower logits never decide an argmax, so the int8 steps go to the top; the decider's
  local soft-argmax, ``agents.refined_peak``, weighs a cell saturated 6 below the peak at e^-6);
- evaluation on held-out crops (other episode seeds): argmax way-point agreement of int8
  (LiteRT) vs the float network in pixels, and LiteRT vs the pure int8 kernel (outputs
  and argmaxes). The numbers go into the int8 card's ``metrics``.
"""
import argparse
import copy
import hashlib
import json
import os
import sys
import time

import numpy as np

from harness.config import non_negative_int, positive_float, positive_int
from harness.report.run_report import report_folder
from harness.scenarios.grading.agents import INT8_SUBDIR, MODEL_DIR, argmax_maps_nhwc, load_agent
from harness.training.grading_policy.dataset import eq1_poses
from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, GradingEpisode
from harness.training.grading_policy.fcn import conv2d_same
from harness.scenarios.grading.observation import ObservationRenderer
from harness.sim.rng import RunRandom
from harness.training.quantize import (activation_qparams, bias_min_weight_scales, quantize_weights,
                                       write_model_dir)
from harness.training.tflite_builder import TfliteBuilder

GREEN, RED = 0, 1            # output channels (way-point maps)
N_MAPS = 2


# ------------------------------------------------------------------ float reference (NCHW)
def layer_plan(weights, net):
    """The network as a list of steps, read from the weight names and the card's ``network``.

    Each step: ("conv", name, source tensor, weight key, dilation, activation) or
    ("add", name, a, b, activation). Tensor names are the int8 graph's.
    """
    for key in ("stem.weight", "stem.bias", "head.weight", "head.bias"):
        if key not in weights:
            raise ValueError("grading weights lack %r (not the residual FCN of harness.training.grading_policy.fcn)" % key)
    layers = int(net["layers"])
    if layers % 2:
        raise ValueError("network.layers must be even (residual blocks of two convolutions), got %d" % layers)
    plan = [("conv", "stem", "crop_m", "stem", 1, "RELU")]
    cur = "stem"
    for i in range(0, layers, 2):
        for j in (i, i + 1):
            if "body.%d.weight" % j not in weights:
                raise ValueError("grading weights lack body.%d.weight (card says %d layers)" % (j, layers))
        plan.append(("conv", "block%d/conv_a" % (i // 2), cur, "body.%d" % i, int(net["dilation"]), "RELU"))
        plan.append(("conv", "block%d/conv_b" % (i // 2), "block%d/conv_a" % (i // 2), "body.%d" % (i + 1),
                     int(net["dilation"]), "NONE"))
        plan.append(("add", "block%d/sum" % (i // 2), cur, "block%d/conv_b" % (i // 2), "RELU"))
        cur = "block%d/sum" % (i // 2)
    plan.append(("conv", "logits", cur, "head", 1, "NONE"))
    return plan


def _folded(weights, net):
    """float64 weights with the input scale folded into the stem (the int8 model takes metres)."""
    out = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    out["stem.weight"] = out["stem.weight"] * float(net["input_scale"])
    return out


def float_forward(weights, net, crop_m, capture=False):
    """Logits [2, H, W] of one crop (metres) in float64; with ``capture`` also every tensor."""
    w = _folded(weights, net)
    vals = {"crop_m": np.asarray(crop_m, dtype=np.float64)[None]}
    for step in layer_plan(weights, net):
        if step[0] == "conv":
            _, name, src, key, dil, act = step
            y = conv2d_same(vals[src], w[key + ".weight"], w[key + ".bias"], dil)
        else:
            _, name, a, b, act = step
            y = vals[a] + vals[b]
        vals[name] = np.maximum(y, 0.0) if act == "RELU" else y
    return (vals["logits"], vals) if capture else vals["logits"]


# ------------------------------------------------------------------ crops from expert episodes
def collect_crops(agent, n_episodes, seed, k_samples=8, obs_config=None, noise="sensor_fusion", max_legs=None):
    """Observation crops (float32 [N, rows, cols], metres) at the expert's decisions.

    agent1: the crop at the true pose per decision; agent2: that crop plus ``k_samples``
    crops at poses drawn from the runtime estimator's N(x_est, Sigma) (ag2u eq. 1; with the
    ESKF through ``EskfPoseEstimator.sample_poses``), as the agents were trained.
    """
    if agent not in ("agent1", "agent2"):
        raise ValueError("agent must be agent1 or agent2, got %r" % (agent,))
    renderer = ObservationRenderer(obs_config)
    crops = []
    for ep_index in range(n_episodes):
        cfg = copy.deepcopy(EPISODE_DEFAULTS)
        cfg["noise"] = noise
        if max_legs:
            cfg["max_legs"] = max_legs
        ep = GradingEpisode(cfg, RunRandom(seed * 100003 + ep_index))
        rng = np.random.default_rng(seed * 7919 + ep_index)

        def decider(episode):
            decision = episode.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2],
                                             episode.cfg["blade_edge_ahead_m"])
            if decision is None:
                return None
            true_pose = episode.true_pose()       # where the dozer is drawn when the observation shows it
            crops.append(renderer.render(episode.world, true_pose, true_pose))
            if agent == "agent2":
                est = episode.runtime.estimator
                if hasattr(est, "sample_poses"):
                    poses = est.sample_poses(k_samples, rng)
                else:
                    poses = eq1_poses(episode.estimated_pose(), est.pose_covariance(), k_samples, rng)
                for pose in poses:
                    crops.append(renderer.render(episode.world, tuple(pose), true_pose))
            return decision

        ep.run(decider)
    if not crops:
        raise ValueError("no decisions in %d expert episodes (seed %d)" % (n_episodes, seed))
    return np.stack(crops).astype(np.float32)


# ------------------------------------------------------------------ int8 graph
def calibration_ranges(weights, net, calib_crops, percentile=100.0, logit_margin=None):
    """Float range (lo, hi) of every tensor over the calibration crops.

    ``percentile`` < 100 clips each hidden tensor's range to that percentile of its values
    (the input and the logits keep min/max). ``logit_margin``: the logits' lower bound is
    raised to (the smallest per-crop map maximum - margin): logits further below any
    map's maximum never decide an argmax, so they may saturate, and the int8 steps are
    spent near the top where the decisions are.
    """
    per_tensor = {}                  # values kept only for percentile ranges
    ranges = {}
    map_max = []
    for crop in np.asarray(calib_crops, dtype=np.float64):
        logits, vals = float_forward(weights, net, crop, capture=True)
        map_max.append(float(logits.reshape(N_MAPS, -1).max(axis=1).min()))
        for name, v in vals.items():
            lo, hi = float(v.min()), float(v.max())
            old = ranges.get(name)
            ranges[name] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
            if percentile < 100.0 and name not in ("crop_m", "logits"):
                per_tensor.setdefault(name, []).append(v.reshape(-1).astype(np.float32))
    for name, chunks in per_tensor.items():
        v = np.concatenate(chunks)
        ranges[name] = (float(np.percentile(v, 100.0 - percentile)), float(np.percentile(v, percentile)))
    if logit_margin is not None:
        lo, hi = ranges["logits"]
        ranges["logits"] = (max(lo, min(map_max) - float(logit_margin)), hi)
    return ranges


def build_int8(weights, net, calib_crops, description="grading FCN int8", percentile=100.0, logit_margin=None):
    """Quantize the FCN with ranges from ``calib_crops``; returns (tflite bytes, info dict)."""
    calib = np.asarray(calib_crops, dtype=np.float64)
    n, rows, cols = calib.shape
    plan = layer_plan(weights, net)
    w = _folded(weights, net)
    ranges = calibration_ranges(weights, net, calib, percentile, logit_margin)
    qp = {name: activation_qparams(lo, hi) for name, (lo, hi) in ranges.items()}
    b = TfliteBuilder(description)
    idx = {}

    def act_tensor(name, channels):
        s, zp = qp[name]
        idx[name] = b.add_tensor(name, [1, rows, cols, channels], "int8", scale=s, zero_point=zp)
        return idx[name]

    act_tensor("crop_m", 1)
    info = {"tensors": {name: {"scale": s, "zero_point": zp, "float_range": list(ranges[name])}
                        for name, (s, zp) in qp.items()}, "convs": []}
    for step in plan:
        if step[0] == "conv":
            _, name, src, key, dil, act = step
            wf = w[key + ".weight"]                       # [O, C, k, k] (torch layout)
            o, c, kh, kw = wf.shape
            w_ohwc = wf.transpose(0, 2, 3, 1)             # TFLite [O, kh, kw, C]
            s_in = np.float32(qp[src][0])
            wq, wscales = quantize_weights(w_ohwc.reshape(o, -1), per_channel=True,
                                           min_scales=bias_min_weight_scales(w[key + ".bias"], s_in))
            bias_scales = (s_in * wscales).astype(np.float32)
            bq = np.clip(np.round(w[key + ".bias"] / bias_scales.astype(np.float64)),
                         -(2 ** 31), 2 ** 31 - 1).astype(np.int32)
            wt = b.add_tensor(name + "/filter", [o, kh, kw, c], "int8", data=wq.reshape(o, kh, kw, c),
                              scale=wscales, zero_point=0)
            bt = b.add_tensor(name + "/bias", [o], "int32", data=bq, scale=bias_scales, zero_point=0)
            out = act_tensor(name, o)
            b.add_op("CONV_2D", [idx[src], wt, bt], [out], padding="SAME", stride_w=1, stride_h=1,
                     dilation_w=dil, dilation_h=dil, activation=act)
            info["convs"].append({"name": name, "shape_ohwc": [o, kh, kw, c], "dilation": dil, "activation": act})
        else:
            _, name, a, bb, act = step
            out = act_tensor(name, b.tensors[idx[a]]["shape"][3])
            b.add_op("ADD", [idx[a], idx[bb]], [out], activation=act)
    info["input"] = {"scale": qp["crop_m"][0], "zero_point": qp["crop_m"][1]}
    info["output"] = {"scale": qp["logits"][0], "zero_point": qp["logits"][1]}
    info["calibration_crops"] = int(n)
    return b.finish([idx["crop_m"]], [idx["logits"]]), info


def int8_card(agent, float_card, weights_sha256, info, rows, cols, calib):
    ops = ["CONV_2D", "ADD"]
    return {
        "name": "grading-%s-int8" % agent,
        "version": 1,
        "description": "ag2u grading way-point FCN (%s), int8 export of models/grading/%s" % (agent, agent),
        "op_set": ops,
        "inputs": [{"name": "crop_m", "shape": [1, rows, cols, 1], "dtype": "int8",
                    "quantization": info["input"],
                    "meaning": "heightmap crop in the dozer frame (row 0 farthest ahead), metres above target",
                    "observation": float_card["input"]["observation"]}],
        "outputs": [{"name": "logits", "shape": [1, rows, cols, N_MAPS], "dtype": "int8",
                     "quantization": info["output"],
                     "meaning": "NHWC way-point logits: channel 0 green (push target), 1 red (next-leg start); "
                                "each decision is the argmax pixel of its channel"}],
        "network": dict(float_card["network"]),
        "training": {"float_model": "models/grading/%s (weights.npz sha256 %s)" % (agent, weights_sha256),
                     "float_training": float_card.get("training"),
                     "quantization": "per-channel symmetric int8 filters, int32 bias, asymmetric int8 "
                                     "activations (min/max calibration), input_scale folded into the stem",
                     "calibration": calib},
        "metrics": {},
    }


# ------------------------------------------------------------------ evaluation
def evaluate(weights, net, model_dir, crops, pure_crops=2):
    """Agreement numbers of the int8 model in ``model_dir`` on held-out ``crops``."""
    from onboard.policy import load_policy

    lit = load_policy(model_dir, backend="litert")
    xnn = load_policy(model_dir, backend="litert-xnnpack")
    n, rows, cols = crops.shape
    dist = {(b, m): [] for b in ("litert", "litert_xnnpack") for m in (GREEN, RED)}
    lit_q = []
    for crop in crops:
        f = float_forward(weights, net, crop)
        q_in = lit.quantize_input(crop.reshape(-1).tolist())
        out = lit.run([q_in])[0]
        lit_q.append((q_in, out))
        for b, o in (("litert", out), ("litert_xnnpack", xnn.run([q_in])[0])):
            for m, (r, c) in enumerate(argmax_maps_nhwc(o, rows, cols)):
                fr, fc = divmod(int(np.argmax(f[m])), cols)
                dist[(b, m)].append(float(np.hypot(r - fr, c - fc)))
    metrics = {"heldout_crops": int(n)}
    for (b, m), d in sorted(dist.items()):
        d = np.asarray(d)
        key = "int8_%s_vs_float_%s_argmax" % (b, ("green", "red")[m])
        metrics[key + "_same_pixel_fraction"] = float(np.mean(d == 0.0))
        metrics[key + "_within_1px_fraction"] = float(np.mean(d <= 1.5))
        metrics[key + "_distance_mean_px"] = float(d.mean())
        metrics[key + "_distance_p90_px"] = float(np.percentile(d, 90))
    if pure_crops:
        pure = load_policy(model_dir, backend="pure")
        k = min(pure_crops, len(lit_q))
        stats = {"litert": [0, 0, 0, 0], "litert_xnnpack": [0, 0, 0, 0]}   # exact, total, worst, same argmax
        t0 = time.perf_counter()
        for q_in, out in lit_q[:k]:
            p = np.asarray(pure.run([q_in])[0])
            for name, ref in (("litert", np.asarray(out)), ("litert_xnnpack", np.asarray(xnn.run([q_in])[0]))):
                st = stats[name]
                diff = np.abs(p - ref)
                st[0] += int((diff == 0).sum())
                st[1] += diff.size
                st[2] = max(st[2], int(diff.max()))
                st[3] += int(argmax_maps_nhwc(p, rows, cols) == argmax_maps_nhwc(ref, rows, cols))
        metrics["pure_s_per_inference_with_refs"] = (time.perf_counter() - t0) / k
        metrics["pure_vs_litert_crops"] = k
        for name, (exact, total, worst, same) in stats.items():
            metrics["pure_vs_%s_exact_output_fraction" % name] = exact / total
            metrics["pure_vs_%s_max_step_diff" % name] = worst
            metrics["pure_vs_%s_same_argmax_fraction" % name] = same / k
    return metrics


def export(agent, model_dir=MODEL_DIR, out_dir=None, calib_episodes=12, eval_episodes=6, seed=11,
           k_samples=8, pure_crops=2, max_legs=None, logit_margin=6.0, log=print):
    """Export one agent; returns the written int8 card (with metrics). ValueError (one line) when the agent
    cannot be loaded or ``out_dir`` cannot be created, before the calibration episodes run."""
    weights, float_card = load_agent(agent, model_dir)
    out_dir = out_dir or os.path.join(model_dir, agent, INT8_SUBDIR)
    report_folder(out_dir, "int8 model folder")       # a ConfigError (ValueError) before the calibration runs
    net = float_card["network"]
    obs = float_card["input"]["observation"]
    rows, cols = int(obs["rows"]), int(obs["cols"])
    with open(os.path.join(model_dir, agent, "weights.npz"), "rb") as fh:
        weights_sha = hashlib.sha256(fh.read()).hexdigest()
    t0 = time.perf_counter()
    calib = collect_crops(agent, calib_episodes, seed, k_samples, obs, max_legs=max_legs)
    log("%s: %d calibration crops from %d expert episodes (%.0f s)"
        % (agent, len(calib), calib_episodes, time.perf_counter() - t0))
    data, info = build_int8(weights, net, calib, "grading %s FCN int8" % agent, logit_margin=logit_margin)
    calib_desc = {"episodes": calib_episodes, "seed": seed, "crops": int(len(calib)),
                  "pose_samples_per_decision": k_samples if agent == "agent2" else 0,
                  "ranges": "min/max", "logit_margin": logit_margin,
                  "estimator": EPISODE_DEFAULTS["estimator"], "noise": "sensor_fusion"}
    card = int8_card(agent, float_card, weights_sha, info, rows, cols, calib_desc)
    write_model_dir(out_dir, data, card)
    heldout = collect_crops("agent1", eval_episodes, seed + 1000, obs_config=obs, max_legs=max_legs)
    card["metrics"] = evaluate(weights, net, out_dir, heldout, pure_crops)
    card["metrics"]["heldout_episodes"] = eval_episodes
    card = write_model_dir(out_dir, data, card)
    log(json.dumps(card["metrics"], indent=2, sort_keys=True))
    return card


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m harness.training.grading_policy.export_int8", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", required=True, choices=("agent1", "agent2"))
    p.add_argument("--model-dir", default=MODEL_DIR, help="folder with <agent>/weights.npz + card.json")
    p.add_argument("--out", default=None, help="default: <model-dir>/<agent>/int8")
    p.add_argument("--calib-episodes", type=positive_int, default=12)
    p.add_argument("--eval-episodes", type=positive_int, default=6)
    p.add_argument("--seed", type=non_negative_int, default=11)
    p.add_argument("--k-samples", type=positive_int, default=8, help="eq. 1 pose samples per decision (agent2)")
    p.add_argument("--pure-crops", type=non_negative_int, default=2, help="held-out crops also run on the pure kernel")
    p.add_argument("--logit-margin", type=positive_float, default=6.0,
                   help="logits more than this below the smallest calibration map maximum saturate")
    args = p.parse_args(argv)
    try:
        export(args.agent, args.model_dir, args.out, args.calib_episodes, args.eval_episodes, args.seed,
               args.k_samples, args.pure_crops, logit_margin=args.logit_margin)
    except ValueError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
