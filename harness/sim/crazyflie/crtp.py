"""CRTP wire constants and packing shared by the simulated Crazyflie (and usable by raw clients).

One UDP datagram is one CRTP packet: header byte ``(port << 4) | 0x0C | channel``
(bits 2-3 are the link bits cflib sets; any value is accepted on input), then up to
30 data bytes, no checksum (cflib.crtp.udpdriver). Numbers below are the ones the
crazyflie-firmware and cflib 0.1.34 use.
"""
import struct
import zlib

PROTOCOL_VERSION = 10         # what the platform port answers (crazyflie-firmware CRTP_PROTOCOL_VERSION)
MAX_DATA = 30

PORT_CONSOLE = 0x00
PORT_PARAM = 0x02
PORT_COMMANDER = 0x03
PORT_MEM = 0x04
PORT_LOG = 0x05
PORT_LOCALIZATION = 0x06
PORT_COMMANDER_GENERIC = 0x07
PORT_SETPOINT_HL = 0x08
PORT_SUPERVISOR = 0x09
PORT_PLATFORM = 0x0D
PORT_LINKCTRL = 0x0F

# TOC channel commands (log and param share them)
TOC_CMD_ELEMENT = 0
TOC_CMD_INFO = 1
TOC_CMD_ITEM_V2 = 2
TOC_CMD_INFO_V2 = 3

# log settings channel
LOG_CH_TOC = 0
LOG_CH_SETTINGS = 1
LOG_CH_DATA = 2
LOG_CREATE = 0
LOG_APPEND = 1
LOG_DELETE = 2
LOG_START = 3
LOG_STOP = 4
LOG_RESET = 5
LOG_CREATE_V2 = 6
LOG_APPEND_V2 = 7
LOG_MAX_BLOCKS = 16
LOG_MAX_OPS = 128
LOG_MAX_PAYLOAD = 26          # 30 - block id - 3-byte timestamp

# param channels
PARAM_CH_TOC = 0
PARAM_CH_READ = 1
PARAM_CH_WRITE = 2
PARAM_CH_MISC = 3
MISC_SETBYNAME = 0
MISC_VALUE_UPDATED = 1
MISC_GET_EXTENDED_TYPE = 2
MISC_PERSISTENT_STORE = 3
MISC_PERSISTENT_GET_STATE = 4
MISC_PERSISTENT_CLEAR = 5
MISC_GET_DEFAULT_VALUE = 6
MISC_GET_EXTENDED_TYPE_V2 = 7
MISC_GET_DEFAULT_VALUE_V2 = 8
PARAM_EXTENDED_PERSISTENT = 1

# generic commander (port 7)
GEN_CH_SETPOINT = 0
GEN_CH_META = 1
SP_STOP = 0
SP_VELOCITY_WORLD_LEGACY = 1
SP_ZDISTANCE_LEGACY = 2
SP_HOVER_LEGACY = 5
SP_FULL_STATE = 6
SP_POSITION = 7
SP_VELOCITY_WORLD = 8
SP_ZDISTANCE = 9
SP_HOVER = 10
SP_MANUAL = 11
META_NOTIFY_SETPOINT_STOP = 0

# high-level commander (port 8)
HL_SET_GROUP_MASK = 0
HL_TAKEOFF = 1
HL_LAND = 2
HL_STOP = 3
HL_GO_TO = 4
HL_START_TRAJECTORY = 5
HL_DEFINE_TRAJECTORY = 6
HL_TAKEOFF_2 = 7
HL_LAND_2 = 8
HL_SPIRAL = 11
HL_GO_TO_2 = 12
HL_START_TRAJECTORY_2 = 13

# platform (port 13)
PLATFORM_CH_COMMAND = 0
PLATFORM_CH_VERSION = 1
PLATFORM_CH_APP = 2
PLATFORM_SET_CONT_WAVE = 0
PLATFORM_REQUEST_ARMING = 1
PLATFORM_REQUEST_CRASH_RECOVERY = 2
PLATFORM_USER_NOTIFICATION = 3
VERSION_GET_PROTOCOL = 0
VERSION_GET_FIRMWARE = 1

# supervisor (port 9)
SUP_CH_INFO = 0
SUP_CH_COMMAND = 1
SUP_GET_STATE_BITFIELD = 0x0C
SUP_ARM_SYSTEM = 0x01
SUP_RECOVER_SYSTEM = 0x02
SUP_EMERGENCY_STOP = 0x03
SUP_EMERGENCY_STOP_WATCHDOG = 0x04

# localization (port 6)
LOC_CH_POSITION = 0
LOC_CH_GENERIC = 1
LOC_EMERGENCY_STOP = 3
LOC_EMERGENCY_STOP_WATCHDOG = 4

# link control (port 15)
LINK_CH_ECHO = 0
LINK_CH_SOURCE = 1
LINK_CH_SINK = 2
LINK_CH_NULL = 3
LINK_SOURCE_MAGIC = b"Bitcraze Crazyflie"
# A null packet (port 15, channel 3, no data): the scan probe, and what a Crazyflie answers it with.
NULL_PACKET = b"\xff"
# Older cflib UDP drivers opened and closed a "connection" with these datagrams.
LEGACY_UDP_CONNECT = b"\xff\x01\x01\x01"
LEGACY_UDP_DISCONNECT = b"\xff\x01\x02\x02"

# mem (port 4)
MEM_CH_INFO = 0
MEM_CH_READ = 1
MEM_CH_WRITE = 2
MEM_CMD_INFO_VER = 0
MEM_CMD_INFO_NBR = 1
MEM_CMD_INFO_DETAILS = 2

# errno values the firmware answers with (cflib maps exactly these)
ENOENT = 2
EIO = 5
E2BIG = 7
ENOEXEC = 8
ENOMEM = 12
EACCES = 13
EEXIST = 17
EINVAL = 22

# Log variable types (id -> struct format, size); LogTocElement.types in cflib.
LOG_TYPES = {
    0x01: ("uint8_t", "<B"), 0x02: ("uint16_t", "<H"), 0x03: ("uint32_t", "<L"),
    0x04: ("int8_t", "<b"), 0x05: ("int16_t", "<h"), 0x06: ("int32_t", "<i"),
    0x07: ("float", "<f"), 0x08: ("FP16", "<e"),
}
LOG_TYPE_ID = {name: tid for tid, (name, _f) in LOG_TYPES.items()}

# Param variable types (id -> struct format); ParamTocElement.types in cflib.
PARAM_TYPES = {
    0x08: ("uint8_t", "<B"), 0x09: ("uint16_t", "<H"), 0x0A: ("uint32_t", "<L"), 0x0B: ("uint64_t", "<Q"),
    0x00: ("int8_t", "<b"), 0x01: ("int16_t", "<h"), 0x02: ("int32_t", "<i"), 0x03: ("int64_t", "<q"),
    0x05: ("FP16", "<e"), 0x06: ("float", "<f"), 0x07: ("double", "<d"),
}
PARAM_TYPE_ID = {name: tid for tid, (name, _f) in PARAM_TYPES.items()}
PARAM_FLAG_EXTENDED = 0x10
PARAM_FLAG_RONLY = 0x40

_INT_RANGES = {
    "<B": (0, 0xFF), "<H": (0, 0xFFFF), "<L": (0, 0xFFFFFFFF), "<Q": (0, 0xFFFFFFFFFFFFFFFF),
    "<b": (-0x80, 0x7F), "<h": (-0x8000, 0x7FFF), "<i": (-0x80000000, 0x7FFFFFFF),
    "<q": (-0x8000000000000000, 0x7FFFFFFFFFFFFFFF),
}
FP16_MAX = 65504.0


def header(port, channel):
    """CRTP header byte as the firmware and cflib write it (link bits set)."""
    return ((port & 0x0F) << 4) | 0x0C | (channel & 0x03)


def packet(port, channel, data=b""):
    data = bytes(data)
    if len(data) > MAX_DATA:
        raise ValueError("CRTP data is %d bytes, at most %d fit" % (len(data), MAX_DATA))
    return bytes((header(port, channel),)) + data


def split(datagram):
    """(port, channel, data) of one datagram; raises ValueError for an empty one."""
    if not datagram:
        raise ValueError("empty datagram")
    h = datagram[0]
    return (h >> 4) & 0x0F, h & 0x03, datagram[1:]


def pack_value(fmt, value):
    """Pack ``value`` as ``fmt``, saturating integers and FP16 like a C cast would clip."""
    if fmt in ("<f", "<d"):
        return struct.pack(fmt, float(value))
    if fmt == "<e":
        v = float(value)
        if v == v:
            v = max(-FP16_MAX, min(FP16_MAX, v))
        return struct.pack(fmt, v)
    lo, hi = _INT_RANGES[fmt]
    v = value
    if isinstance(v, float):
        if v != v:
            v = 0
        elif v in (float("inf"), float("-inf")):
            v = hi if v > 0 else lo
        v = int(round(v))
    return struct.pack(fmt, max(lo, min(hi, int(v))))


def type_size(fmt):
    return struct.calcsize(fmt)


def toc_crc(port, entries):
    """CRC-32 identifying a table of contents (``entries``: the item bytes as :func:`toc_reply` sends
    them). Seeded with the port so that the log and param TOCs differ: cflib caches TOCs by CRC only."""
    crc = zlib.crc32(bytes((port,)))
    for e in entries:
        crc = zlib.crc32(e, crc)
    return crc & 0xFFFFFFFF


def toc_reply(port, data, entries, crc, extra_info, stats):
    """Answer one request on a TOC channel (channel 0 of the log and param ports; firmware log.c and
    param_logic.c): item count + CRC (+ ``extra_info``) for the info commands, one item for the element
    commands (v1: 8-bit ids, v2: 16-bit ids). An id past the end is answered with the command byte alone
    and counted in ``stats["malformed"]``, an unknown command in ``stats["unknown"]``."""
    cmd = data[0]
    n = len(entries)
    if cmd == TOC_CMD_INFO_V2:
        return [packet(port, 0, struct.pack("<BHI", cmd, n, crc) + extra_info)]
    if cmd == TOC_CMD_INFO:
        return [packet(port, 0, struct.pack("<BBI", cmd, min(n, 255), crc) + extra_info)]
    if cmd == TOC_CMD_ITEM_V2:
        ident = struct.unpack("<H", data[1:3])[0]
        if ident >= n:
            stats["malformed"] += 1
            return [packet(port, 0, bytes((cmd,)))]
        return [packet(port, 0, struct.pack("<BH", cmd, ident) + entries[ident])]
    if cmd == TOC_CMD_ELEMENT:
        ident = data[1]
        if ident >= n:
            stats["malformed"] += 1
            return [packet(port, 0, bytes((cmd,)))]
        return [packet(port, 0, bytes((cmd, ident)) + entries[ident])]
    stats["unknown"] += 1
    return []
