# cython: language_level=3
"""Cython path of the probabilistic grid leveling inner loop (Cook thesis 4.2.1, Alg. 1 + Alg. 2).

:class:`ProbabilisticKernel` runs whole cycles of Alg. 1's outer loop on the world of
:class:`harness.sim.leveling_grid.LevelingGrid` with the agents of
:class:`onboard.leveling.probabilistic.ProbabilisticAgent`, term by term as the pure path: the same
Fisher-Yates order per cycle, the same SENSE/ACT phases, the same draws in the same order, the same
world rules (occupancy oracle, refused operations), the same counters and the same O(1) level check as
:class:`harness.sim.voxel_terrain.VoxelTerrain`. Same seed, same final grid, same cycle counts (tested).

Randomness: the pure path reads ``Generator.random()`` of two NumPy PCG64 streams (``agents`` and
``order``). ``Generator.random()`` is ``(next64 >> 11) * 2**-53`` of PCG64 (XSL-RR 128/64, O'Neill's
multiplier), so the kernel takes each stream's 128-bit state and increment and steps the same generator
inline in C: the same doubles, with no call per draw. :meth:`rng_states` hands the states back.

Heights are ints >= 0 (units); ``condition``: 0 range (max - min <= eps), 1 grad (no 4-neighbour pair
steeper than eps), 2 rms (std <= eps).
"""
import numpy as np
cimport cython
from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free

cdef extern from *:
    """
    #include <stdint.h>
    typedef struct { unsigned __int128 state; unsigned __int128 inc; } lvl_pcg64_t;

    static inline void lvl_pcg64_set(lvl_pcg64_t *r, uint64_t s_hi, uint64_t s_lo, uint64_t i_hi, uint64_t i_lo) {
        r->state = ((unsigned __int128)s_hi << 64) | s_lo;
        r->inc = ((unsigned __int128)i_hi << 64) | i_lo;
    }
    static inline uint64_t lvl_pcg64_hi(unsigned __int128 v) { return (uint64_t)(v >> 64); }
    static inline uint64_t lvl_pcg64_lo(unsigned __int128 v) { return (uint64_t)v; }

    /* NumPy's PCG64: state = state * M + inc, output XSL-RR of the new state; random() = (x >> 11) * 2^-53 */
    static inline double lvl_pcg64_double(lvl_pcg64_t *r) {
        const unsigned __int128 mult = ((unsigned __int128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL;
        r->state = r->state * mult + r->inc;
        uint64_t x = ((uint64_t)(r->state >> 64)) ^ (uint64_t)r->state;
        unsigned rot = (unsigned)(r->state >> 122);
        x = (x >> rot) | (x << ((-rot) & 63u));
        return (double)(x >> 11) * (1.0 / 9007199254740992.0);
    }
    """
    ctypedef struct lvl_pcg64_t:
        pass
    void lvl_pcg64_set(lvl_pcg64_t *r, uint64_t s_hi, uint64_t s_lo, uint64_t i_hi, uint64_t i_lo) nogil
    double lvl_pcg64_double(lvl_pcg64_t *r) nogil

cdef extern from *:
    """
    static inline uint64_t lvl_state_hi(lvl_pcg64_t *r) { return (uint64_t)(r->state >> 64); }
    static inline uint64_t lvl_state_lo(lvl_pcg64_t *r) { return (uint64_t)r->state; }
    static inline uint64_t lvl_inc_hi(lvl_pcg64_t *r) { return (uint64_t)(r->inc >> 64); }
    static inline uint64_t lvl_inc_lo(lvl_pcg64_t *r) { return (uint64_t)r->inc; }
    """
    uint64_t lvl_state_hi(lvl_pcg64_t *r) nogil
    uint64_t lvl_state_lo(lvl_pcg64_t *r) nogil
    uint64_t lvl_inc_hi(lvl_pcg64_t *r) nogil
    uint64_t lvl_inc_lo(lvl_pcg64_t *r) nogil

cdef extern from *:
    """
    #include <math.h>
    typedef __int128 lvl_i128;
    /* VoxelTerrain.is_level's rms test, n * sumsq - total * total <= bound, as Python evaluates it: the left
       side an exact integer (here 128 bits: n * sumsq and total * total overflow 64 bits on tall terrains),
       compared exactly with the double bound (an integer is <= x exactly when it is <= floor(x)). */
    static inline int lvl_rms_le(int64_t n, lvl_i128 sumsq, int64_t total, double bound) {
        lvl_i128 v = (lvl_i128)n * sumsq - (lvl_i128)total * total;
        if (bound != bound)
            return 0;
        if (bound >= 0x1p126)
            return 1;
        if (bound < -0x1p126)
            return 0;
        return v <= (lvl_i128)floor(bound);
    }
    /* (eps * n) ** 2 as Python's float ** computes it: libm's pow, which is not always x * x (glibc's pow can
       round a near-tie the other way); the exponent is volatile so that the compiler cannot fold pow(x, 2.0)
       into x * x. */
    static inline double lvl_square_as_python(double x) {
        volatile double two = 2.0;
        return pow(x, two);
    }
    static inline uint64_t lvl_i128_hi(lvl_i128 v) { return (uint64_t)((unsigned __int128)v >> 64); }
    static inline uint64_t lvl_i128_lo(lvl_i128 v) { return (uint64_t)v; }
    """
    # C: __int128; Cython sees a long long, so it is only summed in C and handed to the helpers here (never
    # converted to or from a Python object: lvl_i128_hi / _lo do that)
    ctypedef long long lvl_i128
    int lvl_rms_le(int64_t n, lvl_i128 sumsq, int64_t total, double bound) noexcept nogil
    double lvl_square_as_python(double x) noexcept nogil
    uint64_t lvl_i128_hi(lvl_i128 v) noexcept nogil
    uint64_t lvl_i128_lo(lvl_i128 v) noexcept nogil

name = "cython"

cdef enum:
    SENSE = 0           # onboard.leveling.probabilistic phases
    ACT = 1
    STAY = -1           # onboard.leveling.grid moves / operations
    NO_OP = -1
    PICK_UP = 8
    DEPOSIT = 9
    COND_RANGE = 0
    COND_GRAD = 1
    COND_RMS = 2

CONDITIONS = ("range", "grad", "rms")
INT64_MAX = (1 << 63) - 1
MASK64 = (1 << 64) - 1
MAX_CELLS = 1 << 28                   # cells (and agents x memory slots) the kernel indexes: 8 * cell + 7 fits a C int
MAX_HEIGHT = 1 << 31                  # tallest cell it takes (units; voxel_terrain.MAX_UNITS): int64 sums stay exact


def _check_ints(name, values, n, lo, hi):
    """ValueError unless ``values`` holds ``n`` whole numbers in [lo, hi]."""
    if len(values) != n:
        raise ValueError("%s: %d values for %d agents" % (name, len(values), n))
    for v in values:
        if not lo <= v <= hi or v != int(v):
            raise ValueError("%s: %r outside %d..%d" % (name, v, lo, hi))


cdef inline void _split(object v, uint64_t *hi, uint64_t *lo):
    v = int(v)
    hi[0] = <uint64_t>((v >> 64) & MASK64)
    lo[0] = <uint64_t>(v & MASK64)


@cython.final
cdef class ProbabilisticKernel:
    """The world + agents of one probabilistic run, in C arrays (see the module docstring).

    Built by ``LevelingGrid`` from its state before the first cycle; :meth:`advance` runs cycles,
    :meth:`export` returns everything the pure objects hold so the grid can mirror it."""
    cdef lvl_pcg64_t rng_agents
    cdef lvl_pcg64_t rng_order
    cdef int rows, cols, n, n_agents, mem_size, condition
    cdef bint const_rho, always_read, fixed_order
    cdef double rho, k, rho_sense, random_move, eps
    # terrain
    cdef int64_t[::1] h
    cdef int64_t[::1] nb4          # 4 per cell, -1 padded
    cdef int64_t[::1] nbr          # 8 per cell, -1 off the grid
    cdef int64_t *hist
    cdef int64_t hist_cap
    cdef bint out_of_memory
    cdef public int64_t lo, hi, total, bad_pairs, takes, puts
    cdef lvl_i128 sumsq               # sum of squared heights: 128 bits (n * hi**2 can pass 2**63)
    # world
    cdef int64_t[::1] occ, pos, order, picked_from
    cdef int64_t[::1] carrying, moved
    # agents
    cdef int64_t[::1] phase, hval, heading, last_move, steps, samples
    cdef int64_t[::1] mem, mem_start, mem_count, mem_total
    # counters
    cdef public int64_t cycles, pickups, deposits, relocated, moves, blocked_moves, refused_ops

    def __cinit__(self):
        self.hist = NULL

    def __dealloc__(self):
        if self.hist != NULL:
            free(self.hist)

    def __init__(self, heights, int rows, int cols, pos, carrying, moved, picked_from, order, agents, params,
                 agents_state, order_state):
        """heights: flat row-major ints (units); pos, carrying, moved, picked_from, order: the world's
        per-agent lists; agents: per-agent dicts (phase, h or None, memory values oldest first, heading,
        last_move, steps, samples); params: const_rho, rho, k, rho_sense, always_read, random_move,
        memory, fixed_order, condition, epsilon_units, cycles and the counters; *_state: (state, inc) of
        each PCG64 stream."""
        cdef uint64_t a, b, c, d
        cdef int i, j, r, cc, m
        # no agents until the arrays below are all built: a failed (re)initialisation leaves a kernel that
        # indexes nothing
        self.n_agents = 0
        # everything the loop indexes with, checked before use (it runs without bounds checks)
        if rows < 1 or cols < 1 or <object>rows * cols > MAX_CELLS:
            raise ValueError("grid of %d x %d cells: the kernel takes 1 to %d cells" % (rows, cols, MAX_CELLS))
        na = len(pos)
        if len(agents) != na:
            raise ValueError("%d agent states for %d agents" % (len(agents), na))
        _check_ints("pos", pos, na, 0, rows * cols - 1)
        if len(set(int(p_) for p_ in pos)) != na:
            raise ValueError("pos: two agents on one cell")
        if sorted(int(o) for o in order) != list(range(na)):
            raise ValueError("order must be a permutation of the %d agent indexes" % na)
        for name_, vals in (("carrying", carrying), ("moved", moved)):
            if len(vals) != na:
                raise ValueError("%s: %d values for %d agents" % (name_, len(vals), na))
        _check_ints("picked_from", picked_from, na, -1, rows * cols - 1)
        _check_ints("heading", [a_["heading"] for a_ in agents], na, 0, 7)
        _check_ints("last_move", [a_["last_move"] for a_ in agents], na, STAY, 7)
        _check_ints("phase", [a_["phase"] for a_ in agents], na, SENSE, ACT)
        if not 1 <= int(params["memory"]) <= MAX_CELLS // max(na, 1):
            raise ValueError("memory must hold 1..%d heights for %d agents, got %r"
                             % (MAX_CELLS // max(na, 1), na, params["memory"]))
        self.rows, self.cols = rows, cols
        self.n = rows * cols
        self.const_rho = bool(params["const_rho"])
        self.rho = float(params["rho"])
        self.k = float(params["k"])
        self.rho_sense = float(params["rho_sense"])
        self.always_read = bool(params["always_read"])
        self.random_move = float(params["random_move"])
        self.mem_size = int(params["memory"])
        self.fixed_order = bool(params["fixed_order"])
        self.condition = CONDITIONS.index(params["condition"])
        self.eps = float(params["epsilon_units"])
        _split(agents_state[0], &a, &b)
        _split(agents_state[1], &c, &d)
        lvl_pcg64_set(&self.rng_agents, a, b, c, d)
        _split(order_state[0], &a, &b)
        _split(order_state[1], &c, &d)
        lvl_pcg64_set(&self.rng_order, a, b, c, d)

        hs = np.asarray(heights, dtype=np.int64).copy()
        if hs.ndim != 1 or hs.shape[0] != self.n:
            raise ValueError("heights must hold rows * cols = %d cells, got %d" % (self.n, hs.size))
        if hs.min() < 0 or hs.max() > MAX_HEIGHT:
            raise ValueError("heights must be whole units in 0..%d" % MAX_HEIGHT)
        self.h = hs
        nb4 = np.full(4 * self.n, -1, dtype=np.int64)
        nbr = np.full(8 * self.n, -1, dtype=np.int64)
        steps8 = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
        for r in range(rows):
            for cc in range(cols):
                i = r * cols + cc
                m = 0
                for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    if 0 <= r + dr < rows and 0 <= cc + dc < cols:
                        nb4[4 * i + m] = (r + dr) * cols + cc + dc
                        m += 1
                for j in range(8):
                    dr, dc = steps8[j]
                    if 0 <= r + dr < rows and 0 <= cc + dc < cols:
                        nbr[8 * i + j] = (r + dr) * cols + cc + dc
        self.nb4 = nb4
        self.nbr = nbr
        self._recount()
        self.takes = int(params.get("takes", 0))
        self.puts = int(params.get("puts", 0))

        self.pos = np.asarray(pos, dtype=np.int64).copy()
        self.carrying = np.asarray(carrying, dtype=np.int64).copy()
        self.moved = np.asarray(moved, dtype=np.int64).copy()
        self.picked_from = np.asarray(picked_from, dtype=np.int64).copy()
        self.order = np.asarray(order, dtype=np.int64).copy()
        occ = np.full(self.n, -1, dtype=np.int64)
        for i in range(na):
            occ[self.pos[i]] = i
        self.occ = occ
        self.phase = np.array([a_["phase"] for a_ in agents], dtype=np.int64)
        self.hval = np.array([-1 if a_["h"] is None else a_["h"] for a_ in agents], dtype=np.int64)
        self.heading = np.array([a_["heading"] for a_ in agents], dtype=np.int64)
        self.last_move = np.array([a_["last_move"] for a_ in agents], dtype=np.int64)
        self.steps = np.array([a_["steps"] for a_ in agents], dtype=np.int64)
        self.samples = np.array([a_["samples"] for a_ in agents], dtype=np.int64)
        mem = np.zeros(na * self.mem_size, dtype=np.int64)
        self.mem_start = np.zeros(na, dtype=np.int64)
        self.mem_count = np.zeros(na, dtype=np.int64)
        self.mem_total = np.zeros(na, dtype=np.int64)
        for i in range(na):
            values = list(agents[i]["memory"])
            if len(values) > self.mem_size:
                raise ValueError("agent %d holds %d heights in a memory of %d" % (i, len(values), self.mem_size))
            for j in range(len(values)):
                mem[i * self.mem_size + j] = values[j]
            self.mem_count[i] = len(values)
            self.mem_total[i] = sum(values)
        self.mem = mem
        self.cycles = int(params.get("cycles", 0))
        self.pickups = int(params.get("pickups", 0))
        self.deposits = int(params.get("deposits", 0))
        self.relocated = int(params.get("relocated", 0))
        self.moves = int(params.get("moves", 0))
        self.blocked_moves = int(params.get("blocked_moves", 0))
        self.refused_ops = int(params.get("refused_ops", 0))
        self.n_agents = na

    cdef void _recount(self):
        """Histogram, lo/hi, total, sum of squares and steep pairs from the heights."""
        cdef int64_t i, j, v, hmax = 0
        cdef int64_t *h = &self.h[0]
        for i in range(self.n):
            if h[i] > hmax:
                hmax = h[i]
        if self.hist != NULL:
            free(self.hist)
        self.hist_cap = hmax + 2
        self.hist = <int64_t *>malloc(self.hist_cap * sizeof(int64_t))
        if self.hist == NULL:
            raise MemoryError()
        for i in range(self.hist_cap):
            self.hist[i] = 0
        self.total = 0
        self.sumsq = 0
        self.bad_pairs = 0
        self.lo = h[0]
        self.hi = h[0]
        for i in range(self.n):
            v = h[i]
            self.hist[v] += 1
            self.total += v
            self.sumsq += <lvl_i128>v * v
            if v < self.lo:
                self.lo = v
            if v > self.hi:
                self.hi = v
            for j in range(4):
                if self.nb4[4 * i + j] > i and <double>abs(v - h[self.nb4[4 * i + j]]) > self.eps:
                    self.bad_pairs += 1

    cdef inline void _change(self, int64_t idx, int64_t new) noexcept:
        """VoxelTerrain._change: one cell's height to ``new`` with the statistics kept up to date (sets
        ``out_of_memory`` and changes nothing when the histogram cannot grow)."""
        cdef int64_t *h = &self.h[0]
        cdef int64_t *nb4 = &self.nb4[4 * idx]
        cdef int64_t old = h[idx], j, hj, cap, left
        cdef double eps = self.eps
        cdef int64_t *grown
        if new >= self.hist_cap:
            cap = 2 * new + 2
            grown = <int64_t *>realloc(self.hist, cap * sizeof(int64_t))
            if grown == NULL:
                self.out_of_memory = True
                return
            for j in range(self.hist_cap, cap):
                grown[j] = 0
            self.hist = grown
            self.hist_cap = cap
        for j in range(4):
            if nb4[j] >= 0:
                hj = h[nb4[j]]
                self.bad_pairs += (<double>abs(new - hj) > eps) - (<double>abs(old - hj) > eps)
        h[idx] = new
        self.total += new - old
        self.sumsq += <lvl_i128>new * new - <lvl_i128>old * old
        self.hist[new] += 1
        if new < self.lo:
            self.lo = new
        if new > self.hi:
            self.hi = new
        left = self.hist[old] - 1
        self.hist[old] = left
        if left == 0:
            while self.hist[self.lo] == 0:
                self.lo += 1
            while self.hist[self.hi] == 0:
                self.hi -= 1

    cdef inline bint _is_level(self) noexcept:
        cdef int64_t n = self.n
        if self.condition == COND_RANGE:
            return <double>(self.hi - self.lo) <= self.eps
        if self.condition == COND_GRAD:
            return self.bad_pairs == 0
        return lvl_rms_le(n, self.sumsq, self.total, lvl_square_as_python(self.eps * n))

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def advance(self, limit_cycles):
        """Cycles until the level condition or ``cycles == limit_cycles`` (an int of any size: the cycle counter
        is 64 bits and never negative, so the limit is clamped to [-1, 2**63 - 1], the same cycles); True when
        level after the last one."""
        cdef int64_t limit = min(max(limit_cycles, -1), INT64_MAX)
        cdef int64_t *h = &self.h[0]
        cdef int64_t *pos = &self.pos[0]
        cdef int64_t *occ = &self.occ[0]
        cdef int64_t *nbr = &self.nbr[0]
        cdef int64_t *order = &self.order[0]
        cdef int64_t *carrying = &self.carrying[0]
        cdef int64_t *moved = &self.moved[0]
        cdef int64_t *picked_from = &self.picked_from[0]
        cdef int64_t *phase = &self.phase[0]
        cdef int64_t *hval = &self.hval[0]
        cdef int64_t *heading = &self.heading[0]
        cdef int64_t *last_move = &self.last_move[0]
        cdef int64_t *steps = &self.steps[0]
        cdef int64_t *samples = &self.samples[0]
        cdef int64_t *mem = &self.mem[0]
        cdef int64_t *mem_start = &self.mem_start[0]
        cdef int64_t *mem_count = &self.mem_count[0]
        cdef int64_t *mem_total = &self.mem_total[0]
        cdef int na = self.n_agents, msize = self.mem_size
        cdef int64_t i, j, t, kk, idx, to, hh, cnt, tot, op, move, height
        cdef double u, r, p, hd
        cdef double rho = self.rho, kconst = self.k, rho_sense = self.rho_sense, random_move = self.random_move
        cdef bint const_rho = self.const_rho, always_read = self.always_read
        while self.cycles < limit:
            if not self.fixed_order:
                # Fisher-Yates, one draw per agent but the last (LevelingGrid.cycle)
                i = na - 1
                while i > 0:
                    j = <int64_t>(lvl_pcg64_double(&self.rng_order) * (i + 1))
                    t = order[i]
                    order[i] = order[j]
                    order[j] = t
                    i -= 1
            for t in range(na):
                kk = order[t]
                idx = pos[kk]
                height = h[idx]
                # ---- ProbabilisticAgent.step (Alg. 1 one phase)
                if moved[kk] and last_move[kk] != STAY:
                    heading[kk] = last_move[kk]
                steps[kk] += 1
                op = NO_OP
                if phase[kk] == SENSE:
                    phase[kk] = ACT
                    last_move[kk] = STAY
                    if always_read:
                        hval[kk] = height
                    if lvl_pcg64_double(&self.rng_agents) < rho_sense:
                        hval[kk] = height
                        # FIFO of the last msize heights (HeightMemory.push)
                        cnt = mem_count[kk]
                        if cnt < msize:
                            mem[kk * msize + (mem_start[kk] + cnt) % msize] = height
                            mem_count[kk] = cnt + 1
                            mem_total[kk] += height
                        else:
                            mem_total[kk] += height - mem[kk * msize + mem_start[kk]]
                            mem[kk * msize + mem_start[kk]] = height
                            mem_start[kk] = (mem_start[kk] + 1) % msize
                        samples[kk] += 1
                    move = STAY
                else:
                    phase[kk] = SENSE
                    hh = hval[kk]
                    u = lvl_pcg64_double(&self.rng_agents)
                    if hh >= 0:
                        cnt = mem_count[kk]
                        tot = mem_total[kk]
                        hd = <double>hh
                        if not carrying[kk]:
                            # rho_pu = rho or (h / (k + h))^2 (thesis 4.2.1); pick up when h > alpha
                            if const_rho:
                                p = rho
                            else:
                                r = hd / (kconst + hd)
                                p = r * r
                            if u < p and cnt and hh * cnt > tot:
                                op = PICK_UP
                        else:
                            # rho_de = rho or (k / (k + h))^2; deposit when h < alpha
                            if const_rho:
                                p = rho
                            else:
                                r = kconst / (kconst + hd)
                                p = r * r
                            if u < p and cnt and hh * cnt < tot:
                                op = DEPOSIT
                    # move_agent() (Alg. 2): random with probability random_move, else forward
                    if lvl_pcg64_double(&self.rng_agents) < random_move:
                        move = <int64_t>(lvl_pcg64_double(&self.rng_agents) * 8)
                        if move > 7:
                            move = 7
                    else:
                        move = heading[kk]
                    last_move[kk] = move
                # ---- the world applies (op, move)
                if op == PICK_UP:
                    if not carrying[kk] and h[idx] > 0:
                        self._change(idx, height - 1)
                        self.takes += 1
                        carrying[kk] = 1
                        self.pickups += 1
                        picked_from[kk] = idx
                    else:
                        self.refused_ops += 1
                elif op == DEPOSIT:
                    if carrying[kk]:
                        self._change(idx, h[idx] + 1)
                        self.puts += 1
                        carrying[kk] = 0
                        self.deposits += 1
                        if idx != picked_from[kk]:
                            self.relocated += 1
                    else:
                        self.refused_ops += 1
                if move == STAY:
                    moved[kk] = 0
                    continue
                to = nbr[idx * 8 + move]
                if to >= 0 and occ[to] < 0:
                    occ[idx] = -1
                    occ[to] = kk
                    pos[kk] = to
                    moved[kk] = 1
                    self.moves += 1
                else:
                    moved[kk] = 0
                    self.blocked_moves += 1
            self.cycles += 1
            if self.out_of_memory:
                raise MemoryError("leveling kernel: the height histogram cannot grow")
            if self._is_level():
                return True
        return False

    def rng_states(self):
        """((state, inc) of the agents stream, (state, inc) of the order stream), as Python ints."""
        return (((<object>lvl_state_hi(&self.rng_agents) << 64) | lvl_state_lo(&self.rng_agents),
                 (<object>lvl_inc_hi(&self.rng_agents) << 64) | lvl_inc_lo(&self.rng_agents)),
                ((<object>lvl_state_hi(&self.rng_order) << 64) | lvl_state_lo(&self.rng_order),
                 (<object>lvl_inc_hi(&self.rng_order) << 64) | lvl_inc_lo(&self.rng_order)))

    def export(self):
        """Everything the pure objects hold, as Python values (for the grid to mirror)."""
        cdef int i, j
        agents = []
        for i in range(self.n_agents):
            values = [int(self.mem[i * self.mem_size + (self.mem_start[i] + j) % self.mem_size])
                      for j in range(self.mem_count[i])]
            agents.append({"phase": int(self.phase[i]), "h": None if self.hval[i] < 0 else int(self.hval[i]),
                           "memory": values, "heading": int(self.heading[i]),
                           "last_move": int(self.last_move[i]), "steps": int(self.steps[i]),
                           "samples": int(self.samples[i])})
        return {"heights": [int(v) for v in self.h], "pos": [int(v) for v in self.pos],
                "carrying": [bool(v) for v in self.carrying], "moved": [bool(v) for v in self.moved],
                "picked_from": [int(v) for v in self.picked_from], "order": [int(v) for v in self.order],
                "agents": agents,
                "counters": {"cycles": self.cycles, "pickups": self.pickups, "deposits": self.deposits,
                             "relocated": self.relocated, "moves": self.moves,
                             "blocked_moves": self.blocked_moves, "refused_ops": self.refused_ops,
                             "takes": self.takes, "puts": self.puts},
                "level": {"lo": self.lo, "hi": self.hi, "total": self.total,
                          "sumsq": (<object>lvl_i128_hi(self.sumsq) << 64) | lvl_i128_lo(self.sumsq),
                          "bad_pairs": self.bad_pairs}}


def pcg64_doubles(state, inc, int n):
    """``n`` uniforms in [0, 1) from a PCG64 (state, inc) as the kernel draws them, and the state after
    them: the same numbers and state as NumPy's ``Generator(PCG64).random(n)`` (tested)."""
    cdef lvl_pcg64_t r
    cdef uint64_t a, b, c, d
    cdef int i
    _split(state, &a, &b)
    _split(inc, &c, &d)
    lvl_pcg64_set(&r, a, b, c, d)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(n):
        o[i] = lvl_pcg64_double(&r)
    return out, (<object>lvl_state_hi(&r) << 64) | lvl_state_lo(&r)
