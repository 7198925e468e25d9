"""A staging folder that holds a folder the new file set has no file in (left by an older file set, e.g. a package
``onboard/runtime/clock/`` that became the module ``clock.py``): the deploy removes it, since MicroPython imports
a folder ``x/`` as a namespace package before ``x.py`` and the app would get an empty module; verification
refuses a staging folder that still holds one."""
import os
import re
import shutil

import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy import device as dev
from onboard.deploy.build import BOARDS_DIR, build
from onboard.deploy.deployer import _verify, deploy, make_plan


def _probe(active, slots):
    return {"version": [1, 27, 0], "mpy": 774, "hashlib": True, "block_bytes": 4096, "free_bytes": 10 ** 6,
            "active": active, "stub": "s", "slots": slots}


def test_the_plan_removes_folders_the_new_set_does_not_use_deepest_first():
    _, built = build("pico_rp2040")
    new = {p: h for p, (_, h, _) in built.items()}
    stage = {"files": {"onboard/runtime/clock/__init__.py": "x", "onboard/runtime/clock/sub/a.py": "y"},
             "dirs": ["onboard", "onboard/runtime", "onboard/runtime/clock", "onboard/runtime/clock/sub", "old"]}
    plan = make_plan(built, _probe("app_a", {"app_a": {"files": dict(new, **{".manifest": "m"}), "dirs": []},
                                             "app_b": stage}), "other stub")
    assert plan.staging == "app_b"
    assert plan.removes == ["/app_b/onboard/runtime/clock/__init__.py", "/app_b/onboard/runtime/clock/sub/a.py"]
    assert plan.rmdirs == ["/app_b/onboard/runtime/clock/sub", "/app_b/onboard/runtime/clock", "/app_b/old"]
    assert "onboard/runtime" not in plan.mkdirs and plan.as_dict()["rmdirs"] == plan.rmdirs
    # an active folder holding the new set's files but also a stale folder is not up to date
    act = {"files": dict(new, **{".manifest": "m"}), "dirs": ["onboard", "onboard/runtime", "onboard/runtime/clock"]}
    assert not make_plan(built, _probe("app_a", {"app_a": act, "app_b": None}), "s").up_to_date
    act["dirs"] = act["dirs"][:2] + ["onboard/core", "onboard/estimators"]
    assert make_plan(built, _probe("app_a", {"app_a": act, "app_b": None}), "s").up_to_date
    fresh = make_plan(built, _probe(None, {"app_a": None, "app_b": None}), "s")
    assert fresh.rmdirs == []
    # no stale folder: the board script is the same as without the rmdirs step
    assert dev.prepare_script("app_b", ["/app_b/x.py"], [("/app_a/y.py", "/app_b/y.py")], []) == \
        dev.prepare_script("app_b", ["/app_b/x.py"], [("/app_a/y.py", "/app_b/y.py")])


class _ProbeOnly:
    def __init__(self, probe):
        self.probe = probe

    def exec_json(self, script, error_cls=None):
        return self.probe


def test_verification_refuses_a_staging_folder_with_a_stale_folder():
    _, built = build("pico_rp2040")
    files = {p: h for p, (_, h, _) in built.items()}
    dirs = ["onboard", "onboard/runtime", "onboard/runtime/clock"]
    device = _ProbeOnly({"slots": {"app_b": {"files": files, "dirs": dirs}}})
    with pytest.raises(dev.CopyFailed, match="unexpected: onboard/runtime/clock/"):
        _verify(device, "app_b", built)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")
def test_a_stale_package_folder_does_not_shadow_the_new_module_on_the_board(tmp_path):
    boards = tmp_path / "boards"
    shutil.copytree(os.path.join(BOARDS_DIR, "mp_common"), str(boards / "mp_common"))
    shutil.copytree(os.path.join(BOARDS_DIR, "pico_rp2040"), str(boards / "tb"))
    with VirtualBoard() as board:
        first = deploy("tb", board.port, timeout_s=20, log=lambda m: None, boards_dir=str(boards))
        assert first["switched"] and dev.Device(board.port, timeout_s=20).exec_json(dev.PROBE_SCRIPT)["active"] == "app_a"
        # /app_b as an older file set left it: onboard/runtime/clock was a package there
        dev.Device(board.port, timeout_s=20).run(["exec", (
            "import os\nfor d in ('/app_b', '/app_b/onboard', '/app_b/onboard/runtime', '/app_b/onboard/runtime/clock'):\n"
            " os.mkdir(d)\nf = open('/app_b/onboard/runtime/clock/__init__.py', 'w')\nf.write('OLD = 1')\nf.close()")])
        board_py = boards / "tb" / "board.py"
        board_py.write_text(re.sub(r'VERSION = "[^"]*"', 'VERSION = "2"', board_py.read_text()))
        second = deploy("tb", board.port, timeout_s=20, log=lambda m: None, boards_dir=str(boards))
        assert second["switched"] and second["plan"]["rmdirs"] == ["/app_b/onboard/runtime/clock"]
        probe = dev.Device(board.port, timeout_s=20).exec_json(dev.PROBE_SCRIPT)
        assert probe["active"] == "app_b" and "onboard/runtime/clock" not in probe["slots"]["app_b"]["dirs"]
        ready = dev.soft_reset_and_start(board.port, timeout_s=20)
        assert ready is not None and b"READY,pico_rp2040,2," in ready
