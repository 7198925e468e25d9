"""Train the grading agents by imitation of the expert (ag2u section III-B, IV-A), with DAgger.

agent1: crops at the true pose (noise-free observations); agent2: the true-pose crop
+ ``k_samples`` crops at poses drawn from the filter's N(x_est, Sigma) (eq. 1), same
labels in each crop's frame. Both agents get the same number of training crops per
decision (agent1 repeats its true-pose crop ``k_samples + 1`` times), so agent2's
pose augmentation is not confounded with data volume.

Schedule (deterministic per ``--seed``):

1. behaviour cloning on ``--episodes`` expert episodes (the expert drives on the
   sensor-fusion estimate, labels on the true state), ``--epochs`` passes;
2. ``--dagger-rounds`` rounds of DAgger (Ross et al. 2011, ag2u ref. [29]): the
   current agent drives ``--dagger-episodes`` episodes in its own training regime
   (agent1: noise-less; agent2: sensor-fusion noise, deciding on the crop at its
   estimated pose), the expert labels every state it visits on the true state, the
   data are aggregated and the net is trained on for ``--dagger-epochs`` passes.

Adam, lr 1e-3, cross entropy over the H*W pixels of each way-point map. Held-out
expert decisions (``--val-episodes``, another seed) give per-metre accuracy of the
argmax way-points, written to the card with the training time. Writes
``models/grading/<agent>/weights.npz`` and ``card.json``.

    .venv/bin/python -m harness.training.grading_policy.train_policy --help

``--device cuda`` trains on a GPU: the committed 64-channel agents were trained so (``make train-grading
GRADING_DEVICE=cuda``; the card's ``training.software`` names the GPU and the versions; the weights depend on
them through float rounding); ``--workers`` also collects the DAgger episodes and renders the crops as jobs of
the sweep runner (``--engine ray`` on a Ray runtime, ``--address`` a cluster's; the data do not depend on either).

Needs PyTorch (``pip install -r requirements-train.txt``); the runtime and the
tests do not.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from harness.config import ConfigError, non_negative_float, non_negative_int, positive_int
from onboard.core.settings import argument
from harness.data_files import npz_bytes, read_error_reason
from harness.training.grading_policy import dataset
from harness.training.npz_files import read_npz
from harness.report.run_report import write_whole
from harness.scenarios.grading.agents import PolicyDecider
from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, NOISE_SCENARIOS, STARTS
from harness.sim.sensors.pose import ERROR_MODELS as AIDING_ERROR_MODELS
from harness.training.grading_policy.fcn import DEFAULTS as FCN_DEFAULTS, make_torch_model
from harness.scenarios.grading.sweep import episode_config
from harness.sweep_runner import add_engine_arguments, runner_from_args

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_DIR = os.path.join(REPO, "models", "grading")
# Crop geometry of the trained agents (stored in their cards; the runtime renders from the card):
# 3.2 m x 3.2 m, 1.2 m of it behind the dozer, so every expert way-point of the training data lies
# inside (the 2.56 m / 0.3 m-behind default crop clipped ~10 % of the red labels); 0.16 m cells with
# 4 x 4 supersampling (box filter) keep the net small and the receptive field (35 cells) the whole crop.
# The overhead camera's heightmap shows the dozer (observation.with_dozer): a box over its tracks and blade,
# 0.25 m behind to 0.2 m ahead of its centre (the blade edge), 0.4 m wide (the blade), 0.2 m tall (above
# the sand piles after erosion).
DOZER_BODY = {"behind_m": 0.25, "ahead_m": 0.2, "half_width_m": 0.2, "height_m": 0.2}
AGENT_OBSERVATION = {"rows": 20, "cols": 20, "cell_m": 0.16, "behind_m": 1.2, "supersample": 4,
                     "dozer_body": DOZER_BODY}
# The camera also shows the sandbox's walls (observation.py, wall_height_m; --wall-height-m): the committed
# agents see them 0.3 m above the target level (above the eroded piles' tops, like the dozer box; make
# train-grading passes it).
AGENT_WALL_HEIGHT_M = 0.3
DAGGER_NOISE = {"agent1": "noise_less", "agent2": "sensor_fusion"}
# noise of the expert episodes a dataset is collected from (--data-noise), as the card states it
DATA_NOISE_TEXT = {"sensor_fusion": "sensor_fusion (expert drives on the estimate, labels on the true state)",
                   "noise_less": "noise_less (the expert drives on the true pose: the paper's noise-free trajectory)"}
DATA_NOISES = tuple(DATA_NOISE_TEXT)
OBSERVATION_TEXT = {
    "agent1": "true pose (crop repeated k_samples + 1 times per decision)",
    "agent2": "true pose + k_samples poses from N(x_est, Sigma) (eq. 1)",
}
LABEL_FRAME_TEXT = {
    "execution": "way-points shifted by each crop pose's position error (where to drive on that estimate to "
                 "reach the expert's way-point)",
    "estimate": "the expert's world way-points in each crop's frame",
}


AGENTS = ("agent1", "agent2")
# --layers: the body's convolutions come in residual blocks of two (fcn.forward_numpy, export_int8.layer_plan)
even_layers = argument(("an even integer >= 2 (residual blocks of two convolutions)",
                        lambda v: v >= 2 and v % 2 == 0), int)


def agent_list(text):
    """``--agents``: a comma list of agent1 / agent2 (each at most once) -> the text itself."""
    names = text.split(",")
    if not names or any(name not in AGENTS for name in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError("expected %s or both, separated by a comma, got %r"
                                         % (" or ".join(AGENTS), text))
    return text


def dagger_noise_cycle(text):
    """``--dagger-noise``: "" (each agent's default) or a comma list of noise scenarios, one per DAgger
    round, cycled -> a tuple (empty for the default)."""
    if not text:
        return ()
    names = tuple(name.strip() for name in text.split(","))
    bad = [name for name in names if name not in NOISE_SCENARIOS]
    if bad:
        raise argparse.ArgumentTypeError("expected noise scenarios from %s, separated by commas, got %r"
                                         % (", ".join(NOISE_SCENARIOS), text))
    return names


def make_card(agent, fcn_config, obs_config, training=None, metrics=None):
    """The card the runtime loads the agent by (card["network"], card["input"]["observation"])."""
    rows, cols = obs_config["rows"], obs_config["cols"]
    return {
        "name": "grading-" + agent,
        "paper": "ag2u-grading-under-uncertainty, sections III-B, IV-A",
        "input": {"shape": [rows, cols], "meaning":
                  "heightmap crop in the dozer frame (row 0 farthest ahead), metres above target",
                  "observation": dict(obs_config)},
        "output": {"shape": [2, rows, cols],
                   "meaning": "logits of green (push target) and red (next leg start) way-points"},
        "network": dict(fcn_config),
        "training": training or {},
        "metrics": metrics or {},
    }


def mirrored(crops, greens, reds, cols):
    """Crops and way-points plus their east-west mirror images: the sand world, the dozer and the expert's
    rule (pushes run north; the lane laterally closest to the dozer) are symmetric under a left-right
    flip of the crop, so a flipped crop with flipped way-point columns is another valid expert decision.
    Way-points as int labels (row * cols + col) or fractional (row, col) points [N, 2]."""
    def flip(labels):
        labels = np.asarray(labels)
        if labels.ndim == 2:
            return np.stack([labels[:, 0], (cols - 1) - labels[:, 1]], axis=1)
        row, col = np.divmod(labels, cols)
        return row * cols + (cols - 1 - col)
    return (np.concatenate([crops, crops[:, :, ::-1]]), np.concatenate([greens, flip(greens)]),
            np.concatenate([reds, flip(reds)]))


def soft_targets(points, rows, cols, sigma_cells):
    """float32 [N, rows*cols]: for each fractional way-point (row, col) of ``points`` [N, 2], a Gaussian
    of ``sigma_cells`` centred on it over the crop's cells, summing to 1 (the target distribution of the
    way-point map; centred on the exact point, so the sub-cell position that the refined peak read-out
    recovers is in the target, not rounded to a cell)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    r = (np.arange(rows * cols) // cols).astype(np.float64)
    c = (np.arange(rows * cols) % cols).astype(np.float64)
    d2 = (r[None, :] - p[:, :1]) ** 2 + (c[None, :] - p[:, 1:]) ** 2
    logit = -0.5 * d2 / float(sigma_cells) ** 2
    t = np.exp(logit - logit.max(axis=1, keepdims=True))
    return (t / t.sum(axis=1, keepdims=True)).astype(np.float32)


def train(agent, data, seed, epochs, fcn_config, obs_config, k_samples, init=None, batch=128, log=print,
          mirror=False, device="cpu", workers=1, label_sigma_cells=0.0, label_frame="execution", runner=None):
    """Weights (dict of float32 arrays) after ``epochs`` passes over the crops of ``data`` (and their
    mirror images with ``mirror``), trained on torch ``device`` (the crops are rendered on ``runner``, a
    ``harness.sweep_runner.Runner``, default ``workers`` local processes; the crops do not depend on it). ``label_sigma_cells`` > 0: cross-entropy against a Gaussian
    of that many cells centred on each way-point's exact (sub-cell) position (soft targets, as heatmap
    keypoint detectors train) instead of the nearest cell alone. ``label_frame``: agent2's eq. 1 crop labels (dataset.crops_and_labels)."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    crops, greens, reds = dataset.crops_and_points(data, agent, rng, obs_config, k_samples=k_samples,
                                                   workers=workers, label_frame=label_frame, runner=runner)
    if label_sigma_cells <= 0.0:                  # hard labels: the nearest cell
        greens, reds = dataset.pixel_labels(greens, obs_config["cols"]), dataset.pixel_labels(reds, obs_config["cols"])
    if mirror:
        crops, greens, reds = mirrored(crops, greens, reds, obs_config["cols"])
    crops = np.ascontiguousarray(crops)
    model = make_torch_model(fcn_config)
    if init is not None:
        model.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in init.items()})
    model.to(device)                              # initialised on the CPU: the same start on every device
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.from_numpy(crops).to(device)
    yg = torch.from_numpy(greens).to(device)
    yr = torch.from_numpy(reds).to(device)
    n = len(x)
    if label_sigma_cells > 0.0:

        def head_loss(logit, y):
            target = torch.from_numpy(soft_targets(y.cpu().numpy(), obs_config["rows"], obs_config["cols"],
                                                   label_sigma_cells)).to(device)
            return -(target * torch.nn.functional.log_softmax(logit, dim=-1)).sum(-1).mean()
    else:
        head_loss = torch.nn.functional.cross_entropy
    total = 0.0
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(n)).to(device)
        total = 0.0
        for s in range(0, n, batch):
            idx = perm[s:s + batch]
            logits = model(x[idx]).flatten(2)             # [B, 2, H*W]
            loss = head_loss(logits[:, 0], yg[idx]) + head_loss(logits[:, 1], yr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if epoch % max(1, epochs // 5) == 0 or epoch == epochs - 1:
            log("%s epoch %d/%d loss %.3f (%d crops)" % (agent, epoch + 1, epochs, total / n, n))
    weights = {k: v.detach().cpu().numpy().astype(np.float32).copy() for k, v in model.state_dict().items()}
    return weights, {"final_loss": total / n, "train_crops": n}


def accuracy(weights, fcn_config, obs_config, data, pose_key="true_pose"):
    """Per-metre accuracy of the agent's way-points on (held-out) expert decisions.

    Crops rendered at ``data[pose_key]`` (the dozer drawn at the true pose when the observation shows
    it). Each way-point is taken where the dozer truly goes when it is driven to on that pose as its
    estimate (the way-point shifted back by the pose's position error, dataset.execution_point), and
    compared with the expert's: errors in the body frame of that pose (m), median |forward| and
    |lateral| error, share within 0.2 m laterally / 0.25 m overall. At the true pose that is the
    way-point itself.
    """
    decider = PolicyDecider(weights, make_card("eval", fcn_config, obs_config))
    renderer = decider.renderer
    err = {"green": [], "red": []}
    for i in range(len(data["true_pose"])):
        world = dataset.HeightmapView(data["height_m"][i], float(data["cell_m"]))
        pose = tuple(data[pose_key][i])
        true_pose = tuple(data["true_pose"][i])
        pixels = decider.way_point_pixels(renderer.render(world, pose, true_pose))
        for name, (row, col) in zip(("green", "red"), pixels):
            n, e = renderer.body_to_world(pose, *renderer.pixel_to_body(row, col))
            reached = (n - (pose[0] - true_pose[0]), e - (pose[1] - true_pose[1]))
            f, r = renderer.world_to_body(pose, *reached)
            point = data[name + "_ne_m"][i]
            tf, tr = renderer.world_to_body(pose, point[0], point[1])
            err[name].append((f - tf, r - tr))
    out = {}
    for name, e in err.items():
        e = np.abs(np.asarray(e))
        out[name] = {"median_forward_err_m": float(np.median(e[:, 0])),
                     "median_lateral_err_m": float(np.median(e[:, 1])),
                     "lateral_within_0.2m": float(np.mean(e[:, 1] <= 0.2)),
                     "within_0.25m": float(np.mean(np.hypot(e[:, 0], e[:, 1]) <= 0.25))}
    out["decisions"] = len(data["true_pose"])
    return out


def train_agent(agent, data, val, args, fcn_config, obs_config, log=print, on_round=None):
    """Behaviour cloning then DAgger rounds for one agent; returns (weights, training dict, metrics).

    ``on_round(weights, training, metrics)`` is called after every DAgger round but the last (the
    first ``r`` rounds of a run are exactly an ``r``-round run, so an interrupted run leaves a model)."""
    t0 = time.perf_counter()
    init = None
    init_training = None
    if args.init:
        folder = os.path.join(args.init, agent)
        init = read_npz(os.path.join(folder, "weights.npz"), "--init weights")
        try:
            with open(os.path.join(folder, "card.json")) as fh:
                init_training = json.load(fh).get("training")
        except (OSError, ValueError, AttributeError) as exc:
            raise ConfigError("--init card %s: %s" % (os.path.join(folder, "card.json"), read_error_reason(exc)))
        log("%s: behaviour-cloned weights from %s" % (agent, args.init))
    if args.epochs > 0 or init is None:
        weights, stats = train(agent, data, args.seed, args.epochs, fcn_config, obs_config, args.k_samples,
                               init=init, batch=args.batch, log=log, mirror=args.mirror, device=args.device,
                               workers=args.workers or 1, label_sigma_cells=args.label_sigma_cells,
                               label_frame=args.label_frame, runner=getattr(args, "runner", None))
    else:
        weights, stats = init, {}
    rounds = []
    agg = data
    noise_cycle = args.dagger_noise or (DAGGER_NOISE[agent],)
    for r in range(args.dagger_rounds):
        dagger_noise = noise_cycle[r % len(noise_cycle)]
        policy = PolicyDecider(weights, make_card(agent, fcn_config, obs_config))
        t1 = time.perf_counter()
        dag = dataset.collect_parallel(args.dagger_episodes, args.seed * 7 + 1000 * (r + 1) + (1 if agent == "agent1"
                                                                                                else 2),
                                       noise=dagger_noise, workers=args.workers or 1, policy=policy,
                                       runner=getattr(args, "runner", None),
                                       max_legs=args.dagger_max_legs,
                                       config=collect_settings(args))
        agg = dataset.merge(agg, dag)
        log("%s DAgger round %d: %d states visited by the policy (%.0f s), %d decisions aggregated"
            % (agent, r + 1, len(dag["true_pose"]), time.perf_counter() - t1, len(agg["true_pose"])))
        weights, stats = train(agent, agg, args.seed + r + 1, args.dagger_epochs, fcn_config, obs_config,
                               args.k_samples, init=weights, batch=args.batch, log=log, mirror=args.mirror,
                               device=args.device, workers=args.workers or 1,
                               label_sigma_cells=args.label_sigma_cells, label_frame=args.label_frame,
                               runner=getattr(args, "runner", None))
        rounds.append({"episodes": args.dagger_episodes, "noise": dagger_noise,
                       "visited_decisions": int(len(dag["true_pose"])), "epochs": args.dagger_epochs})
        if on_round is not None and r < args.dagger_rounds - 1:
            on_round(*_summary(agent, weights, stats, data, agg, val, rounds, args, fcn_config, obs_config,
                               init_training, t0))
    return _summary(agent, weights, stats, data, agg, val, rounds, args, fcn_config, obs_config, init_training, t0)


def _software(device):
    """The versions and the device the weights were trained with: the weights depend on them through float
    rounding (the data and the starting weights do not)."""
    import platform
    import torch
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else platform.machine() + " CPU"
    return {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__,
            "device_name": name}


def _summary(agent, weights, stats, data, agg, val, rounds, args, fcn_config, obs_config, init_training, t0):
    """(weights, training dict, metrics with held-out accuracy) after the rounds done so far."""
    metrics = dict(stats)
    metrics["heldout_true_pose"] = accuracy(weights, fcn_config, obs_config, val, "true_pose")
    metrics["heldout_estimated_pose"] = accuracy(weights, fcn_config, obs_config, val, "est_pose")
    training = {"seed": args.seed, "episodes": args.episodes, "decisions": int(len(data["true_pose"])),
                "epochs": args.epochs, "k_samples": args.k_samples, "batch": args.batch,
                "mirror_augmentation": bool(args.mirror), "label_sigma_cells": args.label_sigma_cells,
                "optimizer": "Adam lr 1e-3", "observations": OBSERVATION_TEXT[agent],
                "label_frame": args.label_frame if agent == "agent2" else "true pose",
                "labels": LABEL_FRAME_TEXT[args.label_frame] if agent == "agent2" else "the expert's way-points",
                "dataset_noise": DATA_NOISE_TEXT[args.data_noise],
                "aiding_error": args.aiding_error, "start": args.start,
                "expert": collect_settings(args)["expert"],
                "dagger": list(rounds), "dagger_max_legs": args.dagger_max_legs, "aggregated_decisions": int(len(agg["true_pose"])),
                "train_time_s": round(time.perf_counter() - t0, 1), "torch_threads": args.threads,
                "device": args.device, "software": _software(args.device),
                "command": "python -m harness.training.grading_policy.train_policy " + " ".join(args.argv)}
    if init_training is not None:                 # resumed after an earlier behaviour-cloning run
        training["behaviour_cloning"] = init_training
        if args.epochs == 0:
            training["epochs"] = init_training.get("epochs")
    return weights, training, metrics


def collect_settings(args):
    """The episode settings the expert data and the DAgger rounds are collected with."""
    return episode_config({"aiding_error": args.aiding_error, "start": args.start})


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m harness.training.grading_policy.train_policy",
                                 description="Train agent1/agent2 grading policies by imitation + DAgger (ag2u).")
    ap.add_argument("--episodes", type=positive_int, default=150, help="expert episodes for the dataset (default 150)")
    ap.add_argument("--epochs", type=non_negative_int, default=4, help="passes over the behaviour-cloning crops")
    ap.add_argument("--dagger-rounds", type=non_negative_int, default=1)
    ap.add_argument("--dagger-episodes", type=positive_int, default=40)
    ap.add_argument("--dagger-epochs", type=positive_int, default=2)
    ap.add_argument("--dagger-max-legs", type=positive_int, default=10)
    ap.add_argument("--dagger-noise", default="", type=dagger_noise_cycle, metavar="NOISE[,NOISE...]",
                    help="noise of the DAgger episodes, one of %s; a comma list cycles per round (e.g. "
                         "sensor_fusion,noise_less alternates, starting with sensor fusion) (default: %s)"
                         % (", ".join(NOISE_SCENARIOS), ", ".join("%s %s" % kv for kv in DAGGER_NOISE.items())))
    ap.add_argument("--data-noise", default="sensor_fusion", choices=DATA_NOISES,
                    help="noise of the expert episodes the dataset is collected from: sensor_fusion (the expert "
                         "drives on the estimate; agent2's eq. 1 poses need its Sigma) or noise_less (the paper's "
                         "noise-free trajectory, agent1 only) (default %(default)s)")
    ap.add_argument("--start", default=EPISODE_DEFAULTS["start"], choices=STARTS,
                    help="how episodes begin (episode setting start; default %(default)s)")
    ap.add_argument("--aiding-error", default=EPISODE_DEFAULTS["aiding_error"], choices=AIDING_ERROR_MODELS,
                    help="aiding pose error of the collected episodes (ag2u eq. 13): constant (held per episode; "
                         "agent2's eq. 1 Sigma then carries it) or white (fresh per sample); default: the "
                         "episodes' default, %(default)s")
    ap.add_argument("--val-episodes", type=positive_int, default=15, help="held-out expert episodes for the card's accuracy")
    ap.add_argument("--seed", type=non_negative_int, default=1)
    ap.add_argument("--channels", type=positive_int, default=FCN_DEFAULTS["channels"])
    ap.add_argument("--layers", type=even_layers, default=FCN_DEFAULTS["layers"],
                    help="3x3 convolutions of the body, an even number (default %(default)s)")
    ap.add_argument("--k-samples", type=positive_int, default=8, help="eq. 1 poses per decision for agent2")
    ap.add_argument("--batch", type=positive_int, default=128)
    ap.add_argument("--label-sigma-cells", type=non_negative_float, default=0.0,
                    help="soft targets: a Gaussian of this many cells centred on each way-point (0: its nearest cell alone)")
    ap.add_argument("--label-frame", default="execution", choices=dataset.LABEL_FRAMES,
                    help="agent2's labels of its eq. 1 crops: execution (where to drive on that estimate to reach "
                         "the expert's way-point; default) or estimate (the expert's way-points in the crop's frame)")
    ap.add_argument("--no-dozer-view", action="store_true",
                    help="observations of the sand alone (the camera's heightmap without the dozer in it)")
    ap.add_argument("--wall-height-m", type=non_negative_float, default=0.0,
                    help="show the sandbox's walls: what of the crop lies outside the world reads this high above "
                         "the target level (default 0: a flat floor; the committed agents: %s)"
                         % AGENT_WALL_HEIGHT_M)
    ap.add_argument("--mirror", action="store_true", help="also train on the east-west mirror image of every crop")
    ap.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    add_engine_arguments(ap, workers_help="jobs at a time collecting the expert and DAgger episodes and rendering the "
                         "training crops (default: 1 locally, every CPU of a Ray cluster; the data do not depend on it)")
    ap.add_argument("--device", default="cpu", help="torch device to train on (cpu, cuda, cuda:1, ...); the "
                    "data and the starting weights do not depend on it, the trained weights do (float rounding)")
    ap.add_argument("--agents", type=agent_list, default="agent1,agent2",
                    help="agents to train: agent1, agent2 or both (default %(default)s)")
    ap.add_argument("--out", default=MODEL_DIR)
    ap.add_argument("--init", default=None, help="start from <init>/<agent>/weights.npz (with --epochs 0: the "
                    "behaviour-cloning stage of an earlier run with the same seed and dataset; resumes at DAgger)")
    ap.add_argument("--data", default=None, help="cache of the expert + held-out datasets (.npz): loaded when it "
                    "exists and was collected the same way (episodes, seed, aiding error, expert), else collected and "
                    "written there")
    args = ap.parse_args(argv)
    args.argv = argv
    if args.data_noise != "sensor_fusion" and "agent2" in args.agents.split(","):
        ap.error("--data-noise %s: agent2's eq. 1 poses are drawn from the filter's Sigma of sensor-fusion "
                 "episodes; train agent2 on --data-noise sensor_fusion" % args.data_noise)
    try:
        import torch
    except ImportError:
        print("error: training needs PyTorch: .venv/bin/pip install -r requirements-train.txt", file=sys.stderr)
        return 2
    try:                                   # a device torch cannot train on fails here, not after the data
        device = torch.device(args.device)
    except (RuntimeError, ValueError) as exc:
        ap.error("--device %s: %s" % (args.device, str(exc).splitlines()[0] if str(exc) else "not a torch device"))
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device %s: this torch has no CUDA device" % args.device)
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        torch.backends.cudnn.deterministic = True     # the same weights on the same GPU and software
        torch.backends.cudnn.benchmark = False
    fcn_config = dict(FCN_DEFAULTS, channels=args.channels, layers=args.layers)
    obs_config = dict(AGENT_OBSERVATION)
    if args.no_dozer_view:
        obs_config["dozer_body"] = None
    if args.wall_height_m > 0.0:
        obs_config["wall_height_m"] = args.wall_height_m
    try:
        args.runner = runner_from_args(args)
    except ConfigError as exc:
        ap.error(str(exc))
    try:
        return _train(args, fcn_config, obs_config)
    except ConfigError as exc:             # a damaged --data cache or --init folder: one line
        print("train_policy: %s" % exc, file=sys.stderr)
        return 2
    finally:
        args.runner.close()


def _train(args, fcn_config, obs_config):
    """Collect (or load) the data and train every agent of ``args.agents`` on ``args.runner``."""
    t0 = time.perf_counter()
    collect_config = collect_settings(args)
    # what the cached data depend on: a cache collected otherwise (another expert, count or seed) is refused
    recipe = json.dumps({"episodes": args.episodes, "val_episodes": args.val_episodes, "seed": args.seed,
                         "aiding_error": args.aiding_error, "start": args.start, "noise": args.data_noise,
                         "expert": collect_config["expert"]}, sort_keys=True)
    if args.data and os.path.exists(args.data):
        f = read_npz(args.data, "--data cache")
        cached = str(f["recipe"]) if "recipe" in f else "(a cache without the key)"
        if cached != recipe:
            sys.exit("train_policy: %s was collected with %s, not %s; delete it or pass another --data"
                     % (args.data, cached, recipe))
        data = {k[len("train_"):]: v for k, v in f.items() if k.startswith("train_")}
        val = {k[len("val_"):]: v for k, v in f.items() if k.startswith("val_")}
    else:
        data = dataset.collect_parallel(args.episodes, args.seed, args.data_noise, config=collect_config,
                                        runner=args.runner)
        val = dataset.collect_parallel(args.val_episodes, args.seed + 7919, args.data_noise, config=collect_config,
                                       runner=args.runner)
        if args.data:
            os.makedirs(os.path.dirname(os.path.abspath(args.data)), exist_ok=True)
            tmp = args.data + ".tmp.npz"
            np.savez(tmp, **{"train_" + k: v for k, v in data.items()}, **{"val_" + k: v for k, v in val.items()},
                     recipe=np.str_(recipe))
            os.replace(tmp, args.data)
    geometry = dataset.label_geometry(data, obs_config)
    print("dataset: %d decisions from %d episodes, %d held-out (%.1f s); labels outside the crop: green %.1f %%, "
          "red %.1f %%" % (len(data["true_pose"]), args.episodes, len(val["true_pose"]), time.perf_counter() - t0,
                           100 * geometry["green"]["outside_fraction"], 100 * geometry["red"]["outside_fraction"]))
    for agent in args.agents.split(","):
        out = os.path.join(args.out, agent)

        def save(weights, training, metrics, out=out, agent=agent):
            training["label_geometry"] = geometry
            # both files serialised first, then each written whole (an interrupted run leaves a usable model)
            card = json.dumps(make_card(agent, fcn_config, obs_config, training, metrics), indent=2) + "\n"
            blob = npz_bytes(weights)
            os.makedirs(out, exist_ok=True)
            write_whole(os.path.join(out, "weights.npz"), blob)
            write_whole(os.path.join(out, "card.json"), card)

        weights, training, metrics = train_agent(agent, data, val, args, fcn_config, obs_config, on_round=save)
        save(weights, training, metrics)
        print("wrote %s (%.0f s); held-out green lateral err median %.3f m"
              % (out, training["train_time_s"], metrics["heldout_true_pose"]["green"]["median_lateral_err_m"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
