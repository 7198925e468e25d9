"""A regions TOML whose ``soil`` or region ``shape`` is not a string (a list, a table: TOML allows both) is refused
with one ConfigError line naming the file; it was a TypeError (unhashable type) or a NumPy broadcast error."""
import pytest

from harness.sim import soil_world as sw
from onboard.core.settings import ConfigError

SMALL = {"size_m": [4.0, 2.0], "cell_m": 0.1}
CIRCLE = '[[regions]]\nshape = "circle"\ncentre_ne_m = [1.0, 1.0]\nradius_m = 0.5\n'

CASES = {
    "top_soil_one_item_list": ('soil = ["clay"]\n', "unknown soil \\['clay'\\]"),
    "top_soil_two_item_list": ('soil = ["clay", "loam"]\n', "unknown soil \\['clay', 'loam'\\]"),
    "region_soil_list": (CIRCLE + 'soil = ["clay"]\n', "region 1: unknown soil"),
    "region_soil_table": (CIRCLE + 'soil = {kind = "clay"}\n', "region 1: unknown soil"),
    "region_shape_list": ('[[regions]]\nshape = ["circle"]\nsoil = "clay"\n',
                          "region 1: region shape must be rectangle, circle or polygon"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_non_string_soil_or_shape_is_one_line(tmp_path, name):
    text, match = CASES[name]
    path = tmp_path / ("%s.toml" % name)
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as info:
        sw.build_fields(dict(SMALL, file=str(path)))
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_string_soils_still_set_the_background_and_the_regions(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('soil = "sand"\n' + CIRCLE + 'soil = "clay"\n')
    f = sw.build_fields(dict(SMALL, file=str(path)))
    assert f.soil[0, 19] == "sand" and f.soil[10, 10] == "clay"
