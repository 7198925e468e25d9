"""The UWB channel simulator's straightforward event handling, kept as the reference for its fast paths.

:class:`ReferenceUwbNetwork` is :class:`harness.sim.radio.uwb_channel.UwbNetwork` (same radio model,
settings, random streams and onboard protocol nodes) with the per-frame work done the plain way:
every receiver of a frame goes through the general ``_deliver``/``_handle`` path, the velocity is
handed to a node whenever the state object changed, the geometry and collision candidates are
worked out per receiver, and every timer move reserves its SimClock key at once. Same seed, same
results (tests/unit/test_uwb_channel_speedup.py); ``bench/uwb.py`` times both side by side.
"""
import math

from harness.sim.radio.uwb_channel import C_MPS, UwbNetwork, _dist
from onboard.comms.uwb import timestamps as T


class ReferenceUwbNetwork(UwbNetwork):
    """UwbNetwork with the plain per-receiver event handling (slower, identical results)."""

    def crash(self, node_id):
        UwbNetwork.crash(self, node_id)
        self.nodes[node_id].timer_key = None

    def _set_velocity(self, n, now_us):
        self._refresh(now_us)
        st = self._states.get(n.id)
        if st is not None and n.driver is not None and st[1] is not n.vel:
            v = st[1]
            n.vel = v
            n.driver.set_velocity(v[0], v[1] if len(v) > 1 else 0.0)

    def _handle(self, n, samples, deadline_local, now_us):
        if samples:
            for s in samples:
                if self.keep_samples:
                    self.samples[n.id].append((now_us, s))
                for cb in self.on_range:
                    cb(n.id, s, now_us)
        if deadline_local != n.deadline_local:
            n.deadline_local = deadline_local
            n.timer_key = None
            if deadline_local is not None:
                t = n.clock.true_us_for(deadline_local)
                if t <= now_us:
                    t = now_us + 1
                key = self.clock.reserve(t)
                n.timer_key = key
                if n.watch is None or key < n.watch:
                    n.watch = key
                    self.clock.call_reserved(key, lambda now, n=n, key=key: self._wake(n, key, now))

    def _deliver(self, n, event, now_us):
        if not n.alive:
            return
        self._set_velocity(n, now_us)
        samples, deadline = n.driver.on_event(event, n.clock.local_us(now_us))
        self._handle(n, samples, deadline, now_us)

    def _wake(self, n, key, now_us):
        if n.watch is not key:
            return
        n.watch = None
        armed = getattr(n, "timer_key", None)
        if armed is None or not n.alive:
            return
        if armed is not key:
            n.watch = armed
            self.clock.call_reserved(armed, lambda now, n=n, armed=armed: self._wake(n, armed, now))
            return
        n.timer_key = None
        n.deadline_local = None
        self._deliver(n, ("timer",), now_us)

    def _frame_end(self, tx, now_us):
        s = self.nodes[tx.sender]
        if s.pending is tx:
            s.pending = None
            if s.alive:
                self._deliver(s, ("tx_done", tx.raw_tx), now_us)
        else:
            return
        self._prune(tx.start_s - 0.01)
        rc = self.radio
        self._refresh(now_us)
        states = self._states
        for rn in self._receivers:
            r = rn.id
            if r == tx.sender:
                continue
            if not rn.alive or r not in states:
                continue
            d = _dist(tx.pos, states[r][0])
            if d > rc["max_range_m"]:
                self.stats["lost_range"] += 1
                continue
            prop_s = d / C_MPS
            a0 = tx.start_s + prop_s
            a1 = tx.end_s + prop_s
            if self._deaf(rn, a0, a1):
                self.stats["lost_deaf"] += 1
                continue
            if rc["collisions"] and self._collides_all(tx, r, states[r][0], a0, a1):
                self.stats["lost_collision"] += 1
                continue
            if rc["loss_prob"] > 0.0 and self._uniform() < rc["loss_prob"]:
                self.stats["lost_random"] += 1
                continue
            extra_m = self._nlos_m.get((tx.sender, r) if tx.sender < r else (r, tx.sender), 0.0)
            if self.nlos_fn is not None:
                extra_m += self.nlos_fn(tx.sender, r, tx.pos, states[r][0])
            t_rx_s = tx.rmarker_s + s.ant_true_s + prop_s + extra_m / C_MPS + rn.ant_true_s
            ticks = rn.clock.ticks_f(t_rx_s) + self._bias_ticks
            if self._noise_std_ticks:
                ticks += self._noise_std_ticks * self._normal()
            raw_rx = int(math.floor(ticks + 0.5)) & T.MASK_TICKS
            self.stats["deliveries"] += 1
            self._deliver(rn, ("rx", tx.frame, raw_rx), now_us)

    def _deaf(self, rn, a0, a1):
        for c0, c1 in rn.tx_intervals:
            if c0 < a1 and a0 < c1:
                return True
        return False

    def _normal(self):
        if not self._noise_buf:
            self._noise_buf = self._rng_noise.standard_normal(4096).tolist()
        return self._noise_buf.pop()

    def _uniform(self):
        if not self._loss_buf:
            self._loss_buf = self._rng_loss.random(4096).tolist()
        return self._loss_buf.pop()

    def _collides_all(self, tx, r, pos_r, a0, a1):
        for o in self._air:
            if o is tx or o.sender == r:
                continue
            if o.end_s + 1e-6 < a0 or o.start_s - 1e-6 > a1:
                continue
            p = _dist(o.pos, pos_r) / C_MPS
            if o.start_s + p < a1 and a0 < o.end_s + p:
                return True
        return False
