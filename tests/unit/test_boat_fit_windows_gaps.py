"""A boat log with a pause in its recording (rows 30 s apart in a 10 Hz log): no fitting window steps over the
pause. Before, the window around it was kept, 34.9 s long instead of 5 s, its rollout taking one 30 s model
step under thrusts nobody logged, and its residuals dominated the MSE; now it is dropped and the next window
starts at the first fix after the pause. A log without a pause gives the same windows as before.
time_split refuses a test fraction outside [0, 1] (1.5 gave a train and a test set of half the windows each)."""
import numpy as np
import pytest

from harness.training.boat_fit.fit_windows import GAP_INTERVALS, make_windows, time_split


def _log(rows=400, pause_after=None, pause_s=30.0, jitter=0.0):
    i = np.arange(rows, dtype=float)
    t = i * 0.1 + np.random.default_rng(2).uniform(-jitter, jitter, rows)
    if pause_after is not None:
        t[pause_after + 1:] += pause_s
    fix = (np.arange(rows) % 2) == 0
    return {"time_s": t, "thrust_left_n": 100.0 + i, "thrust_right_n": 90.0 + i,
            "gnss_north_m": np.where(fix, 0.01 * i, np.nan), "gnss_east_m": np.where(fix, -0.02 * i, np.nan),
            "yaw_rad": 0.001 * i, "yaw_rate_radps": np.full(rows, 0.01)}


@pytest.mark.parametrize("pause_after", [224, 200, 175])
def test_no_window_steps_over_a_pause(pause_after):
    w = make_windows(_log(pause_after=pause_after))
    steps = w["dt_s"][:, :-1]                          # the intervals the rollouts step over
    assert steps.max() < 0.2
    assert np.allclose(steps.sum(axis=1), 4.9)         # every window 5 s (50 rows of 0.1 s)
    after = w["start"][w["start"] > pause_after]
    assert len(after) and after[0] == pause_after + 1 + (pause_after + 1) % 2   # the first fix after the pause
    assert len(w["start"]) == 7


def test_a_log_without_a_pause_keeps_its_windows():
    w = make_windows(_log())
    assert w["start"].tolist() == [0, 50, 100, 150, 200, 250, 300, 350]
    jittery = make_windows(_log(jitter=0.02))          # sampling jitter is not a pause
    assert jittery["start"].tolist() == w["start"].tolist()


def test_a_pause_shorter_than_the_gap_threshold_is_stepped_over():
    w = make_windows(_log(pause_after=224, pause_s=0.1 * (GAP_INTERVALS - 2)))
    assert w["start"].tolist() == [0, 50, 100, 150, 200, 250, 300, 350]


@pytest.mark.parametrize("fraction", [1.5, -0.2, float("nan")])
def test_time_split_refuses_a_fraction_outside_0_1(fraction):
    # before: 1.5 of 8 windows "held back" 12, slicing order[:-4] and order[-4:] (4 and 4 windows)
    with pytest.raises(ValueError, match="test_fraction must lie in"):
        time_split(make_windows(_log()), fraction)


def test_time_split_holds_back_the_last_windows():
    w = make_windows(_log())
    for fraction, n_test in ((0.0, 0), (0.25, 2), (1.0, 8)):
        train, test = time_split(w, fraction)
        assert len(test["start"]) == n_test and len(train["start"]) == 8 - n_test
        assert sorted(train["start"].tolist() + test["start"].tolist()) == w["start"].tolist()
