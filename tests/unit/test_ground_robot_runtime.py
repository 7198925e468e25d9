"""GroundRobotRuntime: failsafe on stale inputs, bad samples counted, motors off."""
from onboard.core.samples import ImuSample, PoseSample
from onboard.runtime.ground_robot import GroundRobotRuntime


class RecordingMotors:
    def __init__(self):
        self.commands = []
        self.stops = []

    def command(self, cmd):
        self.commands.append(cmd)

    def stop(self, now_us):
        self.stops.append(now_us)


def _feed(rt, t, pose=True):
    rt.on_imu(ImuSample(t, 10000, (0.0, 0.0, -0.0980665), (0.0, 0.0, 0.0)))
    if pose and t % 100000 == 0:
        rt.on_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))


def test_commands_motors_then_stops_when_aiding_goes_stale():
    motors = RecordingMotors()
    rt = GroundRobotRuntime([(2.0, 0.0)], motors)
    for t in range(0, 1000001, 10000):
        _feed(rt, t)
        rt.step(t)
    assert motors.commands and motors.commands[-1].left_radps > 0.0
    n_cmd = len(motors.commands)
    stops_before = len(motors.stops)
    for t in range(1010000, 2000001, 10000):          # aiding silent for 1 s (> 0.5 s timeout)
        _feed(rt, t, pose=False)
        rt.step(t)
    assert rt.failsafe.engaged
    assert len(motors.stops) > stops_before
    # after the timeout no more drive commands, only stops
    last_cmd_t = motors.commands[-1].time_us
    assert last_cmd_t <= 1000000 + 500000 + 20000
    assert rt.report()["scheduler"]["watchdog"]["aiding"]["trips"] == 1
    for t in range(2010000, 2500001, 10000):          # aiding returns: control resumes
        _feed(rt, t)
        rt.step(t)
    assert not rt.failsafe.engaged
    assert len(motors.commands) > n_cmd


def test_nan_samples_rejected_counted_and_do_not_feed_watchdog():
    motors = RecordingMotors()
    rt = GroundRobotRuntime([(2.0, 0.0)], motors)
    rt.on_pose(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    rt.step(0)
    x_before = list(rt.estimator.x)
    for t in range(10000, 200001, 10000):
        rt.on_imu(ImuSample(t, 10000, (float("nan"), 0.0, 0.0), (0.0, 0.0, 0.0)))
        rt.step(t)
    assert rt.rejected_samples == 20
    assert rt.estimator.x == x_before
    assert rt.failsafe.engaged                        # IMU stream counts as stale
    assert motors.stops


def test_latching_failsafe_holds_until_reset():
    motors = RecordingMotors()
    rt = GroundRobotRuntime([(2.0, 0.0)], motors, {"latching_failsafe": True})
    rt.step(0)
    rt.step(100000)                                   # nothing received for 100 ms: IMU stale
    assert rt.failsafe.engaged
    for t in range(110000, 400001, 10000):
        _feed(rt, t)
        rt.step(t)
    assert rt.failsafe.engaged
    assert rt.failsafe.reset()
    _feed(rt, 410000)
    rt.step(410000)
    assert not rt.failsafe.engaged


def test_a_reset_while_the_input_is_still_stale_does_not_release_it_later():
    """The operator's reset counts only once nothing keeps the failsafe engaged: pressed while the IMU is
    still silent, the failsafe stays engaged when the IMU comes back, until the next reset."""
    motors = RecordingMotors()
    rt = GroundRobotRuntime([(2.0, 0.0)], motors, {"latching_failsafe": True})
    rt.step(0)
    rt.step(100000)                                   # IMU stale
    assert rt.failsafe.engaged and not rt.failsafe.reset()
    for t in range(110000, 400001, 10000):
        _feed(rt, t)
        rt.step(t)
    assert rt.failsafe.engaged
    assert rt.failsafe.reset() and not rt.failsafe.engaged


def test_hold_stands_still_until_the_next_mission():
    motors = RecordingMotors()
    rt = GroundRobotRuntime([(2.0, 0.0)], motors)
    rt.hold()
    for t in range(0, 1000001, 10000):
        _feed(rt, t)
        rt.step(t)
    assert rt.estimator.initialized and not motors.commands      # the way-point 2 m ahead is not driven to
    assert len(motors.stops) > 40 and rt.mission_complete_us is None
    rt.set_waypoints([(2.0, 0.0)])                              # a new mission ends the hold
    for t in range(1010000, 1500001, 10000):
        _feed(rt, t)
        rt.step(t)
    assert not rt.drive.holding and motors.commands and motors.commands[-1].left_radps > 0.0
