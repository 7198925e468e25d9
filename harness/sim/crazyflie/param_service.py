"""The parameter service of one simulated Crazyflie: port 2 (crazyflie-firmware param_logic.c).

Channel 0 serves the param TOC (v1 and v2 ids) of ``firmware_toc.PARAMS``; channel 1 reads a value;
channel 2 writes one and echoes the packet (id + the value written; a refused write: id + the value the
parameter still holds); channel 3 (misc) sets by name
(what cflib's ``set_value_raw`` sends, answered and then announced with VALUE_UPDATED), gets the
extended type, the default value (v1, v2), and stores, clears or reports the persistent value of
parameters flagged persistent. Read-only parameters, writes of the wrong size and NaN or infinite
floats are refused (counted in ``rejected_param_writes``) and leave the value as it was. As in the
firmware, a channel-2 write to a read-only parameter gets no reply at all, and a set-by-name of one
is answered with EACCES.

Modules that act on a parameter register a callback with :meth:`ParamService.watch`, called after
every accepted write (the firmware's PARAM_ADD_WITH_CALLBACK).
"""
import struct

from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.firmware_toc import PARAMS
from onboard.core.linalg import is_finite

COUNTERS = ("param_writes", "rejected_param_writes")


class Param:
    """One parameter: its TOC entry, current ``value``, firmware ``default`` and ``stored`` persistent
    value (None: nothing stored)."""

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


class ParamService:
    """Param TOC, values and the port-2 protocol."""

    def __init__(self, stats):
        self.stats = stats
        self.params = [Param(i, g, n, t, f, d, p) for i, (g, n, t, f, d, p) in enumerate(PARAMS)]
        self._by_name = {(p.group, p.name): p for p in self.params}
        self._toc = [p.toc_bytes() for p in self.params]
        self.toc_crc = crtp.toc_crc(crtp.PORT_PARAM, self._toc)
        self._watchers = {}              # (group, name) -> callback(param)

    def get(self, group, name):
        """The :class:`Param` ``group.name`` (KeyError when the TOC has none)."""
        return self._by_name[(group, name)]

    def watch(self, group, name, callback):
        """Call ``callback(param)`` after every accepted write of ``group.name``."""
        self.get(group, name)
        self._watchers[(group, name)] = callback

    # ---------------------------------------------------------------- port 2
    def handle(self, channel, data, _now_us, _client):
        if channel == crtp.PARAM_CH_TOC:
            return crtp.toc_reply(crtp.PORT_PARAM, data, self._toc, self.toc_crc, b"", self.stats)
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
            if p.read_only:
                # param_logic.c paramWriteProcess: "if (params[index].type & PARAM_RONLY) return;",
                # nothing is sent back (cflib's own set_value refuses such a write before sending it)
                self.stats["rejected_param_writes"] += 1
                return []
            if self._write(p, data[2:]) == 0:
                # param_logic.c paramWriteProcess sends the packet back as it came: id + the value written
                # (a watcher may have changed the value since: kalman.resetEstimation reads 0 again)
                return [crtp.packet(crtp.PORT_PARAM, channel, data)]
            # a write the simulator refuses (wrong size, NaN): id + the value the parameter still holds
            return [crtp.packet(crtp.PORT_PARAM, channel, data[:2] + crtp.pack_value(p.fmt, p.value))]
        return self._misc(data)

    def _write(self, p, raw):
        """Store a raw little-endian value; returns 0, or the errno of a refused write: EACCES for a
        read-only parameter (param_logic.c paramWriteByNameProcess), EINVAL for a wrong size or a
        NaN/infinity (the simulator's own checks)."""
        if p.read_only:
            self.stats["rejected_param_writes"] += 1
            return crtp.EACCES
        if len(raw) != crtp.type_size(p.fmt):
            self.stats["rejected_param_writes"] += 1
            return crtp.EINVAL
        value = struct.unpack(p.fmt, raw)[0]
        if isinstance(value, float) and not is_finite((value,)):
            self.stats["rejected_param_writes"] += 1
            return crtp.EINVAL
        p.value = value
        self.stats["param_writes"] += 1
        callback = self._watchers.get((p.group, p.name))
        if callback is not None:
            callback(p)
        return 0

    def _misc(self, data):
        cmd = data[0]
        ch = crtp.PARAM_CH_MISC
        if cmd == crtp.MISC_SETBYNAME:
            rest = data[1:]
            z1 = rest.index(b"\0")
            z2 = rest.index(b"\0", z1 + 1)
            group, name = rest[:z1].decode(), rest[z1 + 1:z2].decode()
            type_id = rest[z2 + 1]
            raw = rest[z2 + 2:]
            p = self._by_name.get((group, name))
            head = bytes((cmd,)) + rest[:z2 + 1]
            if p is None:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((crtp.ENOENT,)))]
            # paramWriteByNameProcess: ENOENT, then EINVAL for another type, then EACCES for read-only
            err = crtp.EINVAL if type_id != p.type_id else self._write(p, raw)
            if err:
                return [crtp.packet(crtp.PORT_PARAM, ch, head + bytes((err,)))]
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
