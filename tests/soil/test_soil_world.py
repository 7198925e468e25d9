"""harness.sim.soil_world's truth property fields: presets over relative density, the field builders, and
users' files (TOML regions, .npy per property) with one-line errors for malformed fields."""
import math

import numpy as np
import pytest

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from onboard.core.settings import ConfigError

SMALL = {"size_m": [4.0, 2.0], "cell_m": 0.1}


def _cfg(**kw):
    out = dict(SMALL)
    out.update(kw)
    return out


def test_presets_rise_with_relative_density():
    for soil in sw.SOILS:
        lo, hi = sw.preset_properties(soil, 0.0), sw.preset_properties(soil, 100.0)
        mid = sw.preset_properties(soil, 50.0)
        assert hi["phi_rad"] > mid["phi_rad"] > lo["phi_rad"]
        assert hi["gamma_npm3"] > lo["gamma_npm3"]
        assert mid["delta_rad"] == pytest.approx(2.0 / 3.0 * mid["phi_rad"])
        assert hi["c_pa"] >= lo["c_pa"] >= 0.0
    clay = sw.preset_properties("clay", 100.0)
    assert clay["c_pa"] == pytest.approx(30e3) and clay["ca_pa"] == pytest.approx(15e3)
    assert math.degrees(sw.preset_properties("loam", 0.0)["phi_rad"]) == pytest.approx(28.0)
    assert sw.preset_properties("sand", 70.0)["ca_pa"] == 0.0
    assert sw.loose_properties("clay")["unit_weight_npm3"] == pytest.approx(12e3)
    with pytest.raises(ConfigError, match="unknown soil"):
        sw.preset_properties("peat", 10.0)


def test_uniform_and_strip_fields():
    f = sw.build_fields(_cfg(soil="clay", relative_density_pct=30.0))
    assert f.shape == (40, 20)
    assert np.all(f.values["c_pa"] == f.values["c_pa"][0, 0])
    assert f.theta_u(3, 4) == pytest.approx([12.5e3, math.radians(23.0), 16.2e3, 6.25e3, math.radians(23.0) * 2 / 3])
    s = sw.build_fields(_cfg(soil="clay", relative_density_pct=10.0, field="strip",
                             strip={"axis": "north", "from_m": 1.5, "to_m": 2.5, "relative_density_pct": 80.0}))
    inside = s.values["c_pa"][15:25, :]
    assert np.all(inside == pytest.approx(25e3)) and np.all(s.values["c_pa"][:15] == pytest.approx(7.5e3))
    assert np.all(s.values["c_pa"][25:] == pytest.approx(7.5e3))
    mask = np.zeros(s.shape, dtype=bool)
    mask[14:16, :] = True
    assert s.mean_theta_u(mask)[0] == pytest.approx(0.5 * (25e3 + 7.5e3))


def test_patches_and_random_fields_are_seeded():
    a = sw.build_fields(_cfg(field="patches"), RunRandom(3).stream("soil_fields"))
    b = sw.build_fields(_cfg(field="patches"), RunRandom(3).stream("soil_fields"))
    assert np.array_equal(a.values["phi_rad"], b.values["phi_rad"])
    r = sw.build_fields(_cfg(field="random", random={"correlation_m": 0.5, "relative_density_pct": [20.0, 60.0]}),
                        RunRandom(4).stream("soil_fields"))
    idd = r.relative_density_pct
    assert 20.0 <= idd.min() and idd.max() <= 60.0 and idd.max() - idd.min() > 20.0
    # neighbours alike: a correlation length of 5 cells
    assert np.corrcoef(idd[:-1].ravel(), idd[1:].ravel())[0, 1] > 0.8
    r2 = sw.build_fields(_cfg(field="random"), RunRandom(5).stream("soil_fields"))
    assert not np.array_equal(r2.relative_density_pct, idd)
    with pytest.raises(ValueError, match="random stream"):
        sw.build_fields(_cfg(field="random"))


def test_regions_file_sets_background_and_regions_in_order(tmp_path):
    path = tmp_path / "fields.toml"
    path.write_text('''soil = "clay"
relative_density_pct = 10

[[regions]]
shape = "rectangle"
north_m = [1.0, 2.0]
east_m = [0.0, 2.0]
relative_density_pct = 80

[[regions]]
shape = "polygon"
vertices_ne_m = [[3.0, 0.0], [4.0, 0.0], [4.0, 1.0]]
soil = "sand"

[[regions]]
shape = "circle"
centre_ne_m = [0.5, 1.0]
radius_m = 0.3
c_pa = 1234.0
phi_deg = 33.0
''')
    f = sw.build_fields(_cfg(field="file", regions_file=str(path)))
    c = f.values["c_pa"]
    assert c[0, 0] == pytest.approx(7.5e3) and c[15, 5] == pytest.approx(25e3)
    assert f.soil[39, 1] == "sand" and c[39, 1] == pytest.approx(100.0)      # sand at I_d 10 %
    assert f.soil[30, 15] == "clay"                                           # outside the triangle
    assert c[5, 10] == 1234.0 and f.values["phi_rad"][5, 10] == pytest.approx(math.radians(33.0))
    assert f.values["gamma_npm3"][5, 10] == pytest.approx(15.4e3)             # the rest from the preset


@pytest.mark.parametrize("text,words", [
    ('soil = "clay"\nrelatve_density_pct = 10\n', "unknown key 'relatve_density_pct' (did you mean"),
    ('[[regions]]\nshape = "hexagon"\n', "shape must be rectangle"),
    ('[[regions]]\nshape = "circle"\nradius_m = 1.0\n', "needs centre_ne_m"),
    ('[[regions]]\nshape = "rectangle"\nnorth_m = [0, 1]\neast_m = [0, 1]\nc_pa = -5.0\n', "negative cohesion"),
    ('[[regions]]\nshape = "rectangle"\nnorth_m = [0, 1]\neast_m = [0, 1]\nphi_deg = 95.0\n', "friction angle"),
    ('soil = "peat"\n', "unknown soil"),
    ('relative_density_pct = 150\n', "[0, 100]"),
    ('soil = "clay\n', "not valid TOML"),
])
def test_malformed_regions_files_give_one_line(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", regions_file=str(path)))
    assert words in str(err.value) and "\n" not in str(err.value) and "bad.toml" in str(err.value)


def test_npy_files_replace_properties(tmp_path):
    c = np.full((40, 20), 3000.0)
    c[:, 10:] = 9000.0
    np.save(tmp_path / "c.npy", c)
    np.save(tmp_path / "phi.npy", np.full((40, 20), 31.0))
    f = sw.build_fields(_cfg(field="file", npy_files={"c_pa": str(tmp_path / "c.npy"),
                                                       "phi_deg": str(tmp_path / "phi.npy")}))
    assert np.array_equal(f.values["c_pa"], c)
    assert np.allclose(f.values["phi_rad"], math.radians(31.0))
    assert f.relative_density_pct is None
    loam = sw.preset_properties("loam", 50.0)
    assert np.allclose(f.values["gamma_npm3"], loam["gamma_npm3"])


@pytest.mark.parametrize("array,words", [
    (np.zeros((20, 40)), "needs shape 40x20"),
    (np.full((40, 20), -1.0), "negative cohesion"),
    (np.where(np.arange(800).reshape(40, 20) == 7, np.nan, 1.0), "NaN"),
    (np.array(["a"] * 800).reshape(40, 20), "numbers"),
])
def test_malformed_npy_fields_give_one_line(tmp_path, array, words):
    np.save(tmp_path / "c.npy", array)
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", npy_files={"c_pa": str(tmp_path / "c.npy")}))
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("data,words", [(b"", "empty file"), (b"c_pa,40,20\n1,2,3\n", "not a .npy file (no NumPy header)"),
                                        (bytes(range(256)), "not a .npy file (no NumPy header)")])
def test_a_file_that_is_no_npy_says_so(tmp_path, data, words):
    (tmp_path / "c.npy").write_bytes(data)
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", npy_files={"c_pa": str(tmp_path / "c.npy")}))
    assert words in str(err.value) and "c.npy" in str(err.value) and "\n" not in str(err.value)


def test_bad_settings_and_missing_files():
    with pytest.raises(ConfigError, match="soil"):
        sw.build_fields(_cfg(soil="peat"))
    with pytest.raises(ConfigError, match="strip"):
        sw.build_fields(_cfg(field="strip", strip={"from_m": 3.0, "to_m": 1.0}))
    with pytest.raises(ConfigError, match="needs file, regions_file or npy_files"):
        sw.build_fields(_cfg(field="file"))
    with pytest.raises(ConfigError, match="not found"):
        sw.build_fields(_cfg(field="file", regions_file="/nonexistent/fields.toml"))
    with pytest.raises(ConfigError, match="not found"):
        sw.build_fields(_cfg(field="file", npy_files={"ca_pa": "/nonexistent/ca.npy"}))


def test_a_bad_field_names_the_users_key_unit_and_first_cell(tmp_path):
    phi = np.full((40, 20), 31.0)
    phi[3, 7] = np.nan
    phi[5, 2] = np.inf
    np.save(tmp_path / "phi.npy", phi)
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", npy_files={"phi_deg": str(tmp_path / "phi.npy")}))
    msg = str(err.value)
    assert "phi_deg holds NaN or infinite values, first at cell (3, 7) (phi_deg = nan)" in msg, msg
    assert "phi_rad" not in msg and "\n" not in msg
    phi[3, 7], phi[5, 2] = 31.0, 95.0
    np.savez(tmp_path / "site.npz", phi_deg=phi)
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", file=str(tmp_path / "site.npz")))
    msg = str(err.value)
    assert "friction angle phi outside (0, 90) deg at cell (5, 2) (phi_deg = 95)" in msg, msg
    assert "phi_rad" not in msg and "site.npz" in msg


def test_a_bad_region_value_is_shown_in_degrees(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[regions]]\nshape = "rectangle"\nnorth_m = [0, 1]\neast_m = [0, 1]\ndelta_deg = 90.0\n')
    with pytest.raises(ConfigError) as err:
        sw.build_fields(_cfg(field="file", regions_file=str(path)))
    msg = str(err.value)
    assert "at cell (0, 0) (delta_deg = 90)" in msg and "delta_rad" not in msg, msg
