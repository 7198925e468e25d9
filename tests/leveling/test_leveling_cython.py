"""The Cython inner loop of the probabilistic grid leveling (cython_ext/leveling.pyx) against the pure path:
the same PCG64 numbers as NumPy, and for the same seed the same final grid, cycle counts, counters and
agent states, under every setting the kernel takes; the level-grid scenario gives the same metrics.json."""
import json

import numpy as np
import pytest

from harness.cli import main
from harness.sim.leveling_grid import KERNEL_MODULES, LevelingGrid
from onboard.impl import available

pytestmark = pytest.mark.skipif("cython" not in available(KERNEL_MODULES),
                                reason="cython_ext.leveling not built (make setup)")

SMALL = {"agents": 4, "terrain": {"rows": 9, "cols": 11, "features": 5, "max_units": 6}}
CASES = [
    {},
    {"probabilistic": {"rho_mode": "k", "k": 3.0}},
    {"probabilistic": {"sense": "literal", "rho_sense": 0.2}, "order": "fixed", "max_cycles": 20000},
    {"probabilistic": {"rho": 0.8, "memory": 3, "random_move": 0.4}, "terrain": {"kind": "ridges", "max_units": 14},
     "level": {"condition": "grad", "epsilon_units": 1}},
    {"terrain": {"kind": "pits", "max_units": 9}, "level": {"condition": "rms", "epsilon_units": 0.6},
     "agents": 7},
]


def _merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) else v
    return out


def _state(grid):
    agents = [(a.phase, a.h, list(a.memory.values), a.memory.total, a.heading, a._last_move, a.steps, a.samples)
              for a in grid.agents]
    return (grid.metrics(), list(grid.terrain.h), list(grid.pos), list(grid.occupied), list(grid.carrying),
            list(grid.moved), list(grid.picked_from), list(grid.order), agents, grid.terrain.takes,
            grid.terrain.puts)


def test_pcg64_draws_are_numpys():
    from cython_ext.leveling import pcg64_doubles
    for seed in ([0, 1], [7, 123456789], [2 ** 40, 5]):
        gen = np.random.default_rng(seed)
        st = gen.bit_generator.state["state"]
        mine, after = pcg64_doubles(st["state"], st["inc"], 5000)
        assert np.array_equal(mine, gen.random(5000))
        assert after == gen.bit_generator.state["state"]["state"]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_same_seed_same_run_as_the_pure_path(case):
    cfg = _merge(SMALL, CASES[case])
    for seed in (0, 3):
        pure = LevelingGrid(dict(cfg, impl="pure"), seed)
        fast = LevelingGrid(dict(cfg, impl="cython"), seed)
        assert fast._kernel is not None and pure._kernel is None
        pure.run()
        fast.run()
        assert _state(fast) == _state(pure)
        m = pure.metrics()
        assert m["cycles"] > 100 and m["units_moved"] > 0 and m["volume_error"] == 0


def test_thesis_grid_same_final_grid_and_cycles():
    """32x32, 8 agents, rho = 0.3 to the level condition (about 200k cycles)."""
    pure = LevelingGrid({"impl": "pure"}, 2)
    fast = LevelingGrid({"impl": "cython"}, 2)
    pure.run()
    fast.run()
    assert fast.cycles_to_level == pure.cycles_to_level is not None
    assert _state(fast) == _state(pure)


def test_chunks_and_single_cycles_are_the_same_run():
    cfg = dict(SMALL, impl="cython")
    whole = LevelingGrid(cfg, 1)
    whole.run()
    chunked = LevelingGrid(cfg, 1)
    stepped = LevelingGrid(dict(SMALL, impl="pure"), 1)
    limit = 0
    while True:
        limit += 997
        level = chunked.advance(limit)
        if limit <= 3000:
            # mid-run, the mirrored state is the pure path's at the same cycle
            while stepped.cycles < chunked.cycles:
                stepped.cycle()
            assert _state(chunked) == _state(stepped)
        if level:
            break
    single = LevelingGrid(cfg, 1)
    for _ in range(500):
        single.cycle()
    part = LevelingGrid(dict(SMALL, impl="pure"), 1)
    part.run(max_cycles=500)
    assert _state(single) == _state(part)
    assert _state(chunked) == _state(whole)
    # cycling on after the level condition, as the pure path does
    pure_whole = LevelingGrid(dict(SMALL, impl="pure"), 1)
    pure_whole.run()
    assert whole.cycle() == pure_whole.cycle()
    assert _state(whole) == _state(pure_whole)


def test_too_tall_a_terrain_for_the_kernel_is_one_line():
    from harness.sim.leveling_grid import KERNEL_MAX_UNITS
    from onboard.core.settings import ConfigError
    heights = np.zeros((4, 4), dtype=np.int64)
    heights[1, 2] = KERNEL_MAX_UNITS + 1
    with pytest.raises(ConfigError, match="use impl=pure"):
        LevelingGrid({"agents": 2, "impl": "cython"}, 0, heights=heights)
    assert LevelingGrid({"agents": 2, "impl": "pure", "max_cycles": 10}, 0, heights=heights).run()["cycles"] == 10


def test_memetic_runs_pure_under_cython():
    cfg = dict(SMALL, algorithm="ma2", max_cycles=3000)
    a = LevelingGrid(dict(cfg, impl="cython"), 0)
    assert a._kernel is None
    assert a.run() == LevelingGrid(dict(cfg, impl="pure"), 0).run()


def test_scenario_metrics_identical_across_impls(tmp_path, capsys):
    files = []
    for impl in ("pure", "cython"):
        out = tmp_path / impl
        code = main(["run", "level-grid", "--reduced", "--quiet", "--seed", "4", "--out", str(out),
                     "--set", "impl=" + impl])
        assert code == 0, capsys.readouterr().err
        files.append((out / "metrics.json").read_text())
    assert files[0] == files[1]
    assert json.loads(files[0])["success"]


def test_unknown_impl_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    code = main(["run", "level-grid", "--reduced", "--quiet", "--out", str(tmp_path / "x"), "--set", "impl=numpy"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "impl" in err
    monkeypatch.setenv("ONBOARD_IMPL", "numpy")
    code = main(["run", "level-grid", "--reduced", "--quiet", "--out", str(tmp_path / "y")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "numpy" in err
