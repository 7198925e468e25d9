"""ESKF accuracy and consistency on the simulated dozer trajectory (ag2u IV-A/B).

- noise-less: the trajectory is reconstructed (position < 1 mm, attitude < 0.01 deg after 60 s),
  on every implementation;
- sensor-fusion noise, 50 seeded Monte Carlo runs (Cython build for speed): the average
  NEES lies inside the two-sided 95 % chi-square bounds for 15 dof, and the average NIS
  inside those for 6 dof (printed with -s);
- constant accelerometer and gyro biases are estimated within 20 % after 120 s of 1 Hz aiding;
- a 10-sigma aiding outlier is gated, counted, and changes nothing else.
"""
import math

import numpy as np
import pytest
from scipy.stats import chi2

from harness.sim.rng import RunRandom
from harness.scenarios.ins_eskf import monte_carlo_consistency, run_case
from harness.sim.sensors.ins_errors import ImuErrors, noise_setting
from harness.sim.trajectory import dozer_legs, generate
from onboard import impl as impl_switch
from onboard.estimators.eskf import IMPL_MODULES

IMPLS = impl_switch.available(IMPL_MODULES)
N_RUNS = 50


@pytest.fixture(scope="module")
def traj60():
    return generate(dozer_legs(60.0), 100)


@pytest.fixture(scope="module")
def traj120():
    return generate(dozer_legs(120.0), 100)


@pytest.mark.parametrize("impl", IMPLS)
def test_noise_less_reconstructs_the_trajectory(traj60, impl):
    rec = run_case(traj60, noise_setting("noise_less"), RunRandom(1), impl=impl, record_hz=1)
    assert rec["t_s"][-1] == pytest.approx(60.0)
    pos_err_m = np.linalg.norm(rec["err"][:, 0:3], axis=1)
    att_err_deg = np.degrees(np.linalg.norm(rec["err"][:, 3:6], axis=1))
    assert pos_err_m.max() < 1e-3
    assert att_err_deg.max() < 0.01
    assert rec["counters"]["predicts"] == 6000 and rec["counters"]["gated"] == 0


@pytest.mark.slow
def test_nees_and_nis_inside_chi_square_bounds_over_50_runs():
    # (runs, epochs at 0, 1, ..., 60 s, each right after the update), through the sweep runner
    nees, nis = monte_carlo_consistency(N_RUNS, 60.0, "sensor_fusion", first_seed=1000, impl="cython", workers=2)
    anees = nees.mean(axis=0)
    anis = nis.mean(axis=0)
    lo15, hi15 = chi2.ppf([0.025, 0.975], 15 * N_RUNS) / N_RUNS
    lo6, hi6 = chi2.ppf([0.025, 0.975], 6 * N_RUNS) / N_RUNS
    inside_nees = np.mean((anees[1:] >= lo15) & (anees[1:] <= hi15))
    inside_nis = np.mean((anis >= lo6) & (anis <= hi6))
    print("\nANEES %.2f (95%% bounds %.2f..%.2f), epochs inside %.0f%%; ANIS %.2f (%.2f..%.2f), inside %.0f%%"
          % (anees[1:].mean(), lo15, hi15, 100 * inside_nees, anis.mean(), lo6, hi6, 100 * inside_nis))
    assert lo15 <= anees[1:].mean() <= hi15
    assert lo6 <= anis.mean() <= hi6
    # and epoch by epoch, nearly always inside (95 % expected for a consistent filter)
    assert inside_nees >= 0.85
    assert inside_nis >= 0.85


def test_monte_carlo_runs_give_the_same_arrays_in_one_or_two_worker_processes():
    one = monte_carlo_consistency(3, 5.0, "sensor_fusion", first_seed=7, impl="pure", workers=1)
    two = monte_carlo_consistency(3, 5.0, "sensor_fusion", first_seed=7, impl="pure", workers=2)
    assert one[0].shape == (3, 6) and np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constant_biases_estimated_within_20_percent_after_120_s(traj120, seed):
    setting = noise_setting("sensor_fusion")
    accel_bias_mps2 = [0.08, -0.06, 0.10]
    gyro_bias_radps = [math.radians(v) for v in (0.4, -0.3, 0.5)]
    errors = ImuErrors(accel_bias_mps2, gyro_bias_radps, setting["imu"]["accel_rw_mps_per_sqrt_s"],
                       math.radians(setting["imu"]["gyro_rw_dps_per_sqrt_s"]))
    rec = run_case(traj120, setting, RunRandom(seed), impl="cython", aiding_rate_hz=1, imu_errors=errors)
    assert rec["t_s"][-1] == pytest.approx(120.0)
    assert rec["counters"]["updates"] >= 118
    est_a = np.array(rec["accel_bias_est_mps2"])
    est_g = np.array(rec["gyro_bias_est_radps"])
    rel_a = np.abs(est_a - accel_bias_mps2) / np.abs(accel_bias_mps2)
    rel_g = np.abs(est_g - gyro_bias_radps) / np.abs(gyro_bias_radps)
    assert np.all(rel_a < 0.2), rel_a
    assert np.all(rel_g < 0.2), rel_g
    # the filter knows it: its own 1-sigma is well inside the 20 %
    assert np.all(rec["sigma"][-1, 9:12] < 0.2 * np.abs(accel_bias_mps2))
    assert np.all(rec["sigma"][-1, 12:15] < 0.2 * np.abs(gyro_bias_radps))


def test_ten_sigma_outlier_is_gated_and_counted(traj60):
    setting = noise_setting("sensor_fusion")
    clean = run_case(traj60, setting, RunRandom(5), impl="cython", record_hz=1)
    idx = int(np.argmin(np.abs(clean["nis_t_s"] - 30.0)))
    assert clean["nis"][idx] < 22.46
    # 10 sigma of the innovation, north only
    bad = run_case(traj60, setting, RunRandom(5), impl="cython", record_hz=1,
                   outliers={30000000: ((10.0, 0.0, 0.0), (0.0, 0.0, 0.0))})
    assert bad["counters"]["gated"] == clean["counters"]["gated"] + 1
    assert bad["counters"]["updates"] == clean["counters"]["updates"] - 1
    assert 30.0 in bad["gated_t_s"]
    assert bad["nis"][idx] > 80.0
    # not fused: the run is exactly that of one in which the sample never came
    dropped = run_case(traj60, setting, RunRandom(5), impl="cython", record_hz=1, dropouts=[(30.0, 30.5)])
    assert dropped["counters"]["updates"] == bad["counters"]["updates"]
    assert np.array_equal(bad["err"], dropped["err"])
    assert not np.array_equal(clean["err"], dropped["err"])


def test_aiding_dropout_grows_uncertainty_then_recovers(traj60):
    setting = noise_setting("sensor_fusion")
    rec = run_case(traj60, setting, RunRandom(6), impl="cython", record_hz=10, dropouts=[(20.0, 35.0)])
    t = rec["t_s"]
    sig_pos = np.linalg.norm(rec["sigma"][:, 0:3], axis=1)
    before = sig_pos[np.argmin(np.abs(t - 19.5))]
    during = sig_pos[np.argmin(np.abs(t - 34.9))]
    after = sig_pos[np.argmin(np.abs(t - 45.0))]
    assert during > 5.0 * before                 # 15 s of dead reckoning
    assert after < 2.0 * before                  # back after the aiding returns
    assert rec["counters"]["gated"] <= 1         # the first pose after the gap is not thrown away
    late = t > 40.0
    inside = np.abs(rec["err"][late]) <= 3.0 * rec["sigma"][late]
    assert inside.mean() > 0.97
