"""The Cython leveling loop (cython_ext/leveling.pyx) at the edges of its 64-bit C integers, against the pure path
(harness/sim/leveling_grid.py, harness/sim/voxel_terrain.py, onboard/leveling/probabilistic.py).

Before: the rms level test computed ``n * sumsq - total * total`` in int64, which wraps on a tall terrain (a
32x32 checkerboard of 0 and 2**23 units: both products pass 2**63) and declared it level after one cycle where the
pure path (exact ints) runs on; it also squared the bound as ``x * x`` where Python's ``(eps * n) ** 2`` is libm's
pow, one ulp apart at near-ties (a terrain between the two was level on one path only); ``run(max_cycles=2**63)``
raised OverflowError in the kernel where the pure loop simply runs to the level condition; ``probabilistic.memory``
of 2**31 raised OverflowError building the kernel (now a ConfigError naming impl=pure, as for a terrain too tall
for it)."""
import numpy as np
import pytest

from harness.sim.leveling_grid import KERNEL_MAX_MEMORY, KERNEL_MODULES, KERNEL_MAX_UNITS, LevelingGrid
from onboard.core.settings import ConfigError
from onboard.impl import available

pytestmark = pytest.mark.skipif("cython" not in available(KERNEL_MODULES),
                                reason="cython_ext.leveling not built (make setup)")


def _state(grid):
    agents = [(a.phase, a.h, list(a.memory.values), a.heading, a._last_move, a.steps, a.samples)
              for a in grid.agents]
    return (grid.metrics(), list(grid.terrain.h), list(grid.pos), list(grid.carrying), list(grid.order), agents)


def _both(cfg, heights, seed=0, max_cycles=None):
    out = []
    for impl in ("pure", "cython"):
        g = LevelingGrid(dict(cfg, impl=impl), seed, heights=heights)
        assert (g._kernel is not None) == (impl == "cython")
        g.run(max_cycles)
        out.append(_state(g))
    return out


@pytest.mark.parametrize("tall", [1 << 23, KERNEL_MAX_UNITS])
def test_rms_level_test_on_a_tall_terrain_is_exact(tall):
    heights = (np.indices((32, 32)).sum(axis=0) % 2) * tall
    pure, fast = _both({"agents": 2, "max_cycles": 6, "level": {"condition": "rms", "epsilon_units": 1.0}}, heights)
    assert fast == pure
    assert pure[0]["level_reached"] is False and pure[0]["cycles"] == 6


def test_rms_level_reached_on_a_tall_terrain_at_the_same_cycle():
    # std of the 0 / 2**23 checkerboard is 2**22 units: an epsilon just above it is level at once, one just
    # below never (a deposit or pick-up changes it by far less than the gap)
    heights = (np.indices((32, 32)).sum(axis=0) % 2) * (1 << 23)
    for eps, level in ((float(1 << 22) + 0.5, True), (float(1 << 22) - 0.5, False)):
        pure, fast = _both({"agents": 3, "max_cycles": 8, "level": {"condition": "rms", "epsilon_units": eps}},
                           heights)
        assert fast == pure
        assert pure[0]["level_reached"] is level


def test_a_limit_beyond_64_bits_runs_as_the_pure_loop():
    heights = [[0, 5, 9], [1, 1, 0]]
    pure, fast = _both({"agents": 4, "max_cycles": 10}, heights, seed=2, max_cycles=1 << 64)
    assert fast == pure and pure[0]["level_reached"] is True
    pure, fast = _both({"agents": 4, "max_cycles": 10}, heights, seed=2, max_cycles=-(1 << 64))
    assert fast == pure and pure[0]["cycles"] == 0


def test_the_kernel_takes_any_limit():
    g = LevelingGrid({"agents": 2, "impl": "cython"}, 0, heights=[[0, 4], [1, 1]])
    assert g._kernel.advance(-(1 << 70)) is False and g._kernel.cycles == 0
    assert g._kernel.advance(1 << 70) is True


def test_a_memory_too_long_for_the_kernel_is_one_line():
    cfg = {"agents": 2, "max_cycles": 50, "probabilistic": {"memory": 1 << 31}}
    with pytest.raises(ConfigError, match="use impl=pure"):
        LevelingGrid(dict(cfg, impl="cython"), 0, heights=[[0, 5], [1, 1]])
    assert LevelingGrid(dict(cfg, impl="pure"), 0, heights=[[0, 5], [1, 1]]).run()["cycles"] > 0
    # at the bound it runs, the same as the pure path
    cfg["probabilistic"]["memory"] = KERNEL_MAX_MEMORY // 2
    pure, fast = _both(cfg, [[0, 5], [1, 1]])
    assert fast == pure


# 8x8 terrains whose rms numerator v = n * sumsq - total**2 lies between Python's (eps * n) ** 2 (libm pow) and the
# correctly rounded (eps * n) * (eps * n), one ulp apart: the pure test says not level, a kernel squaring with x * x
# (as it did) said level after the first cycle (rho = 0: no unit ever moves, so v never changes)
POW_TIES = [([2766450, 1941785, 13288652], 1690743.6302043933),
            ([883272, 15521367, 6363659], 2069455.0566459761),
            ([13650444, 9734737, 14423494], 2700697.3390702778)]


@pytest.mark.parametrize("first,eps", POW_TIES)
def test_rms_bound_is_squared_as_python_squares_it(first, eps):
    heights = np.zeros((8, 8), dtype=np.int64)
    heights.flat[:3] = first
    n = heights.size
    v = n * sum(h * h for h in first) - sum(first) ** 2
    assert (eps * n) ** 2 < v <= (eps * n) * (eps * n)          # the tie this case is about
    cfg = {"agents": 2, "max_cycles": 4, "probabilistic": {"rho": 0.0},
           "level": {"condition": "rms", "epsilon_units": eps}}
    pure, fast = _both(cfg, heights)
    assert fast == pure
    assert pure[0]["level_reached"] is False and pure[0]["cycles"] == 4
