"""Memetic leveling (Cook thesis 4.2.3, Alg. 3 MA1 and Alg. 4 MA2; pure, MicroPython).

A chromosome is a list of 20 genes, each 0..9: 0-7 move one cell in that direction
(:mod:`onboard.leveling.grid`), 8 pick up, 9 deposit. It is valid when pick-ups and deposits
alternate starting with a pick-up and there are as many of each (thesis: "pick-up actions must always
come before deposit actions, and there must be an equal number"; with a capacity of one unit this is
alternation).

An agent executes one gene per step (one step per cycle); with ``sense_phase`` each gene is preceded by
a step of its own that only senses (Alg. 1's SENSE stage; that step intends nothing). Actions fail
silently: a pick-up happens only when the agent carries nothing and its cell is above alpha, a deposit
only when it carries a unit and its cell is below alpha (the memetic algorithm's local heuristic); a
blocked move leaves it in place. alpha is the mean of the FIFO of the last ``memory`` sensed heights,
sampled with probability ``rho_sense`` before the first gene and after each move gene (as Alg. 1 senses
after each move; reading aid A9).

"Above alpha" (``gate``): ``cell`` (default): the cell's height h > alpha for a pick-up, h < alpha for
a deposit (as Alg. 1); ``unit``: the unit itself lies beyond alpha, its bottom h - 1 >= alpha when taken,
its top h + 1 <= alpha when laid. Under ``unit`` a pick-up can never be put back into its cell (the
pick-up needs h - 1 >= alpha, the deposit on the h - 1 left then needs h <= alpha), but it stalls close
to level: with alpha near the mean, a unit two above the final level's lower height has no cell it may
be laid on (12x12, 4 agents: 6 of 8 MA1/MA2 runs levelled in 200k cycles; docs/results/leveling.md).

Fitness (thesis 4.2.3): f = n_changes / (pickups_total + deposits_total), the totals counting every
pick-up and deposit gene executed (failed ones too), n_changes the positive ones: a pick-up that removes
material above alpha, a deposit below alpha with |h_deposit - h_pickup| > 1 (heights after each
operation, h_pickup of the agent's last pick-up; ``deposit_heights = "before"`` compares them before).
f = 0 with no pick-up or deposit gene.

Variants (``variant``):

- ``ma1`` (Alg. 3): one chromosome per agent, executed ``executions`` (5) times per evaluation; then the
  external oracle (:class:`Ma1Oracle`, its selection injectable) keeps the fittest agent's chromosome and
  gives every other agent a new random valid one;
- ``ma2`` (Alg. 4): ``pool`` (5) chromosomes per agent, each executed once in turn; after the pool,
  the oracle (:class:`Ma2Oracle`) replaces those with fitness below ``keep_threshold`` (1.0).

The world applies what :meth:`MemeticAgent.step` intends and calls ``oracle.after_cycle(agents, rand)``
after every cycle. New chromosomes are drawn by :func:`random_chromosome` (constructive, so none is
invalid): m pick-up/deposit pairs, their 2m positions drawn without replacement and sorted, pick-up first,
the other genes random moves. How m is drawn is the setting ``pairs``:

- ``uniform`` (default): every valid chromosome is equally likely, i.e. 20 uniform genes 0..9 kept only
  when valid (the thesis's "random, valid chromosome", Alg. 3/4 input). There are C(g, 2m) 8^(g-2m) valid
  chromosomes with m pairs, so P(m) is proportional to C(g, 2m) / 64^m (m = 0..``max_pairs``; for 20
  genes P(0..3) = 0.19, 0.56, 0.22, 0.03: about one pair per chromosome, most genes moves);
- ``flat``: m uniform in 1..``max_pairs`` (reading aid A9's construction: 5.5 pairs on average, 11 of
  the 20 genes pick-ups or deposits).

Draws, in this order: a new chromosome draws m, then one per pair position (partial Fisher-Yates), then one
per move gene in gene order; the first gene and every gene after a move gene draw one for the sampling
(in the sensing step before it under ``sense_phase``); genes draw nothing else.
"""
from onboard.core.settings import checked, int_at_least, one_of, within
from onboard.leveling.grid import (DEPOSIT, IDLE, NO_OP, NORTH, N_DIRECTIONS, PICK_UP, STAY, HeightMemory,
                                   height_ok, random_direction)

VARIANTS = ("ma1", "ma2")
PAIRS = ("uniform", "flat")
GATES = ("cell", "unit")

DEFAULTS = {
    "variant": "ma1",             # ma1 (Alg. 3) | ma2 (Alg. 4)
    "genes": 20,                  # chromosome length
    "max_pairs": 10,              # a new chromosome holds at most max_pairs pick-up/deposit pairs
    "pairs": "uniform",           # uniform: every valid chromosome equally likely | flat: m in 1..max_pairs
    "executions": 5,              # MA1: runs of the chromosome per evaluation
    "pool": 5,                    # MA2: chromosomes per agent
    "keep_threshold": 1.0,        # MA2: chromosomes with fitness below this are replaced
    "rho_sense": 0.01,            # probability of storing the sensed height after a move gene (as Alg. 1)
    "memory": 8,                  # FIFO length (heights)
    # a deposit is positive when |h_deposit - h_pickup| > 1 with the heights "after" each operation (thesis
    # 4.2.3 as written) or "before" them (then it is exactly a unit move that lowers the sum of squared
    # heights); it only counts in the fitness
    "deposit_heights": "after",
    # alpha: a deposit gene deposits below alpha (the local heuristic; positivity only counts in the
    # fitness); positive: it deposits only when the deposit is positive (below alpha and the height rule
    # above), the other reading of "the determination of which is part of the logic within the pick-up and
    # deposit actions" (thesis 4.2.3). Under "positive" a unit picked up one unit above the final level
    # has nowhere to go: 16x16 runs with 4 MA1 agents did not level in 3M cycles (docs/results/leveling.md)
    "deposit_rule": "alpha",
    "gate": "cell",               # cell: h > alpha to pick up, h < alpha to deposit | unit (see the docstring)
    # True: before each gene the agent spends one step sensing (Alg. 1's SENSE/ACT stages, which the
    # memetic variants of 4.2.3 keep: one gene per ACT stage, so one gene per two cycles, as the
    # probabilistic agent moves once per two cycles); False: sensing and the gene in one step (reading aid A8)
    "sense_phase": False,
}
SETTING_RANGES = {
    "variant": one_of(*VARIANTS),
    "genes": int_at_least(2),
    "max_pairs": int_at_least(1),
    "pairs": one_of(*PAIRS),
    "executions": int_at_least(1),
    "pool": int_at_least(1),
    "keep_threshold": within(0.0, 1.0),
    "rho_sense": within(0.0, 1.0),
    "memory": int_at_least(1),
    "deposit_heights": one_of("after", "before"),
    "deposit_rule": one_of("positive", "alpha"),
    "gate": one_of(*GATES),
    "sense_phase": one_of(True, False),
    ("max_pairs", "genes"): ("pairs that fit the chromosome (2 * max_pairs <= genes)",
                             lambda pairs, genes: 2 * pairs <= genes),
}


class ChromosomeError(ValueError):
    """A chromosome that breaks the thesis's rules (length, genes 0..9, pick-ups and deposits alternating)."""


def chromosome_problem(chromosome, genes=20):
    """Why ``chromosome`` is invalid (one line), or None when it is valid."""
    if not isinstance(chromosome, (list, tuple)) or len(chromosome) != genes:
        return "a chromosome must be a list of %d genes, got %r" % (genes, chromosome)
    carrying = False
    for i in range(genes):
        g = chromosome[i]
        if not isinstance(g, int) or isinstance(g, bool) or g < 0 or g > DEPOSIT:
            return "gene %d must be an integer 0..9, got %r" % (i, g)
        if g == PICK_UP:
            if carrying:
                return "gene %d: two pick-ups without a deposit between them" % i
            carrying = True
        elif g == DEPOSIT:
            if not carrying:
                return "gene %d: a deposit before its pick-up" % i
            carrying = False
    if carrying:
        return "the last pick-up has no deposit"
    return None


def is_valid(chromosome, genes=20):
    return chromosome_problem(chromosome, genes) is None


_BIG_WEIGHT = 2.0 ** 900                # pair_weights rescales above this (floats end near 2 ** 1024)
_WEIGHT_RESCALE = 2.0 ** -600


def pair_weights(genes=20, max_pairs=10):
    """Relative number of valid chromosomes (thesis 4.2.3: pick-ups before deposits, as many of each)
    with m = 0..max_pairs pick-up/deposit pairs: C(genes, 2m) / 64^m (the 2m positions, the forced
    P D P D order, 8 moves on every other gene), relative to the m = 0 count 8^genes. Where these exceed
    the float range (thousands of genes) all of them are scaled by the same power of two; a weight below
    the float range relative to the largest is 0."""
    weights = []
    w = 1.0                                   # C(genes, 2m) / 64^m, built up in floats
    for m in range(max_pairs + 1):
        if m > 0:
            k = 2 * m
            # dividing by 64 (a power of two) is exact: the same floats as C(genes, 2m) / 64.0 ** m
            w = w * (genes - k + 2) * (genes - k + 1) / ((k - 1) * k) / 64.0
            if w > _BIG_WEIGHT:
                for i in range(len(weights)):
                    weights[i] *= _WEIGHT_RESCALE
                w *= _WEIGHT_RESCALE
        weights.append(w)
    return weights


def draw_pairs(rand, genes=20, max_pairs=10, pairs="flat"):
    """The number m of pick-up/deposit pairs of a new chromosome from one draw (see ``pairs`` in the module
    docstring)."""
    u = rand.random()
    if pairs == "flat":
        m = 1 + int(u * max_pairs)
        return m if m <= max_pairs else max_pairs
    weights = pair_weights(genes, max_pairs)
    total = 0.0
    for w in weights:
        total += w
    target = u * total
    acc = 0.0
    for m in range(max_pairs):
        acc += weights[m]
        if target < acc:
            return m
    return max_pairs


def random_chromosome(rand, genes=20, max_pairs=10, pairs="flat"):
    """A random valid chromosome (constructive, see the module docstring for the draws; ``pairs``: how
    the number of pick-up/deposit pairs is drawn)."""
    m = draw_pairs(rand, genes, max_pairs, pairs)
    slots = list(range(genes))
    for i in range(2 * m):
        j = i + int(rand.random() * (genes - i))
        if j >= genes:
            j = genes - 1
        slots[i], slots[j] = slots[j], slots[i]
    ops = sorted(slots[:2 * m])
    chromosome = [-1] * genes
    for t in range(2 * m):
        chromosome[ops[t]] = PICK_UP if t % 2 == 0 else DEPOSIT
    for p in range(genes):
        if chromosome[p] < 0:
            chromosome[p] = random_direction(rand)
    return chromosome


def fitness(positives, attempts):
    """f = n_changes / (pickups_total + deposits_total) (thesis 4.2.3); 0 when nothing was attempted."""
    return positives / attempts if attempts else 0.0


class MemeticAgent:
    """One agent of MA1/MA2 (see the module docstring). ``pool``: its chromosomes (validated), or None to
    draw them from ``rand``. After each complete round (every chromosome of the pool executed
    ``executions`` times) ``round_ready`` is True and ``round_fitness`` holds each chromosome's fitness,
    for the oracle; the agent goes on with the next round meanwhile."""

    def __init__(self, config=None, rand=None, pool=None, heading=NORTH):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "MemeticAgent")
        self.cfg = cfg
        self.genes = cfg["genes"]
        self.max_pairs = cfg["max_pairs"]
        self.pairs = cfg["pairs"]
        ma1 = cfg["variant"] == "ma1"
        self.executions = cfg["executions"] if ma1 else 1
        size = 1 if ma1 else cfg["pool"]
        self.rho_sense = float(cfg["rho_sense"])
        self.memory = HeightMemory(cfg["memory"])
        if not isinstance(heading, int) or isinstance(heading, bool) or not 0 <= heading < N_DIRECTIONS:
            raise ValueError("heading must be a direction 0..7, got %r" % (heading,))
        self.heading = heading
        if pool is None:
            if rand is None:
                raise ValueError("MemeticAgent needs its chromosomes or a random source to draw them")
            pool = [random_chromosome(rand, self.genes, self.max_pairs, self.pairs) for _ in range(size)]
        if len(pool) != size:
            raise ChromosomeError("a %s agent holds %d chromosome(s), got %d" % (cfg["variant"], size, len(pool)))
        self.pool = []
        for c in pool:
            self.pool.append(self._checked(c))
        self.slot = 0                 # chromosome being executed
        self.gene = 0                 # next gene of it
        self.runs = 0                 # complete executions of it so far
        self.positives = 0
        self.attempts = 0
        self.round_fitness = [0.0] * size
        self.round_ready = False
        self._pick_h = None           # the last pick-up's cell height (units; after it, or before)
        self._shift = 1 if cfg["deposit_heights"] == "after" else 0
        self._gate = cfg["deposit_rule"] == "positive"
        self._unit_gate = cfg["gate"] == "unit"
        self._sense_phase = bool(cfg["sense_phase"])
        self._sensing = self._sense_phase   # the next step is a sensing stage
        self._sense_next = True
        self._last_move = STAY
        self.steps = 0
        self.samples = 0
        self.replaced = 0
        self.bad_inputs = 0

    def _checked(self, chromosome):
        problem = chromosome_problem(chromosome, self.genes)
        if problem:
            raise ChromosomeError(problem)
        return list(chromosome)

    @property
    def alpha(self):
        return self.memory.mean()

    @property
    def chromosome(self):
        return self.pool[self.slot]

    def replace(self, slot, chromosome):
        """The oracle hands the agent a new chromosome for ``slot`` (an index 0..pool size - 1; both
        validated, ValueError and nothing changed otherwise). Replacing the one being executed restarts it with
        fresh counters."""
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < len(self.pool):
            raise ValueError("chromosome slot must be an index 0..%d, got %r" % (len(self.pool) - 1, slot))
        self.pool[slot] = self._checked(chromosome)
        self.replaced += 1
        if slot == self.slot:
            self.gene = 0
            self.runs = 0
            self.positives = 0
            self.attempts = 0

    def _above(self, h):
        """The pick-up gate: the cell (``cell``: h > alpha) or the unit taken off it (``unit``: its
        bottom h - 1 >= alpha) lies above alpha."""
        mem = self.memory
        n = len(mem.values)
        if self._unit_gate:
            return n > 0 and (h - 1) * n >= mem.total
        return n > 0 and h * n > mem.total

    def _below(self, h):
        """The deposit gate: the cell (``cell``: h < alpha) or the unit laid on it (``unit``: its top
        h + 1 <= alpha) lies below alpha."""
        mem = self.memory
        n = len(mem.values)
        if self._unit_gate:
            return n > 0 and (h + 1) * n <= mem.total
        return n > 0 and h * n < mem.total

    def step(self, height, carrying, moved, rand):
        """Execute one gene: returns the intended ``(op, move)``."""
        if moved and self._last_move != STAY:
            self.heading = self._last_move
        self._last_move = STAY
        if (type(height) is not int or height < 0) and not height_ok(height):
            self.bad_inputs += 1          # skipped: no draw, nothing intended (a reported move still counts)
            return IDLE
        self.steps += 1
        if self._sensing:
            # Alg. 1's sensing stage, one step of its own before each gene (setting sense_phase)
            if self._sense_next and rand.random() < self.rho_sense:
                self.memory.push(height)
                self.samples += 1
            self._sensing = False
            return IDLE
        if self._sense_phase:
            self._sensing = True
        elif self._sense_next and rand.random() < self.rho_sense:
            self.memory.push(height)
            self.samples += 1
        chromosome = self.pool[self.slot]
        g = chromosome[self.gene]
        op = NO_OP
        move = STAY
        if g < N_DIRECTIONS:
            move = g
            self._sense_next = True
        else:
            self._sense_next = False
            self.attempts += 1
            if g == PICK_UP:
                if not carrying and self._above(height):
                    op = PICK_UP
                    self.positives += 1
                    self._pick_h = height - self._shift
            elif carrying and self._below(height):
                p = self._pick_h
                if p is not None and abs(height + self._shift - p) > 1:
                    op = DEPOSIT
                    self.positives += 1
                elif not self._gate:
                    op = DEPOSIT
        self.gene += 1
        if self.gene == len(chromosome):
            self.gene = 0
            self.runs += 1
            if self.runs == self.executions:
                self.round_fitness[self.slot] = fitness(self.positives, self.attempts)
                self.runs = 0
                self.positives = 0
                self.attempts = 0
                self.slot += 1
                if self.slot == len(self.pool):
                    self.slot = 0
                    self.round_ready = True
        self._last_move = move
        return op, move


def fittest_index(fitnesses):
    """The index of the highest fitness (the first one on a tie)."""
    best = 0
    for i in range(1, len(fitnesses)):
        if fitnesses[i] > fitnesses[best]:
            best = i
    return best


class Ma1Oracle:
    """Alg. 3's agent external to the swarm: once every agent has run its chromosome ``executions``
    times, ``select(fitnesses) -> index`` (default :func:`fittest_index`; an int, or an integer type with
    ``__index__`` such as numpy's, not a bool) picks the agent that keeps its chromosome; every other agent
    gets a new random valid one. Another return is a ValueError, the oracle unchanged."""

    def __init__(self, config=None, select=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "Ma1Oracle")
        self.genes = cfg["genes"]
        self.max_pairs = cfg["max_pairs"]
        self.pairs = cfg["pairs"]
        self.select = select or fittest_index
        self.evaluations = 0
        self.replaced = 0
        self.best_fitness = []        # the kept chromosome's fitness at each evaluation

    def after_cycle(self, agents, rand):
        """Called by the world after every cycle; returns the number of chromosomes replaced."""
        for a in agents:
            if not a.round_ready:
                return 0
        fits = [a.round_fitness[0] for a in agents]
        chosen = self.select(fits)
        best = chosen
        if not isinstance(best, int) and hasattr(best, "__index__"):
            best = best.__index__()             # an integer of another type (numpy.argmax gives one)
        if isinstance(chosen, bool) or not isinstance(best, int) or not 0 <= best < len(agents):
            raise ValueError("the MA1 selection returned %r, not an agent index 0..%d" % (chosen, len(agents) - 1))
        self.evaluations += 1
        self.best_fitness.append(fits[best])
        n = 0
        for i in range(len(agents)):
            agents[i].round_ready = False
            if i != best:
                agents[i].replace(0, random_chromosome(rand, self.genes, self.max_pairs, self.pairs))
                n += 1
        self.replaced += n
        return n


class Ma2Oracle:
    """Alg. 4's agent external to the swarm: after an agent has run each chromosome of its pool once,
    every chromosome with fitness below ``keep_threshold`` gets replaced by a new random valid one."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "Ma2Oracle")
        self.genes = cfg["genes"]
        self.max_pairs = cfg["max_pairs"]
        self.pairs = cfg["pairs"]
        self.keep_threshold = float(cfg["keep_threshold"])
        self.evaluations = 0
        self.replaced = 0

    def after_cycle(self, agents, rand):
        n = 0
        for a in agents:
            if not a.round_ready:
                continue
            a.round_ready = False
            self.evaluations += 1
            for slot in range(len(a.pool)):
                if a.round_fitness[slot] < self.keep_threshold:
                    a.replace(slot, random_chromosome(rand, self.genes, self.max_pairs, self.pairs))
                    n += 1
        self.replaced += n
        return n


def make_oracle(config=None, select=None):
    """The oracle of the configured variant (``select`` only for MA1: MA2 has no selection, so a
    ``select`` with ``ma2`` is a ValueError rather than silently unused)."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "memetic oracle")
    if select is not None and cfg["variant"] != "ma1":
        raise ValueError("a memetic oracle selection is only used by ma1 (Alg. 3), not %s" % cfg["variant"])
    return Ma1Oracle(cfg, select) if cfg["variant"] == "ma1" else Ma2Oracle(cfg)
