"""Shared fixtures of the leveling tests."""
import math

import pytest

from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI
from harness.sim.rng import RunRandom
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.config import load_experiment
from harness.sim.sandbox.world import SandboxWorld


@pytest.fixture(scope="module")
def example_session(tmp_path_factory):
    """``make(frames, segment_frames, seed, stream, crop_cells)`` -> path of a short Sandbox session on the
    example experiment's terrain A (Alg. 5 schedule: speeds up to 0.25 m/s, yaw rates up to pi/2 rad/s,
    amplitudes U(0.25, 1.0); terrain crops of ``crop_cells`` cells, 0: none), saved as the datagen saves it."""
    def make(frames, segment_frames, seed, stream, crop_cells):
        exp = load_experiment(EXAMPLE_INI)
        north, east, yaw = exp.start
        world = SandboxWorld(exp.terrain(), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us, exp.substeps,
                             exp.erosion_iterations)
        arrays = sess.run_session(world, frames, segment_frames, 0.25, math.pi / 2,
                                  RunRandom(seed).stream(stream).uniform, (0.25, 1.0), crop_cells)
        path = tmp_path_factory.mktemp("alexi_" + stream) / "sandbox_A.npz"
        sess.save_npz(str(path), arrays, sess.meta("A", world, seed, stream))
        return str(path)
    return make
