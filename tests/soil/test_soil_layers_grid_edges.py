"""The soil layers' settings and their Foxglove grid at edge values: a soil prior whose variance is not > 0
(every later fusion of the property would be refused) is a configuration error, and a layer value beyond
float32's range is written saturated instead of failing the whole grid message."""
import base64
import struct

import pytest

from onboard.core.settings import ConfigError
from onboard.soil.grid_map import SOIL_KEYS, GridMap, soil_mean, soil_var
from onboard.soil.soil_layers import SoilLayers
from onboard.soil.soil_layers_grid import FLOAT32_MAX, grid_message


@pytest.mark.parametrize("prior", [[0.5, 0.0], [0.5, -0.1], [0.5, True], [0.5], [0.5, 0.1, 0.2], "0.5"])
def test_a_soil_prior_without_a_positive_variance_is_refused(prior):
    with pytest.raises(ConfigError, match="soil_prior.phi_rad"):
        GridMap({"size_m": [1.0, 1.0], "soil_prior": {"phi_rad": prior}})


def test_a_valid_prior_is_taken_and_fused():
    g = GridMap({"size_m": [1.0, 1.0], "cell_m": 0.5, "soil_prior": {"phi_rad": [-0.2, 0.01]}})
    assert g.layer(soil_mean("phi_rad"))[0] == -0.2
    assert g.layer(soil_var("phi_rad"))[0] == 0.01
    layers = SoilLayers(g)
    assert layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [1.0] * 5, [(0, 0.0, 0.5)]) == [0]
    assert g.layer(soil_var("phi_rad"))[0] < 0.01


def test_values_beyond_float32_are_written_saturated():
    g = GridMap({"size_m": [1.0, 1.0], "cell_m": 0.5})
    layers = [soil_mean(k) for k in SOIL_KEYS]
    g.layer(layers[0])[0] = 1e39
    g.layer(layers[0])[1] = -1e300
    g.layer(layers[0])[2] = float("nan")
    g.layer(layers[0])[3] = 2.5
    msg = grid_message(g, 1500000, layers)
    data = base64.b64decode(msg["data"])
    stride = msg["cell_stride"]
    first = [struct.unpack_from("<f", data, k * stride)[0] for k in range(4)]
    assert first == [FLOAT32_MAX, -FLOAT32_MAX, 0.0, 2.5]
    assert msg["timestamp"] == {"sec": 1, "nsec": 500000000}


def test_bools_in_a_wedge_or_an_estimate_are_refused_and_counted():
    g = GridMap({"size_m": [1.0, 1.0], "cell_m": 0.5})
    layers = SoilLayers(g, {"min_wedge_m": 0.0})
    before = {name: bytes(g.layer(name)) for name in g.layer_names()}
    assert layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [1.0] * 5, [(True, 0.0, 0.5), (0, False, 0.5), (0, 0.0, True)]) == []
    assert layers.counters()["rejected"] == 3 and layers.counters()["updated"] == 0
    assert layers.fuse([1.0, True, 1.0, 1.0, 0.3], [1.0] * 5, [(0, 0.0, 0.5)]) == []
    assert layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [1.0, 1.0, True, 1.0, 1.0], [(0, 0.0, 0.5)]) == []
    assert layers.counters()["refused"] == 2
    assert {name: bytes(g.layer(name)) for name in g.layer_names()} == before
    assert layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [1.0] * 5, [(1, 0.0, 0.5)]) == [1]
