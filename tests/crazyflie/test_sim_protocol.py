"""The simulated Crazyflie's CRTP state machine, driven packet by packet (no sockets, time passed in).

Byte layouts are cflib 0.1.34's; the cflib end-to-end tests are in test_cflib_session.py.
"""
import math
import struct

import pytest

from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.commander import COMMANDER_WDT_SHUTDOWN_US, COMMANDER_WDT_STABILIZE_US
from harness.sim.crazyflie.crtp import PROTOCOL_VERSION
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.sim_drone import SimCrazyflie
from onboard.core.settings import ConfigError

CLIENT = ("127.0.0.1", 40000)


def ask(cf, port, channel, data=b"", now_us=0, client=CLIENT):
    return cf.handle(crtp.packet(port, channel, data), now_us, client)


def one(replies):
    assert len(replies) == 1, replies
    port, channel, data = crtp.split(replies[0])
    return port, channel, data


def read_toc(cf, port):
    _p, _c, info = one(ask(cf, port, 0, bytes((crtp.TOC_CMD_INFO_V2,))))
    n, crc = struct.unpack("<HI", info[1:7])
    toc = {}
    for i in range(n):
        _p, _c, item = one(ask(cf, port, 0, struct.pack("<BH", crtp.TOC_CMD_ITEM_V2, i)))
        assert struct.unpack("<H", item[1:3])[0] == i
        group, name, _ = item[4:].split(b"\0")
        toc["%s.%s" % (group.decode(), name.decode())] = (i, item[3])
    return toc, crc


def fly_at(cf, height_m=0.5, now_us=0):
    """Hover setpoint at height, advanced until the drone is up; returns the time reached."""
    t = now_us
    for _ in range(300):
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 0, height_m), t)
        t += 10000
        cf.advance(t)
    assert abs(cf.vehicle.height_m - height_m) < 0.01
    return t


def test_link_handshake_version_echo_and_legacy_bytes():
    cf = SimCrazyflie()
    port, ch, data = one(ask(cf, crtp.PORT_LINKCTRL, crtp.LINK_CH_SOURCE, b"\0"))
    assert (port, ch) == (crtp.PORT_LINKCTRL, 1) and data[:18] == b"Bitcraze Crazyflie"
    port, ch, data = one(ask(cf, crtp.PORT_PLATFORM, crtp.PLATFORM_CH_VERSION, b"\0"))
    assert (port, ch, data[0], data[1]) == (crtp.PORT_PLATFORM, 1, 0, PROTOCOL_VERSION) and PROTOCOL_VERSION == 10
    ping = struct.pack("<Bd", 0, 1234.5)
    assert one(ask(cf, crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, ping))[2] == ping
    assert cf.handle(b"\xff", 0, CLIENT) == [b"\xff"], "scan probe (null packet) is answered"
    assert cf.handle(crtp.LEGACY_UDP_CONNECT, 0, CLIENT) == []
    assert cf.handle(crtp.LEGACY_UDP_DISCONNECT, 0, CLIENT) == []
    assert cf.stats["legacy_handshakes"] == 2 and cf.stats["malformed"] == 0
    assert one(ask(cf, crtp.PORT_MEM, crtp.MEM_CH_INFO, bytes((crtp.MEM_CMD_INFO_NBR,))))[2] == b"\x01\x00"


def test_tocs_carry_firmware_names_types_and_distinct_crcs():
    cf = SimCrazyflie()
    log_toc, log_crc = read_toc(cf, crtp.PORT_LOG)
    par_toc, par_crc = read_toc(cf, crtp.PORT_PARAM)
    float_id = crtp.LOG_TYPE_ID["float"]
    for name in ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z", "stateEstimate.vx", "stateEstimate.vy",
                 "stateEstimate.vz", "stateEstimate.yaw", "pm.vbat", "kalman.stateX", "stabilizer.roll",
                 "ranging.distance0"):
        assert log_toc[name][1] == float_id, name
    assert log_toc["stateEstimateZ.x"][1] == crtp.LOG_TYPE_ID["int16_t"]
    assert log_toc["pm.state"][1] == crtp.LOG_TYPE_ID["int8_t"]
    assert par_toc["commander.enHighLevel"][1] == crtp.PARAM_TYPE_ID["uint8_t"]
    assert par_toc["deck.bcLoco"][1] & crtp.PARAM_FLAG_RONLY
    assert par_toc["ring.effect"][1] & crtp.PARAM_FLAG_EXTENDED
    assert log_crc != par_crc, "cflib's TOC cache is keyed by CRC only"
    # v1 TOC (protocol < 4 clients) gives the same element
    _p, _c, item = one(ask(cf, crtp.PORT_LOG, 0, bytes((crtp.TOC_CMD_ELEMENT, 0))))
    assert item[:2] == b"\x00\x00" and item[3:].startswith(b"stateEstimate\0x\0")
    # beyond the end: answered with the command alone, counted
    assert one(ask(cf, crtp.PORT_LOG, 0, struct.pack("<BH", crtp.TOC_CMD_ITEM_V2, 999)))[2] == bytes((2,))
    assert cf.stats["malformed"] == 1


def _create(cf, block_id, var_ids_types, cmd=crtp.LOG_CREATE_V2, now_us=0):
    body = bytes((cmd, block_id))
    for ident, fetch in var_ids_types:
        body += struct.pack("<BH", fetch, ident)
    return one(ask(cf, crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, body, now_us))[2]


def test_log_block_life_cycle_period_and_fetch_as_conversion():
    cf = SimCrazyflie()
    toc, _crc = read_toc(cf, crtp.PORT_LOG)
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_RESET,))))[2] == bytes((crtp.LOG_RESET, 0, 0))
    t = fly_at(cf, 0.5)
    x_id = toc["stateEstimate.z"][0]
    vbat_id = toc["pm.vbat"][0]
    assert _create(cf, 3, [(x_id, 0x07), (vbat_id, 0x08), (x_id, 0x05)]) == bytes((crtp.LOG_CREATE_V2, 3, 0))
    assert _create(cf, 3, [(x_id, 0x07)]) == bytes((crtp.LOG_CREATE_V2, 3, crtp.EEXIST))
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 3, 2)), t))[2] == bytes((crtp.LOG_START, 3, 0))
    packets = []
    for _ in range(10):
        t += 10000
        packets += cf.advance(t)
    assert len(packets) == 5, "period 2 x 10 ms over 100 ms"
    stamps = []
    for client, dg in packets:
        assert client == CLIENT
        port, ch, data = crtp.split(dg)
        assert (port, ch, data[0]) == (crtp.PORT_LOG, crtp.LOG_CH_DATA, 3)
        stamps.append(data[1] | data[2] << 8 | data[3] << 16)
        z, vbat, z_mm = struct.unpack("<feh", data[4:])
        assert z == pytest.approx(0.5, abs=0.01)
        assert vbat == pytest.approx(cf.vehicle.battery_v, abs=4e-3)    # FP16
        assert z_mm == round(z)                                         # int16: whole metres
    assert [b - a for a, b in zip(stamps, stamps[1:])] == [20] * 4
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_STOP, 3))))[2] == bytes((crtp.LOG_STOP, 3, 0))
    assert cf.advance(t + 100000) == []
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_DELETE, 3))))[2] == bytes((crtp.LOG_DELETE, 3, 0))
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 3, 1))))[2] == bytes((crtp.LOG_START, 3, crtp.ENOENT))


def test_log_block_errors_are_the_firmware_errnos():
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_LOG)
    x = toc["stateEstimate.x"][0]
    assert _create(cf, 1, [(x, 7)] * 7)[2] == crtp.E2BIG, "7 floats > 26 bytes"
    assert _create(cf, 1, [(9999, 7)])[2] == crtp.ENOENT
    assert _create(cf, 1, [(x, 0x0F)])[2] == crtp.ENOENT, "unknown fetch type"
    # v1 ids, then an append that overflows the block
    assert _create(cf, 2, [], cmd=crtp.LOG_CREATE) == bytes((crtp.LOG_CREATE, 2, 0))
    body = bytes((crtp.LOG_APPEND, 2)) + bytes((7, x)) * 6
    assert one(ask(cf, crtp.PORT_LOG, 1, body))[2] == bytes((crtp.LOG_APPEND, 2, 0))
    body = bytes((crtp.LOG_APPEND, 2, 7, x))
    assert one(ask(cf, crtp.PORT_LOG, 1, body))[2] == bytes((crtp.LOG_APPEND, 2, crtp.E2BIG))
    for b in range(3, 3 + crtp.LOG_MAX_BLOCKS - 1):
        assert _create(cf, b, [(x, 1)])[2] == 0
    assert _create(cf, 99, [(x, 1)])[2] == crtp.ENOMEM, "16 blocks at most"
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((42, 1))))[2] == bytes((42, 1, crtp.ENOEXEC))
    # blocks belong to the client that made them: another client starts with none
    other = ("127.0.0.1", 40001)
    assert one(ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 2, 1)), client=other))[2][2] == crtp.ENOENT


def test_param_read_write_read_only_nan_and_unknown():
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_PARAM)
    kp = toc["posCtlPid.xKp"][0]
    _p, _c, d = one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_READ, struct.pack("<H", kp)))
    assert d[2] == 0 and struct.unpack("<f", d[3:])[0] == 2.0
    _p, _c, d = one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<Hf", kp, 3.5)))
    assert struct.unpack("<Hf", d) == (kp, 3.5)
    _p, _c, d = one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<Hf", kp, float("nan"))))
    assert struct.unpack("<Hf", d) == (kp, 3.5), "NaN refused, the value kept is echoed"
    loco = toc["deck.bcLoco"][0]
    assert ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<HB", loco, 0)) == []
    _p, _c, d = one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<HH", kp, 1)))
    assert struct.unpack("<f", d[2:])[0] == 3.5, "wrong size refused"
    assert one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_READ, struct.pack("<H", 999)))[2][2] == crtp.ENOENT
    assert cf.stats["rejected_param_writes"] == 3 and cf.stats["param_writes"] == 1
    # set by name (what cflib's set_value_raw sends) answers and announces the new value
    body = bytes((crtp.MISC_SETBYNAME,)) + b"commander\0enHighLevel\0" + bytes((0x08, 1))
    replies = ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_MISC, body)
    assert crtp.split(replies[0])[2][-1] == 0
    assert crtp.split(replies[1])[2] == struct.pack("<BHB", crtp.MISC_VALUE_UPDATED, toc["commander.enHighLevel"][0], 1)


def test_param_write_to_read_only_is_unanswered_and_by_name_refused_with_eacces():
    """crazyflie-firmware param_logic.c: paramWriteProcess returns without sending anything for a
    PARAM_RONLY parameter; paramWriteByNameProcess answers EACCES (after EINVAL for another type)."""
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_PARAM)
    loco, flags = toc["deck.bcLoco"]
    assert flags & crtp.PARAM_FLAG_RONLY
    before = cf.param("deck", "bcLoco").value
    writes = dict(cf.stats)
    for raw in (struct.pack("<HB", loco, 0), struct.pack("<HB", loco, before), struct.pack("<HH", loco, 0)):
        assert ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, raw) == [], "no reply, not even an echo"
    _p, _c, d = one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_READ, struct.pack("<H", loco)))
    assert d == struct.pack("<HBB", loco, 0, before) and cf.param("deck", "bcLoco").value == before
    head = bytes((crtp.MISC_SETBYNAME,)) + b"deck\0bcLoco\0"
    assert one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_MISC, head + bytes((0x08, 0))))[2] == head + bytes((crtp.EACCES,))
    assert one(ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_MISC, head + bytes((0x06,)) + struct.pack("<f", 0.0)))[2] \
        == head + bytes((crtp.EINVAL,)), "another type: EINVAL before EACCES"
    assert cf.param("deck", "bcLoco").value == before
    assert cf.stats["param_writes"] == writes["param_writes"]
    assert cf.stats["rejected_param_writes"] == writes["rejected_param_writes"] + 4


def test_param_extended_persistent_and_default_value():
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_PARAM)
    ring = toc["ring.effect"][0]
    misc = crtp.PARAM_CH_MISC
    assert one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_GET_EXTENDED_TYPE, ring)))[2][3] == 1
    assert one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_GET_EXTENDED_TYPE_V2, ring)))[2][3:] \
        == b"\x00\x01"
    ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<HB", ring, 9))
    assert one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_PERSISTENT_STORE, ring)))[2][3] == 0
    state = one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_PERSISTENT_GET_STATE, ring)))[2]
    assert state[3:] == bytes((1, 6, 9)), "stored, default 6, stored 9"
    assert one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_PERSISTENT_CLEAR, ring)))[2][3] == 0
    state = one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_PERSISTENT_GET_STATE, ring)))[2]
    assert state[3:] == bytes((0, 6))
    kp = toc["posCtlPid.xKp"][0]
    assert one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_PERSISTENT_STORE, kp)))[2][3] \
        == crtp.ENOENT
    d = one(ask(cf, crtp.PORT_PARAM, misc, struct.pack("<BH", crtp.MISC_GET_DEFAULT_VALUE, kp)))[2]
    assert struct.unpack("<f", d[3:])[0] == 2.0


def test_velocity_setpoints_move_the_drone_in_the_crazyflie_frame():
    cf = SimCrazyflie()
    t = fly_at(cf, 0.5)
    for _ in range(100):
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_VELOCITY_WORLD, 0.5, 0.25, 0, 0), t)
        t += 10000
        cf.advance(t)
    v = cf.vehicle
    assert v.vel_north_mps == pytest.approx(0.5, abs=0.01)
    assert v.vel_east_mps == pytest.approx(-0.25, abs=0.01), "CF y is left = west"
    x, y, z, _yaw = cf.estimate_xyz_yaw()
    assert x > 0.3 and y > 0.15 and z == pytest.approx(0.5, abs=0.01)


def test_setpoint_timeout_levels_then_stops_the_motors_like_the_firmware():
    cf = SimCrazyflie()
    t = fly_at(cf, 0.5)
    ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_VELOCITY_WORLD, 0.8, 0, 0, 0), t)
    last = t
    cf.advance(last + COMMANDER_WDT_STABILIZE_US)
    assert cf.vehicle.vel_north_mps > 0.7 and cf.stats["wdt_stabilize"] == 0
    cf.advance(last + COMMANDER_WDT_STABILIZE_US + 1500000)
    assert cf.stats["wdt_stabilize"] == 1
    assert abs(cf.vehicle.vel_north_mps) < 0.01, "levelled out: the drone stopped"
    assert cf.vehicle.height_m == pytest.approx(0.5, abs=0.01), "and kept its height"
    cf.advance(last + COMMANDER_WDT_SHUTDOWN_US + 500000)
    assert cf.stats["wdt_shutdown"] == 1 and not cf.vehicle.motors_on
    assert cf.vehicle.height_m < 0.5


def test_notify_stop_hands_over_to_high_level_land():
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_PARAM)
    t = fly_at(cf, 0.5)
    land = struct.pack("<BBff?f", crtp.HL_LAND_2, 0, 0.0, 0.0, True, 1.0)
    ask(cf, crtp.PORT_SETPOINT_HL, 0, land, t)
    assert cf.stats["hl_ignored"] == 1, "high-level commander off (commander.enHighLevel = 0)"
    ask(cf, crtp.PORT_PARAM, crtp.PARAM_CH_WRITE, struct.pack("<HB", toc["commander.enHighLevel"][0], 1))
    ask(cf, crtp.PORT_SETPOINT_HL, 0, land, t)
    assert cf.stats["hl_ignored"] == 2, "low-level setpoints keep priority until notify-stop"
    ask(cf, crtp.PORT_COMMANDER_GENERIC, crtp.GEN_CH_META, struct.pack("<BI", 0, 100), t)
    ask(cf, crtp.PORT_SETPOINT_HL, 0, land, t)
    assert cf.stats["hl_commands"] == 1
    for _ in range(200):
        t += 10000
        cf.advance(t)
    assert cf.vehicle.height_m == 0.0 and not cf.vehicle.motors_on
    assert cf.stats["wdt_shutdown"] == 0


def test_bad_packets_are_counted_and_change_nothing():
    cf = SimCrazyflie()
    t = fly_at(cf, 0.5)
    before = (cf.vehicle.cmd_vel_ne_mps, cf.stats["setpoints"])
    assert cf.handle(b"", t, CLIENT) == []
    assert cf.handle(b"\x7c" + bytes(40), t, CLIENT) == []                     # longer than CRTP allows
    assert ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, bytes((crtp.SP_VELOCITY_WORLD, 1, 2)), t) == []   # truncated
    nan = struct.pack("<Bffff", crtp.SP_VELOCITY_WORLD, float("nan"), 0, 0, 0)
    assert ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, nan, t) == []
    assert ask(cf, 0x0B, 0, b"\x01", t) == []                                 # unused port
    assert ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, bytes((77,)), t) == []      # unknown setpoint type
    assert cf.stats["malformed"] == 3 and cf.stats["rejected_setpoints"] == 1 and cf.stats["unknown"] == 2
    assert (cf.vehicle.cmd_vel_ne_mps, cf.stats["setpoints"]) == before
    assert cf.stats["internal_errors"] == 0


def test_silent_drone_answers_nothing_and_logs_nothing():
    cf = SimCrazyflie()
    toc, _ = read_toc(cf, crtp.PORT_LOG)
    _create(cf, 1, [(toc["stateEstimate.x"][0], 7)])
    ask(cf, crtp.PORT_LOG, 1, bytes((crtp.LOG_START, 1, 1)))
    assert len(cf.advance(50000)) == 5
    cf.silent = True
    assert ask(cf, crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, b"x") == []
    assert cf.advance(100000) == []
    assert cf.stats["dropped_silent"] == 1


def test_yaw_rate_and_hover_body_frame():
    cf = SimCrazyflie()
    t = fly_at(cf, 0.4)
    for _ in range(100):   # turn left (CCW) at 90 deg/s for 1 s
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 90.0, 0.4), t)
        t += 10000
        cf.advance(t)
    yaw_deg = cf.estimate_xyz_yaw()[3]
    assert 80.0 < yaw_deg < 95.0
    for _ in range(100):   # body-forward hover velocity goes along the heading
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, struct.pack("<Bffff", crtp.SP_HOVER, 0.5, 0, 0, 0.4), t)
        t += 10000
        cf.advance(t)
    yaw_rad = math.radians(cf.estimate_xyz_yaw()[3])
    vx, vy = cf.vehicle.vel_north_mps, -cf.vehicle.vel_east_mps
    assert math.atan2(vy, vx) == pytest.approx(yaw_rad, abs=0.05)


def _bits(cf):
    _p, _c, data = one(ask(cf, crtp.PORT_SUPERVISOR, crtp.SUP_CH_INFO, bytes((crtp.SUP_GET_STATE_BITFIELD,))))
    assert data[0] == 0x80 | crtp.SUP_GET_STATE_BITFIELD
    return struct.unpack("<H", data[1:3])[0]


def test_arming_emergency_stop_and_recovery_through_the_supervisor():
    cf = SimCrazyflie(config={"arming_required": True})
    assert _bits(cf) & 0b111 == 0b001, "can be armed, not armed, no auto-arm"
    hover = struct.pack("<Bffff", crtp.SP_HOVER, 0, 0, 0, 0.5)
    t = 0
    for _ in range(50):
        ask(cf, crtp.PORT_COMMANDER_GENERIC, 0, hover, t)
        t += 10000
        cf.advance(t)
    assert cf.vehicle.height_m == 0.0 and not cf.armed, "the motors wait for an arming request"
    _p, _c, data = one(ask(cf, crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND, bytes((crtp.SUP_ARM_SYSTEM, 1)), t))
    assert data == bytes((0x80 | crtp.SUP_ARM_SYSTEM, 1, 1)) and cf.armed
    t = fly_at(cf, 0.5, t)
    assert _bits(cf) & (1 << 4), "flying"
    ask(cf, crtp.PORT_LOCALIZATION, crtp.LOC_CH_GENERIC, bytes((crtp.LOC_EMERGENCY_STOP,)), t)
    assert cf.stats["emergency_stops"] == 1 and not cf.armed and not cf.vehicle.motors_on
    assert _bits(cf) & (1 << 6), "locked"
    ask(cf, crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND, bytes((crtp.SUP_ARM_SYSTEM, 1)), t)
    assert not cf.armed, "a locked drone does not arm"
    ask(cf, crtp.PORT_PLATFORM, crtp.PLATFORM_CH_COMMAND, bytes((crtp.PLATFORM_REQUEST_CRASH_RECOVERY,)), t)
    ask(cf, crtp.PORT_PLATFORM, crtp.PLATFORM_CH_COMMAND, bytes((crtp.PLATFORM_REQUEST_ARMING, 1)), t)
    assert cf.armed and not _bits(cf) & (1 << 6)
    assert cf.stats["internal_errors"] == 0


@pytest.mark.parametrize("config,needle", [
    ({"physics_dt": 0.01}, "unknown crazyflie sim setting 'physics_dt' (did you mean 'physics_dt_s'?)"),
    ({"rssi": 300}, "crazyflie sim setting rssi must be an integer in 0..255, got 300"),
    ({"physics_dt_s": 0.0}, "crazyflie sim setting physics_dt_s must be a number in [1e-06, 0.1], got 0.0"),
    ({"arming_required": 1}, "crazyflie sim setting arming_required must be "),
])
def test_settings_are_checked_in_one_line(config, needle):
    with pytest.raises(ConfigError) as err:
        SimCrazyflie(config=config)
    assert str(err.value).startswith(needle) and "\n" not in str(err.value)


def test_fleet_settings_are_checked_before_anything_starts():
    with pytest.raises(ConfigError, match=r"crazyflie fleet setting drone\.rssi must be an integer in 0\.\.255"):
        SimCrazyflieFleet(1, config={"drone": {"rssi": -1}})
    with pytest.raises(ConfigError, match="unknown crazyflie fleet setting 'spacing'"):
        SimCrazyflieFleet(1, config={"spacing": 1.0})
