"""grading-sweep refuses a bad --set or a missing model before it makes the report folder (exit 2, one line)."""
from harness.cli import main


def test_a_bad_setting_leaves_no_report_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grading-sweep", "--rollouts", "1", "--out", str(out), "--set", "max_legs=0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: setting episode.max_legs") and err.count("\n") == 1, err
    assert not out.exists()


def test_a_missing_model_leaves_no_report_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grading-sweep", "--rollouts", "1", "--out", str(out), "--model-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot load grading agent 'agent1'") and err.count("\n") == 1, err
    assert not out.exists()
