"""The RobotX mission as a part of the boat app on a Node (RobotX AAVS section III-D: perception -> buoy
labelling -> mission planner -> arbiter -> controller; section IV: the pinger located from several pings).

Inputs: entry ``ping`` (:class:`PingSample`: one ping heard by the hydrophones, the arrival time at
hydrophone k minus at hydrophone 0 for k = 1..K-1, in s, stamped ``time_us``), held with the EKF's
estimated pose at its arrival (``pose_fn()`` -> (north_m, east_m, yaw_rad), or None before the estimator
is initialised: the ping is counted as ``pings_no_pose`` and dropped); the perception part's buoy map
(``perception.map.confirmed()``, labelled in place by ``onboard.vessel.buoy_perception.label_buoys`` with
the planner's expectations); the EKF pose.

The rate group ``mission`` (``rate_hz``), each period: start the planner, label the confirmed buoys and
hand them to it (``buoys_updated``), locate the pinger from the last ``max_pings`` pings at their poses
(``onboard.vessel.pinger.locate``, RANSAC over the time-difference contours, paper figs. 5-8) while the
pinger task is ahead (from task ``first_task`` until its gate's "through" phase) and at least
``min_pings`` were heard and a new one came in since the last try (``pinger_fix``; a try that fails is
counted once in ``locate_failures`` and not repeated on the same pings), then the planner's
geometric events (``observe``: arrived, gate passed, time-out), and give the arbiter part the
confirmed buoys as its obstacles and the planner's destination (``arbiter.set_obstacles``,
``arbiter.set_destination``: the arbiter part ignores changes within its tolerances, so a buoy estimate
creeping by millimetres does not make DAMN compute its cost-to-go grid again). While recording, outputs
``mission``: the planner's state, the destination and the last fix.

Settings (:func:`settings`, the app's ``mission`` setting: plain data, so the recorded ``/app/config``
rebuilds it): ``tasks`` (a list of ``{"kind", "north_m", "east_m"}`` tables with an optional
``entry_ne_m`` [north_m, east_m] for the obstacle field: ``onboard.vessel.mission.MissionTask``),
``start_ne_m`` (the start, [north_m, east_m]: the first task's axis), ``planner`` (the
``onboard.vessel.mission`` settings), ``hydrophones_body_m`` (K >= 2 [x_m, y_m] body FRD positions),
``pinger`` (``min_pings``, ``max_pings``, ``locator_sigma_s``: the locator's timing noise, s;
``first_task``: the task index from which pings are located), ``rate_hz``. Bad settings raise
:class:`MissionPartError` (one line).
"""
import math

from onboard.core.samples import SampleError, _int, _Sample
from onboard.vessel import mission as ms

DEFAULTS = {
    "tasks": [],
    "start_ne_m": [0.0, 0.0],
    "planner": {},
    "hydrophones_body_m": [[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]],
    "pinger": {"min_pings": 4, "max_pings": 10, "locator_sigma_s": 1e-5, "first_task": 1},
    "rate_hz": 2,
}


class MissionPartError(ValueError):
    """A mission setting the part cannot use; one line."""


class PingSample(_Sample):
    """One ping heard: ``tdoa_s`` the arrival time at hydrophone k minus at hydrophone 0 (s), k = 1..K-1."""
    FIELDS = ("time_us", "tdoa_s")

    def __init__(self, time_us, tdoa_s):
        self.time_us = _int("time_us", time_us)
        try:
            self.tdoa_s = tuple(float(x) for x in tdoa_s)
        except (TypeError, ValueError):
            raise SampleError("tdoa_s must be a list of numbers (s)")


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _pair(v, what):
    if not (isinstance(v, (list, tuple)) and len(v) == 2 and _number(v[0]) and _number(v[1])):
        raise MissionPartError("mission: %s must be [north_m, east_m] (finite), got %r" % (what, v))
    return (float(v[0]), float(v[1]))


def settings(config):
    """The part's settings: DEFAULTS overridden by ``config`` (``pinger`` merged key by key), checked."""
    if not isinstance(config, dict):
        raise MissionPartError("mission: the setting must be a table, got %r" % (config,))
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise MissionPartError("mission: unknown setting(s) %s (known: %s)" % (", ".join(unknown),
                                                                                 ", ".join(sorted(DEFAULTS))))
    cfg = dict(DEFAULTS)
    cfg.update(config)
    pinger = dict(DEFAULTS["pinger"])
    if not isinstance(cfg["pinger"], dict) or set(cfg["pinger"]) - set(pinger):
        raise MissionPartError("mission: pinger must be a table of %s" % ", ".join(sorted(pinger)))
    pinger.update(cfg["pinger"])
    cfg["pinger"] = pinger
    for k in ("min_pings", "max_pings", "first_task"):
        v = pinger[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if k == "first_task" else 2):
            raise MissionPartError("mission: pinger.%s must be an integer >= %d, got %r"
                                   % (k, 0 if k == "first_task" else 2, v))
    if pinger["max_pings"] < pinger["min_pings"]:
        raise MissionPartError("mission: pinger.max_pings must be >= pinger.min_pings")
    if not (_number(pinger["locator_sigma_s"]) and pinger["locator_sigma_s"] > 0):
        raise MissionPartError("mission: pinger.locator_sigma_s must be > 0 (s)")
    hyd = cfg["hydrophones_body_m"]
    if not isinstance(hyd, list) or len(hyd) < 2:
        raise MissionPartError("mission: hydrophones_body_m must be a list of >= 2 [x_m, y_m]")
    cfg["hydrophones_body_m"] = [list(_pair(h, "a hydrophone position")) for h in hyd]
    cfg["start_ne_m"] = list(_pair(cfg["start_ne_m"], "start_ne_m"))
    if not isinstance(cfg["tasks"], list) or not cfg["tasks"]:
        raise MissionPartError("mission: tasks must be a non-empty list of {kind, north_m, east_m} tables")
    for t in cfg["tasks"]:
        if not isinstance(t, dict) or set(t) - {"kind", "north_m", "east_m", "entry_ne_m"}:
            raise MissionPartError("mission: a task must be a {kind, north_m, east_m[, entry_ne_m]} table, got %r"
                                   % (t,))
    if not isinstance(cfg["planner"], dict):
        raise MissionPartError("mission: planner must be a table of onboard.vessel.mission settings")
    if cfg["rate_hz"] not in (1, 2, 5, 10):
        raise MissionPartError("mission: rate_hz must be one of 1, 2, 5, 10, got %r" % (cfg["rate_hz"],))
    try:
        tasks_and_planner(cfg)
    except ValueError as exc:             # MissionError, the planner settings' ConfigError
        raise MissionPartError(str(exc).splitlines()[0])
    return cfg


def tasks_and_planner(cfg):
    """A new :class:`onboard.vessel.mission.MissionPlanner` over the settings' task list."""
    tasks = [ms.MissionTask(t.get("kind"), t.get("north_m"), t.get("east_m"), t.get("entry_ne_m"))
             for t in cfg["tasks"]]
    return ms.MissionPlanner(tasks, tuple(cfg["start_ne_m"]), cfg["planner"])


def task_table(task):
    """A :class:`onboard.vessel.mission.MissionTask` as the plain table of the ``mission`` setting."""
    out = {"kind": task.kind, "north_m": task.north_m, "east_m": task.east_m}
    if task.entry_ne_m is not None:
        out["entry_ne_m"] = [task.entry_ne_m[0], task.entry_ne_m[1]]
    return out


class MissionPart:
    """The mission on the app's node (module docstring): entry ``ping``; rate group ``mission``.
    ``pose_fn``: the EKF's pose or None; ``perception``: the app's perception part (its ``map`` and ``cfg``);
    ``arbiter``: the app's arbiter part (``set_destination``); ``config``: the ``mission`` setting."""

    def __init__(self, pose_fn, perception, arbiter, config):
        self.cfg = cfg = settings(config)
        self.pose_fn, self.perception, self.arbiter = pose_fn, perception, arbiter
        self.planner = tasks_and_planner(cfg)
        self.layout_body_m = cfg["hydrophones_body_m"]
        self.pings = []                  # (tdoa tuple, estimated pose at the ping)
        self.fix = None                  # (north_m, east_m, pings used) of the last fix
        self._located_pings = None       # how many pings the last try to locate had
        self.fixes = self.locate_failures = self.pings_no_pose = self.bad_pings = 0
        self.node = None

    def attach(self, node):
        self.node = node
        self.on_ping = node.entry("ping", self._on_ping)
        node.every("mission", self.cfg["rate_hz"], self._step)

    def _on_ping(self, s):
        tdoa = s.tdoa_s
        if len(tdoa) != len(self.layout_body_m) - 1 or not all(_number(x) for x in tdoa):
            self.bad_pings += 1
            return
        pose = self.pose_fn()
        if pose is None:
            self.pings_no_pose += 1
            return
        self.pings.append((tdoa, pose))

    def _locate(self, now_us):
        from onboard.vessel import pinger as pg          # numpy: only when a fix is sought
        pc = self.cfg["pinger"]
        planner = self.planner
        kinds = [t.kind for t in planner.tasks]
        if "pinger_gate" not in kinds or len(self.pings) < pc["min_pings"]:
            return
        if not pc["first_task"] <= planner.task_index <= kinds.index("pinger_gate") or planner.phase == "through":
            return
        if self._located_pings == len(self.pings):
            return                       # tried with these pings already (the same inputs give the same answer)
        self._located_pings = len(self.pings)
        use = self.pings[-pc["max_pings"]:]
        try:
            f = pg.locate([p[0] for p in use], [p[1] for p in use], self.layout_body_m,
                          timing_sigma_s=pc["locator_sigma_s"], seed=len(self.pings))
        except pg.LocatorError:
            self.locate_failures += 1
            return
        self.fix = (f.north_m, f.east_m, len(self.pings))
        self.fixes += 1
        planner.on_event("pinger_fix", now_us, (f.north_m, f.east_m))

    def _step(self, now_us):
        from onboard.vessel.buoy_perception import label_buoys
        pose = self.pose_fn()
        if pose is None:
            return
        planner = self.planner
        if planner.state == "idle":
            planner.on_event("start", now_us)
        confirmed = self.perception.map.confirmed()
        label_buoys(confirmed, planner.expected(), self.perception.cfg)
        planner.on_event("buoys_updated", now_us, [(t.role, t.north_m, t.east_m) for t in confirmed])
        self._locate(now_us)
        for event, data in planner.observe(pose[0], pose[1], now_us):
            planner.on_event(event, now_us, data)
        self.arbiter.set_obstacles(tuple((float(t.north_m), float(t.east_m), float(t.radius_m)) for t in confirmed))
        d = planner.destination
        if d is not None:
            self.arbiter.set_destination(d[0], d[1])
        if self.node is not None and self.node.recording:
            self.node.output("mission", now_us, {
                "time_us": now_us, "state": planner.state, "task_index": planner.task_index,
                "destination_ne_m": None if d is None else [d[0], d[1]],
                "fix_ne_m": None if self.fix is None else [self.fix[0], self.fix[1]], "pings": len(self.pings)})

    @property
    def done(self):
        return self.planner.done

    def report(self):
        return {"pings": len(self.pings), "fixes": self.fixes, "locate_failures": self.locate_failures,
                "pings_no_pose": self.pings_no_pose, "bad_pings": self.bad_pings, "planner": self.planner.report()}
