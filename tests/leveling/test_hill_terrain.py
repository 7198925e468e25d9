"""The hill levelers' deformable terrain (SandWorld + Bekker track sinkage and bulldozing), the tracked
robot resting on it and its IMU, and heightmap files read through the voxel grid's loader."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.sim.hill_robots import TerrainImu, TrackedRobot
from harness.sim.hill_terrain import (QUANT_M, TrackContact, build_world, file_heights_m, mound_volume_m3,
                                      roughness)
from onboard.core.settings import ConfigError
from onboard.estimators.tilt import TiltEstimator

FLAT = {"size_m": [1.0, 1.0], "mounds": 0, "bed_m": 0.05}
QUIET_IMU = {"accel_bias_sigma_mps2": 0.0, "gyro_bias_sigma_dps": 0.0, "accel_noise_mps2": 0.0,
             "gyro_noise_dps": 0.0}


def _world(config=FLAT, seed=0):
    return build_world(config, np.random.default_rng(seed))


def test_flat_sand_takes_the_bekker_rut_once():
    """A 9.81 N track on fresh flat sand sinks z0 = (p / (k_c/b + k_phi))^(1/n) (Bekker); pressing
    again at the same place moves nothing (plastic sinkage); the volume is the same."""
    world = _world()
    contact = TrackContact(world)
    v0 = world.volume_m3()
    z0 = contact.flat_sinkage_m(9.81, 0.2, 0.05)
    assert math.isclose(z0, (9.81 / 0.01 / (990.0 / 0.05 + 1528430.0)) ** (1 / 1.1))
    moved = contact.press((0.5, 0.5), 0.0, 0.0, 0.2, 0.05, 9.81, 1)
    h = world.height_m
    rut = h[16:24, 19:21]                      # the cells whose centres lie under the 0.2 x 0.05 m track
    assert np.allclose(rut, 0.05 - z0, atol=1e-5)
    assert math.isclose(moved, z0 * rut.size * world.cell_area_m2, rel_tol=1e-3)
    assert h[20, 21] > 0.05 and h[20, 18] > 0.05          # the berms
    assert contact.press((0.5, 0.5), 0.0, 0.0, 0.2, 0.05, 9.81, 1) == 0.0
    assert abs(world.volume_m3() - v0) <= 1e-15


def test_a_crest_carries_the_track_alone_and_sinks_deeper():
    world = _world(dict(FLAT, mounds=0))
    world.add_pile(0.5, 0.5, mound_volume_m3(0.04, 0.3), 0.3)
    contact = TrackContact(world)
    h0 = world.height_m.copy()
    z0 = contact.flat_sinkage_m(9.81, 0.18, 0.045)
    contact.press((0.5, 0.5), 0.0, 0.0, 0.18, 0.045, 9.81, 1)
    dh = world.height_m - h0
    assert -dh[19:21, 19:21].min() > 1.8 * z0            # the crest cells under the track
    assert dh[13:17, 18].max() > dh[19:21, 18].max()      # its sand ran to the lower ends of the berms


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(-math.pi, math.pi),
                          st.floats(-0.4, 0.4), st.sampled_from([-1, 1])), min_size=1, max_size=12),
       st.integers(0, 3))
def test_volume_is_conserved_under_any_presses_and_erosion(presses, seed):
    world = _world({"size_m": [1.0, 1.0], "mounds": 3, "mound_radius_m": [0.1, 0.3]}, seed)
    contact = TrackContact(world, {"bulldoze_front_fraction": 0.5})
    v0 = world.volume_m3()
    for n, e, yaw, pitch, direction in presses:
        contact.press((n, e), yaw, pitch, 0.18, 0.045, 9.81, direction)
        world.erode()
    assert abs(world.volume_m3() - v0) <= 1e-12 * v0


@pytest.mark.parametrize("yaw,pitch,roll", [(0.0, True, False), (math.pi, True, False),
                                            (math.pi / 2, False, True), (-math.pi / 2, False, True)])
def test_robot_on_a_tilted_plane_reads_the_slope(yaw, pitch, roll):
    """Heights rising 0.2 m per m northward: pitch atan(0.2) heading north, -atan(0.2) south; roll
    +atan(0.2) heading east (the right side, south, is lower), -atan(0.2) west."""
    world = _world()
    north = (np.arange(world.rows) + 0.5) * world.cell_m
    world.height_m[:] = 0.2 * north[:, None]
    robot = TrackedRobot(world, 0.5, 0.5, yaw)
    slope = math.atan(0.2)
    if pitch:
        assert math.isclose(robot.pitch_rad, slope * math.cos(yaw), abs_tol=1e-12) and abs(robot.roll_rad) < 1e-12
    if roll:
        assert math.isclose(robot.roll_rad, slope * math.sin(yaw), abs_tol=1e-12) and abs(robot.pitch_rad) < 1e-12


def test_imu_of_a_robot_climbing_a_plane_gives_its_tilt():
    """A noiseless IMU on a robot driving up a 0.2 slope at constant speed: the estimated pitch is the slope."""
    world = _world()
    north = (np.arange(world.rows) + 0.5) * world.cell_m
    world.height_m[:] = 0.2 * north[:, None]
    robot = TrackedRobot(world, 0.2, 0.5, 0.0, {"motor_tau_s": 1e-6})
    imu = TerrainImu(robot, np.random.default_rng(1), QUIET_IMU)
    est = TiltEstimator()
    robot.cmd_left_radps = robot.cmd_right_radps = 0.1 / robot.radius_m
    for k in range(1, 301):
        robot.step(0.01)
        s = imu.sample(k * 10000)
        if s is not None:
            est.predict(s)
    assert math.isclose(est.pitch_rad, math.atan(0.2), abs_tol=1e-6) and abs(est.roll_rad) < 1e-6


def test_files_through_the_shared_loader(tmp_path):
    npy = tmp_path / "dune.npy"
    heights = np.zeros((12, 20))
    heights[4:8, 5:15] = 0.03
    np.save(npy, heights)
    world = _world({"file": str(npy), "cell_m": 0.05, "bed_m": 0.02, "height_scale_m": 1.0, "pixel_m": 0.05})
    assert (world.rows, world.cols) == (12, 20) and math.isclose(world.cell_m, 0.05)
    assert math.isclose(world.volume_m3(), 40 * 0.03 * 0.0025, rel_tol=1e-9)   # eroded, never lost
    assert np.allclose(file_heights_m(str(npy), 1.0), heights, atol=QUANT_M / 2)
    assert np.allclose(file_heights_m(str(npy), peak_m=0.05), heights * 0.05 / 0.03, atol=QUANT_M)
    small = _world({"file": str(npy), "height_scale_m": 1.0})      # 12 x 20 pixels over >= 1 m: 40 x 67 cells
    assert (small.rows, small.cols) == (40, 67)
    assert math.isclose(small.volume_m3(), 40 * 0.03 * (1.0 / 12) ** 2, rel_tol=0.05)
    with pytest.raises(ConfigError, match="at least 8 per side"):
        np.save(tmp_path / "thin.npy", np.zeros((4, 30)))
        _world({"file": str(tmp_path / "thin.npy")})
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ConfigError, match="is empty"):
        _world({"file": str(tmp_path / "empty.png")})


def test_roughness_of_a_known_grid():
    h = np.array([[0.0, 0.0], [0.0, 0.04]])
    r = roughness(h, 0.02)
    assert math.isclose(r["rms_m"], float(np.std(h))) and math.isclose(r["max_gradient"], 2.0)
    assert math.isclose(r["range_m"], 0.04)


def test_a_climbing_track_slips_and_throws_sand_downhill():
    world = _world()
    contact = TrackContact(world)
    slips = [contact.slip(math.radians(d), 9.81, 0.18, 0.045) for d in (-10, 0, 5, 10, 15, 20, 40)]
    assert slips[0] == 0.0 and slips[1] < 0.01 and slips[-1] == 1.0
    assert all(a < b for a, b in zip(slips[1:-1], slips[2:]))       # more grade, more slip
    north = (np.arange(world.rows) + 0.5) * world.cell_m
    world.height_m[:] = 0.05 + 0.2 * north[:, None]                  # uphill to the north
    h0 = world.height_m.copy()
    v0 = world.volume_m3()
    contact.press((0.5, 0.5), 0.0, math.atan(0.2), 0.18, 0.045, 9.81, 1, moved_m=0.05)
    assert contact.sheared_m3 > 0.0 and abs(world.volume_m3() - v0) <= 1e-15
    gained = world.height_m - h0
    assert gained[15, 19:21].min() > 0.0 and gained[24, 19:21].max() <= 0.0   # behind (south) gains, ahead not


def test_a_files_first_row_is_the_north_edge(tmp_path):
    """As in level-grid and the Sandbox: the file's first row lies along the north edge of the sand world."""
    npy = tmp_path / "north_dune.npy"
    heights = np.zeros((12, 20))
    heights[:3, :] = 0.03                                       # a dune along the file's top edge
    np.save(npy, heights)
    world = _world({"file": str(npy), "cell_m": 0.05, "bed_m": 0.02, "height_scale_m": 1.0, "pixel_m": 0.05,
                    "erosion_iterations": 0})
    north_half, south_half = world.height_m[6:], world.height_m[:6]
    assert north_half.sum() > south_half.sum() + 0.5 * 3 * 20 * 0.03
