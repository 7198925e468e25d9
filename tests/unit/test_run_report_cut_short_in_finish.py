"""A run cut short while its report is being finished (harness.cli's run abandons the report also then): run.json
says how it ended and no metrics.json is left, also one that finish wrote before the interruption."""
import json

import pytest

from harness.report.run_report import RunReport


def test_abandoned_after_finish_wrote_the_metrics_leaves_no_metrics(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.finish({"success": True})
    assert (tmp_path / "metrics.json").exists()
    report.abandon("interrupted by SIGINT")
    assert not (tmp_path / "metrics.json").exists()
    assert json.loads((tmp_path / "run.json").read_text())["ended"] == "interrupted by SIGINT"


def test_a_finish_whose_log_cannot_be_closed_then_abandoned_says_how_it_ended(tmp_path):
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    report.log("/t", 1, {"a": object()})               # not JSON: the log's close raises inside finish
    with pytest.raises(TypeError):
        report.finish({"success": True})
    report.abandon("failed: TypeError")
    assert json.loads((tmp_path / "run.json").read_text())["ended"] == "failed: TypeError"
    assert not (tmp_path / "metrics.json").exists()


def test_saved_plots_leave_no_temporary_files(tmp_path):
    from harness.report.plots import figure, label
    report = RunReport(str(tmp_path), "waypoints", 1, {})
    fig, ax = figure()
    ax.plot([0.0, 1.0], [0.0, 1.0])
    label(ax, "p", "time (s)", "x (m)")
    path = report.save_figure(fig, "p")
    report.finish({"success": True})
    assert path == str(tmp_path / "p.png") and (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.mcap", "metrics.json", "p.png", "run.json"]
