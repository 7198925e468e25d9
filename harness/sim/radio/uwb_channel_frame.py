"""The UWB channel simulator's per-frame and per-event work: node records, transmissions, a frame's delivery
to every receiver, timers.

:class:`harness.sim.radio.uwb_channel.UwbNetwork` holds the settings, the random streams and the API, and its
event methods call the functions here, so that the same source also runs compiled: ``cython_ext.uwb_channel_frame``
(Cython's pure-Python mode, types in ``cython_ext/uwb_channel_frame.pxd``, built by ``make setup``), picked with
the protocol nodes' implementation (``UwbNetwork(impl=...)``, ``ONBOARD_IMPL``). Both give the same floats: the
same IEEE double operations in the same order (no fast-math, no contraction), 40-bit tick arithmetic in Python
integers. Times: ``_us`` integer microseconds (true time unless named local), ``_s`` float seconds.
"""
import math
from heapq import heappush

from harness.sim.clock import PRIORITY_DEFAULT
from onboard.comms.uwb import timestamps as T

C_MPS = T.SPEED_OF_LIGHT_MPS
TICK_HZ = T.TICK_HZ
MASK_TICKS = T.MASK_TICKS


class _Clock:
    """A node's crystal: microsecond clock and DW1000 tick counter with the same drift."""

    def __init__(self, drift_ppm, offset_us, offset_ticks):
        self.rate = 1.0 + drift_ppm * 1e-6
        self.drift_ppm = drift_ppm
        self.offset_us = offset_us
        self.offset_ticks = offset_ticks

    def local_us(self, true_us):
        """The node's microsecond clock at true time ``true_us`` (us)."""
        return self.offset_us + _floor_int(true_us * self.rate)

    def true_us_for(self, local_us):
        """The first true microsecond at which the node's clock reads ``local_us`` or later."""
        t = -_floor_int(-((local_us - self.offset_us) / self.rate))       # ceil
        while self.local_us(t) < local_us:
            t += 1
        return t

    def ticks_f(self, true_s):
        """Unwrapped tick count (float) at true time ``true_s``, before the 40-bit wrap."""
        return self.offset_ticks + true_s * self.rate * T.TICK_HZ


class _Tx:
    """One transmission: sender id, frame bytes, the true times (s) it was committed, its preamble started, its
    RMARKER (timestamp) and its end; the sender's position (m) then; its raw 40-bit TX timestamp."""
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


class _Node:
    """The channel's record of one node: its clock, true antenna delay (s), driver and protocol node, timer
    state, radio state (busy until, own TX intervals, pending frame) and the velocity it was last given."""

    def __init__(self, node_id, clock, ant_true_ticks):
        self.id = node_id
        self.clock = clock
        self.ant_true_s = ant_true_ticks / T.TICK_HZ
        self.driver = None
        self.proto = None          # driver.node: the protocol node (its vel_mps is compared, never written)
        self.alive = False
        # The armed timer is the SimClock key (time, PRIORITY_DEFAULT, arm_seq) that SimClock.reserve would
        # have returned when it was armed; its seq is taken then, its time only when it is needed (the time
        # from deadline_local and arm_now_us, see armed_time_us).
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
        self.timer_key = None      # the reference path's armed key (uwb_channel_reference)


class _Wake:
    """The SimClock event of a node's queued timer: :func:`wake` at its key."""

    def __init__(self, net, n, key):
        self.net = net
        self.n = n
        self.key = key

    def __call__(self, now_us):
        wake(self.net, self.n, self.key, now_us)


class _Deliver:
    """A SimClock event handing a node one event (``net._deliver``)."""

    def __init__(self, net, n, event):
        self.net = net
        self.n = n
        self.event = event

    def __call__(self, now_us):
        self.net._deliver(self.n, self.event, now_us)


class _FrameEnd:
    """The SimClock event at a frame's end (``net._frame_end``: :func:`frame_end` itself where the network does
    not override it)."""

    def __init__(self, net, tx):
        self.net = net
        self.tx = tx

    def __call__(self, now_us):
        net = self.net
        if net._direct_frame_end:
            frame_end(net, self.tx, now_us)
        else:
            net._frame_end(self.tx, now_us)


class Radio:
    """The radio a node's driver gets where the network does not override ``_submit_tx``: ``transmit(frame_bytes,
    dx_ticks)`` goes straight to :func:`submit_tx` (what ``uwb_channel.SimRadio`` does through the network)."""

    def __init__(self, net, n):
        self.net = net
        self.n = n

    def transmit(self, frame, dx_ticks=None):
        submit_tx(self.net, self.n, frame, dx_ticks)


# -- event plumbing of UwbNetwork (its methods of the same names without the underscore call these) -----
def set_velocity(net, n, now_us):
    """Hand the node its reported velocity (as NodeBase.set_velocity) unless it holds that very value:
    a repeated call with equal non-zero finite components changes nothing (zeros go through: the sign
    of a zero is kept; rejected values go through: they are counted)."""
    st = node_state(net, n.id, now_us)
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


def node_state(net, node_id, now_us):
    """Node ``node_id``'s ``(pos_m, vel_mps)`` at true time ``now_us`` (us), or None where the state has none:
    ``state_fn(now_us).get(node_id)`` (kept in ``net._states`` with its time, as ``net._refresh``), asked of the
    channel's own motion model or of the state_fn's ``node_state`` for this node alone where there is one (the
    same values), or the state set by ``set_state`` where there is no state_fn or it was asked at ``now_us``."""
    state_fn = net.state_fn
    if state_fn is not None and net._state_time_us != now_us:
        motion = net._motion
        if motion is not None and state_fn is motion:
            return motion.node_state(node_id, now_us)    # the same, called directly
        one = net._node_state
        if one is not None:
            return one(node_id, now_us)                  # state_fn(now_us).get(node_id), for this node alone
        net._states = state_fn(now_us)                   # net._refresh, inline
        net._state_time_us = now_us
    return net._states.get(node_id)


def handle(net, n, samples, deadline_local, now_us):
    """A node's range samples (kept, handed to ``net.on_range``) and its new deadline (armed)."""
    if samples:
        for smp in samples:
            if net.keep_samples:
                net.samples[n.id].append((now_us, smp))
            for cb in net.on_range:
                cb(n.id, smp, now_us)
    if deadline_local != n.deadline_local:
        arm(net, n, deadline_local, now_us)


def arm(net, n, deadline_local, now_us):
    """A node's new deadline (node-local us, or None): the timer takes the place in the event order that
    ``SimClock.reserve`` gives now (as call_at would), at the true time of the deadline (a deadline
    already due fires 1 us later: a node that keeps returning a past deadline cannot stall simulated
    time). A node's deadline moves on nearly every frame it hears (its silence timeout): one queued
    event per node, at or before the armed key, waits for it (see wake) instead of one per move, and
    the armed key's time is worked out only when it may come before that event (a later deadline
    never does: the true time is non-decreasing in the deadline and in the time it was armed)."""
    n.deadline_local = deadline_local
    if deadline_local is None:
        n.armed = False
        return
    cv = net._clock_vars
    if cv is not None:               # a plain SimClock: its _seq read and written as the dict item it is
        seq = cv["_seq"]             # what clock.reserve(now_us) takes (and its only effect)
        cv["_seq"] = seq + 1
    else:
        clock = net.clock
        seq = clock._seq
        clock._seq = seq + 1
    n.armed = True
    n.arm_seq = seq
    n.arm_now_us = now_us
    w = n.watch
    if w is not None and deadline_local >= n.watch_dl:
        return
    key = (armed_time_us(n), PRIORITY_DEFAULT, seq)
    if w is None or key < w:
        queue_wake(net, n, key)


def armed_time_us(n):
    """True time (us) of the node's armed deadline (at least 1 us after the time it was armed)."""
    t = n.clock.true_us_for(n.deadline_local)
    return t if t > n.arm_now_us else n.arm_now_us + 1


def queue_wake(net, n, key):
    n.watch = key
    n.watch_dl = n.deadline_local
    cv = net._clock_vars
    if cv is not None and key[0] >= cv["_now_us"]:
        # SimClock.call_reserved(key, fn) of the plain SimClock, inline: the same queue entry
        heappush(cv["_queue"], (key[0], key[1], key[2], _Wake(net, n, key)))
    else:
        net.clock.call_reserved(key, _Wake(net, n, key))


def call_at(net, time_us, fn):
    """``net.clock.call_at(time_us, fn)`` (integer ``time_us``, default priority). On a plain SimClock (its
    attributes ``net._clock_vars``, see UwbNetwork) the same queue entry and sequence number are made here
    without the interpreted method call; any other clock (or a time already passed: its error) gets the call."""
    cv = net._clock_vars
    if cv is None or time_us < cv["_now_us"]:
        net.clock.call_at(time_us, fn)
        return
    seq = cv["_seq"]
    heappush(cv["_queue"], (time_us, PRIORITY_DEFAULT, seq, fn))
    cv["_seq"] = seq + 1


def deliver_event(net, n, event, now_us):
    """One event (tx_done, tx_error, timer) to a node's driver at true time ``now_us``."""
    if not n.alive:
        return
    set_velocity(net, n, now_us)
    samples, deadline = n.driver.on_event(event, n.clock.local_us(now_us))
    handle(net, n, samples, deadline, now_us)


def wake(net, n, key, now_us):
    """A node's queued timer event: fires the timer armed at ``key``, or queues one for the timer armed
    since at its (later) key, or does nothing (superseded by an earlier event, timer gone)."""
    if n.watch is not key:
        return
    n.watch = None
    if not n.armed or not n.alive:
        return
    if n.arm_seq != key[2]:
        queue_wake(net, n, (armed_time_us(n), PRIORITY_DEFAULT, n.arm_seq))
        return
    n.armed = False
    n.deadline_local = None          # fired: a new (even equal) deadline is re-armed
    deliver_event(net, n, ("timer",), now_us)


def submit_tx(net, n, frame, dx_ticks):
    """Node ``n`` transmits ``frame`` now (``dx_ticks`` None) or as a DW1000 delayed transmission at raw time
    ``dx_ticks`` (9 LSBs ignored): a busy radio or a time less than the TX start-up ahead answers tx_error;
    otherwise the frame goes on the air (air time from its length) and its end is an event."""
    cv = net._clock_vars
    now_us = net.clock.now_us() if cv is None else cv["_now_us"]      # SimClock.now_us(), inline
    now_s = now_us * 1e-6
    if n.pending is not None or now_s < n.busy_until_s:
        net.stats["tx_busy"] += 1
        call_at(net, now_us, _Deliver(net, n, ("tx_error", "busy")))
        return
    air = net._air_cache.get(len(frame))
    if air is None:
        air = net._air_s(len(frame))
    c = n.clock
    if dx_ticks is None:
        start_s = now_s + net._tx_delay_s
        rmarker_s = start_s + net._shr_s
        raw_tx = _floor_int(c.ticks_f(rmarker_s) + 0.5) & MASK_TICKS
    else:
        dx = dx_ticks & T.DELAYED_TX_MASK
        cur = c.ticks_f(now_s)
        ahead = (dx - _floor_int(cur)) & MASK_TICKS
        rmarker_s = now_s + ahead / (c.rate * TICK_HZ) if ahead < T.HALF_WRAP_TICKS else -1.0
        start_s = rmarker_s - net._shr_s
        if start_s < now_s + net._tx_delay_s:
            net.stats["tx_late"] += 1
            call_at(net, now_us, _Deliver(net, n, ("tx_error", "late")))
            return
        raw_tx = dx
    end_s = start_s + air
    sender = n.id
    st = node_state(net, sender, now_us)
    if st is None:
        raise KeyError(sender)                 # a sender without a state (net._states[sender])
    pos = st[0]
    tx = _Tx(sender, bytes(frame), now_s, start_s, rmarker_s, end_s, pos, raw_tx)
    n.pending = tx
    n.busy_until_s = end_s
    n.tx_intervals.append((now_s, end_s))
    net._air.append(tx)
    net.stats["frames"] += 1
    if net.radio["trace"]:
        net.air_log.append((sender, start_s, end_s))
    t_event = -_floor_int(-((end_s + net._rx_lat_s) * 1e6))       # ceil
    call_at(net, max(t_event, now_us), _FrameEnd(net, tx))


def frame_end(net, tx, now_us):
    """The frame ``tx`` has reached every node (the event at its end + RX latency): tx_done to the sender,
    then :func:`deliver_frame`."""
    s = net.nodes[tx.sender]
    if s.pending is tx:
        s.pending = None
        if s.alive:
            deliver_event(net, s, ("tx_done", tx.raw_tx), now_us)
    else:
        return   # sender crashed mid-frame: the frame is cut
    prune(net, tx.start_s - 0.01)
    deliver_frame(net, tx, s, now_us)


def deliver_frame(net, tx, s, now_us):
    """Every node of ``net`` but the sender ``s`` (a _Node), in id order, either loses the frame ``tx`` (out
    of range, deaf, collision, random loss: counted in ``net.stats``) or gets it with its RX timestamp: the
    receiver's protocol node runs on it and its range samples and new deadline go back to ``net``.
    RX time (s, true): RMARKER + sender antenna delay + propagation (+ NLOS extra) + receiver antenna delay;
    its raw timestamp the receiver's tick counter at that time + RX bias + noise, rounded, 40-bit."""
    sender = tx.sender
    rc = net.radio
    stats = net.stats
    # the receivers' positions and velocities: from the motion model's arrays where the state_fn is the channel's
    # own BouncingMotion (net._motion: its positions worked out in place, no state dict; the same floats and
    # velocity tuples), else from the state_fn's state
    motion = net._motion
    if motion is not None and net.state_fn is motion:
        motion.positions_at(now_us)
        n_motion = motion._n
        mx = motion._x
        my = motion._y
        mk = motion._k
        mvels = motion._vels
        states = None
    else:
        motion = None
        n_motion = 0
        if net.state_fn is not None and net._state_time_us != now_us:       # net._refresh, inline
            net._states = net.state_fn(now_us)
            net._state_time_us = now_us
        states = net._states
    max_range_m = rc["max_range_m"]
    collisions = rc["collisions"]
    loss_prob = rc["loss_prob"]
    nlos_m = net._nlos_m
    noise_std = net._noise_std_ticks
    bias_ticks = net._bias_ticks
    hypot = math.hypot
    c_mps = C_MPS
    tick_hz = TICK_HZ
    mask = MASK_TICKS
    clock = net.clock
    cv = net._clock_vars           # a plain SimClock's attributes (its _seq a dict item), or None
    now_f = float(now_us)          # exact below 2**53 us, as in now_us * rate
    frame = tx.frame
    p = tx.pos
    p3 = len(p) == 3
    px = p[0]
    py = p[1]
    pz = p[2] if p3 else 0.0
    start_s = tx.start_s
    end_s = tx.end_s
    base_s = tx.rmarker_s + s.ant_true_s          # the first two terms of every RX time below
    # transmissions this frame could collide with anywhere in range (worked out again if the air changes: a
    # receiver's reply is appended to net._air during this loop; only prune, in frame_end, replaces the list)
    air = net._air
    n_air = -1
    others = ()
    noise_buf = net._noise_buf       # random draws popped from the end (nothing else draws while this loop runs)
    nlos_fn = net.nlos_fn            # the network's settings, read once per frame
    keep_samples = net.keep_samples
    on_range = net.on_range
    loss_buf = net._loss_buf
    deliveries = 0                   # added to stats["deliveries"] once, after the loop
    qx = 0.0                         # a receiver's position from the motion model's arrays (motion path)
    qy = 0.0
    for rn in net._receivers:
        if rn is s:
            continue
        r = rn.id
        if not rn.alive:
            continue
        if motion is not None:
            if not 0 <= r < n_motion:         # states.get(r) is None
                continue
            qx = mx[r]
            qy = my[r]
            q = None                          # (qx, qy), built where it is needed
            v = mvels[r][mk[r]]
            d = hypot(px - qx, py - qy)       # BouncingMotion is 2-D (the sender's position too)
        else:
            st = states.get(r)
            if st is None:
                continue
            q = st[0]
            v = st[1]
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
            if len(air) != n_air:
                n_air = len(air)
                far_s = end_s + max_range_m / C_MPS
                others = [o for o in air if o is not tx and o.end_s + 1e-6 >= start_s
                          and o.start_s - 1e-6 <= far_s]
            if others and _collides(others, r, q if q is not None else (qx, qy), a0, a1):
                stats["lost_collision"] += 1
                continue
        if loss_prob > 0.0:
            if not loss_buf:
                loss_buf = net._loss_buf = net._rng_loss.random(4096).tolist()
            u = loss_buf.pop()
            if u < loss_prob:
                stats["lost_random"] += 1
                continue
        if nlos_m:
            extra_m = nlos_m.get((sender, r) if sender < r else (r, sender), 0.0)
        else:
            extra_m = 0.0
        if nlos_fn is not None:
            extra_m += nlos_fn(sender, r, p, q if q is not None else (qx, qy))
        t_rx_s = base_s + prop_s + extra_m / c_mps + rn.ant_true_s
        c = rn.clock
        ticks = c.offset_ticks + t_rx_s * c.rate * tick_hz + bias_ticks
        if noise_std:
            if not noise_buf:
                noise_buf = net._noise_buf = net._rng_noise.standard_normal(4096).tolist()
            z = noise_buf.pop()
            ticks += noise_std * z
        raw_rx = _floor_int(ticks + 0.5) & mask
        deliveries += 1
        if not rn.alive:
            continue
        if v is not rn.vel and rn.driver is not None:     # _set_velocity: the same states (this time), inline
            rn.vel = v
            vx = v[0]
            vy = v[1] if len(v) > 1 else 0.0
            held = rn.proto.vel_mps
            if not (vx == held[0] and vy == held[1] and vx and vy):
                rn.driver.set_velocity(vx, vy)
        samples, deadline = rn.driver.on_rx(frame, raw_rx, c.offset_us + _floor_int(now_f * c.rate))
        if samples:
            for smp in samples:
                if keep_samples:
                    net.samples[r].append((now_us, smp))
                for cb in on_range:
                    cb(r, smp, now_us)
        if deadline != rn.deadline_local:
            # _arm, inline for the usual move of a deadline past the node's queued timer event
            if deadline is not None and rn.watch is not None and deadline >= rn.watch_dl:
                rn.deadline_local = deadline
                if cv is not None:       # clock.reserve(now_us)
                    seq = cv["_seq"]
                    cv["_seq"] = seq + 1
                else:
                    seq = clock._seq
                    clock._seq = seq + 1
                rn.armed = True
                rn.arm_seq = seq
                rn.arm_now_us = now_us
            else:
                arm(net, rn, deadline, now_us)
    stats["deliveries"] += deliveries


def _floor_int(x):
    """``int(math.floor(x))`` of a finite float (the compiled build does it in C: no Python call)."""
    i = int(x)
    return i - 1 if i > x else i


def prune(net, before_s):
    """Forget the transmissions (collision checks) and own-TX intervals (deafness) of ``net`` that ended
    before ``before_s`` (s)."""
    if net._air and net._air[0].end_s < before_s:
        net._air = [o for o in net._air if o.end_s >= before_s]
    for n in net._receivers:
        if n.tx_intervals and n.tx_intervals[0][1] < before_s:
            n.tx_intervals = [iv for iv in n.tx_intervals if iv[1] >= before_s]


def _collides(others, r, pos_r, a0, a1):
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


def _dist(a, b):
    if len(a) == 3 and len(b) == 3:
        return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)
    return math.hypot(a[0] - b[0], a[1] - b[1])
