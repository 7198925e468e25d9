"""Terrain files from a user through ``python -m harness run level-grid --set terrain.file=PATH``: a 16-bit
grayscale PNG written byte by byte here (not by the reader's library) and a float .npy level with exact
volume on the compiled and the pure inner loop alike; malformed .npy files give one line and exit 2."""
import json
import struct
import zlib

import numpy as np
import pytest

from harness.cli import main
from harness.sim.leveling_grid import KERNEL_MODULES
from onboard.impl import available

NO_CYTHON = "cython" not in available(KERNEL_MODULES)


def _run(tmp_path, capsys, name, *args):
    out = tmp_path / name
    code = main(["run", "level-grid", "--quiet", "--out", str(out), "--set", "max_cycles=400000",
                 "--set", "agents=3"] + list(args))
    return code, capsys.readouterr().err, out


def _png_gray16(path, rows):
    """A 16-bit grayscale PNG (colour type 0, bit depth 16, big-endian samples, filter 0 per row)."""
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + b"".join(struct.pack(">H", v) for v in r) for r in rows)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("impl", ["pure", pytest.param("cython", marks=pytest.mark.skipif(
    NO_CYTHON, reason="cython_ext.leveling not built (make setup)"))])
def test_a_16_bit_png_levels(tmp_path, capsys, impl):
    png = tmp_path / "dune.png"
    # a ridge of 1..5 units at height_scale 5 (white = 65535 = 5 units)
    rows = [[int(65535 * max(0, 5 - abs(c - 4)) / 5) for c in range(9)] for _ in range(7)]
    _png_gray16(png, rows)
    code, err, out = _run(tmp_path, capsys, impl, "--set", "terrain.file=" + str(png),
                          "--set", "terrain.height_scale=5", "--set", "impl=" + impl)
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert (m["rows"], m["cols"]) == (7, 9) and m["initial_range_units"] == 4
    assert m["success"] and m["volume_error"] == 0 and m["final_range_units"] <= 1
    assert m["initial_volume_units"] == m["final_volume_units"] + m["carried_units"]


def test_a_float_npy_in_metres_scaled_to_units_levels(tmp_path, capsys):
    npy = tmp_path / "scan_m.npy"
    yy, xx = np.mgrid[0:8, 0:8]
    np.save(npy, 0.05 * np.maximum(0.0, 3.0 - np.hypot(yy - 3.5, xx - 3.5)))     # metres
    code, err, out = _run(tmp_path, capsys, "npy", "--set", "terrain.file=" + str(npy),
                          "--set", "terrain.height_scale=40")                      # 1 unit = 2.5 cm
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["success"] and m["volume_error"] == 0 and m["initial_range_units"] == 5


def _write(path, data):
    with open(path, "wb") as fh:
        fh.write(data)


@pytest.mark.parametrize("make,needle", [
    (lambda p: _write(p, np.lib.format.MAGIC_PREFIX + b"\x01\x00garbage"), "not a readable .npy"),
    (lambda p: _write(p, b"heights: 1 2 3\n"), "not a .npy file (no NumPy header)"),
    (lambda p: np.save(p, np.arange(12.0)), "2-D height grid"),
    (lambda p: np.save(p, np.array([[1.0, np.nan], [2.0, 3.0]])), "NaN or infinite"),
    (lambda p: np.save(p, np.array([[1.0, -2.0], [2.0, 3.0]])), "negative heights"),
    (lambda p: np.save(p, np.array([["a", "b"], ["c", "d"]])), "numbers is needed"),
    (lambda p: np.save(p, np.zeros((0, 5))), "holds no cells"),
])
def test_malformed_npy_is_one_line_and_exit_2(tmp_path, capsys, make, needle):
    path = tmp_path / "bad.npy"
    make(str(path))
    code, err, out = _run(tmp_path, capsys, "bad", "--set", "terrain.file=" + str(path))
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (out / "metrics.json").exists()
