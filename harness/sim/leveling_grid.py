"""The multi-agent grid world of the thesis's leveling algorithms (Cook thesis 4.2): N agents on a
:class:`harness.sim.voxel_terrain.VoxelTerrain`, each running an onboard behaviour
(:mod:`onboard.leveling.probabilistic` Alg. 1-2, :mod:`onboard.leveling.memetic` Alg. 3-4).

One **cycle** is one pass of Alg. 1's outer loop: every agent takes one step, in a fresh random order
each cycle (``order = "random"``, reading aid A6) or by index (``"fixed"``). A probabilistic agent's step
is one phase (SENSE or ACT), so it moves every second cycle; a memetic agent's step is its sensing stage
or one gene (``memetic.sense_phase``, default true: one gene every second cycle; false: one gene per
cycle, reading aid A8).
Per agent step the world

1. hands the agent what it senses: the height of its cell (units), whether it carries a unit, whether its
   last move happened;
2. applies the intended operation: a pick-up takes one unit from the cell (refused when the agent
   already carries one or the cell is empty), a deposit puts the carried unit there (refused when it
   carries none);
3. applies the intended move through the occupancy oracle: the agent enters the neighbour cell only if it
   is on the grid and free (thesis 4.2.1: agents hover, so any height difference is passable).

After each cycle a memetic oracle (Alg. 3/4's external agent) may replace chromosomes, and the level
condition is checked; a run ends at the level condition or ``max_cycles``.

Counters: ``cycles``, ``pickups`` (= units moved, thesis 4.2.3), ``deposits``, ``moves``,
``blocked_moves``, ``refused_ops``, ``units_relocated`` (deposits into another cell than the unit's
pick-up; a pick-up put back where it was moves nothing), ``agent_actions`` (pick-ups + deposits + attempted moves).
Volume: ``volume_error = terrain volume + carried units - initial volume`` is exactly 0 (an int).

Randomness (one seed, :class:`harness.sim.rng.RunRandom`): streams ``terrain`` (generator), ``placement``
(distinct start cells and headings), ``order`` (each cycle's permutation: Fisher-Yates, one draw per
agent but the last) and ``agents`` (every behaviour draw and every new chromosome, in the agents' step
order). The streams are read through :class:`UniformStream`, so an implementation fed the same
generator gets the same uniforms.

Implementation (``impl``, :mod:`onboard.impl`; null: ``$ONBOARD_IMPL``, default pure): ``pure`` runs the
onboard behaviours above; ``cython`` runs the probabilistic algorithm's cycles in
:class:`cython_ext.leveling.ProbabilisticKernel` (the same agent and world rules in C, stepping the same
two PCG64 streams inline), then mirrors its state into these objects after each :meth:`LevelingGrid.advance`,
so metrics, logs and every counter are the pure path's (same seed, same final grid and cycle counts,
tested). The memetic variants have no compiled path and run pure under either setting.
"""
import itertools

from harness.sim.rng import RunRandom
from harness.sim.voxel_terrain import (LEVEL_DEFAULTS, LEVEL_SETTING_RANGES, VoxelTerrain, build_heights)
from harness.sim.voxel_terrain import DEFAULTS as TERRAIN_DEFAULTS
from harness.sim.voxel_terrain import SETTING_RANGES as TERRAIN_SETTING_RANGES
from onboard import impl as impl_switch
from onboard.core.settings import ConfigError, checked, int_at_least, one_of, under
from onboard.leveling import memetic, probabilistic
from onboard.leveling.grid import DEPOSIT, DIRECTION_STEPS, N_DIRECTIONS, PICK_UP, STAY

ALGORITHMS = ("probabilistic", "ma1", "ma2")
ORDERS = ("random", "fixed")
IMPLS = ("pure", "cython")
KERNEL_MODULES = {"cython": "cython_ext.leveling"}
KERNEL_MAX_UNITS = 1 << 24            # tallest cell the compiled loop takes (units)
KERNEL_MAX_MEMORY = 1 << 24           # most FIFO heights (agents x memory) the compiled loop takes: it allocates all
_MEMETIC_BLOCK = {k: v for k, v in memetic.DEFAULTS.items() if k != "variant"}   # variant = algorithm

DEFAULTS = {
    "agents": 8,
    "algorithm": "probabilistic",     # probabilistic (Alg. 1-2) | ma1 (Alg. 3) | ma2 (Alg. 4)
    "order": "random",                # agents' order within a cycle: random (A6) | fixed
    "max_cycles": 4000000,            # a run stops here if not level (MA1 on 32x32 takes ~0.6-0.8M)
    "impl": None,                     # inner loop: pure | cython (onboard.impl); null: $ONBOARD_IMPL
    "probabilistic": dict(probabilistic.DEFAULTS),
    # a memetic agent keeps Alg. 1's sensing stage before each gene (thesis 4.2.3: "variations of the
    # algorithm described in Section 4.2.1"), so a gene costs two cycles like the probabilistic agent's move
    "memetic": dict(_MEMETIC_BLOCK, sense_phase=True),
    "terrain": dict(TERRAIN_DEFAULTS),
    "level": dict(LEVEL_DEFAULTS),
}
SETTING_RANGES = {"agents": int_at_least(1), "algorithm": one_of(*ALGORITHMS), "order": one_of(*ORDERS),
                  "max_cycles": int_at_least(0), "impl": one_of(None, *IMPLS)}
SETTING_RANGES.update(under("probabilistic", probabilistic.SETTING_RANGES, DEFAULTS["probabilistic"]))
SETTING_RANGES.update(under("memetic", memetic.SETTING_RANGES, DEFAULTS["memetic"]))
SETTING_RANGES.update(under("terrain", TERRAIN_SETTING_RANGES))
SETTING_RANGES.update(under("level", LEVEL_SETTING_RANGES))


class UniformStream:
    """``random()`` over a NumPy Generator's ``random()`` drawn in blocks: the same sequence as
    ``gen.random(n)`` (block size does not change it); ``random`` is a C-level iterator step."""

    def __init__(self, gen, block=4096):
        self.gen = gen
        self.block = int(block)

        def blocks():
            while True:
                yield gen.random(self.block).tolist()
        self.random = itertools.chain.from_iterable(blocks()).__next__


def neighbour_table(rows, cols):
    """Flat list: entry ``idx * 8 + d`` is the cell one step in direction d from cell idx, or -1 off the
    grid."""
    table = []
    for r in range(rows):
        for c in range(cols):
            for d in range(N_DIRECTIONS):
                dr, dc = DIRECTION_STEPS[d]
                nr, nc = r + dr, c + dc
                table.append(nr * cols + nc if 0 <= nr < rows and 0 <= nc < cols else -1)
    return table


class LevelingGrid:
    """The world (see the module docstring). ``config``: DEFAULTS overrides; ``seed``: the run's seed;
    ``heights``: a 2-D height grid (units) that replaces the terrain settings; ``oracle``: a memetic oracle
    (any object with ``after_cycle(agents, rand)``) that replaces the variant's default; ``select``: the
    MA1 oracle's selection (``select(fitnesses) -> agent index``). An ``oracle`` or ``select`` the run would not
    use (the probabilistic algorithm has no oracle; a ``select`` beside an ``oracle`` of one's own) is a
    ConfigError rather than silently unused."""

    def __init__(self, config=None, seed=0, heights=None, oracle=None, select=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "leveling grid")
        if cfg["algorithm"] == "probabilistic" and (oracle is not None or select is not None):
            raise ConfigError("leveling grid: the probabilistic algorithm has no memetic oracle; an oracle or select "
                              "is only used by ma1/ma2")
        if oracle is not None and select is not None:
            raise ConfigError("leveling grid: a select is used by the default MA1 oracle, not beside an oracle given")
        self.cfg = cfg
        self.seed = int(seed)
        rr = RunRandom(self.seed)
        if heights is None:
            heights = build_heights(cfg["terrain"], rr.stream("terrain"))
        self.terrain = VoxelTerrain(heights, cfg["level"])
        t = self.terrain
        n_agents = cfg["agents"]
        if n_agents > t.n:
            raise ConfigError("leveling grid setting agents must be at most the %d cells of the %dx%d terrain, got %d"
                              % (t.n, t.rows, t.cols, n_agents))
        self.rand = UniformStream(rr.stream("agents"))
        self.order_rand = UniformStream(rr.stream("order"))
        self.impl = impl_name(cfg["impl"])
        place = rr.stream("placement")
        cells = place.choice(t.n, size=n_agents, replace=False)
        headings = place.integers(0, N_DIRECTIONS, size=n_agents)
        self.pos = [int(c) for c in cells]
        self.occupied = [-1] * t.n
        for k, c in enumerate(self.pos):
            self.occupied[c] = k
        self.carrying = [False] * n_agents
        self.moved = [False] * n_agents
        self.algorithm = cfg["algorithm"]
        self.oracle = None
        if self.algorithm == "probabilistic":
            self.agents = [probabilistic.ProbabilisticAgent(cfg["probabilistic"], int(headings[k]))
                           for k in range(n_agents)]
        else:
            mcfg = dict(cfg["memetic"])
            mcfg["variant"] = self.algorithm
            self.agents = [memetic.MemeticAgent(mcfg, self.rand, heading=int(headings[k]))
                           for k in range(n_agents)]
            self.oracle = oracle if oracle is not None else memetic.make_oracle(mcfg, select)
        self._steps = [a.step for a in self.agents]
        self.order = list(range(n_agents))
        self.fixed_order = cfg["order"] == "fixed"
        self.nbr = neighbour_table(t.rows, t.cols)
        self.cycles = 0
        self.pickups = 0
        self.picked_from = [-1] * n_agents   # cell of each agent's last pick-up
        self.relocated = 0
        self.deposits = 0
        self.moves = 0
        self.blocked_moves = 0
        self.refused_ops = 0
        self.replaced = 0
        self.cycles_to_level = 0 if t.is_level() else None
        self.initial_stats = t.stats()
        self._kernel = None
        if self.impl == "cython" and self.algorithm == "probabilistic":
            self._kernel = self._make_kernel(rr)

    # ------------------------------------------------------------ compiled path
    def _make_kernel(self, rr):
        """The Cython inner loop, built from this (fresh) world; the two streams' PCG64 states go with it
        (nothing has been drawn from them yet: UniformStream draws lazily)."""
        mod = impl_switch.load(KERNEL_MODULES, "cython")
        if self.terrain.hi > KERNEL_MAX_UNITS:
            raise ConfigError("leveling grid setting impl: the cython inner loop takes heights up to %d units "
                              "(its histogram has one slot per unit), got %d; use impl=pure"
                              % (KERNEL_MAX_UNITS, self.terrain.hi))
        pcfg = self.cfg["probabilistic"]
        if len(self.agents) * pcfg["memory"] > KERNEL_MAX_MEMORY:
            raise ConfigError("leveling grid setting impl: the cython inner loop takes agents x probabilistic.memory "
                              "up to %d heights (it allocates every slot), got %d x %d; use impl=pure"
                              % (KERNEL_MAX_MEMORY, len(self.agents), pcfg["memory"]))
        states = []
        for name in ("agents", "order"):
            st = rr.stream(name).bit_generator.state
            if st["bit_generator"] != "PCG64":
                raise ConfigError("leveling grid: the cython path needs PCG64 streams, got %s" % st["bit_generator"])
            states.append((st["state"]["state"], st["state"]["inc"]))
        t = self.terrain
        params = {"const_rho": pcfg["rho_mode"] == "const", "rho": pcfg["rho"], "k": pcfg["k"],
                  "rho_sense": pcfg["rho_sense"], "always_read": pcfg["sense"] == "always_read",
                  "random_move": pcfg["random_move"], "memory": pcfg["memory"], "fixed_order": self.fixed_order,
                  "condition": t.condition, "epsilon_units": t.eps}
        agents = [{"phase": a.phase, "h": a.h, "memory": list(a.memory.values), "heading": a.heading,
                   "last_move": a._last_move, "steps": a.steps, "samples": a.samples} for a in self.agents]
        return mod.ProbabilisticKernel(t.h, t.rows, t.cols, self.pos, self.carrying, self.moved, self.picked_from,
                                       self.order, agents, params, states[0], states[1])

    def _mirror(self):
        """Copy the kernel's state into the pure objects (terrain, world lists, agents, counters)."""
        ex = self._kernel.export()
        c = ex["counters"]
        self.terrain.mirror(ex["heights"], c["takes"], c["puts"])
        self.pos[:] = ex["pos"]
        occ = self.occupied
        for i in range(len(occ)):
            occ[i] = -1
        for k, cell in enumerate(self.pos):
            occ[cell] = k
        self.carrying[:] = ex["carrying"]
        self.moved[:] = ex["moved"]
        self.picked_from[:] = ex["picked_from"]
        self.order[:] = ex["order"]
        for a, s in zip(self.agents, ex["agents"]):
            a.phase = s["phase"]
            a.h = s["h"]
            a.memory.values = list(s["memory"])
            a.memory.total = sum(s["memory"])
            a.heading = s["heading"]
            a._last_move = s["last_move"]
            a.steps = s["steps"]
            a.samples = s["samples"]
        self.cycles = c["cycles"]
        self.pickups = c["pickups"]
        self.deposits = c["deposits"]
        self.relocated = c["relocated"]
        self.moves = c["moves"]
        self.blocked_moves = c["blocked_moves"]
        self.refused_ops = c["refused_ops"]

    def _kernel_advance(self, limit):
        level = self._kernel.advance(int(limit))
        self._mirror()
        if level and self.cycles_to_level is None:
            self.cycles_to_level = self.cycles
        return level

    def advance(self, limit):
        """Cycles until the level condition or ``cycles == limit``; returns True when level (also when it
        already was). The same cycles as calling :meth:`cycle` in a loop, on either implementation."""
        if self.cycles_to_level is not None:
            return True
        if self._kernel is not None:
            return self._kernel_advance(limit) if self.cycles < limit else False
        cycle = self.cycle
        while self.cycles < limit:
            if cycle():
                return True
        return False

    # ------------------------------------------------------------ stepping
    def cycle(self):
        """One cycle of Alg. 1's outer loop (every agent one step); returns True when the terrain is level
        afterwards."""
        if self._kernel is not None:
            return self._kernel_advance(self.cycles + 1)
        t = self.terrain
        h = t.h
        pos = self.pos
        occ = self.occupied
        carrying = self.carrying
        moved = self.moved
        agents = self.agents
        steps = self._steps
        nbr = self.nbr
        rand = self.rand
        order = self.order
        if not self.fixed_order:
            u = self.order_rand
            for i in range(len(order) - 1, 0, -1):
                j = int(u.random() * (i + 1))
                order[i], order[j] = order[j], order[i]
        for k in order:
            idx = pos[k]
            op, move = steps[k](h[idx], carrying[k], moved[k], rand)
            if op == PICK_UP:
                if not carrying[k] and h[idx] > 0:
                    t.take(idx)
                    carrying[k] = True
                    self.pickups += 1
                    self.picked_from[k] = idx
                else:
                    self.refused_ops += 1
            elif op == DEPOSIT:
                if carrying[k]:
                    t.put(idx)
                    carrying[k] = False
                    self.deposits += 1
                    if idx != self.picked_from[k]:
                        self.relocated += 1
                else:
                    self.refused_ops += 1
            if move == STAY:
                moved[k] = False
                continue
            to = nbr[idx * 8 + move]
            if to >= 0 and occ[to] < 0:
                occ[idx] = -1
                occ[to] = k
                pos[k] = to
                moved[k] = True
                self.moves += 1
            else:
                moved[k] = False
                self.blocked_moves += 1
        self.cycles += 1
        if self.oracle is not None:
            self.replaced += self.oracle.after_cycle(agents, rand)
        if t.is_level():
            if self.cycles_to_level is None:
                self.cycles_to_level = self.cycles
            return True
        return False

    def run(self, max_cycles=None):
        """Cycles until the level condition or ``max_cycles`` (default: the setting); returns
        :meth:`metrics`."""
        limit = self.cfg["max_cycles"] if max_cycles is None else int(max_cycles)
        self.advance(limit)
        return self.metrics()

    # ------------------------------------------------------------ results
    @property
    def carried_units(self):
        return sum(1 for c in self.carrying if c)

    def volume_error(self):
        """Terrain units + carried units - initial units (exactly 0 when volume is conserved)."""
        t = self.terrain
        return t.volume + self.carried_units - t.initial_volume

    def metrics(self):
        t = self.terrain
        final = t.stats()
        out = {
            "algorithm": self.algorithm, "seed": self.seed, "rows": t.rows, "cols": t.cols,
            "agents": len(self.agents), "level_condition": t.condition, "epsilon_units": t.eps,
            "level_reached": self.cycles_to_level is not None, "cycles_to_level": self.cycles_to_level,
            "cycles": self.cycles, "units_moved": self.pickups, "units_relocated": self.relocated,
            "pickups": self.pickups,
            "deposits": self.deposits, "moves": self.moves, "blocked_moves": self.blocked_moves,
            "refused_ops": self.refused_ops,
            "agent_actions": self.pickups + self.deposits + self.moves + self.blocked_moves,
            "carried_units": self.carried_units, "volume_error": self.volume_error(),
            "chromosomes_replaced": self.replaced,
            "bad_inputs": sum(a.bad_inputs for a in self.agents),
        }
        for key, value in self.initial_stats.items():
            out["initial_" + key] = value
        for key, value in final.items():
            out["final_" + key] = value
        return out


def impl_name(setting):
    """The inner loop's implementation: the setting, else $ONBOARD_IMPL, else pure (ConfigError for one
    this world does not have)."""
    try:
        name = impl_switch.selected(setting)
    except ValueError as exc:
        raise ConfigError("leveling grid setting impl: %s" % exc)
    if name not in IMPLS:
        raise ConfigError("leveling grid setting impl: no %s inner loop (choose from %s)" % (name, ", ".join(IMPLS)))
    return name


def run_level_grid(config=None, seed=0, heights=None):
    """One seeded run; returns its metrics (:meth:`LevelingGrid.metrics`)."""
    return LevelingGrid(config, seed, heights).run()
