"""Exact volume conservation of the grid leveling world (hypothesis, derandomised): terrain units plus
carried units never change, whatever the terrain, agents, algorithm, settings or action sequence."""
import numpy as np
from hypothesis import given, settings, strategies as st

from harness.sim.leveling_grid import LevelingGrid
from harness.sim.voxel_terrain import TerrainError, VoxelTerrain


@st.composite
def height_grids(draw, max_side=6, max_height=6):
    rows = draw(st.integers(2, max_side))
    cols = draw(st.integers(2, max_side))
    cells = draw(st.lists(st.integers(0, max_height), min_size=rows * cols, max_size=rows * cols))
    return np.array(cells, dtype=np.int64).reshape(rows, cols)


@settings(max_examples=60)
@given(heights=height_grids(), ops=st.lists(st.tuples(st.booleans(), st.integers(0, 35)), max_size=200),
       condition=st.sampled_from(["range", "grad", "rms"]), eps=st.sampled_from([0.0, 0.5, 1.0, 2.0]))
def test_takes_and_puts_conserve_units_and_statistics(heights, ops, condition, eps):
    t = VoxelTerrain(heights, {"condition": condition, "epsilon_units": eps})
    initial = int(heights.sum())
    carried = 0
    for is_take, cell in ops:
        idx = cell % t.n
        if is_take:
            try:
                t.take(idx)
                carried += 1
            except TerrainError:
                assert t.h[idx] == 0
        elif carried:
            t.put(idx)
            carried -= 1
        assert t.volume + carried == initial
    a = t.as_array()
    assert int(a.sum()) == t.volume and a.min() >= 0
    assert t.range_units() == int(a.max() - a.min())
    assert abs(t.rms_units() - float(a.std())) < 1e-9
    steep = int((np.abs(np.diff(a, axis=0)) > eps).sum() + (np.abs(np.diff(a, axis=1)) > eps).sum())
    assert t.bad_pairs == steep


@settings(max_examples=40)
@given(heights=height_grids(), agents=st.integers(1, 8), seed=st.integers(0, 2 ** 16),
       algorithm=st.sampled_from(["probabilistic", "ma1", "ma2"]), rho_mode=st.sampled_from(["const", "k"]),
       rho=st.floats(0.0, 1.0), rho_sense=st.floats(0.0, 1.0), order=st.sampled_from(["random", "fixed"]),
       cycles=st.integers(1, 120))
def test_worlds_conserve_volume_exactly(heights, agents, seed, algorithm, rho_mode, rho, rho_sense, order, cycles):
    agents = min(agents, heights.size)
    cfg = {"agents": agents, "algorithm": algorithm, "order": order,
           "probabilistic": {"rho_mode": rho_mode, "rho": rho, "rho_sense": rho_sense},
           "memetic": {"rho_sense": rho_sense, "executions": 1}}
    w = LevelingGrid(cfg, seed=seed, heights=heights)
    initial = int(heights.sum())
    for _ in range(cycles):
        w.cycle()
        err = w.volume_error()
        assert err == 0 and isinstance(err, int)
        assert w.terrain.volume + w.carried_units == initial
        assert min(w.terrain.h) >= 0
    m = w.metrics()
    assert m["volume_error"] == 0 and m["pickups"] - m["deposits"] == m["carried_units"]
