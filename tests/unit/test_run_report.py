"""The run report folder (harness.report.run_report): files written whole, and nothing of an earlier run in the
same folder passed off as this run's."""
import json
import os

import pytest

from harness.report.plots import figure, label
from harness.report.run_report import RunReport


def _plot(report, name):
    fig, ax = figure()
    ax.plot([0.0, 1.0], [0.0, 1.0])
    label(ax, name, "time (s)", "x (m)")
    report.save_figure(fig, name)


def test_a_json_file_that_cannot_be_written_leaves_the_previous_file_whole(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.write_json("legs.json", {"a": 1})
    before = (tmp_path / "legs.json").read_text()
    with pytest.raises(ValueError):
        report.write_json("legs.json", {"a": 2, "b": [1.0, float("nan")]})
    assert (tmp_path / "legs.json").read_text() == before
    report.finish({"success": True})
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == []


def test_a_run_cut_short_leaves_no_metrics_of_an_earlier_run_in_its_folder(tmp_path):
    first = RunReport(str(tmp_path), "waypoints", 1, {})
    first.finish({"success": True, "reached": 3})
    second = RunReport(str(tmp_path), "waypoints", 2, {})
    second.abandon("interrupted by SIGINT")
    assert not (tmp_path / "metrics.json").exists()
    assert json.loads((tmp_path / "run.json").read_text())["seed"] == 2


def test_plots_of_an_earlier_run_in_the_same_folder_are_not_kept(tmp_path):
    first = RunReport(str(tmp_path), "grading", 1, {})
    _plot(first, "old_only")
    _plot(first, "both")
    first.finish({"success": True})
    (tmp_path / "mine.png").write_bytes(b"not the report's")          # a file the report did not write stays
    second = RunReport(str(tmp_path), "waypoints", 1, {})
    _plot(second, "both")
    second.finish({"success": True})
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".png")) == ["both.png", "mine.png"]
    assert json.loads((tmp_path / "run.json").read_text())["plots"] == ["both.png"]


def test_a_run_cut_short_whose_log_cannot_be_finished_still_says_how_it_ended(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.log("/t", 1, {"a": 1})
    report.log("/t", 2, {"a": object()})               # not JSON: the log's close raises
    with pytest.raises(TypeError):
        report.abandon("failed: RuntimeError")
    assert json.loads((tmp_path / "run.json").read_text())["ended"] == "failed: RuntimeError"
    assert not (tmp_path / "metrics.json").exists()
