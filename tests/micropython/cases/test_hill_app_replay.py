"""The hill leveler's app (onboard.leveling.hill_app, thesis Alg. 6 on the Node) recorded at its boundary and
fed back through onboard.runtime.replay_feed: the rebuilt app, its random walk's draws set from the recorded
states, commands the same tracks bit for bit. Runs under CPython (pytest) and inside MicroPython."""
import math

from onboard.core.samples import ImuSample
from onboard.leveling.hill_app import HillLevelerApp
from onboard.runtime.replay_feed import CONFIG_TOPIC, feed

DT_US = 20000                     # 50 Hz IMU
G_MPS2 = 9.80665


class Lcg:
    """Random draws with a state to record (a 31-bit linear congruential generator: what a board's own
    generator could be)."""

    def __init__(self, seed):
        self.x = seed

    def random(self):
        self.x = (1103515245 * self.x + 12345) % 2147483648
        return self.x / 2147483648.0

    def get_state(self):
        return {"x": self.x}

    def set_state(self, state):
        self.x = state["x"]


def _pitch_deg(k):
    """A slope of 8 deg for the first two seconds (a climb), then flat ground (the random walk)."""
    return 8.0 if k < 100 else 0.0


def _imu(k):
    pitch = math.radians(_pitch_deg(k))
    dt = DT_US * 1e-6
    return ImuSample(k * DT_US, DT_US, [G_MPS2 * math.sin(pitch) * dt, 0.0, -G_MPS2 * math.cos(pitch) * dt],
                     [0.0, 0.0, 0.0])


def _record(steps):
    cmds = []
    app = HillLevelerApp(cmds.append, Lcg(12345), {"imu_rate_hz": 50, "control_rate_hz": 10})
    events = []

    def sink(topic, time_us, msg):
        data = msg.as_dict() if hasattr(msg, "as_dict") else msg
        events.append((topic, type(msg).__name__, time_us, data))

    app.record(sink, "test", 0)
    for k in range(1, steps + 1):
        app.on_imu(_imu(k))
        app.step(k * DT_US)
    return app, cmds, events


def test_a_recorded_leveler_replays_its_track_commands_exactly():
    app, cmds, events = _record(400)
    assert events[0][0] == CONFIG_TOPIC and events[0][3]["app"] == "hill_leveler"
    assert app.hill.behaviour.climbs >= 1 and app.hill.behaviour.draws >= 4
    assert app.draws.states_recorded == 80                  # every control step of 8 s at 10 Hz
    config = events[0][3]["config"]
    replayed = []
    rebuilt = HillLevelerApp(replayed.append, Lcg(999), config["config"], name=config["name"],
                             start_us=config["start_us"])
    inputs, ticks = feed(rebuilt.node, events[1:])
    assert inputs == 400 + 80 and ticks == 400
    assert rebuilt.draws.states_set == 80
    assert len(replayed) == len(cmds) == 80
    for a, b in zip(cmds, replayed):
        assert (a.time_us, a.left_radps, a.right_radps) == (b.time_us, b.left_radps, b.right_radps)
    # without the recorded draws the rebuilt app's own generator walks elsewhere
    other = []
    blind = HillLevelerApp(other.append, Lcg(999), config["config"], name=config["name"])
    feed(blind.node, [e for e in events[1:] if e[0] != "/app/in/random_state"])
    assert [(c.left_radps, c.right_radps) for c in other] != [(c.left_radps, c.right_radps) for c in cmds]
