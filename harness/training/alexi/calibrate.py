"""Output calibration of a committed Alexi kinematic net, fitted on a validation session (never a test set).

The net's per-frame prediction p (raw per-frame inputs, min-max normalised with the card's ranges, teleport
frames dropped: alexi-eval's raw mode) is mapped by y_cal = a * p + b, with (a, b) the least-squares fit of the
reference's per-frame target y on p (ordinary least squares, normalised output units):

    a = cov(y, p) / var(p),    b = mean(y) - a * mean(p).

The squared Pearson R^2 is unchanged by the map (the thesis's score, Cook 2017 6.2.4); the coefficient of
determination cannot drop on the fitting session (least squares), and the calibrated gain (slope of y_cal on y,
:func:`harness.training.alexi.metrics.gain`) equals the raw Pearson R^2 there.

CLI (writes ``alexi.output_calibration = {a, b, fitted_on, ...}`` into ``<models>/<net>/card.json``)::

    python -m harness.training.alexi.calibrate --net v2_speed --val build/alexi/train_3/sandbox_A.npz

Bad input (unknown net, unreadable session, non-finite values, degenerate prediction): one line, exit 2, the
card left as it was.
"""
import argparse
import json
import os
import sys

import numpy as np

from harness.training.alexi import evaluate as ev
from harness.training.alexi import metrics as mt

KIN_NETS = ev.KIN_NETS              # the kinematic nets (the terrain net has no per-frame target)
METHOD = "least squares of the reference's per-frame target on the net's per-frame prediction (raw mode, " \
         "normalised output units): y_cal = a * y_pred + b"


def fit_affine(y, p):
    """(a, b) minimising sum (y - a p - b)^2 over frames (normalised units). Raises ValueError on non-finite
    values, fewer than 3 frames or a constant prediction."""
    y, p = np.asarray(y, dtype=np.float64).ravel(), np.asarray(p, dtype=np.float64).ravel()
    if y.size != p.size or y.size < 3:
        raise ValueError("calibration needs >= 3 matching frames, got %d targets, %d predictions" % (y.size, p.size))
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(p))):
        raise ValueError("calibration data hold non-finite values (NaN or inf)")
    dp = p - p.mean()
    var_p = float(np.sum(dp * dp))
    if var_p <= 0.0 or not np.any(p != p[0]):          # equal values leave dp ~1e-17, not 0, off their float mean
        raise ValueError("the net's prediction is constant over the session: no calibration can be fitted")
    a = float(np.sum(dp * (y - y.mean()))) / var_p
    if not a > 0.0:
        raise ValueError("fitted calibration gain a = %r is not positive: the prediction does not follow the "
                         "target" % a)
    return a, float(y.mean() - a * p.mean())


def fit_net(net, sessions):
    """(a, b, figures before, figures after) of ``net`` on the raw per-frame frames of ``sessions``."""
    ys, ps = [], []
    for s in sessions:
        x, y = ev.raw_xy(net, s)
        if not np.all(np.isfinite(x)):
            raise ValueError("session inputs hold non-finite values (NaN or inf)")
        ys.append(y)
        ps.append(net.predict_normalised(x)[:, 0])
    y, p = np.concatenate(ys), np.concatenate(ps)
    a, b = fit_affine(y, p)
    return a, b, mt.scores_and_gain(y, p), mt.scores_and_gain(y, a * p + b)


def write_card(model_dir, calibration):
    """Store ``calibration`` as the card's ``alexi.output_calibration`` (the rest of the card unchanged)."""
    path = os.path.join(model_dir, "card.json")
    with open(path) as fh:
        card = json.load(fh)
    card["alexi"] = dict(card["alexi"], output_calibration=calibration)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(card, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    from harness.sim.alexi import nets as nt
    from harness.training.alexi import dataset as ds
    from harness.training.alexi.train import _digests
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--net", required=True, help="kinematic net under --models (%s)" % ", ".join(KIN_NETS))
    ap.add_argument("--val", nargs="+", required=True, help="validation session(s) (.npz; never a test set)")
    ap.add_argument("--models", default=nt.MODEL_ROOT, help="models folder (default models/alexi)")
    ap.add_argument("--kind", default="int8", choices=("int8", "float"), help="the prediction fitted on")
    ap.add_argument("--backend", default="litert", choices=("litert", "pure"))
    ap.add_argument("--dry-run", action="store_true", help="print the fit, leave the card as it is")
    args = ap.parse_args(argv)
    if args.net not in KIN_NETS:
        print("alexi calibrate: --net must be one of %s, got %r" % (", ".join(KIN_NETS), args.net), file=sys.stderr)
        return 2
    model_dir = nt.model_dir(args.net, args.models)
    from harness.sim.sandbox.session import SessionError
    try:
        net = nt.Net(model_dir, args.kind, args.backend)
    except nt.ModelError as exc:          # names the file and the problem
        print("alexi calibrate: %s" % exc, file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print("alexi calibrate: cannot load %s: %s" % (model_dir, exc), file=sys.stderr)
        return 2
    try:
        sessions = ds.load_sessions(args.val)
    except SessionError as exc:           # names the file and the problem
        print("alexi calibrate: %s" % exc, file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print("alexi calibrate: cannot read a session: %s" % exc, file=sys.stderr)
        return 2
    try:
        a, b, before, after = fit_net(net, sessions)
    except (ValueError, KeyError) as exc:
        print("alexi calibrate: %s" % exc, file=sys.stderr)
        return 2
    cal = {"a": a, "b": b, "fitted_on": _digests(args.val, sessions), "prediction": args.kind,
           "method": METHOD, "validation_before": before, "validation_after": after}
    print("alexi calibrate %s: a = %.6f, b = %.6f; on %s: gain %.4f -> %.4f, raw COD %.4f -> %.4f, "
          "raw R^2 (Pearson) %.4f -> %.4f" % (args.net, a, b, ", ".join(d["file"] for d in cal["fitted_on"]),
                                              before["gain"], after["gain"], before["r2_cod"], after["r2_cod"],
                                              before["r2_pearson"], after["r2_pearson"]))
    if not args.dry_run:
        write_card(model_dir, cal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
