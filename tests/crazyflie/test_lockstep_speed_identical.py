"""The simulated fleet's speed-ups leave what the drivers see unchanged.

``Lockstep.advance`` has the fleet's server hold the log packets of a clock advance and send them together
at its end (``SimCrazyflieServer.hold_sends``), and the simulated commander skips re-issuing an unchanged
``velocity_world`` setpoint to the Drone2D at every physics step; ``Lockstep(serve_in_caller=True)`` has the
caller answer the uplink instead of the server thread. A flight run that way and the same flight
with every log packet sent the moment it is made (the plain barrier sequence: uplink, clock, downlink) and
the setpoint re-issued at every step must give the drivers the same samples, states and counters, packet for
packet, and leave the drones at the same place; the swarm scenario's metrics
(tests/scenario/test_swarm_scenario.py) pin the whole cflib world on top of this.
"""
import socket
import struct
import threading

import pytest

from boards.crazyflie.driver import FLYING, CrazyflieSwarm
from harness.sim.clock import SimClock
from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.commander import Commander
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.lockstep import Lockstep
from harness.sim.crazyflie.server import SimCrazyflieServer, SimServerError
from harness.sim.crazyflie.sim_drone import SimCrazyflie
from harness.sim.vehicles.drone2d import V_CLIMB
from onboard.core.samples import VelocitySetpoint

pytestmark = [pytest.mark.fil, pytest.mark.timeout(60)]

PERIOD_US = 100000            # one lockstep advance per policy period, as the swarm world runs it
FLIGHT_PERIODS = 40
TARGETS_NE_M = [(1.5, 0.5), (-0.5, 1.0)]
# the swarm world's log blocks: one 24-byte state packet per period, the battery once a second
LOG_BLOCKS = {
    "state": {"period_ms": 100, "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
                                              "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.yaw"]},
    "power": {"period_ms": 1000, "variables": ["pm.vbat", "pm.state"]},
}


class ImmediateLockstep(Lockstep):
    """The barrier sequence without held sends: each log packet leaves as soon as a tick makes it."""

    def advance(self, dt_us):
        self.sync_uplink()
        self.clock.advance(dt_us)
        self.sync_downlink()
        self.steps += 1
        return self.clock.now_us()


def fly(lockstep_cls, toc_dir, serve_in_caller=False):
    """Take off, fly both drones towards their targets for FLIGHT_PERIODS periods; what the drivers saw.
    ``serve_in_caller``: the lockstep's thread answers the uplink itself (else the server thread does)."""
    clock = SimClock()
    fleet = SimCrazyflieFleet(len(TARGETS_NE_M), seed=3, clock=clock).start()
    swarm = None
    try:
        swarm = CrazyflieSwarm(fleet.uris, {"toc_cache_dir": toc_dir, "setpoint_rate_hz": 10.0,
                                            "flight_height_m": 0.5, "log_blocks": LOG_BLOCKS}).connect()
        lock = Lockstep(clock, fleet, swarm.drivers, serve_in_caller=serve_in_caller) if lockstep_cls is None \
            else lockstep_cls(clock, fleet, swarm.drivers)
        seen = []
        swarm.take_off(clock.now_us())
        for _ in range(FLIGHT_PERIODS):
            now = clock.now_us()
            for drv, (tn, te) in zip(swarm.drivers, TARGETS_NE_M):
                if drv.nav is not None and drv.state == FLYING:
                    n, e, _d = drv.nav.pos_ned_m
                    drv.command(VelocitySetpoint(now, (1.5 * (tn - n), 1.5 * (te - e), 0.0)))
            swarm.step(now)
            now = lock.advance(PERIOD_US)
            for i, got in enumerate(swarm.poll(now)):
                seen.extend((i, type(s).__name__, repr(vars(s))) for s in got)
            seen.append(tuple(d.state for d in swarm.drivers))
        counters = [(d.log_packets_received, dict(d.stats)) for d in swarm.drivers]
        # the link counters also count cflib's link-statistics pings, sent on the wall clock
        sims = [{k: v for k, v in dr.stats.items() if k not in ("rx_packets", "tx_packets", "echo")}
                for dr in fleet.drones]
        truth = [(v.north_m, v.east_m, v.height_m, v.yaw_rad) for v in fleet.vehicles]
        return seen, counters, sims, truth
    finally:
        fleet.release_links()
        if swarm is not None:
            swarm.close()
        fleet.close()


def test_held_log_sends_and_kept_setpoints_give_the_drivers_the_same_flight(tmp_path, monkeypatch):
    held = fly(None, str(tmp_path / "held"))
    control = Commander.control

    def control_every_step(self, now_us):
        self._applied = None             # forget what the last step applied: every step commands again
        return control(self, now_us)

    monkeypatch.setattr(Commander, "control", control_every_step)
    immediate = fly(ImmediateLockstep, str(tmp_path / "immediate"))
    seen, counters, sims, truth = held
    # the flight did something: both drones flew (velocity_world setpoints), every period's state packet arrived
    assert all(s == FLYING for s in seen[-1])
    assert all(n >= FLIGHT_PERIODS for n, _ in counters)
    assert sum(1 for x in seen if isinstance(x, tuple) and len(x) == 3 and x[1] == "NavState") \
        >= len(TARGETS_NE_M) * (FLIGHT_PERIODS - 1)
    assert held == immediate


def test_uplink_served_in_the_lockstep_thread_gives_the_drivers_the_same_flight(tmp_path):
    """``Lockstep(serve_in_caller=True)`` (the swarm world's setting): the caller answers the setpoints
    itself instead of waiting for the server thread; every sample, state, counter and the drones' end
    positions are those of the thread-served flight."""
    threaded = fly(None, str(tmp_path / "threaded"))
    in_caller = fly(None, str(tmp_path / "caller"), serve_in_caller=True)
    seen, counters, _sims, _truth = in_caller
    assert all(s == FLYING for s in seen[-1])
    assert all(n >= FLIGHT_PERIODS for n, _ in counters)
    assert in_caller == threaded


def test_commander_applies_a_kept_setpoint_again_once_the_vehicle_commands_changed():
    """The commander skips only what would set the same fields to the same values: a vehicle whose
    commands something else changed (here a direct Drone2D command) gets the setpoint in force again at the
    next physics step, without a new packet."""
    cf = SimCrazyflie()
    t = 0
    for _ in range(100):                 # take off on hover setpoints
        cf.handle(crtp.packet(crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 0, 0.5)), t)
        t += 10000
        cf.advance(t)
    # CF world: x north, y left: vy -0.25 m/s is 0.25 m/s east
    cf.handle(crtp.packet(crtp.PORT_COMMANDER_GENERIC, 0,
                          struct.pack("<Bffff", crtp.SP_VELOCITY_WORLD, 0.5, -0.25, 0.125, 0.0)), t)
    cf.advance(t + 20000)
    v = cf.vehicle
    assert (v.cmd_vel_ne_mps, v.v_mode, v.cmd_climb_mps) == ((0.5, 0.25), V_CLIMB, 0.125)
    v.command_velocity(0.0, 0.0, 0.0)
    v.command_height(0.3)
    cf.advance(t + 25000)                # one physics step
    assert (v.cmd_vel_ne_mps, v.v_mode, v.cmd_climb_mps) == ((0.5, 0.25), V_CLIMB, 0.125)


def test_serve_in_caller_answers_in_the_waiting_thread_until_the_links_are_released():
    """With serve_in_caller, wait_until reads and answers a request in the calling thread (the reply goes
    out); release_links hands the serving back to the server thread; a realtime server refuses the mode
    (its thread also runs the physics)."""
    fleet = SimCrazyflieFleet(1, seed=1, clock=SimClock()).start()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.settimeout(5.0)
    try:
        drone = fleet.drones[0]
        handled_in = []
        handle = drone.handle

        def recording_handle(datagram, now_us, client=None):
            handled_in.append(threading.get_ident())
            return handle(datagram, now_us, client)

        drone.handle = recording_handle
        addr = (fleet.server.host, fleet.server.ports[0])
        echo = crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, b"ping")
        fleet.server.serve_in_caller(True)
        probe.sendto(echo, addr)
        assert fleet.wait_until(lambda: drone.stats["rx_packets"] >= 1, 5.0)
        assert handled_in == [threading.get_ident()]
        assert probe.recvfrom(64)[0] == echo
        fleet.release_links()            # from now on the server thread also sends null packets (linger)
        probe.sendto(echo, addr)
        assert fleet.wait_until(lambda: drone.stats["rx_packets"] >= 2, 5.0)
        assert len(handled_in) == 2 and handled_in[1] != threading.get_ident()
        reply = crtp.NULL_PACKET
        while reply == crtp.NULL_PACKET:
            reply = probe.recvfrom(64)[0]
        assert reply == echo
    finally:
        probe.close()
        fleet.close()
    with pytest.raises(SimServerError, match="realtime=False"):
        SimCrazyflieServer([SimCrazyflie()], realtime=True).serve_in_caller(True)
