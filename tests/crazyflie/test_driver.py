"""The runtime's Crazyflie driver (boards.crazyflie) on real cflib against simulated drones, in lockstep.

Simulated time comes from a SimClock; cflib's threads and the UDP sockets are kept in step
by the Lockstep barriers (bounded waits), so outcomes are deterministic.
"""
import pytest

from boards.crazyflie.board import CrazyflieConfigError, validate
from boards.crazyflie.driver import FLYING, LANDED, LINK_LOST, CrazyflieLinkError, CrazyflieSwarm
from boards.crazyflie.samples import BatterySample
from harness.sim.clock import SimClock
from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.lockstep import Lockstep
from onboard.core.samples import NavState, RangeSample, VelocitySetpoint
from onboard.runtime.watchdog import Watchdog

pytestmark = [pytest.mark.fil, pytest.mark.timeout(60)]

TICK_US = 10000               # physics / 100 Hz log tick
SETPOINT_EVERY = 2            # step() at 50 Hz


class Rig:
    """N simulated drones + the driver swarm, advanced together in lockstep."""

    def __init__(self, count, config=None, watchdog=None, seed=1):
        self.clock = SimClock()
        self.fleet = SimCrazyflieFleet(count, seed=seed, clock=self.clock).start()
        self.swarm = CrazyflieSwarm(self.fleet.uris, config, watchdog=watchdog)
        self.swarm.connect()
        self.lock = Lockstep(self.clock, self.fleet, self.swarm.drivers)
        self.samples = []
        self.faults = []
        self.ticks = 0

    def run(self, seconds, controller=None):
        for _ in range(int(round(seconds * 1e6 / TICK_US))):
            now = self.lock.advance(TICK_US)
            for i, got in enumerate(self.swarm.poll(now)):
                self.samples.extend((i, s) for s in got)
            if controller is not None:
                controller(now)
            if self.ticks % SETPOINT_EVERY == 0:
                self.faults.extend(self.swarm.step(now))
            self.ticks += 1
        return self.clock.now_us()

    def close(self):
        self.fleet.release_links()
        self.swarm.close()
        self.fleet.close()


@pytest.fixture
def rig_factory():
    rigs = []

    def make(*args, **kwargs):
        r = Rig(*args, **kwargs)
        rigs.append(r)
        return r

    yield make
    for r in rigs:
        r.close()


def goto(rig, targets_ne_m, gain_1ps=1.5):
    def controller(now_us):
        for drv, (tn, te) in zip(rig.swarm.drivers, targets_ne_m):
            if drv.nav is not None and drv.state == FLYING:
                n, e, _d = drv.nav.pos_ned_m
                drv.command(VelocitySetpoint(now_us, (gain_1ps * (tn - n), gain_1ps * (te - e), 0.0)))
    return controller


def test_swarm_connects_streams_samples_flies_to_targets_and_lands(rig_factory):
    rig = rig_factory(3)
    for drv, sim in zip(rig.swarm.drivers, rig.fleet.drones):
        assert drv.params_read_back == {"commander.enHighLevel": 1.0, "stabilizer.estimator": 2.0,
                                        "stabilizer.controller": 1.0}
        assert sim.param("commander", "enHighLevel").value == 1
    now = rig.run(0.2)
    assert rig.swarm.take_off(now)
    targets = [(1.0, 0.5), (1.5, -0.5), (3.0, 1.0)]
    rig.run(7.0, goto(rig, targets))
    for drv, veh, (tn, te) in zip(rig.swarm.drivers, rig.fleet.vehicles, targets):
        assert drv.state == FLYING
        assert abs(veh.north_m - tn) < 0.05 and abs(veh.east_m - te) < 0.05
        n, e, d = drv.nav.pos_ned_m             # NED from the Crazyflie frame (y left, z up)
        assert abs(n - veh.north_m) < 1e-3 and abs(e - veh.east_m) < 1e-3 and abs(d + veh.height_m) < 1e-3
        assert abs(veh.height_m - drv.cfg["flight_height_m"]) < 0.02
        assert drv.stats["max_setpoint_gap_us"] == SETPOINT_EVERY * TICK_US
    kinds = {type(s) for _i, s in rig.samples}
    assert kinds == {NavState, BatterySample, RangeSample}
    # UWB distances between drone 0 and 1 (noisy, paper's noise model), peer ids from ranging.distance<j>
    r01 = [s.range_m for i, s in rig.samples[-300:] if i == 0 and isinstance(s, RangeSample) and s.peer_id == 1]
    assert r01 and abs(sum(r01) / len(r01) - ((1.5 - 1.0) ** 2 + 1.0 ** 2) ** 0.5) < 0.3
    assert not any(isinstance(s, RangeSample) and s.peer_id == i for i, s in rig.samples), "no self range"
    now = rig.clock.now_us()
    rig.swarm.land(now)
    rig.run(3.0)
    for drv, veh, sim in zip(rig.swarm.drivers, rig.fleet.vehicles, rig.fleet.drones):
        assert drv.state == LANDED and veh.height_m == 0.0 and not veh.motors_on
        assert sim.stats["notify_stops"] == 1 and sim.stats["hl_commands"] == 1 and not sim.armed
    assert rig.faults == []


def test_link_loss_stops_commanding_and_is_reported_in_time(rig_factory):
    rig = rig_factory(2)
    drv, sim, veh = rig.swarm[0], rig.fleet.drones[0], rig.fleet.vehicles[0]
    rig.swarm.take_off(rig.run(0.1))
    rig.run(2.0, goto(rig, [(1.0, 0.0), (2.0, 0.0)]))
    assert drv.state == FLYING
    # fly on at 0.8 m/s, then the drone stops answering (out of radio range)
    ctrl = lambda now: [d.command(VelocitySetpoint(now, (0.8, 0.0, 0.0))) for d in rig.swarm.drivers]
    rig.run(1.0, ctrl)
    cut_us = rig.clock.now_us()
    sim.silent = True
    sent_before = drv.stats["setpoints_sent"]
    rig.run(0.6, ctrl)
    faults = [f for f in rig.faults if f.drone == drv.name]
    assert len(faults) == 1 and faults[0].reason == "link_lost"
    # stated bound: link_timeout_s after the last log packet, plus one setpoint period
    bound_us = drv.cfg["link_timeout_s"] * 1e6 + SETPOINT_EVERY * TICK_US
    assert 0 < faults[0].time_us - cut_us <= bound_us + TICK_US
    assert drv.state == LINK_LOST
    sent_at_fault = drv.stats["setpoints_sent"]
    assert sent_at_fault - sent_before <= bound_us // (SETPOINT_EVERY * TICK_US) + 1
    rig.run(3.0, ctrl)
    assert drv.stats["setpoints_sent"] == sent_at_fault, "no command after the fault"
    # the drone's own commander watchdog: level out (stop) after 0.5 s, motors off after 2 s
    assert sim.stats["wdt_stabilize"] == 1 and sim.stats["wdt_shutdown"] == 1
    assert veh.height_m == 0.0 and not veh.motors_on
    # the swarm shares the runtime's watchdog: the lost link engages the failsafe, so the other
    # drone (link intact) is brought down safely by notify-stop + land + disarm
    other = rig.swarm[1]
    assert [f.reason for f in other.faults] == ["failsafe:stale:cf_link:cf0"]
    assert other.state == LANDED and not rig.fleet.drones[1].armed
    assert rig.fleet.drones[1].stats["wdt_shutdown"] == 0


def test_runtime_watchdog_failsafe_notify_stop_land_disarm(rig_factory):
    wd = Watchdog()
    wd.add_input("policy_cmd", 200000)
    rig = rig_factory(1, watchdog=wd)
    drv, sim, veh = rig.swarm[0], rig.fleet.drones[0], rig.fleet.vehicles[0]
    alive = {"on": True}

    def ctrl(now_us):
        if alive["on"]:
            wd.feed("policy_cmd", now_us)
            drv.command(VelocitySetpoint(now_us, (0.3, 0.0, 0.0)))

    rig.swarm.take_off(rig.run(0.1, ctrl))
    rig.run(3.0, ctrl)
    assert drv.state == FLYING and veh.north_m > 0.3
    alive["on"] = False                        # the policy stops producing commands
    stop_us = rig.clock.now_us()
    rig.run(3.5, ctrl)
    assert [f.reason for f in rig.faults] == ["failsafe:stale:policy_cmd"]
    assert rig.faults[0].time_us - stop_us <= 200000 + SETPOINT_EVERY * TICK_US + TICK_US
    assert sim.stats["notify_stops"] == 1 and sim.stats["hl_commands"] == 1
    assert drv.state == LANDED and not sim.armed and veh.height_m == 0.0
    assert sim.stats["wdt_shutdown"] == 0, "landed by the high-level commander, not dropped"


def test_hover_mode_bad_commands_and_command_timeout_hold(rig_factory):
    rig = rig_factory(1, config={"setpoint_mode": "hover", "flight_height_m": 0.4})
    drv, veh = rig.swarm[0], rig.fleet.vehicles[0]
    rig.swarm.take_off(rig.run(0.1))
    t = rig.run(2.0)
    assert drv.command(VelocitySetpoint(t, (float("nan"), 0.0, 0.0))) is False
    assert drv.stats["rejected_commands"] == 1
    drv.command(VelocitySetpoint(t, (0.0, 0.5, 0.0)))    # east, sent as body-frame hover velocity
    rig.run(0.4)
    assert veh.vel_east_mps > 0.4 and abs(veh.height_m - 0.4) < 0.02
    rig.run(1.5)                                       # command now older than command_timeout_s
    assert abs(veh.vel_east_mps) < 0.02 and drv.stats["stale_command_steps"] > 0
    assert drv.state == FLYING and rig.fleet.drones[0].stats["wdt_stabilize"] == 0


def test_config_errors_are_clear(rig_factory):
    with pytest.raises(CrazyflieConfigError, match="unknown crazyflie setting"):
        validate({"setpoint_hz": 50})
    with pytest.raises(CrazyflieConfigError, match="multiple of 10"):
        validate({"log_blocks": {"a": {"period_ms": 15, "variables": ["pm.vbat"]}}})
    with pytest.raises(CrazyflieConfigError, match="enHighLevel"):
        validate({"params": {}})
    for bad in (float("inf"), float("nan"), "1.0"):
        with pytest.raises(CrazyflieConfigError, match="crazyflie setting max_speed_mps must be (finite|a number > 0)"):
            validate({"max_speed_mps": bad})
    with pytest.raises(CrazyflieConfigError, match="not in the drone's parameter TOC"):
        rig_factory(1, config={"params": {"commander.enHighLevel": 1, "nosuch.param": 1}})
    with pytest.raises(CrazyflieConfigError, match="not in TOC"):
        rig_factory(1, config={"log_blocks": {"a": {"period_ms": 10, "variables": ["nosuch.var"]}}})


@pytest.mark.parametrize("case", ["read_only_in_toc", "write_left_unanswered"])
def test_param_write_the_drone_refuses_fails_clearly_without_hanging(case):
    """A read-only parameter in the board config is refused before anything is sent (cflib's set_value
    would raise AttributeError). A write the drone leaves unanswered, as crazyflie-firmware's
    param_logic.c paramWriteProcess does for a read-only parameter, ends in a CrazyflieLinkError after
    param_timeout_s (cflib's UDP link does not resend it); the drone keeps its value either way."""
    fleet = SimCrazyflieFleet(1, seed=3, clock=SimClock()).start()
    try:
        drone = fleet.drones[0]
        if case == "read_only_in_toc":
            name, param = "deck.bcLoco", drone.param("deck", "bcLoco")
            error, match = CrazyflieConfigError, "deck.bcLoco is read-only on the drone"
        else:
            name, param = "posCtlPid.xKp", drone.param("posCtlPid", "xKp")
            param.flags |= crtp.PARAM_FLAG_RONLY     # refused by the drone, writable in the TOC cflib read
            error, match = CrazyflieLinkError, "no read-back of parameter posCtlPid.xKp from udp://"
        before = param.value
        swarm = CrazyflieSwarm(fleet.uris, {"params": {"commander.enHighLevel": 1, name: 0},
                                            "param_timeout_s": 1.0})
        with pytest.raises(error, match=match):
            swarm.connect()
        assert [d.state for d in swarm.drivers] == ["closed"]
        assert param.value == before
        assert drone.stats["rejected_param_writes"] == (0 if case == "read_only_in_toc" else 1)
    finally:
        fleet.release_links()
        fleet.close()


def test_connecting_to_nothing_fails_within_the_timeout():
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now
    swarm = CrazyflieSwarm(["udp://127.0.0.1:%d" % port], {"connect_timeout_s": 1.0})
    with pytest.raises(CrazyflieLinkError, match="cannot connect"):
        swarm.connect()


def test_lockstep_runs_are_reproducible(rig_factory):
    """Same seed, same script: identical ground truth and identical UWB ranges, despite cflib's threads."""
    outcomes = []
    for _ in range(2):
        rig = rig_factory(2, seed=11)
        rig.swarm.take_off(rig.run(0.1))
        rig.run(2.0, goto(rig, [(0.7, 0.3), (1.5, -0.4)]))
        ranges = [s.range_m for _i, s in rig.samples if isinstance(s, RangeSample)]
        outcomes.append(([(v.north_m, v.east_m, v.height_m) for v in rig.fleet.vehicles], ranges))
        rig.close()
    assert outcomes[0] == outcomes[1]
    assert len(outcomes[0][1]) > 50


def test_one_block_of_a_level_flight_without_vz(rig_factory):
    """A 2-D swarm logs x, y, z, vx, vy and yaw in one 24-byte block (harness/scenarios/swarm/worlds.py) and the
    battery at 1 Hz: the driver builds each NavState from that one packet (vz 0, yaw of the same
    instant), reports the battery once a second, and takes off on it."""
    period_ms = 20
    rig = rig_factory(1, {"log_blocks": {
        "state": {"period_ms": period_ms, "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
                                                        "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.yaw"]},
        "power": {"period_ms": 1000, "variables": ["pm.vbat", "pm.state"]}}})
    rig.fleet.vehicles[0].yaw_rad = 0.5
    drv = rig.swarm.drivers[0]
    drv.take_off(rig.clock.now_us())
    rig.run(3.0)
    navs = [s for _, s in rig.samples if isinstance(s, NavState)]
    batteries = [s for _, s in rig.samples if isinstance(s, BatterySample)]
    assert drv.state == FLYING and rig.faults == []
    assert len(navs) == pytest.approx(3000 / period_ms, abs=2)
    assert 2 <= len(batteries) <= 4
    assert all(n.vel_ned_mps[2] == 0.0 for n in navs)
    assert navs[-1].euler_rad[2] == pytest.approx(0.5, abs=1e-3)        # the vehicle's yaw, through the log and back
    assert drv.stats["bad_log_values"] == 0


def test_close_stops_cflibs_dispatcher_while_the_released_link_still_delivers(rig_factory):
    """close(): cflib's packet dispatcher is stopped before close_link, so close_link does not wait up to
    1 s on it; the lockstep fleet's released links keep sending null packets (no clock advance) that wake
    cflib's threads. The motors-off setpoint of close_link still reaches the drone."""
    import socket

    from boards.crazyflie.driver import DISPATCHER_STOP_S
    from harness.sim.crazyflie import crtp
    rig = rig_factory(1)
    rig.run(0.1)
    drv, sim = rig.swarm.drivers[0], rig.fleet.drones[0]
    incoming = drv.cf.incoming
    latency = drv.cf.link_statistics.latency
    pinger = latency._ping_thread_instance         # cflib's link-statistics ping thread (0.1 s period)
    assert pinger is not None and pinger.is_alive()
    link = drv.cf.link
    pinging_at_close = []
    real_close = link.close
    link.close = lambda: (pinging_at_close.append(pinger.is_alive()), real_close())[1]
    joins = []
    real_join = incoming.join
    incoming.join = lambda timeout=None: (joins.append(timeout), real_join(timeout))[1]
    setpoints = sim.stats["setpoints"]
    now = rig.clock.now_us()
    # a released fleet answers a client that said nothing since, without the clock moving
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.settimeout(5.0)
    echo = crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, bytes((7,)))
    probe.sendto(echo, (rig.fleet.server.host, rig.fleet.server.ports[0]))
    assert probe.recv(64) == echo
    rig.fleet.release_links()
    assert [probe.recv(64) for _ in range(3)] == [crtp.NULL_PACKET] * 3
    probe.close()
    drv.close()
    assert joins == [DISPATCHER_STOP_S]            # the driver's bounded join only: close_link found it ended
    assert not incoming.is_alive()
    # the pings stopped before the socket closed: none fails on the closed link (whose error path would
    # have cflib join the ping thread from itself and print a RuntimeError traceback)
    assert pinging_at_close == [False]
    assert not pinger.is_alive() and latency._ping_thread_instance is None
    assert rig.fleet.wait_until(lambda: sim.stats["setpoints"] == setpoints + 1)
    assert sim.ll["kind"] == "rpyt" and sim.ll["values"][3] == 0.0
    assert rig.clock.now_us() == now
