"""``make_node``: the UWB protocol node a config selects (pure, MicroPython-compatible).

A node is a state machine: ``start(now_us)`` and ``on_event(event, now_us)`` each return
``(actions, deadline_us)`` where ``deadline_us`` (node-local integer microseconds, or None)
is when the node wants a ``("timer",)`` event next, and ``actions`` is a list of

    ("tx", frame_bytes, dx_ticks)   transmit now (dx_ticks None) or as a DW1000 delayed
                                    transmission at raw radio time dx_ticks (9 LSBs ignored)
    ("range", RangeSample)          a new range to a peer (onboard.core.samples.RangeSample)

Events (from the radio driver):

    ("rx", frame_bytes, raw_rx_ticks)   a frame was received; raw 40-bit RX timestamp
    ("tx_done", raw_tx_ticks)           our last transmission left; raw 40-bit TX timestamp
    ("tx_error", reason)                our last transmission failed (e.g. "late")
    ("timer",)                          the deadline passed

``now_us`` is the node's own clock; nothing here reads a clock.

The settings live in ``config`` (``DEFAULTS``, ``merged_config``), the shared base class in
``node_base`` (``NodeBase``); both are importable from here too. This module imports the
protocol nodes (when ``make_node`` runs); they import ``config`` and ``node_base``, never this
module, so there is no import cycle.
"""
# Re-exported: ``onboard.comms.uwb.node.DEFAULTS`` etc. stay valid names.
from .config import (DEFAULTS, PAPER_RANGE_MEAN_M, PAPER_RANGE_VAR_M2,  # noqa: F401
                     RING_MAX_IDS, SETTING_RANGES, check_node_id, merged_config)
from .node_base import NodeBase  # noqa: F401


def make_node(node_id, config=None):
    """Build the protocol node selected by ``config['mode']``."""
    cfg = merged_config(config)
    if cfg["mode"] == "token_ring":
        from .token_ring import TokenRingNode
        return TokenRingNode(node_id, cfg)
    from .broadcast import BroadcastNode
    return BroadcastNode(node_id, cfg)
