"""A track's contact patch wraps around the terrain's borders; a patch larger than the grid would hold a cell twice
and write its volume back twice (sand made from nothing). TrackContact refuses it with a ValueError that leaves
the heights alone; a patch as large as the grid still conserves the volume exactly."""
import math

import numpy as np
import pytest

from harness.sim.hill_terrain import TrackContact, build_world

# the default 0.18 m x 0.045 m track's patch spans 13 cells of 0.025 m (reach 0.15 m each side + the end cells)
PRESSES = [((0.1, 0.1), 0.3, 0.2, 1), ((0.01, 0.31), -2.0, -0.1, -1), ((0.16, 0.0), math.pi / 2, 0.3, 1)]


def _world(cells):
    return build_world({"size_m": [cells * 0.025, cells * 0.025], "mounds": 0, "bed_m": 0.05},
                       np.random.default_rng(0))


def test_a_patch_as_large_as_the_grid_conserves_volume():
    world = _world(13)
    contact = TrackContact(world)
    total0 = float(world.height_m.sum())
    for centre, yaw, pitch, direction in PRESSES:
        assert contact.press(centre, yaw, pitch, 0.18, 0.045, 9.81, direction, 0.05) > 0.0
        world.erode()
    assert abs(float(world.height_m.sum()) - total0) <= 1e-12 * total0


@pytest.mark.parametrize("press", PRESSES)
def test_a_patch_larger_than_the_grid_is_refused_and_changes_nothing(press):
    world = _world(12)
    contact = TrackContact(world)
    before = world.height_m.copy()
    centre, yaw, pitch, direction = press
    with pytest.raises(ValueError, match="contact patch of 13x1[23] cells does not fit the 12x12 terrain grid"):
        contact.press(centre, yaw, pitch, 0.18, 0.045, 9.81, direction, 0.05)
    assert np.array_equal(world.height_m, before) and contact.contacts == 0
