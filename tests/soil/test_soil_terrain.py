"""harness.sim.soil_terrain: blade cutting at an explicit depth, the carried surcharge pile (swell, spread,
spill, drop), erosion to repose, and exact volume bookkeeping (bank + (loose + pile + off map) / swell),
property-tested with hypothesis."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from onboard.core.settings import ConfigError
from onboard.soil.blind_map import BladePose

R = math.radians
DT_US = 16667


def _terrain(size=(6.0, 4.0), **cfg):
    fields = sw.build_fields({"size_m": list(size), "cell_m": 0.1, "soil": "loam"})
    return SoilTerrain(fields, cfg, RunRandom(3).stream("soil_terrain"))


def _drive(terrain, start_n, end_n, east, down_of, pitch=R(10.0), roll=0.0, steps=240, width=1.85, height=0.6):
    out = []
    for k in range(steps + 1):
        n = start_n + (end_n - start_n) * k / steps
        out.append(terrain.move_blade(BladePose(k * DT_US, n, east, down_of(n), roll, pitch, 0.0), width, height))
    return out


def test_straight_cut_at_a_known_depth_moves_exact_volumes():
    """Edge 1.85 m wide at east 2.0 (18 cell centres across), 0.1 m deep from north 1.02 to 3.02 (20 cell
    centres along): 0.36 m^3 of bank cut, swelled 1.2 into the pile and its spill; the lane is flat at -0.1."""
    t = _terrain(loose_layer_m=0.0, erosion={"enabled": False})
    before = t.volumes()
    _drive(t, 1.02, 3.02, 2.0, lambda n: 0.1)
    assert t.totals.bank_cut_m3 == pytest.approx(0.36, abs=1e-12)
    v = t.volumes()
    assert v["bank_m3"] - before["bank_m3"] == pytest.approx(-0.36, abs=1e-12)
    assert v["pile_m3"] + v["loose_m3"] + v["off_map_m3"] == pytest.approx(1.2 * 0.36, abs=1e-12)
    assert v["bank_equivalent_m3"] == pytest.approx(before["bank_equivalent_m3"], abs=1e-12)
    n, e = np.meshgrid((np.arange(t.n_north) + 0.5) * 0.1, (np.arange(t.n_east) + 0.5) * 0.1, indexing="ij")
    lane = (n > 1.02) & (n < 3.02) & (e > 1.075) & (e < 2.925)
    assert np.allclose(t.height_m[lane], -0.1, atol=1e-12)
    assert np.all(t.height_m[~lane] >= 0.0)


def test_loose_soil_is_not_swelled_again():
    """Cutting the loose layer moves it to the pile as it is (notes A14): 0.02 m loose over 0.08 m bank."""
    t = _terrain(loose_layer_m=0.02, erosion={"enabled": False}, pile={"side_spill_per_m": 0.0})
    _drive(t, 1.02, 2.02, 2.0, lambda n: 0.08)       # edge 0.08 m below the bank datum 0, surface at 0.02
    area = 180 * 0.01
    assert t.totals.loose_cut_m3 == pytest.approx(0.02 * area, abs=1e-12)
    assert t.totals.bank_cut_m3 == pytest.approx(0.08 * area, abs=1e-12)
    assert t.pile_m3 + t.totals.spilled_m3 == pytest.approx((0.02 + 1.2 * 0.08) * area, abs=1e-12)


def test_pile_is_capacity_limited_and_spills_windrows_beyond_the_ends():
    t = _terrain(size=(10.0, 4.0), loose_layer_m=0.0, erosion={"enabled": False})
    _drive(t, 1.02, 8.02, 2.0, lambda n: 0.15, steps=840)
    repose = t.config["loose"]["friction_rad"]
    height_v = 0.6 * math.cos(R(10.0))
    capacity = 1.85 * height_v ** 2 / (2.0 * math.tan(repose))
    assert t.pile_m3 <= capacity + 1e-12
    assert t.totals.spilled_m3 > 0.3
    _area, h_p, _len = t.pile_shape(1.85)
    assert h_p <= height_v + 1e-12
    e = (np.arange(t.n_east) + 0.5) * 0.1
    outside = (np.abs(e - 2.0) > 0.925)[None, :] & np.ones((t.n_north, 1), dtype=bool)
    assert float(np.sum(t.loose_m[outside])) * 0.01 == pytest.approx(t.totals.spilled_m3, rel=1e-9)


def test_a_raised_blade_spreads_its_pile_up_to_the_edge_and_a_lifted_one_drops_it():
    t = _terrain(loose_layer_m=0.0, erosion={"enabled": False}, pile={"side_spill_per_m": 0.0})
    _drive(t, 1.02, 2.02, 2.0, lambda n: 0.1, steps=120)          # load a pile
    pile = t.pile_m3
    # the edge 3 cm above the flat ground: soil flows under it, 3 cm deep
    steps = _drive(t, 2.02, 2.52, 2.0, lambda n: -0.03, steps=60)
    spread = sum(s.spread_m3 for s in steps)
    assert spread == pytest.approx(0.03 * 5 * 18 * 0.01, rel=1e-9)
    assert t.pile_m3 == pytest.approx(pile - spread, rel=1e-12)
    n, e = np.meshgrid((np.arange(t.n_north) + 0.5) * 0.1, (np.arange(t.n_east) + 0.5) * 0.1, indexing="ij")
    filled = (n > 2.02) & (n < 2.52) & (np.abs(e - 2.0) < 0.925)
    assert np.allclose(t.height_m[filled], 0.03, atol=1e-12)
    # lifted above the pile's face: the pile stays on the ground ahead, all of it
    before = t.volumes()
    step = t.move_blade(BladePose(10 ** 7, 2.52, 2.0, -1.0, 0.0, R(10.0), 0.0), 1.85, 0.6)
    assert step.dropped_m3 == pytest.approx(before["pile_m3"], rel=1e-12)
    after = t.volumes()
    assert after["pile_m3"] == 0.0
    assert after["loose_m3"] == pytest.approx(before["loose_m3"] + before["pile_m3"], rel=1e-12)
    ahead = (n > 2.52) & (t.loose_m > 0.0)
    assert np.any(ahead)


@pytest.mark.parametrize("model", ["repose", "eq12"])
def test_erosion_conserves_volume_and_relaxes_a_column_towards_repose(model):
    t = _terrain(size=(4.0, 4.0), loose_layer_m=0.0, erosion={"model": model, "repose_rad": 0.6})
    t.height_m[18:22, 18:22] += 0.5
    t.loose_m[18:22, 18:22] += 0.5
    before = t.volumes()
    t.settle(iterations=400)
    after = t.volumes()
    assert after["loose_m3"] == pytest.approx(before["loose_m3"], rel=1e-12)
    assert after["bank_equivalent_m3"] == pytest.approx(before["bank_equivalent_m3"], rel=1e-12)
    assert np.all(t.loose_m >= -1e-12)
    assert t.height_m.max() < 0.4
    if model == "repose":
        tan_r = math.tan(0.6)
        for axis in (0, 1):
            step = np.abs(np.diff(t.height_m, axis=axis))
            assert step.max() <= 0.1 * tan_r + 1e-9


def test_erosion_leaves_cells_under_the_blade_alone():
    t = _terrain(size=(4.0, 4.0), loose_layer_m=0.0, erosion={"model": "repose", "repose_rad": 0.3})
    t.height_m[20, 20] += 0.4
    t.loose_m[20, 20] += 0.4
    masked = {20 * t.n_east + 20: 0.0}
    moved = t.erode((2.05, 2.05), 1.0, 50, masked)
    assert moved == 0.0
    assert t.height_m[20, 20] == pytest.approx(0.4)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(-0.05, 0.25), st.floats(-0.15, 0.15), st.floats(-0.1, 0.1),
                          st.floats(0.0, 0.45), st.floats(0.0, 0.12)), min_size=2, max_size=30),
       st.integers(0, 3), st.floats(0.0, 0.05), st.sampled_from(["eq12", "repose"]))
def test_volume_bookkeeping_is_exact_for_any_blade_path(moves, hills, loose, model):
    """Any path (forward steps, depth, yaw, roll, tilt), relief, loose layer and erosion model: bank +
    (loose + pile + off map) / swell stays constant, no loose layer goes negative, the pile stays >= 0."""
    fields = sw.build_fields({"size_m": [4.0, 3.0], "cell_m": 0.1, "soil": "sand"})
    t = SoilTerrain(fields, {"relief": {"count": hills, "height_m": [-0.2, 0.2], "sigma_m": [0.5, 1.0]},
                             "loose_layer_m": loose, "erosion": {"model": model, "every_m": 0.05, "roi_m": 1.0}},
                    RunRandom(hills).stream("soil_terrain"))
    v0 = t.volumes()["bank_equivalent_m3"]
    n, e, yaw = 0.6, 1.5, 0.0
    for k, (depth, dyaw, roll, tilt, step) in enumerate(moves):
        yaw += dyaw
        n += step * math.cos(yaw)
        e += step * math.sin(yaw)
        ground = float(t.surface_at(n, e))
        t.move_blade(BladePose(k * DT_US, n, e, -(ground - depth), roll, tilt, yaw), 1.85, 0.6)
        assert t.pile_m3 >= 0.0
    t.drop_pile()
    v = t.volumes()
    assert v["bank_equivalent_m3"] == pytest.approx(v0, abs=1e-9)
    assert v["pile_m3"] == 0.0
    assert np.all(t.loose_m >= -1e-12)


def test_relief_is_a_seeded_mixture_of_gaussians_and_needs_a_stream():
    fields = sw.build_fields({"size_m": [6.0, 4.0], "cell_m": 0.1})
    cfg = {"relief": {"count": 3, "height_m": [0.1, 0.3]}, "loose_layer_m": 0.0}
    a = SoilTerrain(fields, cfg, RunRandom(7).stream("soil_terrain"))
    b = SoilTerrain(fields, cfg, RunRandom(7).stream("soil_terrain"))
    assert np.array_equal(a.height_m, b.height_m)
    assert a.height_m.max() > 0.05 and a.height_m.min() >= 0.0
    with pytest.raises(ValueError, match="random stream"):
        SoilTerrain(fields, cfg)
    with pytest.raises(ConfigError, match="swel"):
        SoilTerrain(fields, {"swel": 1.3})
    assert a.surface_at(0.05, 0.05) == pytest.approx(a.height_m[0, 0])
