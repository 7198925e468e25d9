"""onboard.soil.grid_map: named layers, index/position conversion, the DDA line iterator and polygon
rasterisation against brute-force references; the NumPy view shares the storage."""
import math
import random

import numpy as np
import pytest

from onboard.core.settings import ConfigError
from onboard.soil import grid_map_numpy
from onboard.soil.grid_map import (ELEVATION, ELEVATION_VAR, FEE_INDEX, LOOSE, SOIL_KEYS, UPDATES, GridMap,
                                   GridMapError, soil_mean, soil_var)


def _map():
    return GridMap({"size_m": [3.0, 2.0], "cell_m": 0.1, "origin_ne_m": [-1.0, 0.5]})


def test_layers_are_named_and_filled():
    g = _map()
    assert (g.n_north, g.n_east) == (30, 20)
    for name in [ELEVATION, ELEVATION_VAR, LOOSE, FEE_INDEX, UPDATES] + [soil_mean(k) for k in SOIL_KEYS] \
            + [soil_var(k) for k in SOIL_KEYS]:
        assert g.has_layer(name) and len(g.layer(name)) == 600
    assert g.layer(soil_mean("phi_rad"))[7] == pytest.approx(0.5236)
    assert g.layer(ELEVATION_VAR)[0] == pytest.approx(1e-4)
    g.add_layer("custom", 2.5)
    assert g.volume_m3("custom") == pytest.approx(2.5 * 3.0 * 2.0)
    with pytest.raises(GridMapError, match="no layer"):
        g.layer("nope")
    with pytest.raises(ConfigError, match="cell_m"):
        GridMap({"cell_m": -0.1})


def test_index_and_position_round_trip():
    g = _map()
    for i in range(g.n_north):
        for j in range(g.n_east):
            n, e = g.centre(i, j)
            assert g.index_of(n, e) == (i, j)
            assert g.index_of(n + 0.049, e - 0.049) == (i, j)
    assert g.index_of(-1.0, 0.5) == (0, 0)
    assert g.index_of(-1.0001, 1.0) is None
    assert g.index_of(2.0, 1.0) is None          # the north edge belongs to the cell beyond the map
    g.set(LOOSE, 3, 4, 0.2)
    assert g.at(LOOSE, *g.centre(3, 4)) == 0.2
    with pytest.raises(GridMapError, match="outside"):
        g.get(LOOSE, 30, 0)


def _segment_box_overlap(p0, p1, box):
    """Length fraction (t_enter, t_exit) of segment p0-p1 inside an axis-aligned box, or None."""
    t0, t1 = 0.0, 1.0
    for axis in (0, 1):
        d = p1[axis] - p0[axis]
        lo, hi = box[axis]
        if abs(d) < 1e-15:
            if not lo <= p0[axis] <= hi:
                return None
            continue
        a, b = (lo - p0[axis]) / d, (hi - p0[axis]) / d
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
    return (t0, t1) if t1 - t0 > 1e-9 else None


def test_line_cells_equal_every_cell_the_segment_crosses_in_order():
    g = _map()
    rng = random.Random(1)
    for _ in range(150):
        p0 = (rng.uniform(-1.6, 2.6), rng.uniform(0.0, 3.0))
        p1 = (rng.uniform(-1.6, 2.6), rng.uniform(0.0, 3.0))
        got = g.line_cells(p0, p1)
        expect = []
        for i in range(g.n_north):
            for j in range(g.n_east):
                n, e = g.centre(i, j)
                hit = _segment_box_overlap(p0, p1, ((n - 0.05, n + 0.05), (e - 0.05, e + 0.05)))
                if hit:
                    expect.append((hit[0], (i, j)))
        expect = [c for _t, c in sorted(expect)]
        # a segment grazing a corner may add one cell of zero length; the crossed cells must all be there
        assert [c for c in got if c in expect] == expect
        assert len(got) <= len(expect) + 2
        for a, b in zip(got, got[1:]):
            assert abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1      # 4-connected, no skipped cell


def test_ray_cells_go_the_requested_length():
    g = _map()
    cells = g.ray_cells((0.0, 1.0), (1.0, 0.0), 0.95)
    assert cells == [(i, 5) for i in range(10, 20)]
    with pytest.raises(GridMapError):
        g.ray_cells((0.0, 1.0), (0.0, 0.0), 1.0)


def _inside(poly, n, e):
    inside = False
    for k in range(len(poly)):
        (na, ea), (nb, eb) = poly[k], poly[(k + 1) % len(poly)]
        if (na <= n < nb) or (nb <= n < na):
            if e < ea + (n - na) * (eb - ea) / (nb - na):
                inside = not inside
    return inside


def test_polygon_cells_are_the_centres_inside():
    g = _map()
    rng = random.Random(2)
    for _ in range(60):
        k = rng.randint(3, 7)
        cn, ce = rng.uniform(-0.5, 1.5), rng.uniform(0.8, 2.2)
        poly = []
        for a in range(k):
            ang = 2 * math.pi * a / k + rng.uniform(-0.3, 0.3)
            r = rng.uniform(0.2, 1.2)
            poly.append((cn + r * math.cos(ang), ce + r * math.sin(ang)))
        got = sorted(g.polygon_cells(poly))
        expect = sorted((i, j) for i in range(g.n_north) for j in range(g.n_east) if _inside(poly, *g.centre(i, j)))
        assert got == expect
    rect = [(-0.98, 0.52), (-0.98, 1.48), (0.02, 1.48), (0.02, 0.52)]
    assert len(g.polygon_cells(rect)) == 10 * 10
    with pytest.raises(GridMapError):
        g.polygon_cells([(0.0, 0.0), (1.0, 1.0)])


def test_numpy_view_shares_the_storage():
    g = _map()
    v = grid_map_numpy.view(g, ELEVATION)
    assert v.shape == (30, 20)
    v[4, 7] = 1.25
    assert g.get(ELEVATION, 4, 7) == 1.25
    g.set(ELEVATION, 5, 2, -0.5)
    assert v[5, 2] == -0.5
    n, e = grid_map_numpy.centres(g)
    assert (n[3, 4], e[3, 4]) == pytest.approx(g.centre(3, 4))
    grid_map_numpy.load(g, LOOSE, np.full((30, 20), 0.1))
    assert g.volume_m3(LOOSE) == pytest.approx(0.1 * 6.0)
    with pytest.raises(ValueError, match="shape"):
        grid_map_numpy.load(g, LOOSE, np.zeros((20, 30)))


def test_polygons_sharing_an_edge_through_cell_centres_split_the_cells_exactly():
    # the docstring's half-open rule: a centre on an edge shared by two polygons belongs to exactly one of
    # them. The shared edge is traversed one way by each polygon; its crossing with a scan line must come out
    # the same to the last bit either way, else a centre on it lands in both polygons or in neither.
    g = GridMap({"size_m": [1.2, 1.2], "cell_m": 0.1})
    rng = random.Random(5)
    checked = 0
    for _ in range(300):
        p = g.centre(rng.randint(0, 9), rng.randint(0, 9))
        q = g.centre(rng.randint(0, 9), rng.randint(0, 9))
        if p == q:
            continue
        dn, de = q[0] - p[0], q[1] - p[1]
        mid = (0.5 * (p[0] + q[0]), 0.5 * (p[1] + q[1]))
        left = (mid[0] - 0.37 * de, mid[1] + 0.37 * dn)      # either side of the chord p-q
        right = (mid[0] + 0.41 * de, mid[1] - 0.41 * dn)
        a = set(g.polygon_cells([p, left, q]))
        b = set(g.polygon_cells([q, right, p]))
        both = set(g.polygon_cells([p, left, q, right]))
        assert not (a & b), (p, q, sorted(a & b))
        assert a | b == both, (p, q, sorted((a | b) ^ both))
        checked += 1
    assert checked > 250
