"""One simulated Crazyflie: the CRTP protocol as a state machine around a Drone2D model.

``SimCrazyflie.handle(datagram, now_us, client)`` answers one incoming CRTP packet (a
list of reply datagrams for ``client``); ``advance(now_us)`` integrates the vehicle up
to ``now_us`` and returns the periodic log packets that fell due, as ``(client,
datagram)``. Time is passed in: the UDP server (harness.sim.crazyflie.server) gives it the
host's monotonic clock for the ``crazyflies`` command and the scenario's SimClock in
lockstep use. Nothing here touches a socket or a clock.

What it implements (crazyflie-firmware behaviour, CRTP protocol version 10):
link control (echo, source "Bitcraze Crazyflie", sink, null/scan probe, the legacy
UDP connect/disconnect bytes), platform protocol version, log TOC v1/v2, log blocks
(create/append/delete/start/stop/reset, v1 and v2 ids, fetch-as type conversion,
errno answers), param TOC v1/v2, read/write, set-by-name, extended types, persistent
store/get-state/clear, default values, memory count 0, the RPYT commander (port 3), the
generic commander (port 7: stop, velocity-world, hover, z-distance, position, full
state, manual; notify-stop), the high-level commander (take-off, land, go-to, stop;
only with ``commander.enHighLevel`` = 1 like firmware of that protocol), supervisor
(arming, state bitfield), localization emergency stop and external position.
The commander watchdog follows the firmware: no setpoint for 500 ms levels the drone
(it stops and holds height), 2000 ms switches the motors off.

Frames: the Crazyflie world frame is x forward (= north), y left (= west), z up, yaw
counter-clockwise in degrees; the vehicle model is NED. Conversion happens here only.
Malformed or unknown packets are counted in ``stats`` and answered the way the
firmware answers them (an errno reply where the protocol has one, else nothing).
"""
import math
import struct
import threading
import zlib

from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.firmware_toc import LOG_VARIABLES, PARAMS
from harness.sim.vehicles.drone2d import Drone2D, V_CLIMB
from onboard.core.linalg import is_finite

PROTOCOL_VERSION = 10
COMMANDER_WDT_STABILIZE_US = 500000     # firmware COMMANDER_WDT_TIMEOUT_STABILIZE
COMMANDER_WDT_SHUTDOWN_US = 2000000     # firmware COMMANDER_WDT_TIMEOUT_SHUTDOWN
HOVER_THRUST = 36000.0
GRAVITY_MPS2 = 9.81
LOG_PERIOD_UNIT_US = 10000              # log period byte is in 10 ms units
MAX_LOG_BACKLOG = 5                     # periods a block may fall behind before skipping
N_RANGES = 8

DEFAULTS = {
    "physics_dt_s": 0.005,
    "arming_required": False,           # Crazyflie 2.x auto-arms
    "rssi": 40,
    "vehicle": {},                      # Drone2D settings
}


class _Param:
    __slots__ = ("ident", "group", "name", "fmt", "type_id", "flags", "default", "value",
                 "persistent", "stored")

    def __init__(self, ident, group, name, ctype, flags, default, persistent):
        self.ident = ident
        self.group = group
        self.name = name
        self.type_id = crtp.PARAM_TYPE_ID[ctype]
        self.fmt = crtp.PARAM_TYPES[self.type_id][1]
        self.flags = flags | (crtp.PARAM_FLAG_EXTENDED if persistent else 0)
        self.default = default
        self.value = default
        self.persistent = persistent
        self.stored = None

    @property
    def read_only(self):
        return bool(self.flags & crtp.PARAM_FLAG_RONLY)

    def toc_bytes(self):
        return bytes((self.type_id | self.flags,)) + self.group.encode() + b"\0" + self.name.encode() + b"\0"


class _LogVar:
    __slots__ = ("ident", "group", "name", "type_id", "fmt", "source")

    def __init__(self, ident, group, name, ctype, source):
        self.ident = ident
        self.group = group
        self.name = name
        self.type_id = crtp.LOG_TYPE_ID[ctype]
        self.fmt = crtp.LOG_TYPES[self.type_id][1]
        self.source = source

    def toc_bytes(self):
        return bytes((self.type_id,)) + self.group.encode() + b"\0" + self.name.encode() + b"\0"


class _LogBlock:
    __slots__ = ("block_id", "ops", "period_us", "running", "next_due_us", "size")

    def __init__(self, block_id):
        self.block_id = block_id
        self.ops = []          # (source key, pack format)
        self.period_us = 0
        self.running = False
        self.next_due_us = 0
        self.size = 0


def _toc_crc(port, entries):
    crc = zlib.crc32(bytes((port,)))
    for e in entries:
        crc = zlib.crc32(e, crc)
    return crc & 0xFFFFFFFF


class SimCrazyflie:
    """A simulated Crazyflie answering CRTP packets; ground truth from a Drone2D."""

    def __init__(self, name="cf0", config=None, vehicle=None, ranging=None, start_us=0):
        cfg = dict(DEFAULTS)
        for key, value in (config or {}).items():
            if key not in DEFAULTS:
                raise ValueError("unknown SimCrazyflie setting %r (known: %s)"
                                 % (key, ", ".join(sorted(DEFAULTS))))
            cfg[key] = value
        self.cfg = cfg
        self.name = name
        self.lock = threading.RLock()
        self.vehicle = vehicle if vehicle is not None else Drone2D(cfg["vehicle"])
        # ranging(now_us) -> sequence of up to 8 distances (m) or None (no measurement)
        self.ranging = ranging
        self.time_us = int(start_us)
        self._physics_dt_us = max(1, int(round(cfg["physics_dt_s"] * 1e6)))
        self.log_vars = [_LogVar(i, g, n, t, s) for i, (g, n, t, s) in enumerate(LOG_VARIABLES)]
        self.params = [_Param(i, g, n, t, f, d, p) for i, (g, n, t, f, d, p) in enumerate(PARAMS)]
        self._param_by_name = {(p.group, p.name): p for p in self.params}
        self._stabilizer_stop = self._param_by_name[("stabilizer", "stop")]    # read every physics step
        self._log_toc = [v.toc_bytes() for v in self.log_vars]
        self._param_toc = [p.toc_bytes() for p in self.params]
        self.log_toc_crc = _toc_crc(crtp.PORT_LOG, self._log_toc)
        self.param_toc_crc = _toc_crc(crtp.PORT_PARAM, self._param_toc)
        self.sessions = {}               # client address -> {block id: _LogBlock}
        self.stats = {
            "rx_packets": 0, "tx_packets": 0, "malformed": 0, "unknown": 0, "legacy_handshakes": 0,
            "log_packets": 0, "log_skipped_periods": 0, "setpoints": 0, "rejected_setpoints": 0,
            "hl_commands": 0, "hl_ignored": 0, "param_writes": 0, "rejected_param_writes": 0,
            "notify_stops": 0, "wdt_stabilize": 0, "wdt_shutdown": 0, "emergency_stops": 0,
            "ext_positions": 0, "echo": 0, "dropped_silent": 0, "internal_errors": 0,
        }
        # link failure injection: when silent the drone neither answers nor logs
        self.silent = False
        # commander state
        self.armed = not cfg["arming_required"]
        self.locked = False
        self.ll = None                   # {"kind", "values", "time_us"}
        self.ll_relaxed = False
        self.hl = None                   # high-level plan
        self._wdt_phase = 0              # 0 ok, 1 stabilized, 2 shut down
        self.est_offset_m = [0.0, 0.0, 0.0]   # estimate minus truth, CF frame
        self.target = {"x": 0.0, "y": 0.0, "z": 0.0, "vx": 0.0, "vy": 0.0, "vz": 0.0}
        self._range_cache = None
        self._sources = self._make_sources()
        self._handled = 0                # datagrams handled so far
        self._controlled = None          # (time_us, _handled) of the last control pass advance() ended with

    # ================================================================ packet entry point
    def handle(self, datagram, now_us, client=None):
        """Answer one datagram from ``client``; returns the reply datagrams (bytes)."""
        with self.lock:
            self._handled += 1
            self.stats["rx_packets"] += 1
            if self.silent:
                self.stats["dropped_silent"] += 1
                return []
            try:
                port, channel, data = crtp.split(datagram)
            except ValueError:
                self.stats["malformed"] += 1
                return []
            if len(data) > crtp.MAX_DATA:
                self.stats["malformed"] += 1
                return []
            try:
                replies = self._dispatch(port, channel, bytes(data), int(now_us), client)
            except (struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError):
                self.stats["malformed"] += 1
                replies = []
            except Exception:            # a bug must not take the simulated drone down
                self.stats["internal_errors"] += 1
                replies = []
            self.stats["tx_packets"] += len(replies)
            return replies

    def _dispatch(self, port, channel, data, now_us, client):
        if port == crtp.PORT_LINKCTRL:
            return self._linkctrl(channel, data, client)
        if port == crtp.PORT_PLATFORM:
            return self._platform(channel, data)
        if port == crtp.PORT_LOG:
            return self._log(channel, data, now_us, client)
        if port == crtp.PORT_PARAM:
            return self._param(channel, data)
        if port == crtp.PORT_MEM:
            return self._mem(channel, data)
        if port == crtp.PORT_COMMANDER:
            return self._commander_rpyt(data, now_us)
        if port == crtp.PORT_COMMANDER_GENERIC:
            return self._commander_generic(channel, data, now_us)
        if port == crtp.PORT_SETPOINT_HL:
            return self._high_level(data, now_us)
        if port == crtp.PORT_SUPERVISOR:
            return self._supervisor(channel, data)
        if port == crtp.PORT_LOCALIZATION:
            return self._localization(channel, data)
        self.stats["unknown"] += 1
        return []

    # ================================================================ link control
    def _linkctrl(self, channel, data, client):
        if channel == crtp.LINK_CH_ECHO:
            self.stats["echo"] += 1
            return [crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_ECHO, data)]
        if channel == crtp.LINK_CH_SOURCE:
            return [crtp.packet(crtp.PORT_LINKCTRL, crtp.LINK_CH_SOURCE,
                                crtp.LINK_SOURCE_MAGIC.ljust(crtp.MAX_DATA, b"\0"))]
        if channel == crtp.LINK_CH_SINK:
            return []
        # channel 3: null packets (the scan probe b"\xff") and the legacy UDP handshake
        full = crtp.NULL_PACKET + data
        if full == crtp.LEGACY_UDP_CONNECT:
            self.stats["legacy_handshakes"] += 1
            self.sessions.setdefault(client, {})
            return []
        if full == crtp.LEGACY_UDP_DISCONNECT:
            self.stats["legacy_handshakes"] += 1
            self.sessions.pop(client, None)
            return []
        if not data:
            return [crtp.NULL_PACKET]
        self.stats["unknown"] += 1
        return []

    # ================================================================ platform
    def _platform(self, channel, data):
        if channel == crtp.PLATFORM_CH_VERSION:
            if data[0] == crtp.VERSION_GET_PROTOCOL:
                return [crtp.packet(crtp.PORT_PLATFORM, crtp.PLATFORM_CH_VERSION,
                                    bytes((crtp.VERSION_GET_PROTOCOL, PROTOCOL_VERSION)))]
            self.stats["unknown"] += 1
            return []
        if channel == crtp.PLATFORM_CH_COMMAND:
            cmd = data[0]
            if cmd == crtp.PLATFORM_REQUEST_ARMING:
                self._arm(bool(data[1]))
                return []
            if cmd == crtp.PLATFORM_REQUEST_CRASH_RECOVERY:
                self.locked = False
                return []
            if cmd in (crtp.PLATFORM_SET_CONT_WAVE, crtp.PLATFORM_USER_NOTIFICATION):
                return []
        self.stats["unknown"] += 1
        return []

    def _arm(self, do_arm):
        self.armed = bool(do_arm) and not self.locked
        if not self.armed:
            self.vehicle.motors_off()
            self.hl = None

    # ================================================================ supervisor
    def supervisor_bits(self):
        v = self.vehicle
        bits = 0
        can_arm = not self.locked
        flying = v.airborne and v.motors_on
        for pos, on in ((0, can_arm), (1, self.armed), (2, not self.cfg["arming_required"]),
                        (3, self.armed and not self.locked), (4, flying), (6, self.locked),
                        (8, self.hl is not None), (9, self.hl is not None and self.hl.get("done", False)),
                        (10, self._p("commander", "enHighLevel").value == 0)):
            if on:
                bits |= 1 << pos
        return bits

    def _supervisor(self, channel, data):
        cmd = data[0]
        if channel == crtp.SUP_CH_INFO and cmd == crtp.SUP_GET_STATE_BITFIELD:
            return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_INFO,
                                bytes((0x80 | cmd,)) + struct.pack("<H", self.supervisor_bits()))]
        if channel == crtp.SUP_CH_COMMAND:
            if cmd == crtp.SUP_ARM_SYSTEM:
                self._arm(bool(data[1]))
                return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND,
                                    bytes((0x80 | cmd, 1, int(self.armed))))]
            if cmd == crtp.SUP_RECOVER_SYSTEM:
                self.locked = False
                return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND, bytes((0x80 | cmd, 1, 1)))]
            if cmd in (crtp.SUP_EMERGENCY_STOP, crtp.SUP_EMERGENCY_STOP_WATCHDOG):
                self._emergency_stop()
                return []
        self.stats["unknown"] += 1
        return []

    def _emergency_stop(self):
        self.stats["emergency_stops"] += 1
        self.locked = True
        self.armed = False
        self.hl = None
        self.vehicle.motors_off()

    # ================================================================ localization
    def _localization(self, channel, data):
        if channel == crtp.LOC_CH_POSITION:
            x, y, z = struct.unpack("<fff", data[:12])
            if is_finite((x, y, z)):
                self.stats["ext_positions"] += 1
            else:
                self.stats["malformed"] += 1
            return []
        if channel == crtp.LOC_CH_GENERIC:
            if data[0] in (crtp.LOC_EMERGENCY_STOP, crtp.LOC_EMERGENCY_STOP_WATCHDOG):
                self._emergency_stop()
                return []
            return []         # range streams, LPP packets, ext pose: accepted, not modelled
        self.stats["unknown"] += 1
        return []

    # ================================================================ memory (none)
    def _mem(self, channel, data):
        cmd = data[0]
        if channel == crtp.MEM_CH_INFO:
            if cmd == crtp.MEM_CMD_INFO_NBR:
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, bytes((crtp.MEM_CMD_INFO_NBR, 0)))]
            if cmd == crtp.MEM_CMD_INFO_VER:
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, bytes((crtp.MEM_CMD_INFO_VER, 1)))]
            if cmd == crtp.MEM_CMD_INFO_DETAILS:
                # no such memory: the firmware answers with the id only
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, data[:2])]
        if channel in (crtp.MEM_CH_READ, crtp.MEM_CH_WRITE) and len(data) >= 5:
            # [mem id, addr(4), status]: no memory with that id
            return [crtp.packet(crtp.PORT_MEM, channel, data[:5] + bytes((crtp.ENOENT,)))]
        self.stats["unknown"] += 1
        return []

    # ================================================================ TOCs
    def _toc(self, port, data, entries, crc, extra_info):
        cmd = data[0]
        n = len(entries)
        if cmd == crtp.TOC_CMD_INFO_V2:
            return [crtp.packet(port, 0, struct.pack("<BHI", cmd, n, crc) + extra_info)]
        if cmd == crtp.TOC_CMD_INFO:
            return [crtp.packet(port, 0, struct.pack("<BBI", cmd, min(n, 255), crc) + extra_info)]
        if cmd == crtp.TOC_CMD_ITEM_V2:
            ident = struct.unpack("<H", data[1:3])[0]
            if ident >= n:
                self.stats["malformed"] += 1
                return [crtp.packet(port, 0, bytes((cmd,)))]
            return [crtp.packet(port, 0, struct.pack("<BH", cmd, ident) + entries[ident])]
        if cmd == crtp.TOC_CMD_ELEMENT:
            ident = data[1]
            if ident >= n:
                self.stats["malformed"] += 1
                return [crtp.packet(port, 0, bytes((cmd,)))]
            return [crtp.packet(port, 0, bytes((cmd, ident)) + entries[ident])]
        self.stats["unknown"] += 1
        return []

    # ================================================================ logging
    def _log(self, channel, data, now_us, client):
        if channel == crtp.LOG_CH_TOC:
            return self._toc(crtp.PORT_LOG, data, self._log_toc, self.log_toc_crc,
                             bytes((crtp.LOG_MAX_BLOCKS, crtp.LOG_MAX_OPS)))
        if channel != crtp.LOG_CH_SETTINGS:
            self.stats["unknown"] += 1
            return []
        cmd = data[0]
        blocks = self.sessions.setdefault(client, {})
        if cmd == crtp.LOG_RESET:
            blocks.clear()
            return [self._log_reply(cmd, 0, 0)]
        block_id = data[1]
        if cmd in (crtp.LOG_CREATE, crtp.LOG_CREATE_V2, crtp.LOG_APPEND, crtp.LOG_APPEND_V2):
            err = self._log_add_ops(cmd, block_id, data[2:], blocks)
            return [self._log_reply(cmd, block_id, err)]
        block = blocks.get(block_id)
        if cmd == crtp.LOG_DELETE:
            if block is None:
                return [self._log_reply(cmd, block_id, crtp.ENOENT)]
            del blocks[block_id]
            return [self._log_reply(cmd, block_id, 0)]
        if cmd == crtp.LOG_START:
            if block is None:
                return [self._log_reply(cmd, block_id, crtp.ENOENT)]
            period_units = data[2]
            if period_units == 0:
                self.stats["malformed"] += 1
                return [self._log_reply(cmd, block_id, crtp.E2BIG)]
            block.period_us = period_units * LOG_PERIOD_UNIT_US
            # first sample on the next multiple of the period (firmware timers tick on a grid)
            block.next_due_us = (now_us // block.period_us + 1) * block.period_us
            block.running = True
            return [self._log_reply(cmd, block_id, 0)]
        if cmd == crtp.LOG_STOP:
            if block is None:
                return [self._log_reply(cmd, block_id, crtp.ENOENT)]
            block.running = False
            return [self._log_reply(cmd, block_id, 0)]
        self.stats["unknown"] += 1
        return [self._log_reply(cmd, block_id, crtp.ENOEXEC)]

    @staticmethod
    def _log_reply(cmd, block_id, err):
        return crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, bytes((cmd, block_id, err)))

    def _log_add_ops(self, cmd, block_id, payload, blocks):
        create = cmd in (crtp.LOG_CREATE, crtp.LOG_CREATE_V2)
        v2 = cmd in (crtp.LOG_CREATE_V2, crtp.LOG_APPEND_V2)
        block = blocks.get(block_id)
        if create:
            if block is not None:
                return crtp.EEXIST
            if len(blocks) >= crtp.LOG_MAX_BLOCKS:
                return crtp.ENOMEM
        elif block is None:
            return crtp.ENOENT
        ops = []
        i = 0
        step = 3 if v2 else 2
        while i < len(payload):
            if i + step > len(payload):
                self.stats["malformed"] += 1
                return crtp.E2BIG
            type_byte = payload[i]
            ident = struct.unpack("<H", payload[i + 1:i + 3])[0] if v2 else payload[i + 1]
            i += step
            if ident == (0xFFFF if v2 else 0xFF):      # raw memory address follows
                i += 4
                return crtp.ENOENT                      # no raw memory in the simulation
            if ident >= len(self.log_vars):
                return crtp.ENOENT
            fetch_id = type_byte & 0x0F
            if fetch_id not in crtp.LOG_TYPES:
                return crtp.ENOENT
            ops.append((self.log_vars[ident].source, crtp.LOG_TYPES[fetch_id][1]))
        size = sum(crtp.type_size(fmt) for _s, fmt in ops)
        total_ops = sum(len(b.ops) for b in blocks.values()) + len(ops)
        if total_ops > crtp.LOG_MAX_OPS:
            return crtp.ENOMEM
        if (block.size if block is not None else 0) + size > crtp.LOG_MAX_PAYLOAD:
            return crtp.E2BIG
        if block is None:
            block = blocks[block_id] = _LogBlock(block_id)
        block.ops.extend(ops)
        block.size += size
        return 0

    # ================================================================ parameters
    def _param(self, channel, data):
        if channel == crtp.PARAM_CH_TOC:
            return self._toc(crtp.PORT_PARAM, data, self._param_toc, self.param_toc_crc, b"")
        if channel == crtp.PARAM_CH_READ:
            ident = struct.unpack("<H", data[:2])[0]
            if ident >= len(self.params):
                return [crtp.packet(crtp.PORT_PARAM, channel, data[:2] + bytes((crtp.ENOENT,)))]
            p = self.params[ident]
            return [crtp.packet(crtp.PORT_PARAM, channel,
                                data[:2] + b"\0" + crtp.pack_value(p.fmt, p.value))]
        if channel == crtp.PARAM_CH_WRITE:
            ident = struct.unpack("<H", data[:2])[0]
            if ident >= len(self.params):
                self.stats["rejected_param_writes"] += 1
                return [crtp.packet(crtp.PORT_PARAM, channel, data[:2] + bytes((crtp.ENOENT,)))]
            p = self.params[ident]
            self._write_param(p, data[2:])
            # the firmware echoes id + the value the parameter now holds
            return [crtp.packet(crtp.PORT_PARAM, channel, data[:2] + crtp.pack_value(p.fmt, p.value))]
        return self._param_misc(data)

    def _write_param(self, p, raw):
        """Store a raw little-endian value; wrong size, NaN or read-only writes are refused."""
        size = crtp.type_size(p.fmt)
        if p.read_only or len(raw) != size:
            self.stats["rejected_param_writes"] += 1
            return False
        value = struct.unpack(p.fmt, raw)[0]
        if isinstance(value, float) and not is_finite((value,)):
            self.stats["rejected_param_writes"] += 1
            return False
        p.value = value
        self.stats["param_writes"] += 1
        self._param_changed(p)
        return True

    def _param_changed(self, p):
        if (p.group, p.name) == ("kalman", "resetEstimation") and p.value:
            v = self.vehicle
            init = (self._p("kalman", "initialX").value, self._p("kalman", "initialY").value,
                    self._p("kalman", "initialZ").value)
            truth = (v.north_m, -v.east_m, v.height_m)
            self.est_offset_m = [init[k] - truth[k] for k in range(3)]
            p.value = 0                       # the firmware clears the flag once reset
        elif (p.group, p.name) == ("stabilizer", "stop") and p.value:
            self.vehicle.motors_off()
            self.hl = None
        elif (p.group, p.name) == ("commander", "enHighLevel") and not p.value:
            self.hl = None

    def _p(self, group, name):
        return self._param_by_name[(group, name)]

    def _param_misc(self, data):
        cmd = data[0]
        ch = crtp.PARAM_CH_MISC
        if cmd == crtp.MISC_SETBYNAME:
            rest = data[1:]
            z1 = rest.index(b"\0")
            z2 = rest.index(b"\0", z1 + 1)
            group, name = rest[:z1].decode(), rest[z1 + 1:z2].decode()
            type_id = rest[z2 + 1]
            raw = rest[z2 + 2:]
            p = self._param_by_name.get((group, name))
            head = bytes((cmd,)) + rest[:z2 + 1]
            if p is None:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.ENOENT,)))]
            if type_id != p.type_id or not self._write_param(p, raw):
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.EINVAL,)))]
            return [crtp.packet(crtp.PORT_PARAM, ch, head + b"\0"),
                    crtp.packet(crtp.PORT_PARAM, ch, struct.pack("<BH", crtp.MISC_VALUE_UPDATED, p.ident)
                                + crtp.pack_value(p.fmt, p.value))]
        ident = struct.unpack("<H", data[1:3])[0]
        head = data[:3]
        p = self.params[ident] if ident < len(self.params) else None
        if cmd == crtp.MISC_GET_EXTENDED_TYPE:
            ext = crtp.PARAM_EXTENDED_PERSISTENT if p is not None and p.persistent else 0
            return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((ext,)))]
        if cmd == crtp.MISC_GET_EXTENDED_TYPE_V2:
            if p is None:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.ENOENT,)))]
            ext = crtp.PARAM_EXTENDED_PERSISTENT if p.persistent else 0
            return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((0, ext)))]
        if cmd in (crtp.MISC_GET_DEFAULT_VALUE, crtp.MISC_GET_DEFAULT_VALUE_V2):
            v2 = cmd == crtp.MISC_GET_DEFAULT_VALUE_V2
            if p is None:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.ENOENT,)))]
            body = crtp.pack_value(p.fmt, p.default)
            return [crtp.packet(crtp.PORT_PARAM, ch, head + (b"\0" if v2 else b"") + body)]
        if cmd in (crtp.MISC_PERSISTENT_STORE, crtp.MISC_PERSISTENT_CLEAR, crtp.MISC_PERSISTENT_GET_STATE):
            if p is None or not p.persistent:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.ENOENT,)))]
            if cmd == crtp.MISC_PERSISTENT_STORE:
                p.stored = p.value
                return [crtp.packet(crtp.PORT_PARAM, ch, head + b"\0")]
            if cmd == crtp.MISC_PERSISTENT_CLEAR:
                p.stored = None
                return [crtp.packet(crtp.PORT_PARAM, ch, head + b"\0")]
            if p.stored is None:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + b"\0" + crtp.pack_value(p.fmt, p.default))]
            return [crtp.packet(crtp.PORT_PARAM, ch, head + b"\x01" + crtp.pack_value(p.fmt, p.default)
                                + crtp.pack_value(p.fmt, p.stored))]
        self.stats["unknown"] += 1
        return []

    # ================================================================ commanders
    def _set_ll(self, kind, values, now_us):
        if not is_finite(values):
            self.stats["rejected_setpoints"] += 1
            return []
        self.stats["setpoints"] += 1
        self.ll = {"kind": kind, "values": values, "time_us": now_us}
        self.ll_relaxed = False
        self._wdt_phase = 0
        self.hl = None        # a low-level setpoint takes over from the high-level commander
        return []

    def _commander_rpyt(self, data, now_us):
        roll, pitch, yawrate, thrust = struct.unpack("<fffH", data[:14])
        # cflib sends -pitch on the wire; thrust 0 means motors off (what close_link sends)
        return self._set_ll("rpyt", (roll, -pitch, yawrate, float(thrust)), now_us)

    def _commander_generic(self, channel, data, now_us):
        if channel == crtp.GEN_CH_META:
            if data[0] == crtp.META_NOTIFY_SETPOINT_STOP:
                remain_ms = struct.unpack("<I", data[1:5])[0]
                self.stats["notify_stops"] += 1
                self.ll_relaxed = True
                if self.ll is not None:
                    # firmware commanderNotifySetpointsStop: the setpoint is back-dated so that
                    # the watchdog shuts down after remain_ms unless another source takes over
                    setback_us = max(0, COMMANDER_WDT_SHUTDOWN_US - remain_ms * 1000)
                    self.ll["time_us"] = now_us - setback_us
                return []
            self.stats["unknown"] += 1
            return []
        if channel != crtp.GEN_CH_SETPOINT:
            self.stats["unknown"] += 1
            return []
        kind = data[0]
        body = data[1:]
        if kind == crtp.SP_STOP:
            return self._set_ll("stop", (), now_us)
        if kind in (crtp.SP_VELOCITY_WORLD, crtp.SP_VELOCITY_WORLD_LEGACY):
            vx, vy, vz, yawrate = struct.unpack("<ffff", body[:16])
            if kind == crtp.SP_VELOCITY_WORLD_LEGACY:
                yawrate = -yawrate
            return self._set_ll("velocity_world", (vx, vy, vz, yawrate), now_us)
        if kind in (crtp.SP_HOVER, crtp.SP_HOVER_LEGACY):
            vx, vy, yawrate, z = struct.unpack("<ffff", body[:16])
            if kind == crtp.SP_HOVER_LEGACY:
                yawrate = -yawrate
            return self._set_ll("hover", (vx, vy, yawrate, z), now_us)
        if kind in (crtp.SP_ZDISTANCE, crtp.SP_ZDISTANCE_LEGACY):
            roll, pitch, yawrate, z = struct.unpack("<ffff", body[:16])
            if kind == crtp.SP_ZDISTANCE_LEGACY:
                yawrate = -yawrate
            return self._set_ll("zdistance", (roll, pitch, yawrate, z), now_us)
        if kind == crtp.SP_POSITION:
            x, y, z, yaw = struct.unpack("<ffff", body[:16])
            return self._set_ll("position", (x, y, z, yaw), now_us)
        if kind == crtp.SP_FULL_STATE:
            vals = struct.unpack("<hhhhhhhhhIhhh", body[:28])
            pos = tuple(v / 1000.0 for v in vals[0:3])
            vel = tuple(v / 1000.0 for v in vals[3:6])
            return self._set_ll("full_state", pos + vel, now_us)
        if kind == crtp.SP_MANUAL:
            roll, pitch, yawrate, thrust, _rate = struct.unpack("<fffHB", body[:15])
            return self._set_ll("rpyt", (roll, -pitch, yawrate, float(thrust)), now_us)
        self.stats["unknown"] += 1
        return []

    def _high_level(self, data, now_us):
        cmd = data[0]
        if cmd == crtp.HL_SET_GROUP_MASK:
            return []
        if cmd not in (crtp.HL_TAKEOFF, crtp.HL_LAND, crtp.HL_TAKEOFF_2, crtp.HL_LAND_2, crtp.HL_STOP,
                       crtp.HL_GO_TO, crtp.HL_GO_TO_2):
            self.stats["unknown"] += 1   # trajectories and spirals are not simulated
            return []
        if self._p("commander", "enHighLevel").value == 0:
            self.stats["hl_ignored"] += 1
            return []
        if self._ll_has_priority(now_us):
            # low-level setpoints keep priority until notify-stop or the watchdog (firmware commander)
            self.stats["hl_ignored"] += 1
            return []
        x, y, z, yaw = self.estimate_xyz_yaw()
        if cmd == crtp.HL_STOP:
            self.stats["hl_commands"] += 1
            self.hl = None
            self.ll = None
            self.vehicle.motors_off()
            return []
        if cmd in (crtp.HL_TAKEOFF, crtp.HL_LAND):
            _g, height, duration = struct.unpack("<Bff", data[1:10])
            yaw_to = yaw
        elif cmd in (crtp.HL_TAKEOFF_2, crtp.HL_LAND_2):
            _g, height, yaw_deg, use_current, duration = struct.unpack("<Bff?f", data[1:15])
            yaw_to = yaw if use_current else yaw_deg
        else:
            if cmd == crtp.HL_GO_TO:
                _g, relative, gx, gy, gz, gyaw, duration = struct.unpack("<BBfffff", data[1:23])
            else:
                _g, relative, _linear, gx, gy, gz, gyaw, duration = struct.unpack("<BBBfffff", data[1:24])
            if not is_finite((gx, gy, gz, gyaw, duration)) or duration < 0:
                self.stats["rejected_setpoints"] += 1
                return []
            if relative:
                gx, gy, gz, gyaw = x + gx, y + gy, z + gz, yaw + gyaw
            self.stats["hl_commands"] += 1
            self._start_plan("goto", (x, y, z, yaw), (gx, gy, gz, gyaw), duration, now_us)
            return []
        if not is_finite((height, duration, yaw_to)) or duration < 0:
            self.stats["rejected_setpoints"] += 1
            return []
        self.stats["hl_commands"] += 1
        kind = "takeoff" if cmd in (crtp.HL_TAKEOFF, crtp.HL_TAKEOFF_2) else "land"
        self._start_plan(kind, (x, y, z, yaw), (x, y, height, yaw_to), duration, now_us)
        return []

    def _ll_has_priority(self, now_us):
        ll = self.ll
        return (ll is not None and not self.ll_relaxed
                and now_us - ll["time_us"] <= COMMANDER_WDT_STABILIZE_US)

    def _start_plan(self, kind, start, goal, duration_s, now_us):
        self.ll = None
        self.ll_relaxed = False
        self.hl = {"kind": kind, "start": start, "goal": goal, "t0_us": now_us,
                   "duration_us": max(1, int(duration_s * 1e6)), "done": False}
        if self.armed and not self.locked and kind != "land":
            self.vehicle.command_height(max(goal[2], 0.0) if kind == "takeoff" else goal[2])

    # ================================================================ physics + control
    def estimate_xyz_yaw(self):
        """Estimated position (m, CF world frame) and yaw (deg, CCW) as the firmware logs them."""
        v = self.vehicle
        o = self.est_offset_m
        return (v.north_m + o[0], -v.east_m + o[1], v.height_m + o[2], -math.degrees(v.yaw_rad))

    def advance(self, now_us):
        """Integrate the vehicle up to now_us and return due log packets as [(client, datagram)]."""
        with self.lock:
            now_us = int(now_us)
            # the earliest due time changes only where blocks are skipped or logged (below)
            due = self.next_log_due_us()
            if due is not None and due <= now_us:
                self._skip_log_backlog(now_us)
                due = self.next_log_due_us()
            out = []
            # the last advance() ended with a control pass at this very time: unless a datagram was handled
            # since (the commander's state changes only there), the first step's pass would repeat it
            control = self._controlled != (self.time_us, self._handled)
            while self.time_us < now_us:
                dt_us = min(self._physics_dt_us, now_us - self.time_us)
                if due is not None and self.time_us < due < self.time_us + dt_us:
                    dt_us = due - self.time_us       # land on the log time: packets carry the state then
                if control:
                    self._control(self.time_us)
                control = True
                self.vehicle.step(dt_us * 1e-6)
                self.time_us += dt_us
                if due is not None and due <= self.time_us:     # else no block is due (none changes here)
                    out += self._due_logs(self.time_us)
                    due = self.next_log_due_us()
            self._control(now_us)
            self._controlled = (now_us, self._handled)
            if due is not None and due <= now_us:
                out += self._due_logs(now_us)
            return out

    def _skip_log_backlog(self, now_us):
        """A server that fell behind (host stall) skips old periods instead of bursting them."""
        for blocks in self.sessions.values():
            for b in blocks.values():
                if b.running and b.next_due_us <= now_us:
                    behind = (now_us - b.next_due_us) // b.period_us
                    if behind >= MAX_LOG_BACKLOG:
                        self.stats["log_skipped_periods"] += behind
                        b.next_due_us += behind * b.period_us

    def _control(self, now_us):
        v = self.vehicle
        if self.locked or not self.armed or self._stabilizer_stop.value:
            if v.motors_on:
                v.motors_off()
            return
        if self.hl is not None:
            self._follow_plan(now_us)
            return
        ll = self.ll
        if ll is None:
            return
        age_us = now_us - ll["time_us"]
        if age_us > COMMANDER_WDT_SHUTDOWN_US:
            if self._wdt_phase < 2:
                self._wdt_phase = 2
                self.stats["wdt_shutdown"] += 1
                v.motors_off()
            return
        if age_us > COMMANDER_WDT_STABILIZE_US:
            if self._wdt_phase < 1:
                self._wdt_phase = 1
                self.stats["wdt_stabilize"] += 1
                # level out: no more horizontal push, keep height as it is
                v.command_velocity(0.0, 0.0, 0.0)
                if v.v_mode == V_CLIMB:
                    v.command_climb(0.0)
            return
        kind = ll["kind"]
        vals = ll["values"]
        t = self.target
        if kind == "stop":
            v.motors_off()
        elif kind == "velocity_world":
            vx, vy, vz, yawrate = vals
            self._cmd_world_vel(vx, vy, yawrate)
            v.command_climb(vz)
            t.update(vx=vx, vy=vy, vz=vz)
        elif kind == "hover":
            bx, by, yawrate, z = vals
            psi = v.yaw_rad * -1.0          # CCW yaw of the CF frame
            vx = math.cos(psi) * bx - math.sin(psi) * by
            vy = math.sin(psi) * bx + math.cos(psi) * by
            self._cmd_world_vel(vx, vy, yawrate)
            v.command_height(z - self.est_offset_m[2])
            t.update(vx=vx, vy=vy, z=z)
        elif kind in ("position", "full_state"):
            x, y, z = vals[0], vals[1], vals[2]
            ff = vals[3:6] if kind == "full_state" else (0.0, 0.0, 0.0)
            self._track_position(x, y, z, ff)
        elif kind in ("rpyt", "zdistance"):
            roll_deg, pitch_deg, yawrate = vals[0], vals[1], vals[2]
            # attitude -> horizontal acceleration (small-angle multirotor), body to world by yaw
            a_fwd = GRAVITY_MPS2 * math.tan(math.radians(max(-30.0, min(30.0, pitch_deg))))
            a_left = -GRAVITY_MPS2 * math.tan(math.radians(max(-30.0, min(30.0, roll_deg))))
            psi = -v.yaw_rad
            ax = math.cos(psi) * a_fwd - math.sin(psi) * a_left
            ay = math.sin(psi) * a_fwd + math.cos(psi) * a_left
            if kind == "zdistance":
                v.command_accel(ax, -ay, -math.radians(yawrate))
                v.command_height(vals[3] - self.est_offset_m[2])
            elif vals[3] <= 0.0:
                v.motors_off()           # thrust 0: motors off (cflib's close_link sends this)
            else:
                v.command_accel(ax, -ay, -math.radians(yawrate))
                v.command_climb((vals[3] - HOVER_THRUST) / 24000.0)

    def _cmd_world_vel(self, vx, vy, yawrate_degps):
        # CF world (x north, y west) -> NED; CCW deg/s -> NED rad/s
        self.vehicle.command_velocity(vx, -vy, -math.radians(yawrate_degps))

    def _track_position(self, x, y, z, ff=(0.0, 0.0, 0.0)):
        ex, ey, ez, _yaw = self.estimate_xyz_yaw()
        kx = self._p("posCtlPid", "xKp").value
        ky = self._p("posCtlPid", "yKp").value
        vx = ff[0] + kx * (x - ex)
        vy = ff[1] + ky * (y - ey)
        self._cmd_world_vel(vx, vy, 0.0)
        self.vehicle.command_height(z - self.est_offset_m[2])
        self.target.update(x=x, y=y, z=z, vx=vx, vy=vy, vz=ff[2])

    def _follow_plan(self, now_us):
        hl = self.hl
        s = min(1.0, max(0.0, (now_us - hl["t0_us"]) / hl["duration_us"]))
        start, goal = hl["start"], hl["goal"]
        ref = [start[k] + s * (goal[k] - start[k]) for k in range(3)]
        dur_s = hl["duration_us"] * 1e-6
        ff = [(goal[k] - start[k]) / dur_s if s < 1.0 else 0.0 for k in range(3)]
        self._track_position(ref[0], ref[1], ref[2], ff)
        if s >= 1.0 and not hl["done"]:
            hl["done"] = True
            if hl["kind"] == "land" and goal[2] <= 0.05:
                self.vehicle.motors_off()
                self.hl = None

    # ================================================================ log emission
    def _due_logs(self, now_us):
        out = []
        if self.silent:
            return out
        self._range_cache = None
        for client, blocks in self.sessions.items():
            for block in blocks.values():
                if not block.running or block.next_due_us > now_us:
                    continue
                due = block.next_due_us
                block.next_due_us += block.period_us
                ts = (due // 1000) & 0xFFFFFF
                body = bytearray((block.block_id, ts & 0xFF, (ts >> 8) & 0xFF, (ts >> 16) & 0xFF))
                for source, fmt in block.ops:
                    body += crtp.pack_value(fmt, self._sources[source]())
                out.append((client, crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_DATA, body)))
        self.stats["log_packets"] += len(out)
        self.stats["tx_packets"] += len(out)
        return out

    def next_log_due_us(self):
        """Earliest time a running log block is due (None when nothing is logging)."""
        due = None
        for blocks in self.sessions.values():
            for b in blocks.values():
                if b.running and (due is None or b.next_due_us < due):
                    due = b.next_due_us
        return due

    def _ranges(self):
        if self._range_cache is None:
            vals = list(self.ranging(self.time_us)) if self.ranging is not None else []
            vals = (vals + [None] * N_RANGES)[:N_RANGES]
            self._range_cache = vals
        return self._range_cache

    def _range_state(self):
        bits = 0
        for i, d in enumerate(self._ranges()):
            if d is not None:
                bits |= 1 << i
        return bits

    def _make_sources(self):
        v = self.vehicle

        def est(k):
            return lambda: self.estimate_xyz_yaw()[k]

        def quat():
            yaw = math.radians(self.estimate_xyz_yaw()[3])
            return (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))

        def body_vel(k):
            def f():
                psi = -v.yaw_rad
                vx, vy = v.vel_north_mps, -v.vel_east_mps
                return (math.cos(psi) * vx + math.sin(psi) * vy, -math.sin(psi) * vx + math.cos(psi) * vy)[k]
            return f

        def att(k):
            def f():
                psi = -v.yaw_rad
                ax, ay = v.acc_north_mps2, -v.acc_east_mps2
                a_fwd = math.cos(psi) * ax + math.sin(psi) * ay
                a_left = -math.sin(psi) * ax + math.cos(psi) * ay
                # accelerating forward needs nose down; stateEstimate.pitch is the firmware's
                # legacy pitch (positive nose up), accelerating left needs the left side down
                return (-math.degrees(math.atan2(a_left, GRAVITY_MPS2)),
                        -math.degrees(math.atan2(a_fwd, GRAVITY_MPS2)))[k]
            return f

        def flying():
            return 1 if (v.airborne and v.motors_on) else 0

        def pm_state():
            if v.battery_v < self._p("pm", "lowVoltage").value:
                return 3
            return 0

        def rng(i):
            def f():
                d = self._ranges()[i]
                return 0.0 if d is None else d
            return f

        s = {
            "x_m": est(0), "y_m": est(1), "z_m": est(2), "yaw_deg": est(3),
            "vx_mps": lambda: v.vel_north_mps, "vy_mps": lambda: -v.vel_east_mps, "vz_mps": lambda: v.climb_mps,
            "ax_g": lambda: v.acc_north_mps2 / GRAVITY_MPS2, "ay_g": lambda: -v.acc_east_mps2 / GRAVITY_MPS2,
            "az_g": lambda: 0.0,
            "roll_deg": att(0), "pitch_deg": att(1),
            "qw": lambda: quat()[0], "qx": lambda: quat()[1], "qy": lambda: quat()[2], "qz": lambda: quat()[3],
            "x_mm": lambda: 1000.0 * self.estimate_xyz_yaw()[0],
            "y_mm": lambda: 1000.0 * self.estimate_xyz_yaw()[1],
            "z_mm": lambda: 1000.0 * self.estimate_xyz_yaw()[2],
            "vx_mmps": lambda: 1000.0 * v.vel_north_mps, "vy_mmps": lambda: -1000.0 * v.vel_east_mps,
            "vz_mmps": lambda: 1000.0 * v.climb_mps,
            "yaw_rate_mradps": lambda: -1000.0 * v.yaw_rate_radps,
            "vx_body_mps": body_vel(0), "vy_body_mps": body_vel(1),
            "var_pos_m2": lambda: 1e-4, "var_vel_m2ps2": lambda: 1e-4,
            "is_flying": flying, "can_fly": lambda: 1 if (self.armed and not self.locked) else 0,
            "thrust": lambda: HOVER_THRUST if flying() else 0.0,
            "target_x_m": lambda: self.target["x"], "target_y_m": lambda: self.target["y"],
            "target_z_m": lambda: self.target["z"], "target_vx_mps": lambda: self.target["vx"],
            "target_vy_mps": lambda: self.target["vy"], "target_vz_mps": lambda: self.target["vz"],
            "vbat_v": lambda: v.battery_v, "vbat_mv": lambda: 1000.0 * v.battery_v,
            "pm_state": pm_state,
            "battery_level": lambda: max(0.0, min(100.0, (v.battery_v - 3.0) / (4.2 - 3.0) * 100.0)),
            "ranging_state": self._range_state,
            "supervisor_info": self.supervisor_bits,
            "rssi": lambda: self.cfg["rssi"], "zero": lambda: 0, "one": lambda: 1,
        }
        for i in range(N_RANGES):
            s["distance%d" % i] = rng(i)
        missing = [src for _g, _n, _t, src in LOG_VARIABLES if src not in s]
        if missing:
            raise ValueError("log variables without a simulated source: %s" % missing)
        return s
