"""The onboard tilt estimator (accelerometer gravity vector + gyro, complementary) and the hill-leveler app
(Node recipe: IMU -> tilt -> Alg. 6 -> track speeds): the behaviour acts on the estimated pitch."""
import math
import random

import pytest

from onboard.core.samples import ImuSample
from onboard.core.settings import ConfigError
from onboard.core.units import G_MPS2
from onboard.estimators.tilt import TiltEstimator, tilt_from_specific_force
from onboard.leveling.hill_app import HillLevelerApp
from onboard.leveling.hill_sensing import CLIMB, WANDER

DT_US = 10000


def _rest(time_us, roll, pitch, gyro=(0.0, 0.0, 0.0), extra_fx=0.0):
    """An IMU sample of a body at rest at (roll, pitch): specific force R^T (0, 0, -g), plus ``extra_fx``
    forward."""
    dt = DT_US * 1e-6
    f = (G_MPS2 * math.sin(pitch) + extra_fx, -G_MPS2 * math.sin(roll) * math.cos(pitch),
         -G_MPS2 * math.cos(roll) * math.cos(pitch))
    return ImuSample(time_us, DT_US, [v * dt for v in f], [w * dt for w in gyro])


@pytest.mark.parametrize("roll,pitch", [(0.0, 0.0), (0.1, -0.3), (-0.4, 0.25), (0.0, 1.2)])
def test_gravity_vector_gives_roll_and_pitch(roll, pitch):
    f = (G_MPS2 * math.sin(pitch), -G_MPS2 * math.sin(roll) * math.cos(pitch),
         -G_MPS2 * math.cos(roll) * math.cos(pitch))
    r, p = tilt_from_specific_force(*f)
    assert math.isclose(r, roll, abs_tol=1e-12) and math.isclose(p, pitch, abs_tol=1e-12)
    est = TiltEstimator()
    assert est.predict(_rest(DT_US, roll, pitch))
    assert math.isclose(est.pitch_rad, pitch, abs_tol=1e-12) and math.isclose(est.roll_rad, roll, abs_tol=1e-12)


def test_gyro_carries_a_consistent_rotation_exactly():
    """Pitching up at 0.5 rad/s with the accelerometer agreeing: the estimate follows the truth."""
    est = TiltEstimator()
    rate = 0.5
    for k in range(1, 101):
        pitch = rate * k * DT_US * 1e-6
        est.predict(_rest(k * DT_US, 0.0, pitch, gyro=(0.0, rate, 0.0)))
    assert math.isclose(est.pitch_rad, 0.5, abs_tol=1e-9)


def test_gyro_bias_leaves_the_complementary_steady_state_error():
    """Constant gyro bias b on a still body: x = (1 - k)(x + b dt), k = dt / (tau + dt), settles at b * tau."""
    tau, bias = 0.5, 0.02
    est = TiltEstimator({"time_constant_s": tau})
    for k in range(1, 1001):
        est.predict(_rest(k * DT_US, 0.0, 0.0, gyro=(0.0, bias, 0.0)))
    assert math.isclose(est.pitch_rad, bias * tau, rel_tol=1e-6)


def test_an_accelerating_robot_is_gated_not_trusted():
    est = TiltEstimator({"accel_gate_mps2": 1.0})
    est.predict(_rest(DT_US, 0.0, 0.1))
    for k in range(2, 12):                     # a hard 5 m/s^2 push forward: the accelerometer would say +27 deg
        est.predict(_rest(k * DT_US, 0.0, 0.1, extra_fx=5.0))
    assert est.gated == 10 and math.isclose(est.pitch_rad, 0.1, abs_tol=1e-12)


def test_bad_samples_are_counted_and_change_nothing():
    est = TiltEstimator()
    est.predict(_rest(DT_US, 0.05, 0.2))
    before = (est.roll_rad, est.pitch_rad, est.predicts)
    nan = ImuSample(2 * DT_US, DT_US, (float("nan"), 0.0, -0.098), (0.0, 0.0, 0.0))
    assert not est.predict(nan) and not est.predict(None)
    assert est.rejected == 2 and (est.roll_rad, est.pitch_rad, est.predicts) == before
    with pytest.raises(ConfigError, match="time_constant_s"):
        TiltEstimator({"time_constant_s": 0})


def _app(config=None):
    cmds = []
    app = HillLevelerApp(cmds.append, random.Random(3), config)
    return app, cmds


def test_app_climbs_on_the_estimated_pitch():
    """An IMU that reads a 10 deg incline makes the app charge straight at the climb speed; level, it wanders."""
    for pitch, mode in ((math.radians(10.0), CLIMB), (0.0, WANDER)):
        app, cmds = _app()
        for k in range(1, 51):
            app.on_imu(_rest(k * DT_US, 0.0, pitch))
            app.step(k * DT_US)
        assert app.hill.behaviour.mode == mode
        assert math.isclose(app.tilt.pitch_rad, pitch, abs_tol=1e-9)
        last = cmds[-1]
        if mode == CLIMB:
            v = app.cfg["behaviour"]["climb_speed_mps"] / app.cfg["sprocket_radius_m"]
            assert math.isclose(last.left_radps, v) and math.isclose(last.right_radps, v)
        else:
            assert app.hill.behaviour.draws >= 1


def test_app_stops_when_the_imu_goes_quiet():
    app, cmds = _app({"imu_timeout_us": 50000})
    for k in range(1, 21):
        app.on_imu(_rest(k * DT_US, 0.0, 0.3))
        app.step(k * DT_US)
    assert cmds[-1].left_radps > 0
    for k in range(21, 41):                    # no IMU samples from here on
        app.step(k * DT_US)
    assert cmds[-1].left_radps == 0.0 and cmds[-1].right_radps == 0.0
    assert app.hill.stops >= 1 and app.report()["failsafe_engagements"] == 1


def test_app_rejects_a_bad_sample_at_its_entry():
    app, cmds = _app()
    app.on_imu(ImuSample(DT_US, DT_US, (float("inf"), 0.0, 0.0), (0.0, 0.0, 0.0)))
    app.step(DT_US)
    assert app.tilt.rejected == 1 and app.tilt.pitch_rad is None and cmds[-1].left_radps == 0.0
