"""Where the learned soil estimator's force prediction error comes from, on the dataset's whole cuts (soil
paper section 2.1: the force is predicted through the FEE of eqs. 1, 2, 4 from the estimated properties).

    python -m harness.training.soil_estimator.diagnose                        # the committed models
    python -m harness.training.soil_estimator.diagnose --model models/soil/estimator_kinematic

Per soil and I_d bin (20 % wide) of the dataset's whole-cut windows, the horizon force error [% of the mean
|F|] of: the truth properties through the onboard FEE (beta*, no residuals: the FEE's own floor), the same
plus the best constant residual force per cut (the median residual), and each model given (its ensemble
mean with its own residuals, the training's rule), over all cuts and over the held-out ones (episode index
ending in 9). Also the rank correlation with |F_x| of the ground speed's lag behind its command (how much of
the force the motion carries) and, when the dataset holds it, of the track speed loop's commanded effort.
Then, per model, soil and I_d bin (40 % wide) of the held-out windows (every window, not only whole cuts;
``--split``: the validation episodes of ``train.split``), the force error split into its components: mean
|F_x| and |F_z|, the mean |error| of each and F_z's mean signed error (prediction - measurement), beside the
mean truth and estimate of c, phi and delta: where the error is a bias of the unmeasured F_z and which
properties carry it.
Bad input (a missing dataset or model) is one line on stderr, exit 2.
"""
import argparse
import os
import sys

import numpy as np

from harness.training.soil_estimator import dataset as ds
from harness.training.soil_estimator.train import BUILD_DIR, SPLITS, split
from harness.sim.soil_world import SOILS
from onboard.soil import learned_estimator as le

BINS_PCT = ((0.0, 20.0), (20.0, 40.0), (40.0, 60.0), (60.0, 80.0), (80.0, 101.0))


def window_error_pct(force_n, fx, fz, valid, offset=(0.0, 0.0)):
    """(mean |F - F_hat - offset| over the valid horizon points, mean |F| there) of one window [N]; (NaN, NaN)
    when no horizon point is valid (no force error: left out of every mean, as the training's metrics do)."""
    if not np.any(valid):
        return float("nan"), float("nan")
    f = force_n
    err = np.concatenate([np.abs(f[valid, 0] - fx[valid] - offset[0]), np.abs(f[valid, 1] - fz[valid] - offset[1])])
    mag = np.concatenate([np.abs(f[valid, 0]), np.abs(f[valid, 1])])
    return float(err.mean()), float(mag.mean())


def model_errors(data, sel, estimator):
    """Per selected window (index array ``sel``) the (error, magnitude) of ``estimator``'s force prediction."""
    x = data["x_raw"][sel]
    if estimator.inputs == "force":
        x = le.with_force_channels(x, data["force_n"][sel], estimator.horizon)
    elif estimator.inputs == "controller":
        if "controller" not in data:
            raise ValueError("the dataset has no controller array, which the controller model reads")
        x = le.with_point_channels(x, data["controller"][sel], estimator.horizon)
    outs = estimator.forward(x)
    theta = np.mean([o["theta"] for o in outs], axis=0)
    rows = []
    for i, j in enumerate(sel):
        d_res = float(np.mean([o["depth_res_m"][i] for o in outs]))
        q_rel = float(np.mean([o["surcharge_rel"][i] for o in outs]))
        f_res = np.mean([o["residual_force_n"][i] for o in outs], axis=0)
        b_res = np.mean([o["beta_res_rad"][i] for o in outs], axis=0)
        fx, fz, valid = le.fee_window_force(theta[i], data["geometry"][j], d_res, q_rel, f_res, b_res)
        rows.append(window_error_pct(data["force_n"][j], fx, fz, valid))
    return np.array(rows)


def component_rows(data, sel, estimator):
    """Per selected window: (mean |F_x|, mean |F_z|, mean |error| of F_x and of F_z, F_z's mean signed error
    (prediction - measurement)) [N] of ``estimator``'s force prediction, and its ensemble-mean properties."""
    x = data["x_raw"][sel]
    if estimator.inputs == "force":
        x = le.with_force_channels(x, data["force_n"][sel], estimator.horizon)
    elif estimator.inputs == "controller":
        x = le.with_point_channels(x, data["controller"][sel], estimator.horizon)
    outs = estimator.forward(x)
    theta = np.mean([o["theta"] for o in outs], axis=0)
    rows = []
    for i, j in enumerate(sel):
        fx, fz, valid = le.fee_window_force(
            theta[i], data["geometry"][j], float(np.mean([o["depth_res_m"][i] for o in outs])),
            float(np.mean([o["surcharge_rel"][i] for o in outs])),
            np.mean([o["residual_force_n"][i] for o in outs], axis=0),
            np.mean([o["beta_res_rad"][i] for o in outs], axis=0))
        f = data["force_n"][j][valid]
        if not np.any(valid):                 # no force error in this window: NaN, left out of the means
            rows.append((float("nan"),) * 5)
            continue
        rows.append((np.abs(f[:, 0]).mean(), np.abs(f[:, 1]).mean(), np.abs(f[:, 0] - fx[valid]).mean(),
                     np.abs(f[:, 1] - fz[valid]).mean(), (fz[valid] - f[:, 1]).mean()))
    return np.array(rows), theta


def truth_errors(data, sel):
    """Per selected window: (error, magnitude) of the truth through the FEE, and the error with the best
    constant residual force (the per-component median residual); NaN for a window without a valid horizon
    point."""
    rows = []
    for j in sel:
        fx, fz, valid = le.fee_window_force(data["truth"][j], data["geometry"][j])
        if not np.any(valid):
            rows.append((float("nan"),) * 3)
            continue
        f = data["force_n"][j]
        off = (float(np.median(f[valid, 0] - fx[valid])), float(np.median(f[valid, 1] - fz[valid])))
        e0, mag = window_error_pct(f, fx, fz, valid)
        e1, _m = window_error_pct(f, fx, fz, valid, off)
        rows.append((e0, mag, e1))
    return np.array(rows)


def mean_pct(rows, m, col=0, mag_col=1):
    """Mean of ``rows[:, col] / rows[:, mag_col]`` in % over the windows of mask ``m`` that have a force error
    (finite), or None when none has."""
    m = m & np.isfinite(rows[:, col]) & np.isfinite(rows[:, mag_col])
    return float(100.0 * np.mean(rows[m, col] / rows[m, mag_col])) if np.any(m) else None


def _pct_text(v, fmt="%7.1f %%", none="%7s  " % "-"):
    return none if v is None else fmt % v


def speed_lag_rank(data):
    """Spearman rho of the ground speed's lag behind its command with |F_x| over every horizon point."""
    from scipy.stats import spearmanr
    p = data["geometry"].shape[1]
    ch = {n: i for i, n in enumerate(le.CHANNELS)}
    x = data["x_raw"][:, :p * len(le.CHANNELS)].reshape(-1, p, len(le.CHANNELS))
    lag = x[..., ch["cmd_speed_mps"]] - x[..., ch["speed_mps"]]
    return float(spearmanr(np.abs(data["force_n"][..., 0]).ravel(), lag.ravel())[0])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="harness.training.soil_estimator.diagnose")
    p.add_argument("--dataset", default="%s/dataset_e268_s1_h12_ctl.npz" % BUILD_DIR)
    p.add_argument("--split", choices=sorted(SPLITS), default="episode",
                   help="which episodes count as held out (train.split; a model is held out from them only if "
                        "it was trained with the same --split)")
    p.add_argument("--model", action="append", default=None,
                   help="a model folder (repeatable; default: the three committed models)")
    args = p.parse_args(argv)
    models = args.model or [le.DEFAULT_MODEL, le.KINEMATIC_MODEL, le.CONTROLLER_MODEL]
    try:
        data = ds.load(args.dataset)
        ests = [(m, le.LearnedEstimator(m)) for m in models]
    except (OSError, ValueError) as exc:
        print("soil diagnose: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return 2
    for m, est in ests:
        if est.inputs == "controller" and "controller" not in data:
            print("soil diagnose: dataset %s has no controller array, which the controller model %s reads (collect "
                  "it again, or leave that model out with --model)" % (args.dataset, os.path.normpath(m)),
                  file=sys.stderr)
            return 2
        if est.horizon != data["geometry"].shape[1]:
            print("soil diagnose: model %s has horizon %d, dataset %s %d" % (
                os.path.normpath(m), est.horizon, args.dataset, data["geometry"].shape[1]), file=sys.stderr)
            return 2
    sel = np.flatnonzero(data["whole_cut"])
    _train, val = split(data, args.split)
    truth = truth_errors(data, sel)
    errs = [model_errors(data, sel, est) for _m, est in ests]
    head = "soil     I_d bin   cuts  truth FEE  +best F^r" + "".join(
        "  %s (all / held out)" % est.inputs for _m, est in ests)
    print(head)
    for s, soil in enumerate(SOILS):
        for lo, hi in BINS_PCT:
            idd = data["relative_density_pct"][sel]
            m = (data["soil"][sel] == s) & (idd >= lo) & (idd < hi)
            if not np.any(m):
                continue
            mv = m & val[sel]
            line = "%-8s %3.0f-%3.0f %%  %4d  %s  %s" % (
                soil, lo, min(hi, 100.0), int(m.sum()), _pct_text(mean_pct(truth, m)), _pct_text(mean_pct(truth, m, 2)))
            for e in errs:
                line += "  %s / %s" % (_pct_text(mean_pct(e, m)), _pct_text(mean_pct(e, mv), "%.1f %%", "-"))
            print(line)
    print("Held-out windows (--split %s), force error by component [N] and the properties (truth -> estimate):"
          % args.split)
    held = np.flatnonzero(val)
    comps = [component_rows(data, held, est) for _m, est in ests]
    for s, soil in enumerate(SOILS):
        for lo, hi in ((0.0, 40.0), (40.0, 101.0)):
            idd = data["relative_density_pct"][held]
            m = (data["soil"][held] == s) & (idd >= lo) & (idd < hi)
            if not np.any(m):
                continue
            tr = data["truth"][held][m].mean(axis=0)
            for (mdir, est), (rows, theta) in zip(ests, comps):
                mf = m & np.isfinite(rows[:, 0])
                r = rows[mf].mean(axis=0) if np.any(mf) else np.full(5, np.nan)
                th = theta[m].mean(axis=0)
                print("%-8s %3.0f-%3.0f %%  %4d windows  %-20s |F_x| %6.0f |F_z| %5.0f  error F_x %4.0f F_z %4.0f "
                      "(F_z bias %+5.0f)  c %5.0f -> %5.0f Pa  phi %.3f -> %.3f  delta %.3f -> %.3f rad"
                      % (soil, lo, min(hi, 100.0), int(m.sum()), os.path.basename(os.path.normpath(mdir))[:20],
                         r[0], r[1], r[2], r[3], r[4], tr[0], th[0], tr[1], th[1], tr[4], th[4]))
    print("Spearman rho of the speed lag (command - ground speed) with |F_x| over every horizon point: %.2f"
          % speed_lag_rank(data))
    if "controller" in data:
        from scipy.stats import spearmanr
        print("Spearman rho of the track loop's commanded effort with |F_x| over every horizon point: %.2f"
              % float(spearmanr(np.abs(data["force_n"][..., 0]).ravel(), data["controller"][..., 1].ravel())[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
