"""Scenario `robotx-course`: the whole RobotX mission on a course, scored (RobotX AAVS sections II, III-D, IV):
speed gate -> obstacle field (entry gate, obstacles, exit gate) -> the gate the acoustic pinger marks -> dock
approach, by the WAM-V boat app in closed loop with the simulated WAM-V; sensor configurations compared by
score with confidence intervals over seeds (the paper's design-space exploration).

The loop of one run (:func:`run_mission`), all on one simulated clock in lockstep (``harness.sim.world``):

- the truth vessel (``harness.sim.wamv.Wamv``, ``wamv`` settings) stepped at 100 Hz with the throttles
  of the app's outboards, which reach it in process through the truth vessel's thrusters after
  ``outboard_latency_s`` (:class:`DirectOutboards`; the serial link itself is ``boat-hil-lag``'s);
- sensors calling the app's entries: GNSS as NMEA on a serial-like line, heading, gyro
  (``harness.sim.sensors.wamv_sensors``; settings ``gnss``, ``heading``, ``gyro``), the LIDAR
  (``harness.sim.lidar``: VLP-16 or a planar scanner, ray-cast at the TRUE pose) on entry ``lidar``, and
  the hydrophones (``harness.sim.hydrophones``: every ``pinger.interval_s`` a ping's time differences at
  the TRUE pose) on entry ``ping``;
- the app (``boards.wamv.app.WamvApp``), built from its own recipe with the settings of
  :func:`app_settings` and nothing added from here: ``arbiter`` = ``damn`` | ``potential_field`` (the
  tables ``damn`` / ``potential_field``: a hull circle of the WAM-V's half beam plus a little, so that an
  8 m gate is open; with the part's tolerances ``obstacle_move_m`` and ``destination_move_m``: the
  obstacles and the destination are replaced, and DAMN's cost-to-go grid computed again, tens of ms each,
  only when a buoy is added or removed or one moved by more than these), ``perception`` (the LIDAR's mount
  and azimuth step, at the LIDAR's rate: each sweep placed with the EKF's pose) and ``mission``
  (:func:`mission_setting`: the briefing's task list, the hydrophone layout, the locator's settings; the
  part ``onboard.vessel.mission_part.MissionPart`` at ``mission_hz`` labels the buoys, locates the pinger
  from the pings at the EKF's poses, drives the planner ``onboard.vessel.mission`` and hands the arbiter
  the buoys and its destination).

Recording: with a report folder (``ctx.mcap``) the first run's app records at its boundary into
``OUT/log.mcap`` (its ``/app/config`` holds every setting above, so ``python -m harness replay
OUT/log.mcap`` rebuilds the app and compares its outputs; expected: identical), with its Foxglove views.

The course: a generated ``robotx`` course per seed (``harness.sim.boat_course.generate_course``), or
``course.file``; ``course.tasks``: how many of its tasks to run (0: all; ``--reduced`` runs the first two).
The planner's briefing (:func:`briefing`) is what a team knows before a run: the speed gate's and the
obstacle field's gates, the dock, and the area of the pinger gates (the mean of the gate buoys near the
pinger task: not which gate).

Score (RobotX-like, from the truth): per task done ``points`` (speed gate: the truth track crossed the
gate's segment; obstacle field: the entry then the exit segment; pinger gate: the segment of the gate the
pinger marks, not another; dock: within ``dock_radius_m`` of the bay's centre), plus ``time_bonus`` x (1 -
t / ``time_limit_s``) when every task is done, minus ``contact_penalty`` per contact (the hull rectangle
``hull_length_m`` x ``hull_beam_m`` at the true pose touching a buoy's circle; one per touch).

Variants: every LIDAR in ``lidars`` ("vlp16", "planar": ``harness.sim.lidar.PLANAR``) x every hydrophone
layout in ``layouts`` (``hydrophone_layouts``) over ``seeds`` seeds, each run a job of the sweep runner
(``harness.parallel.ordered_map``, ``workers``); per variant the mean score with a seeded percentile
bootstrap interval (``bootstrap`` resamples, ``confidence``), the completion rate, contacts, the pinger fix
error. ``success``: with the first variant and the ``damn`` arbiter, all four tasks on
at least ``min_completion`` of the seeds (with another arbiter: reported, success false).

Timing (run.json): simulated seconds per wall second and per CPU second of the process over the runs (each
run in one process on one core; the CPU figure leaves out the time other processes took the core).
Log: ``/robotx/run`` (each run's outcome), ``/robotx/track`` (truth at 1 Hz), ``/robotx/states`` (the
planner's states with their times). Plots: ``course`` (the first
run's path over the course with the task markers, the perceived buoys and the pinger fix), ``scores`` (the
score per variant with its interval).
"""
import math
import time

import numpy as np

from boards.wamv.app import WamvApp
from harness.config import POSITIVE, TEXT, ConfigError, int_at_least, non_empty_list, one_of, or_null, under, within
from harness.report.plots import figure, label
from harness.sim.boat_course import CourseFileError, generate_course, load_course
from harness.sim.boat_world import NmeaGnss
from harness.sim.hydrophones import Hydrophones
from harness.sim.lidar import PLANAR, Lidar, LidarScene, LidarSensor
from harness.sim.rng import RunRandom
from harness.sim.sensors import wamv_sensors as ws
from harness.sim.sensors.sim_sensor import ModelSensor, SimSensor
from harness.sim.wamv import Wamv
from harness.sim.world import SimWorld
from onboard.comms.transport import LoopTransport
from onboard.vessel import buoy_perception as bp
from onboard.vessel import mission as ms
from onboard.vessel import mission_part as mp
from onboard.vessel.arbiters import DAMN_DEFAULTS, DAMN_RANGES, PF_DEFAULTS, PF_RANGES, make_arbiter
from onboard.vessel.outboards import OutboardTelemetry

DESCRIPTION = "The whole RobotX mission (gates, obstacle field, pinger gate, dock) scored; LIDAR x hydrophone variants"

TASKS = ("speed_gate", "obstacle_field", "pinger_gate", "dock")
LIDARS = {"vlp16": {}, "planar": dict(PLANAR)}

DEFAULTS = {
    "seeds": 20,
    "course": {"file": None, "tasks": 0},
    "arbiter": "damn",
    "lidars": ["vlp16", "planar"],
    "layouts": ["wide", "compact"],
    "hydrophone_layouts": {          # body FRD (x forward, y right, m); layouts names two of them
        "wide": [[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0]],          # the boat-pinger layout
        "compact": [[0.3, 0.0], [-0.3, -0.3], [-0.3, 0.3]],
    },
    # the LIDAR's common settings (harness.sim.lidar); 0.4 deg: the VLP-16's resolution at 20 Hz
    "lidar": {"azimuth_res_deg": 0.4, "rate_hz": 5, "max_range_m": 80.0, "range_sigma_m": 0.03},
    "perception": {"max_range_m": 45.0},
    "pinger": {"interval_s": 2.0, "timing_sigma_s": 2e-6, "outlier_prob": 0.05, "min_pings": 4, "max_pings": 10,
               "locator_sigma_s": 1e-5, "first_task": 1},
    "mission": {},                   # onboard.vessel.mission settings
    "mission_hz": 2,
    "obstacle_move_m": 0.3,          # the arbiter part's obstacle_tolerance_m (no new DAMN grid below it)
    "destination_move_m": 0.4,       # the arbiter part's destination_tolerance_m
    # the arbiters' settings (onboard.vessel.arbiters): the hull circle of the WAM-V's half beam plus a little,
    # so that an 8 m gate is open; the avoid votes' fall-off and the plan's extra inflation to match
    "damn": dict(DAMN_DEFAULTS, hull_radius_m=1.4, margin_m=0.4, plan_extra_m=1.0, falloff_m=1.5),
    "potential_field": dict(PF_DEFAULTS, hull_radius_m=1.4, margin_m=0.4),
    "outboard_latency_s": 0.0,
    "wamv": {},                      # harness.sim.wamv settings (the truth vessel: rich mode by default)
    "gnss": {},
    "heading": {},
    "gyro": {},
    "hull_length_m": 4.9,            # WAM-V 16: the contact footprint
    "hull_beam_m": 2.4,
    "dock_radius_m": 3.5,
    "time_limit_s": 420.0,
    "points": {"speed_gate": 100.0, "obstacle_field": 200.0, "pinger_gate": 200.0, "dock": 100.0},
    "time_bonus": 100.0,
    "contact_penalty": 25.0,
    "bootstrap": 2000,
    "confidence": 0.95,
    "min_completion": 0.9,
    "workers": 1,
}


def _layout_ok(p):
    return isinstance(p, list) and len(p) >= 2 and all(isinstance(q, list) and len(q) == 2 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in q) for q in p)


LAYOUT = ("a list of >= 2 [x_m, y_m] hydrophone positions", _layout_ok)


def _table(v):
    return isinstance(v, dict)


SETTING_RANGES = {
    "seeds": int_at_least(1), "course.file": or_null(TEXT), "course.tasks": int_at_least(0),
    "arbiter": one_of("damn", "potential_field"),
    # distinct: the variants are keyed by lidar and layout (a repeat ran the same seeds again, counted twice)
    "lidars": non_empty_list(one_of(*LIDARS), "a non-empty list of distinct values of %s" % ", ".join(LIDARS),
                             distinct=True),
    "layouts": non_empty_list(one_of("wide", "compact"), "a non-empty list of distinct values of wide, compact",
                              distinct=True),
    "hydrophone_layouts.wide": LAYOUT, "hydrophone_layouts.compact": LAYOUT,
    "lidar.azimuth_res_deg": within(0.01, 45.0), "lidar.rate_hz": one_of(1, 2, 5, 10, 20),
    "lidar.max_range_m": within(1.0, 1000.0), "lidar.range_sigma_m": within(0.0, 10.0),
    "perception.max_range_m": POSITIVE,
    "pinger.interval_s": within(0.5, 60.0), "pinger.timing_sigma_s": within(1e-9, 1e-3),
    "pinger.outlier_prob": within(0.0, 0.5), "pinger.min_pings": int_at_least(2), "pinger.max_pings": int_at_least(2),
    "pinger.locator_sigma_s": within(1e-9, 1e-2), "pinger.first_task": int_at_least(0),
    "mission": ("a table of onboard.vessel.mission settings", _table),
    "mission_hz": one_of(1, 2, 5, 10), "obstacle_move_m": within(0.0, 5.0),
    "destination_move_m": within(0.0, 2.0),
    "outboard_latency_s": within(0.0, 5.0),
    "wamv": ("a table of harness.sim.wamv settings", _table),
    "gnss": ("a table of GNSS settings", _table), "heading": ("a table of heading settings", _table),
    "gyro": ("a table of gyro settings", _table),
    "hull_length_m": POSITIVE, "hull_beam_m": POSITIVE, "dock_radius_m": POSITIVE, "time_limit_s": POSITIVE,
    "points.speed_gate": within(0.0, 1e4), "points.obstacle_field": within(0.0, 1e4),
    "points.pinger_gate": within(0.0, 1e4), "points.dock": within(0.0, 1e4), "time_bonus": within(0.0, 1e4),
    "contact_penalty": within(0.0, 1e4), "bootstrap": int_at_least(100), "confidence": within(0.5, 0.999),
    "min_completion": within(0.0, 1.0), "workers": int_at_least(1),
}
SETTING_RANGES.update(under("damn", DAMN_RANGES))
SETTING_RANGES.update(under("potential_field", PF_RANGES))
# a few seconds: one seed, the first two tasks (speed gate, obstacle field), the VLP-16 and the wide layout
REDUCED = {"seeds": 1, "course": {"tasks": 2}, "lidars": ["vlp16"], "layouts": ["wide"], "bootstrap": 200}

PINGER_AREA_M = 30.0                 # the briefing's pinger area: gate buoys this near the pinger task's point
GATE_WITHIN_M = 12.0                 # a gate (speed, pinger, field exit) pair scored for a task: centre this near its point
ENTRY_WITHIN_M = 60.0                # the field's entry pair: centre this near the field task's point (its exit)
STEP_US = 100000                     # world.run step: contacts, gates and the track are checked at 10 Hz
PHYSICS_HZ = 100


def check_settings(config, scenario="robotx-course"):
    """The settings' relations and the components' own checks; each error is one ConfigError line starting with
    ``scenario`` (the running scenario's name: boat-sim-gap checks its conditions' robotx-course settings here)."""
    for name in config["layouts"]:
        if name not in config["hydrophone_layouts"]:
            raise ConfigError("%s: layouts: %r is not in hydrophone_layouts (%s)"
                              % (scenario, name, ", ".join(sorted(config["hydrophone_layouts"]))))
    if config["pinger"]["max_pings"] < config["pinger"]["min_pings"]:
        raise ConfigError("%s: pinger.max_pings must be >= pinger.min_pings" % scenario)
    try:
        from harness.sim.lidar import check_config
        check_config(dict(config["lidar"]))
        bp.settings(config["perception"])
        make_arbiter(config["arbiter"], config[config["arbiter"]])
        ms.MissionPlanner([ms.MissionTask("waypoint", 1.0, 0.0)], (0.0, 0.0), config["mission"])
        Wamv(config["wamv"])
        ws.Gnss(Wamv(), np.random.default_rng(0), config["gnss"])
        ws.Heading(Wamv(), np.random.default_rng(0), config["heading"])
        ws.YawGyro(Wamv(), np.random.default_rng(0), config["gyro"])
    except ValueError as exc:
        raise ConfigError("%s: %s" % (scenario, str(exc).splitlines()[0]))
    if config["course"]["file"]:
        load_user_course(config["course"]["file"], scenario)


def load_user_course(path, name="robotx-course"):
    try:
        course = load_course(path)
    except (CourseFileError, OSError) as exc:
        raise ConfigError("%s: course.file: %s" % (name, str(exc).splitlines()[0]))
    if not course.tasks:
        raise ConfigError("%s: course.file: %s has a [goal], not a [[tasks]] mission" % (name, path))
    problem = mission_problem(course)
    if problem:
        raise ConfigError("%s: course.file: %s: %s" % (name, path, problem))
    return course


def mission_problem(course):
    """Why the course's task list cannot be run and scored (one line), or None: a gate task (speed gate,
    pinger gate, the field's exit) needs its pair of gate buoys centred within ``GATE_WITHIN_M`` of its point
    (the scoring checks the crossing of that segment), and a pinger gate needs exactly one ``pinger`` buoy
    (the hydrophones listen to it)."""
    pingers = sum(1 for b in course.buoys if b.role == "pinger")
    for i, t in enumerate(course.tasks):
        where = "tasks[%d] (%s at north_m %g, east_m %g)" % (i, t.kind, t.north_m, t.east_m)
        roles = {"speed_gate": ("gate_left", "gate_right"), "pinger_gate": ("gate_left", "gate_right"),
                 "obstacle_field": ("exit_left", "exit_right")}.get(t.kind)
        if roles and _pair_centre(course.buoys, roles[0], roles[1], (t.north_m, t.east_m), GATE_WITHIN_M) is None:
            return ("%s: no %s / %s buoy pair centred within %g m of its point, so its crossing cannot be scored"
                    % (where, roles[0], roles[1], GATE_WITHIN_M))
        if t.kind == "pinger_gate" and pingers != 1:
            return ('%s: a pinger gate needs exactly one buoy with role = "pinger" (the file has %d)'
                    % (where, pingers))
    return None


# ---------------------------------------------------------------------------------------------- course
def _near(buoys, roles, point, within_m):
    return [b for b in buoys if b.role in roles and math.hypot(b.north_m - point[0], b.east_m - point[1]) <= within_m]


def _pair_centre(buoys, left, right, point, within_m=20.0):
    """Midpoint of the (left, right) pair nearest ``point``, or None."""
    ls, rs = _near(buoys, (left,), point, within_m), _near(buoys, (right,), point, within_m)
    best = None
    for a in ls:
        for b in rs:
            m = (0.5 * (a.north_m + b.north_m), 0.5 * (a.east_m + b.east_m))
            d = math.hypot(m[0] - point[0], m[1] - point[1])
            if best is None or d < best[0]:
                best = (d, m, a, b)
    return best


def briefing(course, tasks):
    """The planner's task list (``onboard.vessel.mission.MissionTask``) for the course's first ``tasks``
    tasks: the speed gate and the dock at their points; the obstacle field with its entry gate's centre (the
    entry buoys' midpoint); the pinger gate as the area of the candidate gates (the mean of the gate buoys
    within ``PINGER_AREA_M`` of the task's point: not which gate the pinger marks)."""
    out = []
    for t in tasks:
        if t.kind == "obstacle_field":
            p = _pair_centre(course.buoys, "entry_left", "entry_right", (t.north_m, t.east_m), ENTRY_WITHIN_M)
            out.append(ms.MissionTask(t.kind, t.north_m, t.east_m, None if p is None else p[1]))
        elif t.kind == "pinger_gate":
            g = _near(course.buoys, ("gate_left", "gate_right"), (t.north_m, t.east_m), PINGER_AREA_M)
            if g:
                out.append(ms.MissionTask(t.kind, sum(b.north_m for b in g) / len(g),
                                          sum(b.east_m for b in g) / len(g)))
            else:
                out.append(ms.MissionTask(t.kind, t.north_m, t.east_m))
        else:
            out.append(ms.MissionTask(t.kind, t.north_m, t.east_m))
    return out


def truth_gates(course, tasks):
    """Per task, the truth segments the scoring checks: [((n, e), (n, e)), ...] in order (entry then exit for the
    field), or [] (dock, way-point)."""
    out = []
    for t in tasks:
        p = (t.north_m, t.east_m)
        if t.kind == "speed_gate" or t.kind == "pinger_gate":
            best = _pair_centre(course.buoys, "gate_left", "gate_right", p, GATE_WITHIN_M)
            out.append([] if best is None else [((best[2].north_m, best[2].east_m), (best[3].north_m, best[3].east_m))])
        elif t.kind == "obstacle_field":
            segs = []
            for left, right, within_m in (("entry_left", "entry_right", ENTRY_WITHIN_M),
                                          ("exit_left", "exit_right", GATE_WITHIN_M)):
                best = _pair_centre(course.buoys, left, right, p, within_m)
                if best is not None:
                    segs.append(((best[2].north_m, best[2].east_m), (best[3].north_m, best[3].east_m)))
            out.append(segs)
        else:
            out.append([])
    return out


# ---------------------------------------------------------------------------------------------- the world
class DirectOutboards:
    """The two outboards in process: the app's throttles reach the truth vessel's thrusters (lag, dead band,
    curve: ``harness.sim.wamv``) ``latency_s`` after they are sent; telemetry answers each poll with the
    throttles in force. Same methods as ``onboard.vessel.outboards.VescOutboards``."""

    def __init__(self, vessel, latency_s=0.0):
        self.vessel, self.latency_us = vessel, int(round(latency_s * 1e6))
        self.queue = []
        self.applied = (0.0, 0.0)
        self.commands = self.stops = 0

    def start(self, now_us):
        return True

    def command(self, throttle_left, throttle_right, now_us):
        self.commands += 1
        self.queue.append((now_us + self.latency_us, max(-1.0, min(1.0, throttle_left)),
                           max(-1.0, min(1.0, throttle_right))))
        return True

    def stop(self, now_us):
        self.stops += 1
        self.queue.append((now_us + self.latency_us, 0.0, 0.0))
        return True

    def due(self, now_us):
        """Apply the commands due by ``now_us`` to the vessel."""
        while self.queue and self.queue[0][0] <= now_us:
            _, left, right = self.queue.pop(0)
            self.applied = (left, right)
            self.vessel.command(left, right)

    def poll(self, now_us):
        return [OutboardTelemetry(now_us, "left", self.applied[0], 0.0, 0),
                OutboardTelemetry(now_us, "right", self.applied[1], 0.0, 0)]

    def report(self):
        return {"commands": self.commands, "stops": self.stops}


class HydrophoneSensor(SimSensor):
    """Every ``interval_s`` a ping of the pinger at ``pinger_ne_m`` heard at the vessel's TRUE pose, handed to
    ``entry`` (the app's ``on_ping``) as an ``onboard.vessel.mission_part.PingSample``."""

    def __init__(self, hydrophones, pinger_ne_m, vessel, interval_s, entry):
        SimSensor.__init__(self, 1.0 / interval_s, entry)
        self.hydrophones, self.pinger_ne_m, self.vessel = hydrophones, pinger_ne_m, vessel
        self.period_us = int(round(interval_s * 1e6))

    def attach(self, clock):
        clock.call_every(self.period_us, self.tick, start_us=self.period_us, priority=self.priority)
        return self

    def sample(self, now_us):
        v = self.vessel
        tdoa, _ = self.hydrophones.ping(self.pinger_ne_m, (v.north_m, v.east_m, v.yaw_rad))
        return mp.PingSample(now_us, tdoa)


def _hull_contact(n, e, yaw, bn, be, br, half_l, half_b):
    """Whether the hull rectangle (half length, half beam about (n, e), heading ``yaw``) touches the circle."""
    c, s = math.cos(yaw), math.sin(yaw)
    dn, de = bn - n, be - e
    x, y = dn * c + de * s, -dn * s + de * c            # the buoy in the body frame (forward, right)
    qx, qy = max(-half_l, min(half_l, x)), max(-half_b, min(half_b, y))
    return (x - qx) ** 2 + (y - qy) ** 2 < br * br


def _crossed(p0, p1, seg):
    return ms.segments_cross(p0, p1, seg[0], seg[1])


# ---------------------------------------------------------------------------------------------- one run
def mission_setting(course, tasks, cfg, layout_name):
    """The app's ``mission`` setting (``onboard.vessel.mission_part.settings``, plain data) for this course:
    the briefing's task list, the start, the planner's settings, the hydrophone layout, the locator's
    settings."""
    pc = cfg["pinger"]
    return {"tasks": [mp.task_table(t) for t in briefing(course, tasks)],
            "start_ne_m": [float(course.start_north_m), float(course.start_east_m)],
            "planner": dict(cfg["mission"]),
            "hydrophones_body_m": [[float(x), float(y)] for x, y in cfg["hydrophone_layouts"][layout_name]],
            "pinger": {k: pc[k] for k in ("min_pings", "max_pings", "locator_sigma_s", "first_task")},
            "rate_hz": cfg["mission_hz"]}


def app_settings(course, tasks, cfg, lidar, layout_name):
    """The WAM-V app's settings for one run: ``perception`` (with the LIDAR's mount and azimuth step, at the
    LIDAR's rate), ``arbiter`` with its table and the part's tolerances (``obstacle_move_m``,
    ``destination_move_m``), ``mission`` (:func:`mission_setting`). All plain data: the recording's
    ``/app/config`` rebuilds the app."""
    pcfg = dict({"azimuth_res_deg": float(lidar.cfg["azimuth_res_deg"]),
                 "sensor_forward_m": float(lidar.cfg["mount_forward_m"]),
                 "sensor_right_m": float(lidar.cfg["mount_right_m"])}, **cfg["perception"])
    arb = dict(cfg[cfg["arbiter"]], obstacle_tolerance_m=float(cfg["obstacle_move_m"]),
               destination_tolerance_m=float(cfg["destination_move_m"]))
    return {"arbiter": cfg["arbiter"], "arbiter_config": arb, "perception": pcfg,
            "perception_rate_hz": int(round(lidar.cfg["rate_hz"])),
            "mission": mission_setting(course, tasks, cfg, layout_name)}


def run_mission(job, mcap=None):
    """One run (a sweep job): ``(seed, lidar name, layout name, course, settings)`` -> its outcomes, the truth
    track at 1 Hz, the perceived buoys and the pinger fix at the end, simulated and wall seconds. ``mcap``: an
    ``onboard.runtime.mcap_log.McapLog`` the app records into at its boundary (``python -m harness replay``
    re-runs it) with its Foxglove views, or None."""
    seed, lidar_name, layout_name, course, cfg = job
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rr = RunRandom(seed)
    tasks = list(course.tasks)
    if cfg["course"]["tasks"]:
        tasks = tasks[:cfg["course"]["tasks"]]
    world = SimWorld()
    wamv_cfg = dict(cfg["wamv"])
    wamv_cfg["dt_s"] = 1.0 / PHYSICS_HZ
    wamv_cfg["start"] = dict(wamv_cfg.get("start", {}), north_m=course.start_north_m, east_m=course.start_east_m,
                             yaw_deg=math.degrees(course.start_yaw_rad))
    vessel = Wamv(wamv_cfg, rr.stream("wamv"))
    outboards = DirectOutboards(vessel, cfg["outboard_latency_s"])
    gnss_app_end, gnss_sim_end = LoopTransport.pair()
    lidar_cfg = dict(cfg["lidar"], **LIDARS[lidar_name])
    lidar = Lidar(lidar_cfg, rr.stream("lidar"))
    app_cfg = app_settings(course, tasks, cfg, lidar, layout_name)
    app = WamvApp(outboards, gnss_app_end, app_cfg, view=None if mcap is None else mcap.log_view)
    perception, mission = app.perception, app.mission
    planner = mission.planner

    def physics(dt_s, now_us):
        outboards.due(now_us - vessel.dt_us)
        vessel.step()
    world.physics(PHYSICS_HZ, physics)
    world.add_sensor(NmeaGnss(ws.Gnss(vessel, rr.stream("gnss"), cfg["gnss"]), app.frame, gnss_sim_end))
    heading = ws.Heading(vessel, rr.stream("heading"), cfg["heading"])
    world.add_sensor(ModelSensor(heading, heading.cfg["rate_hz"], app.on_heading))
    gyro = ws.YawGyro(vessel, rr.stream("gyro"), cfg["gyro"])
    world.add_sensor(ModelSensor(gyro, gyro.cfg["rate_hz"], app.on_yaw_rate))
    world.add_sensor(LidarSensor(lidar, LidarScene(course, lidar.cfg["shore_height_m"]), vessel, app.on_lidar))
    pingers = [b for b in course.buoys if b.role == "pinger"]
    pinger_ne = (pingers[0].north_m, pingers[0].east_m) if pingers else None
    if pinger_ne is not None:
        hyd = Hydrophones(cfg["hydrophone_layouts"][layout_name],
                          {"timing_sigma_s": cfg["pinger"]["timing_sigma_s"],
                           "outlier_prob": cfg["pinger"]["outlier_prob"]}, rr.stream("hydrophones"))
        world.add_sensor(HydrophoneSensor(hyd, pinger_ne, vessel, cfg["pinger"]["interval_s"], app.on_ping))
    world.start(app, record=None if mcap is None else mcap.log)

    # truth scoring state
    gates = truth_gates(course, tasks)
    crossed = [[False] * len(g) for g in gates]
    done_at = [None] * len(tasks)
    half_l, half_b = 0.5 * cfg["hull_length_m"], 0.5 * cfg["hull_beam_m"]
    buoys = [(b.north_m, b.east_m, b.radius_m) for b in course.buoys]
    touching = [False] * len(buoys)
    contacts = [0]
    contact_roles = []
    track = [(0.0, vessel.north_m, vessel.east_m)]
    last = [(vessel.north_m, vessel.east_m)]
    est_err = [0.0, 0]
    states = [(0.0, planner.state)]

    def each_step(t_us):
        n, e, yaw = vessel.north_m, vessel.east_m, vessel.yaw_rad
        p0, p1 = last[0], (n, e)
        last[0] = p1
        for k, t in enumerate(tasks):
            if done_at[k] is not None:
                continue
            segs = gates[k]
            if t.kind == "dock" or not segs:
                if t.kind == "dock" and math.hypot(n - t.north_m, e - t.east_m) <= cfg["dock_radius_m"]:
                    done_at[k] = t_us
                elif t.kind == "waypoint" and math.hypot(n - t.north_m, e - t.east_m) <= 3.5:
                    done_at[k] = t_us
                continue
            for j, seg in enumerate(segs):
                if not crossed[k][j] and (j == 0 or crossed[k][j - 1]) and _crossed(p0, p1, seg):
                    crossed[k][j] = True
            if all(crossed[k]):
                done_at[k] = t_us
        for i, (bn, be, br) in enumerate(buoys):
            if abs(bn - n) > 6.0 or abs(be - e) > 6.0:
                touching[i] = False
                continue
            c = _hull_contact(n, e, yaw, bn, be, br, half_l, half_b)
            if c and not touching[i]:
                contacts[0] += 1
                contact_roles.append(course.buoys[i].role)
            touching[i] = c
        if t_us % 1000000 == 0:
            track.append((t_us * 1e-6, n, e))
        if planner.state != states[-1][1]:
            states.append((t_us * 1e-6, planner.state))
        pose = app.estimated_pose()
        if pose is not None:
            est_err[0] = max(est_err[0], math.hypot(pose[0] - n, pose[1] - e))

    limit_us = int(round(cfg["time_limit_s"] * 1e6))
    world.run(limit_us, STEP_US, done=lambda: planner.done, each_step=each_step)
    t_end_us = world.clock.now_us()
    track.append((t_end_us * 1e-6, vessel.north_m, vessel.east_m))
    pts = cfg["points"]
    done = [d is not None for d in done_at]
    score = sum(pts.get(t.kind, 0.0) for t, d in zip(tasks, done) if d)
    all_done = all(done)
    if all_done:
        finish_s = max(done_at) * 1e-6
        score += cfg["time_bonus"] * max(0.0, 1.0 - finish_s / cfg["time_limit_s"])
    score -= cfg["contact_penalty"] * contacts[0]
    fix_err = None
    if mission.fix is not None and pinger_ne is not None:
        fix_err = math.hypot(mission.fix[0] - pinger_ne[0], mission.fix[1] - pinger_ne[1])
    rep = mission.report()
    rep["obstacle_updates"] = app.helm.arbiter.obstacle_updates
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"seed": seed, "lidar": lidar_name, "layout": layout_name, "tasks": [t.kind for t in tasks],
            "done": done, "all_done": all_done, "score": score, "contacts": contacts[0], "contact_roles": contact_roles,
            "time_s": (max(done_at) * 1e-6) if all_done else t_end_us * 1e-6,
            "planner_outcomes": list(planner.outcomes), "planner_state": planner.state,
            "pinger_fix_error_m": fix_err, "pings": rep["pings"], "fixes": rep["fixes"],
            "obstacle_updates": rep["obstacle_updates"], "max_position_error_m": est_err[0],
            "buoys_confirmed": len(perception.map.confirmed()),
            "perceived": [[t.north_m, t.east_m, t.radius_m] for t in perception.map.confirmed()],
            "fix_ne_m": None if mission.fix is None else [mission.fix[0], mission.fix[1]],
            "states": states, "track": track, "sim_s": t_end_us * 1e-6, "wall_s": wall_s, "cpu_s": cpu_s}


# ---------------------------------------------------------------------------------------------- statistics
def bootstrap_ci(values, resamples, confidence, rng):
    """(mean, low, high): the percentile bootstrap interval of the mean of ``values``."""
    x = np.asarray(values, float)
    if x.size == 0:
        return (None, None, None)
    if x.size == 1:
        return (float(x[0]), float(x[0]), float(x[0]))
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    means = x[idx].mean(axis=1)
    a = 0.5 * (1.0 - confidence)
    return (float(x.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1.0 - a)))


def _r(x, nd=3):
    return None if x is None else round(float(x), nd)


def variant_summary(results, cfg, rng):
    """The table of one variant's runs."""
    scores = [r["score"] for r in results]
    mean, lo, hi = bootstrap_ci(scores, cfg["bootstrap"], cfg["confidence"], rng)
    n = len(results)
    per_task = {}
    for k, kind in enumerate(results[0]["tasks"]):
        per_task[kind] = sum(1 for r in results if r["done"][k]) / n
    errs = [r["pinger_fix_error_m"] for r in results if r["pinger_fix_error_m"] is not None]
    return {"runs": n, "score_mean": _r(mean), "score_ci": [_r(lo), _r(hi)],
            "completion_rate": sum(1 for r in results if r["all_done"]) / n, "task_rates": per_task,
            "contacts": sum(r["contacts"] for r in results),
            "runs_with_contacts": sum(1 for r in results if r["contacts"]),
            "mean_time_s": _r(sum(r["time_s"] for r in results) / n),
            "pinger_fix_error_median_m": _r(float(np.median(errs))) if errs else None}


def courses(config, seed):
    """[(run seed, Course)]: the course file for every seed, else a generated robotx course per seed."""
    if config["course"]["file"]:
        c = load_user_course(config["course"]["file"])
        return [(seed * 1000 + k, c) for k in range(config["seeds"])]
    return [(seed * 1000 + k, generate_course(seed * 1000 + k, "robotx")) for k in range(config["seeds"])]


def job_settings(config):
    return {k: config[k] for k in DEFAULTS if k not in ("seeds", "lidars", "layouts", "bootstrap", "confidence",
                                                        "min_completion", "workers")}


def run_variants(config, ctx, topic_prefix="/robotx", extra_jobs=None):
    """Run every (seed, lidar, layout) job; returns (jobs, results). ``extra_jobs``: jobs to run instead. With
    a report folder (``ctx.mcap``) the first job runs in this process and its app records into the run's
    ``log.mcap`` (inputs, ticks, outputs and the Foxglove views)."""
    if extra_jobs is None:
        cl, jc = courses(config, ctx.seed), job_settings(config)
        jobs = [(s, lid, lay, c, jc) for lid in config["lidars"] for lay in config["layouts"] for s, c in cl]
    else:
        jobs = extra_jobs
    # with a report, the first run in this process, recorded at the app's boundary (python -m harness replay
    # OUT/log.mcap)
    first = None if ctx.mcap is None else (lambda job: run_mission(job, ctx.mcap))
    return jobs, ctx.map(run_mission, jobs, config["workers"], topic_prefix.strip("/"), first=first)


def timing_figures(results, wall0):
    """Wall-clock figures of the runs (run.json): simulated seconds per wall second and per CPU second of the
    process that ran them (one core; the CPU figure does not count time other processes took the core)."""
    sim = sum(r["sim_s"] for r in results)
    wall = sum(r["wall_s"] for r in results)
    cpu = sum(r["cpu_s"] for r in results)
    return {"wall_s": time.perf_counter() - wall0, "runs": len(results), "sim_s": sim, "run_wall_s": wall,
            "run_cpu_s": cpu, "sim_seconds_per_wall_second": sim / wall if wall > 0 else None,
            "sim_seconds_per_cpu_second": sim / cpu if cpu > 0 else None,
            "slowest_run_sim_per_cpu": min((r["sim_s"] / r["cpu_s"] for r in results if r["cpu_s"] > 0), default=None)}


def log_runs(ctx, results, prefix):
    for k, r in enumerate(results):
        ctx.log(prefix + "/run", k, {x: r[x] for x in r
                                     if x not in ("track", "perceived", "wall_s", "cpu_s", "states")})
        ctx.log(prefix + "/states", k, {"seed": r["seed"], "lidar": r["lidar"], "layout": r["layout"],
                                        "t_s_state": [list(p) for p in r["states"]]})
        ctx.log(prefix + "/track", k, {"seed": r["seed"], "lidar": r["lidar"], "layout": r["layout"],
                                       "t_s_north_m_east_m": [list(p) for p in r["track"]]})


def run(config, ctx):
    wall0 = time.perf_counter()
    jobs, results = run_variants(config, ctx)
    ctx.timing(**timing_figures(results, wall0), workers=config["workers"])
    log_runs(ctx, results, "/robotx")
    rng = RunRandom(ctx.seed).stream("bootstrap")
    variants = {}
    for lid in config["lidars"]:
        for lay in config["layouts"]:
            mine = [r for r in results if r["lidar"] == lid and r["layout"] == lay]
            variants["%s+%s" % (lid, lay)] = variant_summary(mine, config, rng)
    first = "%s+%s" % (config["lidars"][0], config["layouts"][0])
    base = [r for r in results if r["lidar"] == config["lidars"][0] and r["layout"] == config["layouts"][0]]
    rate = variants[first]["completion_rate"]
    met = config["arbiter"] == "damn" and rate >= config["min_completion"]
    metrics = {
        "arbiter": config["arbiter"], "seeds": config["seeds"], "course_file": config["course"]["file"],
        "tasks": base[0]["tasks"], "variants": variants,
        "acceptance": {"variant": first, "arbiter": config["arbiter"], "completion_rate": rate,
                       "min_completion": config["min_completion"], "met": bool(met)},
        "runs": [{"seed": r["seed"], "variant": "%s+%s" % (r["lidar"], r["layout"]), "done": r["done"],
                  "score": _r(r["score"]), "contacts": r["contacts"], "time_s": _r(r["time_s"], 1),
                  "planner": r["planner_outcomes"], "pinger_fix_error_m": _r(r["pinger_fix_error_m"])}
                 for r in results],
        "success": bool(met),
    }
    _plot_course(ctx, jobs[0][3], results[0])
    _plot_scores(ctx, variants, "robotx-course: score per sensor configuration (%s, %d seeds, %d%% bootstrap interval)"
                 % (config["arbiter"], config["seeds"], round(100 * config["confidence"])))
    return metrics


# ---------------------------------------------------------------------------------------------- plots
ROLE_COLORS = {"obstacle": "tab:red", "gate_left": "tab:green", "gate_right": "tab:green", "entry_left": "tab:olive",
               "entry_right": "tab:olive", "exit_left": "tab:purple", "exit_right": "tab:purple",
               "pinger": "tab:orange", "dock": "tab:brown"}


def _plot_course(ctx, course, r):
    if ctx.report is None:
        return
    from matplotlib.patches import Circle
    fig, axes = figure(1, 1, title="robotx-course: seed %d, %s + %s: %s" % (
        r["seed"], r["lidar"], r["layout"], ", ".join("%s %s" % (k, "done" if d else "not done")
                                                   for k, d in zip(r["tasks"], r["done"]))),
                       size_in=(9.0, 9.0), squeeze=False)
    ax = axes[0][0]
    seen = set()
    for b in course.buoys:
        lab = b.role if b.role not in seen else "_"
        seen.add(b.role)
        ax.add_patch(Circle((b.east_m, b.north_m), max(b.radius_m, 0.4), color=ROLE_COLORS.get(b.role, "k"),
                            label="buoy: %s" % lab if lab != "_" else "_"))
    if r["perceived"]:
        ax.plot([p[1] for p in r["perceived"]], [p[0] for p in r["perceived"]], "k+", markersize=7,
                label="perceived buoys (confirmed)")
    if course.shore:
        ax.plot([p[1] for p in course.shore], [p[0] for p in course.shore], color="tab:gray", lw=3, label="shore")
    tr = r["track"]
    ax.plot([p[2] for p in tr], [p[1] for p in tr], color="tab:blue", label="track (truth)")
    ax.plot([course.start_east_m], [course.start_north_m], "k^", markersize=9, label="start")
    for k, t in enumerate(course.tasks[:len(r["tasks"])]):
        ax.plot([t.east_m], [t.north_m], "x", color="k", markersize=10, label="task points" if k == 0 else "_")
        ax.annotate("%d %s" % (k + 1, t.kind), (t.east_m, t.north_m), textcoords="offset points", xytext=(6, 6))
    if r["fix_ne_m"] is not None:
        ax.plot([r["fix_ne_m"][1]], [r["fix_ne_m"][0]], "*", color="tab:orange", markersize=14, label="pinger fix")
    ax.set_aspect("equal", adjustable="datalim")
    label(ax, "path over the course", "east (m)", "north (m)")
    ctx.report.save_figure(fig, "course")


def _plot_scores(ctx, variants, title, name="scores"):
    if ctx.report is None:
        return
    fig, axes = figure(1, 1, title=title, size_in=(8.0, 4.8), squeeze=False)
    ax = axes[0][0]
    names = list(variants)
    means = [variants[v]["score_mean"] for v in names]
    lo = [m - variants[v]["score_ci"][0] for m, v in zip(means, names)]
    hi = [variants[v]["score_ci"][1] - m for m, v in zip(means, names)]
    ax.bar(range(len(names)), means, color="tab:blue", label="mean score")
    ax.errorbar(range(len(names)), means, yerr=[lo, hi], fmt="none", ecolor="k", capsize=6, label="interval")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    label(ax, "score by sensor configuration", "LIDAR + hydrophone layout", "score (points)")
    ctx.report.save_figure(fig, name)
