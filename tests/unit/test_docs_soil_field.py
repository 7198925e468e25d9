"""harness/scenarios/soil/README.md, "Property field files users bring": its TOML example loads as the page says
(background soil and I_d, the polygon region's soil and I_d, row i north and column j east), and an `.npz` made
as the page shows sets the properties it names."""
import math
import os
import re

import numpy as np

from harness.sim import soil_world

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "harness", "scenarios", "soil", "README.md")
WORLD = {"size_m": [10.0, 6.0], "cell_m": 0.5}


def _example_toml():
    with open(DOC, encoding="utf-8") as fh:
        blocks = re.findall(r"```toml\n(.*?)```", fh.read(), re.S)
    assert len(blocks) == 1
    return "\n".join(line.strip() for line in blocks[0].splitlines())   # the block is indented in a list item


def test_toml_example_loads_as_described(tmp_path):
    path = tmp_path / "my_site.toml"
    path.write_text(_example_toml())
    fields = soil_world.build_fields(dict(WORLD, file=str(path)))
    assert fields.soil.shape == (20, 12)
    # the polygon spans north 2..8 m, east 0.5..3.5 m: cell (i, j) is centred at ((i + 0.5) 0.5, (j + 0.5) 0.5) m
    inside, outside = (9, 3), (1, 3)
    assert fields.soil[inside] == "clay" and fields.relative_density_pct[inside] == 40.0
    assert fields.soil[outside] == "sand" and fields.relative_density_pct[outside] == 20.0
    assert fields.soil[9, 8] == "sand"                          # east 4.25 m: outside the polygon


def test_npz_as_shown_sets_the_named_properties(tmp_path):
    shape = (20, 12)
    path = str(tmp_path / "site.npz")
    np.savez(path, c_pa=np.full(shape, 1500.0), phi_deg=np.full(shape, 30.0))
    fields = soil_world.build_fields(dict(WORLD, file=path))
    assert np.all(fields.values["c_pa"] == 1500.0)
    assert np.allclose(fields.values["phi_rad"], math.radians(30.0))
    preset = soil_world.preset_properties("loam", np.full(shape, 50.0))
    assert np.allclose(fields.values["gamma_npm3"], preset["gamma_npm3"])    # not given: the preset's
