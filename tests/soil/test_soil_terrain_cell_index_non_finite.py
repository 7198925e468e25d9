"""SoilTerrain.cell_index / index_of: a non-finite point is outside the grid (None), as
onboard.soil.grid_map.GridMap.index_of has it, not a ValueError / OverflowError from int()."""
import math

import pytest

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain


@pytest.fixture(scope="module")
def terrain():
    fields = sw.build_fields({"size_m": [2.0, 1.0], "cell_m": 0.1, "soil": "loam"})
    return SoilTerrain(fields, {}, RunRandom(3).stream("soil_terrain"))


@pytest.mark.parametrize("point", [(math.nan, 0.5), (0.5, math.nan), (math.inf, 0.5), (0.5, -math.inf)])
def test_non_finite_points_are_outside(terrain, point):
    assert terrain.cell_index(*point) is None
    assert terrain.index_of(*point) is None


def test_finite_points_unchanged(terrain):
    assert terrain.cell_index(0.05, 0.05) == (0, 0)
    assert terrain.cell_index(1.95, 0.95) == (19, 9)
    assert terrain.cell_index(-0.01, 0.5) is None and terrain.cell_index(2.0, 0.5) is None
