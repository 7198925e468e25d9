"""The simulated vehicles refuse a bad step length (NaN, infinite, negative) with a ValueError before
touching their state, and count commands that are not finite real numbers (bools, strings included)
while taking finite numpy scalars."""
import math

import numpy as np
import pytest

from harness.sim.vehicles.diffdrive import DiffDriveRobot
from harness.sim.vehicles.drone2d import Drone2D


def _diffdrive_state(r):
    return (r.north_m, r.east_m, r.yaw_rad, r.left_radps, r.right_radps, r.speed_mps, r.yaw_rate_radps,
            r.distance_m)


def _drone_state(d):
    return (d.north_m, d.east_m, d.yaw_rad, d.height_m, d.vel_north_mps, d.vel_east_mps, d.yaw_rate_radps,
            d.climb_mps, d.battery_v, d.airborne_s, d.distance_m, d.v_mode)


@pytest.mark.parametrize("dt_s", [math.nan, math.inf, -0.01])
def test_diffdrive_refuses_a_bad_step_and_keeps_its_state(dt_s):
    r = DiffDriveRobot()
    r.command(10.0, 5.0)
    r.step(0.05)
    before = _diffdrive_state(r)
    with pytest.raises(ValueError, match="dt_s must be a finite number of seconds >= 0"):
        r.step(dt_s)
    assert _diffdrive_state(r) == before
    r.step(0.0)                                   # a zero step moves nothing
    assert _diffdrive_state(r) == before


@pytest.mark.parametrize("bad", [True, "3", None, 10 ** 400, math.nan])
def test_diffdrive_counts_commands_that_are_not_finite_numbers(bad):
    r = DiffDriveRobot()
    assert r.command(1.0, 2.0) is True
    assert r.command(bad, 1.0) is False and r.command(1.0, bad) is False
    assert r.rejected_commands == 2
    assert (r.left_cmd_radps, r.right_cmd_radps) == (1.0, 2.0)
    assert r.command(np.float32(3.0), np.int64(-4)) is True
    assert (r.left_cmd_radps, r.right_cmd_radps) == (3.0, -4.0)


@pytest.mark.parametrize("dt_s", [math.nan, math.inf, -0.01])
def test_drone_refuses_a_bad_step_and_keeps_its_state(dt_s):
    d = Drone2D()
    d.command_height(1.0)
    for _ in range(50):
        d.step(0.02)
    d.command_velocity(0.5, 0.2, 0.3)
    d.step(0.02)
    before = _drone_state(d)
    with pytest.raises(ValueError, match="dt_s must be a finite number of seconds >= 0"):
        d.step(dt_s)
    assert _drone_state(d) == before
    d.step(0.0)
    assert _drone_state(d) == before
    d.step(0.02)
    assert all(math.isfinite(v) for v in _drone_state(d)[:-1])


def test_drone_takes_finite_numpy_scalars_and_refuses_bools_and_huge_ints():
    d = Drone2D()
    assert d.command_velocity(np.float32(0.5), np.int64(0), np.float64(0.1)) is True
    assert d.cmd_vel_ne_mps == (0.5, 0.0)
    assert d.command_height(np.float32(1.5)) is True and d.cmd_height_m == 1.5
    assert d.command_velocity(True, 0.0) is False
    assert d.command_accel(10 ** 400, 0.0) is False
    assert d.command_climb(np.float32("nan")) is False
    assert d.rejected_commands == 3
    assert d.cmd_vel_ne_mps == (0.5, 0.0)
