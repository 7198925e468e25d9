"""uwb-ranging's error plot: a case without range samples (nodes out of each other's range) has no point on the
range-error panel, where it was drawn as a mean error of 0 m (the paper's result, better than any case that
ranged)."""
import math

from harness.report.run_report import RunReport
from harness.scenarios import prepare
from harness.scenarios.context import RunContext


class _KeptFigures(RunReport):
    """A run's report folder that keeps the data of the error panel of the figure instead of its PNG."""

    def save_figure(self, fig, name):
        import matplotlib.pyplot as plt
        self.error_points = [list(bars.lines[0].get_ydata()) for bars in fig.axes[1].containers]
        plt.close(fig)


def test_a_case_without_samples_has_no_error_point(tmp_path):
    module, config = prepare("uwb-ranging", {"n_nodes": [2], "modes": ["broadcast"], "area_m": 1e9,
                                             "warmup_s": 0.0, "duration_s": 0.05})
    report = _KeptFigures(str(tmp_path / "run"), "uwb-ranging", 1, config)
    try:
        metrics = module.run(config, RunContext(1, report=report))
    finally:
        report.mcap.close()
    assert metrics["results"]["broadcast"]["2"]["samples"] == 0
    assert metrics["results"]["broadcast"]["2"]["error_mean_m"] is None
    assert len(report.error_points) == 1 and math.isnan(report.error_points[0][0])
