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
change nothing. ``last_decision``: ``(time_us, heading_rad, speed_mps)`` of the arbiter's last decision, or
None (the app's views draw its vote grid or field, ``arbiter.last_votes`` / ``last_field``, with it).
"""
from onboard.core.samples import SampleError, _Sample, _num
from onboard.vessel.arbiters import ArbiterInputError, NavState, make_arbiter


class DestinationSample(_Sample):
    """The destination the arbiter steers to, NED (m)."""
    FIELDS = ("time_us", "north_m", "east_m")

    def __init__(self, time_us, north_m, east_m):
        self.time_us = int(time_us)
        self.north_m = _num("north_m", north_m)
        self.east_m = _num("east_m", east_m)


class ObstaclesSample(_Sample):
    """The obstacles, a tuple of (north_m, east_m, radius_m) circles (NED, m)."""
    FIELDS = ("time_us", "obstacles")

    def __init__(self, time_us, obstacles):
        self.time_us = int(time_us)
        try:
            self.obstacles = tuple((_num("north_m", o[0]), _num("east_m", o[1]), _num("radius_m", o[2]))
                                   for o in obstacles)
        except (TypeError, IndexError):
            raise SampleError("obstacles must be a list of [north_m, east_m, radius_m]")

    def as_dict(self):
        return {"time_us": self.time_us, "obstacles": [list(o) for o in self.obstacles]}


def _finite(x):
    return x - x == 0.0


class ArbiterPart:
    """``name``: "damn" | "potential_field"; ``config``: the arbiter's settings; ``destination``: an initial
    (north_m, east_m) or None; ``obstacles_fn``: None (entry ``obstacles``) or a function giving them."""

    def __init__(self, name, config=None, destination=None, obstacles_fn=None, arrive_radius_m=3.0):
        self.arbiter = make_arbiter(name, config)
        self.destination = None if destination is None else (float(destination[0]), float(destination[1]))
        self.obstacles = ()
        self.obstacles_fn = obstacles_fn
        self.arrive_radius_m = arrive_radius_m
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
        if not (_finite(s.north_m) and _finite(s.east_m)):
            self.bad_samples += 1
            return
        self.destination = (s.north_m, s.east_m)
        self.arrived = False

    def _on_obstacles(self, s):
        for o in s.obstacles:
            if not (_finite(o[0]) and _finite(o[1]) and _finite(o[2])) or o[2] < 0.0:
                self.bad_samples += 1
                return
        self.obstacles = s.obstacles

    def reference(self, north_m, east_m, yaw_rad, speed_mps, now_us):
        """(heading_rad, speed_mps) for the controller from the estimate (module docstring)."""
        dest = self.destination
        if dest is not None and not self.arrived:
            dn, de = dest[0] - north_m, dest[1] - east_m
            self.arrived = dn * dn + de * de <= self.arrive_radius_m * self.arrive_radius_m
        if dest is None or self.arrived:
            return (yaw_rad, 0.0)
        obstacles = self.obstacles_fn() if self.obstacles_fn is not None else self.obstacles
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
                "refused": self.refused, "arrived": self.arrived}
