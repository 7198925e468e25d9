"""DW1000 40-bit timestamps and the two-way-ranging formulas (pure, MicroPython-compatible).

The DW1000 system clock counts at 128 * 499.2 MHz = 63.8976 GHz, so one tick is
~15.65 ps (~4.69 mm of light travel); its timestamps are 40-bit and wrap every
2**40 ticks ~ 17.21 s. Every difference of two timestamps goes through
:func:`diff_ticks`, which takes it modulo 2**40, so an interval that spans a wrap
is still right as long as it is shorter than one wrap period.

Antenna delay: the radio reports *raw* timestamps (the DW1000's TX/RX antenna-delay
registers left at 0); the protocol applies its calibrated antenna delay itself:
``tx_ts = raw_tx + antenna_delay_ticks`` and ``rx_ts = raw_rx - antenna_delay_ticks``.
The same calibrated value is used to predict the timestamp of a delayed
transmission (:func:`delayed_tx_timestamp`), which is what a frame embeds.

Two-way ranging (uwb paper III-A uses "two way ranging [16]"):
- DS-TWR (asymmetric form, robust to clock drift and unequal reply times):
  ``tof = (Tround1 * Tround2 - Treply1 * Treply2) / (Tround1 + Tround2 + Treply1 + Treply2)``
  with Tround1/Treply2 measured by the initiator and Treply1/Tround2 by the responder.
  Clock drift e_a, e_b leaves an error of order tof * (e_a + e_b) / 2 (sub-mm).
- SS-TWR: ``tof = (Tround1 - Treply1) / 2``; with clock drifts the error is
  ~ Treply1 * (e_a - e_b) / 2, e.g. 1 ms reply and 40 ppm relative drift -> 20 ns -> 6 m.
"""

TICK_HZ = 63897600000          # 128 * 499.2 MHz
TICKS_PER_US = 63897.6         # ticks per microsecond
TICK_S = 1.0 / TICK_HZ         # ~15.65e-12 s
WRAP_TICKS = 1 << 40           # 40-bit counter
MASK_TICKS = WRAP_TICKS - 1
HALF_WRAP_TICKS = 1 << 39
# The DW1000 ignores the 9 least significant bits of a delayed-TX time (8.01 ns steps).
DELAYED_TX_MASK = MASK_TICKS ^ 0x1FF
SPEED_OF_LIGHT_MPS = 299702547.0   # in air
METERS_PER_TICK = SPEED_OF_LIGHT_MPS / TICK_HZ   # ~4.69 mm


class TimestampError(ValueError):
    """A timestamp interval is negative or longer than half a wrap, i.e. the inputs do not belong together."""


def wrap(ticks):
    """Reduce an integer tick count to the 40-bit counter range [0, 2**40)."""
    return ticks & MASK_TICKS


def diff_ticks(later, earlier):
    """``later - earlier`` in ticks modulo 2**40 (both 40-bit timestamps), in [0, 2**40)."""
    return (later - earlier) & MASK_TICKS


def interval_ticks(later, earlier):
    """Positive interval ``later - earlier`` across at most one wrap; raises TimestampError
    when the wrapped difference is zero or more than half a wrap (timestamps out of order)."""
    d = (later - earlier) & MASK_TICKS
    if d == 0 or d >= HALF_WRAP_TICKS:
        raise TimestampError("timestamps out of order: %d after %d" % (later, earlier))
    return d


def us_to_ticks(us):
    """Microseconds -> integer ticks (rounded)."""
    return int(us * TICKS_PER_US + 0.5)


def ticks_to_s(ticks):
    return ticks * TICK_S


def apply_tx_antenna_delay(raw_tx_ticks, antenna_delay_ticks):
    """Raw TX timestamp -> antenna TX timestamp (40-bit)."""
    return (raw_tx_ticks + antenna_delay_ticks) & MASK_TICKS


def apply_rx_antenna_delay(raw_rx_ticks, antenna_delay_ticks):
    """Raw RX timestamp -> antenna RX timestamp (40-bit)."""
    return (raw_rx_ticks - antenna_delay_ticks) & MASK_TICKS


def delayed_tx_time(after_ticks, delay_ticks):
    """Delayed-TX time to program: ``after + delay`` with the 9 LSBs cleared as the DW1000 does."""
    return (after_ticks + delay_ticks) & DELAYED_TX_MASK


def delayed_tx_timestamp(dx_ticks, antenna_delay_ticks):
    """The TX timestamp a delayed transmission at ``dx_ticks`` will have (embedded in FINAL/RESPONSE)."""
    return ((dx_ticks & DELAYED_TX_MASK) + antenna_delay_ticks) & MASK_TICKS


def ds_twr_tof_ticks(round1, reply1, round2, reply2):
    """Asymmetric DS-TWR time of flight (ticks, float) from four positive intervals (ticks).

    round1 = initiator RX(response) - TX(poll); reply1 = responder TX(response) - RX(poll);
    round2 = responder RX(final) - TX(response); reply2 = initiator TX(final) - RX(response).
    """
    num = round1 * round2 - reply1 * reply2      # exact integer arithmetic
    den = round1 + round2 + reply1 + reply2
    return float(num) / float(den)


def ss_twr_tof_ticks(round1, reply1):
    """Single-sided TWR time of flight (ticks): (round1 - reply1) / 2 (no drift correction)."""
    return (round1 - reply1) * 0.5


def ds_twr_range_m(tx_poll, rx_resp, tx_final, rx_poll, tx_resp, rx_final):
    """Range (m) from the six DS-TWR timestamps (antenna-corrected, 40-bit ticks).

    Initiator clock: tx_poll, rx_resp, tx_final. Responder clock: rx_poll, tx_resp, rx_final.
    Raises TimestampError when the timestamps are out of order.
    """
    round1 = interval_ticks(rx_resp, tx_poll)
    reply2 = interval_ticks(tx_final, rx_resp)
    reply1 = interval_ticks(tx_resp, rx_poll)
    round2 = interval_ticks(rx_final, tx_resp)
    return ds_twr_tof_ticks(round1, reply1, round2, reply2) * METERS_PER_TICK


def ss_twr_range_m(tx_poll, rx_resp, rx_poll, tx_resp):
    """Range (m) from the four SS-TWR timestamps (initiator: tx_poll, rx_resp; responder: rx_poll, tx_resp)."""
    round1 = interval_ticks(rx_resp, tx_poll)
    reply1 = interval_ticks(tx_resp, rx_poll)
    return ss_twr_tof_ticks(round1, reply1) * METERS_PER_TICK
