"""PlanarImu (ag2u eq. 10): a sample time not after the previous one is refused without touching the
sensor's state or noise stream, and a vehicle that wraps its yaw at +-pi reads the short way round."""
import math

import numpy as np
import pytest

from harness.sim.sensors.imu import PlanarImu
from harness.sim.vehicles.diffdrive import DiffDriveRobot
from harness.sim.vehicles.drone2d import Drone2D

NO_NOISE = {"accel_bias_sigma_mps2": 0.0, "gyro_bias_sigma_dps": 0.0, "accel_rw_mps_per_sqrt_s": 0.0,
            "gyro_rw_dps_per_sqrt_s": 0.0}


def _run(bad_times):
    robot = DiffDriveRobot()
    robot.command(10.0, 8.0)
    imu = PlanarImu(robot, np.random.default_rng(4))
    imu.sample(0)
    out = []
    for k in range(1, 6):
        robot.step(0.01)
        if k == 3:
            for t in bad_times:
                with pytest.raises(ValueError, match="not after the previous sample"):
                    imu.sample(t)
        s = imu.sample(k * 10000)
        out.append((s.dt_us, s.dvel_body_mps, s.dang_body_rad))
    return out


def test_same_or_earlier_time_is_refused_and_the_next_sample_is_unchanged():
    clean = _run([])
    assert _run([20000, 15000, -5]) == clean
    assert all(dt == 10000 for dt, _v, _a in clean)


def test_wrapping_yaw_gives_the_short_angle_increment():
    drone = Drone2D({"start_yaw_deg": 178.0, "start_height_m": 1.0})
    drone.command_height(1.0)
    drone.command_velocity(0.0, 0.0, 2.0)
    imu = PlanarImu(drone, np.random.default_rng(0), NO_NOISE)
    imu.sample(0)
    total = 0.0
    yaw0 = drone.yaw_rad
    for k in range(1, 51):
        yaw_before = drone.yaw_rad
        drone.step(0.01)
        s = imu.sample(k * 10000)
        assert abs(s.dang_body_rad[2]) < 0.1
        # level, no horizontal motion: the specific force is -g on z only
        assert abs(s.dvel_body_mps[0]) < 1e-12 and abs(s.dvel_body_mps[1]) < 1e-12
        total += s.dang_body_rad[2]
        assert s.dang_body_rad[2] == pytest.approx(math.remainder(drone.yaw_rad - yaw_before, 2 * math.pi), abs=1e-12)
    assert drone.yaw_rad < 0.0 < yaw0                 # the yaw went through +-pi
    assert total == pytest.approx(math.remainder(drone.yaw_rad - yaw0, 2 * math.pi) + 0.0, abs=1e-9)
