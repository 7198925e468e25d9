"""Cut a log into the fitting windows of the RobotX AAVS paper (III-B), as arrays over windows.

A window starts at a GNSS fix (its seed fix: the one fix kept) and spans ``window_s`` (5 s): rows
s .. s + L - 1 with L = round(window_s / dt). Its targets are the fixes at rows s + 1 .. s + L - 1 (at
4 Hz, 19 withheld fixes of 20: the paper's 95 %). The next window starts at the first fix at or after
row s + L, so windows do not overlap. A window with no withheld fix, or that would run past the end
of the log, is dropped; so is one that would step over a gap in the log (a row interval longer than
``GAP_INTERVALS`` median intervals: a pause in the recording, over which the thrusts are unknown), and the
next window starts at the first fix after the gap. :func:`time_split` holds back the last windows in time
as a test set (the paper has none).

Arrays (W windows, L rows): ``start`` (W,) row of the seed fix, ``thrust_n`` (W, L, 2) thrusts applied
over each row's interval, ``dt_s`` (W, L) the interval lengths, ``target_ne_m`` (W, L, 2) withheld fixes
(NaN where none), ``mask`` (W, L) True at a withheld fix, ``seed_ne_m`` (W, 2) the kept fixes,
``t0_s`` (W,) the seed times, ``target_yaw_rad`` (W, L) the logged headings and ``yaw_mask`` (W, L) where
they are (row 0 excluded) for the optional heading term of ``vessel_fit.loss_and_grad``.
"""
import numpy as np

from onboard.core.settings import ConfigError

GAP_INTERVALS = 10        # a row interval this many times the median one is a gap in the log
LOG_COLUMNS = ("time_s", "thrust_left_n", "thrust_right_n", "gnss_north_m", "gnss_east_m", "yaw_rad",
               "yaw_rate_radps")


def make_windows(log, window_s=5.0):
    """The fitting windows of ``log`` (module docstring) as a dict of arrays, plus ``rows`` (L),
    ``window_s`` and ``withheld_fraction`` (withheld fixes / all fixes inside the windows)."""
    t = np.asarray(log["time_s"], dtype=float)
    n = len(t)
    dt = np.diff(t)
    dt = np.append(dt, dt[-1] if len(dt) else 0.0)
    median_dt = float(np.median(dt))
    rows = int(round(window_s / median_dt)) if median_dt > 0 else 0
    if rows < 2:                      # no withheld row fits in a window (and the loop below would not advance)
        raise ConfigError("time_s samples are %.6g s apart (median), %s the %g s fitting window, which needs 2 or "
                          "more rows: is time_s in seconds?"
                          % (median_dt, "longer than" if median_dt > window_s else "too far apart for", window_s))
    has_fix = np.isfinite(log["gnss_north_m"]) & np.isfinite(log["gnss_east_m"])
    fix_rows = np.flatnonzero(has_fix)
    gap_rows = np.flatnonzero(dt[:-1] > GAP_INTERVALS * median_dt)       # t[k + 1] - t[k] is a gap
    starts = []
    i = 0
    while i < len(fix_rows):
        s = int(fix_rows[i])
        if s + rows > n:
            break
        g = int(np.searchsorted(gap_rows, s))
        if g < len(gap_rows) and gap_rows[g] < s + rows - 1:             # the rollout would step over it
            i = int(np.searchsorted(fix_rows, gap_rows[g] + 1))
            continue
        if has_fix[s + 1:s + rows].any():
            starts.append(s)
        i = int(np.searchsorted(fix_rows, s + rows))
    start = np.array(starts, dtype=int)
    idx = start[:, None] + np.arange(rows)[None, :]
    thrust = np.stack([np.asarray(log["thrust_left_n"], float)[idx], np.asarray(log["thrust_right_n"], float)[idx]],
                      axis=-1)
    target = np.stack([np.asarray(log["gnss_north_m"], float)[idx], np.asarray(log["gnss_east_m"], float)[idx]],
                      axis=-1)
    mask = has_fix[idx].copy()
    mask[:, 0] = False
    target[~mask] = np.nan
    yaw = np.asarray(log["yaw_rad"], float)[idx]
    yaw_mask = np.isfinite(yaw)
    yaw_mask[:, 0] = False
    seed_ne = np.stack([np.asarray(log["gnss_north_m"], float)[start], np.asarray(log["gnss_east_m"], float)[start]],
                       axis=-1)
    kept = len(start)
    withheld = int(mask.sum())
    return {"start": start, "thrust_n": thrust, "dt_s": dt[idx], "target_ne_m": target, "mask": mask,
            "target_yaw_rad": yaw, "yaw_mask": yaw_mask,
            "seed_ne_m": seed_ne, "t0_s": t[start], "rows": rows, "window_s": float(window_s),
            "withheld_fraction": withheld / float(withheld + kept) if kept else 0.0}


def select(windows, which):
    """The windows picked by ``which`` (index array or boolean mask over windows)."""
    out = {}
    for key, value in windows.items():
        out[key] = value[which] if isinstance(value, np.ndarray) else value
    return out


def time_split(windows, test_fraction=0.2):
    """(train, test): the last ``test_fraction`` of the windows in time held back as the test set (rounded to
    whole windows); ValueError unless 0 <= ``test_fraction`` <= 1."""
    if not 0.0 <= test_fraction <= 1.0:          # also NaN
        raise ValueError("test_fraction must lie in [0, 1], got %r" % (test_fraction,))
    w = len(windows["start"])
    n_test = int(round(test_fraction * w))
    order = np.argsort(windows["t0_s"], kind="stable")
    return select(windows, order[:w - n_test]), select(windows, order[w - n_test:])


def seeds_at(states, windows):
    """(W, 6) seed states: rows ``windows["start"]`` of a (rows, 6) state array (e.g. the EKF's)."""
    return np.asarray(states, dtype=float)[windows["start"]]
