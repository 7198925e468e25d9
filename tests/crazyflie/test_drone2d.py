"""The 2-D drone model: inertia, speed cap, acceleration actions, take-off/land, bad input."""
import math

import pytest

from harness.sim.vehicles.drone2d import Drone2D
from onboard.core.settings import ConfigError

DT_S = 0.005


def _fly(drone, seconds):
    for _ in range(int(round(seconds / DT_S))):
        drone.step(DT_S)


def _airborne(height_m=0.5):
    d = Drone2D()
    d.command_height(height_m)
    _fly(d, 5.0)
    assert abs(d.height_m - height_m) < 1e-3
    return d


def test_take_off_hover_and_land_stop_the_motors():
    d = Drone2D()
    assert not d.airborne and not d.motors_on
    d.command_velocity(1.0, 0.0)
    _fly(d, 0.5)
    assert d.north_m == 0.0, "a drone on the ground does not slide"
    d.command_height(0.5)
    _fly(d, 3.0)
    assert abs(d.height_m - 0.5) < 1e-3 and d.motors_on
    d.command_height(0.0)
    _fly(d, 3.0)
    assert d.height_m == 0.0 and not d.motors_on


def test_velocity_follows_first_order_lag_then_caps_speed():
    d = _airborne()
    cfg = d.cfg
    d.command_velocity(0.3, 0.0)
    t = cfg["vel_time_constant_s"]
    _fly(d, t)
    # one time constant: 63 % of the step (the accel limit 2 m/s^2 does not bind for 0.3 m/s)
    assert d.vel_north_mps == pytest.approx(0.3 * (1.0 - math.exp(-1.0)), rel=1e-6)
    d.command_velocity(5.0, 5.0)
    _fly(d, 3.0)
    assert d.speed_mps() == pytest.approx(cfg["max_speed_mps"], rel=1e-9)
    assert d.vel_north_mps == pytest.approx(d.vel_east_mps, rel=2e-3)


def test_accel_actions_are_integrated_and_capped():
    d = _airborne()
    d.command_accel(1.0, 0.0)
    _fly(d, 0.5)
    assert d.vel_north_mps == pytest.approx(0.5, abs=1e-9)
    _fly(d, 2.0)
    assert d.speed_mps() == pytest.approx(1.0)
    d.command_accel(50.0, 0.0)
    v0 = d.vel_north_mps
    d.command_accel(-50.0, 0.0)
    d.step(DT_S)
    assert v0 - d.vel_north_mps == pytest.approx(d.cfg["max_accel_mps2"] * DT_S), "accel limit"


def test_position_integrates_velocity_and_yaw_rate():
    d = _airborne()
    d.command_velocity(0.0, 0.5, math.radians(90.0))
    _fly(d, 4.0)
    assert d.east_m > 1.5 and abs(d.north_m) < 1e-9
    assert abs(d.yaw_rate_radps - math.radians(90.0)) < 1e-6
    assert d.vel_ned_mps()[1] == pytest.approx(0.5, abs=1e-4)


def test_motors_off_in_the_air_sinks_to_the_ground():
    d = _airborne(1.0)
    h0 = d.height_m
    d.motors_off()
    _fly(d, 0.25)
    assert d.height_m == pytest.approx(h0 - 0.25 * d.cfg["fall_speed_mps"], abs=1e-9)
    _fly(d, 1.0)
    assert d.height_m == 0.0 and d.speed_mps() == 0.0


def test_bad_commands_are_refused_and_state_kept():
    d = _airborne()
    d.command_velocity(0.2, 0.0)
    assert d.command_velocity(float("nan"), 0.0) is False
    assert d.command_accel(0.0, float("inf")) is False
    assert d.command_height(float("nan")) is False
    assert d.rejected_commands == 3
    assert d.cmd_vel_ne_mps == (0.2, 0.0)
    with pytest.raises(ConfigError, match="Drone2D setting max_speed_mps must be a number > 0"):
        Drone2D({"max_speed_mps": 0.0})
    with pytest.raises(ConfigError, match="unknown Drone2D setting 'no_such'"):
        Drone2D({"no_such": 1})


def test_battery_drains_only_in_flight():
    d = Drone2D()
    _fly(d, 1.0)
    assert d.battery_v == d.cfg["battery_full_v"]
    d.command_height(0.3)
    _fly(d, 10.0)
    assert d.battery_v < d.cfg["battery_full_v"]
