"""Scalable broadcast ranging: one message per node per round (pure, MicroPython-compatible).

Every node sends one BCAST per round carrying (frames.py) its previous BCAST's TX timestamp
``tx_prev`` and, for each neighbour j, the seq and RX timestamp of j's last BCAST it heard.
A round costs N messages instead of the token ring's ~4 N (N - 1) (DS-TWR with REPORT).

Range computation. Node j receives BCAST M (seq s) from node i at its RX timestamp. It uses
the three messages Q0 -> P -> Q (in time order):
    P  = i's BCAST s-1   (j kept its RX time Rp; M carries P's TX time Tp = tx_prev)
    Q  = j's BCAST q whose RX time Rq at i is reported in M          (j kept Tq)
    Q0 = j's BCAST q0 whose RX time Rq0 at i was reported in P        (j kept Tq0)
and the asymmetric DS-TWR formula (timestamps.ds_twr_tof_ticks) with j as the initiator:
    round1 = Rp - Tq0,  reply1 = Tp - Rq0,  round2 = Rq - Tp,  reply2 = Tq - Rp.
All needed values are on hand when M arrives, so every received BCAST yields one range: each
node gets a range to every neighbour once per round. The formula is robust to clock drift
for any reply asymmetry (error ~ tof * (e_i + e_j) / 2); the ordering Tq0 < Rp < Tq and
Rq0 < Tp < Rq is checked (wrap-aware) and violated triples are counted, not used. The range
refers to the interval Q0..Q (about one round), so it lags by about half a round.

Medium access: self-timed TDMA. The active set is {self} plus every neighbour heard in the last
``neighbour_timeout_us``, in id order, followed by one join slot. After hearing node k (at the
end of its frame), a node sends ``d * slot_us`` later, where d is its distance after k in that
cyclic order. A node powering on listens ``listen_us + id * join_stagger_us``; if it heard
nobody it starts a round alone, otherwise it sends in the join slot (right after the highest-id
node still heard within ``neighbour_timeout_us``) and, until another node reports having heard it, retries
there after a deterministic pseudo-random back-off of 1..4 rounds; a joining node that hears nobody for
``neighbour_timeout_us + slot_us + id * join_stagger_us`` starts a round alone. A crashed node's slot stays
empty until it times out.
"""
from . import frames as F
from . import timestamps as T
from .frames import _pack_int_entry
from .node_base import NodeBase

_HIST = 8   # own TX timestamps kept (by seq)
_MASK = T.MASK_TICKS
_HALF = T.HALF_WRAP_TICKS
_BCAST = F.BCAST
_ENTRY_LEN = F.BCAST_ENTRY_LEN
_NO_TIMESTAMP = F.NO_TIMESTAMP
_METERS_PER_TICK = T.METERS_PER_TICK
_PRODUCT_SAFE = 1 << 31    # intervals below this: DS-TWR's products fit in 63 bits (C integers where compiled)
_RAW_MAX = T.MASK_TICKS    # the largest raw timestamp (a Python int where compiled: compared with the raw object)


class Neighbour:
    """What a node keeps of one neighbour (its table ``_nbr``, by id): ``seq`` and ``rx_ts`` (40-bit ticks, own
    clock) of the neighbour's last BCAST heard, ``mine_seq`` and ``mine_rx_ts`` the entry for our own BCAST that
    it reported in that BCAST (seq -1: none) and ``heard_us`` when it was heard (node-local us)."""

    def __init__(self, seq, rx_ts, mine_seq, mine_rx_ts, heard_us):
        self.seq = seq
        self.rx_ts = rx_ts
        self.mine_seq = mine_seq
        self.mine_rx_ts = mine_rx_ts
        self.heard_us = heard_us


class BroadcastNode(NodeBase):
    def __init__(self, node_id, config=None):
        NodeBase.__init__(self, node_id, config)
        self.seq = 0
        self.joined = False
        self.started_us = None
        self.tx_deadline_us = None
        self.listen_deadline_us = None
        self._hist = {}
        self._nbr = {}        # id -> Neighbour
        self._active = []     # schedule (ids ascending), refreshed at each own TX and on new ids
        self._slot_of = {}    # id -> its index in _active
        self._own_slot = -1   # _slot_of[own id], -1 while not in _active
        self._join_wait = 0
        self._join_attempted = False
        self._lcg = (node_id * 2654435761 + 12345) & 0x7FFFFFFF
        self._slot_us = self.cfg["slot_us"]            # settings read on every frame
        self._timeout_us = self.cfg["neighbour_timeout_us"]
        self._max_entries = self.cfg["max_broadcast_entries"]
        for k in ("rounds", "join_attempts", "neighbours_expired", "duplicates"):
            self._stats[k] = 0

    def start(self, now_us):
        c = self.cfg
        self.started_us = now_us
        self.listen_deadline_us = now_us + c["listen_us"] + self.id * c["join_stagger_us"]
        return [], self._next_deadline()

    def active_ids(self, now_us):
        """Ids in this node's schedule (self included once joined), ascending; recomputed from
        the neighbour table (who was heard within ``neighbour_timeout_us``)."""
        timeout = self._timeout_us
        ids = []
        for i in self._nbr:
            if now_us - self._nbr[i].heard_us <= timeout:
                ids.append(i)
        if self.joined:
            ids.append(self.id)
        ids.sort()
        return ids

    def on_rx(self, data, raw_rx_ticks, now_us):
        acts = []
        self._on_rx(data, raw_rx_ticks, now_us, acts)
        return acts, self._next_deadline()

    def on_event(self, event, now_us):
        acts = []
        kind = event[0]
        if kind == "rx":
            self._on_rx(event[1], event[2], now_us, acts)
        elif kind == "tx_done":
            self._stats["tx"] += 1
            raw = event[1]
            if not isinstance(raw, int) or raw < 0 or raw > _RAW_MAX:
                self._stats["bad_timestamps"] += 1      # not a 40-bit tick count: this BCAST's time stays unknown
            else:
                self._hist[self.seq] = T.apply_tx_antenna_delay(raw, self.ant)
            self._hist.pop((self.seq - _HIST) & 0xFF, None)
        elif kind == "tx_error":
            self._stats["tx_errors"] += 1
        elif kind == "timer":
            self._on_timer(now_us, acts)
        else:
            self._stats["ignored"] += 1
        return acts, self._next_deadline()

    def _next_deadline(self):
        d = self.tx_deadline_us
        if self.listen_deadline_us is not None and (d is None or self.listen_deadline_us < d):
            d = self.listen_deadline_us
        return d

    def _rand(self):
        self._lcg = (self._lcg * 1103515245 + 12345) & 0x7FFFFFFF
        return self._lcg >> 16

    def _on_timer(self, now_us, acts):
        if self.listen_deadline_us is not None and now_us >= self.listen_deadline_us:
            self.listen_deadline_us = None
            if not self.active_ids(now_us):
                self.joined = True          # nobody around: start a round alone
                self._transmit(now_us, acts)
                return
            if self.tx_deadline_us is None:
                # joining; should everyone heard go silent, this deadline starts a round alone
                self.tx_deadline_us = now_us + self._alone_after_us()
        if self.tx_deadline_us is not None and now_us >= self.tx_deadline_us:
            if not self.joined and not self.active_ids(now_us):
                self.joined = True          # joining, and everyone heard went silent: start a round alone
            self._transmit(now_us, acts)

    def _alone_after_us(self):
        """How long a joining node waits, hearing nobody, before it starts a round alone (us): the neighbour
        timeout, one slot, and ``id * join_stagger_us`` (so that joining nodes left alone together start in
        turn, as at power-on, and the later ones join the first)."""
        return self._timeout_us + self._slot_us + self.id * self.cfg["join_stagger_us"]

    def _set_active(self, ids):
        self._active = ids
        self._slot_of = {i: k for k, i in enumerate(ids)}
        self._own_slot = self._slot_of.get(self.id, -1)

    def _transmit(self, now_us, acts):
        self.tx_deadline_us = None
        timeout = self._timeout_us
        max_entries = self._max_entries
        nbr = self._nbr
        # (id, seq, rx_ts) of each neighbour reported, packed as the frame carries them (frames.pack_entry)
        n_max = len(nbr) if len(nbr) < max_entries else max_entries
        entries = bytearray(n_max * _ENTRY_LEN)
        off = 0
        ids = []                              # the neighbours heard within the timeout, ascending
        for i in sorted(nbr):
            rec = nbr[i]
            if now_us - rec.heard_us <= timeout:
                ids.append(i)
                if off < len(entries):
                    _pack_int_entry(entries, off, i, rec.seq, rec.rx_ts)   # (frames.pack_entry: integers)
                    off += _ENTRY_LEN
            else:
                del nbr[i]
                self._stats["neighbours_expired"] += 1
        prev = self._hist.get(self.seq, _NO_TIMESTAMP)   # TX time of the BCAST with seq = new seq - 1
        self.seq = (self.seq + 1) & 0xFF
        self._hist.pop(self.seq, None)      # a time kept for this seq 256 BCASTs ago (its tx_done may not come)
        # F.make(F.BCAST, self.id, F.BROADCAST_ID, self.seq, 0, self.vel_mps, tx_prev=prev, entries=entries)
        f = F.Frame(_BCAST, self.id, F.BROADCAST_ID, self.seq, 0, self.vel_mps)
        f.tx_prev = prev
        f.set_entry_bytes(bytes(entries) if off == len(entries) else bytes(entries[:off]))
        acts.append(("tx", f.encode(), None))
        self._stats["rounds"] += 1
        if self.joined:                      # self.active_ids(now_us): what is left in _nbr is within the timeout
            ids.append(self.id)
            ids.sort()
        if ids != self._active:              # the same ids keep the same slots
            self._set_active(ids)
        if self.joined:
            # fallback if nobody else is heard: our next turn one round later
            self.tx_deadline_us = now_us + (len(self._active) + 1) * self._slot_us
        else:
            # a join attempt: should nobody be heard from now on, start a round alone
            self.tx_deadline_us = now_us + self._alone_after_us()

    def _on_rx(self, data, raw_rx, now_us, acts):
        f = self._decode(data)
        if f is None:
            return
        i = f.src
        if f.type != _BCAST or i == self.id:
            self._stats["ignored"] += 1
            return
        seq = f.seq
        prev = self._nbr.get(i)
        if prev is not None and prev.seq == seq:
            self._stats["duplicates"] += 1
            return
        # the raw RX timestamp: an integer within 40 bits, else counted and the frame dropped (checked before any
        # conversion: the compiled build holds it in a C integer only from here on)
        if not isinstance(raw_rx, int) or raw_rx < 0 or raw_rx > _RAW_MAX:
            self._stats["bad_timestamps"] += 1
            return
        raw = raw_rx
        rx = raw - self.ant                      # T.apply_rx_antenna_delay, inline
        rx &= _MASK
        at = f.entry_offset(self.id)             # f.entry_for(self.id): (q, rq) or None
        q = -1
        rq = 0
        if at >= 0:
            q = f.entry_seq_at(at)
            rq = f.entry_ts_at(at)
            if not self.joined:
                self.joined = True               # someone heard us: we are in the schedule
                self.listen_deadline_us = None
                self._set_active([])
        if prev is None:
            self._nbr[i] = Neighbour(seq, rx, q, rq, now_us)
            self._set_active(self.active_ids(now_us))
        else:
            if q >= 0 and prev.mine_seq >= 0 and prev.seq == ((seq - 1) & 0xFF) and f.tx_prev != _NO_TIMESTAMP:
                self._range(i, f, prev, q, rq, now_us, acts)
            prev.seq = seq                   # the record now holds this BCAST (nothing else keeps the old values)
            prev.rx_ts = rx
            prev.mine_seq = q
            prev.mine_rx_ts = rq
            prev.heard_us = now_us
            if i not in self._slot_of:
                self._set_active(self.active_ids(now_us))
        self._schedule_after(i, now_us)

    def _range(self, i, f, prev, q, rq, now_us, acts):
        """The DS-TWR range to neighbour ``i`` from its BCAST ``f`` (reporting our BCAST ``q`` heard at ``rq``) and
        its previous one (``prev``: reporting our ``q0`` heard at ``rq0``); a range sample in ``acts``."""
        q0 = prev.mine_seq
        rq0 = prev.mine_rx_ts
        if q0 == q:
            return                      # no new message of ours in between
        h0 = self._hist.get(q0)
        h = self._hist.get(q)
        if h0 is None or h is None:
            return
        tq0 = h0
        tq = h
        rp = prev.rx_ts
        tp = f.tx_prev
        # T.interval_ticks of each, all four checked at once: positive and under half a wrap
        round1 = (rp - tq0) & _MASK
        reply1 = (tp - rq0) & _MASK
        round2 = (rq - tp) & _MASK
        reply2 = (tq - rp) & _MASK
        if not (0 < round1 < _HALF and 0 < reply1 < _HALF and 0 < round2 < _HALF and 0 < reply2 < _HALF):
            self._stats["bad_timestamps"] += 1
            return
        if round1 < _PRODUCT_SAFE and reply1 < _PRODUCT_SAFE and round2 < _PRODUCT_SAFE and reply2 < _PRODUCT_SAFE:
            # T.ds_twr_tof_ticks, inline: the exact integer numerator, one rounding to float, one division
            tof = float(round1 * round2 - reply1 * reply2) / float(round1 + round2 + reply1 + reply2)
        else:
            tof = T.ds_twr_tof_ticks(round1, reply1, round2, reply2)
        acts.append(self._sample(now_us, i, tof * _METERS_PER_TICK, f))

    def _schedule_after(self, k, now_us):
        slot = self._slot_us
        ids = self._active
        if self.joined:
            n = len(ids)
            slot_of = self._slot_of
            mine = self._own_slot
            if mine < 0:
                mine = slot_of[self.id]          # not in the schedule: KeyError
            theirs = slot_of[k]
            d = (mine - theirs) % (n + 1)
            self.tx_deadline_us = now_us + d * slot
            return
        if self.listen_deadline_us is not None:
            return
        if self.tx_deadline_us is None or self.tx_deadline_us > now_us + slot:
            # no join attempt due: start a round alone if nobody is heard for a while (_alone_after_us)
            self.tx_deadline_us = now_us + self._alone_after_us()
        last = ids[-1]
        rec = self._nbr.get(last)
        if last != k and (rec is None or now_us - rec.heard_us > self._timeout_us):
            # the highest id went silent (crashed, left): the join slot now follows the highest id still heard
            self._set_active(self.active_ids(now_us))
            ids = self._active
            last = ids[-1]
        if k != last:
            return
        # joining: the join slot follows the highest-id node
        if self._join_wait > 0:
            self._join_wait -= 1
            return
        self._stats["join_attempts"] += 1
        self._join_wait = 1 + self._rand() % 4
        self.tx_deadline_us = now_us + slot
