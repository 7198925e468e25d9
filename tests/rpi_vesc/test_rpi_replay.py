"""Record and replay of the Raspberry Pi app (``boards.rpi.app.RpiGroundRobot``, app ``rpi_ground_robot``).

The vesc-waypoints scenario records the Pi app into log.mcap; ``python -m harness replay`` rebuilds
it with stand-in drivers (IMU samples read in a tick's io phase are delivered in the same phase) and
gets every command back bit for bit, also across a VESC unplug/replug and a VESC fault code: the
driver's fault sets enter through the ``motor_faults`` entry point. The fault monitor's live
behaviour is the same as when it read ``driver.faults()`` itself.
"""
import json
import subprocess
import sys

import pytest
from mcap.reader import make_reader

from harness.replay import EXIT_IDENTICAL, main_replay
from onboard.core.samples import FaultSet, SampleError
from onboard.runtime.fault_monitor import FaultMonitor
from onboard.runtime.node import Node

pytestmark = pytest.mark.scenario


def _run_vesc_waypoints(out, *settings):
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "vesc-waypoints", "--seed", "3", "--out", str(out),
                           "--quiet"] + [a for s in settings for a in ("--set", s)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads((out / "metrics.json").read_text())


def _topic_counts(log):
    counts = {}
    with open(log, "rb") as fh:
        for _schema, channel, _message in make_reader(fh).iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
    return counts


def _replay_identical(log, out, capsys):
    code = main_replay([str(log), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    report = json.loads((out / "replay.json").read_text())
    assert report["app"] == "rpi_ground_robot" and report["identical"] and report["damage"] is None
    for name in ("estimate", "wheels"):
        t = report["topics"][name]
        assert t["logged"] == t["replayed"] > 50 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None
    return report


def test_vesc_waypoints_replays_bit_exactly(tmp_path, capsys):
    _run_vesc_waypoints(tmp_path / "run", "max_duration_s=5")
    counts = _topic_counts(tmp_path / "run" / "log.mcap")
    assert counts["/app/in/imu"] == counts["/app/step"] == 500 and counts["/app/in/aiding"] == 50
    assert "/app/in/clock" not in counts          # the simulated clock: a tick takes no time
    report = _replay_identical(tmp_path / "run" / "log.mcap", tmp_path / "replay", capsys)
    assert report["ticks"] == 500


def test_vesc_waypoints_with_motor_faults_replays_bit_exactly(tmp_path, capsys):
    """Left port unplugged at 3 s and replugged at 5 s, a VESC fault code on the right motor at 6.5 s:
    the fault sets are inputs of the recording, and the replay engages and clears the failsafe as the
    run did (the wheel commands stop and resume at the same ticks)."""
    m = _run_vesc_waypoints(tmp_path / "run", "max_duration_s=9", "faults.unplug_s=3", "faults.replug_s=5",
                            "faults.vesc_fault_s=6.5")
    reasons = [(e[1], e[2]) for e in m["fault_events"]]
    assert ("engaged", "motors:link_down:left") in reasons and ("cleared", "motors:link_down:left") in reasons
    assert ("engaged", "motors:vesc_fault:right:OVER_TEMP_FET") in reasons
    counts = _topic_counts(tmp_path / "run" / "log.mcap")
    assert counts["/app/in/motor_faults"] == 3                # unplugged, replugged, fault code
    _replay_identical(tmp_path / "run" / "log.mcap", tmp_path / "replay", capsys)


class _Driver:
    def __init__(self):
        self.current = set()
        self.polls = 0

    def poll(self, now_us):
        self.polls += 1

    def faults(self):
        return set(self.current)


def test_fault_sets_enter_through_the_entry_point_when_they_change():
    """Each change of the driver's fault set is one FaultSet at the ``motor_faults`` entry point (recorded
    before the monitor sees it); the failsafe engages and clears per fault, as before."""
    driver = _Driver()
    node = Node("t")
    monitor = node.add("motors", FaultMonitor(driver, 100))
    recorded = []
    node.record(lambda topic, t, msg: recorded.append((topic, t, msg)), "test", {})
    plan = {20000: {"link_down:left"}, 40000: {"link_down:left", "telemetry_stale:left"}, 70000: set()}
    for t in range(0, 100000, 10000):
        driver.current = plan.get(t, driver.current)
        node.step(t)
        assert node.failsafe.engaged == bool(driver.current)
    inputs = [(t, msg.faults) for topic, t, msg in recorded if topic == "/app/in/motor_faults"]
    assert inputs == [(20000, ("link_down:left",)), (40000, ("link_down:left", "telemetry_stale:left")),
                      (70000, ())]
    assert monitor.fault_events == [(20000, "engaged", "motors:link_down:left"),
                                    (40000, "engaged", "motors:telemetry_stale:left"),
                                    (70000, "cleared", "motors:link_down:left"),
                                    (70000, "cleared", "motors:telemetry_stale:left")]
    assert driver.polls == 10


def test_a_fault_set_fed_at_the_entry_point_engages_the_failsafe():
    """A replayed app's driver reports nothing: the recorded set fed at the entry point does the work."""
    node = Node("t")
    monitor = node.add("motors", FaultMonitor(_Driver(), 100))
    node.entries["motor_faults"](FaultSet(5000, ["vesc_fault:right:OVER_TEMP_FET"]))
    assert node.failsafe.engaged and monitor.fault_events == [(5000, "engaged",
                                                                "motors:vesc_fault:right:OVER_TEMP_FET")]
    node.step(10000)                      # the driver's empty set is no change from what it last reported
    assert node.failsafe.engaged
    node.entries["motor_faults"](FaultSet(20000, []))
    assert not node.failsafe.engaged


def test_fault_set_sample():
    s = FaultSet(7, ["b", "a", "b"])
    assert s.faults == ("a", "b") and s.as_dict() == {"time_us": 7, "faults": ["a", "b"]}
    assert FaultSet(7, ("a", "b")) == s and FaultSet(7).faults == ()
    for bad in (["ok", ""], [3]):
        with pytest.raises(SampleError):
            FaultSet(0, bad)
