"""``NodeBase``: what both UWB protocol nodes share (pure, MicroPython-compatible).

Id, checked config, own velocity, counters, frame decoding and ``RangeSample`` construction.
``token_ring.TokenRingNode`` and ``broadcast.BroadcastNode`` subclass it; ``node.make_node``
builds them. It imports no protocol node, so the protocol modules never import ``node``.
"""
from . import frames
from .config import check_node_id, merged_config
from onboard.core.samples import RangeSample

_memo = frames._memo     # frames.decode's [(last bytes, its Frame)] (one list, its one item replaced whole)
_new = object.__new__
try:                     # CPython: the class's own __new__ (object's), a C slot call where compiled
    _CLASS_NEW = RangeSample.__new__ is object.__new__
except AttributeError:   # MicroPython: no __new__ attribute on classes
    _CLASS_NEW = False


def range_sample(time_us, peer_id, range_m, peer_vel_mps, range_std_m):
    """The object ``RangeSample(time_us, peer_id, range_m, peer_vel_mps, range_std_m)`` gives, for arguments that
    already hold the field types (``peer_vel_mps`` a tuple of float m/s, ``range_std_m`` a float m): built without
    the constructor's per-field conversions (one sample per received BCAST in broadcast mode, the hot path).
    tests/unit/test_uwb_channel_speedup.py checks it against the constructor field by field."""
    if _CLASS_NEW:
        s = RangeSample.__new__(RangeSample)
    else:
        s = _new(RangeSample)
    s.time_us = int(time_us)
    s.peer_id = int(peer_id)
    s.range_m = float(range_m)
    s.peer_vel_mps = peer_vel_mps
    s.range_std_m = range_std_m
    return s


class NodeBase:
    """What both protocol nodes share: id, config, own velocity, counters, frame decoding."""

    def __init__(self, node_id, config):
        cfg = merged_config(config)
        check_node_id(node_id, cfg["mode"])
        self.id = node_id
        self.cfg = cfg
        self.ant = int(cfg["antenna_delay_ticks"])
        self.vel_mps = (0.0, 0.0)
        self._range_std_m = float(cfg["range_std_m"])
        # the counters by name (read them through ``stats``); the two counted on every frame heard and every
        # range sample are plain integers, written into the table when it is read
        self._stats = {"tx": 0, "rx": 0, "ranges": 0, "decode_errors": 0, "bad_velocity": 0,
                       "tx_errors": 0, "bad_timestamps": 0, "ignored": 0}
        self._rx = 0
        self._ranges = 0
        self.decode_error_kinds = {}

    @property
    def stats(self):
        """The counters by name (a dict, the node's own: its "rx" and "ranges" brought up to date on each read)."""
        s = self._stats
        s["rx"] = self._rx
        s["ranges"] = self._ranges
        return s

    def on_event(self, event, now_us):
        """``(actions, deadline_us)`` for one radio/timer event at node-local ``now_us`` (us); each protocol
        node defines it (see node.py for the events and actions)."""
        raise NotImplementedError

    def on_rx(self, data, raw_rx_ticks, now_us):
        """``on_event(("rx", data, raw_rx_ticks), now_us)`` without the event tuple (the radio's hot path)."""
        raise NotImplementedError

    def set_velocity(self, vx_mps, vy_mps):
        """Own velocity (m/s, own frame) carried in every frame. Non-finite input is counted and ignored."""
        try:
            frames._vel_mmps(vx_mps)
            frames._vel_mmps(vy_mps)
        except (frames.FrameError, TypeError, ValueError):
            self._stats["bad_velocity"] += 1
            return False
        self.vel_mps = (float(vx_mps), float(vy_mps))
        return True

    def _decode(self, data):
        """Decoded frame or None (counted by kind) for malformed bytes."""
        m = _memo[0]
        if data is m[0]:                # frames.decode's own shortcut (one frame heard by many nodes)
            f = m[1]
        else:
            try:
                f = frames.decode(data)
            except frames.FrameError as exc:
                self._stats["decode_errors"] += 1
                self.decode_error_kinds[exc.kind] = self.decode_error_kinds.get(exc.kind, 0) + 1
                return None
        self._rx += 1
        return f

    def _sample(self, now_us, peer_id, range_m, frame):
        self._ranges += 1
        # frame.vel_mps of a decoded frame is a tuple of floats: RangeSample(now_us, peer_id, range_m,
        # frame.vel_mps, cfg["range_std_m"]), the same fields
        return ("range", range_sample(now_us, peer_id, range_m, frame.vel_mps, self._range_std_m))

    def report(self):
        out = dict(self.stats)
        out["decode_error_kinds"] = dict(self.decode_error_kinds)
        return out
