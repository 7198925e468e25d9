"""Event-driven UWB radio channel for N nodes running the onboard UWB protocol.

Modelled (all deterministic with the run seed, via ``RunRandom`` streams):
- air time of each frame from its length and the DW1000 PHY settings (:func:`air_time_s`);
  defaults: channel 5, 6.8 Mb/s, PRF 64 MHz, 128-symbol preamble, 8-symbol SFD; the
  timestamp (RMARKER) is the end of the SFD;
- propagation delay from the true distance at transmit time (positions from a callback);
- per-node clocks: offset and drift (default uniform in +-20 ppm) shared by the node's
  microsecond clock (``now_us`` it is given) and its 40-bit DW1000 counter;
- per-node true antenna delay (the protocol subtracts its calibrated value);
- RX timestamp noise: a constant delay ``range_mean_m / c`` plus Gaussian noise with
  std ``sqrt(range_var_m2 / (3/8)) / c``: for DS-TWR with equal reply times the range error
  is c * (n_a2 / 2 + n_b1 / 4 + n_b3 / 4) + mean, so its variance is 3/8 of the per-timestamp
  variance and the paper's N(mu=0.0085569 m, sigma^2=0.061295 m^2) comes out (uwb paper III-A);
  a constant RX delay b biases every TWR variant by exactly c * b;
- loss: each (frame, receiver) is lost with ``loss_prob``; frames overlapping at a receiver
  are all lost there (no capture); a node hears nothing while it transmits or waits on a
  delayed transmission (DW1000 half-duplex);
- optional NLOS: a fraction of node pairs get a constant extra path ``nlos_bias_m`` (both
  directions), or ``nlos_fn(i, j, pos_i, pos_j) -> extra metres`` decides per frame.
- DW1000 delayed transmission: the 9 LSBs of the programmed time are ignored, the raw TX
  timestamp is exactly the truncated time, and a time less than the SHR duration ahead fails
  with ``("tx_error", "late")``.

Timing resolution: physics in float seconds (sub-picosecond at run lengths of hours), events
on the :class:`harness.sim.clock.SimClock` in integer microseconds (frame ends rounded up).

API for a simulation with N nodes (see onboard/comms/uwb/README.md)::

    net = UwbNetwork(clock, node_ids, ctx.random, protocol={"mode": "broadcast"},
                     radio={"loss_prob": 0.01}, state_fn=lambda now_us: {i: (pos_m, vel_mps)})
    net.on_range.append(lambda node_id, sample, true_us: ...)
    net.start()
    clock.advance_to(t_end_us)
"""
import math

from harness.sim.clock import PRIORITY_DEFAULT
from onboard.comms.uwb import timestamps as T
from onboard.comms.uwb.driver import UwbDriver
from onboard.comms.uwb.node import PAPER_RANGE_MEAN_M, PAPER_RANGE_VAR_M2, make_node
from onboard.core.settings import (ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, one_of,
                                   within)

C_MPS = T.SPEED_OF_LIGHT_MPS
TICK_HZ = T.TICK_HZ
MASK_TICKS = T.MASK_TICKS

RADIO_DEFAULTS = {
    "channel": 5,
    "data_rate_kbps": 6800,       # 110, 850 or 6800
    "prf_mhz": 64,                # 16 or 64
    "preamble_symbols": 128,      # 64 .. 4096
    "tx_start_delay_us": 10.0,    # immediate TX: command to preamble start (SPI + PLL)
    "rx_event_latency_us": 5.0,   # frame end to the RX interrupt reaching the node
    "clock_drift_ppm_max": 20.0,  # per-node drift uniform in [-max, +max] ...
    "clock_drifts_ppm": None,     # ... or explicit {node_id: ppm}
    "antenna_delay_true_ticks": 16436,   # per direction (TX and RX), each node
    "antenna_delay_spread_ticks": 0,     # per-node uniform +- spread around it
    "range_mean_m": PAPER_RANGE_MEAN_M,  # DS-TWR error model the RX noise is calibrated to
    "range_var_m2": PAPER_RANGE_VAR_M2,
    "noise": True,
    "loss_prob": 0.0,
    "collisions": True,
    "max_range_m": 1000.0,
    "nlos_pair_fraction": 0.0,
    "nlos_bias_m": 0.3,
    "trace": False,               # keep every transmission's air interval (tests)
}
RADIO_SETTING_RANGES = {
    "channel": one_of(1, 2, 3, 4, 5, 7), "data_rate_kbps": one_of(110, 850, 6800), "prf_mhz": one_of(16, 64),
    "preamble_symbols": int_at_least(1), "tx_start_delay_us": NON_NEGATIVE, "rx_event_latency_us": NON_NEGATIVE,
    "clock_drift_ppm_max": NON_NEGATIVE,
    "clock_drifts_ppm": ("null or a table {node id: ppm}",
                         lambda v: v is None or (isinstance(v, dict) and all(ANY_NUMBER[1](x) for x in v.values()))),
    "antenna_delay_true_ticks": int_at_least(0), "antenna_delay_spread_ticks": int_at_least(0),
    "range_mean_m": ANY_NUMBER, "range_var_m2": NON_NEGATIVE, "noise": BOOLEAN, "loss_prob": within(0.0, 1.0),
    "collisions": BOOLEAN, "max_range_m": POSITIVE, "nlos_pair_fraction": within(0.0, 1.0),
    "nlos_bias_m": NON_NEGATIVE, "trace": BOOLEAN,
}

_SFD_SYMBOLS = {110: 64, 850: 8, 6800: 8}
_PREAMBLE_SYMBOL_S = {16: 993.59e-9, 64: 1017.63e-9}
_DATA_BIT_S = {110: 8205.13e-9, 850: 1025.64e-9, 6800: 128.21e-9}
_PHR_BIT_S = {110: 8205.13e-9, 850: 1025.64e-9, 6800: 1025.64e-9}
_PHR_BITS = 21
_FCS_BYTES = 2
_RS_BLOCK_BITS = 330
_RS_PARITY_BITS = 48


def shr_s(radio):
    """Synchronisation header (preamble + SFD) duration (s): from preamble start to RMARKER."""
    return ((radio["preamble_symbols"] + _SFD_SYMBOLS[radio["data_rate_kbps"]])
            * _PREAMBLE_SYMBOL_S[radio["prf_mhz"]])


def air_time_s(frame_len, radio):
    """Air time (s) of a frame of ``frame_len`` bytes (+ the DW1000's 2-byte FCS):
    SHR + 21-bit PHR + data bits with Reed-Solomon parity (48 bits per 330-bit block)."""
    rate = radio["data_rate_kbps"]
    bits = 8 * (frame_len + _FCS_BYTES)
    blocks = (bits + _RS_BLOCK_BITS - 1) // _RS_BLOCK_BITS
    return shr_s(radio) + _PHR_BITS * _PHR_BIT_S[rate] + (bits + _RS_PARITY_BITS * blocks) * _DATA_BIT_S[rate]


def rx_noise_std_s(range_var_m2):
    """Per-RX-timestamp noise std (s) that gives DS-TWR (equal replies) range variance ``range_var_m2``."""
    return math.sqrt(range_var_m2 / 0.375) / C_MPS


def merged_radio(overrides=None):
    """RADIO_DEFAULTS merged with ``overrides`` and checked (:func:`onboard.core.settings.checked`)."""
    return checked(RADIO_DEFAULTS, RADIO_SETTING_RANGES, overrides, "radio")


class _Clock:
    """A node's crystal: microsecond clock and DW1000 tick counter with the same drift."""

    def __init__(self, drift_ppm, offset_us, offset_ticks):
        self.rate = 1.0 + drift_ppm * 1e-6
        self.drift_ppm = drift_ppm
        self.offset_us = offset_us
        self.offset_ticks = offset_ticks

    def local_us(self, true_us):
        return self.offset_us + int(math.floor(true_us * self.rate))

    def true_us_for(self, local_us):
        t = int(math.ceil((local_us - self.offset_us) / self.rate))
        while self.local_us(t) < local_us:
            t += 1
        return t

    def ticks_f(self, true_s):
        """Unwrapped tick count (float) at true time ``true_s``, before the 40-bit wrap."""
        return self.offset_ticks + true_s * self.rate * T.TICK_HZ


class _Tx:
    __slots__ = ("sender", "frame", "commit_s", "start_s", "rmarker_s", "end_s", "pos", "raw_tx")

    def __init__(self, sender, frame, commit_s, start_s, rmarker_s, end_s, pos, raw_tx):
        self.sender = sender
        self.frame = frame
        self.commit_s = commit_s
        self.start_s = start_s
        self.rmarker_s = rmarker_s
        self.end_s = end_s
        self.pos = pos
        self.raw_tx = raw_tx


class SimRadio:
    """The radio object a node's driver gets: ``transmit(frame_bytes, dx_ticks)``."""

    def __init__(self, net, node_id):
        self.net = net
        self.node_id = node_id

    def transmit(self, frame, dx_ticks=None):
        self.net._submit_tx(self.node_id, frame, dx_ticks)


class _Node:
    def __init__(self, node_id, clock, ant_true_ticks):
        self.id = node_id
        self.clock = clock
        self.ant_true_s = ant_true_ticks / T.TICK_HZ
        self.driver = None
        self.proto = None          # driver.node: the protocol node (its vel_mps is compared, never written)
        self.alive = False
        # The armed timer is the SimClock key (time, PRIORITY_DEFAULT, arm_seq) that SimClock.reserve would
        # have returned when it was armed; its seq is taken then, its time only when it is needed (the time
        # from deadline_local and arm_now_us, see UwbNetwork._armed_time_us).
        self.armed = False
        self.arm_seq = -1
        self.arm_now_us = 0
        self.deadline_local = None
        self.watch = None          # key of this node's earliest queued timer event (<= the armed key)
        self.watch_dl = None       # the deadline (node-local us) the watch key was worked out from
        self.busy_until_s = -1.0
        self.tx_intervals = []     # (commit_s, end_s) of own transmissions (deaf)
        self.pending = None        # _Tx awaiting its tx_done
        self.vel = None            # last velocity given to the protocol node


class UwbNetwork:
    """N simulated DW1000 radios on one channel, each running an onboard UWB protocol node.

    node_ids: ids of the nodes (started by :meth:`start` unless listed in ``absent``).
    random: a ``harness.sim.rng.RunRandom``; streams "uwb.clock", "uwb.noise", "uwb.loss", "uwb.nlos".
    protocol: overrides of ``onboard.comms.uwb.node.DEFAULTS`` (same for every node).
    radio: overrides of :data:`RADIO_DEFAULTS`.
    state_fn: ``state_fn(true_now_us) -> {node_id: (pos_m, vel_mps)}`` (pos 2-D or 3-D, metres;
      vel is what the node reports in its frames, m/s in its own frame); or None and
      :meth:`set_state` is used.

    Speed (the results are those of handing every frame to every node one at a time, see
    ``uwb_channel_reference``; tests/unit/test_uwb_channel_speedup.py pins them): each frame's end
    is one pass over the receivers with the per-frame quantities worked out once (sender terms of
    the RX time, the transmissions it could collide with: usually none), the velocity is handed to
    a protocol node only when it differs from the one the node holds, and a node's timer (which
    moves on nearly every frame it hears) takes its place in the event order when it is armed but
    its time is worked out only when it can matter (it may precede the node's queued timer event,
    or that event fires).
    """

    def __init__(self, clock, node_ids, random, protocol=None, radio=None, state_fn=None):
        self.clock = clock
        self.protocol = dict(protocol or {})
        self.radio = merged_radio(radio)
        self.state_fn = state_fn
        self._states = {}
        self._state_time_us = None
        rc = self.radio
        self._shr_s = shr_s(rc)
        self._air_cache = {}
        self._tx_delay_s = rc["tx_start_delay_us"] * 1e-6
        self._rx_lat_s = rc["rx_event_latency_us"] * 1e-6
        self._noise_std_ticks = (rx_noise_std_s(rc["range_var_m2"]) * T.TICK_HZ) if rc["noise"] else 0.0
        self._bias_ticks = rc["range_mean_m"] / C_MPS * T.TICK_HZ if rc["noise"] else 0.0
        self._rng_noise = random.stream("uwb.noise")
        self._rng_loss = random.stream("uwb.loss")
        self._noise_buf = []
        self._loss_buf = []
        crng = random.stream("uwb.clock")
        drifts = rc["clock_drifts_ppm"] or {}
        self.nodes = {}
        for i in sorted(node_ids):
            d = drifts.get(i, drifts.get(str(i))) if drifts else None
            if d is None:
                d = float(crng.uniform(-rc["clock_drift_ppm_max"], rc["clock_drift_ppm_max"]))
            else:
                crng.uniform(-1, 1)      # keep the stream aligned
            off_us = int(crng.integers(0, 1000000))
            off_ticks = int(crng.integers(0, T.WRAP_TICKS))
            spread = rc["antenna_delay_spread_ticks"]
            ant = rc["antenna_delay_true_ticks"] + (float(crng.uniform(-spread, spread)) if spread else 0.0)
            self.nodes[i] = _Node(i, _Clock(float(d), off_us, off_ticks), ant)
        ids = sorted(self.nodes)
        self._receivers = [self.nodes[i] for i in ids]    # delivery order of every frame
        nrng = random.stream("uwb.nlos")
        self._nlos_m = {}
        for a in range(len(ids)):
            for b in range(a + 1, len(ids)):
                if rc["nlos_pair_fraction"] > 0 and nrng.random() < rc["nlos_pair_fraction"]:
                    self._nlos_m[(ids[a], ids[b])] = rc["nlos_bias_m"]
        self.nlos_fn = None
        self._air = []             # recent transmissions (collision checks)
        self.air_log = []          # (sender, start_s, end_s) when radio["trace"]
        self.on_range = []         # callbacks (node_id, RangeSample, true_time_us)
        self.samples = {i: [] for i in self.nodes}
        self.keep_samples = True
        self.stats = {"frames": 0, "deliveries": 0, "lost_random": 0, "lost_collision": 0,
                      "lost_deaf": 0, "lost_range": 0, "tx_late": 0, "tx_busy": 0}

    # -- node life cycle ---------------------------------------------------------
    def start(self, absent=()):
        """Power on every node not in ``absent`` now."""
        for i in sorted(self.nodes):
            if i not in absent:
                self.power_on(i)

    def power_on(self, node_id):
        """(Re)start ``node_id`` now with a fresh protocol state (a crash + reboot, or a join)."""
        n = self.nodes[node_id]
        n.alive = True
        n.pending = None
        n.vel = None
        n.driver = UwbDriver(make_node(node_id, self.protocol), SimRadio(self, node_id))
        n.proto = n.driver.node
        now = self.clock.now_us()
        self._set_velocity(n, now)
        samples, deadline = n.driver.start(n.clock.local_us(now))
        self._handle(n, samples, deadline, now)

    def crash(self, node_id):
        """``node_id`` stops dead now (no more frames, events or timers)."""
        n = self.nodes[node_id]
        n.alive = False
        n.armed = False
        n.driver = None
        n.proto = None
        n.pending = None

    def protocol_node(self, node_id):
        n = self.nodes[node_id]
        return n.driver.node if n.driver is not None else None

    def drift_ppm(self, node_id):
        return self.nodes[node_id].clock.drift_ppm

    # -- world state -------------------------------------------------------------
    def set_state(self, node_id, pos_m, vel_mps=(0.0, 0.0)):
        """Set a node's position (m) and reported velocity (m/s) when no state_fn is used."""
        self._states[node_id] = (tuple(pos_m), tuple(vel_mps))

    def _refresh(self, now_us):
        if self.state_fn is not None and self._state_time_us != now_us:
            self._states = self.state_fn(now_us)
            self._state_time_us = now_us

    def position(self, node_id, now_us):
        self._refresh(now_us)
        return self._states[node_id][0]

    def true_range_m(self, a, b, now_us):
        self._refresh(now_us)
        return _dist(self._states[a][0], self._states[b][0])

    def _set_velocity(self, n, now_us):
        """Hand the node its reported velocity (as NodeBase.set_velocity) unless it holds that very value:
        a repeated call with equal non-zero finite components changes nothing (zeros go through: the sign
        of a zero is kept; rejected values go through: they are counted)."""
        if self.state_fn is not None and self._state_time_us != now_us:
            self._states = self.state_fn(now_us)
            self._state_time_us = now_us
        st = self._states.get(n.id)
        if st is not None and n.driver is not None:
            v = st[1]
            if v is n.vel:
                return
            n.vel = v
            vx = v[0]
            vy = v[1] if len(v) > 1 else 0.0
            held = n.proto.vel_mps
            if vx == held[0] and vy == held[1] and vx and vy:
                return
            n.driver.set_velocity(vx, vy)

    # -- event plumbing ----------------------------------------------------------
    def _handle(self, n, samples, deadline_local, now_us):
        if samples:
            for s in samples:
                if self.keep_samples:
                    self.samples[n.id].append((now_us, s))
                for cb in self.on_range:
                    cb(n.id, s, now_us)
        if deadline_local != n.deadline_local:
            self._arm(n, deadline_local, now_us)

    def _arm(self, n, deadline_local, now_us):
        """A node's new deadline (node-local us, or None): the timer takes the place in the event order that
        ``SimClock.reserve`` gives now (as call_at would), at the true time of the deadline (a deadline
        already due fires 1 us later: a node that keeps returning a past deadline cannot stall simulated
        time). A node's deadline moves on nearly every frame it hears (its silence timeout): one queued
        event per node, at or before the armed key, waits for it (see _wake) instead of one per move, and
        the armed key's time is worked out only when it may come before that event (a later deadline
        never does: the true time is non-decreasing in the deadline and in the time it was armed)."""
        n.deadline_local = deadline_local
        if deadline_local is None:
            n.armed = False
            return
        clock = self.clock
        seq = clock._seq                 # what clock.reserve(now_us) takes (and its only effect)
        clock._seq = seq + 1
        n.armed = True
        n.arm_seq = seq
        n.arm_now_us = now_us
        w = n.watch
        if w is not None and deadline_local >= n.watch_dl:
            return
        key = (self._armed_time_us(n), PRIORITY_DEFAULT, seq)
        if w is None or key < w:
            self._queue_wake(n, key)

    def _armed_time_us(self, n):
        t = n.clock.true_us_for(n.deadline_local)
        return t if t > n.arm_now_us else n.arm_now_us + 1

    def _queue_wake(self, n, key):
        n.watch = key
        n.watch_dl = n.deadline_local
        self.clock.call_reserved(key, lambda now, n=n, key=key: self._wake(n, key, now))

    def _deliver(self, n, event, now_us):
        if not n.alive:
            return
        self._set_velocity(n, now_us)
        samples, deadline = n.driver.on_event(event, n.clock.local_us(now_us))
        self._handle(n, samples, deadline, now_us)

    def _wake(self, n, key, now_us):
        """A node's queued timer event: fires the timer armed at ``key``, or queues one for the timer armed
        since at its (later) key, or does nothing (superseded by an earlier event, timer gone)."""
        if n.watch is not key:
            return
        n.watch = None
        if not n.armed or not n.alive:
            return
        if n.arm_seq != key[2]:
            self._queue_wake(n, (self._armed_time_us(n), PRIORITY_DEFAULT, n.arm_seq))
            return
        n.armed = False
        n.deadline_local = None          # fired: a new (even equal) deadline is re-armed
        self._deliver(n, ("timer",), now_us)

    def _air_s(self, length):
        a = self._air_cache.get(length)
        if a is None:
            a = air_time_s(length, self.radio)
            self._air_cache[length] = a
        return a

    def _submit_tx(self, sender, frame, dx_ticks):
        n = self.nodes[sender]
        now_us = self.clock.now_us()
        now_s = now_us * 1e-6
        if n.pending is not None or now_s < n.busy_until_s:
            self.stats["tx_busy"] += 1
            self.clock.call_at(now_us, lambda t: self._deliver(n, ("tx_error", "busy"), t))
            return
        air = self._air_s(len(frame))
        if dx_ticks is None:
            start_s = now_s + self._tx_delay_s
            rmarker_s = start_s + self._shr_s
            raw_tx = int(math.floor(n.clock.ticks_f(rmarker_s) + 0.5)) & T.MASK_TICKS
        else:
            dx = dx_ticks & T.DELAYED_TX_MASK
            cur = n.clock.ticks_f(now_s)
            ahead = (dx - int(math.floor(cur))) & T.MASK_TICKS
            rmarker_s = now_s + ahead / (n.clock.rate * T.TICK_HZ) if ahead < T.HALF_WRAP_TICKS else -1.0
            start_s = rmarker_s - self._shr_s
            if start_s < now_s + self._tx_delay_s:
                self.stats["tx_late"] += 1
                self.clock.call_at(now_us, lambda t: self._deliver(n, ("tx_error", "late"), t))
                return
            raw_tx = dx
        end_s = start_s + air
        self._refresh(now_us)
        pos = self._states[sender][0]
        tx = _Tx(sender, bytes(frame), now_s, start_s, rmarker_s, end_s, pos, raw_tx)
        n.pending = tx
        n.busy_until_s = end_s
        n.tx_intervals.append((now_s, end_s))
        self._air.append(tx)
        self.stats["frames"] += 1
        if self.radio["trace"]:
            self.air_log.append((sender, start_s, end_s))
        t_event = int(math.ceil((end_s + self._rx_lat_s) * 1e6))
        self.clock.call_at(max(t_event, now_us), lambda t, tx=tx: self._frame_end(tx, t))

    def _frame_end(self, tx, now_us):
        """The frame ``tx`` has reached every node (the event at its end + RX latency): tx_done to the
        sender, then every other node in id order either loses it (out of range, deaf, collision, random
        loss: counted) or gets it with its RX timestamp."""
        sender = tx.sender
        s = self.nodes[sender]
        if s.pending is tx:
            s.pending = None
            if s.alive:
                self._deliver(s, ("tx_done", tx.raw_tx), now_us)
        else:
            return   # sender crashed mid-frame: the frame is cut
        self._prune(tx.start_s - 0.01)
        rc = self.radio
        stats = self.stats
        self._refresh(now_us)
        states = self._states
        max_range_m = rc["max_range_m"]
        collisions = rc["collisions"]
        loss_prob = rc["loss_prob"]
        nlos_m = self._nlos_m
        noise_std = self._noise_std_ticks
        bias_ticks = self._bias_ticks
        floor = math.floor
        hypot = math.hypot
        c_mps = C_MPS
        tick_hz = TICK_HZ
        mask = MASK_TICKS
        clock = self.clock
        frame = tx.frame
        p = tx.pos
        p3 = len(p) == 3
        px = p[0]
        py = p[1]
        pz = p[2] if p3 else 0.0
        start_s = tx.start_s
        end_s = tx.end_s
        base_s = tx.rmarker_s + s.ant_true_s          # the first two terms of every RX time below
        # transmissions this frame could collide with anywhere in range (worked out again if the air changes)
        air = None
        n_air = -1
        others = ()
        for rn in self._receivers:
            r = rn.id
            if r == sender:
                continue
            if not rn.alive:
                continue
            st = states.get(r)
            if st is None:
                continue
            q = st[0]
            if p3 and len(q) == 3:
                d = math.sqrt((px - q[0]) ** 2 + (py - q[1]) ** 2 + (pz - q[2]) ** 2)
            else:
                d = hypot(px - q[0], py - q[1])
            if d > max_range_m:
                stats["lost_range"] += 1
                continue
            prop_s = d / c_mps
            a0 = start_s + prop_s
            a1 = end_s + prop_s
            ivs = rn.tx_intervals
            if ivs:
                deaf = False
                for c0, c1 in ivs:              # _deaf, inline
                    if c0 < a1 and a0 < c1:
                        deaf = True
                        break
                if deaf:
                    stats["lost_deaf"] += 1
                    continue
            if collisions:
                if self._air is not air or len(air) != n_air:
                    air = self._air
                    n_air = len(air)
                    far_s = end_s + max_range_m / C_MPS
                    others = [o for o in air if o is not tx and o.end_s + 1e-6 >= start_s
                              and o.start_s - 1e-6 <= far_s]
                if others and self._collides(others, r, q, a0, a1):
                    stats["lost_collision"] += 1
                    continue
            if loss_prob > 0.0:
                buf = self._loss_buf
                if not buf:
                    buf = self._loss_buf = self._rng_loss.random(4096).tolist()
                if buf.pop() < loss_prob:
                    stats["lost_random"] += 1
                    continue
            if nlos_m:
                extra_m = nlos_m.get((sender, r) if sender < r else (r, sender), 0.0)
            else:
                extra_m = 0.0
            if self.nlos_fn is not None:
                extra_m += self.nlos_fn(sender, r, p, q)
            t_rx_s = base_s + prop_s + extra_m / c_mps + rn.ant_true_s
            c = rn.clock
            ticks = c.offset_ticks + t_rx_s * c.rate * tick_hz + bias_ticks
            if noise_std:
                buf = self._noise_buf
                if not buf:
                    buf = self._noise_buf = self._rng_noise.standard_normal(4096).tolist()
                ticks += noise_std * buf.pop()
            raw_rx = int(floor(ticks + 0.5)) & mask
            stats["deliveries"] += 1
            if not rn.alive:
                continue
            v = st[1]                       # _set_velocity: the same states (this time), inline
            if v is not rn.vel and rn.driver is not None:
                rn.vel = v
                vx = v[0]
                vy = v[1] if len(v) > 1 else 0.0
                held = rn.proto.vel_mps
                if not (vx == held[0] and vy == held[1] and vx and vy):
                    rn.driver.set_velocity(vx, vy)
            samples, deadline = rn.driver.on_event(("rx", frame, raw_rx),
                                                   c.offset_us + int(floor(now_us * c.rate)))
            if samples:
                for smp in samples:
                    if self.keep_samples:
                        self.samples[r].append((now_us, smp))
                    for cb in self.on_range:
                        cb(r, smp, now_us)
            if deadline != rn.deadline_local:
                # _arm, inline for the usual move of a deadline past the node's queued timer event
                if deadline is not None and rn.watch is not None and deadline >= rn.watch_dl:
                    rn.deadline_local = deadline
                    seq = clock._seq
                    clock._seq = seq + 1
                    rn.armed = True
                    rn.arm_seq = seq
                    rn.arm_now_us = now_us
                else:
                    self._arm(rn, deadline, now_us)

    def _collides(self, others, r, pos_r, a0, a1):
        """Whether a transmission in ``others`` (not the frame itself) overlaps [a0, a1] at receiver ``r``."""
        for o in others:
            if o.sender == r:
                continue
            if o.end_s + 1e-6 < a0 or o.start_s - 1e-6 > a1:
                continue
            p = _dist(o.pos, pos_r) / C_MPS
            if o.start_s + p < a1 and a0 < o.end_s + p:
                return True
        return False

    def _prune(self, before_s):
        if self._air and self._air[0].end_s < before_s:
            self._air = [o for o in self._air if o.end_s >= before_s]
        for n in self._receivers:
            if n.tx_intervals and n.tx_intervals[0][1] < before_s:
                n.tx_intervals = [iv for iv in n.tx_intervals if iv[1] >= before_s]


def _dist(a, b):
    if len(a) == 3 and len(b) == 3:
        return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)
    return math.hypot(a[0] - b[0], a[1] - b[1])
