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
