"""Independent jobs in worker processes, results in job order (offline tools: dataset collection, sweeps)."""


def ordered_map(fn, jobs, workers=1):
    """Yield ``fn(job)`` for each of ``jobs`` in their order: in this process when ``workers`` <= 1,
    else in up to ``workers`` forked processes (``fn`` must be a module-level function and each job
    self-contained, e.g. seeded on its own, so the results do not depend on ``workers``)."""
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield fn(job)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(min(int(workers), len(jobs))) as pool:
        yield from pool.imap(fn, jobs)
