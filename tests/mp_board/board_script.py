"""Run a script against board files (boards/ modules and the virtual board's ``machine`` shim) in CPython or in
real MicroPython 1.27 (the WebAssembly build under node), and read back the one JSON line it prints."""
import json
import os
import subprocess
import sys

import pytest

from harness.sim import micropython as mpy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# script lines (after ``import board``): ``b``, a copy of the board module's constants with the command link
# unsigned, for scripts that drive ``mp_app`` with bare link lines
UNSIGNED_BOARD = """
class Board:
    pass


b = Board()
for k in dir(board):
    if k.isupper():
        setattr(b, k, getattr(board, k))
b.LINK_SIGNING = "off"
"""

def _read(rel):
    with open(os.path.join(REPO, rel)) as fh:
        return fh.read()


def _result(stdout, marker):
    lines = [ln for ln in stdout.splitlines() if ln.startswith(marker + " ")]
    assert lines, stdout[-2000:]
    return json.loads(lines[-1][len(marker) + 1:])


def run_board_script(interpreter, script, board_files, marker, tmp_path):
    """``script`` run with ``board_files`` ({module file name: repository path}) importable and the onboard
    package, in ``interpreter`` ("cpython" or "micropython"); -> the JSON of its last line ``MARKER {...}``."""
    if interpreter == "micropython":
        if not mpy.available():
            pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
        files = mpy.onboard_files()
        for name, rel in board_files.items():
            files[mpy.MP_LIB_DIR + "/" + name] = _read(rel)
        return _result(mpy.run_micropython(script, files), marker)
    lib = tmp_path / "lib"
    lib.mkdir()
    for name, rel in board_files.items():
        (lib / name).write_text(_read(rel))
    (lib / "micropython.py").write_text("def const(x):\n    return x\n")     # MicroPython's built-in module
    (tmp_path / "run.py").write_text(script)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), REPO]))
    proc = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return _result(proc.stdout, marker)
