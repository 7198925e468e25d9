"""``NodeBase``: what both UWB protocol nodes share (pure, MicroPython-compatible).

Id, checked config, own velocity, counters, frame decoding and ``RangeSample`` construction.
``token_ring.TokenRingNode`` and ``broadcast.BroadcastNode`` subclass it; ``node.make_node``
builds them. It imports no protocol node, so the protocol modules never import ``node``.
"""
from . import frames
from .config import check_node_id, merged_config
from onboard.core.samples import RangeSample

_memo = frames._memo     # frames.decode's [last bytes, its Frame] (one list, updated in place)


class NodeBase:
    """What both protocol nodes share: id, config, own velocity, counters, frame decoding."""

    def __init__(self, node_id, config):
        cfg = merged_config(config)
        check_node_id(node_id, cfg["mode"])
        self.id = node_id
        self.cfg = cfg
        self.ant = int(cfg["antenna_delay_ticks"])
        self.vel_mps = (0.0, 0.0)
        self.stats = {"tx": 0, "rx": 0, "ranges": 0, "decode_errors": 0, "bad_velocity": 0,
                      "tx_errors": 0, "bad_timestamps": 0, "ignored": 0}
        self.decode_error_kinds = {}

    def on_event(self, event, now_us):
        """``(actions, deadline_us)`` for one radio/timer event at node-local ``now_us`` (us); each protocol
        node defines it (see node.py for the events and actions)."""
        raise NotImplementedError

    def set_velocity(self, vx_mps, vy_mps):
        """Own velocity (m/s, own frame) carried in every frame. Non-finite input is counted and ignored."""
        try:
            frames._vel_mmps(vx_mps)
            frames._vel_mmps(vy_mps)
        except (frames.FrameError, TypeError, ValueError):
            self.stats["bad_velocity"] += 1
            return False
        self.vel_mps = (float(vx_mps), float(vy_mps))
        return True

    def _decode(self, data):
        """Decoded frame or None (counted by kind) for malformed bytes."""
        if data is _memo[0]:            # frames.decode's own shortcut (one frame heard by many nodes)
            f = _memo[1]
        else:
            try:
                f = frames.decode(data)
            except frames.FrameError as exc:
                self.stats["decode_errors"] += 1
                self.decode_error_kinds[exc.kind] = self.decode_error_kinds.get(exc.kind, 0) + 1
                return None
        self.stats["rx"] += 1
        return f

    def _sample(self, now_us, peer_id, range_m, frame):
        self.stats["ranges"] += 1
        return ("range", RangeSample(now_us, peer_id, range_m, frame.vel_mps, self.cfg["range_std_m"]))

    def report(self):
        out = dict(self.stats)
        out["decode_error_kinds"] = dict(self.decode_error_kinds)
        return out
