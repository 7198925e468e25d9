"""The Sandbox and Alexi simulators at the tile's border and under non-finite commands, and a session file
written whole or not at all:

- a position a hair below 0 wraps into [0, size) (its float remainder is size itself), so a frame in which the
  robot does not move is not flagged as a teleport;
- a NaN/inf command is refused (the held commands drive the frame) and counted, the state stays finite;
- a session write that fails leaves the file that was there, and no temporary file.
"""
import math
import os

import numpy as np
import pytest

from harness.sim.alexi.sim import AlexiSim
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.terrain import TileTerrain, wrap_into_tile
from harness.sim.sandbox.tracked_robot import VEHICLE_DEFAULTS
from harness.sim.sandbox.world import SandboxWorld

CELL = 0.02
SIDE = 32                       # a 0.64 m tile
SIZE = SIDE * CELL
HAIR = -1e-18                   # -1e-18 % 0.64 == 0.64 in floating point


class _Const:
    """A stand-in kinematic network: always predicts ``value``."""

    def __init__(self, value):
        self.value = value

    def predict_one(self, x):
        assert np.all(np.isfinite(x)), x
        return np.array([self.value])


def _alexi(north_m, east_m, speed=0.0, three=False):
    kin = ({"dnorth": _Const(speed), "deast": _Const(0.0), "dyaw": _Const(0.0)} if three
           else {"speed": _Const(speed), "dyaw": _Const(0.0)})
    return AlexiSim(np.full((SIDE, SIDE), 0.02), CELL, north_m, east_m, 0.3, VEHICLE_DEFAULTS, kin)


def test_wrap_into_tile_stays_inside_the_tile():
    assert HAIR % SIZE == SIZE                                   # the float trap the helper avoids
    for x, want in ((HAIR, 0.0), (-1e-300, 0.0), (0.0, 0.0), (SIZE, 0.0), (-0.1, SIZE - 0.1), (0.7, 0.7 - SIZE),
                    (-3 * SIZE - 0.01, SIZE - 0.01)):
        got = wrap_into_tile(x, SIZE)
        assert 0.0 <= got < SIZE and math.isclose(got, want, abs_tol=1e-12), (x, got)


@pytest.mark.parametrize("north,east", [(HAIR, 0.32), (0.32, HAIR), (HAIR, HAIR)])
def test_sandbox_robot_on_the_border_is_inside_the_tile_and_not_teleported_when_still(north, east):
    world = SandboxWorld(TileTerrain(np.full((SIDE, SIDE), 0.05), CELL), north, east, 0.0, substeps=2)
    r = world.robot
    assert 0.0 <= r.north_m < SIZE and 0.0 <= r.east_m < SIZE
    for _ in range(4):
        rec = world.frame(0.0, 0.0)
        assert 0.0 <= r.north_m < SIZE and 0.0 <= r.east_m < SIZE
        if rec["dnorth_m"] == 0.0 and rec["deast_m"] == 0.0:
            assert not rec["teleport"], rec                     # it did not move: it cannot have left the tile


@pytest.mark.parametrize("north,east", [(HAIR, 0.32), (0.32, HAIR)])
def test_alexi_robot_on_the_border_is_inside_the_tile_and_not_teleported_when_still(north, east):
    sim = _alexi(north, east)
    assert 0.0 <= sim.north_m < SIZE and 0.0 <= sim.east_m < SIZE
    for _ in range(3):
        rec = sim.frame(0.0, 0.0)
        assert not rec["teleport"]
        assert 0.0 <= rec["north_m"] < SIZE and 0.0 <= rec["east_m"] < SIZE


@pytest.mark.parametrize("bad", [(math.nan, 0.0), (0.1, math.nan), (math.inf, 0.0), (0.0, -math.inf)])
def test_sandbox_refuses_and_counts_a_non_finite_command(bad):
    def run(commands):
        world = SandboxWorld(TileTerrain(np.full((SIDE, SIDE), 0.05), CELL), 0.32, 0.32, 0.0, substeps=2)
        recs = [world.frame(*c) for c in commands]
        return world, recs
    good, good_recs = run([(0.2, 0.0)] * 4)
    world, recs = run([(0.2, 0.0)] * 2 + [bad] * 2)
    r = world.robot
    assert recs[-1]["dx_body_m"] > 0.0                          # still forward, not full reverse
    # the held command drove the refused frames: the same run as with the command repeated
    assert [x["left_cmd_radps"] for x in recs] == [x["left_cmd_radps"] for x in good_recs]
    assert (r.north_m, r.east_m, r.yaw_rad) == (good.robot.north_m, good.robot.east_m, good.robot.yaw_rad)
    assert r.rejected_commands == 2 and good.robot.rejected_commands == 0


@pytest.mark.parametrize("three", [False, True])
@pytest.mark.parametrize("bad", [(math.nan, 0.0), (0.1, math.nan), (-math.inf, 0.0)])
def test_alexi_refuses_and_counts_a_non_finite_command(bad, three):
    sim = _alexi(0.32, 0.32, speed=0.001, three=three)
    ref = _alexi(0.32, 0.32, speed=0.001, three=three)
    for _ in range(2):
        sim.frame(-0.2, 0.3)
        ref.frame(-0.2, 0.3)
    for _ in range(2):
        rec = sim.frame(*bad)
        want = ref.frame(-0.2, 0.3)
        assert rec == want
    assert sim.rejected_commands == 2 and ref.rejected_commands == 0
    assert all(math.isfinite(v) for v in (sim.left_radps, sim.right_radps, sim.north_m, sim.east_m, sim.yaw_rad))


def test_a_failed_session_write_leaves_the_file_that_was_there(tmp_path, monkeypatch):
    path = str(tmp_path / "sandbox_A.npz")
    arrays = {k: np.zeros(8, dtype=sess.TABLE[k][0]) for k in sess.TABLE_KEYS}
    arrays["time_us"] = np.arange(1, 9, dtype=np.int64) * 10000
    sess.save_npz(path, arrays, {"format": "sandbox-data", "run": 1})
    before = open(path, "rb").read()

    real = np.savez_compressed

    def fails_half_way(fh, **data):
        real(fh, **data)
        fh.seek(len(before) // 2)
        fh.truncate()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sess.np, "savez_compressed", fails_half_way)
    with pytest.raises(OSError):
        sess.save_npz(path, dict(arrays, amplitude=np.ones(8)), {"format": "sandbox-data", "run": 2})
    assert open(path, "rb").read() == before
    monkeypatch.undo()
    loaded, meta = sess.load_npz(path)
    assert meta["run"] == 1 and np.array_equal(loaded["time_us"], arrays["time_us"])
    assert os.listdir(tmp_path) == ["sandbox_A.npz"]
