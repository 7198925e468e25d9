"""Scenario `boat-ekf`: Monte Carlo consistency of the boat EKF (``onboard.estimators.boat_ekf``, RobotX AAVS
III-C) against the simulated WAM-V (``harness.sim.wamv``) with simulated GNSS (4 Hz), heading and gyro
(``harness.sim.sensors.wamv_sensors``): ``runs`` seeded runs (``harness.sim.wamv_runs.ekf_run``, the seeded
driving pattern of straight legs, zig-zags, turning circles and excitation) through the sweep runner
(``harness.parallel.ordered_map``, ``workers`` local processes; the results do not depend on it).

Truth ``mode``: "paper" (robotx eqs. 1-6 with the filter's own constants and process noise: the filter's
models are exact, so NEES and NIS follow chi-square laws) or "rich" (added mass, Coriolis, quadratic
damping, thruster dead band and lag, wind, waves, current; GNSS outliers and dropouts as set).

Metrics (Bar-Shalom's consistency tests, NEES = e^T P^-1 e of the 6-state error, NIS = y^T S^-1 y of
every fused GNSS fix):

- ``nees``: the fraction of single NEES values (every run, every ``record_s``) inside the two-sided 95 %
  chi-square(6) band (expected 0.95), and the run-averaged NEES per epoch against the 95 % band of
  chi-square(6 runs) / runs: the fraction of epochs inside and the overall mean (ANEES);
- ``nis``: the same for the GNSS NIS (2 degrees of freedom; per fix index across runs);
- ``rmse``: RMS errors of every state over all runs and epochs; the position RMSE per axis against the
  GNSS noise sigma;
- ``bad_inputs``: every ``bad_every_s`` each run offers the filter NaN / inf samples and samples older
  than its time (``wamv_runs.bad_inputs``): how many were rejected with the exception, counted, and the
  state, covariance, time and thrusts unchanged.

``success`` (paper mode): ANEES and ANIS inside their bands, at least ``min_inside_fraction`` of the
single NEES and NIS values inside theirs, the position RMSE per axis below the GNSS sigma, every bad
input rejected with the state unchanged, no filter restart. In rich mode the consistency bands are
reported but only the RMSE, the bad inputs and no divergence decide.
Log: one ``/boat_ekf/run`` message per run (its numbers) and ``/boat_ekf/epoch`` (ANEES per epoch).
"""
import math
import time

import numpy as np
from scipy.stats import chi2

from harness.config import POSITIVE, ConfigError, int_at_least, one_of, within
from harness.report.plots import figure, label
from harness.sim.wamv_runs import ekf_run
from onboard.vessel import model as vm

DESCRIPTION = "Boat EKF Monte Carlo: NEES/NIS in the 95 % chi-square bands, RMSE vs GNSS sigma, bad inputs refused"

DEFAULTS = {
    "runs": 50,
    "duration_s": 20.0,
    "mode": "paper",                 # truth: "paper" (eqs. 1-6, the filter's noise) or "rich"
    "gnss_sigma_m": 0.5,             # the simulated receiver's noise and the filter's R
    "gnss_outlier_prob": 0.0,
    "gnss_dropout_prob": 0.0,
    "record_s": 1.0,                 # NEES and errors sampled this often
    "bad_every_s": 2.0,              # bad inputs offered this often per run
    "min_inside_fraction": 0.9,      # of single NEES / NIS values inside their 95 % band
    "workers": 1,                    # local processes of the sweep runner
}
SETTING_RANGES = {
    "runs": int_at_least(2), "duration_s": within(1.0, 3600.0), "mode": one_of("paper", "rich"),
    "gnss_sigma_m": POSITIVE, "gnss_outlier_prob": within(0.0, 0.5), "gnss_dropout_prob": within(0.0, 0.5),
    "record_s": within(0.01, 60.0), "bad_every_s": within(0.01, 3600.0),
    "min_inside_fraction": within(0.0, 1.0), "workers": int_at_least(1),
}
# a few seconds: 50 runs of 6 s (the acceptance's run count; 24 fixes and 7 NEES epochs per run)
REDUCED = {"duration_s": 6.0}

BAND = (0.025, 0.975)
RUN_TOPIC = "/boat_ekf/run"
EPOCH_TOPIC = "/boat_ekf/epoch"


def check_settings(config):
    if config["record_s"] > config["duration_s"]:
        raise ConfigError("boat-ekf: record_s (%g) longer than duration_s (%g)" % (config["record_s"],
                                                                                  config["duration_s"]))


def run_job(job):
    """One seeded run (a sweep job): ``(seed, settings)`` -> plain arrays and counts."""
    seed, cfg = job
    rec = ekf_run(seed, duration_s=cfg["duration_s"], mode=cfg["mode"], ekf={"gnss_sigma_m": cfg["gnss_sigma_m"]},
                  gnss={"sigma_m": cfg["gnss_sigma_m"], "outlier_prob": cfg["gnss_outlier_prob"],
                        "dropout_prob": cfg["gnss_dropout_prob"]},
                  record_s=cfg["record_s"], bad_every_s=cfg["bad_every_s"])
    return {"seed": seed, "t_s": rec["t_s"], "nees": rec["nees"], "nis": rec["nis_gnss"], "err": rec["err"],
            "min_eig": float(rec["min_eig"].min()), "counters": rec["counters"],
            "bad_offered": rec["bad_offered"], "bad_refused": rec["bad_refused"]}


def _band(dof, runs=1):
    lo, hi = chi2.ppf(BAND, dof * runs) / runs
    return float(lo), float(hi)


def consistency(values, dof):
    """Metrics of a (runs, samples) array of NEES or NIS values with ``dof`` degrees of freedom."""
    runs = values.shape[0]
    lo1, hi1 = _band(dof)
    lo, hi = _band(dof, runs)
    avg = values.mean(axis=0)
    return {
        "dof": dof,
        "single_band": [lo1, hi1],
        "single_inside_fraction": float(np.mean((values >= lo1) & (values <= hi1))),
        "average_band": [lo, hi],
        "average_epochs_inside_fraction": float(np.mean((avg >= lo) & (avg <= hi))),
        "mean": float(values.mean()),
        "mean_inside_band": bool(lo <= values.mean() <= hi),
        "samples": int(values.size),
    }


def run(config, ctx):
    wall0 = time.perf_counter()
    n = config["runs"]
    job_cfg = {k: config[k] for k in ("duration_s", "mode", "gnss_sigma_m", "gnss_outlier_prob",
                                     "gnss_dropout_prob", "record_s", "bad_every_s")}
    jobs = [(ctx.seed * 100000 + k, job_cfg) for k in range(n)]
    results = ctx.map(run_job, jobs, config["workers"], "boat-ekf")
    ctx.timing(wall_s=time.perf_counter() - wall0, workers=config["workers"])
    epochs = min(len(r["nees"]) for r in results)
    fixes = min(len(r["nis"]) for r in results)
    nees = np.array([r["nees"][:epochs] for r in results])
    nis = np.array([r["nis"][:fixes] for r in results]) if fixes else np.zeros((n, 0))
    err = np.concatenate([r["err"] for r in results])
    rmse = np.sqrt((err ** 2).mean(axis=0))
    sigma = config["gnss_sigma_m"]
    counters = {key: int(sum(r["counters"][key] for r in results)) for key in results[0]["counters"]}
    offered = int(sum(r["bad_offered"] for r in results))
    refused = int(sum(r["bad_refused"] for r in results))
    counters["rejected_without_bad_inputs"] = counters["rejected"] - refused
    nees_m = consistency(nees, vm.N_STATE)
    nis_m = consistency(nis, 2) if fixes else None
    for k, r in enumerate(results):
        ctx.log(RUN_TOPIC, k, {"seed": r["seed"], "nees_mean": float(np.mean(r["nees"])),
                               "nis_mean": float(np.mean(r["nis"])) if len(r["nis"]) else None,
                               "counters": r["counters"], "bad_offered": r["bad_offered"],
                               "bad_refused": r["bad_refused"]})
    t_s = results[0]["t_s"][:epochs]
    for k in range(epochs):
        ctx.log(EPOCH_TOPIC, int(round(t_s[k] * 1e6)), {"t_s": float(t_s[k]), "anees": float(nees[:, k].mean())})
    rmse_m = {name: float(rmse[i]) for i, name in enumerate(vm.STATE_NAMES)}
    pos_ok = bool(rmse[vm.NORTH] < sigma and rmse[vm.EAST] < sigma)
    bad_ok = offered > 0 and refused == offered
    spd = min(r["min_eig"] for r in results) > 0.0
    consistent = (nees_m["mean_inside_band"] and nis_m is not None and nis_m["mean_inside_band"]
                  and nees_m["single_inside_fraction"] >= config["min_inside_fraction"]
                  and nis_m["single_inside_fraction"] >= config["min_inside_fraction"])
    stable = counters["resets"] == 0 and counters["timeouts"] == 0
    success = pos_ok and bad_ok and spd and stable and (consistent or config["mode"] != "paper")
    _plot(ctx, t_s, nees, nis, nees_m, nis_m)
    return {
        "success": bool(success),
        "mode": config["mode"],
        "runs": n,
        "epochs_per_run": int(epochs),
        "gnss_fixes_per_run": int(fixes),
        "nees": nees_m,
        "nis": nis_m,
        "consistent": bool(consistent),
        "rmse": rmse_m,
        "position_rmse_m": float(math.sqrt(0.5 * (rmse[vm.NORTH] ** 2 + rmse[vm.EAST] ** 2))),
        "gnss_sigma_m": sigma,
        "position_rmse_below_gnss_sigma": pos_ok,
        "position_rmse_over_gnss_sigma": float(max(rmse[vm.NORTH], rmse[vm.EAST]) / sigma),
        "covariance_positive_definite": bool(spd),
        "bad_inputs": {"offered": offered, "rejected_state_unchanged": refused, "all_rejected": bool(bad_ok),
                       "kinds": "NaN/inf position, heading, yaw rate, thrust; position, heading, yaw rate older "
                                "than the filter; thrust not later than it"},
        "counters": counters,
    }


def _plot(ctx, t_s, nees, nis, nees_m, nis_m):
    if ctx.report is None:
        return
    fig, (a, b) = figure(1, 2, title="boat-ekf: %d seeded runs" % nees.shape[0])
    lo, hi = nees_m["average_band"]
    a.plot(t_s, nees.mean(axis=0), "o-", label="ANEES")
    a.axhline(lo, color="k", linestyle="--", label="95 % band")
    a.axhline(hi, color="k", linestyle="--")
    label(a, "run-averaged NEES (6 dof)", "time (s)", "ANEES")
    if nis_m is not None and nis.shape[1]:
        lo, hi = nis_m["average_band"]
        b.plot(np.arange(nis.shape[1]), nis.mean(axis=0), ".-", label="ANIS")
        b.axhline(lo, color="k", linestyle="--", label="95 % band")
        b.axhline(hi, color="k", linestyle="--")
    label(b, "run-averaged GNSS NIS (2 dof)", "fix index", "ANIS")
    ctx.report.save_figure(fig, "boat_ekf")
