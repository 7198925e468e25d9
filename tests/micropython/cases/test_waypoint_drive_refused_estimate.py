"""A control tick whose estimate the way-point follower refuses (a non-finite pose) stops the motors and is
counted, instead of leaving the motors on their last command when the follower's error leaves the tick.

The estimator here is a stand-in (named as such) that reports a chosen pose: the project's estimators keep
their state finite, so a real one cannot be made to report NaN. Runs under CPython and MicroPython.
"""
from onboard.control.waypoint_drive import WaypointDrive
from onboard.core.samples import NavState
from onboard.runtime.node import Node


class StandInEstimator:
    """Reports ``yaw_rad`` as its estimated heading at the origin."""

    def __init__(self):
        self.initialized = True
        self.yaw_rad = 0.0

    def nav_state(self):
        return NavState(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, self.yaw_rad))


class RecordingMotors:
    def __init__(self):
        self.calls = []

    def command(self, cmd):
        self.calls.append(("command", cmd.left_radps, cmd.right_radps))

    def stop(self, now_us):
        self.calls.append(("stop", now_us))


def test_a_non_finite_estimate_stops_the_motors_and_is_counted():
    motors = RecordingMotors()
    est = StandInEstimator()
    drive = WaypointDrive([(5.0, 0.0)], motors, est, 50, 0.3, 0.05, 20.0)
    node = Node("t")
    drive.attach(node)
    drive._control(0)
    assert motors.calls[-1][0] == "command" and motors.calls[-1][1] > 0.0
    est.yaw_rad = float("nan")
    drive._control(20000)
    assert motors.calls[-1] == ("stop", 20000)
    assert drive.report()["control_faults"] == 1 and drive.follower.index == 0
    est.yaw_rad = 0.0
    drive._control(40000)
    assert motors.calls[-1][0] == "command"
