"""``python -m harness pinger-locate PINGS.csv --hydrophones "x0,y0;x1,y1;x2,y2"``: locate an acoustic pinger
from a user's own pings (RobotX AAVS III-D-1: RANSAC over time-difference contours, ``onboard.vessel.pinger``).

PINGS.csv: a header line and one row per ping with the columns (any order)
``time_s,boat_north_m,boat_east_m,boat_yaw_rad,tdoa_1_0_s,...,tdoa_{K-1}_0_s``: the boat pose at the ping
(NED metres, yaw from north towards east, rad) and, for each hydrophone k = 1..K-1, its arrival time minus
hydrophone 0's (s). ``--hydrophones`` gives the K hydrophones' body positions (x forward, y right, metres,
FRD), hydrophone 0 first. Prints the pinger's ``north_m``, ``east_m``, its 2x2 covariance (m^2) and the inlier
count; ``--out DIR`` also writes ``DIR/pinger.json`` (``PingerFix.as_dict`` plus the inputs).

A malformed file or argument (missing or unknown column, a value that is not a finite number or is beyond its
bound (``*_LIMIT_*``), fewer than ``MIN_PINGS`` rows, times not increasing, a bad ``--hydrophones``) or pings that
give no fix: one line on stderr and exit status 2 (``ConfigError``).
"""
import argparse
import csv
import json
import math
import os

import numpy as np

from onboard.core.settings import ConfigError, argument, int_within, within
from onboard.vessel import pinger as pg

POSE_COLUMNS = ("time_s", "boat_north_m", "boat_east_m", "boat_yaw_rad")
MIN_PINGS = 2
TIMING_SIGMA_S = 5e-6          # default arrival-time noise: the top of the reading aid's 1-5 us (A22)

# bounds on the input's magnitudes: beyond them a number is a unit or typing mistake and the fit's arithmetic loses
# its meaning (cos/sin of 1e300 rad, squared 1e300 m overflow) instead of failing with a clear line
BOAT_POSITION_LIMIT_M = 1e6    # |boat_north_m|, |boat_east_m|: a local NED frame, 1000 km covers any course
BOAT_YAW_LIMIT_RAD = 1e4       # |boat_yaw_rad|: an unwrapped yaw of ~1600 turns; cos/sin still resolve 1e-11 rad
TDOA_LIMIT_S = 1.0             # |tdoa_k_0_s|: 1.5 km of path difference in water, beyond any array of +-100 m
HYDROPHONE_LIMIT_M = 100.0     # |x|, |y| of a hydrophone: its body position, on the hull or a towed line

EXAMPLES = """examples:
  python -m harness pinger-locate pings.csv --hydrophones "1,0;-1,-1;-1,1"
  python -m harness pinger-locate pings.csv --hydrophones "0.5,0;-0.5,-0.6;-0.5,0.6" --sound-speed-mps 1500 --out fix
  python -m harness pinger-locate pings.csv --hydrophones "1,0;-1,-1;-1,1" --timing-sigma-s 1e-5
"""


def tdoa_column(k):
    """The CSV column of hydrophone k's time difference to hydrophone 0 (s)."""
    return "tdoa_%d_0_s" % k


def parse_hydrophones(text):
    """``"x0,y0;x1,y1;..."`` -> K x 2 array (body FRD metres); ConfigError (one line) when malformed."""
    where = "--hydrophones %r" % text
    parts = [p.strip() for p in str(text).strip().rstrip(";").split(";")]
    if len(parts) < 2 or any(not p for p in parts):
        raise ConfigError("%s: expected at least 2 positions \"x0,y0;x1,y1;...\" (metres, x forward, y right)" % where)
    out = []
    for k, p in enumerate(parts):
        xy = [v.strip() for v in p.split(",")]
        if len(xy) != 2:
            raise ConfigError("%s: hydrophone %d is %r, expected two numbers \"x,y\"" % (where, k, p))
        try:
            x, y = float(xy[0]), float(xy[1])
        except ValueError:
            raise ConfigError("%s: hydrophone %d is %r, not two numbers" % (where, k, p))
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ConfigError("%s: hydrophone %d is %r, not finite" % (where, k, p))
        if max(abs(x), abs(y)) > HYDROPHONE_LIMIT_M:
            raise ConfigError("%s: hydrophone %d is %r, beyond the bound |x|, |y| <= %g m"
                              % (where, k, p, HYDROPHONE_LIMIT_M))
        out.append((x, y))
    body = np.array(out)
    for i in range(len(out)):
        for j in range(i + 1, len(out)):
            if math.hypot(*(body[i] - body[j])) < 1e-3:
                raise ConfigError("%s: hydrophones %d and %d are at the same place" % (where, i, j))
    return body


def column_limit(name):
    """The largest magnitude column ``name`` of PINGS.csv accepts (its own units), or None: unbounded."""
    if name.startswith("tdoa_"):
        return TDOA_LIMIT_S
    return {"boat_north_m": BOAT_POSITION_LIMIT_M, "boat_east_m": BOAT_POSITION_LIMIT_M,
            "boat_yaw_rad": BOAT_YAW_LIMIT_RAD}.get(name)


def read_pings(path, hydrophones):
    """``(time_s, poses, tdoa_s)`` of PINGS.csv for ``hydrophones`` hydrophones (module docstring); blank
    lines are skipped; ConfigError (one line naming the file, line and column) when malformed."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:     # a BOM, as Excel's "CSV UTF-8" writes
            rows = [(n + 1, r) for n, r in enumerate(csv.reader(fh)) if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError("%s: cannot read it (%s)" % (path, getattr(exc, "strerror", None) or exc))
    need = list(POSE_COLUMNS) + [tdoa_column(k) for k in range(1, hydrophones)]
    if not rows:
        raise ConfigError("%s: empty file, expected a header with %s" % (path, ",".join(need)))
    header = [c.strip() for c in rows[0][1]]
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise ConfigError("%s: column %s appears twice" % (path, dup[0]))
    missing = [c for c in need if c not in header]
    if missing:
        raise ConfigError("%s: missing column%s %s (expected %s for %d hydrophones)"
                          % (path, "s" if len(missing) > 1 else "", ",".join(missing), ",".join(need), hydrophones))
    extra = [c for c in header if c not in need]
    if extra:
        raise ConfigError("%s: unknown column %s (expected %s for %d hydrophones, as many as --hydrophones gives)"
                          % (path, extra[0], ",".join(need), hydrophones))
    limits = [column_limit(name) for name in header]
    data = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ConfigError("%s: line %d has %d fields, the header %d" % (path, line, len(row), len(header)))
        values = {}
        for name, cell, limit in zip(header, row, limits):
            try:
                v = float(cell)
            except ValueError:
                raise ConfigError("%s: line %d, column %s: %r is not a number" % (path, line, name, cell.strip()))
            if not math.isfinite(v):
                raise ConfigError("%s: line %d, column %s: %s is not a finite number" % (path, line, name,
                                                                                          cell.strip()))
            if limit is not None and abs(v) > limit:
                raise ConfigError("%s: line %d, column %s: %s is beyond the bound |%s| <= %g"
                                  % (path, line, name, cell.strip(), name, limit))
            values[name] = v
        data.append((line, [values[c] for c in need]))
    if len(data) < MIN_PINGS:
        raise ConfigError("%s: %d ping row%s, at least %d needed (one ping fixes a bearing, not a range)"
                          % (path, len(data), "" if len(data) == 1 else "s", MIN_PINGS))
    arr = np.array([d[1] for d in data])
    back = np.flatnonzero(np.diff(arr[:, 0]) <= 0)
    if back.size:
        raise ConfigError("%s: line %d: time_s %g does not increase on the previous row's %g"
                          % (path, data[back[0] + 1][0], arr[back[0] + 1, 0], arr[back[0], 0]))
    return arr[:, 0], arr[:, 1:4], arr[:, 4:]


# what the options can mean (beyond them the fit overflows or takes hours): sound in any liquid or gas, an arrival
# time's noise from 1 ns to 1 ms (the robotx-course scenario's range), RANSAC sets
SOUND_SPEED_RANGE = within(100.0, 1e4)
TIMING_SIGMA_RANGE = within(1e-9, 1e-3)
ITERATIONS_RANGE = int_within(1, 1000000)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "pinger-locate", help="locate an acoustic pinger from your own pings (RANSAC over TDOA contours)",
        description="Locate a pinger from each ping's hydrophone time differences and the boat pose at the ping "
                    "(RobotX AAVS III-D-1): RANSAC over the time-difference contours of all pings, least-squares "
                    "refinement, covariance. Prints north_m, east_m, the covariance and the inlier count; --out "
                    "writes DIR/pinger.json. Exit 2 on a malformed file or argument. The file format: "
                    "docs/formats/pinger-pings.md.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pings", metavar="PINGS.csv",
                   help="columns time_s,boat_north_m,boat_east_m,boat_yaw_rad,tdoa_1_0_s,tdoa_2_0_s[,tdoa_3_0_s...]")
    p.add_argument("--hydrophones", required=True, metavar='"x0,y0;x1,y1;x2,y2"',
                   help="hydrophone body positions, metres, x forward, y right (FRD), hydrophone 0 first")
    p.add_argument("--sound-speed-mps", type=argument(SOUND_SPEED_RANGE), default=pg.SOUND_SPEED_MPS,
                   help="speed of sound in the water (default %g m/s; %s)" % (pg.SOUND_SPEED_MPS,
                                                                            SOUND_SPEED_RANGE[0]))
    p.add_argument("--timing-sigma-s", type=argument(TIMING_SIGMA_RANGE), default=TIMING_SIGMA_S,
                   help="noise of one arrival time: the inlier test (3 sigma) and the covariance (default %g s; %s)"
                        % (TIMING_SIGMA_S, TIMING_SIGMA_RANGE[0]))
    p.add_argument("--iterations", type=argument(ITERATIONS_RANGE, int), default=pg.ITERATIONS,
                   help="RANSAC minimal sets (all pairs of contours when fewer; default %d; %s)"
                        % (pg.ITERATIONS, ITERATIONS_RANGE[0]))
    p.add_argument("--out", metavar="DIR", help="also write DIR/pinger.json (created)")
    p.set_defaults(func=run_cli)
    return p


def run_cli(args):
    body = parse_hydrophones(args.hydrophones)
    time_s, poses, tdoa = read_pings(args.pings, body.shape[0])
    try:
        fix = pg.locate(tdoa, poses, body, sound_speed_mps=args.sound_speed_mps, timing_sigma_s=args.timing_sigma_s,
                        iterations=args.iterations)
    except pg.LocatorError as exc:
        raise ConfigError("%s: %s" % (args.pings, exc))
    except (np.linalg.LinAlgError, OverflowError, FloatingPointError) as exc:   # numbers beyond any fit
        raise ConfigError("%s: no fix: the least-squares fit failed on these numbers (%s)" % (args.pings, exc))
    result = fix.as_dict()
    cov = result["covariance_m2"]
    print("pinger: north_m %.3f east_m %.3f" % (fix.north_m, fix.east_m))
    print("covariance_m2: [[%.6g, %.6g], [%.6g, %.6g]] (1-sigma %.3f m north, %.3f m east)"
          % (cov[0][0], cov[0][1], cov[1][0], cov[1][1], result["sigma_north_m"], result["sigma_east_m"]))
    print("inliers: %d of %d contours (%d of %d pings whole); TDOA residual RMS %.3g us"
          % (fix.inlier_count, fix.contours, fix.inlier_pings, result["pings"], 1e6 * fix.residual_rms_s))
    if args.out:
        try:
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, "pinger.json")
            result["input"] = {"pings_csv": args.pings, "hydrophones_body_m": body.tolist(),
                               "sound_speed_mps": args.sound_speed_mps, "timing_sigma_s": args.timing_sigma_s,
                               "iterations": args.iterations, "time_s": [float(time_s[0]), float(time_s[-1])]}
            with open(path, "w") as fh:
                json.dump(result, fh, indent=2, sort_keys=True)
                fh.write("\n")
        except OSError as exc:
            raise ConfigError("cannot write %s: %s" % (args.out, exc.strerror or exc))
        print("wrote %s" % path)
    return 0
