"""The arbiter as a part of a boat app on a Node (pure): where to head and how fast, from the estimate, the
obstacles and the destination (RobotX AAVS III-D: perception -> planner -> arbiter -> controller).

Entries (``onboard.runtime.node``, recorded at the boundary): ``destination`` (:class:`DestinationSample`,
from a mission planner or an operator) and ``obstacles`` (:class:`ObstaclesSample`, a list of
[north_m, east_m, radius_m] circles), unless an ``obstacles_fn()`` is given (e.g. the perception part's
confirmed buoys), which then supplies them. The app's control group asks :meth:`ArbiterPart.reference`
for the (heading_rad, speed_mps) reference of its heading/speed controller each control period: the
arbiter's decision (``onboard.vessel.arbiters``), or (yaw, 0) -- hold the heading, stop -- with no
destination yet or within ``arrive_radius_m`` of it. While recording, each decision is output on
``arbiter``. Bad samples (NaN, a negative radius) and decisions the arbiter refuses are counted and
change nothing.

Debounce: the obstacles and the destination the arbiter plans with are replaced only when they change by
more than a tolerance: the obstacle set when a circle is added or removed, or one moves (north, east or
radius) by more than ``obstacle_tolerance_m``; the destination when it moves (north or east) by more than
``destination_tolerance_m``. A perceived buoy's estimate creeps by millimetres from sweep to sweep; without
this every creep would make the DAMN arbiter compute its cost-to-go grid again (tens of ms each).
``obstacle_updates`` / ``destination_updates`` count the replacements. The part's settings
(:data:`PART_DEFAULTS`: ``arrive_radius_m`` and the two tolerances) may be given in the arbiter's
``config`` table; the rest of it is the arbiter's.

``last_decision``: ``(time_us, heading_rad, speed_mps)`` of the arbiter's last decision, or None (the app's
views draw its vote grid or field, ``arbiter.last_votes`` / ``last_field``, with it).
"""
from onboard.core.samples import SampleError, _int, _Sample, _num
from onboard.vessel.arbiters import ArbiterInputError, NavState, make_arbiter

PART_DEFAULTS = {
    "arrive_radius_m": 3.0,             # hold (stop) within this of the destination
    "obstacle_tolerance_m": 0.3,        # an obstacle moving less than this is not a new obstacle set
    "destination_tolerance_m": 0.4,     # a destination moving less than this is not a new destination
}


class ArbiterPartError(ValueError):
    """A part setting out of range; one line."""


class DestinationSample(_Sample):
    """The destination the arbiter steers to, NED (m)."""
    FIELDS = ("time_us", "north_m", "east_m")

    def __init__(self, time_us, north_m, east_m):
        self.time_us = _int("time_us", time_us)
        self.north_m = _num("north_m", north_m)
        self.east_m = _num("east_m", east_m)


class ObstaclesSample(_Sample):
    """The obstacles, a tuple of (north_m, east_m, radius_m) circles (NED, m)."""
    FIELDS = ("time_us", "obstacles")

    def __init__(self, time_us, obstacles):
        self.time_us = _int("time_us", time_us)
        try:
            self.obstacles = tuple((_num("north_m", o[0]), _num("east_m", o[1]), _num("radius_m", o[2]))
                                   for o in obstacles)
        except (TypeError, IndexError):
            raise SampleError("obstacles must be a list of [north_m, east_m, radius_m]")

    def as_dict(self):
        return {"time_us": self.time_us, "obstacles": [list(o) for o in self.obstacles]}


def _finite(x):
    return x - x == 0.0


def _number(x):
    """A finite number, not a bool (``x - x`` is NaN for NaN and the infinities)."""
    try:
        return not isinstance(x, bool) and x - x == 0.0
    except (TypeError, ValueError):
        return False


def split_config(config):
    """(part settings, arbiter settings) of an ``arbiter_config`` table: :data:`PART_DEFAULTS` keys (checked:
    finite, >= 0; :class:`ArbiterPartError` otherwise) and the rest."""
    part = dict(PART_DEFAULTS)
    rest = {}
    for k, v in (config or {}).items():
        if k in PART_DEFAULTS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v) or v < 0:
                raise ArbiterPartError("arbiter part: %s must be a finite number >= 0, got %r" % (k, v))
            part[k] = float(v)
        else:
            rest[k] = v
    return part, rest


def moved(old, new, tol_m):
    """Whether the obstacle set ``new`` differs from ``old`` (tuples of (north_m, east_m, radius_m)) by more
    than ``tol_m``: a different count, or a circle whose north, east or radius moved by more than it."""
    if old is None or len(old) != len(new):
        return True
    for a, b in zip(old, new):
        if abs(a[0] - b[0]) > tol_m or abs(a[1] - b[1]) > tol_m or abs(a[2] - b[2]) > tol_m:
            return True
    return False


class ArbiterPart:
    """``name``: "damn" | "potential_field"; ``config``: the arbiter's settings and the part's
    (:data:`PART_DEFAULTS`); ``destination``: an initial (north_m, east_m) or None; ``obstacles_fn``: None
    (entry ``obstacles``) or a function giving them; ``arrive_radius_m``: overrides the config's."""

    def __init__(self, name, config=None, destination=None, obstacles_fn=None, arrive_radius_m=None):
        part, rest = split_config(config)
        if arrive_radius_m is not None:
            part["arrive_radius_m"] = float(arrive_radius_m)
        self.arbiter = make_arbiter(name, rest)
        self.destination = None if destination is None else (float(destination[0]), float(destination[1]))
        self.obstacles = ()
        self.obstacles_fn = obstacles_fn
        self.arrive_radius_m = part["arrive_radius_m"]
        self.obstacle_tolerance_m = part["obstacle_tolerance_m"]
        self.destination_tolerance_m = part["destination_tolerance_m"]
        self.obstacle_updates = 0
        self.destination_updates = 0
        self.bad_samples = 0
        self.refused = 0
        self.arrived = False
        self.last_decision = None
        self.node = None

    def attach(self, node):
        self.node = node
        self.on_destination = node.entry("destination", self._on_destination)
        self.on_obstacles = node.entry("obstacles", self._on_obstacles)

    def _on_destination(self, s):
        self.set_destination(s.north_m, s.east_m)

    def set_destination(self, north_m, east_m):
        """Steer to (north_m, east_m) from now on, unless it is within ``destination_tolerance_m`` (north and
        east) of the destination held (a part on the same node, e.g. the mission, calls this directly).
        A non-finite one is counted in ``bad_samples`` and the destination held stays; returns whether it
        was replaced."""
        if not (_number(north_m) and _number(east_m)):
            self.bad_samples += 1
            return False
        d, tol = self.destination, self.destination_tolerance_m
        if d is not None and abs(north_m - d[0]) <= tol and abs(east_m - d[1]) <= tol:
            return False
        self.destination = (float(north_m), float(east_m))
        self.arrived = False
        self.destination_updates += 1
        return True

    def _on_obstacles(self, s):
        self.set_obstacles(s.obstacles)

    def set_obstacles(self, obstacles):
        """Hold ``obstacles`` ((north_m, east_m, radius_m) circles) for the arbiter when they changed by more
        than ``obstacle_tolerance_m`` (module docstring); returns those held (a part on the same node, e.g. the
        mission, calls this directly). A set with a malformed or non-finite circle or a negative radius is
        counted in ``bad_samples`` and the obstacles held stay."""
        try:
            obstacles = tuple(obstacles)
            bad = any(len(o) != 3 or not (_number(o[0]) and _number(o[1]) and _number(o[2])) or o[2] < 0.0
                      for o in obstacles)
        except (TypeError, IndexError):
            bad = True
        if bad:
            self.bad_samples += 1
            return self.obstacles
        if moved(self.obstacles if self.obstacle_updates else None, obstacles, self.obstacle_tolerance_m):
            self.obstacles = tuple(obstacles)
            self.obstacle_updates += 1
        return self.obstacles

    def reference(self, north_m, east_m, yaw_rad, speed_mps, now_us):
        """(heading_rad, speed_mps) for the controller from the estimate (module docstring)."""
        dest = self.destination
        if dest is not None and not self.arrived:
            dn, de = dest[0] - north_m, dest[1] - east_m
            self.arrived = dn * dn + de * de <= self.arrive_radius_m * self.arrive_radius_m
        if dest is None or self.arrived:
            return (yaw_rad, 0.0)
        obstacles = self.set_obstacles(self.obstacles_fn()) if self.obstacles_fn is not None else self.obstacles
        try:
            heading, speed = self.arbiter.decide(NavState(north_m, east_m, yaw_rad, speed_mps), obstacles, dest)
        except ArbiterInputError:
            self.refused += 1
            return (yaw_rad, 0.0)
        self.last_decision = (now_us, heading, speed)
        if self.node is not None and self.node.recording:
            self.node.output("arbiter", now_us, {"time_us": now_us, "heading_rad": heading, "speed_mps": speed,
                                                 "destination_ne_m": list(dest), "obstacles": len(obstacles)})
        return (heading, speed)

    def report(self):
        return {"arbiter": self.arbiter.name, "decisions": self.arbiter.decisions, "bad_samples": self.bad_samples,
                "refused": self.refused, "arrived": self.arrived, "obstacle_updates": self.obstacle_updates,
                "destination_updates": self.destination_updates}
