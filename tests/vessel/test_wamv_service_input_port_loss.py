"""The WAM-V service's GNSS and heading ports vanishing and coming back (boards.wamv.service, serial_input).

The service's app (``service.build_app``, the ports opened with pyserial) runs in lockstep with the desk
runner's simulated boat (``harness.sim.wamv_bench.BenchWorld`` stepped by hand, simulated time, no thread):
NMEA on ptys behind stable symlinks, the outboards as simulated VESCs on ptys. Unplugging the GNSS or the
heading port (the pty closed, its name gone: the read raises) used to raise TransportClosed out of the app's
step, which ended the service. Now both outboards are stopped while the input is missing (the failsafe on
the stale watched input), the port is reopened every reconnect period (failed tries counted), and once the
device is back under its name the boat drives on; the loss and the reconnection are reported once each.
"""
import io
import os

import pytest

from boards.wamv import service
from harness.sim.ptys import PtyPair
from harness.sim.wamv_bench import BenchWorld
from harness.sim.wamv_thrusters import SIDES

pytestmark = [pytest.mark.fil, pytest.mark.timeout(120)]

RECONNECT_US = 500000
DRIVEN = 0.1                   # throttle (fraction of full) above which an outboard counts as driven
PLAN = [[120.0, 0.0, 1.5]]     # straight ahead at 1.5 m/s for the whole test


class _Unplugged:
    """The simulated device's end while it is unplugged: what it sends goes nowhere."""

    def write(self, data):
        pass

    def close(self):
        pass


class _Rig:
    """BenchWorld + the service's app, in lockstep: one world step (10 ms) then one app step."""

    def __init__(self, tmp_path):
        self.world = BenchWorld(out=io.StringIO())
        self.links = {"gnss": str(tmp_path / "ttyGNSS"), "heading": str(tmp_path / "ttyHEADING")}
        for name in ("gnss", "heading"):
            os.symlink(self._pty(name).slave_path, self.links[name])
        cfg = service.merged_config({
            "gnss": {"port": self.links["gnss"], "reconnect_period_us": RECONNECT_US},
            "heading": {"port": self.links["heading"], "reconnect_period_us": RECONNECT_US},
            "outboards": {"left_port": self.world.outboards.paths["left"],
                          "right_port": self.world.outboards.paths["right"]},
            "mission": {"plan": PLAN}})
        self.events = []
        self.app, self.outboards, self.closers = service.build_app(
            cfg, service.resolved_ports(cfg), start_us=0,
            on_port_change=lambda now_us, name, event, error: self.events.append((now_us, name, event)))

    def _pty(self, name):
        return getattr(self.world, name + "_pty")

    def run_until(self, until_us):
        w = self.world
        while w.now_us < until_us:
            w.step()
            self.app.step(w.now_us)

    def unplug(self, name):
        self._pty(name).close()
        os.unlink(self.links[name])
        setattr(self.world, name + "_pty", _Unplugged())

    def plug(self, name):
        pty = PtyPair()
        setattr(self.world, name + "_pty", pty)
        os.symlink(pty.slave_path, self.links[name])

    def driven(self):
        return all(self.world.outboards.throttle(side) > DRIVEN for side in SIDES)

    def released(self):
        return all(self.world.released(side) for side in SIDES)

    def close(self):
        for close in self.closers:
            close()
        self.world.close()


@pytest.fixture
def rig(tmp_path):
    r = _Rig(tmp_path)
    yield r
    r.close()


@pytest.mark.parametrize("name,stale", [("gnss", {"stale:gnss"}), ("heading", {"stale:heading", "stale:imu"})])
def test_a_vanished_input_port_stops_the_outboards_reopens_and_drives_on(rig, name, stale):
    rig.run_until(5000000)
    assert rig.driven() and not rig.app.failsafe.engaged and rig.events == []
    rig.unplug(name)
    rig.run_until(6000000)              # the input's timeout (0.6 s GNSS, 0.3 s heading / ROT) and a tick
    assert stale <= rig.app.failsafe.reasons
    assert rig.released()               # SetCurrent 0 at both outboards while the input is missing
    assert [e[1:] for e in rig.events] == [(name, "lost")]
    rig.run_until(8000000)
    port = rig.app.report()[name + "_port"]
    assert not port["up"] and port["disconnects"] == 1 and port["reconnects"] == 0
    assert port["open_failures"] >= 4   # one try per reconnect period since the loss (~3 s / 0.5 s)
    assert rig.released() and rig.app.failsafe.engaged
    rig.plug(name)
    rig.run_until(8000000 + RECONNECT_US + 100000)
    assert [e[1:] for e in rig.events] == [(name, "lost"), (name, "reconnected")]
    assert rig.events[1][0] - 8000000 <= RECONNECT_US
    rig.run_until(12000000)
    assert not rig.app.failsafe.engaged and rig.driven()
    port = rig.app.report()[name + "_port"]
    assert port["up"] and port["disconnects"] == 1 and port["reconnects"] == 1
    other = rig.app.report()[("heading" if name == "gnss" else "gnss") + "_port"]
    assert other["up"] and other["disconnects"] == 0 and other["open_failures"] == 0


def test_the_reconnect_period_is_a_checked_setting():
    cfg = service.merged_config({"gnss": {"reconnect_period_us": 2000000}})
    assert cfg["gnss"]["reconnect_period_us"] == 2000000
    assert cfg["heading"]["reconnect_period_us"] == service.B.INPUT_RECONNECT_PERIOD_US
    with pytest.raises(ValueError, match="heading.reconnect_period_us"):
        service.merged_config({"heading": {"reconnect_period_us": 0}})
