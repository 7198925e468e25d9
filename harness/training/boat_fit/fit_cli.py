"""``python -m harness boat-fit LOG --out DIR``: fit the vessel model (robotx eqs. 1-6) to a user's own boat
log, the RobotX AAVS paper's procedure (III-B/C; ``procedure.fit_log``).

LOG: a CSV with exactly the columns ``time_s,thrust_left_n,thrust_right_n,gnss_north_m,gnss_east_m,yaw_rad,
yaw_rate_radps`` or a boat app's MCAP recording (``boat_log``; formats in README.md). Writes

- ``DIR/fit.json``: ``{"params": {"c1": .., .., "c9": ..}, "mse_train_m2", "mse_test_m2", "windows",
  "withheld_fraction", ...}`` (the whole result of ``procedure.fit_log``);
- ``DIR/fit_windows.png``: the paper's fig. 4 view: held-back windows' predicted paths against their
  withheld fixes on a 1 m grid, with the seed states as arrows;
- ``DIR/fit_horizons.png``: median position error against the horizon (1-5 s), train and test, smooth
  and abrupt windows.

A malformed log or setting is one line on stderr and exit status 2 (``ConfigError``).
"""
import json
import math
import os
import sys

import numpy as np

from harness.config import parse_set
from harness.report.run_report import report_folder, write_whole
from harness.training.boat_fit import procedure
from harness.training.boat_fit.boat_log import read_log
from onboard.core.settings import ConfigError
from onboard.vessel import model as vm

EXAMPLES = """examples:
  python -m harness boat-fit lake.csv --out fits/lake            # L-BFGS-B, up to 5 EKF -> fit rounds
  python -m harness boat-fit boat.mcap --out fits/run7 --method gradient_descent
  python -m harness boat-fit lake.csv --out fits/lake --set rounds=1 --set gnss_sigma_m=0.3
"""
WINDOWS_PLOTTED = 4


def add_parser(subparsers):
    p = subparsers.add_parser(
        "boat-fit", help="fit the boat model (RobotX AAVS eqs. 1-6) to your own log",
        description="Fit the surface-vessel model's nine constants to a boat log (CSV or the boat app's MCAP): "
                    "5 s windows, every GNSS fix but the first withheld, rollouts seeded by the boat EKF, EKF -> "
                    "fit rounds, the last windows in time held back as a test set. Writes DIR/fit.json and "
                    "plots. Exit 2 on a malformed log or setting.",
        epilog=EXAMPLES, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("log", metavar="LOG", help="CSV (see harness/training/boat_fit/README.md) or MCAP recording")
    p.add_argument("--out", metavar="DIR", required=True, help="output folder (created)")
    p.add_argument("--method", choices=procedure.METHODS, help="optimiser (default lbfgsb)")
    p.add_argument("--rounds", type=int, help="EKF -> fit rounds at most (default %d)" % procedure.DEFAULTS["rounds"])
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="a fit setting (repeatable; e.g. gnss_sigma_m=0.3, test_fraction=0.25, ekf.max_gap_s=3, "
                        "initial.c4=250); see procedure.DEFAULTS")
    p.add_argument("--no-plots", action="store_true", help="write fit.json only")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run_cli)
    return p


def run_cli(args):
    overrides = parse_set(args.set) if args.set else {}
    for key, value in (("method", args.method), ("rounds", args.rounds)):
        if value is None:
            continue
        if key in overrides:                      # one value per setting: neither silently wins
            raise ConfigError("%s given twice: --%s %s and --set %s=%s; give it once"
                              % (key, key, value, key, overrides[key]))
        overrides[key] = value
    procedure.settings(overrides)                 # bad settings fail before the log is read
    log = read_log(args.log)
    for note in log["notes"]:
        print("note: %s" % note, file=sys.stderr)
    report_folder(args.out, "output folder")
    say = None if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    result, detail = procedure.fit_log(log, overrides, progress=say)
    result["log"] = {"path": args.log, "format": log["source"], "rows": int(len(log["time_s"])),
                     "duration_s": float(log["time_s"][-1] - log["time_s"][0]), "notes": log["notes"]}
    # serialised first, written whole: a failure leaves the earlier fit.json, never half of one
    write_whole(os.path.join(args.out, "fit.json"), json.dumps(_json_ready(result), indent=2, sort_keys=True) + "\n")
    plots = [] if args.no_plots else write_plots(args.out, result, detail)
    print("fit: %s" % ", ".join("%s %.4g" % (k, v) for k, v in result["params"].items()))
    print("MSE train %s m^2, test %s m^2 over %d windows (%d held back); wrote %s" % (
        _fmt(result["mse_train_m2"]), _fmt(result["mse_test_m2"]), result["windows"], result["windows_test"],
        ", ".join([os.path.join(args.out, "fit.json")] + plots)))
    return 0


def _fmt(v):
    return "n/a" if v is None else "%.4g" % v


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


# ---------------------------------------------------------------------------------------------- plots
def _plotted_windows(detail):
    """Held-back windows to draw: the first smooth and the first abrupt ones, then the next in time."""
    test = [int(i) for i in detail["test_idx"] if detail["good"][i]]
    smooth = [i for i in test if not detail["abrupt"][i]]
    abrupt = [i for i in test if detail["abrupt"][i]]
    pick = smooth[:1] + abrupt[:1]
    pick += [i for i in test if i not in pick][:WINDOWS_PLOTTED - len(pick)]
    return sorted(pick)


def windows_figure(result, detail):
    """The fig. 4 view (robotx III-B): for held-back windows, the seed state (arrow along the velocity),
    the model's open-loop path and the withheld GNSS fixes, east (m) across, north (m) up, a 1 m grid."""
    from matplotlib.ticker import MultipleLocator

    from harness.report.plots import figure, label
    from harness.training.boat_fit import vessel_fit as vf
    from harness.training.boat_fit.fit_windows import select
    pick = _plotted_windows(detail)
    cols = max(1, min(2, len(pick)))
    rows = max(1, int(math.ceil(len(pick) / float(cols))))
    fig, axes = figure(rows, cols, title="Predicted paths vs withheld GNSS fixes (held-back windows, 1 m grid)",
                       squeeze=False)
    sub = select(detail["windows"], np.array(pick, dtype=int))
    paths = vf.rollout(np.array(detail["params"]), detail["seeds"][pick], sub) if pick else []
    for k, i in enumerate(pick):
        ax = axes[k // cols][k % cols]
        path = paths[k]
        m = sub["mask"][k]
        fixes = sub["target_ne_m"][k][m]
        seed = detail["seeds"][i]
        ax.plot(path[:, vm.EAST], path[:, vm.NORTH], "-", color="tab:green", label="model prediction")
        ax.plot(fixes[:, 1], fixes[:, 0], "x", color="black", label="withheld GNSS fixes")
        vn, ve = vm.body_to_ned_velocity(list(seed))
        ax.quiver([seed[vm.EAST]], [seed[vm.NORTH]], [ve], [vn], color="tab:red", angles="xy", scale_units="xy",
                  scale=1.0, width=0.008, label="EKF seed (velocity over 1 s)")
        ax.xaxis.set_major_locator(MultipleLocator(1.0))
        ax.yaxis.set_major_locator(MultipleLocator(1.0))
        ax.set_aspect("equal", adjustable="datalim")
        ax.tick_params(labelsize="x-small")
        kind = "abrupt" if detail["abrupt"][i] else "smooth"
        label(ax, "window at t = %.1f s (%s)" % (sub["t0_s"][k], kind), "east (m)", "north (m)")
    for k in range(len(pick), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    return fig


def horizons_figure(result):
    """Median position error (m) of the rollouts against the horizon (s): train and test, smooth and abrupt."""
    from harness.report.plots import figure, label
    fig, ax = figure(1, 1, title="Open-loop prediction error of the fitted model")
    styles = {"train": "--", "test": "-"}
    colors = {"smooth": "tab:blue", "abrupt": "tab:orange"}
    for split in ("train", "test"):
        for kind in ("smooth", "abrupt"):
            row = result["horizons"][split][kind]
            hs = [float(h) for h in row if row[h]["median_m"] is not None]
            if not hs:
                continue
            ax.plot(hs, [row["%g" % h]["median_m"] for h in hs], styles[split], marker="o", color=colors[kind],
                    label="%s, %s windows (%d)" % (split, kind, row["%g" % hs[0]]["windows"]))
    label(ax, "median error at the last withheld fix within the horizon", "horizon (s)", "position error (m)")
    return fig


def write_plots(out_dir, result, detail):
    """Write fit_windows.png and fit_horizons.png into ``out_dir``; returns their paths."""
    import matplotlib.pyplot as plt
    paths = []
    for name, make in (("fit_windows.png", lambda: windows_figure(result, detail)),
                       ("fit_horizons.png", lambda: horizons_figure(result))):
        fig = make()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
