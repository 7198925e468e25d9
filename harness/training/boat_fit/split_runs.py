"""The fit's work on a long log in two halves, the second half in a second process (``second_process``),
so that one fit uses two cores: the EKF pass over the log in two time segments, and the loss and gradient
over two halves of the train windows.

EKF pass in two segments (RobotX AAVS III-B step 3: the seeds are the EKF's states): the rows [0, T) run
in this process from the log's start as before; a second filter runs the rows [T', n) from the first fix
at or after t_T - ``overlap_s`` (T' the row of t_T - ``overlap_s``) and its states from row T on are kept.
The filter forgets its start (measured on the bench's 1 h log: from row T on the states of the two
filters differ by < 1e-10 m, m/s, rad with 60 s of overlap at a process-noise scale of 0.01, by 5e-7
at 0.001; with 120 s, the default of ``procedure``, by < 3e-11 at 0.001), so the seeds equal those of one
pass over the whole log to that order; T splits the work evenly. Fixes (gated or fused, NIS) are those
of the segment that keeps their row; the counters add the first segment's and the second's after row
T - 1; "seconds since the filter started" from row T on counts from the second filter's start (at most
``overlap_s`` before T: a window starting there within ``procedure``'s ``settle_s`` of it is left out as
after any restart, so the overlap must exceed ``settle_s``).

The loss is a sum over windows (``vessel_fit.loss_sums``): the train windows in two halves in time order,
the sums added in that order (``vessel_fit.combine_sums``).

Whether a log is split depends on its length only (``procedure``'s ``split_min_s``), never on the number
of processes: with one worker the second half runs in this process, with the same results.
"""
import math

import numpy as np

from harness.training.boat_fit import vessel_fit as vf
from harness.training.boat_fit.ekf_seeds import ekf_states
from harness.training.boat_fit.fit_windows import LOG_COLUMNS, select
from harness.training.boat_fit.second_process import Helper


def ekf_cut(time_s, overlap_s):
    """(T, T'): the first row of the second segment's kept states and the row its filter starts from
    (module docstring), T chosen so that both segments have about as many rows."""
    t = np.asarray(time_s, float)
    n = len(t)
    over = int(np.searchsorted(t, t[0] + overlap_s))                  # rows in overlap_s
    cut = min(max((n + over) // 2, 1), n - 1)
    start = int(np.searchsorted(t, t[cut] - overlap_s))
    return cut, start


def ekf_segment(log, lo, hi, ekf, params, snap_row=None):
    """The boat EKF over rows [lo, hi) of ``log`` (a fresh filter at row lo): {"states" (hi - lo, 6),
    "since" (hi - lo,) seconds since the filter last started (NaN while it is not running), "fixes"
    [(row in the whole log, fused, NIS)], "counters", "counters_at" (the counters after row ``snap_row``
    of the whole log, before the predict to the next row; None without it)}."""
    part = {key: np.asarray(log[key])[lo:hi] for key in LOG_COLUMNS}
    t = np.asarray(part["time_s"], float)
    since = np.full(len(t), np.nan)
    run = {"start": None, "resets": 0, "snap": None}
    snap = None if snap_row is None else snap_row - lo

    def on_row(i, f):
        if i == snap:
            run["snap"] = f.counters()
        if not f.initialized:
            run["start"] = None
            return
        if run["start"] is None or f.resets != run["resets"]:
            run["start"], run["resets"] = t[i], f.resets
        since[i] = t[i] - run["start"]
    fixes = []
    states, counters = ekf_states(part, ekf=ekf, params=params, fixes=fixes, on_row=on_row)
    return {"states": states, "since": since, "fixes": [(row + lo, fused, nis) for row, fused, nis in fixes],
            "counters": counters, "counters_at": run["snap"]}


def ekf_pass(log, ekf, params, overlap_s=None, workers=2):
    """(states (n, 6), counters, fixes, since (n,)) of the boat EKF over the whole ``log``: one pass, or
    with ``overlap_s`` two segments (module docstring), the second in a second process when ``workers`` >=
    2. Also returns the second process's CPU seconds: (states, counters, fixes, since, helper_cpu_s)."""
    n = len(log["time_s"])
    if overlap_s is None:
        one = ekf_segment(log, 0, n, ekf, params)
        return one["states"], one["counters"], one["fixes"], one["since"], 0.0
    cut, start = ekf_cut(log["time_s"], overlap_s)
    with Helper(lambda: ekf_segment(log, start, n, ekf, params, snap_row=cut - 1), workers) as helper:
        helper.call()
        first = ekf_segment(log, 0, cut, ekf, params)
        second = helper.get()
        cpu_s = helper.cpu_s
    keep = cut - start
    states = np.concatenate([first["states"], second["states"][keep:]])
    since = np.concatenate([first["since"], second["since"][keep:]])
    fixes = first["fixes"] + [f for f in second["fixes"] if f[0] >= cut]
    base = second["counters_at"]
    counters = {k: first["counters"][k] + second["counters"][k] - (base[k] if base else 0) for k in first["counters"]}
    return states, counters, fixes, since, cpu_s


class SplitLoss:
    """The loss of ``seeds`` over ``windows`` in two halves of the windows (module docstring), the second
    half's sums in a second process: ``parts(c, curvature)`` for ``vessel_fit.fit_lbfgsb`` /
    ``fit_gradient_descent``. A context manager (stops the second process)."""

    def __init__(self, seeds, windows, workers=2):
        w = len(windows["start"])
        half = int(math.ceil(w / 2.0))
        self.first = (seeds[:half], select(windows, np.arange(half)))
        second = (seeds[half:], select(windows, np.arange(half, w)))      # select keeps heading_weight
        self.helper = Helper(lambda c, curvature: vf.loss_sums(c, second[0], second[1], curvature), workers)

    def parts(self, c, curvature):
        c = [float(v) for v in c]
        self.helper.call(c, curvature)
        own = vf.loss_sums(c, self.first[0], self.first[1], curvature)
        return [own, self.helper.get()]

    @property
    def cpu_s(self):
        return self.helper.cpu_s

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.helper.close(abort=exc_type is not None)
        return False
