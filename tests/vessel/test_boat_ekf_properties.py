"""Boat EKF properties (robotx III-C) against the simulated WAM-V.

- any sequence of predicts and updates, valid or not (NaN, inf, out of order, zero variance, outliers),
  keeps the covariance exactly symmetric and positive definite, and a refused sample changes nothing
  (hypothesis, derandomised);
- consistency: 50 seeded Monte Carlo runs of 20 s against the truth vessel in "paper model" mode (the
  filter's own model and process noise): the run-averaged NEES (6 dof) and the NIS of the GNSS fixes
  (2 dof) inside their two-sided 95 % chi-square bands (numbers printed with -s; at the time of
  writing ANEES 6.15 in 5.08..7.00 with 95 % of epochs inside, ANIS 1.92 in 1.48..2.59 with 94 % inside),
  position RMSE below the GNSS sigma;
- the richer truth vessel (wind, waves, current, thruster dead band and lag, added mass) with GNSS
  outliers and dropouts: no divergence, position RMSE per axis below the GNSS sigma.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from harness.sim.wamv_runs import ekf_run
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import N_STATE, BoatEkf
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample

N_RUNS = 50
GNSS_SIGMA_M = 0.5

finite = st.floats(-1e3, 1e3)
bad = st.sampled_from([float("nan"), float("inf"), float("-inf")])
op = st.one_of(
    st.tuples(st.just("predict"), st.integers(-2000, 300000), st.floats(-150, 300), st.floats(-150, 300)),
    st.tuples(st.just("position"), st.integers(-20000, 300000), finite, finite, st.floats(-1.0, 25.0)),
    st.tuples(st.just("heading"), st.integers(-20000, 300000), st.floats(-10, 10), st.floats(-0.01, 0.5)),
    st.tuples(st.just("yaw_rate"), st.integers(-20000, 300000), st.floats(-3, 3), st.floats(-1e-4, 0.1)),
    st.tuples(st.just("bad"), st.sampled_from(["predict", "position", "heading", "yaw_rate"]), bad),
)


def _apply(f, t_us, item):
    kind = item[0]
    if kind == "predict":
        return f.predict(ThrustSample(t_us + item[1], item[2], item[3]))
    if kind == "position":
        return f.update_position(PositionSample(t_us + item[1], (item[2], item[3]), item[4]))
    if kind == "heading":
        return f.update_heading(HeadingSample(t_us + item[1], item[2], item[3]))
    if kind == "yaw_rate":
        return f.update_yaw_rate(YawRateSample(t_us + item[1], item[2], item[3]))
    target, v = item[1], item[2]
    if target == "predict":
        return f.predict(ThrustSample(t_us + 10000, v, 0.0))
    if target == "position":
        return f.update_position(PositionSample(t_us, (0.0, v)))
    if target == "heading":
        return f.update_heading(HeadingSample(t_us, v))
    return f.update_yaw_rate(YawRateSample(t_us, v))


@settings(max_examples=60)
@given(st.lists(op, min_size=1, max_size=40))
def test_covariance_stays_symmetric_positive_definite_and_refused_input_changes_nothing(ops):
    f = BoatEkf({"max_gap_s": 10.0})
    f.initialize(0, [0.1, 0.0, 0.0, 0.0, 1.0, 0.0])
    for item in ops:
        before = (list(f.x), list(f.P), f.time_us, f.counters())
        try:
            _apply(f, f.time_us, item)
        except EstimatorInputError:
            assert (f.x, f.P, f.time_us) == before[:3]
            counters = f.counters()
            assert counters.pop("rejected") == before[3].pop("rejected") + 1 and counters == before[3]
        if not f.initialized:
            continue
        P = np.array(f.P).reshape(N_STATE, N_STATE)
        assert np.array_equal(P, P.T)
        assert np.linalg.eigvalsh(P).min() > 0.0
        assert all(math.isfinite(v) for v in f.x)


@pytest.fixture(scope="module")
def paper_runs():
    return [ekf_run(1000 + run, duration_s=20.0, mode="paper") for run in range(N_RUNS)]


@pytest.mark.slow
def test_nees_and_nis_inside_the_95_percent_chi_square_bands(paper_runs):
    nees = np.array([r["nees"] for r in paper_runs])            # (runs, epochs 0.01, 1, 2, ... 20 s)
    anees = nees.mean(axis=0)
    n_fix = min(len(r["nis_gnss"]) for r in paper_runs)
    anis = np.array([r["nis_gnss"][:n_fix] for r in paper_runs]).mean(axis=0)
    lo6, hi6 = chi2.ppf([0.025, 0.975], N_STATE * N_RUNS) / N_RUNS
    lo2, hi2 = chi2.ppf([0.025, 0.975], 2 * N_RUNS) / N_RUNS
    inside_nees = np.mean((anees >= lo6) & (anees <= hi6))
    inside_nis = np.mean((anis >= lo2) & (anis <= hi2))
    print("\nANEES %.2f (95%% band %.2f..%.2f), epochs inside %.0f%%; ANIS %.2f (%.2f..%.2f), fixes inside %.0f%%"
          % (anees.mean(), lo6, hi6, 100 * inside_nees, anis.mean(), lo2, hi2, 100 * inside_nis))
    assert lo6 <= anees.mean() <= hi6
    assert lo2 <= anis.mean() <= hi2
    assert inside_nees >= 0.85 and inside_nis >= 0.85
    assert n_fix >= 75                                         # 4 Hz over 20 s, none gated away


@pytest.mark.slow
def test_paper_mode_position_rmse_below_gnss_sigma_and_covariance_spd(paper_runs):
    err = np.concatenate([r["err"] for r in paper_runs])
    rmse = np.sqrt((err ** 2).mean(axis=0))
    print("\nRMSE yaw %.4f rad, yaw rate %.4f rad/s, north %.3f m, east %.3f m, surge %.3f m/s, sway %.3f m/s"
          % tuple(rmse))
    assert rmse[2] < GNSS_SIGMA_M and rmse[3] < GNSS_SIGMA_M
    assert min(r["min_eig"].min() for r in paper_runs) > 0.0
    assert max(r["asym"].max() for r in paper_runs) == 0.0
    assert sum(r["counters"]["resets"] + r["counters"]["timeouts"] + r["counters"]["rejected"]
               for r in paper_runs) == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_rich_truth_with_outliers_and_dropouts_is_tracked(seed):
    rec = ekf_run(seed, duration_s=40.0, mode="rich", gnss={"outlier_prob": 0.03, "dropout_prob": 0.01})
    rmse = np.sqrt((rec["err"] ** 2).mean(axis=0))
    c = rec["counters"]
    assert rmse[2] < GNSS_SIGMA_M and rmse[3] < GNSS_SIGMA_M, rmse
    assert c["resets"] == 0 and c["gated"] >= 1
    assert rec["min_eig"].min() > 0.0
