"""The hill levelers' tracked robot and its IMU under bad input: a track too small for the terrain's cells is a
ConfigError line before the run (it crashed mid-run, a NumPy zero-size error, when it covered no cell centre), a
NaN or infinite wheel command is refused and counted (it turned the pose into NaN), and an IMU sample not after
the previous one is a ValueError that changes nothing (it was a ZeroDivisionError after the IMU had taken it)."""
import math

import numpy as np
import pytest

from harness.cli import main
from harness.sim.hill_robots import TerrainImu, TrackedRobot
from harness.sim.hill_terrain import TrackContact, build_world
from onboard.core.samples import WheelCmd
from onboard.core.settings import ConfigError

FLAT = {"size_m": [1.0, 1.0], "mounds": 0, "bed_m": 0.05}           # cells of 0.025 m: diagonal 0.0354 m


def _world():
    return build_world(FLAT, np.random.default_rng(0))


@pytest.mark.parametrize("vehicle", [{"track_width_m": 0.03}, {"track_length_m": 0.02, "track_width_m": 0.01}])
def test_a_track_smaller_than_a_cell_diagonal_is_refused(vehicle):
    with pytest.raises(ConfigError, match="each side must be at least 0.03536 m") as info:
        TrackedRobot(_world(), 0.5, 0.5, 0.0, vehicle)
    assert "\n" not in str(info.value)


def test_a_track_of_a_cell_diagonal_presses_in_any_pose():
    world = _world()
    side = math.sqrt(2.0) * world.cell_m + 1e-9
    robot = TrackedRobot(world, 0.5, 0.5, 0.0, {"track_length_m": side, "track_width_m": side})
    contact = TrackContact(world)
    total0 = float(world.height_m.sum())
    rng = np.random.default_rng(4)
    for _ in range(300):
        robot.north_m, robot.east_m = rng.uniform(0.2, 0.8, 2)
        robot.yaw_rad, robot.left_mps, robot.right_mps = rng.uniform(-math.pi, math.pi), 0.1, 0.1
        robot.pitch_rad = 0.2
        robot.press(contact, 0.05)
    assert contact.displaced_m3 > 0.0 and contact.sheared_m3 > 0.0
    assert abs(float(world.height_m.sum()) - total0) <= 1e-12 * total0


def test_the_cli_refuses_a_track_narrower_than_a_cell_with_one_line(tmp_path, capsys):
    code = main(["run", "level-hill", "--quiet", "--out", str(tmp_path / "out"), "--reduced", "--set", "duration_s=5",
                 "--set", "vehicle.track_width_m=0.01", "--set", "vehicle.track_length_m=0.02"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "each side must be at least" in err


@pytest.mark.parametrize("vehicle", [{"track_width_m": 0.01, "track_length_m": 0.02}, {"track_width_m": 0.03}])
def test_level_hill_refuses_a_track_smaller_than_a_cell_diagonal_before_the_run(vehicle):
    """The scenario's check_settings applies the robot's rule (hill_robots.check_track_covers_cells) up front:
    prepare refuses the settings without building a robot (it used to pass, and the run failed in the fleet)."""
    from harness.scenarios import prepare

    with pytest.raises(ConfigError, match=r"vehicle track_length_m x track_width_m .*each side must be at least "
                                          r"0.03536 m") as info:
        prepare("level-hill", {"vehicle": vehicle, "terrain": FLAT})
    assert "\n" not in str(info.value)


def test_level_hill_takes_its_default_and_reduced_tracks():
    from harness.scenarios import prepare

    for reduced in (False, True):
        _module, config = prepare("level-hill", reduced=reduced)
        assert config["vehicle"]["track_width_m"] == 0.045


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_wheel_command_is_refused_and_counted(bad):
    robot = TrackedRobot(_world(), 0.5, 0.5, 0.0)
    assert robot.command(WheelCmd(0, 2.0, 2.0)) is True
    assert robot.command(WheelCmd(1, bad, 1.0)) is False and robot.command(WheelCmd(2, 1.0, bad)) is False
    assert robot.rejected_commands == 2 and (robot.cmd_left_radps, robot.cmd_right_radps) == (2.0, 2.0)
    for _ in range(50):
        robot.step(0.01)
    assert all(math.isfinite(v) for v in (robot.north_m, robot.east_m, robot.yaw_rad, robot.pitch_rad))
    assert robot.north_m > 0.5


def _driven(repeat_at):
    world = _world()
    north = (np.arange(world.rows) + 0.5) * world.cell_m
    world.height_m[:] = 0.1 * north[:, None]
    robot = TrackedRobot(world, 0.3, 0.5, 0.0)
    imu = TerrainImu(robot, np.random.default_rng(2))
    robot.command(WheelCmd(0, 3.0, 3.0))
    out = []
    for k in range(1, 21):
        robot.step(0.01)
        out.append(imu.sample(k * 10000))
        if k == repeat_at:
            for t in (k * 10000, k * 10000 - 1):
                with pytest.raises(ValueError, match="not after the previous sample's %d us" % (k * 10000)):
                    imu.sample(t)
    return out


def test_an_imu_sample_not_after_the_last_one_is_refused_and_changes_nothing():
    clean, repeated = _driven(None), _driven(8)
    assert [s is None for s in clean] == [True, True] + [False] * 18
    for a, b in zip(clean[2:], repeated[2:]):
        assert (a.time_us, a.dt_us, a.dvel_body_mps, a.dang_body_rad) == \
            (b.time_us, b.dt_us, b.dvel_body_mps, b.dang_body_rad)
