"""Scenario `boat-arbiters`: the vessel's arbiters (``onboard.vessel.arbiters``; RobotX AAVS III-D, figs. 9-10)
in closed loop with the simulated WAM-V (``harness.sim.wamv``) over seeded buoy fields, adversarial cases
and a user's course file.

Each run: the truth vessel from the course's start pose; every ``decide_hz`` period the arbiter decides a
heading and speed from the vessel's state (truth), the course's buoys (ground-truth circles: perception is
not in this loop) and the current destination; every ``control_hz`` period the heading/speed controller
(``onboard.control.heading_speed``, the WAM-V app's) turns that into the two throttle commands. The
destination is the course's goal, or its tasks' points in order (a mission file). A run ends when the last
destination is within ``goal_radius_m`` (reached), at a stall (the distance to the destination has not
improved by ``stall_progress_m`` for ``stall_s``: a local minimum), or at the time limit
(``time_extra_s`` + ``time_per_m_s`` x the straight distance). ``goal_radius_m`` must be below the shortest
leg to a destination of the cases run (else that destination counts as reached without going there).

Cases: ``courses`` seeded "buoy_field" courses (``harness.sim.boat_course.generate_course``: 8-16 buoys
between the start and a goal 60-100 m away), plus with ``adversarial`` three built here: "goal_behind_buoy"
(the goal 10 m straight behind a buoy on the start's line), "u_trap" (a U of buoys too close for the hull
to pass, open towards the boat, the goal behind its bottom) and "narrow_gate" (a 12 m gate, 11.2 m of
water for the 5 m hull circle, in a wall of buoys, the goal behind it off the gate's axis). With
``course.file`` (a course file, ``docs/formats/boat-course.md``) that course alone is run. Arbiters
(``arbiters``): "damn", "damn_no_shadows" (the same without vote shadows) and "potential_field"; settings
``damn.*`` and ``potential_field.*`` (the arbiters' own).

Metrics per arbiter, over the seeded courses and per adversarial case: ``success_rate`` (reached with no
contact), ``reach_rate``, ``contacts`` (events of the hull circle, ``hull_radius_m`` around the vessel's
centre, touching a buoy's circle), ``min_clearance_m`` (distance minus hull and buoy radii, the least of
the runs), ``time_to_goal_s`` and ``path_length_ratio`` (path over the straight distance via the
destinations; the mean over reached runs), ``stalls`` and ``timeouts``. ``shadows``: DAMN with and without
shadows side by side. ``success``: DAMN (with shadows) reaches at least ``min_success_rate`` of the seeded
goals with no contact in any seeded run (with a course file: it reaches that course's goal without contact).

Runs go through the sweep runner (``harness.parallel.ordered_map``, ``workers``); each run is seeded by its
case alone (the same vessel disturbances for every arbiter), so the metrics do not depend on the worker
count. Plots: ``paths`` (each arbiter's track over the buoys, adversarial cases and the first seeded
courses), ``votes`` (DAMN's vote grid with and without shadows, and the potential field's arrows, at one
decision of the first case near a buoy: paper figs. 9-10). Log: ``/boat_arbiters/run`` (each run's numbers),
``/boat_arbiters/track`` (its track at 1 Hz), ``/boat_arbiters/votes`` (the plotted grids).
"""
import math
import time

from harness.config import (BOOLEAN, POSITIVE, TEXT, ConfigError, int_at_least, non_empty_list, one_of, or_null,
                            under, within)
from harness.report.plots import figure, label
from harness.sim.boat_course import BUOY_FIELD_GOAL_M, Buoy, Course, CourseFileError, generate_course, load_course
from harness.sim.rng import RunRandom
from harness.sim.wamv import Wamv
from onboard.control.heading_speed import HeadingSpeedController
from onboard.vessel import model as vm
from onboard.vessel.arbiters import (DAMN_DEFAULTS, DAMN_RANGES, PF_DEFAULTS, PF_RANGES, DamnArbiter, NavState,
                                     PotentialFieldArbiter)
from onboard.vessel.thrust_map import ThrustMap

DESCRIPTION = "DAMN (with/without vote shadows) vs potential-field arbiter on the WAM-V: buoy fields, traps, gates"

ARBITER_KEYS = ("damn", "damn_no_shadows", "potential_field")
ADVERSARIAL = ("goal_behind_buoy", "u_trap", "narrow_gate")

DEFAULTS = {
    "courses": 40,                   # seeded "buoy_field" courses
    "adversarial": True,             # add the three adversarial cases
    "course": {"file": None},        # a user's course file: run that course alone
    "arbiters": list(ARBITER_KEYS),
    "vessel": "rich",                # truth vessel mode (harness.sim.wamv): "rich" (wind, waves, current) | "paper"
    "decide_hz": 5,                  # arbiter decisions per second
    "control_hz": 10,                # heading/speed controller (the app's CONTROL_RATE_HZ)
    "goal_radius_m": 3.0,
    "hull_radius_m": 2.5,            # the WAM-V's hull circle for contacts and clearance
    "stall_s": 20.0,
    "stall_progress_m": 1.0,
    "time_per_m_s": 1.5,
    "time_extra_s": 30.0,
    "min_success_rate": 0.95,
    "plot_courses": 2,               # seeded courses drawn in the paths plot
    "workers": 1,                    # local processes of the sweep runner
    "damn": dict(DAMN_DEFAULTS),
    "potential_field": dict(PF_DEFAULTS),
}
SETTING_RANGES = {
    "courses": int_at_least(0), "adversarial": BOOLEAN, "course.file": or_null(TEXT),
    "arbiters": non_empty_list(one_of(*ARBITER_KEYS), "a non-empty list of %s" % ", ".join(ARBITER_KEYS)),
    "vessel": one_of("rich", "paper"), "decide_hz": int_at_least(1), "control_hz": int_at_least(1),
    "goal_radius_m": POSITIVE, "hull_radius_m": within(0.0, 20.0), "stall_s": POSITIVE,
    "stall_progress_m": POSITIVE, "time_per_m_s": POSITIVE, "time_extra_s": POSITIVE,
    "min_success_rate": within(0.0, 1.0), "plot_courses": int_at_least(0), "workers": int_at_least(1),
}
SETTING_RANGES.update(under("damn", DAMN_RANGES))
SETTING_RANGES.update(under("potential_field", PF_RANGES))
# a few seconds: 1 seeded course plus the adversarial cases, decisions at 2 Hz
REDUCED = {"courses": 1, "decide_hz": 2, "plot_courses": 1}

SIM_DT_S = 0.01
SIM_DT_US = 10000
TRACK_US = 1000000                   # track samples (log and plot)
SNAPSHOT_RANGE_M = 14.0              # the plotted decision: the first with a buoy this near


def check_settings(config):
    for key in ("decide_hz", "control_hz"):
        if (1000000 // config[key]) % SIM_DT_US or 1000000 % config[key]:
            raise ConfigError("boat-arbiters: %s (%d) must divide 100 (a whole number of 10 ms steps)"
                              % (key, config[key]))
    if config["courses"] == 0 and not config["adversarial"] and not config["course"]["file"]:
        raise ConfigError("boat-arbiters: nothing to run (courses = 0, adversarial false, no course.file)")
    if config["course"]["file"]:
        named = [("course.file", load_user_course(config["course"]["file"]))]
    else:
        named = adversarial_courses() if config["adversarial"] else []
    legs = [(shortest_leg_m(course), name) for name, course in named]
    if config["courses"] and not config["course"]["file"]:
        legs.append((BUOY_FIELD_GOAL_M[0], "the seeded buoy fields"))
    leg_m, where = min(legs)
    if config["goal_radius_m"] >= leg_m:
        raise ConfigError("boat-arbiters: goal_radius_m (%g m) is not below the shortest leg to a destination "
                          "(%g m, %s): that destination would count as reached without going there"
                          % (config["goal_radius_m"], leg_m, where))


def shortest_leg_m(course):
    """The shortest distance (m) from the start to the first destination or between two destinations in turn."""
    points = [(course.start_north_m, course.start_east_m)] + destinations(course)
    return min(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(points, points[1:]))


def load_user_course(path):
    try:
        return load_course(path)
    except (CourseFileError, OSError) as exc:
        raise ConfigError("boat-arbiters: course.file: %s" % str(exc).splitlines()[0])


# ---------------------------------------------------------------------------------------------- cases
def adversarial_courses():
    """[(name, Course)] of the adversarial cases (all start at the origin heading north)."""
    behind = Course(0.0, 0.0, 0.0, (Buoy(30.0, 0.0, 0.5, 1.0),), (40.0, 0.0), ())
    # a U open towards the boat: arms at east -8 and 8 from north 18 to 30, the bottom at north 30; buoys 2 m
    # apart (gaps of 1 m: the 5 m hull cannot pass); the goal 15 m behind the bottom
    u = [Buoy(30.0, float(e), 0.5, 1.0) for e in range(-8, 9, 2)]
    u += [Buoy(float(n), float(e), 0.5, 1.0) for e in (-8, 8) for n in range(18, 30, 2)]
    u_trap = Course(0.0, 0.0, 0.0, tuple(u), (45.0, 0.0), ())
    # a 12 m gate (buoy centres, east -2 and 10: 11.2 m of water, 6.2 m more than the hull circle) in a wall at
    # north 30 from east -41 to 40, buoys 3 m apart (gaps of 2.2 m); the goal 15 m behind, off the gate's axis
    gate = [Buoy(30.0, -2.0, 0.4, 1.2, "gate_left"), Buoy(30.0, 10.0, 0.4, 1.2, "gate_right")]
    wall = [Buoy(30.0, float(e), 0.4, 1.0) for e in range(-41, -4, 3)] + [Buoy(30.0, float(e), 0.4, 1.0)
                                                                          for e in range(13, 41, 3)]
    narrow = Course(0.0, 0.0, 0.0, tuple(gate + wall), (45.0, 0.0), ())
    return [("goal_behind_buoy", behind), ("u_trap", u_trap), ("narrow_gate", narrow)]


def destinations(course):
    """The destinations of a course in order: its goal, or its tasks' points."""
    if course.goal is not None:
        return [tuple(course.goal)]
    return [(t.north_m, t.east_m) for t in course.tasks]


def make_arbiter(key, cfg):
    if key == "potential_field":
        return PotentialFieldArbiter(cfg["potential_field"])
    damn = dict(cfg["damn"])
    if key == "damn_no_shadows":
        damn["shadows"] = False
    return DamnArbiter(damn)


# ---------------------------------------------------------------------------------------------- one run
def run_case(job):
    """One closed-loop run (a sweep job): ``(arbiter key, case name, course, run seed, settings, snapshot)``
    -> its outcomes, its track at 1 Hz and (with ``snapshot``) the vote grid / field of one decision."""
    key, case, course, seed, cfg, snapshot = job
    hull = cfg["hull_radius_m"]
    boat = Wamv({"mode": cfg["vessel"], "dt_s": SIM_DT_S,
                 "start": {"north_m": course.start_north_m, "east_m": course.start_east_m,
                           "yaw_deg": math.degrees(course.start_yaw_rad)}},
                rng=RunRandom(seed).stream("wamv"))
    ctl = HeadingSpeedController(ThrustMap())
    arb = make_arbiter(key, cfg)
    obstacles = [(b.north_m, b.east_m, b.radius_m) for b in course.buoys]
    goals = destinations(course)
    straight = 0.0
    prev = (course.start_north_m, course.start_east_m)
    for g in goals:
        straight += math.hypot(g[0] - prev[0], g[1] - prev[1])
        prev = g
    limit_us = int(round((cfg["time_extra_s"] + cfg["time_per_m_s"] * straight) * 1e6))
    decide_us, control_us = 1000000 // cfg["decide_hz"], 1000000 // cfg["control_hz"]
    stall_us = int(round(cfg["stall_s"] * 1e6))
    goal_k = 0
    best_d = math.hypot(goals[0][0] - course.start_north_m, goals[0][1] - course.start_east_m)
    best_us = 0
    ref = (course.start_yaw_rad, 0.0)
    in_contact = [False] * len(obstacles)
    contacts = 0
    min_clear = float("inf")
    path_m = 0.0
    last = (boat.north_m, boat.east_m)
    track = [(0.0, last[0], last[1])]
    shot = None
    outcome = "timeout"
    now_us = 0
    while True:
        s = boat.state()
        n, e = s[vm.NORTH], s[vm.EAST]
        # contacts, clearance and path length at every step
        for i, (bn, be, br) in enumerate(obstacles):
            c = math.hypot(n - bn, e - be) - br - hull
            if c < min_clear:
                min_clear = c
            if c < 0.0:
                if not in_contact[i]:
                    contacts += 1
                    in_contact[i] = True
            else:
                in_contact[i] = False
        path_m += math.hypot(n - last[0], e - last[1])
        last = (n, e)
        if now_us % TRACK_US == 0 and now_us:
            track.append((now_us * 1e-6, n, e))
        gn, ge = goals[goal_k]
        d = math.hypot(gn - n, ge - e)
        if d < cfg["goal_radius_m"]:
            goal_k += 1
            if goal_k == len(goals):
                outcome = "reached"
                break
            gn, ge = goals[goal_k]
            best_d, best_us = math.hypot(gn - n, ge - e), now_us
        elif d < best_d - cfg["stall_progress_m"]:
            best_d, best_us = d, now_us
        elif now_us - best_us >= stall_us:
            outcome = "stalled"
            break
        if now_us >= limit_us:
            break
        if now_us % decide_us == 0:
            ref = arb.decide(NavState(n, e, s[vm.YAW], s[vm.SURGE]), obstacles, (gn, ge))
            if snapshot and shot is None and any(math.hypot(n - bn, e - be) < SNAPSHOT_RANGE_M
                                                 for bn, be, _ in obstacles):
                shot = _snapshot(arb, now_us)
        if now_us % control_us == 0:
            boat.command(*ctl.step(ref[0], ref[1], s[vm.YAW], s[vm.YAW_RATE], s[vm.SURGE], now_us))
        boat.step()
        now_us += SIM_DT_US
    track.append((now_us * 1e-6, last[0], last[1]))
    return {"arbiter": key, "case": case, "seed": seed, "outcome": outcome, "reached": outcome == "reached",
            "contacts": contacts, "min_clearance_m": min_clear if obstacles else None,
            "time_s": now_us * 1e-6, "path_m": path_m, "straight_m": straight,
            "path_length_ratio": path_m / straight if straight > 0 else None,
            "destinations_reached": goal_k, "decisions": arb.decisions, "track": track, "snapshot": shot}


def _snapshot(arb, now_us):
    if isinstance(arb, DamnArbiter):
        v = arb.last_votes
        return {"time_us": now_us, "kind": "damn", "origin_ne_m": list(v["origin_ne_m"]),
                "destination_ne_m": list(v["destination_ne_m"]), "shadows": v["shadows"],
                "offsets_ne_m": [list(arb.region_offset_ne_m(i)) for i in range(len(v["total"]))],
                "total": list(v["total"]), "best": v["best"]}
    f = arb.last_field
    o, g = f["origin_ne_m"], f["destination_ne_m"]
    grid = []
    for i in range(-8, 9):
        for j in range(-8, 9):
            pn, pe = o[0] + 2.5 * i, o[1] + 2.5 * j
            fn, fe = arb.field_vector(pn, pe)
            grid.append([pn, pe, fn, fe])
    return {"time_us": now_us, "kind": "potential_field", "origin_ne_m": list(o), "destination_ne_m": list(g),
            "path_ne_m": [list(p) for p in f["path_ne_m"]], "field": grid}


# ---------------------------------------------------------------------------------------------- the study
def cases(config, seed):
    """[(case name, Course, run seed)]: a course file alone, else the seeded fields then the adversarial cases."""
    if config["course"]["file"]:
        return [("course_file", load_user_course(config["course"]["file"]), seed * 100000)]
    out = []
    for k in range(config["courses"]):
        s = seed * 100000 + k
        out.append(("field_%d" % k, generate_course(s, "buoy_field"), s))
    if config["adversarial"]:
        for k, (name, course) in enumerate(adversarial_courses()):
            out.append((name, course, seed * 100000 + 90000 + k))
    return out


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def summary(results):
    """Totals of a list of run results (one arbiter, one group of cases)."""
    n = len(results)
    reached = [r for r in results if r["reached"]]
    clean = [r for r in reached if r["contacts"] == 0]
    clear = [r["min_clearance_m"] for r in results if r["min_clearance_m"] is not None]
    return {
        "runs": n, "reached": len(reached), "reached_without_contact": len(clean),
        "success_rate": len(clean) / n if n else None, "reach_rate": len(reached) / n if n else None,
        "contacts": sum(r["contacts"] for r in results),
        "runs_with_contacts": sum(1 for r in results if r["contacts"]),
        "min_clearance_m": min(clear) if clear else None,
        "mean_min_clearance_m": _mean(clear),
        "time_to_goal_s": _mean([r["time_s"] for r in reached]),
        "path_length_ratio": _mean([r["path_length_ratio"] for r in reached if r["path_length_ratio"] is not None]),
        "stalls": sum(1 for r in results if r["outcome"] == "stalled"),
        "timeouts": sum(1 for r in results if r["outcome"] == "timeout"),
    }


def _case_row(r):
    return {"outcome": r["outcome"], "contacts": r["contacts"], "min_clearance_m": r["min_clearance_m"],
            "time_s": r["time_s"], "path_length_ratio": r["path_length_ratio"] if r["reached"] else None}


def run(config, ctx):
    wall0 = time.perf_counter()
    case_list = cases(config, ctx.seed)
    keys = list(dict.fromkeys(config["arbiters"]))
    job_cfg = {k: config[k] for k in ("vessel", "decide_hz", "control_hz", "goal_radius_m", "hull_radius_m",
                                     "stall_s", "stall_progress_m", "time_per_m_s", "time_extra_s", "damn",
                                     "potential_field")}
    shot_case = case_list[-len(ADVERSARIAL)][0] if (config["adversarial"] and not config["course"]["file"]) \
        else case_list[0][0]
    jobs = [(key, name, course, s, job_cfg, name == shot_case) for name, course, s in case_list for key in keys]
    results = ctx.map(run_case, jobs, config["workers"], "boat-arbiters")
    ctx.timing(wall_s=time.perf_counter() - wall0, workers=config["workers"],
               decisions=sum(r["decisions"] for r in results))
    for k, r in enumerate(results):
        ctx.log("/boat_arbiters/run", k, {x: r[x] for x in r if x not in ("track", "snapshot")})
        ctx.log("/boat_arbiters/track", k, {"arbiter": r["arbiter"], "case": r["case"],
                                            "t_s_north_m_east_m": [list(p) for p in r["track"]]})
        if r["snapshot"] is not None:
            ctx.log("/boat_arbiters/votes", r["snapshot"]["time_us"], dict(r["snapshot"], arbiter=r["arbiter"],
                                                                          case=r["case"]))
    per = {}
    for key in keys:
        mine = [r for r in results if r["arbiter"] == key]
        block = {}
        if config["course"]["file"]:
            block["course_file"] = summary(mine)
            block["course_file"]["outcome"] = mine[0]["outcome"]
        else:
            seeded = [r for r in mine if r["case"].startswith("field_")]
            if seeded:
                block["seeded"] = summary(seeded)
            adv = [r for r in mine if r["case"] in ADVERSARIAL]
            if adv:
                block["adversarial"] = {r["case"]: _case_row(r) for r in adv}
        per[key] = block
    metrics = {"cases": len(case_list), "seeded_courses": 0 if config["course"]["file"] else config["courses"],
               "adversarial_cases": list(ADVERSARIAL) if config["adversarial"] and not config["course"]["file"] else [],
               "course_file": config["course"]["file"], "arbiters": per}
    group = "course_file" if config["course"]["file"] else "seeded"
    if "damn" in per and "damn_no_shadows" in per and group in per["damn"]:
        w, wo = per["damn"][group], per["damn_no_shadows"][group]
        shadows = {"with": {k: w[k] for k in ("success_rate", "contacts", "min_clearance_m", "stalls")},
                   "without": {k: wo[k] for k in ("success_rate", "contacts", "min_clearance_m", "stalls")}}
        if "adversarial" in per["damn"]:
            shadows["adversarial_outcomes"] = {
                c: {"with": per["damn"]["adversarial"][c]["outcome"] + _contact_note(per["damn"]["adversarial"][c]),
                    "without": per["damn_no_shadows"]["adversarial"][c]["outcome"]
                    + _contact_note(per["damn_no_shadows"]["adversarial"][c])}
                for c in per["damn"]["adversarial"]}
        metrics["shadows"] = shadows
    if "damn" in per and group in per["damn"]:
        d = per["damn"][group]
        if group == "seeded":
            met = (d["success_rate"] is not None and d["success_rate"] >= config["min_success_rate"]
                   and d["contacts"] == 0)
        else:
            met = d["reached"] == 1 and d["contacts"] == 0
        metrics["acceptance"] = {"group": group, "min_success_rate": config["min_success_rate"],
                                 "damn_success_rate": d["success_rate"], "damn_contacts": d["contacts"], "met": met}
        metrics["success"] = bool(met)
    else:
        metrics["success"] = False
        metrics["acceptance"] = {"group": group, "met": False, "why": "needs the damn arbiter and a seeded course "
                                 "or a course file"}
    _plot_paths(ctx, case_list, results, keys, config)
    _plot_votes(ctx, results, {name: course for name, course, _ in case_list})
    return metrics


def _contact_note(row):
    return " with %d contact%s" % (row["contacts"], "" if row["contacts"] == 1 else "s") if row["contacts"] else ""


# ---------------------------------------------------------------------------------------------- plots
COLORS = {"damn": "tab:green", "damn_no_shadows": "tab:orange", "potential_field": "tab:blue"}


def _buoys(ax, course):
    from matplotlib.patches import Circle
    for k, b in enumerate(course.buoys):
        ax.add_patch(Circle((b.east_m, b.north_m), b.radius_m, color="tab:red", label="buoy" if k == 0 else "_"))


def _plot_paths(ctx, case_list, results, keys, config):
    if ctx.report is None:
        return
    shown = [c for c in case_list if not c[0].startswith("field_")]
    shown = [c for c in case_list if c[0].startswith("field_")][:config["plot_courses"]] + shown
    if not shown:
        return
    fig, axes = figure(1, len(shown), title="boat-arbiters: tracks of the WAM-V per arbiter",
                       size_in=(5.0 * len(shown), 5.4), squeeze=False)
    for ax, (name, course, _) in zip(axes[0], shown):
        _buoys(ax, course)
        for key in keys:
            r = next(x for x in results if x["case"] == name and x["arbiter"] == key)
            tr = r["track"]
            ax.plot([p[2] for p in tr], [p[1] for p in tr], color=COLORS[key],
                    label="%s (%s%s)" % (key, r["outcome"], ", %d contacts" % r["contacts"] if r["contacts"] else ""))
        ax.plot([course.start_east_m], [course.start_north_m], "k^", label="start")
        goals = destinations(course)
        ax.plot([g[1] for g in goals], [g[0] for g in goals], "kx", markersize=10, label="goal")
        ax.set_aspect("equal", adjustable="datalim")
        label(ax, name, "east (m)", "north (m)")
    ctx.report.save_figure(fig, "paths")


def _plot_votes(ctx, results, courses):
    if ctx.report is None:
        return
    shots = [r for r in results if r["snapshot"] is not None]
    if not shots:
        return
    fig, axes = figure(1, len(shots), title="boat-arbiters: %s, one decision (paper figs. 9-10)" % shots[0]["case"],
                       size_in=(5.6 * len(shots), 5.2), squeeze=False)
    course = courses[shots[0]["case"]]
    for ax, r in zip(axes[0], shots):
        s = r["snapshot"]
        o, g = s["origin_ne_m"], s["destination_ne_m"]
        if s["kind"] == "damn":
            pts = s["offsets_ne_m"]
            sc = ax.scatter([o[1] + p[1] for p in pts], [o[0] + p[0] for p in pts], c=s["total"], cmap="RdYlGn",
                            s=14, vmin=-4.0, vmax=1.0, label="region (vote total)")
            cb = fig.colorbar(sc, ax=ax)
            cb.set_label("vote total (goal x 1 + avoid x 3 + turn)")
            b = pts[s["best"]]
            ax.plot([o[1] + b[1]], [o[0] + b[0]], "bs", markersize=9, label="chosen region")
            title = "DAMN votes, shadows %s" % ("on" if s["shadows"] else "off")
        else:
            f = s["field"]
            norm = [max(1e-12, (p[2] * p[2] + p[3] * p[3]) ** 0.5) for p in f]
            ax.quiver([p[1] for p in f], [p[0] for p in f], [p[3] / k for p, k in zip(f, norm)],
                      [p[2] / k for p, k in zip(f, norm)], color="tab:blue", label="direction of -grad U")
            ax.plot([p[1] for p in s["path_ne_m"]], [p[0] for p in s["path_ne_m"]], "m.-", label="descent look-ahead")
            title = "potential field"
        ax.plot([o[1]], [o[0]], "k^", label="vessel")
        ax.plot([g[1]], [g[0]], "kx", markersize=10, label="destination")
        _buoys(ax, course)
        ax.set_aspect("equal", adjustable="datalim")
        label(ax, title, "east (m)", "north (m)")
    ctx.report.save_figure(fig, "votes")
