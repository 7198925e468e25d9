"""The grid of the thesis's leveling agents (Cook thesis 4.2.1, pure, MicroPython): moves, operations,
the FIFO height memory and a seeded uniform source.

The grid is the NED plane cut into cells: a row index grows to the north, a column index to the east.
Heights are in *units* (one unit is one block of one cell, thesis 4.2.3). An agent stands on one cell,
moves to one of its 8 neighbours, and picks up or deposits one unit in the cell below it.

What a grid agent intends each step is a pair ``(op, move)``:

- ``op``: ``NO_OP``, ``PICK_UP`` (8) or ``DEPOSIT`` (9) in the cell below the agent;
- ``move``: ``STAY`` (-1) or a direction 0..7 (``NORTH``, ``NORTH_EAST`` ... ``NORTH_WEST``, clockwise
  seen from above); the numbers are the memetic genes of thesis 4.2.3 (0-7 moves, 8 pick-up, 9 deposit).

The world applies the pair (a move onto the grid's edge or an occupied cell does not happen) and tells
the agent next step what it senses: the height of its cell, whether it carries a unit and whether its
last move happened.

Randomness: the behaviours draw from any object with ``random()`` -> a float in [0, 1) (MicroPython's
``random`` module, ``random.Random``, a NumPy Generator, :class:`XorShift32`); they never seed or
create one.
"""

NORTH = 0
NORTH_EAST = 1
EAST = 2
SOUTH_EAST = 3
SOUTH = 4
SOUTH_WEST = 5
WEST = 6
NORTH_WEST = 7
N_DIRECTIONS = 8
STAY = -1
# (rows north, columns east) of one step in each direction
DIRECTION_STEPS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))

NO_OP = -1
PICK_UP = 8
DEPOSIT = 9
IDLE = (NO_OP, STAY)


def random_direction(rand):
    """A direction 0..7 from one uniform draw."""
    d = int(rand.random() * N_DIRECTIONS)
    return d if d < N_DIRECTIONS else N_DIRECTIONS - 1


def height_ok(h):
    """True for a finite number >= 0 (a cell height in units); False for anything else (NaN, inf, None,
    a negative reading, a string)."""
    if isinstance(h, bool):
        return False
    try:
        return h >= 0 and h - h == 0
    except TypeError:
        return False


class HeightMemory:
    """The FIFO of the last ``size`` sensed heights and its mean alpha (thesis 4.2.1: "a FIFO queue which
    may hold a maximum of eight heights"; alpha is the agent's estimate of the terrain's mean height).

    ``above(h)`` / ``below(h)`` compare h with alpha as ``h * count > total`` so integer heights compare
    exactly; both are False while the memory is empty (no estimate yet)."""

    def __init__(self, size=8):
        if not isinstance(size, int) or size < 1:
            raise ValueError("height memory size must be an integer >= 1, got %r" % (size,))
        self.size = size
        self.values = []
        self.total = 0

    @property
    def count(self):
        return len(self.values)

    def push(self, h):
        """Store height ``h`` (units), dropping the oldest beyond ``size``. ``total`` is the sum of the
        heights held: kept exactly for integer heights; with a float among them it is summed afresh when
        one leaves (subtracting a float leaves rounding behind: 1e16 + 1 - 1e16 is 0, not 1)."""
        values = self.values
        values.append(h)
        self.total += h
        if len(values) > self.size:
            old = values.pop(0)
            if type(old) is int and type(self.total) is int:
                self.total -= old
            else:
                self.total = sum(values)

    def mean(self):
        """alpha (units), or None while empty."""
        n = len(self.values)
        return self.total / n if n else None

    def above(self, h):
        n = len(self.values)
        return n > 0 and h * n > self.total

    def below(self, h):
        n = len(self.values)
        return n > 0 and h * n < self.total


class XorShift32:
    """Seeded uniforms in [0, 1) (xorshift32): the same numbers under CPython and MicroPython, for tests
    and for boards without a ``random`` module. ``random()`` as :mod:`random`."""

    def __init__(self, seed):
        self.state = (int(seed) * 2654435761 + 1) & 0xFFFFFFFF or 1

    def random(self):
        s = self.state
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        self.state = s
        return s / 4294967296.0
