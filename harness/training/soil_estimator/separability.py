"""How well the learned soil estimator's inputs tell the soil type apart: the information bound behind the
force-blind models' F_z error (soil paper section 2.1: the network reads kinematics, actions and geometry,
not the force; ``docs/experiments/soil-fz-ambiguity.md``).

A soil's vertical blade force at a given horizontal one is set mostly by its type (cohesive clay pushes the
blade far less down per newton of F_x than the frictional soils): a network that cannot read F_z must infer
the soil from its inputs. This study measures how far that is possible: a classifier (the estimator's MLP,
tanh 128-128, Adam, weight decay 1e-3, cross-entropy over the four ``SOILS``) is trained on the dataset's
windows for each input kind and evaluated by k-fold cross-validation over groups of whole episodes (fold of
episode k: ``(k // 4) % folds``, so every soil is held out alike, as ``train --split soil``). Reported per kind,
on the held-out windows at I_d < ``id_max_pct`` (the acceptance's range): the AUROC of P(clay) separating
clay from the other soils (whole cuts and sub-windows apart), and the F_z error that the posterior implies
when F_z is taken as the soil's median F_z / F_x ratio times the measured F_x, pooled with F_x as
``soil-sweep`` pools them (% of mean |F_x| + |F_z|, per soil): the posterior's median ratio (what an L1
force loss converges to), its mean (L2) and the true soil's (perfect identification).

Input kinds: ``controller`` (the controller model's inputs), ``kinematic`` (the paper's inputs), ``fx`` (the
paper's inputs and the measured F_x only: the bound a perfect horizontal-force signal would give),
``force`` (and F_z: the force model's inputs).

    python -m harness.training.soil_estimator.separability --dataset build/soil/dataset_e400_s1_h12_ctl.npz

Bad input (a missing or malformed dataset, one whose windows fall in fewer than two folds, a bad number) and a
missing torch or scipy (``requirements-train.txt``) are one line on stderr and exit status 2.
"""
import argparse
import json
import sys
import zipfile

import numpy as np

from harness.scenarios.soil.soil_strip import auroc  # one definition: the soil-strip scenario's
from onboard.soil import learned_estimator as le

KINDS = ("controller", "kinematic", "fx", "force")
DEFAULTS = {"folds": 10, "epochs": 60, "hidden": 128, "seed": 0, "id_max_pct": 60.0}


def inputs_of(data, kind, horizon):
    """(B, in) raw inputs of input kind ``kind`` (module docstring) from a dataset (``dataset.load``)."""
    if kind == "kinematic":
        return np.asarray(data["x_raw"], dtype=float)
    if kind == "controller":
        if "controller" not in data:
            raise ValueError("the dataset has no controller array")
        return le.with_point_channels(data["x_raw"], data["controller"], horizon)
    if kind == "fx":
        return le.with_point_channels(data["x_raw"], data["force_n"][:, :, :1], horizon)
    if kind == "force":
        return le.with_point_channels(data["x_raw"], data["force_n"], horizon)
    raise ValueError("unknown input kind %r (one of %s)" % (kind, ", ".join(KINDS)))


def cv_posterior(x, labels, groups, n_classes, folds, epochs=DEFAULTS["epochs"], hidden=DEFAULTS["hidden"],
                 seed=DEFAULTS["seed"]):
    """(B, n_classes) held-out class posteriors: for each fold f the classifier (module docstring) trained
    on the windows whose ``groups % folds != f``, standardised on them, applied to the others. ValueError
    (one line) when the windows fall in fewer than two folds (no window would get a held-out posterior), on
    non-finite inputs or labels outside 0 .. n_classes - 1."""
    x = np.asarray(x, dtype=float)
    labels = np.asarray(labels)
    groups = np.asarray(groups)
    if x.ndim != 2 or len(x) == 0 or labels.shape != (len(x),) or groups.shape != (len(x),):
        raise ValueError("cross-validation needs (B, in) inputs with B labels and groups, got shapes %s, %s, %s"
                         % (x.shape, labels.shape, groups.shape))
    if not np.all(np.isfinite(x)):
        raise ValueError("cross-validation inputs hold NaN or infinite values")
    if not (np.issubdtype(labels.dtype, np.integer) and labels.min() >= 0 and labels.max() < n_classes):
        raise ValueError("class labels must be whole numbers in 0..%d" % (n_classes - 1))
    if not np.issubdtype(groups.dtype, np.integer):
        raise ValueError("episode groups must be whole numbers")
    fold_of = groups % folds
    used = np.unique(fold_of)
    if len(used) < 2:
        raise ValueError("cross-validation over %d folds needs windows of at least 2 episode groups in different "
                         "folds, got %d group(s) (%d window(s))" % (folds, len(np.unique(groups)), len(x)))
    import torch
    torch.set_num_threads(1)
    y = torch.tensor(labels, dtype=torch.long)
    post = np.zeros((len(x), n_classes))
    for f in used:
        f = int(f)
        val = fold_of == f
        torch.manual_seed(seed + f)
        mean, std = x[~val].mean(axis=0), x[~val].std(axis=0)
        xs = torch.tensor((x - mean) / np.where(std > 1e-9, std, 1.0), dtype=torch.float32)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(),
                                  torch.nn.Linear(hidden, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, n_classes))
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-3)
        train = np.flatnonzero(~val)
        rng = np.random.default_rng(seed + f)
        for _ep in range(epochs):
            order = rng.permutation(train)
            for s in range(0, len(order), 100):
                b = torch.tensor(order[s:s + 100])
                loss = torch.nn.functional.cross_entropy(net(xs[b]), y[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            post[val] = torch.softmax(net(xs[torch.tensor(np.flatnonzero(val))]), dim=1).numpy()
    return post


def fz_errors(post, soil, force_n, mask):
    """{rule: {soil index: mean % error}} over the windows of ``mask``: F_z predicted as ratio x measured F_x
    with the ratio the soil's median F_z / F_x (over ``mask``) taken at the posterior's median ("median"), its
    mean ("mean") or the true soil ("truth"); per window |F_z error| in % of mean |F_x| + |F_z|."""
    fx, fz = force_n[:, :, 0], force_n[:, :, 1]
    ratio = fz.mean(axis=1) / np.where(np.abs(fx.mean(axis=1)) > 1e-9, fx.mean(axis=1), 1e-9)
    n = post.shape[1]
    rs = np.array([np.median(ratio[mask & (soil == s)]) if np.any(mask & (soil == s)) else 0.0 for s in range(n)])
    order = np.argsort(rs)
    out = {"median": {}, "mean": {}, "truth": {}}
    for i in np.flatnonzero(mask):
        p = post[i]
        r = {"mean": float(p @ rs), "truth": float(rs[soil[i]]),
             "median": float(rs[order][min(int(np.searchsorted(np.cumsum(p[order]), 0.5)), n - 1)])}
        mag = np.abs(fx[i]).mean() + np.abs(fz[i]).mean()
        for rule, rv in r.items():
            out[rule].setdefault(int(soil[i]), []).append(100.0 * np.abs(fz[i] - rv * fx[i]).mean() / max(mag, 1e-9))
    return {rule: {s: float(np.mean(v)) for s, v in sorted(per.items())} for rule, per in out.items()}


def study(data, kinds, folds=DEFAULTS["folds"], epochs=DEFAULTS["epochs"], id_max_pct=DEFAULTS["id_max_pct"],
          seed=DEFAULTS["seed"]):
    """{kind: {"auroc_whole", "auroc_sub", "fz_pct"}} (module docstring) of a dataset for input ``kinds``."""
    from harness.sim.soil_world import SOILS
    from harness.training.soil_estimator.dataset import check_windows
    check_windows(data)
    horizon = data["geometry"].shape[1]
    soil = np.asarray(data["soil"], dtype=int)
    low = np.asarray(data["relative_density_pct"]) < id_max_pct
    whole = np.asarray(data["whole_cut"], dtype=bool)
    clay = soil == SOILS.index("clay")
    out = {}
    for kind in kinds:
        post = cv_posterior(inputs_of(data, kind, horizon), soil, np.asarray(data["episode"]) // len(SOILS),
                            len(SOILS), folds, epochs, seed=seed)
        p = post[:, SOILS.index("clay")]
        res = {"auroc_whole": auroc(p[low & whole & clay], p[low & whole & ~clay]),
               "auroc_sub": auroc(p[low & ~whole & clay], p[low & ~whole & ~clay]),
               "windows": {"whole": int((low & whole).sum()), "sub": int((low & ~whole).sum())}}
        fz = fz_errors(post, soil, np.asarray(data["force_n"], dtype=float), low & whole)
        res["fz_pct"] = {rule: {SOILS[s]: v for s, v in per.items()} for rule, per in fz.items()}
        out[kind] = res
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                prog="harness.training.soil_estimator.separability")
    p.add_argument("--dataset", required=True, help="a dataset .npz of harness.training.soil_estimator.dataset")
    p.add_argument("--inputs", nargs="+", choices=KINDS, default=list(KINDS))
    p.add_argument("--folds", type=int, default=DEFAULTS["folds"])
    p.add_argument("--epochs", type=int, default=DEFAULTS["epochs"])
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    p.add_argument("--id-max-pct", type=float, default=DEFAULTS["id_max_pct"])
    args = p.parse_args(argv)
    if args.folds < 2 or args.epochs < 1 or not (0.0 < args.id_max_pct <= 100.0):
        print("soil separability: --folds must be >= 2, --epochs >= 1, --id-max-pct in (0, 100]", file=sys.stderr)
        return 2
    if not 0 <= args.seed <= 2 ** 64 - args.folds:      # fold f is seeded seed + f (numpy: >= 0; torch: < 2^64)
        print("soil separability: --seed must be in 0..%d, got %d" % (2 ** 64 - args.folds, args.seed),
              file=sys.stderr)
        return 2
    from harness.training.soil_estimator import dataset as ds
    try:
        data = ds.load(args.dataset)
    except (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        print("soil separability: dataset %s unreadable: %s" % (args.dataset, _first_line(exc)), file=sys.stderr)
        return 2
    try:
        result = study(data, args.inputs, args.folds, args.epochs, args.id_max_pct, args.seed)
    except ImportError as exc:          # torch (the classifier) or scipy (the AUROC's ranks)
        print("soil separability: needs torch and scipy (pip install -r requirements-train.txt): %s"
              % _first_line(exc), file=sys.stderr)
        return 2
    except (ValueError, KeyError) as exc:
        print("soil separability: %s" % _first_line(exc), file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


def _first_line(exc):
    """The first line of an exception's message, or its type's name when the message is empty."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
