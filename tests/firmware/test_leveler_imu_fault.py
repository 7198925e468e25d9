"""The AVR leveler's host app (boards/arduino/leveler_app.py) when the board reports its IMU failing.

The leveler firmware skips its tilt update when an AltIMU read fails and sets FAULT_IMU in LEVEL_STATE: the
pitch it keeps sending is then frozen. A frozen pitch must not count as a fresh input: while every
LEVEL_STATE carries FAULT_IMU the watched input ``level_state`` goes stale, the failsafe engages and the
motors are stopped (within the timeout plus one tick); once the IMU answers again the robot drives on.
Host-only (no simavr): LEVEL_STATE messages are handed to the driver's callback as the link would.
"""
from boards.arduino import protocol as P
from boards.arduino.leveler_app import DEFAULTS, AvrLeveler

TICK_US = 50000                  # the leveler's 20 Hz


class _Rand:
    def random(self):
        return 0.5


class _Link:
    """What AvrLeveler needs of AvrRobotLink: poll, set_phase, counters; LEVEL_STATE pushed by the test."""

    def __init__(self):
        self.on_level_state = None
        self.faults = 0

    def poll(self, now_us):
        msg = P.Message(P.MSG_LEVEL_STATE, 0, "LevelState",
                        {"pitch_mrad": 100, "faults": self.faults, "last_cmd_seq": 0})
        self.on_level_state(msg, now_us)

    def set_phase(self, phase, now_us):
        pass

    def counters(self):
        return {}


class _Motors:
    def __init__(self):
        self.last = None

    def command(self, cmd):
        self.last = ("drive", cmd.left_radps, cmd.right_radps)

    def stop(self, now_us):
        self.last = ("stop",)


def test_level_state_with_imu_fault_is_not_a_fresh_pitch_and_stops_the_motors():
    link, motors = _Link(), _Motors()
    app = AvrLeveler(link, _Rand(), motors=motors)
    t = 0
    for _ in range(20):                                   # 1 s of good LEVEL_STATE: driving
        t += TICK_US
        app.step(t)
    assert motors.last[0] == "drive" and not app.node.failsafe.engaged
    link.faults = P.FAULT_IMU                             # the AltIMU stops answering: the pitch is frozen
    fault_from = t
    stopped_at = None
    for _ in range(40):                                   # 2 s
        t += TICK_US
        app.step(t)
        if motors.last[0] == "stop" and stopped_at is None:
            stopped_at = t
        if stopped_at is not None:
            assert motors.last[0] == "stop", t            # stays stopped while the IMU is failing
    assert stopped_at is not None, "motors still driven on a frozen pitch"
    assert stopped_at - fault_from <= DEFAULTS["level_state_timeout_us"] + TICK_US
    assert app.pitch.imu_faults == 40 and app.report()["node"]["pitch"] == {"imu_faults": 40}
    link.faults = 0                                       # the IMU answers again
    for _ in range(10):
        t += TICK_US
        app.step(t)
    assert motors.last[0] == "drive" and not app.node.failsafe.engaged
