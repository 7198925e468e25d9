"""level-sweep's memetic figure explains every mark (harness.report.plots.problems): its error bars are the
means' 95 % intervals, in the legend."""
import matplotlib.pyplot as plt

from harness.report import plots
from harness.scenarios.leveling.level_sweep import ALGORITHMS, memetic_figure


def _summary(mean):
    return {"mean": mean, "ci95": [mean - 1.0, mean + 1.0]}


def test_the_memetic_figure_has_nothing_to_guess():
    terrains = ["mounds", "pits"]
    m = {"runs": 2, "terrains": terrains,
         "table": {t: {a: {"units_relocated": _summary(30.0 + k), "cycles": _summary(400.0 + k)}
                       for k, a in enumerate(ALGORITHMS)} for t in terrains}}
    fig = memetic_figure(m)
    try:
        assert plots.problems(fig) == []
        assert "95 % interval of the mean" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)
