"""Run reports: a folder with metrics.json, PNG plots and an MCAP log Foxglove opens."""
from harness.report.run_report import RunReport  # noqa: F401
