"""VirtualBoard.start() that fails leaves no pseudo-terminal open (``with VirtualBoard()`` calls no
__exit__ when __enter__ raises), and a relative or pathlib ``fs_dir`` is the caller's folder, not one under
the repository (where the board process runs and rewrites its flash folder). No node needed."""
import os
import pathlib
import subprocess

import pytest

import harness.sim.virtual_board as vb


def _open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_failed_start_closes_its_pty(monkeypatch):
    monkeypatch.setattr(vb, "available", lambda: True)

    def no_node(*_args, **_kwargs):
        raise FileNotFoundError("node")

    monkeypatch.setattr(subprocess, "Popen", no_node)
    before = _open_fds()
    board = vb.VirtualBoard()
    with pytest.raises(FileNotFoundError):
        with board:
            pass
    assert _open_fds() - before == set()
    assert board.master_fd is None and board.slave_fd is None and board.proc is None


@pytest.mark.parametrize("as_path", [False, True])
def test_relative_flash_dir_is_the_callers(tmp_path, monkeypatch, as_path):
    monkeypatch.chdir(tmp_path)
    board = vb.VirtualBoard(fs_dir=pathlib.Path("flash") if as_path else "flash")
    assert board.config["fs_dir"] == str(tmp_path / "flash")
    assert vb.VirtualBoard().config["fs_dir"] is None
