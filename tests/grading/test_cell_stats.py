"""Rollout-bootstrap intervals of the grading sweep's Table I cells (harness.scenarios.grading.cell_stats)."""
import numpy as np
import pytest

from harness.scenarios.grading.cell_stats import paired_gap_interval, success_interval, table1_intervals


def test_fraction_is_the_ratio_of_sums_and_lies_in_its_interval():
    successes, decisions = [3, 0, 5, 2], [4, 2, 6, 5]
    fraction, (low, high) = success_interval(successes, decisions)
    assert fraction == pytest.approx(10 / 17)
    assert low < fraction < high
    assert 0.0 <= low and high <= 1.0


def test_identical_rollouts_leave_no_spread_and_the_interval_is_deterministic():
    assert success_interval([2] * 10, [4] * 10) == (0.5, [0.5, 0.5])
    successes, decisions = [1, 3, 0, 4, 2, 2, 5, 1, 0, 3], [4, 4, 4, 4, 3, 5, 6, 2, 1, 4]
    assert success_interval(successes, decisions) == success_interval(successes, decisions)
    assert success_interval(successes, decisions, seed=1) != success_interval(successes, decisions)


def test_a_rollout_without_decisions_counts_nothing():
    fraction, (low, high) = success_interval([0, 2], [0, 2])
    assert fraction == 1.0 and low == high == 1.0
    assert success_interval([0], [0]) == (0.0, [0.0, 0.0])


def test_the_interval_covers_the_true_rate_about_as_often_as_it_claims():
    """200 seeded simulated cells of 50 rollouts (episodes of 3-14 decisions, each rollout's own success
    rate drawn around 0.6, as agents' episodes differ): the 95 % interval holds 0.6 in 88-99 % of them."""
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(200):
        decisions = rng.integers(3, 15, size=50)
        rates = np.clip(rng.normal(0.6, 0.15, size=50), 0.0, 1.0)
        successes = rng.binomial(decisions, rates)
        _, (low, high) = success_interval(successes, decisions, resamples=1000)
        covered += low <= 0.6 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_pairing_on_the_same_worlds_narrows_the_gap_interval():
    """When the worlds set most of each rollout's rate (a hard world is hard for both agents), the paired
    gap interval is narrower than one from independent resamples of the two cells."""
    rng = np.random.default_rng(3)
    world_rate = rng.uniform(0.2, 0.9, size=50)
    decisions = np.full(50, 10)
    a = rng.binomial(decisions, world_rate)
    b = rng.binomial(decisions, np.clip(world_rate + 0.1, 0.0, 1.0))
    gap, (low, high) = paired_gap_interval((a, decisions), (b, decisions))
    assert gap == pytest.approx((b.sum() - a.sum()) / decisions.sum())
    assert low < gap < high
    _, (a_low, a_high) = success_interval(a, decisions, seed=1)
    _, (b_low, b_high) = success_interval(b, decisions, seed=2)
    independent_width = np.hypot(a_high - a_low, b_high - b_low)
    assert high - low < 0.8 * independent_width
    assert paired_gap_interval((a, decisions), (a, decisions)) == (0.0, [0.0, 0.0])


@pytest.mark.parametrize("successes,decisions", [([1, 2], [2]), ([3], [2]), ([-1], [2]), ([], [])])
def test_inconsistent_counts_are_refused(successes, decisions):
    with pytest.raises(ValueError):
        success_interval(successes, decisions)


def test_paired_cells_need_the_same_rollouts():
    with pytest.raises(ValueError, match="same rollouts"):
        paired_gap_interval(([1, 2], [2, 2]), ([1], [2]))


def test_table1_intervals_from_sweep_cells():
    cell = {"rollout_successes": [1, 2, 3], "rollout_decisions": [3, 3, 3]}
    better = {"rollout_successes": [3, 3, 3], "rollout_decisions": [3, 3, 3]}
    table = table1_intervals({"sensor_fusion": {"agent1": cell, "agent2": better}})
    row = table["scenarios"]["sensor_fusion"]
    assert row["agent1"]["success_fraction"] == pytest.approx(6 / 9)
    assert row["agent2"] == {"success_fraction": 1.0, "ci": [1.0, 1.0]}
    assert row["gap_agent2_minus_agent1"]["value"] == pytest.approx(3 / 9)
    assert table["level"] == 0.95 and "bootstrap" in table["method"]
