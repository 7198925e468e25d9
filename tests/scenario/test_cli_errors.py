"""Bad input on the command lines ends in one line on stderr and exit status 2, never a traceback:
a negative seed, a report folder that cannot be created, a unit file that cannot be written, an
unknown setting. Checked on the real processes (``python -m ...``) and on ``main`` in process."""
import os
import subprocess
import sys

import pytest

from harness import scenarios
from harness.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _one_line_exit_2(argv, tmp_path):
    proc = subprocess.run([sys.executable, "-m"] + argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("not a folder\n")
    return str(path)


def test_a_negative_seed(tmp_path):
    err = _one_line_exit_2(["harness", "run", "waypoints", "--seed", "-1", "--out", str(tmp_path / "out")],
                           tmp_path)
    assert "argument --seed: expected an integer >= 0, got '-1'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["proc", "file", "under_file"])
def test_a_report_folder_that_cannot_be_created(tmp_path, a_file, where):
    out = {"proc": "/proc/harness-test/out", "file": a_file, "under_file": os.path.join(a_file, "out")}[where]
    err = _one_line_exit_2(["harness", "run", "uwb-ranging", "--quiet", "--out", out], tmp_path)
    assert err.startswith("error: cannot write the report folder %s: " % out), err


@pytest.mark.parametrize("where", ["proc", "folder", "under_file"])
def test_a_unit_file_that_cannot_be_written(tmp_path, a_file, where):
    out = {"proc": "/proc/harness-test/onboard-rpi.service", "folder": str(tmp_path),
           "under_file": os.path.join(a_file, "onboard-rpi.service")}[where]
    err = _one_line_exit_2(["boards.rpi", "service-unit", "--workdir", "/opt/onboard", "--output", out], tmp_path)
    assert err.startswith("error: cannot write the unit file %s: " % out), err


def test_the_unit_file_is_written_where_asked(tmp_path):
    from boards.rpi.service import main as rpi_main
    out = tmp_path / "onboard-rpi.service"
    assert rpi_main(["service-unit", "--workdir", "/opt/onboard", "--output", str(out)]) == 0
    assert "WorkingDirectory=/opt/onboard" in out.read_text()


@pytest.mark.parametrize("argv,needle", [
    (["run", "waypoints", "--seed", "x"], "argument --seed: expected an integer >= 0, got 'x'"),
    (["run", "waypoints", "--sed", "1"], "unrecognized arguments: --sed 1"),
    (["run"], "the following arguments are required: scenario"),
    (["nosuch"], "argument command: invalid choice: 'nosuch'"),
])
def test_argument_errors_are_one_line(capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "--help" in err, err


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_a_misspelled_setting_is_one_line_naming_it(tmp_path, capsys, name):
    for setting, key in (("misspelled_key=1", "misspelled_key"), ("some.misspelled_key=1", "some")):
        out = tmp_path / "out"
        assert main(["run", name, "--quiet", "--out", str(out), "--set", setting]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and key in err, err
        assert not out.exists()


def test_the_installed_console_script_runs_from_anywhere(tmp_path):
    """`make setup` installs the project (editable) with its console scripts: `harness` works outside the
    repository too."""
    script = os.path.join(REPO, ".venv", "bin", "harness")
    assert os.path.exists(script), "no %s: run `make setup` (pip install -e . installs the console scripts)" % script
    proc = subprocess.run([script, "--help"], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
    assert proc.returncode == 0, proc.stderr
    assert "run a scenario and write its report folder" in proc.stdout
    proc = subprocess.run([script, "list"], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
    assert proc.returncode == 0 and "swarm-random" in proc.stdout, proc.stderr
