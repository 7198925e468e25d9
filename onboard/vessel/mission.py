"""Mission planner of the surface vessel (pure, MicroPython-safe): an event-driven state machine over the
course's task list that gives the arbiter its destination (RobotX AAVS section III-D: perception -> buoy
labelling -> mission planner -> arbiter -> controller).

Frames and units: the NED horizontal plane, points ``(north_m, east_m)``; headings in radians from north
towards east; time ``now_us`` (integer microseconds).

Interface::

    planner = MissionPlanner(tasks, start_ne_m, config)
    for event, data in planner.observe(north_m, east_m, now_us):     # geometry: arrived, gate_passed, timeout
        destination = planner.on_event(event, now_us, data)
    destination = planner.on_event("buoys_updated", now_us, labelled_buoys)
    destination = planner.on_event("pinger_fix", now_us, (north_m, east_m))

``on_event(event, now_us, data=None)`` returns the destination ``(north_m, east_m)`` for the arbiter, or
None when the mission is over (hold). Exposed: ``state`` ("idle", "<task kind>/<phase>", "done"),
``task_index``, ``current_task`` (a :class:`MissionTask` or None), ``destination``, ``deadline_us`` (the
current task's time-out), ``outcomes`` (per task: "pending", "done", "missed", "timed_out"), ``gate`` (the
gate being passed: centre, axis, ends) and ``events`` (counts per event).

Events:

- ``"start"``: begin with the first task;
- ``"arrived"`` (data: the way-point reached, or None: the current one): the vessel is within ``arrive_m``
  of the destination (``observe`` sends it, for the way-point beyond a gate only once past the gate's
  line; a caller may too); an arrival at a way-point that is no longer the destination (the events of
  one ``observe`` are handled in turn) is stale and ignored;
- ``"gate_passed"`` (data: the gate's centre, or None: the current gate): the vessel's track crossed the
  current gate's line segment in the direction of travel (``observe``); stale ones are ignored likewise;
- ``"buoys_updated"`` (data: a list of ``(role, north_m, east_m)``, the confirmed buoys labelled by
  ``onboard.vessel.buoy_perception.label_buoys`` with :meth:`MissionPlanner.expected`): gates are re-placed
  on the labelled pairs, and the pinger-marked gate is chosen when a fix is known;
- ``"pinger_fix"`` (data: ``(north_m, east_m)`` of the located pinger, ``onboard.vessel.pinger.locate``):
  chooses the pinger gate, the candidate gate nearest the fix;
- ``"timeout"``: the current task took longer than ``task_timeout_s`` (``observe`` sends it): it is
  marked "timed_out" and the next task starts.

Tasks (:class:`MissionTask`, in order) and their completion criteria:

- ``speed_gate`` (point: the gate's centre): phase "approach" to ``approach_m`` before the gate on its axis,
  then "through" to ``through_m`` beyond it. Done when the track crosses the gate's segment (between the
  labelled ``gate_left`` / ``gate_right`` buoys, else ``gate_half_width_m`` either side of the expected
  centre across the axis) moving along the axis; missed when the vessel reaches the "through" way-point
  without having crossed it.
- ``obstacle_field`` (point: the exit gate's centre; ``entry_ne_m``: the entry gate's centre, optional):
  "entry_approach" and "entry" as a gate (buoys ``entry_left`` / ``entry_right``), then "exit": straight
  for ``through_m`` beyond the exit gate (``exit_left`` / ``exit_right``) while the arbiter finds the way
  through the field. Done when both gates are crossed in order; missed when the entry or the exit gate
  is not crossed by the time its "through" way-point is reached.
- ``pinger_gate`` (point: the centre of the area of the candidate gates): phase "listen", to ``listen_m``
  before the area (pings are heard on the way); when a pinger fix and the buoys are known, the gate is
  the pair of confirmed buoys ``gate_min_m`` to ``gate_max_m`` apart, across the axis, with the midpoint
  within ``area_radius_m`` of the area's centre, nearest the fix (the buoy nearest the fix, the pinger
  buoy itself, is not a gate end); then "approach" and "through" as a gate, choosing again at each new fix
  until the "through" phase begins. Done when that gate is crossed.
- ``dock`` (point: the bay's centre): "approach" to ``approach_m`` before the bay on the axis, then
  "bay": steering for ``bay_beyond_m`` beyond its centre (an arbiter stopping a few metres short of its
  destination stops in the bay). Done within ``dock_arrive_m`` of the bay's centre.
- ``waypoint``: done on arrival.

The axis of a task is the direction from the previous task's point (the start for the first) to its
point, replaced by the perpendicular of a labelled gate pair when one is seen. Every task ends after
``task_timeout_s``. Bad input (NaN, an unknown event or task kind) raises :class:`MissionError` and
changes nothing.
"""
import math

from onboard.core.settings import POSITIVE, checked, is_number, within

TASK_KINDS = ("speed_gate", "obstacle_field", "pinger_gate", "dock", "waypoint")
EVENTS = ("start", "arrived", "gate_passed", "buoys_updated", "pinger_fix", "timeout")
GATE_ROLES = {"speed_gate": ("gate_left", "gate_right"), "entry": ("entry_left", "entry_right"),
              "exit": ("exit_left", "exit_right")}

DEFAULTS = {
    "approach_m": 8.0,              # lead-in way-point before a gate, on its axis
    "through_m": 4.0,               # way-point beyond a gate
    "arrive_m": 3.5,                # a way-point is reached within this (above the arbiter part's 3 m stop)
    "dock_arrive_m": 2.5,           # the dock is reached within this of the bay's centre ...
    "bay_beyond_m": 1.5,            # ... steering for this far beyond it (the arbiter stops 3 m short)
    "gate_half_width_m": 8.0,       # an unseen gate's half width across the axis (crossing test)
    "gate_tol_m": 8.0,              # a labelled pair's midpoint within this of the expected centre
    "gate_min_m": 5.0,              # candidate pinger gates: buoy separation
    "gate_max_m": 16.0,
    "area_radius_m": 18.0,          # candidate pinger gates: midpoint within this of the area's centre
    "listen_m": 14.0,               # listening way-point before the pinger area
    "pinger_exclude_m": 3.0,        # the buoy this near the fix is the pinger, not a gate end
    "task_timeout_s": 150.0,
}
SETTING_RANGES = {
    "approach_m": within(0.0, 100.0), "through_m": POSITIVE, "arrive_m": POSITIVE, "dock_arrive_m": POSITIVE,
    "bay_beyond_m": within(0.0, 20.0),
    "gate_half_width_m": POSITIVE, "gate_tol_m": POSITIVE, "gate_min_m": POSITIVE, "gate_max_m": POSITIVE,
    "area_radius_m": POSITIVE, "listen_m": within(0.0, 200.0), "pinger_exclude_m": within(0.0, 50.0),
    "task_timeout_s": POSITIVE,
}


class MissionError(ValueError):
    """An event, task or value the planner cannot use; one line."""


def _point(p, what):
    try:
        n, e = p[0], p[1]
    except (TypeError, IndexError, KeyError):
        raise MissionError("mission: %s must be (north_m, east_m), got %r" % (what, p))
    if not (is_number(n) and is_number(e)):
        raise MissionError("mission: %s must be finite, got %r" % (what, p))
    return (float(n), float(e))


class MissionTask:
    """One task: ``kind`` (one of :data:`TASK_KINDS`), its point (module docstring) and, for the obstacle
    field, ``entry_ne_m`` (the entry gate's centre, or None)."""

    def __init__(self, kind, north_m, east_m, entry_ne_m=None):
        if kind not in TASK_KINDS:
            raise MissionError("mission: unknown task kind %r (known: %s)" % (kind, ", ".join(TASK_KINDS)))
        self.kind = kind
        self.north_m, self.east_m = _point((north_m, east_m), "task point")
        self.entry_ne_m = None if entry_ne_m is None else _point(entry_ne_m, "entry gate")

    def __repr__(self):
        return "MissionTask(%s, %.1f, %.1f)" % (self.kind, self.north_m, self.east_m)


class Gate:
    """A gate to pass: ``centre`` (n, e), unit ``axis`` (the direction of travel), ``ends`` ((n, e), (n, e))
    of the segment to cross; ``seen``: placed on labelled buoys."""

    def __init__(self, centre, axis, half_width_m, ends=None):
        self.centre, self.axis = centre, axis
        if ends is None:
            sn, se = -axis[1] * half_width_m, axis[0] * half_width_m          # starboard of the axis
            ends = ((centre[0] - sn, centre[1] - se), (centre[0] + sn, centre[1] + se))
        self.ends = ends
        self.seen = False

    def point(self, along_m):
        """The point ``along_m`` along the axis from the centre (negative: before the gate)."""
        return (self.centre[0] + along_m * self.axis[0], self.centre[1] + along_m * self.axis[1])


def _unit(dn, de):
    d = math.sqrt(dn * dn + de * de)
    if d < 1e-9:
        return (1.0, 0.0)
    return (dn / d, de / d)


def _gate_on(left, right, axis_hint):
    """The :class:`Gate` between buoys ``left`` and ``right`` ((n, e)), its axis the perpendicular of the
    segment on the side of ``axis_hint``."""
    sn, se = _unit(right[0] - left[0], right[1] - left[1])
    axis = (se, -sn)                        # travel direction with ``right`` to starboard
    if axis[0] * axis_hint[0] + axis[1] * axis_hint[1] < 0.0:
        axis = (-axis[0], -axis[1])
    centre = (0.5 * (left[0] + right[0]), 0.5 * (left[1] + right[1]))
    g = Gate(centre, axis, 0.0, (left, right))
    g.seen = True
    return g


def segments_cross(p0, p1, q0, q1):
    """Whether segment p0-p1 meets segment q0-q1 (points (n, e); touching counts)."""
    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    d1, d2 = orient(q0, q1, p0), orient(q0, q1, p1)
    d3, d4 = orient(p0, p1, q0), orient(p0, p1, q1)
    return ((d1 <= 0.0 <= d2) or (d2 <= 0.0 <= d1)) and ((d3 <= 0.0 <= d4) or (d4 <= 0.0 <= d3)) and \
        not (d1 == d2 == 0.0)


class MissionPlanner:
    """The state machine (module docstring). ``tasks``: a list of :class:`MissionTask`; ``start_ne_m``: the
    vessel's start; ``config``: overrides of :data:`DEFAULTS`."""

    def __init__(self, tasks, start_ne_m, config=None):
        self.cfg = checked(DEFAULTS, SETTING_RANGES, config, "mission")
        if not tasks:
            raise MissionError("mission: the task list is empty")
        for t in tasks:
            if not isinstance(t, MissionTask):
                raise MissionError("mission: tasks must be MissionTask, got %r" % (t,))
        self.tasks = list(tasks)
        self.start_ne_m = _point(start_ne_m, "start")
        self.outcomes = ["pending"] * len(self.tasks)
        self.task_index = -1
        self.phase = None
        self.state = "idle"
        self.destination = None
        self.deadline_us = None
        self.gate = None
        self.fix_ne_m = None
        self.buoys = []
        self.events = {}
        self._prev_ne = None
        self._axes = []
        prev = self.start_ne_m
        for t in self.tasks:
            entry = t.entry_ne_m if t.entry_ne_m is not None else (t.north_m, t.east_m)
            self._axes.append(_unit(entry[0] - prev[0], entry[1] - prev[1]))
            prev = (t.north_m, t.east_m)

    # ------------------------------------------------------------------------------------------ queries
    @property
    def current_task(self):
        if 0 <= self.task_index < len(self.tasks):
            return self.tasks[self.task_index]
        return None

    @property
    def done(self):
        return self.state == "done"

    def expected(self):
        """The labelling hints for ``buoy_perception.label_buoys``: (name, north_m, east_m, heading_rad) of
        the speed gate, the field's entry and exit gates and the dock (the pinger gate is chosen here)."""
        out = []
        for k, t in enumerate(self.tasks):
            a = self._axes[k]
            h = math.atan2(a[1], a[0])
            if t.kind == "speed_gate":
                out.append(("speed_gate", t.north_m, t.east_m, h))
            elif t.kind == "obstacle_field":
                if t.entry_ne_m is not None:
                    out.append(("entry", t.entry_ne_m[0], t.entry_ne_m[1], h))
                    a = _unit(t.north_m - t.entry_ne_m[0], t.east_m - t.entry_ne_m[1])
                    h = math.atan2(a[1], a[0])
                out.append(("exit", t.north_m, t.east_m, h))
            elif t.kind == "dock":
                out.append(("dock", t.north_m, t.east_m, h))
        return out

    # ------------------------------------------------------------------------------------------ geometry
    def observe(self, north_m, east_m, now_us):
        """The events the vessel's position at ``now_us`` raises: ``("gate_passed", centre)`` when the track
        since the last call crossed the current gate along its axis, ``("arrived", destination)`` within
        ``arrive_m`` (``dock_arrive_m`` in the bay), ``("timeout", None)`` past ``deadline_us``."""
        p = _point((north_m, east_m), "position")
        prev, self._prev_ne = self._prev_ne, p
        out = []
        if self.state in ("idle", "done"):
            return out
        g = self.gate
        if g is not None and prev is not None and self.phase in ("approach", "through", "entry_approach",
                                                                 "entry", "exit"):
            moved = (p[0] - prev[0]) * g.axis[0] + (p[1] - prev[1]) * g.axis[1]
            if moved > 0.0 and segments_cross(prev, p, g.ends[0], g.ends[1]):
                out.append(("gate_passed", g.centre))
        d = self.destination
        if d is not None:
            radius, c = self.cfg["arrive_m"], d
            if self.phase == "bay":                       # the dock: near the bay's centre
                t = self.tasks[self.task_index]
                radius, c = self.cfg["dock_arrive_m"], (t.north_m, t.east_m)
            beyond = True
            if g is not None and self.phase in ("through", "entry", "exit"):
                # the way-point beyond a gate counts once past the gate's line (not a little before it)
                beyond = (p[0] - g.centre[0]) * g.axis[0] + (p[1] - g.centre[1]) * g.axis[1] >= 0.0
            if beyond and (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2 <= radius * radius:
                out.append(("arrived", d))
        if self.deadline_us is not None and now_us >= self.deadline_us:
            out.append(("timeout", None))
        return out

    # ------------------------------------------------------------------------------------------ events
    def on_event(self, event, now_us, data=None):
        """Handle one event (module docstring); returns the destination (or None: hold, mission over)."""
        if event not in EVENTS:
            raise MissionError("mission: unknown event %r (known: %s)" % (event, ", ".join(EVENTS)))
        if not isinstance(now_us, int):
            raise MissionError("mission: now_us must be an integer, got %r" % (now_us,))
        # what an event carries is checked before anything changes (its count included)
        if event == "pinger_fix":
            fix = _point(data, "pinger fix")
        elif event == "buoys_updated":
            buoys = self._checked_buoys(data)
        elif event in ("gate_passed", "arrived") and data is not None:
            point = _point(data, "gate" if event == "gate_passed" else "way-point")
        self.events[event] = self.events.get(event, 0) + 1
        if event == "start":
            if self.state == "idle":
                self._begin(0, now_us)
        elif event == "buoys_updated":
            self.buoys = buoys
            self._place_gate()
            if self.phase in ("listen", "approach") and self._kind() == "pinger_gate":
                self._choose_pinger_gate(now_us)
        elif event == "pinger_fix":
            self.fix_ne_m = fix
            if self.phase in ("listen", "approach") and self._kind() == "pinger_gate":
                self._choose_pinger_gate(now_us)
        elif self.state in ("idle", "done"):
            pass
        elif event == "timeout":
            if self.deadline_us is not None and now_us >= self.deadline_us:
                self._finish("timed_out", now_us)
        elif event == "gate_passed":
            if data is None or (self.gate is not None and point == self.gate.centre):
                self._gate_passed(now_us)
        elif event == "arrived":
            if data is None or point == self.destination:
                self._arrived(now_us)
        return self.destination

    def _checked_buoys(self, data):
        out = []
        try:
            items = list(data)
        except TypeError:
            raise MissionError("mission: buoys_updated needs a list of (role, north_m, east_m)")
        for b in items:
            try:
                role, n, e = b[0], b[1], b[2]
            except (TypeError, IndexError):
                raise MissionError("mission: a buoy must be (role, north_m, east_m), got %r" % (b,))
            out.append((str(role),) + _point((n, e), "buoy"))
        return out

    def _kind(self):
        t = self.current_task
        return None if t is None else t.kind

    def _set(self, phase, destination):
        self.phase = phase
        self.state = "%s/%s" % (self.tasks[self.task_index].kind, phase)
        self.destination = destination

    def _begin(self, index, now_us):
        self.task_index = index
        self.gate = None
        if index >= len(self.tasks):
            self.state, self.phase, self.destination, self.deadline_us = "done", None, None, None
            return
        t = self.tasks[index]
        self.deadline_us = now_us + int(self.cfg["task_timeout_s"] * 1e6)
        axis = self._axes[index]
        cfg = self.cfg
        if t.kind == "speed_gate":
            self.gate = Gate((t.north_m, t.east_m), axis, cfg["gate_half_width_m"])
            self._place_gate()
            self._gate_phase("approach")
        elif t.kind == "obstacle_field":
            if t.entry_ne_m is not None:
                self.gate = Gate(t.entry_ne_m, axis, cfg["gate_half_width_m"])
                self._place_gate()
                self._gate_phase("entry_approach")
            else:
                self._exit_gate()
        elif t.kind == "pinger_gate":
            c = (t.north_m, t.east_m)
            self._set("listen", (c[0] - cfg["listen_m"] * axis[0], c[1] - cfg["listen_m"] * axis[1]))
            self._choose_pinger_gate(now_us)
        elif t.kind == "dock":
            self._set("approach", (t.north_m - cfg["approach_m"] * axis[0], t.east_m - cfg["approach_m"] * axis[1]))
        else:
            self._set("waypoint", (t.north_m, t.east_m))

    def _gate_phase(self, phase):
        """Destination of a gate phase: before the gate (approach phases), beyond it (the others)."""
        g = self.gate
        if phase in ("approach", "entry_approach"):
            self._set(phase, g.point(-self.cfg["approach_m"]))
        else:
            self._set(phase, g.point(self.cfg["through_m"]))

    def _exit_gate(self):
        t = self.tasks[self.task_index]
        axis = self._axes[self.task_index]
        if t.entry_ne_m is not None:
            axis = _unit(t.north_m - t.entry_ne_m[0], t.east_m - t.entry_ne_m[1])
        self.gate = Gate((t.north_m, t.east_m), axis, self.cfg["gate_half_width_m"])
        self._place_gate()
        self._gate_phase("exit")

    def _gate_roles(self):
        kind = self._kind()
        if kind == "speed_gate":
            return GATE_ROLES["speed_gate"]
        if kind == "obstacle_field":
            return GATE_ROLES["entry" if self.phase in ("entry_approach", "entry") else "exit"]
        return None

    def _place_gate(self):
        """Re-place the current gate on its labelled buoy pair (the pair nearest the expected centre within
        ``gate_tol_m``); the destination follows when it is a gate way-point."""
        roles = self._gate_roles()
        g = self.gate
        if roles is None or g is None:
            return
        lefts = [b for b in self.buoys if b[0] == roles[0]]
        rights = [b for b in self.buoys if b[0] == roles[1]]
        best = None
        for a in lefts:
            for b in rights:
                mn, me = 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])
                off = math.sqrt((mn - g.centre[0]) ** 2 + (me - g.centre[1]) ** 2)
                if off <= self.cfg["gate_tol_m"] and (best is None or off < best[0]):
                    best = (off, a, b)
        if best is None:
            return
        self.gate = _gate_on(best[1][1:], best[2][1:], g.axis)
        if self.phase is not None:
            self._gate_phase(self.phase)

    def _choose_pinger_gate(self, now_us):
        """The pinger gate: the candidate pair nearest the fix (module docstring); a new choice moves the
        destination to its approach way-point."""
        if self.fix_ne_m is None or not self.buoys:
            return
        t = self.tasks[self.task_index]
        cfg = self.cfg
        fn, fe = self.fix_ne_m
        axis = self._axes[self.task_index]
        pts = [(b[1], b[2]) for b in self.buoys if b[0] not in ("dock",)]
        near = [p for p in pts if (p[0] - t.north_m) ** 2 + (p[1] - t.east_m) ** 2
                <= (cfg["area_radius_m"] + cfg["gate_max_m"]) ** 2]
        if near:
            pinger = min(near, key=lambda p: (p[0] - fn) ** 2 + (p[1] - fe) ** 2)
            if (pinger[0] - fn) ** 2 + (pinger[1] - fe) ** 2 <= cfg["pinger_exclude_m"] ** 2:
                near = [p for p in near if p is not pinger]
        best = None
        for i in range(len(near)):
            for j in range(i + 1, len(near)):
                a, b = near[i], near[j]
                dn, de = b[0] - a[0], b[1] - a[1]
                sep = math.sqrt(dn * dn + de * de)
                if not cfg["gate_min_m"] <= sep <= cfg["gate_max_m"]:
                    continue
                if abs(dn * axis[0] + de * axis[1]) > 0.5 * sep:          # not across the axis
                    continue
                mn, me = 0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1])
                if (mn - t.north_m) ** 2 + (me - t.east_m) ** 2 > cfg["area_radius_m"] ** 2:
                    continue
                d = (mn - fn) ** 2 + (me - fe) ** 2
                if best is None or d < best[0]:
                    best = (d, a, b)
        if best is None:
            return
        a, b = best[1], best[2]
        # left / right as seen along the axis
        if (b[0] - a[0]) * (-axis[1]) + (b[1] - a[1]) * axis[0] < 0.0:
            a, b = b, a
        self.gate = _gate_on(a, b, axis)
        self._gate_phase("approach")

    def _finish(self, outcome, now_us):
        self.outcomes[self.task_index] = outcome
        self._begin(self.task_index + 1, now_us)

    def _gate_passed(self, now_us):
        kind, phase = self._kind(), self.phase
        if kind == "obstacle_field" and phase in ("entry_approach", "entry"):
            self._exit_gate()
        elif phase in ("approach", "through", "exit") and kind in ("speed_gate", "obstacle_field", "pinger_gate"):
            self._finish("done", now_us)

    def _arrived(self, now_us):
        kind, phase = self._kind(), self.phase
        if phase == "approach" and kind in ("speed_gate", "pinger_gate"):
            self._gate_phase("through")
        elif phase == "entry_approach":
            self._gate_phase("entry")
        elif phase in ("through", "entry", "exit"):
            self._finish("missed", now_us)            # the way-point beyond the gate, the gate not crossed
        elif kind == "dock" and phase == "approach":
            t, a = self.tasks[self.task_index], self._axes[self.task_index]
            self._set("bay", (t.north_m + self.cfg["bay_beyond_m"] * a[0], t.east_m + self.cfg["bay_beyond_m"] * a[1]))
        elif phase in ("bay", "waypoint"):
            self._finish("done", now_us)
        # "listen": hold at the listening point until a fix and the buoys choose the gate (or the time-out)

    def report(self):
        return {"state": self.state, "task_index": self.task_index, "outcomes": list(self.outcomes),
                "events": dict(self.events), "fix_ne_m": None if self.fix_ne_m is None else list(self.fix_ne_m)}
