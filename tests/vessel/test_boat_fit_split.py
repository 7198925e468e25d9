"""The fit on two cores (harness.training.boat_fit.split_runs, second_process) and the alternation's stop
rule (procedure.fit_log): the EKF pass in two overlapping segments gives the seeds, fixes and counters of
one pass; the loss over two halves of the windows is the whole loss; a fit's results do not depend on
whether the second half ran in a second process; the rounds stop when the constants settle."""
import numpy as np
import pytest

from harness.sim.wamv_runs import simulate_log
from harness.training.boat_fit import procedure as pr
from harness.training.boat_fit import split_runs
from harness.training.boat_fit import vessel_fit as vf
from harness.training.boat_fit.fit_windows import LOG_COLUMNS, make_windows, seeds_at
from harness.training.boat_fit.second_process import Helper, HelperError, can_fork
from onboard.core.settings import ConfigError
from onboard.vessel import model as vm

TRUTH = {"c1": 380.0, "c2": 0.7, "c3": 0.2, "c4": 220.0, "c5": 0.35, "c6": 0.3, "c7": 0.5, "c8": 0.3, "c9": -0.01}
CALM = {"outlier_prob": 0.0, "dropout_prob": 0.0}


def _same_fixes(a, b, rtol=0.0):
    """The same (row, fused, NIS) list (NIS NaN where not fused by an update; within ``rtol``)."""
    assert [f[:2] for f in a] == [f[:2] for f in b]
    assert np.allclose([f[2] for f in a], [f[2] for f in b], rtol=rtol, atol=0.0, equal_nan=True)


@pytest.fixture(scope="module")
def log90():
    log = simulate_log(4, 90.0, wamv={"mode": "paper", "paper": TRUTH}, gnss=dict(CALM, sigma_m=0.1,
                                                                                   outlier_prob=0.02))
    return {k: np.asarray(log[k], float) for k in LOG_COLUMNS}


def test_ekf_in_two_overlapping_segments_gives_the_seeds_of_one_pass(log90):
    ekf = {"gnss_sigma_m": 0.1}
    one, counters, fixes, since, _ = split_runs.ekf_pass(log90, ekf, vm.params_from())
    two, counters2, fixes2, since2, _ = split_runs.ekf_pass(log90, ekf, vm.params_from(), overlap_s=20.0, workers=1)
    cut, start = split_runs.ekf_cut(log90["time_s"], 20.0)
    assert 0 < start < cut < len(one) and abs(cut - (len(one) + 2000) // 2) <= 1
    assert np.array_equal(two[:cut], one[:cut], equal_nan=True)          # the first segment is the same filter
    assert np.abs(two[cut:] - one[cut:]).max() < 1e-8                      # the second has forgotten its start
    _same_fixes(fixes2, fixes, rtol=1e-6)
    assert any(not fused for _, fused, _ in fixes)                        # gated fixes included
    assert counters2 == counters
    assert np.array_equal(np.isnan(since2), np.isnan(since)) and np.nanmin(since2[cut:]) >= 20.0 - 0.25


@pytest.mark.skipif(not can_fork(), reason="needs the fork start method")
def test_the_second_process_changes_nothing_and_reports_its_failures(log90):
    ekf = {"gnss_sigma_m": 0.1}
    inline = split_runs.ekf_pass(log90, ekf, vm.params_from(), overlap_s=20.0, workers=1)
    forked = split_runs.ekf_pass(log90, ekf, vm.params_from(), overlap_s=20.0, workers=2)
    assert np.array_equal(inline[0], forked[0], equal_nan=True) and inline[1] == forked[1]
    _same_fixes(inline[2], forked[2])
    assert inline[4] == 0.0 and forked[4] > 0.0                           # the child's CPU seconds
    # the loss over two halves of the windows: the whole loss, bit-identical inline and forked
    w = make_windows(log90)
    w["heading_weight"] = 4.0
    seeds = seeds_at(inline[0], w)
    c = vm.params_from()
    whole = vf.loss_and_grad(c, seeds, w, gn_diagonal=True)
    got = []
    for workers in (1, 2):
        with split_runs.SplitLoss(seeds, w, workers) as loss:
            assert loss.helper.forked == (workers == 2)
            got.append(vf.combine_sums(loss.parts(c, "diagonal"), curvature="diagonal"))
    for a, b, ref in zip(got[0], got[1], whole):
        assert np.array_equal(a, b)
        assert np.allclose(a, ref, rtol=1e-12, atol=0.0)

    def fails(x):
        raise ValueError("bad %s" % x)
    with Helper(fails, 2) as helper:
        helper.call(7)
        with pytest.raises(HelperError, match="ValueError: bad 7"):
            helper.get()


def test_a_split_fit_does_not_depend_on_the_workers_and_the_rounds_stop_when_the_constants_settle(log90):
    """90 s paper-model log, 2.5 s windows, short fits. Split in two (split_min_s lowered to this log):
    workers 1 and 2 give the same result. From the true constants the first round moves the predictions by
    less than half the residual: with stop_rtol 0.5 the alternation stops there ("settled"); with 0 it runs
    its rounds."""
    base = {"rounds": 1, "settle_s": 5.0, "iterations": 10, "window_s": 2.5, "stop_rtol": 0.0}
    split = dict(base, split_min_s=60.0, ekf_overlap_s=20.0)
    results = [pr.fit_log(log90, dict(split, workers=k))[0] for k in (1, 2)]
    assert results[0]["split_in_two"] and results[0] == results[1]
    assert results[0]["stop_reason"] == "rounds" and results[0]["rounds_run"] == 1
    res, detail = pr.fit_log(log90, dict(base, initial=TRUTH, rounds=2, stop_rtol=0.5))
    assert not res["split_in_two"] and res["stop_rtol"] == 0.5
    assert res["stop_reason"] == "settled" and res["rounds_run"] == 1 and len(detail["timing"]["ekf"]) == 2
    r = res["rounds"][0]
    assert 0.0 < r["path_change_rel"] < 0.5
    assert r["path_change_m"] == pytest.approx(r["path_change_rel"] * np.sqrt(r["mse_train_m2"]))
    assert 0.0 < r["max_param_change_rel"] < 1.0      # weak constants (c8, c9) move most on 90 s
    with pytest.raises(ConfigError, match="ekf_overlap_s .* must exceed settle_s"):
        pr.settings({"ekf_overlap_s": 10.0})
