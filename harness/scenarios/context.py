"""What a scenario's ``run(config, ctx)`` receives from the CLI or a test."""
from harness.progress import Progress
from harness.sim.rng import RunRandom


class RunContext:
    """The run's seed and its random streams (``random.stream(name)``), the report folder (a
    :class:`harness.report.RunReport`, or None: nothing is written), progress bars on or off, and the
    run's wall-clock figures (``timings``)."""

    def __init__(self, seed, report=None, show_progress=False):
        self.seed = int(seed)
        self.random = RunRandom(self.seed)
        self.report = report
        self.show_progress = show_progress
        self.timings = {}

    def progress(self, total_s, desc, unit="sim s"):
        """A progress bar to ``total_s`` of simulated time (``update_to(sim_s)``); another ``unit``
        (e.g. "flights") counts whole items."""
        return Progress(total_s, desc, enabled=self.show_progress, unit=unit)

    def map(self, fn, jobs, workers, desc, unit="runs", first=None):
        """``[fn(job) for job in jobs]`` in job order through the sweep runner (``harness.parallel.ordered_map``
        on ``workers``; ``fn`` module-level, each job self-contained, so the results do not depend on where
        they run), with a progress bar over the jobs. ``first``: job 0 runs in this process as ``first(job)``
        instead (e.g. with the run's log), the rest on the workers. The bar is closed however the map ends (a job
        that raises: its exception propagates)."""
        from harness.parallel import ordered_map
        progress = self.progress(len(jobs), desc, unit=unit)
        results = []
        rest = jobs
        try:
            if first is not None and jobs:
                results.append(first(jobs[0]))
                progress.update_to(1)
                rest = jobs[1:]
            for res in ordered_map(fn, rest, workers=workers):
                results.append(res)
                progress.update_to(len(results))
        finally:                            # a job that raises leaves no bar open on the terminal
            progress.close()
        return results

    def timing(self, **figures):
        """Record wall-clock figures (s, ratios, us per tick): they vary from machine to machine, so they
        go to run.json's ``timing`` and ``self.timings``, never to metrics.json."""
        self.timings.update(figures)
        if self.report is not None:
            self.report.add_timing(**figures)

    def log(self, topic, time_us, message):
        """Log ``message`` (a dict, or a sample with ``as_dict()``) on ``topic`` at simulated ``time_us``
        into the run's MCAP file, when there is a report folder."""
        if self.report is not None:
            self.report.log(topic, time_us, message)

    @property
    def mcap(self):
        """The run's :class:`onboard.runtime.mcap_log.McapLog` (Foxglove views: ``log_pose``,
        ``log_scene``, ...), or None without a report folder."""
        return getattr(self.report, "mcap", None)
