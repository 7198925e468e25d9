"""Deploy planning and board checks (pure logic, no board)."""
import pytest

from onboard.deploy.build import build
from onboard.deploy.deployer import VersionMismatch, check_board, make_plan


def _probe(active=None, slots=None, version=(1, 27, 0), mpy=774):
    return {"version": list(version), "mpy": mpy, "hashlib": True, "block_bytes": 4096,
            "free_bytes": 10 ** 6, "active": active, "stub": "s",
            "slots": slots or {"app_a": None, "app_b": None}}


def test_build_is_the_import_closure_only():
    manifest, built = build("pico_rp2040")
    assert "onboard/estimators/planar_ekf.py" in built and "onboard/core/linalg.py" in built
    assert "onboard/deploy/build.py" not in built               # CPython-only tool stays home
    assert not any("numpy" in p or "harness" in p for p in built)
    assert "onboard/__init__.py" in built and "main.py" in built and "mp_app.py" in built


def test_plan_reuses_staging_and_active_files():
    _, built = build("pico_rp2040")
    new = {p: h for p, (_, h, _) in built.items()}
    files_a = dict(new, **{".manifest": "m"})
    files_a["board.py"] = "old"
    plan = make_plan(built, _probe("app_a", {"app_a": {"files": files_a, "dirs": []},
                                             "app_b": {"files": {"stale.py": "x"}, "dirs": []}}), "s")
    assert plan.staging == "app_b" and plan.uploads == ["board.py"]
    assert len(plan.local_copies) == len(new) - 1 and plan.removes == ["/app_b/stale.py"]
    same = make_plan(built, _probe("app_a", {"app_a": {"files": dict(new, **{".manifest": "m"}), "dirs": []},
                                             "app_b": None}), "s")
    assert same.up_to_date
    # a folder without .manifest (an interrupted deploy) is never treated as complete
    half = make_plan(built, _probe("app_a", {"app_a": {"files": dict(new), "dirs": []}, "app_b": None}), "s")
    assert not half.up_to_date


def test_version_checks():
    manifest, _ = build("pico_rp2040")
    check_board(manifest, _probe(), mpy=True)
    with pytest.raises(VersionMismatch, match="MicroPython 1.26.0"):
        check_board(manifest, _probe(version=(1, 26, 0)), mpy=True)
    with pytest.raises(VersionMismatch, match="mpy v5"):
        check_board(manifest, _probe(mpy=5), mpy=True)
    check_board(manifest, _probe(version=(1, 26, 0)), mpy=False)   # source deploys run anywhere
    with pytest.raises(VersionMismatch, match="not a MicroPython board"):
        check_board(manifest, _probe(mpy=None), mpy=False)


@pytest.mark.parametrize("argv,needle", [
    (["zzz", "--build-only"], "error: unknown board 'zzz' (MicroPython boards: nano_esp32, pico_rp2040)"),
    (["pico_rp2040", "--build-only", "--boards-dir", "/nonexistent-boards"],
     "error: board folder /nonexistent-boards does not exist"),
    (["pico_rp2040"], "error: --port is required (or --build-only)"),
])
def test_deploy_command_bad_arguments_are_one_line_exit_2(capsys, argv, needle):
    from onboard.deploy.__main__ import main
    assert main(argv) == 2
    assert capsys.readouterr().err == needle + "\n"


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon"])
def test_deploy_command_timeout_must_be_positive_seconds(capsys, timeout):
    from onboard.deploy.__main__ import main
    with pytest.raises(SystemExit) as exc:
        main(["pico_rp2040", "--port", "/dev/null", "--timeout", timeout])
    assert exc.value.code == 2
    assert "argument --timeout: expected a number > 0, got %r" % timeout in capsys.readouterr().err


@pytest.mark.parametrize("content,needle", [
    (None, "cannot read the link key"),
    ("0011", "a link key must have at least 16 bytes, got 2"),
    ("not hex", "a link key must be hex digits"),
    (bytes(range(128, 160)), "the file holds bytes that are not ASCII text"),       # a raw binary key
])
def test_a_bad_link_key_file_is_one_line_exit_2_before_the_board_is_touched(tmp_path, capsys, content, needle):
    """The command link's key file (``--link-key``) missing, too short, not hex or not text: one line, exit 2,
    and the port (which does not exist here) is never opened."""
    from onboard.deploy.__main__ import main
    key = tmp_path / "link.key"
    if isinstance(content, bytes):
        key.write_bytes(content)
    elif content is not None:
        key.write_text(content)
    assert main(["pico_rp2040", "--port", str(tmp_path / "ttyNONE"), "--link-key", str(key)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


@pytest.mark.parametrize("argv,needle", [
    (["uno", "--build-only", "--key-id", "x"], "argument --key-id: invalid int value: 'x'"),
    (["pico_rp2040", "--port", "/dev/null", "--timeout", "0"], "argument --timeout: expected a number > 0, got '0'"),
    (["pico_rp2040", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    ([], "the following arguments are required: board"),
])
def test_deploy_command_argument_errors_are_one_line(capsys, argv, needle):
    """argparse's own errors too: one line (no usage block), exit 2."""
    from onboard.deploy.__main__ import main
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "--help" in err, err


def _broken_board(tmp_path, change):
    """A copy of boards/pico_rp2040 (and the mp_common files it names) with ``change(folder)`` applied."""
    import os
    import shutil
    from onboard.deploy.build import BOARDS_DIR
    for name in ("pico_rp2040", "mp_common"):
        shutil.copytree(os.path.join(BOARDS_DIR, name), str(tmp_path / name))
    change(tmp_path / "pico_rp2040")
    return str(tmp_path)


def _manifest_with(**changes):
    def change(folder):
        import json
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest.update(changes)
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return change


@pytest.mark.parametrize("change,needle", [
    (lambda f: (f / "manifest.json").write_text('{"board": "pico_rp2040",'), "manifest.json: not valid JSON"),
    (lambda f: (f / "manifest.json").write_bytes(bytes(range(128, 256))), "manifest.json: not valid JSON"),
    (_manifest_with(entry=[5]), "manifest.json: entry must be a list of file names, got [5]"),
    (_manifest_with(entry="main.py"), "manifest.json: entry must be a list of file names, got 'main.py'"),
    (_manifest_with(keep_source=5), "manifest.json: keep_source must be a list of file names, got 5"),
    (_manifest_with(flash_bytes="big"), "manifest.json: flash_bytes must be an integer >= 1, got 'big'"),
    (_manifest_with(mpy_march=None), "manifest.json: mpy_march must be a non-empty string, got None"),
    (lambda f: (f / "board.py").write_text((f / "board.py").read_text() + "\ndef (\n"),
     "board.py is not valid Python: invalid syntax (line"),
])
def test_a_broken_board_folder_is_one_line_exit_2(tmp_path, capsys, change, needle):
    """A board folder (--boards-dir: a copy) whose manifest.json is not JSON or holds a key of the wrong type, or
    whose entry file does not parse: one line naming the file, exit 2, nothing built."""
    from onboard.deploy.__main__ import main
    boards = _broken_board(tmp_path, change)
    assert main(["pico_rp2040", "--build-only", "--boards-dir", boards]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "pico_rp2040" / "build").exists()
