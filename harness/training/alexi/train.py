"""Train the Alexi networks (Cook thesis 6.2.3 and 6.3.3) on Sandbox sessions and export them to
``models/alexi/<net>/`` (int8 ``model.tflite`` + ``card.json`` + ``float_layers.npz``).

    python -m harness.training.alexi.train --train reports/alexi_train_1/sandbox_A.npz \\
        reports/alexi_train_2/sandbox_A.npz --test reports/sandbox/sandbox_A.npz       # make train-alexi
    python -m harness.training.alexi.train --train S.npz --test T.npz --v1-epochs 20 --v2-epochs 2 \\
        --terrain-epochs 1 --out /tmp/alexi_models                                        # a smoke run

Networks (``--nets``): ``v1_speed``, ``v1_dyaw`` (4-20-1 tanh, Rprop -- torch's Rprop is iRPROP-'s
sign-based step with the step zeroed on a sign change, reading aid A24 -- full batch, ``--v1-epochs`` 2000,
trained on the first training session only, as the thesis's single 16 000-frame session; the epoch with the
lowest MSE on a seeded 10 % validation split of it is kept, A22); ``v2_speed``, ``v2_dyaw`` (the two-network
configuration) and ``v2_dnorth``, ``v2_deast`` (with ``v2_dyaw`` the three-network one; 13 x 7 tanh + batch
norm + L2 1e-4, SGD lr 0.01, batch 32, ``--v2-epochs`` 25, MSE, on every training session); ``terrain``
(the deformation net: Adam lr 1e-3, batch 32, ``--terrain-epochs`` 10, MSE on dh scaled by ``dh_scale_m``).

Model selection: with ``--val`` sessions (never the test set) a V2 net is scored on them every ``--val-every``
epochs and the epoch of the best score is kept; ``--v2-epochs`` is then the most. ``--select`` names the score
(:data:`SELECT`): ``prep_r2`` (default) the R^2 (Pearson) on the preprocessed targets, as the thesis scores;
``raw_cod`` the coefficient of determination on the raw per-frame targets (alexi-eval's raw mode,
:func:`evaluate.raw_kinematic`), which a per-frame gain error lowers. The card records the choice and, per check,
both scores and the raw gain.
Augmentation: ``--tilt-shuffle`` s gives a seeded share s of the V2 training samples the (pitch, roll) of another
random sample (:func:`tilt_shuffled`). ``make train-alexi`` selects both two-network V2 nets on validation session 3
(every 5 epochs, up to 300): ``v2_speed`` on sessions 1, 2; ``v2_dyaw`` on sessions 1, 2, 4 with
``--tilt-shuffle 0.5`` (docs/results/alexi.md).

Preprocessing: V1 :data:`preprocess.V1_RECIPE`, V2 :data:`preprocess.V2_RECIPE` (min-max ranges from the
training sessions, stored in the cards). Each card's ``metrics`` hold the test session's R^2 of the float and
the int8 network in the preprocessed space (the int8-vs-float measurement). Seeded: ``--seed`` (net k of the
list gets ``seed * 100 + k``), one torch thread by default. Bad input: one line, exit 2.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

from harness.report.run_report import write_whole
from harness.training.alexi import dataset as ds
from harness.training.alexi import metrics as mt
from harness.training.alexi import preprocess as pp

NETS = ("v1_speed", "v1_dyaw", "v2_speed", "v2_dyaw", "v2_dnorth", "v2_deast", "terrain")
DEFAULTS = {"v1_epochs": 2000, "v2_epochs": 25, "terrain_epochs": 10, "v2_lr": 0.01, "batch": 32,
            "terrain_lr": 1e-3, "terrain_width": 64, "terrain_layers": 2, "window": 16, "seed": 1, "threads": 1,
            "val_every": 5, "tilt_shuffle": 0.0}
OUT = os.path.join("models", "alexi")
# Least values of the whole-number settings (--batch: the batch norm needs two samples a batch; --max-frames 0:
# every frame); the learning rates must be finite and > 0.
MINIMA = {"v1_epochs": 1, "v2_epochs": 1, "terrain_epochs": 1, "batch": 2, "terrain_width": 1, "terrain_layers": 0,
          "threads": 1, "seed": 0, "max_frames": 0}
RATES = ("v2_lr", "terrain_lr")
SEED_MAX = 2 ** 64 - 1      # torch's largest seed
# V2 model-selection scores on the validation sessions (--select)
SELECT = {"prep_r2": "R^2 Pearson on the preprocessed (recipe: smoothed, quantised) targets, as the thesis scores",
          "raw_cod": "coefficient of determination on the raw per-frame targets (alexi-eval's raw mode): sees a "
                     "gain error of the per-frame prediction"}


def _torch(seed, threads):
    import torch
    torch.manual_seed(seed)
    torch.set_num_threads(int(threads))
    return torch


def fit_v1(x, y, seed, epochs, threads=1):
    """(net, history) of a V1 net by full-batch Rprop; the epoch with the lowest validation MSE is kept.
    ValueError with fewer than 2 samples (one is held out for the validation, the rest train)."""
    if len(y) < 2:
        raise ValueError("the V1 net needs at least 2 training samples (one held out for validation), got %d"
                         % len(y))
    torch = _torch(seed, threads)
    from harness.training.alexi.models import V1Net
    rng = np.random.default_rng(seed)
    val = np.zeros(len(y), dtype=bool)
    val[rng.choice(len(y), size=max(1, len(y) // 10), replace=False)] = True
    xt, yt = torch.tensor(x[~val], dtype=torch.float32), torch.tensor(y[~val], dtype=torch.float32)
    xv, yv = torch.tensor(x[val], dtype=torch.float32), torch.tensor(y[val], dtype=torch.float32)
    net = V1Net()
    opt = torch.optim.Rprop(net.parameters())
    best, best_state, losses = float("inf"), None, []
    for epoch in range(int(epochs)):
        opt.zero_grad()
        loss = torch.mean((net(xt) - yt) ** 2)
        loss.backward()
        opt.step()
        with torch.no_grad():
            v = float(torch.mean((net(xv) - yv) ** 2))
        losses.append(float(loss.detach()))
        if v < best:
            best, best_epoch = v, epoch
            best_state = {k: t.clone() for k, t in net.state_dict().items()}
    net.load_state_dict(best_state)
    net.eval()
    return net, {"train_mse": losses, "best_epoch": best_epoch + 1, "validation_mse": best}


def _minibatch_fit(net, opt, x, y, seed, epochs, batch, loss_fn, torch, after_epoch=None):
    """Mini-batch training; ``after_epoch(epoch)`` (1-based, net in eval mode) is called after every epoch.
    ValueError with fewer than 2 samples (the batch norm needs two a batch: nothing would train)."""
    if len(x) < 2:
        raise ValueError("training needs at least 2 samples (the batch norm needs two a batch), got %d" % len(x))
    gen = torch.Generator().manual_seed(seed)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    losses = []
    for epoch in range(int(epochs)):
        net.train()
        perm = torch.randperm(len(xt), generator=gen)
        total, count = 0.0, 0
        for i in range(0, len(xt), batch):
            idx = perm[i:i + batch]
            if len(idx) < 2:                      # batch norm needs two samples
                continue
            opt.zero_grad()
            err = loss_fn(net(xt[idx]), yt[idx])
            loss = err + net.l2()
            loss.backward()
            opt.step()
            total += float(err.detach()) * len(idx)
            count += len(idx)
        losses.append(total / max(count, 1))
        if after_epoch is not None:
            net.eval()
            after_epoch(epoch + 1)
    net.eval()
    return losses


def fit_v2(x, y, seed, epochs, lr=0.01, batch=32, threads=1, val=None, val_every=5, val_raw=None,
           select="prep_r2"):
    """(net, history) of a V2 net: SGD (lr, no momentum), mini-batches, MSE + L2 (thesis 6.3.3).

    With ``val`` = (x_val, y_val) (a validation session through the net's recipe, never the test set) the
    network is scored every ``val_every`` epochs (and at the last) and the network of the best such epoch is
    kept (model selection on validation data). ``select`` names the score (:data:`SELECT`): ``prep_r2`` the
    R^2 (Pearson) on ``val``; ``raw_cod`` the coefficient of determination on ``val_raw`` = (x, y) of the same
    session in alexi-eval's raw per-frame mode. The history holds ``best_epoch``, the ``validation_r2`` curve
    of the selected score and, with ``val_raw``, ``validation_scores``: [epoch, prep_r2, raw_cod, raw_gain]."""
    if select not in SELECT:
        raise ValueError("unknown selection %r (choose from %s)" % (select, ", ".join(SELECT)))
    if select == "raw_cod" and val_raw is None:
        raise ValueError("selection raw_cod needs the raw validation inputs")
    torch = _torch(seed, threads)
    from harness.training.alexi.models import V2Net
    net = V2Net()
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    hist = {}
    after = None
    if val is not None:
        xv = torch.tensor(val[0], dtype=torch.float32)
        xr = torch.tensor(val_raw[0], dtype=torch.float32) if val_raw is not None else None
        best = {"r2": -float("inf"), "epoch": 0, "state": None}
        curve, table = [], []

        def after(epoch):
            if epoch % int(val_every) and epoch != int(epochs):
                return
            with torch.no_grad():
                prep = mt.r2_pearson(val[1], net(xv).numpy())
                if xr is not None:
                    p_raw = net(xr).numpy()
                    raw = (mt.r2_cod(val_raw[1], p_raw), mt.gain(val_raw[1], p_raw))
                    table.append([epoch, prep, raw[0], raw[1]])
            r2 = prep if select == "prep_r2" else raw[0]
            curve.append([epoch, r2])
            if r2 > best["r2"]:
                best.update(r2=r2, epoch=epoch, state={k: t.clone() for k, t in net.state_dict().items()})
    losses = _minibatch_fit(net, opt, x, y, seed, epochs, batch, lambda p, t: torch.mean((p - t) ** 2), torch,
                            after)
    if val is not None:
        net.load_state_dict(best["state"])
        net.eval()
        hist.update(best_epoch=best["epoch"], validation_r2=curve, best_validation_r2=best["r2"])
        if table:
            hist["validation_scores"] = table
    hist["train_mse"] = losses
    return net, hist


def fit_terrain(x, y, seed, epochs, width, layers, lr=1e-3, batch=32, threads=1):
    """(net, history) of the terrain net: Adam, MSE (thesis 6.3.3)."""
    torch = _torch(seed, threads)
    from harness.training.alexi.models import TerrainNet
    net = TerrainNet(x.shape[1], y.shape[1], width, layers)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    losses = _minibatch_fit(net, opt, x, y, seed, epochs, batch, lambda p, t: torch.mean((p - t) ** 2), torch)
    return net, {"train_mse": losses}


def tilt_shuffled(x, share, seed, tilt_columns=(2, 3)):
    """A copy of the preprocessed inputs ``x`` [n, 4] in which a seeded ``share`` of the rows carry the tilt
    columns (pitch, roll) of other random rows (data augmentation: decorrelates the tilt from the command
    blocks, so a net cannot learn that tilted means driving straight)."""
    rng = np.random.default_rng(seed)
    out = np.array(x, dtype=np.float64, copy=True)
    rows = np.flatnonzero(rng.random(len(out)) < float(share))
    donors = rng.integers(0, len(out), size=len(rows))
    cols = list(tilt_columns)
    out[np.ix_(rows, cols)] = np.asarray(x)[np.ix_(donors, cols)]
    return out


def _layers_forward(layers, x):
    from harness.training.quantize import mlp_forward
    return mlp_forward(layers, x)


def _kin_features():
    return [{"name": n, "unit": u, "meaning": m} for n, u, m in zip(ds.INPUTS, ds.INPUT_UNITS, ds.INPUT_MEANINGS)]


def _digests(paths, sessions):
    """Per session file: its name and the content digest of its arrays (sandbox-datagen's digest_sha256)."""
    from harness.sim.sandbox.session import digest
    return [{"file": os.path.basename(os.path.dirname(os.path.abspath(p))) + "/" + os.path.basename(p),
             "digest_sha256": digest(a), "frames": int(a["time_us"].size)} for p, (a, _) in zip(paths, sessions)]


def train_kinematic(name, train_sessions, test_sessions, args, seed, data_info, val_sessions=None):
    """Train, export and score one kinematic net; returns its card."""
    from harness.training.alexi.export import export
    from harness.training.alexi.models import fold
    from harness.sim.alexi.nets import INT8_R2_TOLERANCE, Net
    version, target = name.split("_", 1)
    recipe = dict(pp.V1_RECIPE if version == "v1" else pp.V2_RECIPE)
    sessions = train_sessions[:1] if version == "v1" else train_sessions
    ranges = ds.fit_ranges(sessions, recipe, target)
    x, y = ds.kinematic(sessions, recipe, target, ranges)
    xt, yt = ds.kinematic(test_sessions, recipe, target, ranges)        # scored after the export
    if len(yt) == 0:
        raise ValueError("%s: the %r cull keeps no frame of the test sessions: no test metrics"
                         % (name, recipe["cull"]))
    augment = None
    if version == "v2" and args.tilt_shuffle > 0.0:
        x = tilt_shuffled(x, args.tilt_shuffle, seed)
        augment = {"tilt_shuffle": args.tilt_shuffle,
                   "meaning": "this share of the training samples (seeded) carries the pitch and roll of another "
                              "random sample, target unchanged: the reference's yaw response per track-speed "
                              "difference does not depend on the tilt (docs/results/alexi.md)"}
    t0 = time.perf_counter()
    if version == "v1":
        net, hist = fit_v1(x, y, seed, args.v1_epochs, args.threads)
        algo = {"optimizer": "Rprop (torch defaults, iRPROP-)", "epochs": args.v1_epochs, "batch": "full",
                "best_epoch": hist["best_epoch"], "select_on": "validation (10 % of the session, seeded)"}
    else:
        from harness.training.alexi.evaluate import raw_kinematic
        val = ds.kinematic(val_sessions, recipe, target, ranges) if val_sessions else None
        val_raw = raw_kinematic(val_sessions, target, ranges) if val_sessions else None
        if val is not None and (len(val[1]) < 2 or len(val_raw[1]) < 2):
            raise ValueError("%s: the validation sessions keep %d frame(s) after the %r cull: no model selection "
                             "on them" % (name, min(len(val[1]), len(val_raw[1])), recipe["cull"]))
        net, hist = fit_v2(x, y, seed, args.v2_epochs, args.v2_lr, args.batch, args.threads, val, args.val_every,
                           val_raw, args.select)
        algo = {"optimizer": "SGD", "lr": args.v2_lr, "momentum": 0.0, "epochs": args.v2_epochs, "batch": args.batch,
                "l2": 1e-4}
        if augment is not None:
            algo["augmentation"] = augment
        if val is not None:
            algo.update(select_on="validation sessions (%s: %s; every %d epochs)" % (
                            args.select, SELECT[args.select], args.val_every), select=args.select,
                        best_epoch=hist["best_epoch"], best_validation_r2=hist["best_validation_r2"],
                        validation_r2=hist["validation_r2"], validation_scores_columns=[
                            "epoch", "prep_r2 (R^2 Pearson, preprocessed)", "raw_cod (1 - SSE/SST, raw per-frame)",
                            "raw_gain (least-squares slope of prediction on target, raw per-frame)"],
                        validation_scores=hist["validation_scores"])
        else:
            algo.update(select_on="none (last epoch)")
    train_s = time.perf_counter() - t0
    layers = fold(net)
    x_lo, x_hi = np.asarray(ranges["inputs"][0]), np.asarray(ranges["inputs"][1])
    y_lo, y_hi = ranges["target"]
    mid_x, half_x = 0.5 * (x_hi + x_lo), 0.5 * (x_hi - x_lo)
    unit, meaning = ds.TARGETS[target][1], ds.TARGETS[target][2]
    out_dir = os.path.join(args.out, name)
    card = export(out_dir, "alexi-%s" % name.replace("_", "-"),
                  "Alexi %s %s network (Cook thesis %s)" % (version.upper(), target,
                                                            "6.2" if version == "v1" else "6.3"),
                  layers, x, (mid_x, half_x), ([0.5 * (y_hi + y_lo)], [0.5 * (y_hi - y_lo)]), _kin_features(),
                  {"unit": unit, "meaning": meaning, "target_key": ds.TARGETS[target][0]},
                  {"version": version, "target": target, "recipe": recipe, "ranges": ranges,
                   "inference_note": "no smoothing at inference (reading aid A20): the simulator feeds per-frame "
                                     "inputs; training inputs were preprocessed by the recipe"},
                  dict(algo, seed=seed, framework="torch", data=data_info, train_samples=int(len(y)),
                       final_train_mse=hist["train_mse"][-1]),
                  input_range=(-1.25, 1.25))
    # int8 vs float on the test session (preprocessed targets as the thesis)
    p_float = _layers_forward(layers, xt)[:, 0]
    p_int8 = Net(out_dir, "int8", "litert").predict_normalised(xt)[:, 0]
    card_metrics = {"test_float": mt.scores(yt, p_float), "test_int8": mt.scores(yt, p_int8),
                    "int8_max_abs_diff": float(np.max(np.abs(p_int8 - p_float))),
                    "train_mse_first_last": [hist["train_mse"][0], hist["train_mse"][-1]]}
    loss = card_metrics["test_float"]["r2_pearson"] - card_metrics["test_int8"]["r2_pearson"]
    _update_card(out_dir, card, card_metrics, "float" if loss > INT8_R2_TOLERANCE else "int8")
    print("%-10s %6d samples  train %.1f s  test R2 float %.4f int8 %.4f  (max |int8-float| %.3f)" % (
        name, len(y), train_s, card_metrics["test_float"]["r2_pearson"], card_metrics["test_int8"]["r2_pearson"],
        card_metrics["int8_max_abs_diff"]))
    return card


def _update_card(out_dir, card, metrics, runtime_kind):
    import json
    card = dict(card)
    card["metrics"] = metrics
    card["alexi"] = dict(card["alexi"], runtime_kind=runtime_kind)
    # serialised first, then written whole: an interruption leaves the earlier card, never half of one
    write_whole(os.path.join(out_dir, "card.json"), json.dumps(card, indent=2, sort_keys=True) + "\n")


def terrain_scale(dh):
    """dh_scale_m: the 99.9th percentile of |dh| over the non-zero training values (m)."""
    nz = np.abs(dh[dh != 0])
    return float(np.percentile(nz, 99.9)) if nz.size else 1e-3


def train_terrain(train_sessions, test_sessions, args, seed, data_info, kin_ranges):
    from harness.training.alexi.export import export
    from harness.training.alexi.models import fold
    from harness.sim.alexi.nets import INT8_R2_TOLERANCE, Net
    w = args.window
    kin, prev, dh = ds.terrain(train_sessions, w, kin_ranges)
    kt, pt, dt = ds.terrain(test_sessions, w, kin_ranges)                # scored after the export
    if len(dt) == 0:
        raise ValueError("terrain: the v2 cull keeps no frame of the test sessions: no test metrics")
    scale = terrain_scale(dh)
    x = np.concatenate([kin, prev / scale], axis=1)
    y = dh / scale
    t0 = time.perf_counter()
    net, hist = fit_terrain(x, y, seed, args.terrain_epochs, args.terrain_width, args.terrain_layers,
                            args.terrain_lr, args.batch, args.threads)
    train_s = time.perf_counter() - t0
    layers = fold(net)
    x_lo, x_hi = np.asarray(kin_ranges[0]), np.asarray(kin_ranges[1])
    n_px = w * w
    in_mean = list(0.5 * (x_hi + x_lo)) + [0.0] * n_px
    in_std = list(0.5 * (x_hi - x_lo)) + [scale] * n_px
    feats = _kin_features() + [{"name": "prev_dh_%d_%d" % divmod(k, w), "unit": "m",
                                "meaning": "previous frame's height change, window row %d col %d" % divmod(k, w)}
                               for k in range(n_px)]
    out_dir = os.path.join(args.out, "terrain")
    lim = max(1.25, float(np.percentile(np.abs(x), 99.99)))
    card = export(out_dir, "alexi-terrain", "Alexi terrain-deformation network (Cook thesis 6.3.1)", layers,
                  x[::max(1, len(x) // 4000)], (in_mean, in_std), ([0.0] * n_px, [scale] * n_px), feats,
                  {"unit": "m", "meaning": "height change of each window cell over the frame (row-major, rows "
                                           "northward, columns eastward, centred on the robot's cell)"},
                  {"version": "v2", "target": "dh", "window_cells": w, "dh_scale_m": scale,
                   "kinematic_ranges": [list(map(float, x_lo)), list(map(float, x_hi))],
                   "recipe": {"cull": "v2", "drop_teleports": True, "normalise": True, "smoothing": "none",
                              "quantise": False}},
                  {"optimizer": "Adam", "lr": args.terrain_lr, "epochs": args.terrain_epochs, "batch": args.batch,
                   "width": args.terrain_width, "layers": args.terrain_layers, "activation": "linear", "l2": 1e-4,
                   "seed": seed, "framework": "torch", "data": data_info, "train_samples": int(len(y)),
                   "final_train_mse": hist["train_mse"][-1]},
                  input_range=(-lim, lim))
    xt = np.concatenate([kt, pt / scale], axis=1)
    p_float = _layers_forward(layers, xt) * scale
    p_int8 = Net(out_dir, "int8", "litert").predict_normalised(xt) * scale
    card_metrics = {"test_float": {"pixel_pearson": mt.pearson(dt, p_float), "mse_m2": mt.mse(dt, p_float)},
                    "test_int8": {"pixel_pearson": mt.pearson(dt, p_int8), "mse_m2": mt.mse(dt, p_int8)},
                    "persistence_pixel_pearson": mt.pearson(dt, pt),
                    "train_mse_first_last": [hist["train_mse"][0], hist["train_mse"][-1]]}
    loss = card_metrics["test_float"]["pixel_pearson"] ** 2 - card_metrics["test_int8"]["pixel_pearson"] ** 2
    _update_card(out_dir, card, card_metrics, "float" if loss > INT8_R2_TOLERANCE else "int8")
    print("terrain    %6d samples  train %.1f s  test pixel r float %.3f int8 %.3f (previous dh alone %.3f)" % (
        len(y), train_s, card_metrics["test_float"]["pixel_pearson"], card_metrics["test_int8"]["pixel_pearson"],
        card_metrics["persistence_pixel_pearson"]))
    return card


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", nargs="+", required=True, help="training sessions (terrain A .npz)")
    ap.add_argument("--test", nargs="+", required=True, help="test sessions (terrain A .npz) for the card metrics")
    ap.add_argument("--val", nargs="+", default=[], help="validation sessions (.npz, not the test set): the V2 "
                    "nets keep the epoch with the best R^2 on them")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--select", default="prep_r2", help="V2 model-selection score on --val: %s" % "; ".join(
        "%s = %s" % kv for kv in SELECT.items()))
    ap.add_argument("--max-frames", type=int, default=0, help="use only the first N frames of every session (0: all)")
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    args = ap.parse_args(argv)
    nets = [n for n in args.nets.split(",") if n]
    bad = [n for n in nets if n not in NETS]
    if not nets:
        print("alexi train: --nets names no net (choose from %s)" % ", ".join(NETS), file=sys.stderr)
        return 2
    if bad:
        print("alexi train: unknown nets %s (choose from %s)" % (", ".join(bad), ", ".join(NETS)), file=sys.stderr)
        return 2
    if args.select not in SELECT:
        print("alexi train: --select must be one of %s, got %r" % (", ".join(SELECT), args.select), file=sys.stderr)
        return 2
    if args.window < 2 or args.window % 2:
        print("alexi train: --window must be an even number >= 2, got %d" % args.window, file=sys.stderr)
        return 2
    for key, least in MINIMA.items():
        if getattr(args, key) < least:
            print("alexi train: --%s must be >= %d, got %d" % (key.replace("_", "-"), least, getattr(args, key)),
                  file=sys.stderr)
            return 2
    if args.seed * 100 + len(NETS) - 1 > SEED_MAX:
        print("alexi train: --seed must be <= %d (net k is seeded seed * 100 + k, at most %d), got %d"
              % ((SEED_MAX - len(NETS) + 1) // 100, SEED_MAX, args.seed), file=sys.stderr)
        return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print("alexi train: --out %s is not a folder" % args.out, file=sys.stderr)
        return 2
    for key in RATES:
        if not (math.isfinite(getattr(args, key)) and getattr(args, key) > 0.0):
            print("alexi train: --%s must be a finite number > 0, got %r" % (key.replace("_", "-"), getattr(args, key)),
                  file=sys.stderr)
            return 2
    try:
        train_s = ds.load_sessions(args.train)
        test_s = ds.load_sessions(args.test)
        val_s = ds.load_sessions(args.val)
    except (OSError, ValueError, KeyError) as exc:
        print("alexi train: cannot read a session: %s" % exc, file=sys.stderr)
        return 2
    if args.max_frames:
        train_s = [(truncate(a, args.max_frames), m) for a, m in train_s]
        test_s = [(truncate(a, args.max_frames), m) for a, m in test_s]
        val_s = [(truncate(a, args.max_frames), m) for a, m in val_s]
    if not 0.0 <= args.tilt_shuffle <= 1.0:
        print("alexi train: --tilt-shuffle must be a share in [0, 1], got %r" % args.tilt_shuffle, file=sys.stderr)
        return 2
    if args.val_every < 1:
        print("alexi train: --val-every must be >= 1, got %d" % args.val_every, file=sys.stderr)
        return 2
    data_info = {"train": _digests(args.train, train_s), "test": _digests(args.test, test_s)}
    if val_s:
        data_info["validation"] = _digests(args.val, val_s)
    try:
        for k, name in enumerate(nets):
            seed = args.seed * 100 + NETS.index(name)
            if name == "terrain":
                ranges = ds.fit_ranges(train_s, pp.V2_RECIPE, "speed")["inputs"]
                train_terrain(train_s, test_s, args, seed, data_info, ranges)
            else:
                train_kinematic(name, train_s, test_s, args, seed, data_info, val_s)
    except ValueError as exc:
        print("alexi train: %s" % exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print("alexi train: cannot write under %s: %s" % (args.out, exc), file=sys.stderr)
        return 2
    return 0


def truncate(arrays, n):
    """The first ``n`` frames of a session (the whole-terrain grids kept whole, whatever their row count)."""
    from harness.sim.sandbox.session import GRID_ARRAYS
    frames = arrays["time_us"].shape[0]
    return {k: (v[:n] if k not in GRID_ARRAYS and v.ndim >= 1 and v.shape[0] == frames else v)
            for k, v in arrays.items()}


if __name__ == "__main__":
    sys.exit(main())
