"""Independent jobs, results in job order: a thin call into the sweep runner (:mod:`harness.sweep_runner`),
so every study runs on its engines (local processes, or Ray when asked)."""
from harness.sweep_runner import map_ordered


def ordered_map(fn, jobs, workers=1, engine="local", address=None, runner=None):
    """Yield ``fn(job)`` for each of ``jobs`` in their order (``harness.sweep_runner.map_ordered``): in
    this process when ``workers`` <= 1, else up to ``workers`` at a time in worker processes, or on Ray with
    ``engine="ray"`` (``address``: a cluster), or on an open ``runner``. ``fn`` is a module-level function
    and each job self-contained (seeded on its own), so the results do not depend on where they run; the
    first job that raises stops the others and its exception is raised here."""
    yield from map_ordered(fn, [(job,) for job in jobs], workers, engine, address, runner)
