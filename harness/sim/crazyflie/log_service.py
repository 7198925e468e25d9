"""The log service of one simulated Crazyflie: port 5 (crazyflie-firmware log.c).

Channel 0 serves the log TOC (v1 and v2 ids) of ``firmware_toc.LOG_VARIABLES``; channel 1 creates,
appends to, deletes, starts, stops and resets log blocks (v1 8-bit and v2 16-bit variable ids,
fetch-as type conversion, at most ``crtp.LOG_MAX_BLOCKS`` blocks, ``crtp.LOG_MAX_OPS`` variables and
``crtp.LOG_MAX_PAYLOAD`` bytes per block, answered with the firmware's errno); channel 2 carries the
periodic packets: block id, 24-bit timestamp in ms, then the variables. Blocks belong to the client
that made them (one session per client address: another client's create, append, start, stop and delete
find none of them); a reset deletes the blocks of every client, as the firmware's one block table does.

Each log variable reads a *source*: a function of no arguments, keyed by the name in LOG_VARIABLES,
that the services providing the quantity hand in (``log_sources()`` of the vehicle, commander,
supervisor and link). A period byte counts 10 ms; a started block first sends on the next multiple of
its period (the firmware's timers tick on a grid), then every period. Period 0 is the firmware's
single-shot run (``logStartBlock``: ``workerSchedule(logRunBlock)``): the block is sent once, at the next
advance, and a periodic block keeps its period.
"""
import struct

from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.firmware_toc import LOG_VARIABLES

COUNTERS = ("log_packets", "log_skipped_periods", "log_lost_packets")
LOG_PERIOD_UNIT_US = 10000              # the period byte of LOG_START counts 10 ms
MAX_LOG_BACKLOG = 5                     # periods a block may fall behind (host stall) before they are skipped


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
    __slots__ = ("block_id", "ops", "period_us", "running", "next_due_us", "size", "single_shot_us")

    def __init__(self, block_id):
        self.block_id = block_id
        self.ops = []          # (source key, pack format)
        self.period_us = 0
        self.running = False
        self.next_due_us = 0
        self.size = 0
        self.single_shot_us = None   # LOG_START with period 0: one packet due at this time

    def due_us(self):
        """When the block next sends (periodic or single shot); None when it will not."""
        due = self.next_due_us if self.running else None
        if self.single_shot_us is not None and (due is None or self.single_shot_us < due):
            due = self.single_shot_us
        return due


def _reply(cmd, block_id, err):
    return crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, bytes((cmd, block_id, err)))


class LogService:
    """Log TOC, per-client log blocks and the packets they send; ``sources``: {source key: function}."""

    def __init__(self, stats, sources):
        missing = [src for _g, _n, _t, src in LOG_VARIABLES if src not in sources]
        if missing:
            raise ValueError("log variables without a simulated source: %s" % missing)
        self.stats = stats
        self.sources = sources
        self.variables = [_LogVar(i, g, n, t, s) for i, (g, n, t, s) in enumerate(LOG_VARIABLES)]
        self._toc = [v.toc_bytes() for v in self.variables]
        self.toc_crc = crtp.toc_crc(crtp.PORT_LOG, self._toc)
        self.sessions = {}               # client address -> {block id: _LogBlock}
        self._session_packets = {}       # client address -> log packets sent to it while it had a session
        self._session_received = {}      # client address -> datagrams received from it while it had a session

    def open_session(self, client):
        self.sessions.setdefault(client, {})

    def close_session(self, client):
        self.sessions.pop(client, None)
        self._session_packets.pop(client, None)
        self._session_received.pop(client, None)

    def count_received(self, client):
        """A datagram came from ``client`` (any port): it has a session from its first datagram on."""
        self.sessions.setdefault(client, {})
        self._session_received[client] = self._session_received.get(client, 0) + 1

    def session_packets(self):
        """Log packets sent to the clients that have a session now (a reset drops the other clients'
        sessions, and the packets sent to them no longer count); ``stats["log_packets"]`` counts every packet
        ever sent."""
        return sum(self._session_packets.values())

    def session_received(self):
        """Datagrams received from the clients that have a session now (see :meth:`session_packets`)."""
        return sum(self._session_received.values())

    # ---------------------------------------------------------------- port 5
    def handle(self, channel, data, now_us, client):
        if channel == crtp.LOG_CH_TOC:
            return crtp.toc_reply(crtp.PORT_LOG, data, self._toc, self.toc_crc,
                                  bytes((crtp.LOG_MAX_BLOCKS, crtp.LOG_MAX_OPS)), self.stats)
        if channel != crtp.LOG_CH_SETTINGS:
            self.stats["unknown"] += 1
            return []
        cmd = data[0]
        if cmd == crtp.LOG_RESET:
            # logReset: the firmware has one block table, so every client's blocks go (cflib resets on every
            # connect: a client that reconnects from a new address leaves no blocks logging to the old one)
            sent = self._session_packets.get(client, 0)
            received = self._session_received.get(client, 0)
            self.sessions.clear()
            self._session_packets.clear()
            self._session_received.clear()
            self.sessions[client] = {}
            self._session_packets[client] = sent
            self._session_received[client] = received
            return [_reply(cmd, 0, 0)]
        blocks = self.sessions.setdefault(client, {})
        block_id = data[1]
        if cmd in (crtp.LOG_CREATE, crtp.LOG_CREATE_V2, crtp.LOG_APPEND, crtp.LOG_APPEND_V2):
            return [_reply(cmd, block_id, self._add_ops(cmd, block_id, data[2:], blocks))]
        block = blocks.get(block_id)
        if cmd == crtp.LOG_DELETE:
            if block is None:
                return [_reply(cmd, block_id, crtp.ENOENT)]
            del blocks[block_id]
            return [_reply(cmd, block_id, 0)]
        if cmd == crtp.LOG_START:
            if block is None:
                return [_reply(cmd, block_id, crtp.ENOENT)]
            period_units = data[2]
            if period_units == 0:                   # single-shot run: once, the timer left as it is
                block.single_shot_us = now_us
                return [_reply(cmd, block_id, 0)]
            block.period_us = period_units * LOG_PERIOD_UNIT_US
            block.next_due_us = (now_us // block.period_us + 1) * block.period_us
            block.running = True
            return [_reply(cmd, block_id, 0)]
        if cmd == crtp.LOG_STOP:
            if block is None:
                return [_reply(cmd, block_id, crtp.ENOENT)]
            block.running = False
            return [_reply(cmd, block_id, 0)]
        self.stats["unknown"] += 1
        return [_reply(cmd, block_id, crtp.ENOEXEC)]

    def _add_ops(self, cmd, block_id, payload, blocks):
        """Create or append to a block: 0, or the errno the firmware answers."""
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
        # the firmware reads (size - 2) // step whole ops and ignores a trailing partial one: cflib's v2
        # create packet for 10+ variables ends with the next variable's type byte, sent again in the append
        end = len(payload) - len(payload) % step
        while i < end:
            type_byte = payload[i]
            ident = struct.unpack("<H", payload[i + 1:i + 3])[0] if v2 else payload[i + 1]
            i += step
            if ident == (0xFFFF if v2 else 0xFF):      # a raw memory address follows
                return crtp.ENOENT                      # no raw memory in the simulation
            if ident >= len(self.variables):
                return crtp.ENOENT
            fetch_id = type_byte & 0x0F
            if fetch_id not in crtp.LOG_TYPES:
                return crtp.ENOENT
            ops.append((self.variables[ident].source, crtp.LOG_TYPES[fetch_id][1]))
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

    # ---------------------------------------------------------------- periodic packets
    def next_due_us(self):
        """Earliest time (us) a running block is due; None when nothing is logging."""
        due = None
        for blocks in self.sessions.values():
            for b in blocks.values():
                b_due = b.due_us()
                if b_due is not None and (due is None or b_due < due):
                    due = b_due
        return due

    def skip_backlog(self, now_us):
        """A block more than MAX_LOG_BACKLOG periods behind ``now_us`` (the host stalled) skips the
        missed periods instead of sending them in a burst; counted in ``log_skipped_periods``."""
        for blocks in self.sessions.values():
            for b in blocks.values():
                if b.running and b.next_due_us <= now_us:
                    behind = (now_us - b.next_due_us) // b.period_us
                    if behind >= MAX_LOG_BACKLOG:
                        self.stats["log_skipped_periods"] += behind
                        b.next_due_us += behind * b.period_us

    def due_packets(self, now_us):
        """The packets of every block due at or before ``now_us``, as [(client, datagram)], stamped with
        the time each was due (ms, 24 bits); each block then moves on by one period."""
        out = []
        sources = self.sources
        counts = self._session_packets
        for client, blocks in self.sessions.items():
            n_before = len(out)
            for block in blocks.values():
                for due in _take_dues(block, now_us):
                    ts = (due // 1000) & 0xFFFFFF
                    body = bytearray((block.block_id, ts & 0xFF, (ts >> 8) & 0xFF, (ts >> 16) & 0xFF))
                    for source, fmt in block.ops:
                        body += crtp.pack_value(fmt, sources[source]())
                    out.append((client, crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_DATA, body)))
            if len(out) > n_before:
                counts[client] = counts.get(client, 0) + len(out) - n_before
        self.stats["log_packets"] += len(out)
        return out

    def drop_due(self, now_us):
        """The blocks due at or before ``now_us`` move on as :meth:`due_packets` moves them, and their packets
        are lost (a cut radio link: the firmware's log timers run on); counted in ``log_lost_packets``."""
        lost = 0
        for blocks in self.sessions.values():
            for block in blocks.values():
                lost += len(_take_dues(block, now_us))
        self.stats["log_lost_packets"] += lost


def _take_dues(block, now_us):
    """The times (us) ``block`` is due at or before ``now_us``: its single shot, then its period's next
    instant; each taken one is cleared or moved on by one period."""
    dues = []
    if block.single_shot_us is not None and block.single_shot_us <= now_us:
        dues.append(block.single_shot_us)
        block.single_shot_us = None
    if block.running and block.next_due_us <= now_us:
        dues.append(block.next_due_us)
        block.next_due_us += block.period_us
    return dues
