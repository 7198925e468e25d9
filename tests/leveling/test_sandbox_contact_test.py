"""The Sandbox's contact test: "mesh" (every cell's ray cast against each track at every substep, as the
thesis's SCM in Chrono 3.0) and "patch" (the cells around the track) find the same hits and levels and end in
bit-identical terrains and poses, also across the wrapped borders; the mesh test casts one ray per cell."""
import math

import numpy as np
import pytest

from harness.sim.sandbox.terrain import TileTerrain, tileable_heights
from harness.sim.sandbox.world import SandboxWorld

CELL = 0.02


def _state(world):
    r = world.robot
    t = world.terrain
    return (r.north_m, r.east_m, r.yaw_rad, r.tan_pitch, r.tan_roll, r.base_m, t.height_m.tobytes(),
            t.sunk_m.tobytes(), t.displaced_m3, t.ray_hits)


@pytest.mark.parametrize("seed", [3, 11])
def test_mesh_and_patch_contact_tests_give_bit_identical_runs_across_the_borders(seed):
    rng = np.random.default_rng(seed)
    heights = tileable_heights(40, 40, CELL, 0.05, 0.25, rng)
    # start close to a corner, heading diagonally out of it: the tracks' patches wrap around both borders
    start = (0.03, 0.77, rng.uniform(0.6, 0.9) * math.pi)
    commands = [(float(v), float(w)) for v, w in zip(rng.uniform(-0.25, 0.25, 6), rng.uniform(-1.5, 1.5, 6))]
    worlds = {}
    for test in ("mesh", "patch"):
        world = SandboxWorld(TileTerrain(heights, CELL, contact_test=test), *start, substeps=4)
        for speed, yaw_rate in commands:
            for _ in range(5):
                world.frame(speed, yaw_rate)
        worlds[test] = world
    mesh, patch = worlds["mesh"], worlds["patch"]
    assert mesh.terrain.displaced_m3 > 0.0 and mesh.terrain.ray_hits > 0
    assert _state(mesh) == _state(patch)
    assert not np.array_equal(mesh.terrain.height_m, heights)           # the run did deform the soil
    # the mesh test casts a ray from every cell per track and substep (the settling at the start presses too)
    presses = mesh.terrain.presses
    assert presses == 2 * (1 + 4 * 30)
    assert mesh.terrain.ray_casts == presses * 40 * 40
    assert patch.terrain.ray_casts < mesh.terrain.ray_casts / 4


def test_the_mesh_ray_cast_hits_the_cells_under_the_track_at_the_plane_of_its_bottom():
    t = TileTerrain(np.zeros((32, 32)), CELL)
    length, width = 0.18, 0.045
    # a track centred on the south-west corner, heading north-east: its footprint wraps onto all four corners
    along, lateral, level, hit = t.ray_cast_mesh(0.0, 0.0, math.pi / 4, length, width, 0.01, 0.1, -0.05)
    i = (np.arange(32) + 0.5) * CELL
    dn = np.where(i < 0.32, i, i - 0.64)[:, None]                 # nearest image of each cell centre
    de = np.where(i < 0.32, i, i - 0.64)[None, :]
    c = s = math.sqrt(0.5)
    a_ref, l_ref = c * dn + s * de, -s * dn + c * de
    assert np.allclose(along, a_ref, atol=1e-12) and np.allclose(lateral, l_ref, atol=1e-12)
    assert np.array_equal(hit, (np.abs(a_ref) <= length / 2) & (np.abs(l_ref) <= width / 2))
    assert np.allclose(level, 0.01 + 0.1 * a_ref + 0.05 * l_ref, atol=1e-12)
    assert hit[0, 0] and hit[-1, -1] and hit.sum() == t.ray_hits > 10
    assert t.ray_casts == 32 * 32


def test_an_unknown_contact_test_is_refused():
    with pytest.raises(ValueError, match="contact_test"):
        TileTerrain(np.zeros((32, 32)), CELL, contact_test="everything")
