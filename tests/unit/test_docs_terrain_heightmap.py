"""docs/formats/terrain-heightmap.md: files written as the page describes load as it says (values, which way is
north, PNG intensity), what it says is refused is, and a `.npy` is refused where the page says PNG only."""
import os

import numpy as np
import pytest
from PIL import Image

from harness.scenarios.leveling import sandbox_datagen
from harness.sim import voxel_terrain
from onboard.core.settings import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "formats", "terrain-heightmap.md")


def _doc():
    with open(DOC, encoding="utf-8") as fh:
        return " ".join(fh.read().split())


def test_npy_holds_units_and_its_first_row_is_north(tmp_path):
    heights = np.array([[5, 0, 0], [0, 0, 0], [0, 0, 2]])
    path = str(tmp_path / "my_heights.npy")
    np.save(path, heights)
    assert voxel_terrain.load_heights(path).tolist() == heights.tolist()
    grid = voxel_terrain.build_heights({"file": path}, None)     # level-grid: row 0 is the south edge
    assert grid[-1, 0] == 5 and grid[0, 2] == 2


def test_png_white_is_max_units_or_height_scale(tmp_path):
    pixels = np.array([[255, 0], [0, 128]], dtype=np.uint8)
    path = str(tmp_path / "scan.png")
    Image.fromarray(pixels, mode="L").save(path)
    assert voxel_terrain.load_heights(path, None, 12).tolist() == [[12, 0], [0, 6]]
    assert voxel_terrain.load_heights(path, 10.0).tolist() == [[10, 0], [0, 5]]
    wide = np.array([[65535, 0], [0, 0]], dtype=np.uint16)
    path16 = str(tmp_path / "scan16.png")
    Image.fromarray(wide).save(path16)
    assert voxel_terrain.load_heights(path16, 10.0).tolist() == [[10, 0], [0, 0]]


@pytest.mark.parametrize("values, needle", [
    (np.array([[1.0, np.nan], [0.0, 0.0]]), "NaN or infinite"),
    (np.array([[1.0, -1.0], [0.0, 0.0]]), "negative"),
    (np.ones(4), "2-D"),
    (np.ones((1, 4)), "each side must be 2.."),
])
def test_refused_npy_files_are_one_line(tmp_path, values, needle):
    path = str(tmp_path / "bad.npy")
    np.save(path, values)
    with pytest.raises(ConfigError) as info:
        voxel_terrain.load_heights(path)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_colour_png_is_refused(tmp_path):
    rgb = np.zeros((4, 4, 3), dtype=np.uint8)
    rgb[0, 0] = (255, 0, 0)
    path = str(tmp_path / "colour.png")
    Image.fromarray(rgb, mode="RGB").save(path)
    with pytest.raises(ConfigError, match="colour"):
        voxel_terrain.load_heights(path)


def test_sandbox_terrain_b_takes_a_png_only(tmp_path):
    assert "a `.npy` is refused" in _doc()
    path = str(tmp_path / "unseen.npy")
    np.save(path, np.ones((64, 64)))
    config = {"config": {"file": None}, "terrain_b": {"file": path, "wavelength_m": 0.3}}
    with pytest.raises(ConfigError, match="PNG"):
        sandbox_datagen._terrain_b(config, sandbox_datagen._experiment(config), None)
