"""The whole fit of the vessel model from one log (RobotX AAVS III-B/C), as ``python -m harness boat-fit``
and the boat scenarios run it: the paper's alternation EKF -> fit -> EKF ... for ``rounds`` rounds, on a
time-ordered train/test split (the paper has none), reported at 1-5 s horizons on smooth and abrupt
windows (the paper's fig. 4 observation: the paths "diverge after the boat makes more abrupt maneuvers").

One round k (c_k the constants, c_0 = ``initial``):

1. EKF: the boat EKF (``onboard.estimators.boat_ekf``) with model c_k runs over the whole log
   (``ekf_seeds.ekf_states``); its states at the windows' first fixes are the seeds (III-B step 3).
   Windows starting less than ``settle_s`` after the filter started (or restarted) are left out (its
   velocities start at 0); fixes the EKF's chi-square gate refused are not used as targets (outliers).
2. Fit: c_{k+1} minimises the position MSE of the open-loop rollouts over the train windows' withheld
   fixes (``vessel_fit``; L-BFGS-B, or the paper's gradient descent), starting from c_k; by default plus
   a heading term (ours; the paper's loss is position only): w times the mean squared error of the
   rollouts' yaw against the logged headings, w = (GNSS sigma / heading sigma)^2 so that a residual
   counts by its noise (``heading_weight_m2_per_rad2``: 0 for the paper's loss). The reported MSEs are
   the position MSE alone.
3. EKF tuning (III-C; the paper's ground-truth-free method is unpublished, this is ours): the GNSS and
   heading sigmas of R are estimated once from the log (:func:`estimate_gnss_sigma`,
   :func:`estimate_heading_sigma`); the five process-noise densities of the EKF share one scale q,
   updated after each round from the second on (the NIS of the first pass measures the initial
   constants' error) so that the mean NIS of the fixes fused in the train period approaches its
   expectation 2 (two degrees of freedom): a secant step in log q, at most a decade
   (:func:`tuned_q_scale`).

After the last round one more EKF pass runs with the last constants. The rounds stop (``stop_reason``
in the result, beside ``rounds_run``):

- "settled": the constants stopped moving. A round's move is measured where the constants act, on the
  predictions: d = the RMS distance (m) between the rollouts of c_k and c_{k+1} from the same seeds at the
  train windows' withheld fixes; the round settles when d < ``stop_rtol`` times the RMS residual of
  c_{k+1} (sqrt of its train MSE), i.e. one more round could change the MSE by about ``stop_rtol``^2 (1 %
  at the default 0.1). Each round also reports d (``path_change_m``), d / residual (``path_change_rel``) and
  the largest relative change of a constant (``max_param_change_rel``);
- "min_gain": a pass's train MSE gained less than ``min_gain`` over the previous one;
- "rounds": ``rounds`` rounds were run.

Each fitted set of constants is scored by the train position MSE of its rollouts from the seeds of its
own EKF pass; the best is the result, and its pass gives the seeds of the reported errors. Windows:
``fit_windows.make_windows``; the test set is the last ``test_fraction`` of them in time.

Two cores: a log of at least ``split_min_s`` is worked on in two halves (``split_runs``), the second in
a second process when ``workers`` is 2: each EKF pass in two time segments overlapping by
``ekf_overlap_s`` (the seeds equal one pass's to < 1e-10), each fit's loss over two halves of the
windows. The results depend on the log's length, not on ``workers``. Rounds 2+ start the optimiser from
the previous round's constants (warm start).

A window is **abrupt** (:func:`abrupt_windows`) when within it either thruster's logged thrust changes
by more than ``abrupt_thrust_change_n`` (N) within ``abrupt_span_s`` (s), or the yaw acceleration
(the logged yaw rate averaged over 0.2 s, differenced over 0.2 s) exceeds ``abrupt_yaw_accel_radps2``
(rad/s^2) in magnitude; the other windows are smooth.
"""
import math
import time

import numpy as np

from harness.training.boat_fit import split_runs
from harness.training.boat_fit import vessel_fit as vf
from harness.training.boat_fit.fit_windows import make_windows, select, seeds_at
from onboard.core.settings import (NON_NEGATIVE, POSITIVE, ConfigError, checked, int_at_least, int_within,
                                   non_empty_list, one_of, or_null, under, within)
from onboard.estimators import boat_ekf
from onboard.vessel import model as vm

METHODS = ("lbfgsb", "gradient_descent")
NOISE_KEYS = ("yaw_noise_rad_per_sqrt_s", "yaw_rate_noise_radps_per_sqrt_s", "pos_noise_m_per_sqrt_s",
              "surge_noise_mps_per_sqrt_s", "sway_noise_mps_per_sqrt_s")
_EKF_DEFAULTS = {k: v for k, v in boat_ekf.DEFAULTS.items() if k != "model"}
_EKF_RANGES = {k: v for k, v in boat_ekf.SETTING_RANGES.items() if not k.startswith("model.")}

DEFAULTS = {
    "window_s": 5.0,                  # fitting window (robotx III-B: 5 s)
    "test_fraction": 0.2,             # the last windows in time held back as the test set
    "method": "lbfgsb",               # "lbfgsb" (quasi-Newton) or "gradient_descent" (the paper's)
    "rounds": 5,                      # EKF -> fit rounds at most (robotx III-C alternation) ...
    "min_gain": 0.01,                 # ... stopping when a round's train MSE gains less than this (relative)
    "stop_rtol": 0.1,                 # ... or when a round moves the predictions by less than this times the
                                      # RMS residual (the constants settled; 0: never)
    "workers": 2,                     # processes for a long log's two halves (1: both in this one)
    "split_min_s": 1200.0,            # logs at least this long are worked on in two halves (split_runs)
    "ekf_overlap_s": 120.0,           # the two EKF segments' overlap (s)
    "iterations": 200,                # optimiser iterations per round
    "gnss_sigma_m": None,             # GNSS 1 sigma per axis for the EKF; None: estimated from the log
    "heading_weight_m2_per_rad2": None,  # weight of the heading term of the loss (ours); None: (GNSS sigma /
                                      # heading sigma)^2 from the log; 0: the paper's position MSE alone
    "tune_process_noise": True,       # scale the EKF's process noise by the NIS after each round
    "settle_s": 10.0,                 # windows starting sooner after the EKF (re)started are not used
    "horizons_s": [1.0, 2.0, 3.0, 4.0, 5.0],
    "abrupt_thrust_change_n": 150.0,  # abrupt: a thrust changes more than this within abrupt_span_s ...
    "abrupt_span_s": 1.0,
    "abrupt_yaw_accel_radps2": 0.3,   # ... or |yaw acceleration| exceeds this
    "initial": dict(vm.DEFAULTS),     # c_0 (default the VRX WAM-V priors)
    "ekf": _EKF_DEFAULTS,             # boat EKF settings (its model is each round's constants)
}
SETTING_RANGES = {
    "window_s": within(0.5, 60.0),
    "test_fraction": within(0.05, 0.9),
    "method": one_of(*METHODS),
    "rounds": int_at_least(1),
    "min_gain": within(0.0, 1.0),
    "stop_rtol": within(0.0, 1.0),
    "workers": int_within(1, 2),
    "split_min_s": NON_NEGATIVE,
    "ekf_overlap_s": within(1.0, 3600.0),
    "iterations": int_at_least(1),
    "gnss_sigma_m": or_null(POSITIVE),
    "settle_s": NON_NEGATIVE,
    "heading_weight_m2_per_rad2": or_null(NON_NEGATIVE),
    "horizons_s": non_empty_list(POSITIVE, "a non-empty list of horizons > 0 (s)"),
    "abrupt_thrust_change_n": NON_NEGATIVE,
    "abrupt_span_s": POSITIVE,
    "abrupt_yaw_accel_radps2": NON_NEGATIVE,
}
SETTING_RANGES.update(under("initial", vm.SETTING_RANGES))
SETTING_RANGES.update(under("ekf", _EKF_RANGES))

MIN_WINDOWS = 2                      # one to fit, one to test
NORTH_EAST = (vm.NORTH, vm.EAST)
Q_SCALE_LIMITS = (1e-4, 1e4)
# The mean GNSS NIS of the simulated WAM-V's EKF rises by about 0.25 per decade the process noise falls
# (1.36, 1.58, 1.71, 1.86 at q = 1, 0.3, 0.1, 0.01 with the true constants): 4 decades per unit of NIS.
Q_DECADES_PER_NIS = 4.0


def tuned_q_scale(history):
    """The process-noise scale q of the next round from ``history``, the (log10 q, mean NIS) of the passes so
    far: a secant step in log10 q towards NIS = 2 through the last two passes when their slope is negative
    (between -1 and -0.05 per decade), else of slope -1 / ``Q_DECADES_PER_NIS``; at most one decade, within
    ``Q_SCALE_LIMITS`` (a mean NIS under 2 says the filter expects more model error than there is)."""
    lq, nis = history[-1]
    slope = -1.0 / Q_DECADES_PER_NIS
    if len(history) > 1 and history[-2][0] != lq:
        s = (nis - history[-2][1]) / (lq - history[-2][0])
        if s < 0:
            slope = min(max(s, -1.0), -0.05)
    step = min(max((2.0 - nis) / slope, -1.0), 1.0)
    return min(max(10.0 ** (lq + step), Q_SCALE_LIMITS[0]), Q_SCALE_LIMITS[1])


def settings(overrides=None):
    """The checked settings of a fit (``DEFAULTS`` updated from ``overrides``; ``ekf_overlap_s`` must exceed
    ``settle_s``, else the windows after the cut of a split EKF pass would be left out)."""
    cfg = checked(DEFAULTS, SETTING_RANGES, overrides, "boat-fit")
    if cfg["ekf_overlap_s"] <= cfg["settle_s"]:
        raise ConfigError("boat-fit setting ekf_overlap_s (%g s) must exceed settle_s (%g s)"
                          % (cfg["ekf_overlap_s"], cfg["settle_s"]))
    return cfg


# ---------------------------------------------------------------------------------------------- log statistics
def _local_quadratic_sigma(t, ys, per_fit, max_gap_s):
    """1 sigma of the white noise on the series ``ys`` (each (n,), sampled at ``t``): through every run of
    ``per_fit`` consecutive samples (no gap over ``max_gap_s``) a quadratic in time; the median over the
    runs of the residual variance per degree of freedom, over the median of chi-square(k)/k (k = len(ys)
    (per_fit - 3)), so outliers and manoeuvres in a few runs do not count. None without such a run."""
    m = int(per_fit)
    if len(t) < m:
        return None
    idx = np.arange(len(t) - m + 1)[:, None] + np.arange(m)[None, :]
    tw = t[idx]
    keep = np.all(np.diff(tw, axis=1) <= max_gap_s, axis=1)
    if not keep.any():
        return None
    idx, tw = idx[keep], tw[keep]
    tc = tw - tw.mean(axis=1, keepdims=True)
    # an orthonormal basis of each run's span{1, t, t^2} (Gram-Schmidt; the residual is y minus its
    # projections on it: the least-squares quadratic's residual, without a pseudo-inverse per run)
    q1 = tc / np.sqrt((tc * tc).sum(axis=1, keepdims=True))
    q2 = tc * tc
    q2 = q2 - q2.mean(axis=1, keepdims=True)
    q2 = q2 - (q2 * q1).sum(axis=1, keepdims=True) * q1
    q2 = q2 / np.sqrt((q2 * q2).sum(axis=1, keepdims=True))
    var = np.zeros(len(idx))
    for axis in ys:
        y = axis[idx]
        res = y - y.mean(axis=1, keepdims=True)
        res = res - (res * q1).sum(axis=1, keepdims=True) * q1
        res = res - (res * q2).sum(axis=1, keepdims=True) * q2
        var += (res * res).sum(axis=1)
    dof = len(ys) * (m - 3)
    var /= dof
    med = (1.0 - 2.0 / (9.0 * dof)) ** 3                                    # median of chi2(dof)/dof (Wilson-Hilferty)
    return float(math.sqrt(np.median(var) / med))


def estimate_gnss_sigma(log, fixes_per_fit=7, max_gap_s=0.6):
    """GNSS 1 sigma per axis (m) from the log alone: :func:`_local_quadratic_sigma` of north and east
    through runs of ``fixes_per_fit`` consecutive fixes. None when the log has no such run."""
    t = np.asarray(log["time_s"], float)
    ok = np.isfinite(log["gnss_north_m"]) & np.isfinite(log["gnss_east_m"])
    return _local_quadratic_sigma(t[ok], (np.asarray(log["gnss_north_m"], float)[ok],
                                          np.asarray(log["gnss_east_m"], float)[ok]), fixes_per_fit, max_gap_s)


def estimate_heading_sigma(log, span_s=0.2):
    """Heading 1 sigma (rad) from the log alone: :func:`_local_quadratic_sigma` of the unwrapped headings
    through runs spanning ``span_s`` (at least 7 samples). None without such a run."""
    t = np.asarray(log["time_s"], float)
    yaw = np.asarray(log["yaw_rad"], float)
    ok = np.isfinite(yaw)
    if ok.sum() < 7:
        return None
    tt = t[ok]
    dt = float(np.median(np.diff(tt)))
    per = max(7, int(round(span_s / dt)) + 1)
    return _local_quadratic_sigma(tt, (np.unwrap(yaw[ok]),), per, 5.0 * dt)


def _yaw_accel(log, smooth_s=0.2):
    """|yaw acceleration| (rad/s^2) at every row: the yaw rate averaged over ``smooth_s``, differenced
    over ``smooth_s`` (missing yaw rates interpolated)."""
    t = np.asarray(log["time_s"], float)
    r = np.asarray(log["yaw_rate_radps"], float)
    ok = np.isfinite(r)
    if not ok.any():
        return np.zeros(len(t))
    r = np.interp(t, t[ok], r[ok])
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    k = max(1, int(round(smooth_s / dt)))
    c = np.concatenate([[0.0], np.cumsum(r)])
    avg = (c[k:] - c[:-k]) / k                                              # avg[i]: rows i .. i + k - 1
    acc = np.zeros(len(t))
    if len(avg) > k:
        d = np.abs(avg[k:] - avg[:-k]) / (k * dt)                           # centred near row i + k
        acc[k:k + len(d)] = d
    return acc


def abrupt_windows(log, windows, thrust_change_n, span_s, yaw_accel_radps2):
    """(abrupt (W,) bool, thrust change (W,) N, yaw acceleration (W,) rad/s^2) of each window: the largest
    change of either thrust within ``span_s`` and the largest |yaw acceleration| inside it (module
    docstring)."""
    thrust = windows["thrust_n"]                                           # (W, L, 2)
    rows = thrust.shape[1]
    dt = float(np.median(windows["dt_s"]))
    m = max(1, min(rows - 1, int(round(span_s / dt))))
    change = np.zeros(thrust.shape[0])
    for lag in range(1, m + 1):
        d = np.abs(thrust[:, lag:, :] - thrust[:, :-lag, :]).max(axis=(1, 2))
        change = np.maximum(change, d)
    acc_rows = _yaw_accel(log)
    idx = windows["start"][:, None] + np.arange(rows)[None, :]
    accel = acc_rows[idx].max(axis=1)
    abrupt = (change > thrust_change_n) | (accel > yaw_accel_radps2)
    return abrupt, change, accel


def horizon_table(c, seeds, windows, abrupt, horizons_s):
    """{"smooth"|"abrupt"|"all": {horizon "1".."5": {"median_m", "rms_m", "windows"}}}: the position error
    (m) of the rollouts from ``seeds`` at the last withheld fix within each horizon
    (``vessel_fit.endpoint_errors``), per class of window."""
    ends = vf.endpoint_errors(c, seeds, windows, horizons_s) if len(windows["start"]) else {}
    out = {}
    for name, which in (("smooth", ~abrupt), ("abrupt", abrupt), ("all", np.ones_like(abrupt))):
        row = {}
        for h in horizons_s:
            e = ends[h][which] if ends else np.array([])
            e = e[np.isfinite(e)]
            row[_hkey(h)] = {"median_m": float(np.median(e)) if len(e) else None,
                             "rms_m": float(np.sqrt(np.mean(e * e))) if len(e) else None, "windows": int(len(e))}
        out[name] = row
    return out


def _hkey(h):
    return ("%g" % h)


# ---------------------------------------------------------------------------------------------- the fit
def _split(log, cfg):
    """True when ``log`` is long enough to be worked on in two halves (``split_min_s``)."""
    t = log["time_s"]
    return len(t) > 1 and float(t[-1] - t[0]) >= cfg["split_min_s"]


def _ekf_pass(log, cfg, c, q_scale):
    """The EKF over the log: (states, counters, fixes, seconds since the filter last started at each row
    (NaN while it is not running), CPU seconds of the second process); in two segments for a long log."""
    ekf = dict(cfg["ekf"])
    for key in NOISE_KEYS:
        ekf[key] = ekf[key] * math.sqrt(q_scale)          # densities: variance scaled by q
    overlap = cfg["ekf_overlap_s"] if _split(log, cfg) else None
    return split_runs.ekf_pass(log, ekf, c, overlap, cfg["workers"])


def _targets_without_gated(windows, fixes):
    """The windows with the withheld fixes the EKF gated removed from the targets."""
    refused = np.array([row for row, fused, _ in fixes if not fused], dtype=int)
    if not len(refused):
        return windows
    out = dict(windows)
    rows = windows["start"][:, None] + np.arange(windows["mask"].shape[1])[None, :]
    bad = np.isin(rows, refused)
    out["mask"] = windows["mask"] & ~bad
    out["target_ne_m"] = np.where(bad[..., None], np.nan, windows["target_ne_m"])
    return out


def _converged(passes, min_gain):
    """True when the last fitted constants' own train MSE gained less than ``min_gain`` (relative) over
    the previous pass's (both fitted; the first pass runs the initial constants)."""
    if len(passes) < 3 or min_gain <= 0:
        return False
    a, b = passes[-2]["mse_train"], passes[-1]["mse_train"]
    return a is not None and b is not None and b > (1.0 - min_gain) * a


def _mse(c, seeds, windows):
    if not windows["mask"].any():
        return None
    v = vf.loss(c, seeds, windows)
    return float(v) if math.isfinite(v) else None


def _fit(cfg, c, seeds, windows, split=False):
    """One fit from ``c`` (the warm start); with ``split``, the loss over two halves of the windows
    (``split_runs.SplitLoss``). Adds the second process's CPU seconds to the result (``helper_cpu_s``)."""
    fit = vf.fit_lbfgsb if cfg["method"] == "lbfgsb" else vf.fit_gradient_descent
    if not split or len(windows["start"]) < 2:
        return dict(fit(c, seeds, windows, iterations=cfg["iterations"]), helper_cpu_s=0.0)
    with split_runs.SplitLoss(seeds, windows, cfg["workers"]) as loss:
        res = fit(c, seeds, windows, iterations=cfg["iterations"], parts=loss.parts)
        return dict(res, helper_cpu_s=loss.cpu_s)


def _move(c_from, c_to, seeds, windows):
    """(d, rel): the RMS distance (m) between the rollouts of ``c_from`` and ``c_to`` from ``seeds`` at
    the withheld fixes, and the largest relative change of a constant (over those not 0)."""
    m = windows["mask"]
    a = vf.rollout(c_from, seeds, windows)[..., NORTH_EAST]
    b = vf.rollout(c_to, seeds, windows)[..., NORTH_EAST]
    with np.errstate(over="ignore", invalid="ignore"):
        d = float(np.sqrt(((a - b)[m] ** 2).sum() / max(int(m.sum()), 1)))
    rel = [abs(y - x) / abs(x) for x, y in zip(c_from, c_to) if x != 0]
    return (d if math.isfinite(d) else math.inf), (max(rel) if rel else 0.0)


def fit_log(log, overrides=None, progress=None):
    """Fit the vessel model to ``log`` (the columns of ``harness.training.boat_fit``, checked by
    ``boat_log.check_log``) with the settings ``overrides`` (module docstring). ``progress(text)``: told
    what runs. Returns (result, detail): ``result`` is JSON-ready ({"params": {"c1": .., ..}, "mse_train_m2",
    "mse_test_m2", "windows", "windows_train", "windows_test", "withheld_fraction", "gnss_sigma_m",
    "method", "rounds": [...], "rounds_run", "stop_reason", "horizons": {"train"|"test": horizon_table},
    "abrupt_smooth_ratio_5s", "abrupt": {definition and counts}, "ekf_counters"}; no wall-clock figures);
    ``detail`` holds the arrays the plots draw (constants, seeds, windows, train/test index arrays, abrupt
    flags) and ``timing``: {"ekf": [(wall s, CPU s of this process, CPU s of the second process) per EKF
    pass], "fit": [the same per fit]}. Raises ConfigError when the log gives fewer than 2 windows."""
    cfg = settings(overrides)
    say = progress or (lambda text: None)
    windows = make_windows(log, cfg["window_s"])
    w = len(windows["start"])
    if w < MIN_WINDOWS:
        raise ConfigError("the log gives %d fitting window(s) of %g s with GNSS fixes; need at least %d (a longer "
                          "log, or fewer GNSS gaps)" % (w, cfg["window_s"], MIN_WINDOWS))
    n_test = min(w - 1, max(1, int(round(cfg["test_fraction"] * w))))
    order = np.argsort(windows["t0_s"], kind="stable")
    train_idx, test_idx = order[:w - n_test], order[w - n_test:]
    test_t0 = float(windows["t0_s"][test_idx].min())
    sigma = cfg["gnss_sigma_m"]
    sigma_source = "setting"
    if sigma is None:
        sigma = estimate_gnss_sigma(log) or cfg["ekf"]["gnss_sigma_m"]
        sigma_source = "estimated from the log"
    cfg["ekf"]["gnss_sigma_m"] = max(float(sigma), 1e-3)
    heading_sigma = estimate_heading_sigma(log)
    if heading_sigma is not None and "heading_sigma_rad" not in ((overrides or {}).get("ekf") or {}):
        cfg["ekf"]["heading_sigma_rad"] = max(heading_sigma, 1e-4)
    weight = cfg["heading_weight_m2_per_rad2"]
    if weight is None:
        weight = (cfg["ekf"]["gnss_sigma_m"] / heading_sigma) ** 2 if heading_sigma else 0.0
    windows["heading_weight"] = float(weight)
    c = [cfg["initial"][name] for name in vm.PARAM_NAMES]
    q_scale = 1.0
    tuning = []                         # (log10 q, mean NIS) of every EKF pass
    passes = []                         # every EKF pass: its constants, q, seeds and errors
    rounds = []
    t_rows = np.asarray(log["time_s"], float)
    split = _split(log, cfg)
    timing = {"ekf": [], "fit": []}     # (wall s, CPU s of this process, of the second) per pass / fit
    settled = False
    for k in range(cfg["rounds"] + 1):
        say("EKF pass %d (at most %d)" % (k + 1, cfg["rounds"] + 1))
        t0, c0 = time.perf_counter(), time.process_time()
        states, counters, fixes, since, helper_cpu = _ekf_pass(log, cfg, c, q_scale)
        timing["ekf"].append((time.perf_counter() - t0, time.process_time() - c0, helper_cpu))
        wins = _targets_without_gated(windows, fixes)
        seeds = seeds_at(states, wins)
        good = np.all(np.isfinite(seeds), axis=1) & (since[wins["start"]] >= cfg["settle_s"])
        tr_idx, te_idx = train_idx[good[train_idx]], test_idx[good[test_idx]]
        train, test = select(wins, tr_idx), select(wins, te_idx)
        nis = [v for row, fused, v in fixes if fused and t_rows[row] < test_t0]
        nis_mean = float(np.mean(nis)) if nis else None
        passes.append({"c": c, "q": q_scale, "states": states, "counters": counters, "wins": wins, "seeds": seeds,
                       "good": good, "tr_idx": tr_idx, "te_idx": te_idx, "train": train, "test": test,
                       "nis_mean": nis_mean, "mse_train": _mse(c, seeds[tr_idx], train) if len(tr_idx) else None})
        if settled:
            stop_reason = "settled"
            break
        if k == cfg["rounds"]:
            stop_reason = "rounds"
            break
        if _converged(passes, cfg["min_gain"]):
            stop_reason = "min_gain"
            break
        if not len(tr_idx):
            raise ConfigError("no training window starts where the EKF has settled (%g s after it starts; no heading "
                              "near the fixes, or a log too short?)" % cfg["settle_s"])
        if not train["mask"].any():        # nothing to fit to: every withheld fix was gated as an outlier
            raise ConfigError("the EKF's gate refused all %d withheld GNSS fixes of the %d training windows as "
                              "outliers; nothing is left to fit (GNSS jumps, or gnss_sigma_m %g m too small?)"
                              % (int(windows["mask"][tr_idx].sum()), len(tr_idx), cfg["ekf"]["gnss_sigma_m"]))
        say("fit round %d/%d (%s, %d windows)" % (k + 1, cfg["rounds"], cfg["method"], len(tr_idx)))
        t0, c0 = time.perf_counter(), time.process_time()
        res = _fit(cfg, c, seeds[tr_idx], train, split)
        timing["fit"].append((time.perf_counter() - t0, time.process_time() - c0, res["helper_cpu_s"]))
        c_next = [float(v) for v in res["params"]]
        mse_next = _mse(c_next, seeds[tr_idx], train)
        move_m, move_param = _move(c, c_next, seeds[tr_idx], train)
        move_rel = move_m / math.sqrt(mse_next) if mse_next else math.inf
        settled = move_rel < cfg["stop_rtol"]
        rounds.append({"round": k + 1, "params": vm.params_dict(c_next), "objective": float(res["loss"]),
                       "mse_train_m2": mse_next,
                       "mse_test_m2": _mse(c_next, seeds[te_idx], test), "loss_evaluations": int(res["evals"]),
                       "gnss_nis_mean": nis_mean, "process_noise_scale": q_scale,
                       "path_change_m": move_m if math.isfinite(move_m) else None,
                       "path_change_rel": move_rel if math.isfinite(move_rel) else None,
                       "max_param_change_rel": move_param})
        c = c_next
        if cfg["tune_process_noise"] and nis_mean is not None and k > 0:
            tuning.append((math.log10(q_scale), nis_mean))
            q_scale = tuned_q_scale(tuning)
    # the result: the fitted constants (passes 1..K) whose own EKF pass gives the smallest train MSE
    fitted = [p for p in passes[1:] if p["mse_train"] is not None] or passes[1:]
    best = min(fitted, key=lambda p: p["mse_train"] if p["mse_train"] is not None else math.inf)
    for r, p in zip(rounds, passes[1:]):
        r["mse_train_m2_own_ekf"] = p["mse_train"]
    c, wins, seeds, good = best["c"], best["wins"], best["seeds"], best["good"]
    tr_idx, te_idx, train, test = best["tr_idx"], best["te_idx"], best["train"], best["test"]
    tr_seeds, te_seeds = seeds[tr_idx], seeds[te_idx]
    counters, states, nis_mean, q_scale = best["counters"], best["states"], best["nis_mean"], best["q"]
    abrupt, change, accel = abrupt_windows(log, wins, cfg["abrupt_thrust_change_n"], cfg["abrupt_span_s"],
                                           cfg["abrupt_yaw_accel_radps2"])
    ab_tr, ab_te = abrupt[tr_idx], abrupt[te_idx]
    horizons = {"train": horizon_table(c, tr_seeds, train, ab_tr, cfg["horizons_s"]),
                "test": horizon_table(c, te_seeds, test, ab_te, cfg["horizons_s"])}
    last = _hkey(max(cfg["horizons_s"]))
    sm, ab = horizons["test"]["smooth"][last]["median_m"], horizons["test"]["abrupt"][last]["median_m"]
    result = {
        "params": vm.params_dict(c),
        "mse_train_m2": _mse(c, tr_seeds, train),
        "mse_test_m2": _mse(c, te_seeds, test),
        "windows": int(w),
        "windows_train": int(len(train["start"])),
        "windows_test": int(len(test["start"])),
        "withheld_fraction": float(windows["withheld_fraction"]),
        "window_s": cfg["window_s"],
        "gnss_sigma_m": cfg["ekf"]["gnss_sigma_m"],
        "gnss_sigma_source": sigma_source,
        "heading_sigma_rad": cfg["ekf"]["heading_sigma_rad"],
        "heading_weight_m2_per_rad2": float(weight),
        "method": cfg["method"],
        "rounds": rounds,
        "rounds_run": len(rounds),
        "stop_reason": stop_reason,
        "stop_rtol": cfg["stop_rtol"],
        "split_in_two": bool(split),
        "chosen_round": next(k for k, p in enumerate(passes) if p is best),   # by identity: passes hold arrays
        "process_noise_scale": q_scale,
        "gnss_nis_mean": nis_mean,
        "horizons": horizons,
        "abrupt_smooth_ratio_%ss" % last: (ab / sm) if (sm and ab is not None) else None,
        "abrupt": {"thrust_change_n": cfg["abrupt_thrust_change_n"], "span_s": cfg["abrupt_span_s"],
                   "yaw_accel_radps2": cfg["abrupt_yaw_accel_radps2"], "train_windows": int(ab_tr.sum()),
                   "test_windows": int(ab_te.sum())},
        "ekf_counters": counters,
    }
    detail = {"params": c, "windows": wins, "seeds": seeds, "good": good, "train_idx": train_idx,
              "test_idx": test_idx, "abrupt": abrupt, "thrust_change_n": change, "yaw_accel_radps2": accel,
              "states": states, "timing": timing}
    return result, detail
