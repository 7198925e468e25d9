"""Scenario boat-ekf (robotx III-C): the acceptance numbers on its reduced run (50 seeded runs of 6 s in
paper-model mode): NEES and NIS inside their 95 % chi-square bands, the position RMSE below the GNSS sigma,
every NaN / out-of-order input rejected and counted with the state unchanged; the sweep runner's worker
count does not change the metrics; the bad-input check tells a refused sample from a fused one."""
import numpy as np
import pytest

from harness import scenarios
from harness.scenarios.boat import boat_ekf
from harness.scenarios.context import RunContext
from harness.sim.wamv_runs import bad_inputs, offer_bad_inputs
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel.samples import HeadingSample, PositionSample


def _run(overrides=None, seed=3):
    module, config = scenarios.prepare("boat-ekf", overrides or {}, reduced=True)
    metrics = module.run(config, RunContext(seed))
    scenarios.check_metrics("boat-ekf", metrics)
    return metrics


@pytest.fixture(scope="module")
def reduced():
    return _run()


def test_reduced_run_meets_the_acceptance(reduced):
    m = reduced
    assert m["runs"] >= 50 and m["gnss_fixes_per_run"] >= 20
    nees, nis = m["nees"], m["nis"]
    print("\nboat-ekf reduced: ANEES %.2f in %.2f..%.2f, single NEES inside %.3f; ANIS %.2f in %.2f..%.2f, single NIS "
          "inside %.3f; position RMSE %.3f m (sigma %.2f)" % (
              nees["mean"], *nees["average_band"], nees["single_inside_fraction"], nis["mean"], *nis["average_band"],
              nis["single_inside_fraction"], m["position_rmse_m"], m["gnss_sigma_m"]))
    assert nees["average_band"][0] <= nees["mean"] <= nees["average_band"][1]
    assert nis["average_band"][0] <= nis["mean"] <= nis["average_band"][1]
    assert 0.9 <= nees["single_inside_fraction"] <= 0.99 and 0.9 <= nis["single_inside_fraction"] <= 0.99
    assert nees["average_epochs_inside_fraction"] >= 0.85 and nis["average_epochs_inside_fraction"] >= 0.85
    assert m["rmse"]["north_m"] < m["gnss_sigma_m"] and m["rmse"]["east_m"] < m["gnss_sigma_m"]
    bad = m["bad_inputs"]
    assert bad["offered"] >= 50 * 2 * 8 and bad["rejected_state_unchanged"] == bad["offered"]
    assert m["counters"]["rejected"] == bad["offered"] and m["counters"]["rejected_without_bad_inputs"] == 0
    assert m["counters"]["resets"] == 0 and m["success"] is True


def test_metrics_do_not_depend_on_the_worker_count():
    one = _run({"runs": 4, "duration_s": 3.0}, seed=5)
    two = _run({"runs": 4, "duration_s": 3.0, "workers": 2}, seed=5)
    assert one == two
    assert one != _run({"runs": 4, "duration_s": 3.0}, seed=6)


def test_the_bad_input_check_counts_only_refusals_that_leave_the_state():
    f = BoatEkf()
    f.initialize(500000, [0.1, 0.0, 0.0, 0.0, 1.0, 0.0])
    samples = bad_inputs(f.time_us, np.random.default_rng(0))
    assert len(samples) == len(set(kind for kind, _, _ in samples)) == 8
    assert offer_bad_inputs(f, samples) == (8, 8)
    assert f.counters()["rejected"] == 8 and f.time_us == 500000
    # valid samples are fused, so they are not counted as refused
    good = [("position", "update_position", PositionSample(510000, (0.02, 0.01))),
            ("heading", "update_heading", HeadingSample(520000, 0.1))]
    assert offer_bad_inputs(f, good) == (2, 0)
    assert f.time_us == 520000


def test_settings_that_contradict_each_other_are_refused():
    with pytest.raises(scenarios.ConfigError, match="record_s"):
        scenarios.prepare("boat-ekf", {"record_s": 10.0, "duration_s": 5.0})
