"""Scenario runs as sweep-runner jobs: one scenario, its settings overrides and a seed
(:func:`scenario_job`), run in a worker by :func:`run_scenario`. Apart from :mod:`harness.sweep_runner`
so the runner (which a run's context maps its jobs through) does not import the scenarios."""
from harness import scenarios
from harness.scenarios.context import RunContext
from harness.sweep_runner import Job


def run_scenario(name, overrides, seed, reduced=False):
    """A scenario's metrics for one seed: its settings (``DEFAULTS``, ``REDUCED`` when ``reduced``, then
    ``overrides``) merged and checked as ``harness run`` does (ConfigError for a bad one), run without a
    report folder, the metrics checked against the scenario contract."""
    module, config = scenarios.prepare(name, overrides or {}, reduced=reduced)
    metrics = module.run(config, RunContext(seed))
    scenarios.check_metrics(name, metrics)
    return metrics


def scenario_job(name, overrides=None, seed=1, reduced=False):
    """The job running scenario ``name`` with settings ``overrides`` (a nested dict) for ``seed`` (a whole number
    >= 0, as :class:`harness.sim.rng.RunRandom` takes it; ValueError for a bool, a fraction, NaN or a negative
    number, which would otherwise be cut to another seed's job)."""
    seed = _whole_seed(seed)
    overrides = overrides or {}
    info = {"scenario": name, "settings": overrides, "seed": seed}
    if reduced:
        info["reduced"] = True
    return Job(run_scenario, (name, overrides, seed, bool(reduced)), info=info)


def _whole_seed(seed):
    """``seed`` as an int when it is a whole number >= 0 (an int, a NumPy integer, a float with no fraction)."""
    if not isinstance(seed, bool):
        try:
            if seed >= 0 and seed == int(seed):
                return int(seed)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError("scenario_job: the seed must be a whole number >= 0, got %r" % (seed,))
