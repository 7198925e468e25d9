"""The controller channels of the learned soil estimator (soil paper section 3, notes section 2.8: the
network reads the cascaded controller's commands): the track loader exposes its speed loop's commanded
tractive effort, which is the drive force it applies until the tracks slip and which rises with the blade's
load. (That the world logs it with the operator's commands and the estimator reads it from there:
``test_learned_estimator.py``.)"""
import numpy as np
import pytest

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from harness.sim.track_loader import TrackLoader


def _lane(relative_density_pct, seed=3):
    fields = sw.build_fields({"size_m": [8.0, 4.0], "cell_m": 0.1, "soil": "loam",
                              "relative_density_pct": relative_density_pct})
    loader = TrackLoader(SoilTerrain(fields), {"operator": {"depth_m": 0.12, "lanes": {"length_m": 1.5}}},
                         RunRandom(seed))
    samples = []
    loader.run(samples.append)
    return loader, samples


@pytest.fixture(scope="module")
def lanes():
    return {idd: _lane(idd) for idd in (10.0, 90.0)}


def test_the_drive_command_is_the_applied_drive_force_until_the_tracks_slip(lanes):
    for loader, samples in lanes.values():
        cmd = np.array([s.drive_command_n for s in samples])
        applied = np.array([s.truth["drive_force_n"] for s in samples])
        slipping = np.array([s.truth["slipping"] for s in samples])
        assert np.all(np.isfinite(cmd)) and np.all(np.abs(cmd) <= loader.config["drive"]["max_force_n"])
        np.testing.assert_array_equal(cmd[~slipping], applied[~slipping])
        assert np.all(np.abs(cmd[slipping]) >= np.abs(applied[slipping]))
        # the sensors' other outputs are what they were: the torque path reads the applied force, not the command
        torque = np.array([s.drive_torque_nm for s in samples])
        assert np.corrcoef(torque, applied)[0, 1] > 0.99


def test_the_drive_command_rises_with_the_blade_load(lanes):
    """Dense soil, the same lane: the loop commands about as much more effort as the blade meets more
    resistance (the command is the drawbar pull plus the rolling resistance and inertia, and more while the
    tracks slip)."""
    cmd, fx = {}, {}
    for idd, (_loader, samples) in lanes.items():
        cut = [s for s in samples if s.phase == "cut"][60:]         # after the entry ramp
        cmd[idd] = float(np.mean([s.drive_command_n for s in cut]))
        fx[idd] = float(np.mean([s.truth["fx_n"] for s in cut]))
    assert fx[90.0] > 1.5 * fx[10.0]
    assert cmd[90.0] - cmd[10.0] == pytest.approx(fx[90.0] - fx[10.0], rel=0.35)
    assert cmd[10.0] == pytest.approx(fx[10.0], rel=0.25)
