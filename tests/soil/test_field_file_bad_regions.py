"""Users' soil property field files with a bad region or value (harness/scenarios/soil/README.md) are
refused with one ConfigError line naming the file and the problem, and the CLI exits 2 with one line."""
import numpy as np
import pytest

from harness.sim import soil_world as sw
from onboard.core.settings import ConfigError

SMALL = {"size_m": [4.0, 2.0], "cell_m": 0.1}           # 40 x 20 cells
SHAPE = (40, 20)

HEAD = 'soil = "sand"\nrelative_density_pct = 20\n\n[[regions]]\n'
BAD_TOML = {
    "circle_negative_radius": ('shape = "circle"\ncentre_ne_m = [1.0, 1.0]\nradius_m = -1\nsoil = "clay"\n',
                               "radius_m"),
    "circle_zero_radius": ('shape = "circle"\ncentre_ne_m = [1.0, 1.0]\nradius_m = 0\nsoil = "clay"\n',
                           "radius_m"),
    "circle_nan_centre": ('shape = "circle"\ncentre_ne_m = [nan, 1.0]\nradius_m = 1\nsoil = "clay"\n',
                          "centre_ne_m"),
    "rectangle_reversed": ('shape = "rectangle"\nnorth_m = [5, 1]\neast_m = [0, 1]\nsoil = "clay"\n',
                           "north_m .*lo < hi"),
    "rectangle_empty_east": ('shape = "rectangle"\nnorth_m = [0, 1]\neast_m = [1, 1]\nsoil = "clay"\n',
                             "east_m .*lo < hi"),
    "rectangle_inf": ('shape = "rectangle"\nnorth_m = [0, inf]\neast_m = [0, 1]\nsoil = "clay"\n',
                      "north_m"),
    "rectangle_bool": ('shape = "rectangle"\nnorth_m = [0, true]\neast_m = [0, 1]\nsoil = "clay"\n',
                       "north_m"),
    "polygon_nan_vertex": ('shape = "polygon"\nvertices_ne_m = [[0, 0], [1, nan], [2, 0]]\nsoil = "clay"\n',
                           "vertex 2"),
    "polygon_string_vertex": ('shape = "polygon"\nvertices_ne_m = [[0, 0], [1, "a"], [2, 0]]\nsoil = "clay"\n',
                              "vertex 2"),
    "region_sets_nothing": ('shape = "circle"\ncentre_ne_m = [1.0, 1.0]\nradius_m = 1\n', "sets nothing"),
    "region_cohesion_too_high": ('shape = "circle"\ncentre_ne_m = [1.0, 1.0]\nradius_m = 1\nc_pa = 1e300\n',
                                 "cohesion above"),
}


def _build(path):
    return sw.build_fields(dict(SMALL, file=str(path)))


def _refused(path, match):
    with pytest.raises(ConfigError, match=match) as info:
        _build(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    return msg


@pytest.mark.parametrize("name", sorted(BAD_TOML))
def test_a_bad_region_is_refused_with_one_line(tmp_path, name):
    body, match = BAD_TOML[name]
    path = tmp_path / ("%s.toml" % name)
    path.write_text(HEAD + body)
    msg = _refused(path, match)
    assert "region 1" in msg or "cell (" in msg          # a geometry names the region, a value the cell


def test_valid_regions_of_every_shape_still_load(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text(HEAD + 'shape = "rectangle"\nnorth_m = [0.0, 1.0]\neast_m = [0.0, 1.0]\nsoil = "clay"\n\n'
                    '[[regions]]\nshape = "circle"\ncentre_ne_m = [2.0, 1.0]\nradius_m = 0.5\nc_pa = 30000\n\n'
                    '[[regions]]\nshape = "polygon"\nvertices_ne_m = [[3.0, 0.0], [4.0, 0.0], [4.0, 2.0]]\n'
                    'relative_density_pct = 90\n')
    f = _build(path)
    assert f.shape == SHAPE
    assert f.soil[5, 5] == "clay" and f.values["c_pa"][20, 10] == pytest.approx(30e3)


def _npz(tmp_path, name, **arrays):
    path = tmp_path / ("%s.npz" % name)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("key,value,match", [
    ("c_pa", 1e300, "cohesion above 1e\\+06 Pa"),
    ("c_pa", 2e6, "cohesion above"),
    ("ca_pa", 5e6, "adhesion above"),
    ("gamma_npm3", 1e9, "unit weight above 50000 N/m\\^3"),
])
def test_property_values_above_the_bound_are_refused(tmp_path, key, value, match):
    path = _npz(tmp_path, "huge", **{key: np.full(SHAPE, value)})
    msg = _refused(path, match)
    assert "cell (0, 0)" in msg


def test_the_bounds_leave_margin_over_every_preset():
    for soil in sw.SOILS:
        densest = sw.preset_properties(soil, 100.0)
        assert densest["c_pa"] * 10 <= sw.MAX_STRESS_PA and densest["ca_pa"] * 10 <= sw.MAX_STRESS_PA
        assert densest["gamma_npm3"] * 2 <= sw.MAX_UNIT_WEIGHT_NPM3


def test_a_bool_array_is_not_taken_as_numbers(tmp_path):
    path = _npz(tmp_path, "bool", c_pa=np.ones(SHAPE, dtype=bool))
    _refused(path, "c_pa must hold numbers, got dtype bool")
    npy = tmp_path / "c.npy"
    np.save(npy, np.ones(SHAPE, dtype=bool))
    with pytest.raises(ConfigError, match="dtype bool"):
        sw.build_fields(dict(SMALL, field="file", npy_files={"c_pa": str(npy)}))


def test_numeric_arrays_within_the_bounds_still_load(tmp_path):
    path = _npz(tmp_path, "ok", c_pa=np.full(SHAPE, 30e3, dtype=np.int32), gamma_npm3=np.full(SHAPE, 21e3))
    f = _build(path)
    assert f.values["c_pa"][0, 0] == pytest.approx(30e3) and f.values["gamma_npm3"][0, 0] == pytest.approx(21e3)


@pytest.mark.parametrize("name", ["site.toml", "site.npz"])
def test_a_directory_is_named_as_a_directory(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    _refused(d, "is a directory")


@pytest.mark.parametrize("name,text", [
    ("circneg.toml", HEAD + 'shape = "circle"\ncentre_ne_m = [1, 1]\nradius_m = -1\nsoil = "clay"\n'),
    ("dir.toml", None),
    ("bool.npz", None),
])
def test_the_cli_exits_2_with_one_line(tmp_path, capsys, name, text):
    from harness.cli import main
    path = tmp_path / name
    if name == "dir.toml":
        path.mkdir()
    elif name == "bool.npz":
        np.savez(path, c_pa=np.zeros((80, 50), dtype=bool))
    else:
        path.write_text(text)
    rc = main(["run", "soil-homogeneous", "--reduced", "--quiet", "--set", "episode.world.file=%s" % path])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: soil field file") and str(path) in err
    assert {"circneg.toml": "radius_m", "dir.toml": "is a directory", "bool.npz": "dtype bool"}[name] in err
