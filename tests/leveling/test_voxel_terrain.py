"""Voxel terrain: generators, incremental level statistics, level conditions, users' terrain files."""
import numpy as np
import pytest

from harness.sim.rng import RunRandom
from harness.sim.voxel_terrain import (TerrainError, VoxelTerrain, build_heights, generate, load_heights)
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("kind", ["mounds", "ridges", "pits"])
def test_generators_are_seeded_and_span_the_unit_range(kind):
    a = generate({"kind": kind}, RunRandom(5).stream("terrain"))
    b = generate({"kind": kind}, RunRandom(5).stream("terrain"))
    c = generate({"kind": kind}, RunRandom(6).stream("terrain"))
    assert a.shape == (32, 32) and a.dtype == np.int64
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() == 0 and a.max() == 12
    assert 2.0 < a.mean() < 10.0


def test_generator_settings_checked():
    with pytest.raises(ConfigError, match="terrain setting kind must be one of"):
        generate({"kind": "dunes"}, RunRandom(0).stream("terrain"))
    with pytest.raises(ConfigError, match="min_units, max_units must be in order"):
        generate({"min_units": 5, "max_units": 4}, RunRandom(0).stream("terrain"))


def _recomputed(a, eps):
    d0 = np.abs(np.diff(a, axis=0))
    d1 = np.abs(np.diff(a, axis=1))
    return {"range": int(a.max() - a.min()), "rms": float(a.std()), "total": int(a.sum()),
            "bad_pairs": int((d0 > eps).sum() + (d1 > eps).sum()),
            "max_grad": int(max(d0.max(), d1.max()))}


def test_incremental_statistics_match_a_recount():
    rng = np.random.default_rng(1)
    heights = rng.integers(0, 5, size=(7, 9))
    t = VoxelTerrain(heights, {"condition": "grad", "epsilon_units": 1.0})
    for _ in range(3000):
        idx = int(rng.integers(0, t.n))
        if rng.random() < 0.5 and t.h[idx] > 0:
            t.take(idx)
        else:
            t.put(idx)
        if rng.random() < 0.05:
            a = t.as_array()
            ref = _recomputed(a, 1.0)
            assert t.range_units() == ref["range"] and t.bad_pairs == ref["bad_pairs"]
            assert t.volume == ref["total"] and t.max_gradient_units() == ref["max_grad"]
            assert abs(t.rms_units() - ref["rms"]) < 1e-9
            assert t.hist == {int(v): int(c) for v, c in zip(*np.unique(a, return_counts=True))}


def test_take_from_an_empty_cell_refused():
    t = VoxelTerrain([[0, 1], [2, 3]])
    with pytest.raises(TerrainError, match="cell 0 is empty"):
        t.take(0)
    assert t.volume == 6 and t.takes == 0


@pytest.mark.parametrize("bad", [[[1.5, 2]], [[-1, 2]], [[np.nan, 1]], [1, 2, 3], [["a", "b"]]])
def test_bad_height_grids_refused(bad):
    with pytest.raises(TerrainError):
        VoxelTerrain(bad)


def test_level_conditions():
    flat_but_stepped = np.array([[0, 1, 2, 3]] * 4)
    rng_ = VoxelTerrain(flat_but_stepped, {"condition": "range", "epsilon_units": 1.0})
    grad = VoxelTerrain(flat_but_stepped, {"condition": "grad", "epsilon_units": 1.0})
    rms = VoxelTerrain(flat_but_stepped, {"condition": "rms", "epsilon_units": 1.2})
    assert not rng_.is_level() and grad.is_level() and rms.is_level()      # std = 1.118
    assert not VoxelTerrain(flat_but_stepped, {"condition": "rms", "epsilon_units": 1.0}).is_level()
    two = VoxelTerrain([[4, 5], [5, 4]])
    assert two.is_level()
    two.put(1)
    assert not two.is_level()
    with pytest.raises(ConfigError, match="level setting condition must be one of"):
        VoxelTerrain(flat_but_stepped, {"condition": "flat"})


# ------------------------------------------------------------------ users' files
def _png(path, array, mode):
    from PIL import Image
    img = Image.fromarray(array)
    assert img.mode == mode
    img.save(path)
    return str(path)


def test_png_and_npy_terrains_load(tmp_path):
    gray = np.array([[0, 255], [128, 64]], dtype=np.uint8)
    h = load_heights(_png(tmp_path / "g.png", gray, "L"))
    assert h.tolist() == [[0, 12], [6, 3]]
    assert load_heights(str(tmp_path / "g.png"), height_scale=100).tolist() == [[0, 100], [50, 25]]
    deep = np.array([[0, 65535], [32768, 0]], dtype=np.uint16)
    assert load_heights(_png(tmp_path / "d.png", deep, "I;16"), max_units=20).tolist() == [[0, 20], [10, 0]]
    rgb = np.stack([gray] * 3, axis=-1)
    assert load_heights(_png(tmp_path / "rgb.png", rgb, "RGB")).tolist() == [[0, 12], [6, 3]]
    np.save(tmp_path / "h.npy", np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.4]]))
    assert load_heights(str(tmp_path / "h.npy")).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert load_heights(str(tmp_path / "h.npy"), height_scale=2).tolist() == [[2, 4, 6], [8, 10, 13]]
    built = build_heights({"file": str(tmp_path / "h.npy")}, None)
    assert built.shape == (2, 3)


def _bad_files(tmp_path):
    out = {}
    (tmp_path / "empty.png").write_bytes(b"")
    out["empty.png"] = "is empty"
    (tmp_path / "junk.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    out["junk.png"] = "not a readable PNG"
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY garbage")
    out["junk.npy"] = "not a readable .npy array"
    (tmp_path / "random.npy").write_bytes(np.random.default_rng(0).bytes(256))     # no header: not "pickled data"
    out["random.npy"] = "not a .npy file (no NumPy header)"
    np.save(tmp_path / "flat.npy", np.arange(5.0))
    out["flat.npy"] = "a 2-D height grid is needed, got shape 5"
    np.save(tmp_path / "none.npy", np.zeros((0, 4)))
    out["none.npy"] = "holds no cells"
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [1.0, 1.0]]))
    out["nan.npy"] = "NaN or infinite"
    np.save(tmp_path / "neg.npy", np.array([[1.0, -3.0], [1.0, 1.0]]))
    out["neg.npy"] = "negative heights (lowest value -3)"
    np.save(tmp_path / "tall.npy", np.full((2, 2), 1e12))
    out["tall.npy"] = "its highest value 1e+12 is too tall (at most 2.14748e+09 at this height scale)"
    np.save(tmp_path / "text.npy", np.array([["a", "b"], ["c", "d"]]))
    out["text.npy"] = "a .npy of numbers is needed"
    np.save(tmp_path / "thin.npy", np.ones((1, 9)))
    out["thin.npy"] = "each side must be 2.."
    colour = np.zeros((2, 2, 3), dtype=np.uint8)
    colour[0, 0] = (255, 0, 0)
    _png(tmp_path / "colour.png", colour, "RGB")
    out["colour.png"] = "a colour image"
    (tmp_path / "h.txt").write_text("1 2\n3 4\n")
    out["h.txt"] = "expected a grayscale .png or a .npy"
    out["missing.npy"] = "not found"
    return out


def test_bad_terrain_files_give_one_clear_line(tmp_path):
    for name, needle in _bad_files(tmp_path).items():
        with pytest.raises(ConfigError) as info:
            load_heights(str(tmp_path / name))
        message = str(info.value)
        assert needle in message, (name, message)
        assert "\n" not in message and name in message


def test_a_files_first_row_is_the_north_edge(tmp_path):
    """A heightmap file reads as an image viewer shows it (and as the Sandbox reads its PNG): its first row (a
    PNG's top edge) is the grid's north edge, its first column the west edge; grid row 0 is the south edge."""
    arr = np.array([[9.0, 9.0, 5.0], [0.0, 0.0, 1.0]])          # high along the top edge, one corner marked
    np.save(tmp_path / "north_high.npy", arr)
    png = _png(tmp_path / "north_high.png", np.array([[255, 255, 128], [0, 0, 21]], dtype=np.uint8), "L")
    for path, top in ((str(tmp_path / "north_high.npy"), [9, 9, 5]), (png, [12, 12, 6])):
        grid = build_heights({"file": path}, None)
        assert grid[-1].tolist() == top                         # the northmost row: the file's first
        assert grid[0].tolist() == [0, 0, 1]                    # the southmost: its last
