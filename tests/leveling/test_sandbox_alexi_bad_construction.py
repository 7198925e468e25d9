"""The Sandbox and the Alexi surrogate refuse a start they cannot simulate with one ValueError, instead of a state
of NaN from the first frame on (a NaN start pose, NaN heights, a cell of 0 m) or a terrain network whose dh
window wraps onto itself on a small heightmap (the index += then keeps one dh of a cell covered twice)."""
import math

import numpy as np
import pytest

from harness.sim.alexi import nets
from harness.sim.alexi.sim import AlexiSim
from harness.sim.sandbox.terrain import TileTerrain
from harness.sim.sandbox.tracked_robot import VEHICLE_DEFAULTS
from harness.sim.sandbox.world import SandboxWorld

NAN = float("nan")


@pytest.mark.parametrize("pose", [(NAN, 0.3, 0.0), (0.3, math.inf, 0.0), (0.3, 0.3, NAN)])
def test_the_sandbox_refuses_a_non_finite_start(pose):
    with pytest.raises(ValueError, match="start pose must be finite"):
        SandboxWorld(TileTerrain(np.full((40, 40), 0.05), 0.02), *pose)


def test_a_sandbox_terrain_refuses_non_finite_heights_and_a_bad_cell():
    h = np.full((32, 32), 0.05)
    h[3, 4] = NAN
    with pytest.raises(ValueError, match=r"finite \(NaN or inf in 1 cells\)"):
        TileTerrain(h, 0.02)
    for cell in (0.0, -0.02, NAN, math.inf, True, "0.02"):
        with pytest.raises(ValueError, match="cell_m must be a finite number > 0"):
            TileTerrain(np.full((32, 32), 0.05), cell)


def _kin():
    return {"speed": nets.load("v2_speed", "float"), "dyaw": nets.load("v2_dyaw", "float")}


@pytest.mark.parametrize("case", ["nan_pose", "nan_heights", "zero_cell", "one_d"])
def test_the_surrogate_refuses_a_start_it_cannot_simulate(case):
    h, cell, pose = np.full((32, 32), 0.02), 0.02, (0.3, 0.3, 0.0)
    if case == "nan_pose":
        pose = (0.3, NAN, 0.0)
    elif case == "nan_heights":
        h[0, 0] = math.inf
    elif case == "zero_cell":
        cell = 0.0
    else:
        h = np.zeros(32)
    with pytest.raises(ValueError):
        AlexiSim(h, cell, *pose, VEHICLE_DEFAULTS, _kin())


def test_the_surrogate_refuses_a_terrain_window_larger_than_the_map():
    terrain = nets.load("terrain", "float")
    w = int(terrain.card["alexi"]["window_cells"])
    with pytest.raises(ValueError, match="%d-cell window is larger than the %d x %d heightmap" % (w, w - 1, 40)):
        AlexiSim(np.zeros((w - 1, 40)), 0.02, 0.1, 0.3, 0.0, VEHICLE_DEFAULTS, _kin(), terrain)
    sim = AlexiSim(np.zeros((w, w)), 0.02, 0.1, 0.1, 0.0, VEHICLE_DEFAULTS, _kin(), terrain)
    rec = sim.frame(0.2, 0.0)
    assert math.isfinite(rec["dx_body_m"]) and np.all(np.isfinite(sim.h))
