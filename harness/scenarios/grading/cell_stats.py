"""Rollout-bootstrap intervals for the grading sweep's Table I cells (pure math, no I/O).

A Table I cell is a ratio of sums: successful decisions over decisions, summed over the cell's rollouts.
The decisions of one episode are not independent (one world, one held aiding error, one agent's run of
legs), so the interval resamples whole rollouts with replacement (a cluster bootstrap, percentile
interval), not single decisions. Both agents of a scenario run the same worlds (rollout r is world seed
``seed * 1000 + r`` for either), so the agent2 - agent1 gap resamples the same rollout indices for both
(paired). The intervals cover the rollout draw only: they say nothing of how far another training run
of the same recipe would move a cell (docs/experiments/grading.md measures that separately).

Not in ag2u (its Table I gives point values); numpy's Generator is seeded, so the intervals are
deterministic for a given ``seed``.
"""
import numpy as np

LEVEL = 0.95            # two-sided coverage of every interval
RESAMPLES = 4000        # bootstrap resamples of the rollouts
SEED = 0                # seed of the resampling (the intervals are deterministic)


def _as_counts(successes, decisions):
    succ = np.asarray(successes, dtype=float)
    dec = np.asarray(decisions, dtype=float)
    if succ.ndim != 1 or succ.shape != dec.shape or succ.size == 0:
        raise ValueError("need one success count and one decision count per rollout, got %s and %s"
                         % (succ.shape, dec.shape))
    if np.any(dec < 0) or np.any(succ < 0) or np.any(succ > dec):
        raise ValueError("per-rollout counts need 0 <= successes <= decisions")
    return succ, dec


def _ratio(succ_sums, dec_sums):
    """Ratio of sums per resample; NaN for a resample without any decision (it has no fraction)."""
    return np.divide(succ_sums, dec_sums, out=np.full_like(succ_sums, np.nan), where=dec_sums > 0)


def _percentiles(samples, level, fallback):
    """Percentile interval of the resamples that have a value; ``[fallback] * 2`` when none has."""
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return [fallback, fallback]
    tail = 50.0 * (1.0 - level)
    lo, hi = np.percentile(samples, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def _fraction(succ, dec):
    """The cell's fraction, 0 when it has no decision (as run_cell reports it)."""
    return float(succ.sum() / dec.sum()) if dec.sum() > 0 else 0.0


def _resample_indices(n, resamples, seed):
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _resampled_fractions(succ, dec, idx):
    """The cell's fraction in each resample (rows of rollout indices ``idx``)."""
    return _ratio(succ[idx].sum(axis=1), dec[idx].sum(axis=1))


def success_interval(successes, decisions, level=LEVEL, resamples=RESAMPLES, seed=SEED):
    """(fraction, [low, high]): the cell's successful-decision fraction (sum of successes / sum of
    decisions over rollouts) and its ``level`` percentile interval over rollout resamples."""
    succ, dec = _as_counts(successes, decisions)
    idx = _resample_indices(succ.size, resamples, seed)
    fraction = _fraction(succ, dec)
    return fraction, _percentiles(_resampled_fractions(succ, dec, idx), level, fraction)


def paired_gap_interval(cell_a, cell_b, level=LEVEL, resamples=RESAMPLES, seed=SEED):
    """(gap, [low, high]) of fraction(b) - fraction(a), in fractions (x100 for percentage points), with
    the same rollout indices resampled for both cells. ``cell_a``/``cell_b``: (successes, decisions)
    per rollout, in the same rollout (world) order."""
    succ_a, dec_a = _as_counts(*cell_a)
    succ_b, dec_b = _as_counts(*cell_b)
    if succ_a.size != succ_b.size:
        raise ValueError("paired cells need the same rollouts, got %d and %d" % (succ_a.size, succ_b.size))
    idx = _resample_indices(succ_a.size, resamples, seed)
    gap = _fraction(succ_b, dec_b) - _fraction(succ_a, dec_a)
    samples = _resampled_fractions(succ_b, dec_b, idx) - _resampled_fractions(succ_a, dec_a, idx)
    return gap, _percentiles(samples, level, gap)


def table1_intervals(cells, agents=("agent1", "agent2"), level=LEVEL, resamples=RESAMPLES, seed=SEED):
    """Table I with intervals from the sweep's cells ``{scenario: {agent: cell}}``, each cell carrying
    ``rollout_successes`` and ``rollout_decisions`` (run_cell). Returns the method fields and
    ``"scenarios": {scenario: {agent: {"success_fraction", "ci"}, "gap_agent2_minus_agent1": {"value",
    "ci"}}}`` (fractions; the gap's x100 is percentage points)."""
    first, second = agents
    scenarios = {}
    for scenario, row in cells.items():
        counts = {a: (row[a]["rollout_successes"], row[a]["rollout_decisions"]) for a in agents}
        entry = {}
        for agent in agents:
            fraction, ci = success_interval(*counts[agent], level=level, resamples=resamples, seed=seed)
            entry[agent] = {"success_fraction": fraction, "ci": ci}
        gap, ci = paired_gap_interval(counts[first], counts[second], level=level, resamples=resamples, seed=seed)
        entry["gap_%s_minus_%s" % (second, first)] = {"value": gap, "ci": ci}
        scenarios[scenario] = entry
    return {"level": level, "resamples": resamples, "seed": seed, "scenarios": scenarios,
            "method": "percentile bootstrap over rollouts (whole episodes), paired across agents on the same worlds"}
