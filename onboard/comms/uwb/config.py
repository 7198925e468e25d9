"""Settings of the UWB protocol nodes: ``DEFAULTS`` and ``SETTING_RANGES``, node-id ranges (pure, MicroPython-compatible).

Shared by both protocol nodes (``token_ring``, ``broadcast``), by ``node_base.NodeBase`` and by
``node.make_node``; it imports no node module. Times are integer microseconds (``_us``),
antenna delay in DW1000 ticks, ranges in metres.
"""
from . import frames
from onboard.core.settings import NON_NEGATIVE, ConfigError, checked, int_at_least, one_of

# Paper's DecaWave ranging error N(mu, sigma^2) (uwb paper III-A).
PAPER_RANGE_MEAN_M = 0.0085569
PAPER_RANGE_VAR_M2 = 0.061295

DEFAULTS = {
    "mode": "token_ring",          # "token_ring" (paper III-A) or "broadcast" (scalable)
    "twr": "ds",                   # token ring: "ds" (POLL/RESPONSE/FINAL/REPORT) or "ss" (POLL/RESPONSE)
    "antenna_delay_ticks": 16436,  # calibrated antenna delay applied to TX and RX timestamps
    "range_std_m": PAPER_RANGE_VAR_M2 ** 0.5,   # reported in RangeSample.range_std_m
    # --- token ring ---
    "reply_delay_us": 1000,        # RESPONSE/FINAL/REPORT sent this long after the RX timestamp
    "frame_margin_us": 600,        # added to reply delays for timeouts (air time + processing)
    "turnaround_us": 100,          # holder processing gap between exchanges
    "exchange_retries": 1,         # extra POLL attempts per neighbour per token hold
    "max_missed_holds": 3,         # consecutive failed holds before a neighbour is dropped
    "token_ack_timeout_us": 1500,  # passer waits this long to hear the new holder
    "token_retries": 2,            # extra TOKEN attempts before skipping a dead successor
    "silence_timeout_us": 15000,   # no frame for this long: the token is lost
    "regen_stagger_us": 1000,      # ... node i regenerates it after silence + i * stagger
    "join_slot_us": 400,           # DISCOVER window: one JOIN slot per invited id
    "join_window_slots": 8,        # ids invited per DISCOVER
    "lone_period_us": 5000,        # a node alone re-announces itself this often
    # --- broadcast ---
    "slot_us": 1000,               # one BCAST per slot; a round is (active nodes + 1 join slot) slots
    "neighbour_timeout_us": 100000,  # a neighbour not heard for this long leaves the schedule
    "listen_us": 30000,            # power-on: listen this long + id * join_stagger_us before sending
    "join_stagger_us": 25000,      # spreads simultaneous power-ons over distinct rounds
    "max_broadcast_entries": 64,   # neighbours reported per BCAST (frame length bound)
}

RING_MAX_IDS = 32   # token ring membership is a 32-bit bitmap: node ids 0..31


_POSITIVE_INT = int_at_least(1)
SETTING_RANGES = {
    "mode": one_of("token_ring", "broadcast"), "twr": one_of("ds", "ss"),
    "antenna_delay_ticks": int_at_least(0), "range_std_m": NON_NEGATIVE,
    "reply_delay_us": _POSITIVE_INT, "frame_margin_us": _POSITIVE_INT, "turnaround_us": int_at_least(0),
    "exchange_retries": int_at_least(0), "max_missed_holds": _POSITIVE_INT,
    "token_ack_timeout_us": _POSITIVE_INT, "token_retries": int_at_least(0), "silence_timeout_us": _POSITIVE_INT,
    "regen_stagger_us": _POSITIVE_INT, "join_slot_us": _POSITIVE_INT,
    "join_window_slots": ("a divisor of %d" % RING_MAX_IDS,
                          lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0 and RING_MAX_IDS % v == 0),
    "lone_period_us": _POSITIVE_INT, "slot_us": _POSITIVE_INT, "neighbour_timeout_us": _POSITIVE_INT,
    "listen_us": _POSITIVE_INT, "join_stagger_us": int_at_least(0), "max_broadcast_entries": _POSITIVE_INT,
}


def merged_config(overrides=None):
    """DEFAULTS merged with ``overrides`` and checked (:func:`onboard.core.settings.checked`)."""
    return checked(DEFAULTS, SETTING_RANGES, overrides, "UWB")


def check_node_id(node_id, mode):
    hi = RING_MAX_IDS - 1 if mode == "token_ring" else frames.MAX_NODE_ID
    if not 0 <= node_id <= hi:
        raise ConfigError("UWB node id %r outside 0..%d for mode %s" % (node_id, hi, mode))
