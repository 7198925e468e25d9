"""Ground truth the UWB channel simulator runs against in the uwb-ranging scenario: the nodes' motion (the
channel's ``state_fn``) and the true range of every range sample.

:class:`BouncingMotion` is asked by the channel for the nodes' states at every instant with radio traffic (all
nodes at a frame's end, one at a timer or a transmission: thousands of times per simulated second at N = 20)
and :class:`RangeTruth` is called once per range sample (~13,500 per simulated second in broadcast mode at
N = 20), so the same source also runs compiled:
``cython_ext.uwb_channel_truth`` (Cython's pure-Python mode, types in ``cython_ext/uwb_channel_truth.pxd``, built
by ``make setup``), picked with the channel's implementation (``uwb_channel.truth_module(impl)``). Both give the
same floats: the same IEEE double operations in the same order, Python's modulo (sign of the divisor, a zero
result +0.0) and Python's ``math.hypot``. Times: ``now_us`` integer microseconds of true time.
"""
import math
from array import array

import numpy as np

from onboard.core.settings import POSITIVE, ConfigError

_hypot = math.hypot        # Python's hypot on every path (the channel's distances use it too)


class BouncingMotion:
    """n nodes at constant speed (m/s) reflecting off the walls of [0, area_m]^2 (m). Called with the true time
    ``now_us`` it is the channel's ``state_fn``: ``{node_id: ((x_m, y_m), (vx_mps, vy_mps))}``; :meth:`range_m`
    gives the true distance of two nodes.

    A coordinate folds onto the wall-reflected path: ``u = (p0 + v0 * t) mod 2A``, position ``u`` and
    velocity ``v0`` while ``u <= A``, else ``2A - u`` and ``-v0``. Plain Python floats: the same IEEE
    arithmetic as NumPy's float64 scalars without their per-operation cost (the channel asks for the
    state at every frame).

    :meth:`positions_at` works out every node's position into arrays (``_x``, ``_y`` in m, ``_k`` which of the
    node's four velocity tuples ``_vels[i]`` it has) without building the state: the channel reads those at a
    frame's end (uwb_channel_frame.deliver_frame), the same floats and the same tuples as the state."""

    def __init__(self, n, rng, area_m, max_speed_mps):
        # the fold divides by the period 2 area_m: an area of zero (or less, or not finite) has no walls to reflect off
        if not POSITIVE[1](area_m):
            raise ConfigError("BouncingMotion area_m must be a finite number > 0 (m), got %r" % (area_m,))
        p0 = rng.uniform(0.0, area_m, size=(n, 2))
        speed = rng.uniform(0.2, 1.0, size=n) * max_speed_mps
        heading = rng.uniform(-math.pi, math.pi, size=n)
        v0 = np.stack([speed * np.cos(heading), speed * np.sin(heading)], axis=1)
        self._setup([(float(p0[i, 0]), float(p0[i, 1]), float(v0[i, 0]), float(v0[i, 1])) for i in range(n)], area_m)

    def _setup(self, start, area_m):
        """Everything from the start states ``start`` [(x_m, y_m, vx_mps, vy_mps)] and the area (m)."""
        n = len(start)
        self._start = start
        # each node's four velocities (as is, x reflected, y reflected, both), one tuple each handed out again and
        # again: the channel skips a velocity it holds by identity. Not for non-finite ones (the protocol counts
        # every rejected velocity it is given): those come as new tuples every call, as before.
        self._vels = [((vx, vy), (-vx, vy), (vx, -vy), (-vx, -vy)) for _px, _py, vx, vy in self._start]
        self._fresh_vels = not all(math.isfinite(c) for st in self._start for c in st[2:])
        self._area_m = float(area_m)
        self._period_m = 2.0 * area_m
        self._last_us = None               # many frames share a time: the last call's state is kept
        self._last = None
        self._n = n
        self._p0x = array("d", [st[0] for st in self._start])
        self._p0y = array("d", [st[1] for st in self._start])
        self._v0x = array("d", [st[2] for st in self._start])
        self._v0y = array("d", [st[3] for st in self._start])
        self._x = array("d", [0.0] * n)   # every node's position (m) and velocity index at _pos_us (positions_at)
        self._y = array("d", [0.0] * n)
        self._k = array("i", [0] * n)
        self._pos_us = None

    def __call__(self, now_us):
        return self.state(now_us)

    def __reduce__(self):
        """Copies and pickles on both builds (the compiled one's arrays are typed memoryviews): the start states,
        the area and the velocity tuples (one pickle keeps them the objects a channel pickled with it holds);
        the positions and the last state are worked out again, the same floats."""
        return _motion_from_state, (type(self), self._start, self._area_m, self._vels)

    def positions_at(self, now_us):
        """Every node's position at ``now_us`` into ``_x``, ``_y`` (m) and the index of its velocity tuple in
        ``_vels[i]`` into ``_k`` (what :meth:`state` holds, without its dict and tuples)."""
        if self._pos_us == now_us:
            return
        t = now_us * 1e-6
        period = self._period_m
        area = self._area_m
        for i in range(self._n):
            x = (self._p0x[i] + self._v0x[i] * t) % period
            y = (self._p0y[i] + self._v0y[i] * t) % period
            k = 0
            if not x <= area:                 # as "x <= area ? x : 2A - x" (a NaN folds too)
                x = period - x
                k = 1
            if not y <= area:
                y = period - y
                k += 2
            self._x[i] = x
            self._y[i] = y
            self._k[i] = k
        self._pos_us = now_us

    def state(self, now_us):
        """``{node_id: ((x_m, y_m), (vx_mps, vy_mps))}`` at ``now_us`` (what a call gives)."""
        if self._last_us == now_us:
            return self._last
        self.positions_at(now_us)
        vels = self._vels
        fresh = self._fresh_vels
        out = {}
        for i in range(self._n):
            v = vels[i][self._k[i]]           # (+-vx, +-vy)
            if fresh:
                v = (v[0], v[1])
            out[i] = ((self._x[i], self._y[i]), v)
        self._last_us = now_us
        self._last = out
        return out

    def _fold(self, i, t):
        """Node ``i``'s (x_m, y_m, velocity index) at ``t`` (s): one node of :meth:`positions_at`."""
        period = self._period_m
        area = self._area_m
        x = (self._p0x[i] + self._v0x[i] * t) % period
        y = (self._p0y[i] + self._v0y[i] * t) % period
        k = 0
        if not x <= area:
            x = period - x
            k = 1
        if not y <= area:
            y = period - y
            k += 2
        return x, y, k

    def node_state(self, i, now_us):
        """``state(now_us).get(i)``: node ``i``'s ``((x_m, y_m), (vx_mps, vy_mps))`` at ``now_us``, worked out alone
        (the channel asks for one node at a timer or a transmission) with the same floats and velocity tuple;
        None for an unknown id. Non-finite velocities: the whole state (its memo decides when a tuple is new)."""
        if now_us == self._last_us or self._fresh_vels:
            return self.state(now_us).get(i)
        if not 0 <= i < self._n:
            return None
        j = i
        if now_us == self._pos_us:
            return ((self._x[j], self._y[j]), self._vels[j][self._k[j]])
        x, y, k = self._fold(j, now_us * 1e-6)
        return ((x, y), self._vels[j][k])

    def range_m(self, a, b, now_us):
        """True distance (m) of nodes ``a`` and ``b`` at ``now_us`` (as UwbNetwork.true_range_m on this
        state: ``math.hypot`` of the differences, the same floats), working out only those two nodes, or
        reading them from the last positions worked out (a frame's range samples come at the time the channel
        just asked for)."""
        if now_us == self._pos_us:
            return _hypot(self._x[a] - self._x[b], self._y[a] - self._y[b])
        t = now_us * 1e-6
        ax, ay, ka = self._fold(a, t)
        bx, by, kb = self._fold(b, t)
        return _hypot(ax - bx, ay - by)


def _motion_from_state(cls, start, area_m, vels):
    """A :class:`BouncingMotion` (of class ``cls``: either build) from what ``__reduce__`` gave."""
    motion = cls.__new__(cls)
    motion._setup(start, area_m)
    motion._vels = vels
    return motion


class RangeTruth:
    """The channel's ``on_range`` callback ``(node_id, RangeSample, true_us)`` that scores samples against
    ``motion`` (a :class:`BouncingMotion` of ``n`` nodes) from ``from_us`` (us, true time) on: per ordered pair
    the count (``counts[node_id * n + peer]``), per sample in arrival order its error ``range_m - true range``
    (m, ``errors``); ``last_true_m`` is the true range (m) of the last sample scored."""

    def __init__(self, motion, n, from_us):
        self.motion = motion
        self.n = n
        self.from_us = from_us
        self.counts = [0] * (n * n)
        self.errors = []
        self.last_true_m = 0.0

    def __call__(self, node_id, sample, true_us):
        self.score(node_id, sample, true_us)

    def score(self, node_id, sample, true_us):
        """Count and score one sample (a call does this)."""
        if true_us >= self.from_us:
            peer = sample.peer_id
            k = node_id * self.n + peer
            self.counts[k] += 1
            true_m = self.motion.range_m(node_id, peer, true_us)
            self.last_true_m = true_m
            self.errors.append(sample.range_m - true_m)
