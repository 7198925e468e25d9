"""A boat run recorded for playback (RobotX AAVS fig. 11): the WAM-V app (``boards.wamv.app``) with LIDAR perception
and an arbiter on the simulated WAM-V (``harness.sim.boat_world``: truth vessel, NMEA GNSS, heading, gyro, outboards
on ptys) and the simulated VLP-16 (``harness.sim.lidar``) on a course, recorded at the app's boundary into one MCAP
log together with the app's Foxglove views (``onboard.vessel.boat_views``).

``python -m harness.sim.boat_playback --out DIR [--seed N] [--seconds S] [--arbiter damn|potential_field]
[--course FILE] [--no-views]`` writes ``DIR/log.mcap``; ``python -m harness replay DIR/log.mcap`` re-runs it and
reports where the outputs differ (expected: nowhere), and Foxglove opens it with
``docs/foxglove/boat_layout.json``. The course: a TOML course file (``docs/formats/boat-course.md``; its
``[goal]`` is the destination, or the first task's point) or the seeded buoy field ``generate_course(seed,
"buoy_field")``. Randomness: ``RunRandom(seed)`` streams (``harness.sim.rng``).
"""
import argparse
import math
import os
import sys

from boards.wamv.app import WamvApp
from harness.config import non_negative_int
from harness.sim.boat_course import CourseFileError, generate_course, load_course
from harness.sim.boat_world import BoatWorld
from harness.sim.lidar import Lidar, LidarScene, LidarSensor
from harness.sim.rng import RunRandom
from onboard.runtime.mcap_log import McapLog, code_version

ARBITERS = ("damn", "potential_field")


def destination_of(course):
    """The course's destination (north_m, east_m): its goal, else its first task's point."""
    if course.goal is not None:
        return (float(course.goal[0]), float(course.goal[1]))
    return (course.tasks[0].north_m, course.tasks[0].east_m)


def record_run(path, course, seed=1, duration_s=60.0, arbiter="damn", views=True, app_config=None, gnss=None,
               schedule=(), version=""):
    """Run the app on ``course`` for ``duration_s`` simulated seconds (or until it arrives) and record it into the
    MCAP log at ``path``; returns the app's report. ``app_config``: more ``boards.wamv.app`` settings; ``gnss``:
    the simulated receiver's settings; ``schedule``: (time_s, fn(app, now_us)) events, e.g. a new destination;
    ``version``: the code version written with the recording."""
    rr = RunRandom(seed)
    start = {"north_m": course.start_north_m, "east_m": course.start_east_m,
             "yaw_deg": math.degrees(course.start_yaw_rad)}
    log = McapLog(str(path))        # first: a log that cannot be opened leaves no world (ptys) open behind it
    try:
        w = BoatWorld(rr, wamv={"start": start}, gnss=gnss, interface={"latency_s": 0.0, "timeout_ms": 200})
        try:
            cfg = dict({"perception": {}, "arbiter": arbiter, "destination": list(destination_of(course)),
                        "views": views}, **(app_config or {}))
            app = WamvApp(w.driver(), w.gnss_app_end, cfg, view=log.log_view)
            w.attach_app(app, app.frame)
            w.add_sensor(LidarSensor(Lidar({}, rr.stream("lidar")), LidarScene(course), w.vessel, app.on_lidar))
            for time_s, fn in schedule:
                w.at_s(time_s, lambda now_us, fn=fn: fn(app, now_us))
            w.start(app, record=log.log, code_version=version)
            w.run(int(round(duration_s * 1e6)), 1_000_000, done=lambda: app.helm.arbiter.arrived)
        finally:
            w.close()
    finally:
        log.close()
    return app.report()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m harness.sim.boat_playback", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for log.mcap")
    ap.add_argument("--seed", type=non_negative_int, default=1)
    ap.add_argument("--seconds", type=float, default=60.0, help="simulated seconds at most (default 60)")
    ap.add_argument("--arbiter", choices=ARBITERS, default="damn")
    ap.add_argument("--course", help="a TOML course file (default: the seeded buoy field)")
    ap.add_argument("--no-views", action="store_true", help="record without the Foxglove views")
    args = ap.parse_args(argv)
    if not (args.seconds > 0.0 and math.isfinite(args.seconds)):
        print("error: --seconds must be a positive number, got %r" % args.seconds, file=sys.stderr)
        return 2
    try:
        course = load_course(args.course) if args.course else generate_course(args.seed, "buoy_field")
    except (CourseFileError, OSError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        print("error: --out %s: %s" % (args.out, exc.strerror or exc), file=sys.stderr)
        return 2
    path = os.path.join(args.out, "log.mcap")
    try:
        rep = record_run(path, course, args.seed, args.seconds, args.arbiter, not args.no_views,
                         version=code_version())
    except OSError as exc:
        if getattr(exc, "filename", None) != path:
            raise
        print("error: cannot write %s: %s" % (path, exc.strerror or exc), file=sys.stderr)
        return 2
    print("boat_playback: %s, %d LIDAR frames, %d buoys confirmed, %d decisions, arrived %s, %d view messages -> %s"
          % (args.arbiter, rep["perception"]["frames"], rep["perception"]["buoys_confirmed"],
             rep["arbiter"]["decisions"], rep["arbiter"]["arrived"], rep.get("views", {}).get("views", 0), path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
