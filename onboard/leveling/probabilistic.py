"""The probabilistic leveling agent (Cook thesis 4.2.1, Alg. 1 and Alg. 2; pure, MicroPython).

The agent alternates two phases, one per step (one step per cycle of Alg. 1's outer loop):

- SENSE: with probability ``rho_sense`` it stores the height h of its cell in a FIFO of the last
  ``memory`` (8) heights; alpha is their mean (the agent's estimate of the terrain's mean height);
- ACT: not carrying, with probability rho_pu(h) and h > alpha: pick up one unit; carrying, with
  probability rho_de(h) and h < alpha: deposit one unit; then ``move_agent()`` (Alg. 2): with
  probability 0.75 towards a random one of the 8 neighbours, else forward (its heading). The world
  refuses a move off the grid or onto an occupied cell (the thesis's oracle).

Probabilities (``rho_mode``): ``const``: rho_pu = rho_de = ``rho`` (thesis fig. 4.2); ``k``: the
height-dependent rho_pu = (h / (k + h))^2 and rho_de = (k / (k + h))^2 (Deneubourg et al., thesis fig.
4.3), h in units.

Where the thesis is silent (reading aid, assumptions A4, A5, A7):

- ``sense = "always_read"`` (default): h is the current cell's height at every SENSE, and it enters the
  FIFO with probability rho_sense; ``"literal"``: h changes only when it is sampled (Alg. 1 as written);
- ``rho_sense`` defaults to 0.01: the thesis only asks it to be "low enough that cells are sampled
  sparsely across the grid" (4.2.1); a high one makes alpha a local mean (see DEFAULTS);
- no pick-up or deposit while the FIFO is empty;
- the heading is the direction of the last move that happened.

Draws, in this order (so any implementation fed the same uniforms takes the same decisions): SENSE draws
one (the sampling); ACT draws one for the pick-up or deposit probability (always, carrying or not), one
for random vs forward and, for a random move, one for the direction.

Input: ``step(height, carrying, moved, rand)`` with the height of the agent's cell (units, a finite
number >= 0), whether it carries a unit now, whether its last intended move happened, and the uniform
source. A bad height is counted in ``bad_inputs`` and the step is skipped (no draw, nothing intended,
the phase kept; a move it reports as happened still sets the heading).
"""
from onboard.core.settings import POSITIVE, checked, int_at_least, one_of, within
from onboard.leveling.grid import DEPOSIT, IDLE, NO_OP, NORTH, PICK_UP, STAY, HeightMemory, height_ok

SENSE = 0
ACT = 1
RHO_MODES = ("const", "k")
SENSE_MODES = ("always_read", "literal")

DEFAULTS = {
    "rho_mode": "const",          # const: rho_pu = rho_de = rho (fig. 4.2); k: Deneubourg curves (fig. 4.3)
    "rho": 0.3,                   # constant pick-up and deposit probability (thesis best: 0.3)
    "k": 6.0,                     # units; height-dependent curves (thesis best: 6)
    # probability of storing the sensed height; the thesis gives no value, only "low enough that cells are
    # sampled sparsely across the grid" (4.2.1): at 0.2 the 8 heights come from the last ~40 cells walked,
    # alpha is a local mean and a 32x32 terrain settles into level plateaus at different heights
    "rho_sense": 0.01,
    "sense": "always_read",       # always_read | literal (A4)
    "memory": 8,                  # FIFO length (heights)
    "random_move": 0.75,          # Alg. 2: probability of a random move (else forward)
}
SETTING_RANGES = {
    "rho_mode": one_of(*RHO_MODES),
    "rho": within(0.0, 1.0),
    "k": POSITIVE,
    "rho_sense": within(0.0, 1.0),
    "sense": one_of(*SENSE_MODES),
    "memory": int_at_least(1),
    "random_move": within(0.0, 1.0),
}


def rho_pickup_k(h, k):
    """Pick-up probability (h / (k + h))^2 (thesis 4.2.1, after Deneubourg et al.); 0 at h = 0 (k = 0
    too), 1/4 at h = k. h, k in units (>= 0)."""
    if h == 0:
        return 0.0
    r = h / (k + h)
    return r * r


def rho_deposit_k(h, k):
    """Deposit probability (k / (k + h))^2 (thesis 4.2.1); 1 at h = 0 (k = 0 too), 1/4 at h = k."""
    if h == 0:
        return 1.0
    r = k / (k + h)
    return r * r


class ProbabilisticAgent:
    """One agent of Alg. 1 (see the module docstring). ``heading``: its initial direction 0..7."""

    def __init__(self, config=None, heading=NORTH):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "ProbabilisticAgent")
        self.cfg = cfg
        self.const = cfg["rho_mode"] == "const"
        self.rho = float(cfg["rho"])
        self.k = float(cfg["k"])
        self.rho_sense = float(cfg["rho_sense"])
        self.always_read = cfg["sense"] == "always_read"
        self.random_move = float(cfg["random_move"])
        self.memory = HeightMemory(cfg["memory"])
        if not isinstance(heading, int) or isinstance(heading, bool) or not 0 <= heading < 8:
            raise ValueError("heading must be a direction 0..7, got %r" % (heading,))
        self.heading = heading
        self.phase = SENSE
        self.h = None                 # the height the ACT phase acts on (units)
        self._last_move = STAY
        self.steps = 0
        self.samples = 0
        self.bad_inputs = 0

    @property
    def alpha(self):
        """The FIFO mean (units), or None before the first sample."""
        return self.memory.mean()

    def rho_pickup(self, h):
        return self.rho if self.const else rho_pickup_k(h, self.k)

    def rho_deposit(self, h):
        return self.rho if self.const else rho_deposit_k(h, self.k)

    def step(self, height, carrying, moved, rand):
        """One phase of Alg. 1: returns the intended ``(op, move)`` (:mod:`onboard.leveling.grid`)."""
        if moved:
            last = self._last_move
            if last != STAY:
                self.heading = last
        if (type(height) is not int or height < 0) and not height_ok(height):
            self.bad_inputs += 1
            self._last_move = STAY        # the move it reported is taken; this step intends none
            return IDLE
        self.steps += 1
        if self.phase == SENSE:
            self.phase = ACT
            self._last_move = STAY
            if self.always_read:
                self.h = height
            if rand.random() < self.rho_sense:
                self.h = height
                self.memory.push(height)
                self.samples += 1
            return IDLE
        self.phase = SENSE
        op = NO_OP
        h = self.h
        u = rand.random()
        if h is not None:
            mem = self.memory
            n = len(mem.values)
            if not carrying:
                # pick up: rand() < rho_pu and h > alpha (Alg. 1)
                if u < (self.rho if self.const else rho_pickup_k(h, self.k)) and n and h * n > mem.total:
                    op = PICK_UP
            elif u < (self.rho if self.const else rho_deposit_k(h, self.k)) and n and h * n < mem.total:
                op = DEPOSIT
        # move_agent() (Alg. 2): random with probability 0.75, else forward
        if rand.random() < self.random_move:
            move = int(rand.random() * 8)
            if move > 7:
                move = 7
        else:
            move = self.heading
        self._last_move = move
        return op, move
