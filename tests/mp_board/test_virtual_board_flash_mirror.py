"""The virtual board's flash mirrored to a host folder (``VirtualBoard(fs_dir=...)``) follows the flash file by
file: a change rewrites only the files it changed (each through a temporary file renamed over it), so a board
stopped in the middle of a sync never loses a file the change did not touch, as a board's own flash keeps its
other files when power fails; a temporary file left by such a stop is not a flash file."""
import os

import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy import device as dev

pytestmark = [pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package"),
              pytest.mark.timeout(120)]

OLD_S = 946684800          # 2000-01-01: a file the board rewrites gets a current modification time


def test_a_change_rewrites_only_the_changed_files_in_the_host_folder(tmp_path):
    flash = tmp_path / "flash"
    (flash / "app_a").mkdir(parents=True)
    (flash / "app_a" / "keep.py").write_text("KEEP = 1\n")
    (flash / "gone.txt").write_text("old\n")
    (flash / "stale.txt.vbsync~").write_text("half a write\n")    # left by a board stopped mid-sync
    for p in (flash / "app_a" / "keep.py", flash / "gone.txt"):
        os.utime(p, (OLD_S, OLD_S))
    with VirtualBoard(fs_dir=str(flash)) as board:
        out = dev.Device(board.port, timeout_s=20).exec_json(
            "import os, json\nnames = sorted(os.listdir('/'))\n"
            "f = open('/new.txt', 'w')\nf.write('new')\nf.close()\nos.remove('/gone.txt')\n"
            "print('JSON:' + json.dumps(names))")
    assert os.stat(flash / "app_a" / "keep.py").st_mtime == OLD_S      # untouched: never rewritten
    assert out == ["app_a", "gone.txt"]                      # the temporary file is no flash file
    assert sorted(os.listdir(flash)) == ["app_a", "new.txt"]
    assert (flash / "new.txt").read_text() == "new"
    assert (flash / "app_a" / "keep.py").read_text() == "KEEP = 1\n"


def test_an_unfinished_sync_file_takes_no_flash(tmp_path):
    from harness.sim.virtual_board_cmd import BLOCK_BYTES, check_flash_dir, flash_dir_bytes
    (tmp_path / "main.py").write_text("x")
    (tmp_path / "app.mpy.vbsync~").write_bytes(bytes(200000))
    assert flash_dir_bytes(str(tmp_path)) == BLOCK_BYTES
    assert check_flash_dir(str(tmp_path), 16 * BLOCK_BYTES) == str(tmp_path)
