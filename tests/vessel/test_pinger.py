"""Pinger localisation (``onboard.vessel.pinger``, RobotX AAVS III-D-1, figs. 5-8), the simulated hydrophones
(``harness.sim.hydrophones``) and the ``boat-pinger`` acceptance on the reduced seed count."""
import math

import numpy as np
import pytest

from harness.scenarios import prepare
from harness.scenarios.context import RunContext
from harness.sim.hydrophones import Hydrophones
from onboard.core.settings import ConfigError
from onboard.vessel import pinger as pg

C = 1482.0
TRIANGLE = np.array([[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]])


def _exact_tdoa(pinger, poses, body, c=C):
    """Time differences written out here from the geometry (not through the module under test)."""
    out = []
    for n, e, yaw in poses:
        h = np.array([[n + x * math.cos(yaw) - y * math.sin(yaw), e + x * math.sin(yaw) + y * math.cos(yaw)]
                      for x, y in body])
        d = np.hypot(h[:, 0] - pinger[0], h[:, 1] - pinger[1])
        out.append((d[1:] - d[0]) / c)
    return np.array(out)


def _path(count, step_m=3.0, yaw0=0.3, rate=0.15):
    poses, n, e, yaw = [], 0.0, 0.0, yaw0
    for _ in range(count):
        poses.append((n, e, yaw))
        n, e, yaw = n + step_m * math.cos(yaw), e + step_m * math.sin(yaw), yaw + rate
    return np.array(poses)


@pytest.mark.parametrize("body, pings", [(TRIANGLE, 5), (TRIANGLE, 1),
                                         (np.array([[1.5, 0.0], [-1.0, -1.1], [-1.0, 1.1], [0.0, 0.4]]), 3),
                                         (np.array([[0.0, -1.0], [0.0, 1.0]]), 6)])
def test_locator_is_exact_on_noiseless_pings(body, pings):
    pinger = np.array([45.0, -30.0])
    poses = _path(pings)
    fix = pg.locate(_exact_tdoa(pinger, poses, body), poses, body)
    assert math.hypot(fix.north_m - pinger[0], fix.east_m - pinger[1]) < 1e-6
    assert fix.inlier_mask.shape == (pings, body.shape[0] - 1) and fix.inlier_mask.all()
    assert fix.inlier_count == pings * (body.shape[0] - 1) and fix.residual_rms_s < 1e-12


def test_covariance_is_the_inverse_of_the_whitened_normal_matrix_by_finite_differences():
    pinger = np.array([40.0, 25.0])
    poses = _path(4)
    sigma = 3e-6
    fix = pg.locate(_exact_tdoa(pinger, poses, TRIANGLE), poses, TRIANGLE, timing_sigma_s=sigma)
    h = 1e-4
    jac = np.stack([(_exact_tdoa(pinger + dp, poses, TRIANGLE) - _exact_tdoa(pinger - dp, poses, TRIANGLE)) / (2 * h)
                    for dp in (np.array([h, 0.0]), np.array([0.0, h]))], axis=-1)      # pings x pairs x 2
    info = np.zeros((2, 2))
    for J in jac:                                  # per ping, the pairs share hydrophone 0's noise
        R = sigma ** 2 * (np.eye(2) + np.ones((2, 2)))
        info += J.T @ np.linalg.solve(R, J)
    assert np.allclose(fix.covariance_m2, np.linalg.inv(info), rtol=1e-4)


def test_one_ping_misses_and_three_pings_from_other_poses_find_the_pinger():
    """Figs. 7-8: with arrival-time noise one ping misses (its contours are nearly parallel), three pings from
    other poses do not."""
    rng = np.random.default_rng(5)
    pinger = np.array([55.0, 20.0])
    one, three = [], []
    for k in range(20):
        poses = _path(3, yaw0=rng.uniform(-1, 1))
        arrivals = rng.normal(0.0, 2e-6, size=(3, 3))
        tdoa = _exact_tdoa(pinger, poses, TRIANGLE) + arrivals[:, 1:] - arrivals[:, :1]
        f1 = pg.locate(tdoa[:1], poses[:1], TRIANGLE)
        f3 = pg.locate(tdoa, poses, TRIANGLE)
        one.append(math.hypot(f1.north_m - pinger[0], f1.east_m - pinger[1]))
        three.append(math.hypot(f3.north_m - pinger[0], f3.east_m - pinger[1]))
    assert np.median(one) > 5.0
    assert np.median(three) < 0.25 * np.median(one)


def test_ransac_rejects_spoilt_contours_and_equals_least_squares_on_the_rest():
    rng = np.random.default_rng(2)
    pinger = np.array([-35.0, 50.0])
    poses = _path(12, rate=0.2)
    arrivals = rng.normal(0.0, 2e-6, size=(12, 3))
    tdoa = _exact_tdoa(pinger, poses, TRIANGLE) + arrivals[:, 1:] - arrivals[:, :1]
    spoilt = np.zeros_like(tdoa, dtype=bool)
    tdoa[2, :] += 8e-4                       # hydrophone 0 heard a late (multipath) arrival: both contours
    tdoa[7, 1] -= 1.5e-3                     # hydrophone 2 heard a late arrival
    tdoa[9, 0] += 3e-4
    spoilt[2, :] = spoilt[7, 1] = spoilt[9, 0] = True
    fix = pg.locate(tdoa, poses, TRIANGLE)
    assert np.array_equal(fix.inlier_mask, ~spoilt)
    clean = pg.locate(tdoa[~spoilt.any(axis=1)], poses[~spoilt.any(axis=1)], TRIANGLE)
    assert math.hypot(fix.north_m - pinger[0], fix.east_m - pinger[1]) < 0.5
    # the same least-squares solution as from the good pings alone (plus the good contours of pings 7 and 9)
    assert math.hypot(fix.north_m - clean.north_m, fix.east_m - clean.east_m) < 0.2


@pytest.mark.parametrize("args, text", [
    ((np.zeros((1, 1)), [[0, 0, 0]], [[0, -1], [0, 1]]), "at least 2"),
    ((np.zeros((2, 2)), [[0, 0, 0], [1, 0, 0]], [[0, 0], [1, 0], [1, 0]]), "coincide"),
    ((np.zeros((3, 1)), [[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 0], [1, 0]]), "one line"),
    ((np.full((2, 2), np.nan), [[0, 0, 0], [1, 0, 0]], TRIANGLE), "NaN"),
    ((np.zeros((2, 2)), [[0, 0, math.inf], [1, 0, 0]], TRIANGLE), "NaN"),
    ((np.zeros((2, 3)), [[0, 0, 0], [1, 0, 0]], TRIANGLE), "pings x 2"),
    ((np.zeros((2, 2)), [[0, 0], [1, 0]], TRIANGLE), "north_m, east_m, yaw_rad"),
    ((np.zeros((2, 2)), [[0, 0, 0], [1, 0, 0]], [[1.0, 0.0]]), "K >= 2"),
    ((np.full((2, 2), 0.5), [[0, 0, 0], [1, 0, 1]], TRIANGLE), "no two time-difference contours"),
])
def test_degenerate_or_malformed_input_is_one_clear_error(args, text):
    with pytest.raises(pg.LocatorError) as err:
        pg.locate(*args)
    assert text in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_simulated_hydrophones_are_seeded_with_the_stated_noise_and_outliers():
    pose, pinger = (3.0, -2.0, 0.7), (40.0, 10.0)
    exact = _exact_tdoa(np.array(pinger), [pose], TRIANGLE)[0]
    a = Hydrophones(TRIANGLE, {"timing_sigma_s": 4e-6}, np.random.default_rng(1))
    b = Hydrophones(TRIANGLE, {"timing_sigma_s": 4e-6}, np.random.default_rng(1))
    pings = [a.ping(pinger, pose) for _ in range(3000)]
    assert all(np.array_equal(p[0], b.ping(pinger, pose)[0]) for p in pings[:10])
    err = np.array([p[0] for p in pings]) - exact
    assert np.allclose(err.std(axis=0), math.sqrt(2) * 4e-6, rtol=0.06)
    assert abs(np.corrcoef(err.T)[0, 1] - 0.5) < 0.06           # shared reference hydrophone
    assert all(p[1] == -1 for p in pings)
    bad = Hydrophones(TRIANGLE, {"timing_sigma_s": 1e-9, "outlier_prob": 1.0, "outlier_delay_s": [1e-3, 2e-3]},
                      np.random.default_rng(2))
    for _ in range(50):
        tdoa, wrong = bad.ping(pinger, pose)
        late = tdoa - exact
        if wrong == 0:
            assert np.all((late < -1e-3 + 1e-8) & (late > -2e-3 - 1e-8))
        else:
            assert 1e-3 - 1e-8 < late[wrong - 1] < 2e-3 + 1e-8 and abs(late[2 - wrong]) < 1e-8
    with pytest.raises(ConfigError):
        Hydrophones(TRIANGLE, {"timing_sigma": 1e-6})
    with pytest.raises(ConfigError):
        Hydrophones(TRIANGLE, {"outlier_prob": float("nan")})


@pytest.mark.scenario
def test_boat_pinger_acceptance_on_the_reduced_seed_count():
    """Median 3-ping error <= 1/4 of the single-ping error at 30-80 m; 20 % outlier pings still fixed."""
    _module, config = prepare("boat-pinger", reduced=True)
    metrics = _module.run(config, RunContext(3))
    assert metrics["trials"] == 40 and min(r["range_m"][0] for r in metrics["by_range"]) >= 30.0
    assert metrics["ratio_3_to_1"] <= 0.25 and metrics["ratio_ok"]
    assert metrics["outliers"]["outlier_pings_drawn"] > 0.1 * 40 * 10
    assert metrics["outliers"]["median_error_m"] <= 1.0 and metrics["outliers"]["spoilt_rejected_fraction"] > 0.9
    assert metrics["success"] is True
    best = metrics["placement"]["best"]
    assert best["median_error_m"] == min(r["median_error_m"] for r in metrics["placement"]["layouts"])
    assert best["length_m"] <= 4.9 and best["width_m"] <= 2.4


@pytest.mark.scenario
def test_boat_pinger_results_do_not_depend_on_the_workers():
    small = {"trials": 4, "pings": [1, 3], "outlier_pings": 4,
             "placement": {"trials": 2, "lengths_m": [1.0, 2.0], "widths_m": [1.0]}}
    out = []
    for workers in (1, 2):
        module, config = prepare("boat-pinger", dict(small, workers=workers))
        out.append(module.run(config, RunContext(7)))
    assert out[0] == out[1]


@pytest.mark.scenario
def test_boat_pinger_acceptance_counts_the_trials_from_success_min_range_m():
    """Pingers at 5-20 m are judged when the acceptance's range starts below them (the default 30 m would
    count none and leave the ratio empty)."""
    small = {"trials": 4, "pings": [1, 3], "outlier_pings": 4, "range_m": [5.0, 20.0], "success_min_range_m": 5.0,
             "placement": {"trials": 2, "lengths_m": [1.0, 2.0], "widths_m": [1.0]}}
    module, config = prepare("boat-pinger", small)
    metrics = module.run(config, RunContext(7))
    assert metrics["ratio_3_to_1"] is not None and metrics["ratio_3_to_1"] > 0.0


@pytest.mark.parametrize("override, text", [({"pings": [3, 10]}, "must include 1 and 3"),
                                            ({"placement": {"lengths_m": [5.5]}}, "beyond the deck"),
                                            ({"range_m": [5.0, 20.0]}, "ends below success_min_range_m")])
def test_boat_pinger_refuses_settings_that_do_not_fit_together(override, text):
    with pytest.raises(ConfigError, match=text):
        prepare("boat-pinger", override)


@pytest.mark.parametrize("layout, text", [([[1.0, 0.0], [-1.0, 0.0]], "contour"),
                                          ([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]], "one line"),
                                          ([[1.0, 0.0], [1.0, 0.0], [-1.0, 1.0]], "coincide")])
def test_boat_pinger_refuses_a_hydrophone_layout_that_cannot_fix_one_ping(layout, text):
    """pings must include 1: a layout whose single ping gives no fix is bad input (exit 2), not a crash of the
    first trial with a LocatorError traceback."""
    with pytest.raises(ConfigError, match=text):
        prepare("boat-pinger", {"hydrophones_body_m": layout})
