"""Train the learned soil estimator (soil paper section 2.1, Fig. 3, eqs. 5-11) and write
``models/soil/estimator/{weights.npz,card.json}`` for the NumPy inference of
``onboard.soil.learned_estimator``.

    python -m harness.training.soil_estimator.train                    # the paper's 268 episodes (make train-soil)
    python -m harness.training.soil_estimator.train --episodes 8 --epochs 5 --out /tmp/soil_model   # a smoke run

``--inputs force`` (the default, ``models/soil/estimator``) adds the measured force at the horizon points to
the paper's inputs (``learned_estimator.with_force_channels``: the same dataset, no new collection);
``--inputs kinematic`` is the paper's network (``models/soil/estimator_kinematic``); ``--inputs controller``
the paper's network with the chassis' acceleration and the track speed loop's command added
(``learned_estimator.CONTROLLER_CHANNELS``, the dataset's ``controller`` array;
``models/soil/estimator_controller``).
The dataset (``dataset.py``) is collected once and cached in ``build/soil/`` (``--dataset`` another file).
Episodes whose index ends in 9 are held out for validation (the card's metrics; ``--split soil``: those whose
index // 4 ends in 9, so every soil is held out alike); the others train
``--members`` networks (an ensemble; member m seeded ``seed * 100 + m``) with Adam, mini-batches of 100
(the paper's), the loss of ``model.loss_terms`` (eq. 10; ``--w-xz`` its F_x / F_z weights, the paper's 1 0.5
by default), ``--jobs`` members at a time in worker processes (the same members). The card records the
normalisation, the training settings, the dataset's hash and size, and the validation metrics (per property:
RMSE, normalised RMSE, 1-sigma / 2-sigma coverage of the whole-cut windows; the force prediction error over the
horizon, also per soil and I_d bin at I_d <= 60 %, over the ``force_cuts`` cuts with a valid horizon point).
A metric that could not be measured is ``null`` in the card (a force error where no cut has a valid horizon
point, an nrmse of a property whose true values are all 0), never NaN; both files are written whole.
Bad input (a missing or malformed dataset file, a bad number) is one line on stderr and exit status 2.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

from harness.data_files import npz_bytes
from harness.report.run_report import write_whole
from harness.sim.soil_world import PRESETS, SOILS
from harness.training.soil_estimator import dataset as ds
from onboard.soil import cut_estimator
from onboard.soil import learned_estimator as le
from onboard.soil.fee import THETA_U_NAMES

MODEL_DIR = os.path.join("models", "soil", "estimator")
BUILD_DIR = os.path.join("build", "soil")
SEED_MAX = 2 ** 64 - 1
DEFAULTS = {"epochs": 150, "batch": 100, "lr": 1e-3, "hidden": [128, 128], "members": 5, "seed": 1,
            "weight_decay": 0.0, "inputs": "force"}


def preset_bounds():
    """(lo, hi) arrays of every property over the four presets and I_d 0-100 % (SI units, fee slots)."""
    c_hi = max(p["c_pa"][1] for p in PRESETS.values())
    phi = [math.radians(v) for p in PRESETS.values() for v in p["phi_deg"]]
    gam = [v for p in PRESETS.values() for v in p["gamma_npm3"]]
    ca_hi = max(p["ca_ratio"] * p["c_pa"][1] for p in PRESETS.values())
    dl = [p["delta_ratio"] * math.radians(v) for p in PRESETS.values() for v in p["phi_deg"]]
    return (np.array([0.0, min(phi), min(gam), 0.0, min(dl)]),
            np.array([c_hi, max(phi), max(gam), ca_hi, max(dl)]))


def prior_sigma():
    """The classical estimator's prior sigmas (eq. 9's ambiguity covariance, notes A7's scale)."""
    return np.array([cut_estimator.DEFAULTS["prior"][k][1] for k in THETA_U_NAMES], dtype=float)


SPLITS = {"episode": "episodes with index % 10 == 9",
          "soil": "episodes with (index // 4) % 10 == 9 (every soil held out alike)"}


def split(data, kind="episode"):
    """(train mask, validation mask) by episode (:data:`SPLITS`): ``episode``, index ending in 9 held out (as
    soil = index mod 4, only loam and gravel); ``soil``, (index // 4) ending in 9 held out (all four soils)."""
    if kind not in SPLITS:
        raise ValueError("unknown validation split %r (one of %s)" % (kind, ", ".join(SPLITS)))
    key = data["episode"] if kind == "episode" else data["episode"] // 4
    val = (key % 10) == 9
    if not np.any(~val):
        val = np.zeros_like(val)
    return ~val, val


def normalisation(x):
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std = np.where(std > 1e-9, std, 1.0)
    return mean, std


def train_member(data, mask, x_mean, x_std, lo, hi, horizon, member_seed, epochs, batch, lr, hidden,
                 weight_decay=0.0, log=None, loss_cfg=None):
    """A trained ``model.SoilNet`` and its per-epoch mean losses [{total, force, nll, force_mae_pct}]."""
    import torch
    from harness.training.soil_estimator import model as md
    torch.manual_seed(member_seed)
    rng = np.random.default_rng(member_seed)
    idx_all = np.flatnonzero(mask)
    x = torch.tensor((data["x_raw"][idx_all] - x_mean) / x_std, dtype=torch.float32)
    geom = torch.tensor(data["geometry"][idx_all], dtype=torch.float32)
    force = torch.tensor(data["force_n"][idx_all], dtype=torch.float32)
    samples = torch.tensor(data["samples"][idx_all], dtype=torch.float32)
    lo_t = torch.tensor(lo, dtype=torch.float32)
    hi_t = torch.tensor(hi, dtype=torch.float32)
    ps = torch.tensor(prior_sigma(), dtype=torch.float32)
    net = md.SoilNet(x.shape[1], horizon, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    history = []
    n = x.shape[0]
    for ep in range(epochs):
        order = rng.permutation(n)
        sums = {"total": 0.0, "force": 0.0, "nll": 0.0, "force_mae_pct": 0.0}
        steps = 0
        for s in range(0, n, batch):
            b = torch.tensor(order[s:s + batch])
            terms = md.loss_terms(net, {"x": x[b], "geometry": geom[b], "force_n": force[b],
                                        "samples": samples[b]}, lo_t, hi_t, ps, loss_cfg)
            opt.zero_grad()
            terms["total"].backward()
            opt.step()
            for k in sums:
                sums[k] += float(terms[k].detach())
            steps += 1
        history.append({k: v / max(steps, 1) for k, v in sums.items()})
        if log is not None and (ep % 10 == 0 or ep == epochs - 1):
            log("member seed %d epoch %d: %s" % (member_seed, ep,
                                                  " ".join("%s %.4g" % kv for kv in history[-1].items())))
    return net, history


def member_job(job):
    """One ensemble member trained in a worker process (``--jobs``): ``job`` = (the training arrays, the
    :func:`train_member` arguments after ``data, mask``); returns (its exported layers, its loss history).
    Seeded by its member seed alone, so the members do not depend on where they run."""
    import torch
    from harness.training.soil_estimator import model as md
    torch.set_num_threads(1)
    data, args, kwargs = job
    mask = np.ones(len(data["x_raw"]), dtype=bool)
    net, hist = train_member(data, mask, *args, **kwargs)
    return md.export_layers(net), hist


def evaluate(data, mask, x_mean, x_std, lo, hi, horizon, members):
    """Validation metrics of the ensemble ``members`` ([[(W, b)]]) on the whole-cut windows of ``mask``
    through the NumPy inference (``learned_estimator``): per property rmse / nrmse / coverage (stated sigma:
    the members' mean variance plus their spread), the horizon force error [%] over the ``force_cuts`` cuts
    with at least one valid horizon point (None, null in the card, when no cut has one: no force error was
    measured; likewise per I_d bin)."""
    sel = mask & data["whole_cut"]
    out = {"windows": int(mask.sum()), "whole_cuts": int(sel.sum())}
    if not np.any(sel):
        return out
    x = (data["x_raw"][sel] - x_mean) / x_std
    decs = [le.decode(le.mlp_forward(layers, x), lo, hi, horizon) for layers in members]
    thetas = np.stack([d["theta"] for d in decs])
    theta = thetas.mean(axis=0)
    var = np.mean([np.exp(d["logvar"]) for d in decs], axis=0) + thetas.var(axis=0)
    truth = data["truth"][sel]
    for k, name in enumerate(THETA_U_NAMES):
        err = theta[:, k] - truth[:, k]
        sig = np.sqrt(var[:, k])
        scale = float(np.mean(np.abs(truth[:, k])))
        rmse = float(np.sqrt(np.mean(err * err)))
        out[name] = {"rmse": rmse, "nrmse": rmse / scale if scale > 0 else None,
                     "coverage_1s": float(np.mean(np.abs(err) <= sig)),
                     "coverage_2s": float(np.mean(np.abs(err) <= 2.0 * sig))}
    # horizon force error (beta0 + beta_res at the horizon points, the training's and inference's rule); a cut
    # with no valid horizon point has no force error (NaN here, left out of every mean below)
    errs, mags = [], []
    for i, j in enumerate(np.flatnonzero(sel)):
        d0 = {k: float(np.mean([d[k][i] for d in decs])) for k in ("depth_res_m", "surcharge_rel")}
        fr = np.mean([d["residual_force_n"][i] for d in decs], axis=0)
        br = np.mean([d["beta_res_rad"][i] for d in decs], axis=0)
        fx, fz, valid = le.fee_window_force(theta[i], data["geometry"][j], d0["depth_res_m"], d0["surcharge_rel"], fr,
                                            br)
        if not np.any(valid):
            errs.append(np.nan)
            mags.append(np.nan)
            continue
        f = data["force_n"][j]
        errs.append(np.concatenate([np.abs(f[valid, 0] - fx[valid]), np.abs(f[valid, 1] - fz[valid])]).mean())
        mags.append(np.concatenate([np.abs(f[valid, 0]), np.abs(f[valid, 1])]).mean())
    errs, mags = np.array(errs), np.array(mags)
    has_force = ~np.isnan(errs)

    def force_pct(m):
        """The force error [%] over the cuts of ``m`` that have one; None (null in the card) when none has."""
        m = m & has_force
        return float(100.0 * np.mean(errs[m]) / max(np.mean(mags[m]), 1e-9)) if np.any(m) else None
    out["force_cuts"] = int(has_force.sum())
    out["force_mae_pct"] = force_pct(np.ones(len(errs), dtype=bool))
    idd = data["relative_density_pct"][sel]
    low = idd <= 60.0
    if np.any(low):
        out["force_mae_pct_id_le_60"] = force_pct(low)
    # per soil and I_d bin at I_d <= 60 % (soil-sweep's acceptance bins, 20 % wide; the last, 40-60, holds 60 %
    # itself as force_mae_pct_id_le_60 does): mean over the cuts of each cut's error in % of its mean |F|
    # (soil-sweep's rule), and the worst bin
    pct = 100.0 * errs / np.maximum(mags, 1e-9)
    bins = {}
    for s, soil in enumerate(SOILS):
        for lo_pct in (0.0, 20.0, 40.0):
            top = (idd <= lo_pct + 20.0) if lo_pct == 40.0 else (idd < lo_pct + 20.0)
            m = (data["soil"][sel] == s) & (idd >= lo_pct) & top
            if np.any(m):
                mf = m & has_force
                bins["%s %d-%d" % (soil, lo_pct, lo_pct + 20)] = {
                    "cuts": int(m.sum()), "pct": float(pct[mf].mean()) if np.any(mf) else None}
    if bins:
        out["force_mae_pct_bins_id_le_60"] = bins
        known = [b["pct"] for b in bins.values() if b["pct"] is not None]
        out["force_mae_pct_worst_bin_id_le_60"] = max(known) if known else None
    return out


def export(out_dir, members, x_mean, x_std, lo, hi, card):
    """Write ``out_dir/{weights.npz, card.json}``, each whole (``write_whole``: an interrupted export leaves the
    earlier file, never half of one). Both are serialised first: a card value JSON cannot hold (NaN, inf)
    raises ValueError before either file is touched; a metric that was not measured is None (null)."""
    text = json.dumps(card, indent=2, sort_keys=False, allow_nan=False) + "\n"
    arrays = {"x_mean": x_mean, "x_std": x_std, "bounds_lo": lo, "bounds_hi": hi,
              "members": np.array(len(members)), "layers": np.array(len(members[0]))}
    for m, layers in enumerate(members):
        for i, (w, b) in enumerate(layers):
            arrays["m%d_w%d" % (m, i)] = np.asarray(w, dtype=np.float32)    # float32 weights: lossless
            arrays["m%d_b%d" % (m, i)] = np.asarray(b, dtype=np.float32)
    blob = npz_bytes(arrays)
    os.makedirs(out_dir, exist_ok=True)
    write_whole(os.path.join(out_dir, "weights.npz"), blob)
    write_whole(os.path.join(out_dir, "card.json"), text)


def get_dataset(args, log):
    path = args.dataset or os.path.join(BUILD_DIR, "dataset_e%d_s%d_h%d_ctl.npz" % (args.episodes, args.data_seed,
                                                                                 args.horizon))
    if os.path.isfile(path):
        log("dataset: %s (cached)" % path)
        return ds.load(path), path, None
    if args.dataset:
        raise ValueError("soil dataset %s not found" % path)
    t0 = time.perf_counter()
    data = ds.collect(args.episodes, args.data_seed, horizon=args.horizon, workers=args.workers,
                      progress=lambda k, n: log("episode %d/%d" % (k, n)) if k % 20 == 0 or k == n else None)
    ds.save(path, data)
    return data, path, time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="harness.training.soil_estimator.train")
    p.add_argument("--episodes", type=int, default=ds.DEFAULTS["episodes"])
    p.add_argument("--data-seed", type=int, default=ds.DEFAULTS["seed"])
    p.add_argument("--horizon", type=int, default=ds.DEFAULTS["horizon"])
    p.add_argument("--workers", type=int, default=ds.DEFAULTS["workers"])
    p.add_argument("--dataset", default=None, help="a dataset .npz (default: build/soil/, collected when missing)")
    p.add_argument("--epochs", type=int, default=DEFAULTS["epochs"])
    p.add_argument("--batch", type=int, default=DEFAULTS["batch"])
    p.add_argument("--lr", type=float, default=DEFAULTS["lr"])
    p.add_argument("--hidden", type=int, nargs="+", default=DEFAULTS["hidden"])
    p.add_argument("--weight-decay", type=float, default=DEFAULTS["weight_decay"])
    p.add_argument("--relative-force", action="store_true",
                   help="the force term per window relative to its mean |F| (default: absolute, the paper's wMAE)")
    p.add_argument("--w-xz", type=float, nargs=2, default=None, metavar=("W_X", "W_Z"),
                   help="weights of the F_x and F_z errors in eq. 10's wMAE terms (default: the paper's 1.0 0.5; "
                        "1 1 weighs them as soil-sweep's force error does)")
    p.add_argument("--inputs", choices=sorted(le.INPUT_KINDS), default=DEFAULTS["inputs"],
                   help="kinematic: the paper's inputs (kinematics, actions, geometry); force: those and the "
                        "measured force at the horizon points (default)")
    p.add_argument("--split", choices=sorted(SPLITS), default="episode",
                   help="validation episodes: episode (index %% 10 == 9: loam and gravel only; the committed force "
                        "and kinematic models) or soil ((index // 4) %% 10 == 9: every soil)")
    p.add_argument("--members", type=int, default=DEFAULTS["members"])
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1,
                   help="ensemble members trained at a time, in worker processes (the same members with any count)")
    p.add_argument("--out", default=MODEL_DIR)
    args = p.parse_args(argv)
    for name in ("episodes", "horizon", "workers", "epochs", "batch", "members", "threads", "jobs"):
        if getattr(args, name) < 1:
            print("train-soil: --%s must be >= 1, got %d" % (name, getattr(args, name)), file=sys.stderr)
            return 2
    for name in ("seed", "data_seed"):                  # member m is seeded seed * 100 + m (numpy: >= 0)
        if getattr(args, name) < 0:
            print("train-soil: --%s must be >= 0, got %d" % (name.replace("_", "-"), getattr(args, name)),
                  file=sys.stderr)
            return 2
    if args.w_xz is not None and not (all(math.isfinite(w) and w >= 0 for w in args.w_xz) and max(args.w_xz) > 0):
        print("train-soil: --w-xz must be two finite weights >= 0, not both 0", file=sys.stderr)
        return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print("train-soil: --out %s is not a folder" % args.out, file=sys.stderr)
        return 2
    if args.seed * 100 + args.members - 1 > SEED_MAX:                 # torch's largest seed
        print("train-soil: --seed must be <= %d for %d members (member m is seeded seed * 100 + m, at most %d), "
              "got %d" % ((SEED_MAX - args.members + 1) // 100, args.members, SEED_MAX, args.seed), file=sys.stderr)
        return 2
    if (not (args.lr > 0 and math.isfinite(args.lr)) or min(args.hidden) < 1
            or not (args.weight_decay >= 0 and math.isfinite(args.weight_decay))):
        print("train-soil: --lr must be a positive number, --weight-decay a finite number >= 0 and --hidden sizes "
              ">= 1", file=sys.stderr)
        return 2

    def log(msg):
        print(msg, flush=True)
    try:
        data, path, collect_s = get_dataset(args, log)
    except (ValueError, OSError) as exc:
        print("train-soil: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return 2
    if data["geometry"].shape[1] != args.horizon:
        print("train-soil: dataset %s has horizon %d, --horizon is %d" % (path, data["geometry"].shape[1],
                                                                          args.horizon), file=sys.stderr)
        return 2
    data_digest = ds.digest(data)
    if args.inputs == "force":
        data = dict(data, x_raw=le.with_force_channels(data["x_raw"], data["force_n"], args.horizon))
    elif args.inputs == "controller":
        if "controller" not in data:
            print("train-soil: dataset %s has no controller array (collected before the track loop's command was "
                  "logged); collect it again" % path, file=sys.stderr)
            return 2
        data = dict(data, x_raw=le.with_point_channels(data["x_raw"], data["controller"], args.horizon))
    import torch
    from harness.training.soil_estimator import model as md
    torch.set_num_threads(args.threads)
    train_mask, val_mask = split(data, args.split)
    x_mean, x_std = normalisation(data["x_raw"][train_mask])
    lo, hi = preset_bounds()
    loss_cfg = {"relative_force": args.relative_force}
    if args.w_xz is not None:
        loss_cfg["w_xz"] = [float(w) for w in args.w_xz]
    members = []
    histories = []
    t0 = time.perf_counter()
    if args.jobs > 1:
        from harness.parallel import ordered_map
        keys = ("x_raw", "geometry", "force_n", "samples")
        sub = {k: data[k][train_mask] for k in keys}
        jobs = [(sub, (x_mean, x_std, lo, hi, args.horizon, args.seed * 100 + m, args.epochs, args.batch, args.lr,
                       args.hidden, args.weight_decay), {"loss_cfg": loss_cfg})
                for m in range(args.members)]
        for m, (layers, hist) in enumerate(ordered_map(member_job, jobs, workers=min(args.jobs, args.members))):
            log("member seed %d: final %s" % (args.seed * 100 + m,
                                               " ".join("%s %.4g" % kv for kv in hist[-1].items())))
            members.append(layers)
            histories.append(hist)
    for m in range(args.members if args.jobs <= 1 else 0):
        net, hist = train_member(data, train_mask, x_mean, x_std, lo, hi, args.horizon, args.seed * 100 + m,
                                 args.epochs, args.batch, args.lr, args.hidden, args.weight_decay, log=log,
                                 loss_cfg=loss_cfg)
        members.append(md.export_layers(net))
        histories.append(hist)
    train_s = time.perf_counter() - t0
    metrics = {"validation": evaluate(data, val_mask, x_mean, x_std, lo, hi, args.horizon, members),
               "validation_member0": evaluate(data, val_mask, x_mean, x_std, lo, hi, args.horizon, members[:1]),
               "training": evaluate(data, train_mask, x_mean, x_std, lo, hi, args.horizon, members)}
    card = {
        "name": "soil-learned-estimator",
        "paper": "soil-property-bayesian-mapping, section 2.1, Fig. 3, eqs. 5-11",
        "input": {"horizon": args.horizon, "kind": args.inputs, "channels": list(le.INPUT_KINDS[args.inputs]),
                  "globals": list(le.GLOBALS),
                  "size": int(data["x_raw"].shape[1]),
                  "meaning": "per horizon point (evenly spaced over the window) the extracted geometry, the "
                             "kinematics and the operator's commands%s (SI units), then duration [s] and "
                             "travel [m]; standardised with weights.npz x_mean / x_std"
                             % (", and the measured force (F_x, F_z) [N]" if args.inputs == "force"
                                else ", the longitudinal acceleration [m/s^2] and the track speed loop's "
                                     "commanded tractive effort [N]; not the force" if args.inputs == "controller"
                                else "; not the force")},
        "output": {"size": le.output_size(args.horizon),
                   "meaning": "5 properties (sigmoid to bounds), 5 log-variances, horizon beta residuals, depth "
                              "and surcharge residuals, residual force (x, z)",
                   "properties": list(THETA_U_NAMES),
                   "bounds_lo": [float(v) for v in lo], "bounds_hi": [float(v) for v in hi]},
        "network": {"kind": "MLP, tanh hidden layers", "hidden": list(args.hidden), "members": args.members},
        "normalisation": {"x_mean": [float(v) for v in x_mean], "x_std": [float(v) for v in x_std],
                          "rule": "x = (x_raw - x_mean) / x_std (also weights.npz x_mean / x_std)"},
        "prior_sigma": [float(v) for v in prior_sigma()],
        "noise": {"rel_sigma": md.LOSS_DEFAULTS["noise_rel"], "abs_sigma_n": md.LOSS_DEFAULTS["noise_abs_n"]},
        "eq9": {"whitened_atol": md.LOSS_DEFAULTS["eq9_atol"], "whitened_rtol": md.LOSS_DEFAULTS["eq9_rtol"],
                "correlated_samples": md.LOSS_DEFAULTS["correlated_samples"]},
        "training": {"seed": args.seed, "member_seeds": [args.seed * 100 + m for m in range(args.members)],
                     "epochs": args.epochs, "batch": args.batch,
                     "optimizer": "Adam lr %g, weight decay %g" % (args.lr, args.weight_decay),
                     "loss": dict(md.LOSS_DEFAULTS, **loss_cfg),
                     "validation": SPLITS[args.split], "split": args.split,
                     "final_loss": [h[-1] for h in histories],
                     "first_loss": [h[0] for h in histories]},
        "dataset": {"file": os.path.basename(path), "sha256_16": data_digest, "episodes": args.episodes,
                    "data_seed": args.data_seed, "windows": int(data["x_raw"].shape[0]),
                    "whole_cuts": int(data["whole_cut"].sum()), "soils": list(SOILS),
                    "relative_density_pct": [ds.DEFAULTS["id_min_pct"], ds.DEFAULTS["id_max_pct"]],
                    "window_samples": ds.DEFAULTS["window_samples"],
                    "episode": "soil-sweep's episode: one 5 m lane, random setpoints (tilt 0-0.4 rad)"},
        "metrics": metrics,
        "timing_s": {"collect": None if collect_s is None else round(collect_s, 1), "train": round(train_s, 1)},
        "command": "python -m harness.training.soil_estimator.train " + " ".join(argv if argv is not None
                                                                                else sys.argv[1:]),
    }
    try:
        export(args.out, members, x_mean, x_std, lo, hi, card)
    except ValueError as exc:             # a NaN or infinite figure: the card cannot hold it (nothing written)
        print("train-soil: cannot write %s: %s (did the training diverge?)" % (args.out, str(exc).splitlines()[0]),
              file=sys.stderr)
        return 2
    except OSError as exc:
        print("train-soil: cannot write %s: %s" % (args.out, exc), file=sys.stderr)
        return 2
    log("wrote %s (train %.0f s); validation: %s" % (args.out, train_s, json.dumps(metrics["validation"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
