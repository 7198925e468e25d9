"""Bayesian soil layers and the FEE index map (onboard.soil.soil_layers; soil paper Alg. 4, section 3.2):
the product of Gaussians, order independence, variance never increasing, cells beyond the wedge untouched,
rejected cells counted with the state kept, the index at the paper's geometry, the wedges of real sweeps,
the loader app's estimator setting, the foxglove.Grid message and the same numbers inside MicroPython."""
import base64
import math
import random
import struct

import numpy as np
import pytest

from onboard.core.settings import ConfigError
from onboard.soil import fee, loader_app
from onboard.soil.blind_map import BladePose, BlindMapper
from onboard.soil.grid_map import FEE_INDEX, SOIL_KEYS, UPDATES, GridMap, soil_mean, soil_var
from onboard.soil.soil_layers import (INDEX_THETA_K, SoilLayers, SoilLayersError, record_wedge, wedge_ahead)
from onboard.runtime.mcap_log import FOXGLOVE_SCHEMAS
from onboard.soil.soil_layers_grid import FLOAT32, GRID, grid_message

R = math.radians
LOOSE_CLAY = [6.25e3, R(21.0), 15.4e3, 3.125e3, R(14.0)]       # clay presets at I_d 10 % and 80 %
DENSE_CLAY = [25e3, R(28.0), 18.2e3, 12.5e3, R(18.667)]
VAR = [4e6, 2e-3, 1e6, 4e6, 1e-3]


def _grid(size_m=(3.0, 3.0)):
    return GridMap({"size_m": list(size_m), "cell_m": 0.1})


def _snapshot(g):
    return {name: bytes(g.layer(name)) for name in g.layer_names()}


def _wedge(g, x_max_m=0.5, edge=(1.0, 1.5), length_m=1.0):
    return [(k, x, x_max_m) for k, x in wedge_ahead(g, edge, (1.0, 0.0), 1.85, length_m)]


def test_one_cell_is_the_product_of_gaussians_with_the_inflation_of_alg4():
    g = _grid()
    layers = SoilLayers(g, {"wedge_weight": 1.5, "min_wedge_m": 0.0})
    cell = g.flat(14, 15)
    prior_m = [g.layer(soil_mean(k))[cell] for k in SOIL_KEYS]
    prior_v = [g.layer(soil_var(k))[cell] for k in SOIL_KEYS]
    for x, expect_cw in ((0.0, 1.0), (0.3, math.exp(1.5 * 0.3 / 0.5))):
        g2 = _grid()
        SoilLayers(g2, {"wedge_weight": 1.5, "min_wedge_m": 0.0}).fuse(LOOSE_CLAY, VAR, [(cell, x, 0.5)])
        for k, key in enumerate(SOIL_KEYS):
            r = expect_cw * VAR[k]
            assert g2.layer(soil_var(key))[cell] == pytest.approx(1.0 / (1.0 / prior_v[k] + 1.0 / r), rel=1e-12)
            assert g2.layer(soil_mean(key))[cell] == pytest.approx(
                (r * prior_m[k] + prior_v[k] * LOOSE_CLAY[k]) / (prior_v[k] + r), rel=1e-12)
    assert layers.counters()["updated"] == 0


def test_two_updates_in_either_order_give_the_same_layers():
    a, b = _grid(), _grid()
    wa = _wedge(a, 0.6, (1.0, 1.5))
    wb = _wedge(a, 0.45, (1.3, 1.2))             # overlapping wedges, different x and x_max per cell
    la, lb = SoilLayers(a), SoilLayers(b)
    la.fuse(LOOSE_CLAY, VAR, wa)
    la.fuse(DENSE_CLAY, [2 * v for v in VAR], wb)
    lb.fuse(DENSE_CLAY, [2 * v for v in VAR], wb)
    lb.fuse(LOOSE_CLAY, VAR, wa)
    both = set(k for k, _x, _m in wa) & set(k for k, _x, _m in wb)
    assert len(both) > 20
    for key in SOIL_KEYS:
        for name in (soil_mean(key), soil_var(key)):
            va, vb = a.layer(name), b.layer(name)
            for k in range(a.size):
                assert va[k] == pytest.approx(vb[k], rel=1e-12, abs=0.0)
    assert la.counters() == lb.counters()


def test_variance_never_increases_over_random_updates():
    rng = random.Random(7)
    g = _grid()
    layers = SoilLayers(g, {"wedge_weight": 3.0})
    for _ in range(40):
        before = [list(g.layer(soil_var(k))) for k in SOIL_KEYS]
        theta = [rng.uniform(0.0, 30e3), rng.uniform(0.2, 0.7), rng.uniform(12e3, 20e3), rng.uniform(0.0, 15e3),
                 rng.uniform(0.1, 0.5)]
        var = [v * rng.uniform(0.01, 100.0) for v in VAR]
        edge = (rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0))
        heading = rng.uniform(-math.pi, math.pi)
        wedge = [(k, x, rng.uniform(0.2, 0.8))
                 for k, x in wedge_ahead(g, edge, (math.cos(heading), math.sin(heading)), 1.85, 1.0)]
        layers.fuse(theta, var, wedge)
        for k, key in enumerate(SOIL_KEYS):
            after = g.layer(soil_var(key))
            assert all(after[c] <= before[k][c] for c in range(g.size))
    assert layers.counters()["updated"] > 500


def test_cells_beyond_the_wedge_are_untouched():
    g = _grid()
    layers = SoilLayers(g, {"min_wedge_m": 0.2})
    wedge = _wedge(g, 0.5, (1.0, 1.5), length_m=1.0)          # rays reach 1 m; the wedge ends at 0.5 m
    before = _snapshot(g)
    fused = set(layers.fuse(LOOSE_CLAY, VAR, wedge))
    assert fused == set(k for k, x, _m in wedge if x < 0.5)
    updates = g.layer(UPDATES)
    for k in range(g.size):
        changed = any(g.layer(name)[k] != struct.unpack_from("<d", before[name], 8 * k)[0]
                      for name in [soil_mean(s) for s in SOIL_KEYS] + [soil_var(s) for s in SOIL_KEYS])
        assert changed == (k in fused)
        assert updates[k] == (1.0 if k in fused else 0.0)
        if k in fused:
            n, e = g.centre(*g.cell_of_flat(k))
            assert 1.0 <= n < 1.5 and abs(e - 1.5) <= 0.925
    # x_min reaches past a short wedge
    g2 = _grid()
    short = _wedge(g2, 0.1, (1.0, 1.5), length_m=1.0)
    assert set(SoilLayers(g2, {"min_wedge_m": 0.3}).fuse(LOOSE_CLAY, VAR, short)) == \
        set(k for k, x, _m in short if x < 0.3)


def test_bad_cells_are_rejected_and_counted_and_bad_estimates_keep_the_state():
    g = _grid()
    layers = SoilLayers(g)
    g.layer(soil_var("c_pa"))[5] = math.nan
    g.layer(soil_var("phi_rad"))[6] = 0.0
    before = _snapshot(g)
    wedge = [(1, 0.1, 0.5), (-1, 0.1, 0.5), (g.size, 0.1, 0.5), (2, math.nan, 0.5), (3, -0.1, 0.5),
             (4, 0.1, 0.0), (5, 0.1, 0.5), (6, 0.1, 0.5), (7, 0.9, 0.5)]
    assert layers.fuse(LOOSE_CLAY, VAR, wedge) == [1]
    c = layers.counters()
    assert (c["updated"], c["rejected"], c["fusions"], c["refused"]) == (1, 7, 1, 0)
    for k in (5, 6, 7):
        for name in before:
            if name != UPDATES:
                assert struct.unpack_from("<d", before[name], 8 * k)[0] == g.layer(name)[k] or \
                    math.isnan(g.layer(name)[k])
    # estimates with a NaN mean, a zero or infinite variance: refused whole, every cell counted, state kept
    state = _snapshot(g)
    for theta, var in ((LOOSE_CLAY[:1] + [math.nan] + LOOSE_CLAY[2:], VAR), (LOOSE_CLAY, VAR[:4] + [0.0]),
                       (LOOSE_CLAY, [math.inf] + VAR[1:])):
        assert layers.fuse(theta, var, _wedge(g)) == []
        assert _snapshot(g) == state
    c2 = layers.counters()
    assert c2["refused"] == 3 and c2["rejected"] == 7 + 3 * len(_wedge(g))
    # malformed arguments raise, state kept
    with pytest.raises(SoilLayersError):
        layers.fuse(LOOSE_CLAY[:4], VAR, _wedge(g))
    with pytest.raises(SoilLayersError):
        layers.fuse(LOOSE_CLAY, VAR, [(1, 0.1)])
    assert _snapshot(g) == state
    with pytest.raises(ConfigError):
        SoilLayers(g, {"wedge_weight": -1.0})


def test_fee_index_at_the_paper_geometry_on_fused_cells_only():
    g = _grid()
    layers = SoilLayers(g)
    fused = layers.fuse(DENSE_CLAY, [v * 1e-6 for v in VAR], _wedge(g))
    layers.refresh_index(fused)
    idx = g.layer(FEE_INDEX)
    f_dense = fee.Fee().force(DENSE_CLAY, list(INDEX_THETA_K))[0]
    f_loose = fee.Fee().force(LOOSE_CLAY, list(INDEX_THETA_K))[0]
    assert INDEX_THETA_K == (0.0, R(80.0), 0.2, 1.85, 0.0)
    assert 3.5 < f_dense / f_loose < 5.0                          # the contrast the issue expects (4-5x)
    for k in range(g.size):
        if k in fused:
            assert idx[k] == pytest.approx(layers.index_at([g.layer(soil_mean(s))[k] for s in SOIL_KEYS]))
            assert idx[k] == pytest.approx(f_dense, rel=1e-3)    # the prior is nearly forgotten
        else:
            assert idx[k] == 0.0
    assert layers.index_at([5e3, 1.5, 16e3, 2e3, 1.5]) is None   # outside the FEE's domain


def test_record_wedge_of_a_straight_cut_reaches_x_max_ahead_of_each_sweep():
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    mapper = BlindMapper(g, {"erosion": {"enabled": False}})
    records = []
    for k in range(121):
        n = 1.02 + 2.0 * k / 120
        rec = mapper.on_blade_pose(BladePose(k * 16667, n, 2.0, 0.1, 0.0, R(10.0), 0.0))
        if rec is not None:
            records.append(rec)
    valid = [r for r in records if r.valid]
    assert len(valid) > 10
    phi, delta = R(25.0), R(16.0)
    wedge = record_wedge(records, phi, delta, min_wedge_m=0.0)
    beta = fee.beta_star(0.0, valid[-1].rho_rad, phi, delta)[0]
    x_max = 0.1 / math.tan(beta)
    assert all(x < m + 1e-9 and m == pytest.approx(x_max, rel=0.05) for _k, x, m in wedge)
    norths = [g.centre(*g.cell_of_flat(k))[0] for k, _x, _m in wedge]
    assert min(norths) > 1.02 and max(norths) < 3.02 + x_max + 0.1
    assert len(set(k for k, _x, _m in wedge)) == len(wedge)


def test_loader_app_layers_setting_takes_the_classical_or_the_learned_estimator():
    cfg = loader_app.checked_config({"layers": {"enabled": True}})
    assert cfg["layers"]["estimator"] == "classical"
    assert loader_app.checked_config({"layers": {"enabled": True, "estimator": "learned"}})["layers"]["estimator"] \
        == "learned"
    with pytest.raises(ConfigError, match="'classical', 'learned'"):
        loader_app.checked_config({"layers": {"enabled": True, "estimator": "neural"}})
    missing = loader_app.checked_config({"layers": {"enabled": True, "estimator": "learned",
                                                    "learned_model": "/nonexistent/model"}})
    with pytest.raises(ConfigError, match="learned_model"):
        loader_app.CutEstimation(missing, None, _grid((2.0, 1.0)))
    with pytest.raises(ConfigError, match="grid map"):
        loader_app.CutEstimation(cfg, None, None)


def test_grid_message_holds_the_layers_as_float32_in_the_maps_order():
    g = _grid((2.0, 1.0))
    layers = SoilLayers(g)
    layers.refresh_index(layers.fuse(LOOSE_CLAY, VAR, _wedge(g, 0.5, (0.5, 0.5))))
    msg = grid_message(g, 1500000, [FEE_INDEX, soil_mean("phi_rad")])
    assert msg["timestamp"] == {"sec": 1, "nsec": 500000000}
    assert msg["column_count"] == g.n_east and msg["cell_stride"] == 8 and msg["row_stride"] == 8 * g.n_east
    assert [f["name"] for f in msg["fields"]] == [FEE_INDEX, soil_mean("phi_rad")]
    assert all(f["type"] == FLOAT32 for f in msg["fields"])
    data = np.frombuffer(base64.b64decode(msg["data"]), dtype="<f4").reshape(g.n_north, g.n_east, 2)
    assert np.allclose(data[..., 0], np.array(g.layer(FEE_INDEX)).reshape(g.n_north, g.n_east), rtol=1e-6)
    assert data[..., 0].max() > 1e4
    assert FOXGLOVE_SCHEMAS[GRID]["title"] == GRID
    assert set(FOXGLOVE_SCHEMAS[GRID]["properties"]) == set(msg)


@pytest.mark.micropython
def test_the_same_fusion_and_index_inside_micropython():
    from harness.sim.micropython import available, onboard_files, run_micropython
    if not available():
        pytest.skip("MicroPython (node + npm package) is missing: run `make setup`")
    code = ("from onboard.soil.grid_map import GridMap, FEE_INDEX, soil_var, soil_mean\n"
            "from onboard.soil.soil_layers import SoilLayers, wedge_ahead\n"
            "g = GridMap({'size_m': [3.0, 3.0], 'cell_m': 0.1})\n"
            "L = SoilLayers(g)\n"
            "w = [(k, x, 0.5) for k, x in wedge_ahead(g, (1.0, 1.5), (1.0, 0.0), 1.85, 1.0)]\n"
            "cells = L.fuse(%r, %r, w)\n"
            "L.refresh_index(cells)\n"
            "print('MP', len(cells), repr(g.layer(FEE_INDEX)[cells[3]]), repr(g.layer(soil_var('phi_rad'))[cells[3]]),"
            " repr(g.layer(soil_mean('c_pa'))[cells[3]]))\n" % (LOOSE_CLAY, VAR))
    line = [ln for ln in run_micropython(code, onboard_files()).splitlines() if ln.startswith("MP ")][0].split()
    g = _grid()
    layers = SoilLayers(g)
    cells = layers.fuse(LOOSE_CLAY, VAR, _wedge(g))
    layers.refresh_index(cells)
    assert int(line[1]) == len(cells)
    assert float(line[2]) == pytest.approx(g.layer(FEE_INDEX)[cells[3]], rel=1e-9)
    assert float(line[3]) == pytest.approx(g.layer(soil_var("phi_rad"))[cells[3]], rel=1e-9)
    assert float(line[4]) == pytest.approx(g.layer(soil_mean("c_pa"))[cells[3]], rel=1e-9)
