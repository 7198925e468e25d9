"""Bad input on the command lines ends in one line on stderr and exit status 2, never a traceback:
a negative seed, a report folder that cannot be created, a unit file that cannot be written, an
unknown setting. Checked on the real processes (``python -m ...``) and on ``main`` in process."""
import os
import shutil
import subprocess
import sys
import tempfile

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


@pytest.mark.parametrize("sets,needle", [
    (["aiding=3", "aiding.pos_sigma_m=0.2"], "--set aiding.pos_sigma_m=0.2: aiding is 3, not a table of settings"),
    (["max_duration_s=3", "max_duration_s.x.y=1"], "--set max_duration_s.x.y=1: max_duration_s is 3, not a table"),
])
def test_a_set_into_a_setting_that_is_no_table_is_one_line(tmp_path, capsys, sets, needle):
    out = tmp_path / "out"
    argv = ["run", "waypoints", "--quiet", "--out", str(out)]
    for item in sets:
        argv += ["--set", item]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
    assert not out.exists()


@pytest.mark.parametrize("text,argv_of", [
    ('{"scenario": "waypoints", "seed_offset": 1, "scenario": "ins-eskf"}', lambda p: [p]),
    ('{"aiding": {"pos_sigma_m": 0.2, "pos_sigma_m": 0.3}}', lambda p: ["waypoints", "--config", p]),
])
def test_a_json_settings_file_with_a_key_given_twice_is_one_line(tmp_path, capsys, text, argv_of):
    """JSON keeps the last of two equal keys silently (TOML refuses them): a settings file is refused instead."""
    path = tmp_path / "settings.json"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["run"] + argv_of(str(path)) + ["--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "appears twice in one object" in err and str(path) in err, err
    assert not out.exists()


@pytest.mark.parametrize("how", ["scenario", "config"])
def test_a_settings_file_that_cannot_be_read_is_one_line(how):
    """A scenario file or --config file without read permission: one line naming it. As root permissions do not
    bind, so the run drops to the unprivileged user ``nobody`` once it has imported what it needs (root's Python
    installation may not be readable to that user), in a folder that user can enter."""
    top = tempfile.mkdtemp(prefix="settings_unreadable_")
    try:
        os.chmod(top, 0o755)
        path = os.path.join(top, "settings.toml")
        with open(path, "w") as fh:
            fh.write('scenario = "waypoints"\n' if how == "scenario" else "max_duration_s = 3\n")
        os.chmod(path, 0)
        argv = [path] if how == "scenario" else ["waypoints", "--config", path]
        drop = "os.setgid(65534); os.setuid(65534)\n" if os.geteuid() == 0 else ""
        script = ("import os, sys\nfrom harness.cli import build_parser, _run_command\n"
                  "import harness.scenarios.waypoints\n"
                  "args = build_parser().parse_args(['run'] + %r + ['--quiet', '--out', %r])\n"
                  % (argv, os.path.join(top, "out")) + drop + "sys.exit(_run_command(args))\n")
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        assert proc.returncode == 2, proc.stderr[-800:]
        assert proc.stderr == "error: cannot read %s: Permission denied\n" % path, proc.stderr
        assert not os.path.exists(os.path.join(top, "out"))
    finally:
        shutil.rmtree(top)


@pytest.mark.parametrize("board", ["boards.rpi", "boards.wamv"])
@pytest.mark.parametrize("args,needle", [
    (["run", "--duration-s", "0"], "argument --duration-s: expected a number > 0, got '0'"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    ([], "the following arguments are required: command"),
])
def test_board_service_argument_errors_are_one_line(tmp_path, board, args, needle):
    err = _one_line_exit_2([board] + args, tmp_path)
    assert needle in err and "--help" in err, err


@pytest.mark.parametrize("board", ["boards.rpi", "boards.wamv"])
@pytest.mark.parametrize("option,value,needle", [
    ("--workdir", "/opt/onboard\nExecStartPre=/bin/sh", "workdir must be an absolute path without control characters"),
    ("--user", "", "user must be a user name (no spaces or control characters), got ''"),
    ("--user", "pi\nUser=root", "user must be a user name (no spaces or control characters)"),
    ("--python", "/usr/bin/my python", "python must be an absolute path without spaces or control characters"),
])
def test_a_unit_value_that_would_break_the_unit_is_one_line(tmp_path, board, option, value, needle):
    """A value that would end its line of the unit (a newline: another directive), split ExecStart (a space) or
    leave User= empty (systemd then runs the service as root) is refused; nothing is written."""
    out = tmp_path / "unit.service"
    err = _one_line_exit_2([board, "service-unit", "--workdir", "/opt/onboard", option, value, "--output", str(out)],
                           tmp_path)
    assert err.startswith("error: ") and needle in err, err
    assert not out.exists()


@pytest.mark.parametrize("board", ["boards.rpi", "boards.wamv"])
@pytest.mark.parametrize("text", ["null", "[1]", "3"])
def test_a_config_file_whose_top_level_is_no_table_is_one_line(tmp_path, board, text):
    path = tmp_path / "cfg.json"
    path.write_text(text)
    err = _one_line_exit_2([board, "run", "--config", str(path), "--duration-s", "0.1"], tmp_path)
    assert "must be a table of settings" in err and str(path) in err, err


@pytest.mark.parametrize("board", ["boards.rpi", "boards.wamv"])
def test_a_json_config_with_a_key_given_twice_is_one_line(tmp_path, board):
    """JSON would keep the second ``log`` table silently (TOML refuses a repeated key): refused, the file named."""
    path = tmp_path / "cfg.json"
    path.write_text('{"log": {"dir": "/tmp/a"}, "log": {"dir": "/tmp/b"}}')
    err = _one_line_exit_2([board, "run", "--config", str(path), "--duration-s", "0.1"], tmp_path)
    assert "key 'log' appears twice in one object" in err and str(path) in err, err
