"""The leveling scenarios' plots say what they show: ``level-grid``'s roughness plot draws the level threshold
on the panel of the quantity ``level.condition`` tests (range, rms or every 4-neighbour step), labelled with
that test; ``level-hill``'s pitch plot says "n/a" when the run has no pitch error (no samples). The figures
are inspected (lines, labels, titles), not their pixels."""
import numpy as np
import pytest

from harness.cli import main
from harness.report import plots
from harness.scenarios.leveling import level_grid, level_hill


class _Figures:
    """A stand-in for the run report: keeps the figures (still open) by name."""

    def __init__(self):
        self.figures = {}

    def save_figure(self, fig, name):
        self.figures[name] = fig


@pytest.fixture
def report():
    import matplotlib.pyplot as plt
    r = _Figures()
    yield r
    for fig in r.figures.values():
        plt.close(fig)


def _grid_plots(report, condition, eps=2.0):
    trace = {"cycle": [0, 100, 200], "rms_units": [3.0, 2.0, 1.0], "range_units": [9, 6, 4],
             "max_gradient_units": [5, 3, 2]}
    heights = np.arange(16, dtype=np.int64).reshape(4, 4) % 5
    m = {"algorithm": "probabilistic", "agents": 2, "rows": 4, "cols": 4, "cycles": 200,
         "level_condition": condition, "epsilon_units": eps}
    level_grid._plots(report, trace, heights, heights, m)
    return report.figures["roughness"], trace


def _thresholds(fig):
    """[(axes, line)] of every line labelled as the level threshold."""
    return [(ax, line) for ax in fig.get_axes() for line in ax.get_lines()
            if line.get_label().startswith("level threshold")]


def test_grid_grad_condition_draws_the_gradient_threshold(report):
    fig, trace = _grid_plots(report, "grad", eps=2.0)
    assert plots.problems(fig) == []
    found = _thresholds(fig)
    assert len(found) == 1
    ax, line = found[0]
    assert list(line.get_ydata()) == [2.0, 2.0]
    assert "4-neighbour" in line.get_label() and "2 units" in line.get_label()
    # drawn with the quantity it bounds: the largest 4-neighbour step of each sample
    steps = [ln for ln in ax.get_lines() if "4-neighbour step" in ln.get_label()]
    assert len(steps) == 1 and list(steps[0].get_ydata()) == trace["max_gradient_units"]
    assert "4-neighbour" in ax.get_title() and ax.get_ylabel().endswith("(units)")
    assert ax.get_xlabel() == "cycles"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert line.get_label() in legend


@pytest.mark.parametrize("condition,panel,quantity", [("range", 1, "range max - min"), ("rms", 0, "rms height")])
def test_grid_threshold_is_on_the_panel_of_its_condition(report, condition, panel, quantity):
    fig, _ = _grid_plots(report, condition, eps=1.5)
    assert plots.problems(fig) == []
    found = _thresholds(fig)
    assert len(found) == 1
    ax, line = found[0]
    assert ax is fig.get_axes()[panel] and list(line.get_ydata()) == [1.5, 1.5]
    assert condition in line.get_label() and "1.5 units" in line.get_label()
    assert quantity in [ln.get_label() for ln in ax.get_lines()]
    # no gradient curve unless the condition tests it
    assert not any("4-neighbour" in ln.get_label() for a in fig.get_axes() for ln in a.get_lines())


def test_grid_run_records_the_gradient_for_the_grad_condition(tmp_path, capsys, monkeypatch):
    seen = {}
    monkeypatch.setattr(level_grid, "_plots", lambda report, trace, before, after, m: seen.update(trace=trace, m=m))
    code = main(["run", "level-grid", "--reduced", "--quiet", "--seed", "1", "--set", "level.condition=grad",
                 "--set", "level.epsilon_units=2", "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    trace, m = seen["trace"], seen["m"]
    assert len(trace["max_gradient_units"]) == len(trace["cycle"])
    assert trace["max_gradient_units"][0] == m["initial_max_gradient_units"]
    assert trace["max_gradient_units"][-1] == m["final_max_gradient_units"] <= 2


def _hill_plots(report, err_deg):
    trace = {"time_s": [0.0, 5.0], "rms_m": [0.01, 0.008], "max_gradient": [0.3, 0.2]}
    heights = np.zeros((6, 6))
    m = {"robots": 1, "variant": "charge", "duration_s": 5.0, "initial_rms_m": 0.01, "cell_m": 0.05,
         "pitch_error_rms_deg": err_deg}
    pitch = {"time_s": [], "true_deg": [], "est_deg": []}
    level_hill._plots(report, trace, heights, heights, [[(0.1, 0.1)]], pitch, m, 0.5, 5.0)
    return report.figures["pitch"].get_axes()[0].get_title()


def test_hill_pitch_plot_says_na_without_pitch_error(report):
    title = _hill_plots(report, None)
    assert "n/a" in title and "0.00" not in title and "deg" not in title


def test_hill_pitch_plot_shows_the_pitch_error(report):
    assert "0.00 deg" in _hill_plots(report, 0.0)
    assert "1.23 deg" in _hill_plots(report, 1.234)
