"""``python -m harness pinger-locate PINGS.csv --hydrophones ...``: a CSV written here by a program of its own
(arrival times from the geometry with numpy, its own noise and multipath model; nothing from the harness's
simulator or the locator's geometry) with 20 % outlier pings is located within 1 m; every malformed input is
one line on stderr and exit status 2, with nothing written."""
import csv
import json
import math

import numpy as np
import pytest

from harness import cli

BODY = [(1.2, 0.0), (-1.0, -0.9), (-1.0, 0.9)]          # x forward, y right (m)
HYDROPHONES = "1.2,0;-1.0,-0.9;-1.0,0.9"
PINGER_NE = (62.0, -41.0)


def _write_pings(path, c=1482.0, pings=25, outlier_fraction=0.2, seed=11, sigma_s=2e-6):
    """A boat circling at 2 m/s 40-75 m from the pinger, a ping every 2 s; each hydrophone's arrival time is
    its distance over c plus Gaussian noise; on a fifth of the pings (chosen at random) one hydrophone takes a
    reflected arrival 0.2-3 ms late. Columns in an order of their own, a clock that starts at 1000 s."""
    rng = np.random.default_rng(seed)
    bad = set(rng.choice(pings, size=int(round(outlier_fraction * pings)), replace=False).tolist())
    rows = []
    for i in range(pings):
        t = 1000.0 + 2.0 * i
        ang = 0.08 * 2.0 * i                              # 2 m/s on a 25 m radius circle
        north = 10.0 + 25.0 * math.cos(ang)
        east = -5.0 + 25.0 * math.sin(ang)
        yaw = ang + math.pi / 2.0                        # heading along the circle
        arrivals = []
        for x, y in BODY:
            hn = north + x * math.cos(yaw) - y * math.sin(yaw)
            he = east + x * math.sin(yaw) + y * math.cos(yaw)
            arrivals.append(math.hypot(PINGER_NE[0] - hn, PINGER_NE[1] - he) / c + 3.0 + rng.normal(0.0, sigma_s))
        if i in bad:
            arrivals[int(rng.integers(0, 3))] += rng.uniform(2e-4, 3e-3)
        rows.append({"tdoa_2_0_s": arrivals[2] - arrivals[0], "boat_yaw_rad": yaw, "time_s": t,
                     "tdoa_1_0_s": arrivals[1] - arrivals[0], "boat_east_m": east, "boat_north_m": north})
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["tdoa_2_0_s", "boat_yaw_rad", "time_s", "tdoa_1_0_s", "boat_east_m",
                                           "boat_north_m"])
        w.writeheader()
        for r in rows:
            w.writerow({k: repr(v) for k, v in r.items()})
    return bad


def test_pinger_located_within_1_m_from_a_csv_with_20_percent_outlier_pings(tmp_path, capsys):
    path = tmp_path / "pings.csv"
    bad = _write_pings(path)
    assert len(bad) == 5
    out = tmp_path / "fix"
    code = cli.main(["pinger-locate", str(path), "--hydrophones", HYDROPHONES, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    line = [l for l in printed.out.splitlines() if l.startswith("pinger:")][0].split()
    north, east = float(line[2]), float(line[4])
    assert math.hypot(north - PINGER_NE[0], east - PINGER_NE[1]) < 1.0
    assert "covariance_m2" in printed.out and "inliers:" in printed.out
    fix = json.loads((out / "pinger.json").read_text())
    assert (fix["north_m"], fix["east_m"]) == pytest.approx((north, east), abs=1e-3)
    mask = np.array(fix["inlier_mask"])
    assert mask.shape == (25, 2) and fix["inlier_count"] == int(mask.sum())
    assert 40 <= fix["inlier_count"] <= 50 - len(bad)                    # every outlier ping loses a contour
    assert all(not mask[i].all() for i in bad)
    cov = np.array(fix["covariance_m2"])
    assert np.allclose(cov, cov.T) and np.all(np.linalg.eigvalsh(cov) > 0) and fix["sigma_north_m"] < 1.0


def test_sound_speed_option_is_used(tmp_path, capsys):
    path = tmp_path / "pings.csv"
    _write_pings(path, c=1530.0, outlier_fraction=0.0)
    errors = {}
    for speed in ("1530", "1482"):
        assert cli.main(["pinger-locate", str(path), "--hydrophones", HYDROPHONES, "--sound-speed-mps", speed]) == 0
        line = [l for l in capsys.readouterr().out.splitlines() if l.startswith("pinger:")][0].split()
        errors[speed] = math.hypot(float(line[2]) - PINGER_NE[0], float(line[4]) - PINGER_NE[1])
    assert errors["1530"] < 0.3 < errors["1482"]


GOOD_HEADER = "time_s,boat_north_m,boat_east_m,boat_yaw_rad,tdoa_1_0_s,tdoa_2_0_s\n"
GOOD_ROWS = "0,0,0,0,1e-4,2e-4\n2,3,0,0.2,1.1e-4,2.2e-4\n4,6,1,0.4,1.3e-4,2.1e-4\n"


@pytest.mark.parametrize("text, args, expect", [
    ("time_s,boat_north_m,boat_east_m,boat_yaw_rad,tdoa_1_0_s\n0,0,0,0,1e-4\n2,1,0,0,1e-4\n", [],
     "missing column tdoa_2_0_s"),
    (GOOD_HEADER.replace("boat_yaw_rad", "yaw") + GOOD_ROWS, [], "missing column boat_yaw_rad"),
    (GOOD_HEADER.strip() + ",depth_m\n" + "".join(r + ",1\n" for r in GOOD_ROWS.splitlines()), [],
     "unknown column depth_m"),
    (GOOD_HEADER.strip() + ",tdoa_1_0_s\n" + "".join(r + ",1\n" for r in GOOD_ROWS.splitlines()), [], "twice"),
    (GOOD_HEADER + GOOD_ROWS.replace("1.1e-4", "abc"), [], "'abc' is not a number"),
    (GOOD_HEADER + GOOD_ROWS.replace("1.1e-4", ""), [], "'' is not a number"),
    (GOOD_HEADER + GOOD_ROWS.replace("1.1e-4", "nan"), [], "nan is not a finite number"),
    (GOOD_HEADER + GOOD_ROWS.replace("2.2e-4", "inf"), [], "inf is not a finite number"),
    (GOOD_HEADER + GOOD_ROWS.replace("2,3,0", "2,3"), [], "line 3 has 5 fields"),
    (GOOD_HEADER + GOOD_ROWS.splitlines()[0] + "\n", [], "1 ping row, at least 2"),
    (GOOD_HEADER, [], "0 ping rows"),
    ("", [], "empty file"),
    (GOOD_HEADER + GOOD_ROWS.replace("4,6,1", "1,6,1"), [], "time_s 1 does not increase"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0"], "at least 2 positions"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;a,b;-1,1"], "not two numbers"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;-1;-1,1"], "expected two numbers"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;1,0;-1,1"], "at the same place"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;nan,1;-1,1"], "not finite"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;-1,0"], "unknown column tdoa_2_0_s"),
    (GOOD_HEADER + GOOD_ROWS, ["--sound-speed-mps", "-3"], "expected a number in [100, 10000]"),
    (GOOD_HEADER + GOOD_ROWS, ["--sound-speed-mps", "fast"], "expected a number in [100, 10000]"),
    (GOOD_HEADER + GOOD_ROWS, ["--timing-sigma-s", "0"], "expected a number in [1e-09, 0.001]"),
    (GOOD_HEADER + "0,0,0,0,0.05,0.06\n2,3,0,0.2,0.05,-0.06\n", [], "no two time-difference contours"),
    (GOOD_HEADER + "0,0,0,1e300,1e-4,2e-4\n2,3,0,1e300,1.1e-4,2.2e-4\n4,6,1,1e300,1.3e-4,2.1e-4\n", [],
     "line 2, column boat_yaw_rad: 1e300 is beyond the bound |boat_yaw_rad| <= 10000"),
    (GOOD_HEADER + GOOD_ROWS.replace("0,0,0,0", "0,1e300,0,0"), [],
     "line 2, column boat_north_m: 1e300 is beyond the bound |boat_north_m| <= 1e+06"),
    (GOOD_HEADER + GOOD_ROWS.replace("4,6,1", "4,6,-2e6"), [],
     "line 4, column boat_east_m: -2e6 is beyond the bound |boat_east_m| <= 1e+06"),
    (GOOD_HEADER + GOOD_ROWS.replace("1.1e-4", "1.5"), [],
     "line 3, column tdoa_1_0_s: 1.5 is beyond the bound |tdoa_1_0_s| <= 1"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1e300,0;-1,-1;-1,1"],
     "hydrophone 0 is '1e300,0', beyond the bound |x|, |y| <= 100 m"),
    (GOOD_HEADER + GOOD_ROWS, ["--hydrophones", "1,0;-1,-150;-1,1"],
     "hydrophone 1 is '-1,-150', beyond the bound |x|, |y| <= 100 m"),
    (None, [], "cannot read it"),
])
def test_malformed_input_is_one_line_and_exit_2(tmp_path, capsys, text, args, expect):
    path = tmp_path / "pings.csv"
    if text is not None:
        path.write_text(text)
    if "--hydrophones" not in args:
        args = args + ["--hydrophones", HYDROPHONES]
    out = tmp_path / "out"
    code = _exit_status(["pinger-locate", str(path), "--out", str(out)] + args)
    printed = capsys.readouterr()
    assert code == 2
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], printed.err
    assert printed.out == "" and not out.exists()


def test_a_csv_with_a_utf8_bom_locates_the_same_fix(tmp_path, capsys):
    """A CSV saved with a byte order mark (Excel's "CSV UTF-8") reads like the same file without it."""
    plain = tmp_path / "pings.csv"
    _write_pings(plain)
    bom = tmp_path / "pings_bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    printed = []
    for path in (plain, bom):
        code = cli.main(["pinger-locate", str(path), "--hydrophones", HYDROPHONES])
        out = capsys.readouterr()
        assert code == 0, out.err
        printed.append(out.out)
    assert printed[1] == printed[0] and printed[0].startswith("pinger: north_m ")


def _exit_status(argv):
    """The command's exit status (argument errors leave through argparse's exit: SystemExit)."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code
