"""What a scenario's ``run(config, ctx)`` receives from the CLI or a test."""
from harness.progress import Progress
from harness.sim.rng import RunRandom


class RunContext:
    """seed and its random streams, the report folder (or None), progress on/off."""

    def __init__(self, seed, report=None, show_progress=False):
        self.seed = int(seed)
        self.random = RunRandom(self.seed)
        self.report = report
        self.show_progress = show_progress

    def progress(self, total_s, desc, unit="sim s"):
        return Progress(total_s, desc, enabled=self.show_progress, unit=unit)

    def timing(self, **figures):
        """Record wall-clock figures (run.json's ``timing``); metrics.json takes outcomes only."""
        if self.report is not None:
            self.report.add_timing(**figures)

    def log(self, topic, time_us, message):
        """Log to the run's MCAP file when there is a report folder."""
        if self.report is not None:
            self.report.log(topic, time_us, message)
