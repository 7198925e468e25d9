"""Surface-vessel courses: the buoys, start, goal or task list of a boat run (RobotX AAVS section II, the
RobotX 2016 tasks), read from a TOML course file, written back, or generated from a seed.

Frames and units: NED horizontal plane, metres; yaw in radians from north towards east (the file says
``yaw_deg``). A buoy is a vertical cylinder standing on the water: ``radius_m``, ``height_m`` above the
water line. The format is documented in ``docs/formats/boat-course.md``; an example is
``harness/scenarios/boat/courses/example.toml``.

- :func:`load_course` reads a course file; anything malformed raises :class:`CourseFileError` whose text is
  one line naming the file, the key and the problem;
- :func:`course_to_toml` writes a course that :func:`load_course` reads back equal;
- :func:`generate_course` makes a seeded course: ``"robotx"`` (speed gate, obstacle field with entry and
  exit gates and obstacles inside, two gates of which the pinger marks one, a dock, a shore line) or
  ``"buoy_field"`` (random obstacles between the start and one goal 60-100 m away, the goal reachable).

Pure Python plus numpy for the generator's random numbers (``harness.sim.rng``).
"""
import math
import tomllib
from collections import deque
from dataclasses import dataclass

from harness.sim.rng import RunRandom

ROLES = ("obstacle", "gate_left", "gate_right", "entry_left", "entry_right", "exit_left", "exit_right",
         "pinger", "dock")
TASK_KINDS = ("speed_gate", "obstacle_field", "pinger_gate", "dock", "waypoint")
KINDS = ("robotx", "buoy_field")

MAX_EXTENT_M = 10000.0             # farthest point of a course from the local origin (RobotX courses span ~100 m)
BOAT_BEAM_M = 2.5                  # WAM-V 16 beam (with margin): the generator keeps gaps wider than this
_TOP_KEYS = ("start", "buoys", "goal", "tasks", "shore")
_START_KEYS = ("north_m", "east_m", "yaw_deg")
_BUOY_KEYS = ("north_m", "east_m", "radius_m", "height_m")
_POINT_KEYS = ("north_m", "east_m")


@dataclass(frozen=True)
class Buoy:
    """A buoy as a vertical cylinder: centre (``north_m``, ``east_m``), ``radius_m``, ``height_m`` above the
    water; ``role`` one of :data:`ROLES`."""
    north_m: float
    east_m: float
    radius_m: float
    height_m: float
    role: str = "obstacle"


@dataclass(frozen=True)
class Task:
    """One mission task: ``kind`` one of :data:`TASK_KINDS` and its point in NED (m): the speed gate's centre,
    the obstacle field's exit-gate centre, the pinger-marked gate's centre, the dock bay's centre or a
    way-point."""
    kind: str
    north_m: float
    east_m: float


@dataclass(frozen=True)
class Course:
    """Start pose (NED m, yaw rad), ``buoys`` (tuple of :class:`Buoy`), ``goal`` ((north_m, east_m) for a single
    way-point, else None), ``tasks`` (tuple of :class:`Task`, empty for a single way-point), ``shore`` (a
    polyline of (north_m, east_m) points, possibly empty)."""
    start_north_m: float
    start_east_m: float
    start_yaw_rad: float
    buoys: tuple
    goal: tuple | None
    tasks: tuple
    shore: tuple = ()


class CourseFileError(ValueError):
    """A malformed course file; ``str(e)`` is one line naming the file, the key and the problem."""


# ---------------------------------------------------------------------------------------------- reading

def load_course(path):
    """The :class:`Course` of the TOML course file at ``path`` (format: ``docs/formats/boat-course.md``)."""
    name = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise CourseFileError("course file %s: cannot read: %s" % (name, _one_line(e.strerror or e)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CourseFileError("course file %s: not UTF-8 text" % name)
    return parse_course(text, name)


def parse_course(text, name="<string>"):
    """:func:`load_course` of TOML ``text`` (``name`` in the error messages)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CourseFileError("course file %s: not valid TOML: %s" % (name, _one_line(e)))
    except RecursionError:                      # tomllib recurses once per level of nested arrays / tables
        raise CourseFileError("course file %s: not valid TOML: arrays or tables nested too deeply" % name)
    except ValueError as e:                     # an integer of more than 4300 digits (int's conversion limit)
        raise CourseFileError("course file %s: not valid TOML: %s" % (name, _one_line(e)))
    return _parse(doc, name)


def _one_line(x):
    return " ".join(str(x).split())


def _parse(doc, name):
    def fail(key, problem):
        raise CourseFileError("course file %s: %s: %s" % (name, key, problem))

    def table(value, key, allowed, required):
        if not isinstance(value, dict):
            fail(key, "must be a table")
        for k in value:
            if k not in allowed:
                fail("%s.%s" % (key, k), "unknown key (allowed: %s)" % ", ".join(allowed))
        for k in required:
            if k not in value:
                fail("%s.%s" % (key, k), "missing")
        return value

    def number(value, key, positive=False):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(key, "must be a number, got %s" % _one_line(repr(value)))
        try:
            x = float(value)
        except OverflowError:                   # a TOML integer beyond any double
            x = math.inf
        if not math.isfinite(x):
            fail(key, "must be finite, got %r" % x)
        if positive and not x > 0.0:
            fail(key, "must be > 0, got %r" % x)
        return x

    for k in doc:
        if k not in _TOP_KEYS:
            fail(k, "unknown key (allowed: %s)" % ", ".join(_TOP_KEYS))
    if "start" not in doc:
        fail("start", "missing")
    start = table(doc["start"], "start", _START_KEYS, _START_KEYS)
    sn, se = number(start["north_m"], "start.north_m"), number(start["east_m"], "start.east_m")
    yaw_deg = number(start["yaw_deg"], "start.yaw_deg")

    buoys_raw = doc.get("buoys", [])
    if not isinstance(buoys_raw, list):
        fail("buoys", "must be an array of tables ([[buoys]])")
    buoys = []
    for i, b in enumerate(buoys_raw):
        key = "buoys[%d]" % i
        b = table(b, key, _BUOY_KEYS + ("role",), _BUOY_KEYS)
        role = b.get("role", "obstacle")
        if role not in ROLES:
            fail(key + ".role", "unknown role %s (known: %s)" % (_one_line(repr(role)), ", ".join(ROLES)))
        buoys.append(Buoy(number(b["north_m"], key + ".north_m"), number(b["east_m"], key + ".east_m"),
                          number(b["radius_m"], key + ".radius_m", positive=True),
                          number(b["height_m"], key + ".height_m", positive=True), role))

    has_goal, has_tasks = "goal" in doc, "tasks" in doc
    if has_goal == has_tasks:
        fail("goal/tasks", "give exactly one of [goal] (a single way-point) or [[tasks]] (a mission)")
    goal, tasks = None, []
    if has_goal:
        g = table(doc["goal"], "goal", _POINT_KEYS, _POINT_KEYS)
        goal = (number(g["north_m"], "goal.north_m"), number(g["east_m"], "goal.east_m"))
    else:
        if not isinstance(doc["tasks"], list) or not doc["tasks"]:
            fail("tasks", "must be a non-empty array of tables ([[tasks]])")
        for i, t in enumerate(doc["tasks"]):
            key = "tasks[%d]" % i
            t = table(t, key, ("kind",) + _POINT_KEYS, ("kind",) + _POINT_KEYS)
            if t["kind"] not in TASK_KINDS:
                fail(key + ".kind", "unknown kind %s (known: %s)" % (_one_line(repr(t["kind"])),
                                                                     ", ".join(TASK_KINDS)))
            tasks.append(Task(t["kind"], number(t["north_m"], key + ".north_m"),
                              number(t["east_m"], key + ".east_m")))

    shore = []
    if "shore" in doc:
        pts = doc["shore"]
        if not isinstance(pts, list) or len(pts) < 2:
            fail("shore", "must be an array of at least 2 points ([north_m, east_m] pairs or [[shore]] tables)")
        for i, p in enumerate(pts):
            key = "shore[%d]" % i
            if isinstance(p, dict):                         # [[shore]] tables: north_m, east_m
                p = table(p, key, _POINT_KEYS, _POINT_KEYS)
                shore.append((number(p["north_m"], key + ".north_m"), number(p["east_m"], key + ".east_m")))
                continue
            if not isinstance(p, list) or len(p) != 2:
                fail(key, "must be a [north_m, east_m] pair or a table with north_m, east_m")
            shore.append((number(p[0], key + "[0]"), number(p[1], key + "[1]")))
    far = [(key, n, e) for key, n, e in
           [("start", sn, se)] + ([("goal", goal[0], goal[1])] if goal else [])
           + [("tasks[%d]" % i, t.north_m, t.east_m) for i, t in enumerate(tasks)]
           + [("buoys[%d]" % i, b.north_m, b.east_m) for i, b in enumerate(buoys)]
           + [("shore[%d]" % i, p[0], p[1]) for i, p in enumerate(shore)]
           if math.hypot(n, e) > MAX_EXTENT_M]
    if far:
        key, n, e = far[0]
        fail(key, "%.6g m from the local origin; a course lies within %g m of it (positions are local NED metres, "
                  "not UTM or degrees)" % (math.hypot(n, e), MAX_EXTENT_M))
    return Course(sn, se, math.radians(yaw_deg), tuple(buoys), goal, tuple(tasks), tuple(shore))


# ---------------------------------------------------------------------------------------------- writing

def _f(x):
    """A float as TOML text that reads back to the same double (repr round-trips)."""
    return repr(float(x))


def _yaw_deg_exact(yaw_rad):
    """Degrees ``d`` with ``math.radians(d) == yaw_rad`` exactly when one is within a few ulps (so a written
    course reads back equal), else the nearest."""
    d = math.degrees(yaw_rad)
    if math.radians(d) == yaw_rad:
        return d
    lo = hi = d
    for _ in range(64):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        for c in (lo, hi):
            if math.radians(c) == yaw_rad:
                return c
    return d


def course_to_toml(course):
    """The TOML course file text of ``course`` (``load_course`` reads it back equal)."""
    if (course.goal is None) == (not course.tasks):
        raise ValueError("a course needs exactly one of a goal or a non-empty task list")
    out = ["# course file (docs/formats/boat-course.md): NED metres, yaw in degrees from north towards east"]
    if course.shore:
        out.append("shore = [%s]" % ", ".join("[%s, %s]" % (_f(n), _f(e)) for n, e in course.shore))
    out += ["", "[start]", "north_m = %s" % _f(course.start_north_m), "east_m = %s" % _f(course.start_east_m),
            "yaw_deg = %s" % _f(_yaw_deg_exact(course.start_yaw_rad))]
    for b in course.buoys:
        out += ["", "[[buoys]]", "north_m = %s" % _f(b.north_m), "east_m = %s" % _f(b.east_m),
                "radius_m = %s" % _f(b.radius_m), "height_m = %s" % _f(b.height_m), 'role = "%s"' % b.role]
    if course.goal is not None:
        out += ["", "[goal]", "north_m = %s" % _f(course.goal[0]), "east_m = %s" % _f(course.goal[1])]
    for t in course.tasks:
        out += ["", "[[tasks]]", 'kind = "%s"' % t.kind, "north_m = %s" % _f(t.north_m),
                "east_m = %s" % _f(t.east_m)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------- generating

def generate_course(seed, kind="robotx"):
    """A seeded course (the same ``seed`` and ``kind`` always give the same course): ``"robotx"`` or
    ``"buoy_field"`` (see the module docstring). Random numbers: ``RunRandom(seed).stream("course/" + kind)``."""
    if kind not in KINDS:
        raise ValueError("unknown course kind %r (known: %s)" % (kind, ", ".join(KINDS)))
    rng = RunRandom(seed).stream("course/" + kind)
    return _robotx(rng) if kind == "robotx" else _buoy_field(rng)


class _Axis:
    """Course-axis coordinates: ``a`` metres along the heading ``yaw_rad`` from the start, ``c`` metres to its
    right (starboard) -> NED (north_m, east_m)."""

    def __init__(self, n0, e0, yaw_rad):
        self.n0, self.e0, self.cy, self.sy = n0, e0, math.cos(yaw_rad), math.sin(yaw_rad)

    def ne(self, a, c):
        return (self.n0 + a * self.cy - c * self.sy, self.e0 + a * self.sy + c * self.cy)


def _u(rng, lo, hi):
    return float(rng.uniform(lo, hi))


def _gate_buoys(ax, a, c, width_m, left_role, right_role, rng):
    """Two marker buoys ``width_m`` apart about (a, c): left (port) and right (starboard)."""
    out = []
    for side, role in ((-0.5, left_role), (0.5, right_role)):
        n, e = ax.ne(a, c + side * width_m)
        out.append(Buoy(n, e, _u(rng, 0.3, 0.45), _u(rng, 0.9, 1.4), role))
    return out


def _robotx(rng):
    yaw = _u(rng, -math.pi, math.pi)
    ax = _Axis(0.0, 0.0, yaw)
    buoys, tasks = [], []
    # speed gate
    a_g, c_g, w_g = _u(rng, 22.0, 28.0), _u(rng, -4.0, 4.0), _u(rng, 8.0, 14.0)
    buoys += _gate_buoys(ax, a_g, c_g, w_g, "gate_left", "gate_right", rng)
    tasks.append(Task("speed_gate", *ax.ne(a_g, c_g)))
    # obstacle field: entry gate, obstacles inside, exit gate
    a_in, c_in, w_in = a_g + _u(rng, 22.0, 28.0), _u(rng, -5.0, 5.0), _u(rng, 10.0, 16.0)
    depth = _u(rng, 30.0, 40.0)
    a_out, c_out, w_out = a_in + depth, c_in + _u(rng, -5.0, 5.0), _u(rng, 10.0, 16.0)
    gates = (_gate_buoys(ax, a_in, c_in, w_in, "entry_left", "entry_right", rng)
             + _gate_buoys(ax, a_out, c_out, w_out, "exit_left", "exit_right", rng))
    buoys += gates
    c_mid = 0.5 * (c_in + c_out)
    placed = []
    n_obs = int(rng.integers(5, 9))
    for _ in range(400):
        if len(placed) == n_obs:
            break
        a, c = _u(rng, a_in + 6.0, a_out - 6.0), _u(rng, c_mid - 12.0, c_mid + 12.0)
        n, e = ax.ne(a, c)
        if all(math.hypot(n - b.north_m, e - b.east_m) >= 7.0 for b in placed) and \
                all(math.hypot(n - b.north_m, e - b.east_m) >= 6.0 for b in gates):
            placed.append(Buoy(n, e, _u(rng, 0.2, 0.5), _u(rng, 0.4, 1.0), "obstacle"))
    buoys += placed
    tasks.append(Task("obstacle_field", *ax.ne(a_out, c_out)))
    # two gates side by side; the pinger buoy stands 6 m beyond the centre of the one it marks
    a_p, c_p = a_out + _u(rng, 27.0, 33.0), _u(rng, -6.0, 6.0)
    active = int(rng.integers(2))
    for k, c_k in enumerate((c_p - 9.0, c_p + 9.0)):
        buoys += _gate_buoys(ax, a_p, c_k, 10.0, "gate_left", "gate_right", rng)
        if k == active:
            n, e = ax.ne(a_p + 6.0, c_k)
            buoys.append(Buoy(n, e, _u(rng, 0.3, 0.45), _u(rng, 0.9, 1.4), "pinger"))
            tasks.append(Task("pinger_gate", *ax.ne(a_p, c_k)))
    # dock: a bay 8 m wide and 4 m deep, open towards the approach, outlined by five posts 4 m apart
    a_d, c_d = a_p + _u(rng, 27.0, 33.0), _u(rng, -8.0, 8.0)
    for da, dc in ((0.0, -4.0), (4.0, -4.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)):
        n, e = ax.ne(a_d + da, c_d + dc)
        buoys.append(Buoy(n, e, 0.3, 1.5, "dock"))
    tasks.append(Task("dock", *ax.ne(a_d + 2.0, c_d)))
    # shore line beyond the dock
    a_s = a_d + 25.0
    shore = tuple(ax.ne(a_s + _u(rng, -3.0, 3.0), c) for c in range(-80, 81, 20))
    return Course(0.0, 0.0, yaw, tuple(buoys), None, tuple(tasks), shore)


# the buoy field's goal: this many metres from the start (least, most)
BUOY_FIELD_GOAL_M = (60.0, 100.0)


def _buoy_field(rng):
    yaw = _u(rng, -math.pi, math.pi)
    for _ in range(100):
        dist = _u(rng, *BUOY_FIELD_GOAL_M)
        bearing = yaw + _u(rng, -0.3, 0.3)
        goal = (dist * math.cos(bearing), dist * math.sin(bearing))
        ax = _Axis(0.0, 0.0, bearing)
        n_obs = int(rng.integers(8, 17))
        obs = []
        for _ in range(500):
            if len(obs) == n_obs:
                break
            n, e = ax.ne(_u(rng, 10.0, dist - 10.0), _u(rng, -15.0, 15.0))
            r = _u(rng, 0.25, 0.75)
            if math.hypot(n, e) < 8.0 or math.hypot(n - goal[0], e - goal[1]) < 8.0:
                continue
            if all(math.hypot(n - b.north_m, e - b.east_m) - r - b.radius_m >= BOAT_BEAM_M + 2.0 for b in obs):
                obs.append(Buoy(n, e, r, _u(rng, 0.4, 1.2), "obstacle"))
        if reachable((0.0, 0.0), goal, obs, clearance_m=0.5 * BOAT_BEAM_M + 0.5):
            return Course(0.0, 0.0, yaw, tuple(obs), goal, ())
    raise RuntimeError("no reachable buoy field in 100 tries")   # not reached for the ranges above


def course_for_run(file, seed, kind="robotx"):
    """The course of a boat run: the course file ``file`` when given (a scenario's ``course.file`` setting;
    raises :class:`CourseFileError`), else :func:`generate_course` (``seed``, ``kind``)."""
    return load_course(file) if file else generate_course(seed, kind)


def task_path(course, step_m=2.0):
    """Poses (north_m, east_m, yaw_rad) at most ``step_m`` apart along the straight legs start -> goal or
    start -> each task point in turn, ending on the last point, yaw along the leg (a drive-by for sensor
    tests and benchmarks; it does not avoid buoys)."""
    pts = [(course.start_north_m, course.start_east_m)]
    pts += [course.goal] if course.goal is not None else [(t.north_m, t.east_m) for t in course.tasks]
    out, yaw = [], course.start_yaw_rad
    for (n0, e0), (n1, e1) in zip(pts, pts[1:]):
        length, yaw = math.hypot(n1 - n0, e1 - e0), math.atan2(e1 - e0, n1 - n0)
        steps = max(1, math.ceil(length / step_m))
        for k in range(steps):
            out.append((n0 + k / steps * (n1 - n0), e0 + k / steps * (e1 - e0), yaw))
    out.append((pts[-1][0], pts[-1][1], yaw))
    return out


def reachable(start_ne_m, goal_ne_m, buoys, clearance_m, cell_m=0.5, margin_m=20.0):
    """Whether a disc of radius ``clearance_m`` can move from ``start_ne_m`` to ``goal_ne_m`` among ``buoys``
    (4-connected search on a ``cell_m`` grid over the bounding box grown by ``margin_m``)."""
    ns = [start_ne_m[0], goal_ne_m[0]] + [b.north_m for b in buoys]
    es = [start_ne_m[1], goal_ne_m[1]] + [b.east_m for b in buoys]
    n0, e0 = min(ns) - margin_m, min(es) - margin_m
    rows = int((max(ns) + margin_m - n0) / cell_m) + 1
    cols = int((max(es) + margin_m - e0) / cell_m) + 1
    blocked = bytearray(rows * cols)
    for b in buoys:
        reach = b.radius_m + clearance_m
        k = int(reach / cell_m) + 1
        i0, j0 = int((b.north_m - n0) / cell_m), int((b.east_m - e0) / cell_m)
        for i in range(max(0, i0 - k), min(rows, i0 + k + 1)):
            for j in range(max(0, j0 - k), min(cols, j0 + k + 1)):
                if math.hypot(n0 + i * cell_m - b.north_m, e0 + j * cell_m - b.east_m) < reach:
                    blocked[i * cols + j] = 1

    def cell(p):
        return int(round((p[0] - n0) / cell_m)), int(round((p[1] - e0) / cell_m))

    (si, sj), (gi, gj) = cell(start_ne_m), cell(goal_ne_m)
    if blocked[si * cols + sj] or blocked[gi * cols + gj]:
        return False
    seen = bytearray(rows * cols)
    seen[si * cols + sj] = 1
    todo = deque([(si, sj)])
    while todo:
        i, j = todo.popleft()
        if (i, j) == (gi, gj):
            return True
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = i + di, j + dj
            if 0 <= a < rows and 0 <= b < cols and not seen[a * cols + b] and not blocked[a * cols + b]:
                seen[a * cols + b] = 1
                todo.append((a, b))
    return False
