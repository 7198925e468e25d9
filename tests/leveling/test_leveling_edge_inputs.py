"""Leveling edges under CPython: a terrain PNG whose header declares a grid too large (refused from the header,
before its pixels are decoded), an MA1 selection returning a NumPy integer, a tracked robot wrapping across a
border by less than a float's resolution."""
import math
import struct
import zlib

import numpy as np
import pytest

from harness.sim.hill_robots import TrackedRobot
from harness.sim.sand_world import SandWorld
from harness.sim.voxel_terrain import load_heights
from onboard.core.samples import WheelCmd
from onboard.core.settings import ConfigError
from onboard.leveling import grid as G
from onboard.leveling import memetic as M


def _chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def _png_header_only(path, width, height, depth=8):
    """A grayscale PNG declaring width x height pixels with an empty image stream (a few dozen bytes)."""
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, 0, 0, 0, 0))
                     + _chunk(b"IDAT", zlib.compress(b"")) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("width,height", [(70000, 1), (5000, 5000), (3, 4097), (60000, 60000)])
def test_a_png_declaring_too_many_cells_is_refused_by_its_size(tmp_path, width, height):
    p = tmp_path / "huge.png"
    _png_header_only(p, width, height, 16)
    with pytest.raises(ConfigError, match=r"%dx%d cells; each side must be 2\.\.4096" % (height, width)):
        load_heights(str(p))


def test_a_png_of_one_pixel_is_refused_by_its_size(tmp_path):
    p = tmp_path / "one.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
                  + _chunk(b"IDAT", zlib.compress(b"\x00\x80")) + _chunk(b"IEND", b""))
    with pytest.raises(ConfigError, match=r"1x1 cells; each side must be 2\.\.4096"):
        load_heights(str(p))


def test_ma1_selection_may_return_a_numpy_integer():
    rand = G.XorShift32(10)
    agents = [M.MemeticAgent({"executions": 1}, rand) for _ in range(3)]
    for _ in range(20):
        for a in agents:
            a.step(1, False, False, rand)
    agents[2].round_fitness[0] = 0.5
    oracle = M.Ma1Oracle({"executions": 1}, select=np.argmax)
    kept = list(agents[2].chromosome)
    assert oracle.after_cycle(agents, rand) == 2
    assert oracle.best_fitness == [0.5] and agents[2].chromosome == kept and agents[2].replaced == 0


def test_a_wrap_by_less_than_a_float_step_lands_inside_the_world():
    world = SandWorld({"size_m": [1.5, 1.5], "cell_m": 0.025, "piles_min": 0, "piles_max": 0,
                       "spoil_band_m": 0.025})
    robot = TrackedRobot(world, 0.3, 0.7, math.pi)              # facing south
    robot.north_m = 1e-17
    robot.left_mps = robot.right_mps = 2e-11
    robot.command(WheelCmd(0, 2e-11 / 0.03, 2e-11 / 0.03))
    robot.step(1e-6)                                            # north 1e-17 - 2e-17: -1e-17 % 1.5 == 1.5
    assert 0.0 <= robot.north_m < 1.5 and robot.wraps == 1


def test_a_track_over_no_cell_centre_is_refused_and_changes_nothing():
    from harness.sim.hill_terrain import TrackContact
    world = SandWorld({"size_m": [0.5, 0.5], "cell_m": 0.025, "piles_min": 0, "piles_max": 0, "spoil_band_m": 0.025})
    contact = TrackContact(world)
    before = world.height_m.copy()
    with pytest.raises(ValueError, match="covers no centre of the terrain's 0.025 m cells"):
        contact.press((0.25, 0.25), 0.0, 0.0, 0.01, 0.01, 10.0, 1, 0.01)
    assert contact.contacts == 0 and world.cell_updates == 0 and np.array_equal(world.height_m, before)


def test_an_oracle_or_selection_the_grid_would_not_use_is_refused():
    from harness.sim.leveling_grid import LevelingGrid
    small = {"agents": 2, "terrain": {"rows": 4, "cols": 4}, "max_cycles": 10}
    with pytest.raises(ConfigError, match="probabilistic algorithm has no memetic oracle"):
        LevelingGrid(small, select=lambda fits: 0)
    with pytest.raises(ConfigError, match="probabilistic algorithm has no memetic oracle"):
        LevelingGrid(small, oracle=M.Ma2Oracle())
    with pytest.raises(ConfigError, match="not beside an oracle given"):
        LevelingGrid(dict(small, algorithm="ma1"), oracle=M.Ma1Oracle(), select=lambda fits: 0)
    assert LevelingGrid(dict(small, algorithm="ma1"), select=lambda fits: 1).run()["cycles"] == 10
