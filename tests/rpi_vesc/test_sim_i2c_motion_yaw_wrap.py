"""harness.sim.i2c.PlanarMotionSource on a vehicle whose yaw wraps at +-pi (Drone2D keeps it in (-pi, pi]):
the yaw rate it hands the simulated MPU-6050 stays the vehicle's rate across the wrap, no 2 pi / dt spike."""
import pytest

from harness.sim.i2c import PlanarMotionSource
from harness.sim.vehicles.drone2d import Drone2D


def test_yaw_rate_across_the_pi_wrap():
    drone = Drone2D({"start_height_m": 1.0, "start_yaw_deg": 170.0})
    drone.command_velocity(0.0, 0.0, 2.0)              # turning right at up to 2 rad/s: passes +pi
    source = PlanarMotionSource(drone)
    t_us = 0
    source.sample(t_us)
    crossed = False
    for _ in range(60):
        yaw0 = drone.yaw_rad
        for _ in range(10):
            drone.step(0.001)
        t_us += 10000
        crossed = crossed or (yaw0 > 0 > drone.yaw_rad)
        _f, w = source.sample(t_us)
        assert w[2] == pytest.approx(drone.yaw_rate_radps, abs=0.3)
        assert 0.0 <= w[2] <= 2.0
    assert crossed
