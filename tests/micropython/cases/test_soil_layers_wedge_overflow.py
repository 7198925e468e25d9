"""Soil layers' fusion where the wedge inflation exp(c_s x / x_max) overflows (a cell far beyond a tiny wedge)
or its products do: the cell keeps its values, finite (CPython and MicroPython)."""
from onboard.soil.grid_map import GridMap, soil_mean, soil_var
from onboard.soil.soil_layers import SoilLayers


def _grid():
    return GridMap({"size_m": [1.0, 1.0], "cell_m": 0.1, "soil_prior": {"ca_pa": [0.0, 5.625e7]}})


def test_a_cell_far_beyond_a_tiny_wedge_is_left_as_it_was():
    """A grazing cut's wedge is a fraction of a millimetre long (x_max tiny), min_wedge_m still lets cells
    0.2 m ahead in: the inflation exp(C_s x / x_max) overflowed - OverflowError (CPython) or ValueError
    (MicroPython) out of fuse after the first cell was already fused (its counters not). The estimate carries no information there (r -> inf): the cell keeps its values."""
    grid = _grid()
    layers = SoilLayers(grid)
    theta = [5000.0, 0.6, 18000.0, 2000.0, 0.3]
    var = [1e6, 0.01, 1e6, 1e6, 0.01]
    before = [grid.layer(soil_mean("phi_rad"))[1], grid.layer(soil_var("phi_rad"))[1],
              grid.layer(soil_mean("ca_pa"))[1], grid.layer(soil_var("ca_pa"))[1]]
    done = layers.fuse(theta, var, [(0, 0.0, 1e-4), (1, 0.19, 1e-4)])
    assert done == [0], done
    assert layers.fusions == 1 and layers.updated == 1, layers.counters()
    after = [grid.layer(soil_mean("phi_rad"))[1], grid.layer(soil_var("phi_rad"))[1],
             grid.layer(soil_mean("ca_pa"))[1], grid.layer(soil_var("ca_pa"))[1]]
    assert after == before, (after, before)
    assert grid.layer(soil_var("phi_rad"))[0] < before[1]


def test_a_huge_but_finite_inflation_leaves_the_cell_finite():
    """exp(C_s x / x_max) finite but r = c_w var overflowing to inf: inf * mean (0 for c_a's prior here)
    made the mean NaN."""
    grid = _grid()
    layers = SoilLayers(grid)
    theta = [5000.0, 0.6, 18000.0, 2000.0, 0.3]
    var = [1e300, 0.01, 1e6, 1e300, 0.01]
    layers.fuse(theta, var, [(2, 0.1, 0.1 / 700.0)])
    for key in ("c_pa", "ca_pa", "phi_rad"):
        m = grid.layer(soil_mean(key))[2]
        v = grid.layer(soil_var(key))[2]
        assert m - m == 0 and v - v == 0 and v > 0.0, (key, m, v)
