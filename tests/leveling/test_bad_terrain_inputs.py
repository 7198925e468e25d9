"""Bad terrain inputs of ``level-hill`` and ``level-grid`` through the CLI: one line on stderr and exit 2.

- level-hill settings that pass their own range check (only > 0) but make a grid far too large to allocate
  (``terrain.pixel_m``, ``terrain.min_side_m`` with a file, ``terrain.size_m``) are refused before the grid
  is made (``hill_terrain.MAX_CELLS``). The allocations are guarded here, so that without the limit the test
  fails at once instead of exhausting the machine's memory.
- a ``terrain.file`` that is a directory says so (it used to say "not found").
"""

import numpy as np
import pytest
import scipy.ndimage

from harness.cli import main
from harness.sim import hill_terrain
from tests.leveling.png_files import png_gray8 as _png_gray8

GUARD_CELLS = 4 * hill_terrain.MAX_CELLS if hasattr(hill_terrain, "MAX_CELLS") else 4 * 1024 * 1024


@pytest.fixture
def guarded(monkeypatch):
    """Fail (AssertionError, not exit 2) instead of allocating a huge grid."""
    real_world, real_zoom = hill_terrain.SandWorld, scipy.ndimage.zoom

    def world(config=None, rng=None):
        cells = round(config["size_m"][0] / config["cell_m"]) * round(config["size_m"][1] / config["cell_m"])
        assert cells <= GUARD_CELLS, "a SandWorld of %d cells was allocated" % cells
        return real_world(config, rng)

    def zoom(arr, factors, *args, **kwargs):
        cells = round(arr.shape[0] * factors[0]) * round(arr.shape[1] * factors[1])
        assert cells <= GUARD_CELLS, "a resampled grid of %d cells was allocated" % cells
        return real_zoom(arr, factors, *args, **kwargs)
    monkeypatch.setattr(hill_terrain, "SandWorld", world)
    monkeypatch.setattr(scipy.ndimage, "zoom", zoom)


def _run(tmp_path, capsys, scenario, *args):
    out = tmp_path / "out"
    code = main(["run", scenario, "--quiet", "--out", str(out)] + list(args))
    return code, capsys.readouterr().err, out


def _one_line_exit_2(code, err, out, *needles):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for needle in needles:
        assert needle in err, err
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize("settings,needle", [
    (["terrain.pixel_m=100"], "terrain.pixel_m 100"),
    (["terrain.min_side_m=1000"], "terrain.min_side_m 1000"),
    (["terrain.size_m=[1000,1000]"], "terrain.size_m [1000, 1000]"),
])
def test_a_level_hill_grid_too_large_is_refused_before_it_is_made(tmp_path, capsys, guarded, settings, needle):
    png = tmp_path / "hill.png"
    _png_gray8(png, [[(16 * (r + c)) % 256 for c in range(16)] for r in range(16)])
    args = ["--reduced", "--set", "duration_s=2", "--set", "record.every_s=1"]
    if "size_m" not in needle:
        args += ["--set", "terrain.file=" + str(png)]
    for s in settings:
        args += ["--set", s]
    code, err, out = _run(tmp_path, capsys, "level-hill", *args)
    _one_line_exit_2(code, err, out, needle, "at most 1048576 cells")


def test_the_cell_limit_leaves_margin_over_the_default_field():
    defaults = hill_terrain.DEFAULTS
    cells = round(defaults["size_m"][0] / defaults["cell_m"]) * round(defaults["size_m"][1] / defaults["cell_m"])
    assert cells == 3600 and hill_terrain.MAX_CELLS >= 100 * cells
    hill_terrain.check_grid(1024, 1024, 0.025, "a grid at the limit")
    with pytest.raises(hill_terrain.ConfigError, match="at most 1048576 cells"):
        hill_terrain.check_grid(1025, 1024, 0.025, "a grid over the limit")


@pytest.mark.parametrize("scenario", ["level-grid", "level-hill"])
@pytest.mark.parametrize("name", ["dir.png", "dir.npy"])
def test_a_terrain_file_that_is_a_directory_says_so(tmp_path, capsys, scenario, name):
    folder = tmp_path / name
    folder.mkdir()
    code, err, out = _run(tmp_path, capsys, scenario, "--reduced", "--set", "terrain.file=" + str(folder))
    _one_line_exit_2(code, err, out, str(folder), "is a directory")
    assert "not found" not in err
