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
                     radio={"loss_prob": 0.01}, state_fn=lambda now_us: {i: (pos_m, vel_mps)},
                     impl=None)      # None: $ONBOARD_IMPL (default pure); "cython": compiled, same results
    net.on_range.append(lambda node_id, sample, true_us: ...)
    net.start()
    clock.advance_to(t_end_us)

The per-frame and per-event work is in :mod:`harness.sim.radio.uwb_channel_frame` (compiled with the
protocol nodes for ``impl="cython"``: ``cython_ext.uwb_channel_frame`` and ``cython_ext.uwb``).
"""
import importlib
import math

from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel_frame import _dist  # noqa: F401 (uwb_channel_reference imports it from here)
from onboard import impl as _impl
from onboard.comms.uwb import timestamps as T
from onboard.comms.uwb.node import PAPER_RANGE_MEAN_M, PAPER_RANGE_VAR_M2
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
# A node's clock runs at rate 1 + drift_ppm * 1e-6 (uwb_channel_frame._Clock): at -1e6 ppm or below it stands
# still or runs backwards and the channel divides by zero. A real crystal drifts by tens of ppm (the DW1000
# wants +-20 ppm); 1e5 ppm (10 %) is far beyond any working oscillator, so a drift of that magnitude or more is
# a unit or typing error, and below it the clock rate stays within [0.9, 1.1].
MAX_CLOCK_DRIFT_PPM = 1e5


def _drift_ok(v):
    return ANY_NUMBER[1](v) and abs(v) < MAX_CLOCK_DRIFT_PPM


RADIO_SETTING_RANGES = {
    "channel": one_of(1, 2, 3, 4, 5, 7), "data_rate_kbps": one_of(110, 850, 6800), "prf_mhz": one_of(16, 64),
    "preamble_symbols": int_at_least(1), "tx_start_delay_us": NON_NEGATIVE, "rx_event_latency_us": NON_NEGATIVE,
    "clock_drift_ppm_max": ("a number in [0, %g) (ppm)" % MAX_CLOCK_DRIFT_PPM,
                            lambda v: _drift_ok(v) and v >= 0),
    "clock_drifts_ppm": ("null or a table {node id: ppm} of drifts of magnitude below %g ppm" % MAX_CLOCK_DRIFT_PPM,
                         lambda v: v is None or (isinstance(v, dict) and all(_drift_ok(x) for x in v.values()))),
    "antenna_delay_true_ticks": int_at_least(0), "antenna_delay_spread_ticks": int_at_least(0),
    "range_mean_m": ANY_NUMBER, "range_var_m2": NON_NEGATIVE, "noise": BOOLEAN, "loss_prob": within(0.0, 1.0),
    "collisions": BOOLEAN, "max_range_m": POSITIVE, "nlos_pair_fraction": within(0.0, 1.0),
    "nlos_bias_m": NON_NEGATIVE, "trace": BOOLEAN,
}

# By implementation (onboard.impl): the protocol package every node runs (the onboard package, or the same
# sources compiled by Cython: cython_ext/uwb) and the channel's per-frame module (uwb_channel_frame, or the
# same source compiled: cython_ext.uwb_channel_frame), both built by `make setup`. There is no NumPy variant:
# "numpy" runs the pure one.
PROTOCOL_PACKAGES = {"pure": "onboard.comms.uwb", "numpy": "onboard.comms.uwb", "cython": "cython_ext.uwb"}
FRAME_MODULES = {"pure": "harness.sim.radio.uwb_channel_frame", "numpy": "harness.sim.radio.uwb_channel_frame",
                 "cython": "cython_ext.uwb_channel_frame"}
# ... and the ground truth the uwb-ranging scenario runs the channel against (motion model, range scoring):
# uwb_channel_truth, or the same source compiled (cython_ext.uwb_channel_truth)
TRUTH_MODULES = {"pure": "harness.sim.radio.uwb_channel_truth", "numpy": "harness.sim.radio.uwb_channel_truth",
                 "cython": "cython_ext.uwb_channel_truth"}


def channel_modules(impl=None):
    """(protocol node module, driver module, per-frame channel module) of the selected implementation (``impl``
    or $ONBOARD_IMPL, default pure); raises onboard.impl.ImplUnavailable when it is not built."""
    name = _impl.selected(impl)
    pkg = PROTOCOL_PACKAGES[name]
    node = _impl.load({name: pkg + ".node"}, name)
    return node, importlib.import_module(pkg + ".driver"), _impl.load(FRAME_MODULES, name)


def truth_module(impl=None):
    """The ground-truth module (``BouncingMotion``, ``RangeTruth``) of the selected implementation (``impl`` or
    $ONBOARD_IMPL, default pure); raises onboard.impl.ImplUnavailable when it is not built."""
    name = _impl.selected(impl)
    return _impl.load(TRUTH_MODULES, name)


def _motion_class(impl):
    """``BouncingMotion`` of the ground-truth module of ``impl`` (None where that is not built)."""
    try:
        return truth_module(impl).BouncingMotion
    except _impl.ImplUnavailable:
        return None


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


def _finite_number(v):
    """Whether ``v`` is a finite number (an int, a float or a NumPy scalar; not a bool or text)."""
    if isinstance(v, (bool, str, bytes)):
        return False
    try:
        return math.isfinite(v)
    except (TypeError, ValueError, OverflowError):
        return False


class SimRadio:
    """The radio object a node's driver gets: ``transmit(frame_bytes, dx_ticks)``."""

    def __init__(self, net, node_id):
        self.net = net
        self.node_id = node_id

    def transmit(self, frame, dx_ticks=None):
        self.net._submit_tx(self.node_id, frame, dx_ticks)


class UwbNetwork:
    """N simulated DW1000 radios on one channel, each running an onboard UWB protocol node.

    node_ids: ids of the nodes (started by :meth:`start` unless listed in ``absent``).
    random: a ``harness.sim.rng.RunRandom``; streams "uwb.clock", "uwb.noise", "uwb.loss", "uwb.nlos".
    protocol: overrides of ``onboard.comms.uwb.node.DEFAULTS`` (same for every node).
    radio: overrides of :data:`RADIO_DEFAULTS`.
    state_fn: ``state_fn(true_now_us) -> {node_id: (pos_m, vel_mps)}`` (pos 2-D or 3-D, metres;
      vel is what the node reports in its frames, m/s in its own frame); or None and
      :meth:`set_state` is used. Where it also has ``node_state(node_id, true_now_us)`` (the same as
      ``state_fn(true_now_us).get(node_id)``), the channel asks that for the one node it needs at a timer or a
      transmission (uwb_channel_truth.BouncingMotion has it).
    impl: the implementation of the protocol nodes and of the per-frame work (:func:`channel_modules`):
      None ($ONBOARD_IMPL, default pure), "pure" or "cython" (the same sources compiled; identical results).

    Speed (the results are those of handing every frame to every node one at a time, see
    ``uwb_channel_reference``; tests/unit/test_uwb_channel_speedup.py pins them): each frame's end
    is one pass over the receivers with the per-frame quantities worked out once (sender terms of
    the RX time, the transmissions it could collide with: usually none), the velocity is handed to
    a protocol node only when it differs from the one the node holds, and a node's timer (which
    moves on nearly every frame it hears) takes its place in the event order when it is armed but
    its time is worked out only when it can matter (it may precede the node's queued timer event,
    or that event fires). That per-frame and per-event work lives in ``uwb_channel_frame``; with
    ``impl="cython"`` it runs compiled (``cython_ext.uwb_channel_frame``) together with the protocol nodes
    compiled from the onboard sources (``cython_ext.uwb``): the same results (pinned by the same test).
    """

    def __init__(self, clock, node_ids, random, protocol=None, radio=None, state_fn=None, impl=None):
        self.clock = clock
        # a plain SimClock's attributes: the per-frame code queues its events with the same entries SimClock's
        # call_at / call_reserved make, without the interpreted call (any other clock: its own methods)
        self._clock_vars = clock.__dict__ if type(clock) is SimClock else None
        node_mod, driver_mod, self._frame_mod = channel_modules(impl)
        # a frame's end and a node's transmission skip this class's method where a subclass does not override it
        self._direct_frame_end = type(self)._frame_end is UwbNetwork._frame_end
        self._direct_tx = type(self)._submit_tx is UwbNetwork._submit_tx
        self.impl = _impl.selected(impl)
        self._make_node = node_mod.make_node
        self._driver_cls = driver_mod.UwbDriver
        self.protocol = dict(protocol or {})
        self.radio = merged_radio(radio)
        self.state_fn = state_fn
        # optional: state_fn.node_state(node_id, true_now_us) = state_fn(true_now_us).get(node_id), for one node
        self._node_state = getattr(state_fn, "node_state", None)
        # the state_fn when it is a uwb_channel_truth.BouncingMotion of this implementation with finite velocities:
        # the per-frame code reads its positions in place (BouncingMotion.positions_at) instead of its state
        self._motion = state_fn if _motion_class(impl) is type(state_fn) and not state_fn._fresh_vels else None
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
            self.nodes[i] = self._frame_mod._Node(i, self._frame_mod._Clock(float(d), off_us, off_ticks), ant)
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
        radio = self._frame_mod.Radio(self, n) if self._direct_tx else SimRadio(self, node_id)
        n.driver = self._driver_cls(self._make_node(node_id, self.protocol), radio)
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
        n.deadline_local = None      # no timer: the first deadline after a power_on is armed whatever its value
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
        """Set a node's position (m, 2 or 3 finite numbers) and reported velocity (m/s; handed to its
        protocol node as it is, which counts a non-finite one) when no state_fn is used. A position that is
        not 2 or 3 finite numbers raises ValueError and leaves the state as it was."""
        pos = tuple(pos_m)
        if len(pos) not in (2, 3) or not all(_finite_number(c) for c in pos):
            raise ValueError("node %r position must be 2 or 3 finite numbers (m), got %r" % (node_id, pos_m))
        self._states[node_id] = (pos, tuple(vel_mps))

    def _refresh(self, now_us):
        if self.state_fn is not None and self._state_time_us != now_us:
            self._states = self.state_fn(now_us)
            self._state_time_us = now_us

    def position(self, node_id, now_us):
        self._refresh(now_us)
        return self._states[node_id][0]

    def true_range_m(self, a, b, now_us):
        self._refresh(now_us)
        return self._frame_mod._dist(self._states[a][0], self._states[b][0])

    # -- event plumbing (the work itself: uwb_channel_frame, compiled where built) --------
    def _set_velocity(self, n, now_us):
        self._frame_mod.set_velocity(self, n, now_us)

    def _handle(self, n, samples, deadline_local, now_us):
        self._frame_mod.handle(self, n, samples, deadline_local, now_us)

    def _arm(self, n, deadline_local, now_us):
        self._frame_mod.arm(self, n, deadline_local, now_us)

    def _deliver(self, n, event, now_us):
        self._frame_mod.deliver_event(self, n, event, now_us)

    def _wake(self, n, key, now_us):
        self._frame_mod.wake(self, n, key, now_us)

    def _air_s(self, length):
        a = self._air_cache.get(length)
        if a is None:
            a = air_time_s(length, self.radio)
            self._air_cache[length] = a
        return a

    def _submit_tx(self, sender, frame, dx_ticks):
        self._frame_mod.submit_tx(self, self.nodes[sender], frame, dx_ticks)

    def _frame_end(self, tx, now_us):
        self._frame_mod.frame_end(self, tx, now_us)

    def _prune(self, before_s):
        self._frame_mod.prune(self, before_s)

