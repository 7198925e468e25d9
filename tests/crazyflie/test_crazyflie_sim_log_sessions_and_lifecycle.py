"""The simulated Crazyflie's log blocks as cflib 0.1.34 builds them, log sessions across a reconnect, the
z-distance setpoint's pitch sign, and the fleet's start/stop life cycle (no cflib threads: raw CRTP)."""
import socket
import struct
import threading

import pytest

from harness.sim.clock import SimClock
from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.firmware_toc import LOG_VARIABLES
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.lockstep import Lockstep
from harness.sim.crazyflie.sim_drone import SimCrazyflie

pytestmark = pytest.mark.timeout(30)

CLIENT = ("127.0.0.1", 40000)
OTHER = ("127.0.0.1", 40001)


def ask(cf, port, channel, data=b"", now_us=0, client=CLIENT):
    return cf.handle(crtp.packet(port, channel, data), now_us, client)


def log_id(name):
    group, var = name.split(".")
    return [i for i, (g, n, _t, _s) in enumerate(LOG_VARIABLES) if (g, n) == (group, var)][0]


LOG_TYPES = {"%s.%s" % (g, n): crtp.LOG_TYPE_ID[t] for g, n, t, _s in LOG_VARIABLES}
BYTE_VARS = ["sys.canfly", "sys.isFlying", "sys.isTumbled", "radio.rssi", "radio.isConnected",
             "kalman.inFlight", "pm.state", "pm.batteryLevel", "supervisor.info", "pm.vbatMV"]


def cflib_v2_create_packets(block_id, names):
    """The CREATE_V2 / APPEND_V2 packets of cflib 0.1.34's LogConfig.create (log.py _setup_log_elements):
    the type byte of the variable that no longer fits is left at the end of the full packet."""
    packets = []
    cmd = crtp.LOG_CREATE_V2
    i = 0
    while True:
        data = bytearray((cmd, block_id))
        done = True
        while i < len(names):
            data.append(LOG_TYPES[names[i]])
            if crtp.MAX_DATA - len(data) >= 2:
                data += struct.pack("<H", log_id(names[i]))
                i += 1
            else:
                done = False
                break
        packets.append(bytes(data))
        if done:
            return packets
        cmd = crtp.LOG_APPEND_V2


def test_a_ten_variable_block_as_cflib_sends_it_is_created_and_logs_all_ten():
    cf = SimCrazyflie()
    packets = cflib_v2_create_packets(1, BYTE_VARS)
    assert len(packets) == 2 and len(packets[0]) == crtp.MAX_DATA, "9 ops and a dangling type byte, then 1 op"
    for pk in packets:
        _p, _c, reply = crtp.split(ask(cf, crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, pk)[0])
        assert reply == bytes((pk[0], 1, 0)), reply
    ask(cf, crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, bytes((crtp.LOG_START, 1, 1)))
    out = cf.advance(10000)
    assert len(out) == 1
    _p, _c, data = crtp.split(out[0][1])
    assert len(data) == 4 + 8 + 2 + 2, "8 one-byte and 2 two-byte variables"
    assert cf.stats["malformed"] == 0


def test_a_reset_drops_the_blocks_every_client_made():
    cf = SimCrazyflie()
    x = log_id("stateEstimate.x")
    for client, t in ((CLIENT, 0), (OTHER, 10000)):
        ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_RESET,)), t, client=client)
        ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_CREATE_V2, 1, 7)) + struct.pack("<H", x), t, client=client)
        ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 1, 1)), t, client=client)
        if client == CLIENT:
            assert [c for c, _dg in cf.advance(10000)] == [CLIENT]
    # OTHER's reset (cflib's connect from a new address) left the old address nothing to log to
    assert [c for c, _dg in cf.advance(20000)] == [OTHER]
    assert cf.session_log_packets() == 1 and cf.stats["log_packets"] == 2
    assert cf.session_received_packets() == 3 and cf.stats["rx_packets"] == 6


class RawClient:
    """A lockstep client on a plain UDP socket: resets the log, makes and starts one block of
    stateEstimate.x at 10 ms and waits for the answers, as cflib's connect does."""

    def __init__(self, uri):
        host, port = uri[len("udp://"):].rsplit(":", 1)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect((host, int(port)))
        self.packets_sent = 0
        self.log_packets_received = 0
        x = log_id("stateEstimate.x")
        for data in (bytes((crtp.LOG_RESET,)), bytes((crtp.LOG_CREATE_V2, 1, 7)) + struct.pack("<H", x),
                     bytes((crtp.LOG_START, 1, 1))):
            self.sock.send(crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, data))
            self.packets_sent += 1
            self.sock.settimeout(2.0)
            block = data[1] if len(data) > 1 else 0
            assert crtp.split(self.sock.recv(64))[2] == bytes((data[0], block, 0))

    def wait_log_count(self, count, timeout_s):
        self.sock.settimeout(timeout_s)
        while self.log_packets_received < count:
            try:
                port, channel, _data = crtp.split(self.sock.recv(64))
            except socket.timeout:
                return False
            if (port, channel) == (crtp.PORT_LOG, crtp.LOG_CH_DATA):
                self.log_packets_received += 1
        return True

    def close(self):
        self.sock.close()


def test_lockstep_runs_on_after_a_client_reconnects_from_a_new_address():
    clock = SimClock()
    fleet = SimCrazyflieFleet(1, clock=clock).start()
    try:
        first = RawClient(fleet.uris[0])
        step = Lockstep(clock, fleet, [first], timeout_s=2.0)
        for _ in range(5):
            step.advance(10000)
        assert first.log_packets_received == 5
        first.close()
        second = RawClient(fleet.uris[0])
        step = Lockstep(clock, fleet, [second], timeout_s=2.0)
        for _ in range(5):
            step.advance(10000)
        assert second.log_packets_received == 5
        assert fleet.drones[0].stats["log_packets"] == 10 and len(fleet.drones[0].log.sessions) == 1
        second.close()
    finally:
        fleet.close()


def test_z_distance_pitch_has_the_firmware_sign_like_the_rpyt_setpoint():
    """The same attitude.pitch on the wire (negative: nose down) accelerates forward on port 3 (cflib's
    send_setpoint(0, +5, ...) sends -5) and on the z-distance setpoint (send_zdistance_setpoint(0, -5, ...))."""
    moved = {}
    for kind in ("rpyt", "zdistance"):
        cf = SimCrazyflie()
        t = 0
        for _ in range(300):
            ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 0, 0.5), t)
            t += 10000
            cf.advance(t)
        for _ in range(30):
            if kind == "rpyt":
                ask(cf, crtp.PORT_COMMANDER, 0, struct.pack("<fffH", 0.0, -5.0, 0.0, 36000), t)
            else:
                zdist = struct.pack("<Bffff", crtp.SP_ZDISTANCE, 0.0, -5.0, 0.0, 0.5)
                ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, zdist, t)
            t += 10000
            cf.advance(t)
        moved[kind] = cf.vehicle.vel_north_mps
    assert moved["rpyt"] > 0.1 and moved["zdistance"] > 0.1, moved


def _events_in_one_tick(starts):
    clock = SimClock()
    fleet = SimCrazyflieFleet(2, clock=clock)
    for _ in range(starts):
        fleet.start()
    try:
        before = clock.events_fired
        clock.advance(10000)
        return clock.events_fired - before
    finally:
        fleet.close()


def test_starting_a_started_fleet_again_serves_each_drone_once():
    threads_before = set(threading.enumerate())
    fleet = SimCrazyflieFleet(2).start()
    with fleet:                                 # __enter__ starts it again
        assert len(fleet.uris) == 2 and len(fleet.start().uris) == 2
        assert len(set(threading.enumerate()) - threads_before) == 1
    assert set(threading.enumerate()) - threads_before == set(), "no server thread left running"
    assert _events_in_one_tick(3) == _events_in_one_tick(1), "one physics tick per tick_s, not one per start()"


def test_a_param_write_is_echoed_as_written_even_where_the_drone_acts_on_it():
    """param_logic.c paramWriteProcess sends the write packet back as it came: writing
    kalman.resetEstimation = 1 echoes 1 (what cflib's set_value and the driver's read-back check see),
    although the reset itself clears the flag, which a later read shows."""
    cf = SimCrazyflie()
    ident = cf.param("kalman", "resetEstimation").ident
    _p, _c, d = crtp.split(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<HB", ident, 1))[0])
    assert d == struct.pack("<HB", ident, 1)
    _p, _c, d = crtp.split(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_READ, struct.pack("<H", ident))[0])
    assert d == struct.pack("<HBB", ident, 0, 0)
    assert cf.stats["param_writes"] == 1


@pytest.mark.parametrize("config", [{"host": "192.0.2.1"}, {"base_port": 65535}])
def test_a_fleet_on_a_bad_host_or_ports_is_refused_with_a_value_error(config):
    with pytest.raises(ValueError, match="loopback|65535"):
        SimCrazyflieFleet(2, config=config)


def test_a_silent_drone_keeps_its_log_periods_and_loses_their_packets():
    """A cut link: the log timers run on (nothing stays due in the past, which kept the realtime server's
    select at a zero timeout, spinning a core), and the link comes back on the period's grid, no backlog."""
    cf = SimCrazyflie()
    x = log_id("stateEstimate.x")
    ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_CREATE_V2, 1, 7)) + struct.pack("<H", x))
    ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 1, 1)))
    assert len(cf.advance(50000)) == 5
    cf.silent = True
    assert cf.advance(100000) == []
    assert cf.next_log_due_us() == 110000
    cf.silent = False
    out = cf.advance(110000)
    assert len(out) == 1
    data = crtp.split(out[0][1])[2]
    assert data[1] | data[2] << 8 | data[3] << 16 == 110, "stamped with its own instant (ms)"
    assert cf.stats["log_lost_packets"] == 5 and cf.stats["log_packets"] == 6


@pytest.mark.parametrize("starts", [[(0.0, 0.0)], [(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)], []])
def test_start_positions_must_be_one_per_drone(starts):
    with pytest.raises(ValueError, match="2 drones"):
        SimCrazyflieFleet(2, start_ne_m=starts)


@pytest.mark.parametrize("port,channel,cmd", [
    (crtp.PORT_LOCALIZATION, crtp.LOC_CH_GENERIC, crtp.LOC_EMERGENCY_STOP_WATCHDOG),
    (crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND, crtp.SUP_EMERGENCY_STOP_WATCHDOG)])
def test_the_emergency_stop_watchdog_stops_only_when_no_longer_fed(port, channel, cmd):
    """cflib send_emergency_stop_watchdog: "The Crazyflie will stop all motors unless this command is repeated
    at regular intervals" (firmware: a 1000 ms timeout re-armed by each request)."""
    cf = SimCrazyflie()
    hover = struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 0, 0.5)
    t = 0
    for k in range(300):                      # 3 s: hover setpoints every 10 ms, the watchdog fed every 0.5 s
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, hover, t)
        if k % 50 == 0:
            ask(cf, port, channel, bytes((cmd,)), t)
        t += 10000
        cf.advance(t)
    assert cf.stats["emergency_stops"] == 0 and cf.vehicle.motors_on and cf.vehicle.height_m > 0.4
    fed_us = 2500000
    while t < fed_us + 990000:                # no more watchdog requests: still flying for 1 s ...
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, hover, t)
        t += 10000
        cf.advance(t)
    assert cf.stats["emergency_stops"] == 0 and cf.vehicle.motors_on
    for _ in range(2):                        # ... then stopped and locked
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, hover, t)
        t += 10000
        cf.advance(t)
    assert cf.stats["emergency_stops"] == 1 and not cf.vehicle.motors_on and cf.supervisor.locked


@pytest.mark.parametrize("count", [True, 0, 65, 2.0])
def test_the_fleet_size_is_a_whole_number_not_a_bool(count):
    with pytest.raises(ValueError, match="fleet size"):
        SimCrazyflieFleet(count)
