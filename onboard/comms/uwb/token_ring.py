"""Token-ring medium access with two-way ranging (uwb paper III-A), as a pure state machine.

Only the token holder initiates. A hold is:
1. if the holder is the ring leader (lowest id in its membership) and some ids are not members:
   DISCOVER inviting ``join_window_slots`` ids (every other time the block of a member that left,
   see ``_choose_invite``); an invited non-member answers JOIN in its own slot (delayed TX at
   RX(DISCOVER) + (1 + id - invite_first) * join_slot), so joins never collide;
2. one exchange with every other member (lowest id first): DS-TWR POLL -> RESPONSE -> FINAL ->
   REPORT (both ends get the range) or SS-TWR POLL -> RESPONSE (initiator only), each reply a
   DW1000 delayed transmission ``reply_delay_us`` after the RX timestamp;
3. TOKEN (pass_no, membership bitmap) to the next member id (cyclic).

Recovery (all deterministic):
- lost/duplicated frames: every wait has a timeout; a failed exchange is retried
  ``exchange_retries`` times; frames carry seq numbers and stale or duplicate ones are ignored;
  a duplicate TOKEN (same src, epoch, pass_no: the passer's retry) is ignored, also by the node
  that is holding the token it brought.
- token pass: the passer waits ``token_ack_timeout_us`` for any frame from its successor, resends
  up to ``token_retries`` times, then drops the successor from the ring and passes to the next.
- crash / leave: a member that fails ``max_missed_holds`` consecutive holds, or cannot take the
  token, is dropped from the membership bitmap (which travels in TOKEN/DISCOVER).
- token loss: any node that hears nothing for ``silence_timeout_us + id * regen_stagger_us``
  regenerates the token with epoch + 1 (lowest id first; its first frame silences the others).
- two tokens: a holder that hears a holder frame (POLL/FINAL/TOKEN/DISCOVER) of another node
  keeps the token only if its own is newer (epoch, mod 256) or, when neither epoch is newer (equal,
  or 128 apart), its id is lower.
- join / rejoin: a (re)started node listens; it answers POLLs and TOKENs addressed to it and
  joins through DISCOVER; if it hears nothing it regenerates and forms a ring of its own, and
  two rings merge through the two-token rule.
Node ids are 0..31 (32-bit membership bitmap).
"""
from . import frames as F
from . import timestamps as T
from .config import RING_MAX_IDS, merged_config
from .node_base import NodeBase

IDLE = "idle"
DISCOVERING = "discovering"
GAP = "gap"
POLL_SENT = "poll_sent"
WAIT_RESP = "wait_resp"
FINAL_SENT = "final_sent"
WAIT_REPORT = "wait_report"
PASS_SENT = "pass_sent"
LONE = "lone"
EXCHANGE_STATES = (POLL_SENT, WAIT_RESP, FINAL_SENT, WAIT_REPORT)
# frame types as names of this module for the per-frame path (C ints in the compiled build, token_ring.pxd)
_POLL, _RESPONSE, _FINAL, _REPORT, _TOKEN, _DISCOVER, _JOIN = (F.POLL, F.RESPONSE, F.FINAL, F.REPORT, F.TOKEN,
                                                               F.DISCOVER, F.JOIN)


def recovery_bound_us(config, n_nodes, max_id=RING_MAX_IDS - 1):
    """Upper bound (us) on how long after a single crash every surviving pair is ranged again.

    Token regeneration (if the holder crashed): silence_timeout + max_id * regen_stagger; then
    two rounds of worst-case holds, each: DISCOVER window + (n - 1) failed exchanges (all
    attempts time out) + a failed token pass (all retries) + the pass to the next member.
    Stated for a channel without random loss; with loss it holds with high probability.
    """
    c = merged_config(config)
    reply, margin, turn = c["reply_delay_us"], c["frame_margin_us"], c["turnaround_us"]
    attempt = turn + (reply + margin) + (2 * reply + margin)
    ex_fail = (1 + c["exchange_retries"]) * attempt
    window = (c["join_window_slots"] + 1) * c["join_slot_us"] + margin
    pass_fail = (2 + c["token_retries"]) * c["token_ack_timeout_us"]
    hold = window + (n_nodes - 1) * ex_fail + pass_fail
    return c["silence_timeout_us"] + max_id * c["regen_stagger_us"] + 2 * n_nodes * hold


def epoch_newer(a, b):
    """True when token epoch ``a`` is newer than ``b`` (8-bit, wrap-around). Epochs 128 apart: neither is
    newer (the two-token rule then keeps the lower id's token)."""
    d = (a - b) & 0xFF
    return 0 < d < 128


class TokenRingNode(NodeBase):
    def __init__(self, node_id, config=None):
        NodeBase.__init__(self, node_id, config)
        cfg = self.cfg
        self.bit = 1 << node_id
        self.reply_ticks = T.us_to_ticks(cfg["reply_delay_us"])
        self._silence_us = cfg["silence_timeout_us"] + node_id * cfg["regen_stagger_us"]
        self.holder = False
        self.epoch = 0
        self.members = self.bit
        self.state = IDLE
        self.deadline_us = None
        self.silence_deadline_us = None
        self.pass_no = 0
        self.seq = 0
        self._targets = []
        self._ti = 0
        self._attempt = 0
        self._peer = None
        self._ex_seq = 0
        self._tx_poll = 0
        self._rx_resp = 0
        self._tx_final = 0
        self._tx_kind = None
        self._missed = {}
        self._responder = {}
        self._last_token = None
        self._pass_to = None
        self._pass_tries = 0
        self._invite_block = 0
        self._discovers = 0
        self._left = 0                  # bitmap: ids seen leaving the membership (dropped, crashed)
        for k in ("token_regenerations", "token_conflicts_lost", "token_conflicts_won", "token_passes",
                  "token_pass_retries", "token_duplicates", "members_dropped", "exchanges_ok",
                  "exchanges_failed", "exchange_retries", "joins_sent", "joins_accepted", "holds"):
            self._stats[k] = 0

    # -- public ------------------------------------------------------------------
    def is_member(self):
        return bool(self.members & self.bit)

    def member_ids(self):
        return [i for i in range(RING_MAX_IDS) if self.members & (1 << i)]

    def start(self, now_us):
        """Power-on: listen; regenerate the token if nothing is heard."""
        self._reset_silence(now_us)
        return [], self._next_deadline()

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
            self._on_tx_done(event[1], now_us, acts)
        elif kind == "tx_error":
            self._stats["tx_errors"] += 1
            self._on_tx_error(now_us, acts)
        elif kind == "timer":
            self._on_timer(now_us, acts)
        else:
            self._stats["ignored"] += 1
        return acts, self._next_deadline()

    # -- helpers -----------------------------------------------------------------
    def _next_deadline(self):
        d = self.deadline_us
        if not self.holder and self.silence_deadline_us is not None:
            if d is None or self.silence_deadline_us < d:
                d = self.silence_deadline_us
        return d

    def _reset_silence(self, now_us):
        self.silence_deadline_us = now_us + self._silence_us

    def _next_seq(self):
        self.seq = (self.seq + 1) & 0xFF
        return self.seq

    def _tx(self, acts, frame, dx_ticks, kind):
        self._tx_kind = kind
        acts.append(("tx", frame.encode(), dx_ticks))

    def _frame(self, ftype, dst, seq, **fields):
        return F.make(ftype, self.id, dst, seq, self.epoch, self.vel_mps, **fields)

    def _successor(self, after_id):
        """Next member id after ``after_id`` in ring order, excluding self; None when alone."""
        for k in range(1, RING_MAX_IDS):
            i = (after_id + k) % RING_MAX_IDS
            if i != self.id and self.members & (1 << i):
                return i
        return None

    def _drop_member(self, peer):
        if self.members & (1 << peer):
            self.members &= ~(1 << peer)
            self._left |= 1 << peer
            self._stats["members_dropped"] += 1
        self._missed.pop(peer, None)

    def _adopt_members(self, members):
        """Take the ring's membership bitmap from a frame, remembering the ids that left it."""
        self._left |= self.members & ~members & ~self.bit
        self.members = members

    # -- timers ------------------------------------------------------------------
    def _on_timer(self, now_us, acts):
        if self.deadline_us is not None and now_us >= self.deadline_us:
            self.deadline_us = None
            self._state_timeout(now_us, acts)
        if (not self.holder and self.state != PASS_SENT and self.silence_deadline_us is not None
                and now_us >= self.silence_deadline_us):
            self._regenerate(now_us, acts)

    def _state_timeout(self, now_us, acts):
        s = self.state
        if s == DISCOVERING:
            self._next_exchange(now_us, acts)
        elif s == GAP:
            self._start_exchange(now_us, acts)
        elif s in EXCHANGE_STATES:
            self._attempt_failed(now_us, acts)
        elif s == PASS_SENT:
            self._pass_timeout(now_us, acts)
        elif s == LONE:
            self._begin_hold(now_us, acts)

    # -- holder ------------------------------------------------------------------
    def _regenerate(self, now_us, acts):
        self.epoch = (self.epoch + 1) & 0xFF
        self.members |= self.bit
        self.pass_no = 0
        self._stats["token_regenerations"] += 1
        self._begin_hold(now_us, acts)

    def _choose_invite(self):
        """First id of the block of ``join_window_slots`` ids the next DISCOVER invites (None: every id
        is a member). Every other DISCOVER invites the block of the lowest id that left the ring and has
        not rejoined (a crashed or restarted member is back within two leader holds), or, with none, the
        lowest block with free ids (where ids are handed out first); the other DISCOVERs rotate over all
        blocks with free ids, so a new id is invited within 2 * RING_MAX_IDS / join_window_slots holds.
        (Rotation alone let a restarted member wait up to four leader holds plus a lost frame's round:
        600 ms at 3 % frame loss with 6 nodes, against 70-140 ms without loss.)"""
        w = self.cfg["join_window_slots"]
        nblocks = RING_MAX_IDS // w
        full = (1 << RING_MAX_IDS) - 1
        free = ~self.members & full
        if not free:
            return None
        self._discovers += 1
        if self._discovers & 1:
            wanted = self._left & free or free
            for i in range(RING_MAX_IDS):
                if wanted & (1 << i):
                    return i - i % w
        for k in range(nblocks):         # some block has free ids (free != 0): the loop returns
            b = (self._invite_block + k) % nblocks
            first = b * w
            if free & (((1 << w) - 1) << first):
                self._invite_block = (b + 1) % nblocks
                return first

    def _begin_hold(self, now_us, acts):
        self.holder = True
        self.members |= self.bit        # a holder is a member (a bitmap adopted while passing may lack it)
        self._stats["holds"] += 1
        ids = self.member_ids()
        self._targets = [i for i in ids if i != self.id]
        self._ti = 0
        first = self._choose_invite() if ids[0] == self.id else None
        if first is not None:
            c = self.cfg
            w = c["join_window_slots"]
            f = self._frame(F.DISCOVER, F.BROADCAST_ID, self._next_seq(), invite_first=first,
                            invite_count=w, join_slot_us=c["join_slot_us"], members=self.members)
            self._tx(acts, f, None, F.DISCOVER)
            self.state = DISCOVERING
            self.deadline_us = now_us + (w + 1) * c["join_slot_us"] + c["frame_margin_us"]
        else:
            self._next_exchange(now_us, acts)

    def _next_exchange(self, now_us, acts):
        while self._ti < len(self._targets):
            if self.members & (1 << self._targets[self._ti]):
                self._attempt = 0
                self.state = GAP
                self.deadline_us = now_us + self.cfg["turnaround_us"]
                return
            self._ti += 1
        self._pass_token(now_us, acts)

    def _start_exchange(self, now_us, acts):
        self._peer = self._targets[self._ti]
        self._ex_seq = self._next_seq()
        self._tx(acts, self._frame(F.POLL, self._peer, self._ex_seq), None, F.POLL)
        self.state = POLL_SENT
        self.deadline_us = now_us + self.cfg["reply_delay_us"] + self.cfg["frame_margin_us"]

    def _attempt_failed(self, now_us, acts):
        self._attempt += 1
        if self._attempt <= self.cfg["exchange_retries"]:
            self._stats["exchange_retries"] += 1
            self.state = GAP
            self.deadline_us = now_us + self.cfg["turnaround_us"]
            return
        self._stats["exchanges_failed"] += 1
        peer = self._peer
        self._missed[peer] = self._missed.get(peer, 0) + 1
        if self._missed[peer] >= self.cfg["max_missed_holds"]:
            self._drop_member(peer)
        self._ti += 1
        self._next_exchange(now_us, acts)

    def _exchange_ok(self, now_us, acts):
        self._stats["exchanges_ok"] += 1
        self._missed[self._peer] = 0
        self._ti += 1
        self._next_exchange(now_us, acts)

    def _pass_token(self, now_us, acts):
        nxt = self._successor(self.id)
        if nxt is None:
            self.state = LONE
            self.deadline_us = now_us + self.cfg["lone_period_us"]
            self.pass_no = (self.pass_no + 1) & 0xFFFF
            return
        self.holder = False
        self.pass_no = (self.pass_no + 1) & 0xFFFF
        self._pass_to = nxt
        self._pass_tries = 0
        self._send_token(now_us, acts)

    def _send_token(self, now_us, acts):
        self._stats["token_passes"] += 1
        f = self._frame(F.TOKEN, self._pass_to, self._next_seq(), pass_no=self.pass_no, members=self.members)
        self._tx(acts, f, None, F.TOKEN)
        self.state = PASS_SENT
        self.deadline_us = now_us + self.cfg["token_ack_timeout_us"]

    def _pass_timeout(self, now_us, acts):
        self._pass_tries += 1
        if self._pass_tries <= self.cfg["token_retries"]:
            self._stats["token_pass_retries"] += 1
            self._send_token(now_us, acts)
            return
        # The successor is gone: drop it and pass to the one after it (or keep the token).
        dead = self._pass_to
        self._drop_member(dead)
        self._pass_to = None
        nxt = self._successor(dead)
        if nxt is None:
            self.state = IDLE
            self._begin_hold(now_us, acts)
            return
        self._pass_to = nxt
        self._pass_tries = 0
        self._send_token(now_us, acts)

    # -- radio events -------------------------------------------------------------
    def _on_tx_done(self, raw_tx, now_us, acts):
        self._stats["tx"] += 1
        self._reset_silence(now_us)
        if not isinstance(raw_tx, int) or raw_tx < 0 or raw_tx > T.MASK_TICKS:
            self._stats["bad_timestamps"] += 1      # not a 40-bit tick count: the exchange times out
            return
        if self.state == POLL_SENT and self._tx_kind == F.POLL:
            self._tx_poll = T.apply_tx_antenna_delay(raw_tx, self.ant)
            self.state = WAIT_RESP
        elif self.state == FINAL_SENT and self._tx_kind == F.FINAL:
            self.state = WAIT_REPORT

    def _on_tx_error(self, now_us, acts):
        if self.holder and self.state in EXCHANGE_STATES and self._tx_kind in (F.POLL, F.FINAL):
            self.deadline_us = None
            self._attempt_failed(now_us, acts)

    def _on_rx(self, data, raw_rx, now_us, acts):
        f = self._decode(data)
        if f is None:
            return
        self.silence_deadline_us = now_us + self._silence_us     # _reset_silence
        if f.src == self.id:
            self._stats["ignored"] += 1
            return
        if not isinstance(raw_rx, int) or raw_rx < 0 or raw_rx > T.MASK_TICKS:
            self._stats["bad_timestamps"] += 1      # not a 40-bit tick count: the frame is dropped
            return
        t = f.type
        if t == _TOKEN and f.dst == self.id and (f.src, f.epoch, f.pass_no) == self._last_token:
            self._stats["token_duplicates"] += 1    # the passer's retry: the token is already here
            return
        if t == _POLL or t == _FINAL or t == _TOKEN or t == _DISCOVER:      # t in F.HOLDER_TYPES
            if self.holder:
                if epoch_newer(f.epoch, self.epoch) or (f.src < self.id and not epoch_newer(self.epoch, f.epoch)):
                    self._stats["token_conflicts_lost"] += 1
                    self.holder = False
                    self.state = IDLE
                    self.deadline_us = None
                    self.epoch = f.epoch
                else:
                    self._stats["token_conflicts_won"] += 1
                    return
            else:
                self.epoch = f.epoch    # follow the ring's current token
        if f.src == self._pass_to and self.state == PASS_SENT:
            self.state = IDLE           # the successor is acting on the token
            self.deadline_us = None
        if t == _POLL:
            if f.dst == self.id:
                self._respond_poll(f, raw_rx, acts)
        elif t == _RESPONSE:
            if self.holder and self._expecting(f, WAIT_RESP):     # only the holder expects one
                self._on_response(f, raw_rx, now_us, acts)
            elif f.dst == self.id:
                self._stats["ignored"] += 1     # stale or duplicate
        elif t == _FINAL:
            if f.dst == self.id:
                self._respond_final(f, raw_rx, now_us, acts)
        elif t == _REPORT:
            if self.holder and self._expecting(f, WAIT_REPORT) and len(f.ts) == 3:
                self._on_report(f, now_us, acts)
            elif f.dst == self.id:
                self._stats["ignored"] += 1     # stale or duplicate
        elif t == _TOKEN:
            if f.dst == self.id:
                self._on_token(f, now_us, acts)
            elif not self.holder:
                self._adopt_members(f.members)
        elif t == _DISCOVER:
            if not self.holder:
                self._adopt_members(f.members)
                self._maybe_join(f, raw_rx, acts)
        elif t == _JOIN:
            if self.holder and self.state == DISCOVERING and f.dst == self.id and f.src < RING_MAX_IDS:
                self.members |= 1 << f.src
                self._missed[f.src] = 0
                self._stats["joins_accepted"] += 1
                if f.src not in self._targets:
                    self._targets.append(f.src)
                    self._targets.sort()
        else:
            self._stats["ignored"] += 1

    def _expecting(self, f, state):
        return (self.holder and self.state == state and f.dst == self.id and f.src == self._peer
                and f.seq == self._ex_seq)

    def _on_response(self, f, raw_rx, now_us, acts):
        self._rx_resp = T.apply_rx_antenna_delay(raw_rx, self.ant)
        if self.cfg["twr"] == "ss":
            if len(f.ts) != 2:
                self._stats["ignored"] += 1
                return
            try:
                r = T.ss_twr_range_m(self._tx_poll, self._rx_resp, f.ts[0], f.ts[1])
            except T.TimestampError:
                self._stats["bad_timestamps"] += 1
                self.deadline_us = None
                self._attempt_failed(now_us, acts)
                return
            acts.append(self._sample(now_us, f.src, r, f))
            self._exchange_ok(now_us, acts)
            return
        dx = T.delayed_tx_time(raw_rx, self.reply_ticks)
        self._tx_final = T.delayed_tx_timestamp(dx, self.ant)
        fin = self._frame(F.FINAL, self._peer, self._ex_seq, ts=(self._tx_poll, self._rx_resp, self._tx_final))
        self._tx(acts, fin, dx, F.FINAL)
        self.state = FINAL_SENT
        self.deadline_us = now_us + 2 * self.cfg["reply_delay_us"] + self.cfg["frame_margin_us"]

    def _on_report(self, f, now_us, acts):
        rx_poll, tx_resp, rx_final = f.ts
        try:
            r = T.ds_twr_range_m(self._tx_poll, self._rx_resp, self._tx_final, rx_poll, tx_resp, rx_final)
        except T.TimestampError:
            self._stats["bad_timestamps"] += 1
            self.deadline_us = None
            self._attempt_failed(now_us, acts)
            return
        acts.append(self._sample(now_us, f.src, r, f))
        self._exchange_ok(now_us, acts)

    def _respond_poll(self, f, raw_rx, acts):
        rx_poll = T.apply_rx_antenna_delay(raw_rx, self.ant)
        dx = T.delayed_tx_time(raw_rx, self.reply_ticks)
        tx_resp = T.delayed_tx_timestamp(dx, self.ant)
        self._responder[f.src] = (f.seq, rx_poll, tx_resp)
        ts = (rx_poll, tx_resp) if self.cfg["twr"] == "ss" else ()
        self._tx(acts, self._frame(F.RESPONSE, f.src, f.seq, ts=ts), dx, F.RESPONSE)

    def _respond_final(self, f, raw_rx, now_us, acts):
        entry = self._responder.get(f.src)
        if entry is None or entry[0] != f.seq:
            self._stats["ignored"] += 1
            return
        del self._responder[f.src]
        seq, rx_poll, tx_resp = entry
        rx_final = T.apply_rx_antenna_delay(raw_rx, self.ant)
        tx_poll, rx_resp, tx_final = f.ts
        try:
            r = T.ds_twr_range_m(tx_poll, rx_resp, tx_final, rx_poll, tx_resp, rx_final)
        except T.TimestampError:
            self._stats["bad_timestamps"] += 1
            return
        acts.append(self._sample(now_us, f.src, r, f))
        dx = T.delayed_tx_time(raw_rx, self.reply_ticks)
        rep = self._frame(F.REPORT, f.src, seq, ts=(rx_poll, tx_resp, rx_final))
        self._tx(acts, rep, dx, F.REPORT)

    def _on_token(self, f, now_us, acts):
        key = (f.src, f.epoch, f.pass_no)
        if key == self._last_token:
            self._stats["token_duplicates"] += 1
            return
        self._last_token = key
        self.epoch = f.epoch
        self.pass_no = f.pass_no
        self._adopt_members(f.members | self.bit)
        self.state = IDLE
        self.deadline_us = None
        self._begin_hold(now_us, acts)

    def _maybe_join(self, f, raw_rx, acts):
        first = f.invite_first
        if f.members & self.bit or not first <= self.id < first + f.invite_count:
            return
        slot_ticks = T.us_to_ticks(f.join_slot_us)
        dx = T.delayed_tx_time(raw_rx, (1 + self.id - first) * slot_ticks)
        self._stats["joins_sent"] += 1
        self._tx(acts, self._frame(F.JOIN, f.src, f.seq), dx, F.JOIN)
