"""harness.report.run_report: a wall-clock figure that is no finite number (or a NumPy scalar) is written to run.json
as null (as its number), so a finished run keeps its metrics and a run cut short still says how it ended; metrics
JSON cannot hold are refused before run.json says "finished"; a plot saved again is listed once."""
import json

import numpy as np
import pytest

from harness.report.run_report import RunReport


@pytest.mark.parametrize("figure", [float("inf"), float("nan"), -float("inf")])
def test_a_non_finite_timing_figure_is_null_and_the_metrics_are_written(tmp_path, figure):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.add_timing(speed=figure, per_case={"a": [1.5, figure]})
    report.finish({"success": True})
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["ended"] == "finished"
    assert run["timing"] == {"speed": None, "per_case": {"a": [1.5, None]}}
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"success": True}


def test_a_run_with_a_non_finite_timing_figure_cut_short_says_how_it_ended(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.add_timing(speed=float("inf"))
    report.abandon("interrupted by SIGINT")
    assert json.loads((tmp_path / "run.json").read_text())["ended"] == "interrupted by SIGINT"


def test_numpy_timing_figures_are_written_as_their_numbers(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.add_timing(episodes=np.int64(3), wall_s=np.float32(0.5), ok=np.bool_(True), cases=(1, 2))
    report.finish({"success": True})
    assert json.loads((tmp_path / "run.json").read_text())["timing"] == {"cases": [1, 2], "episodes": 3,
                                                                         "ok": True, "wall_s": 0.5}


def test_finite_timing_figures_are_written_as_before(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    figures = {"wall_s": 0.1 + 0.2, "runs": 4, "rate": {"1": 2.5, "b": [1, 2.25, None]}, "name": "x", "none": None}
    report.add_timing(**figures)
    report.finish({"success": True})
    text = (tmp_path / "run.json").read_text()
    assert json.loads(text)["timing"] == figures
    assert json.dumps(figures, indent=2, sort_keys=True).replace("\n", "\n  ") in text


@pytest.mark.parametrize("metrics, error", [({"success": True, "x": float("nan")}, ValueError),
                                            ({"success": True, "x": float("inf")}, ValueError),
                                            ({"success": True, 1: 2}, TypeError),
                                            ({"success": True, "x": object()}, TypeError)])
def test_metrics_json_cannot_hold_are_refused_before_run_json_says_finished(tmp_path, metrics, error):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    with pytest.raises(error):
        report.finish(metrics)
    assert not (tmp_path / "run.json").exists() and not (tmp_path / "metrics.json").exists()
    report.abandon("failed: %s" % error.__name__)
    assert json.loads((tmp_path / "run.json").read_text())["ended"] == "failed: %s" % error.__name__
    assert not (tmp_path / "metrics.json").exists()


def test_a_plot_saved_twice_under_one_name_is_listed_once(tmp_path):
    from harness.report.plots import figure, label
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    for name in ("a", "b", "a"):
        fig, ax = figure()
        ax.plot([0.0, 1.0], [0.0, 1.0])
        label(ax, name, "time (s)", "x (m)")
        report.save_figure(fig, name)
    report.finish({"success": True})
    assert json.loads((tmp_path / "run.json").read_text())["plots"] == ["a.png", "b.png"]
    assert report.plots == ["a.png", "b.png"]
