"""Scenario `level-hill`: 1-8 tracked robots level a mound field with hill-sensing alone (Cook thesis 7.1.1,
Alg. 6 "charge up a slope while pitch > epsilon, else random walk", or its spin-at-peak variant), no blade.

Each robot runs the onboard app :class:`onboard.leveling.hill_app.HillLevelerApp` (a Node recipe: the tilt
estimator on its simulated IMU -> Alg. 6 -> track speeds); the pitch it acts on is the estimate from its
IMU, never the truth. Bodies: :class:`harness.sim.hill_robots.TrackedRobot` (skid-steer, resting on the
heightmap) with :class:`harness.sim.hill_robots.TerrainImu`. Terrain:
:mod:`harness.sim.hill_terrain` (the grading task's SandWorld: volume-conserving, erosion to the angle of
repose, plus Bekker track sinkage and bulldozing at the tracks), a seeded mound field or a user's
heightmap, ``terrain.file=PATH`` (a grayscale PNG or a .npy array; heights = value *
``terrain.height_scale_m`` metres, or, when that is null, scaled so the file's highest value is
``terrain.peak_m``; the file sets the grid, ``cell_m`` per pixel). A missing, empty
or malformed file is one ConfigError line (the CLI exits 2).

Time: the robots, IMUs and apps step at ``app.imu_rate_hz``; the tracks press the terrain and the terrain
erodes at ``terrain_rate_hz``. The run lasts ``duration_s`` of simulated time.

Metrics: rms height (std of the heights) and max gradient (largest 4-neighbour slope, m/m) at the start,
the end and sampled every ``record.every_s``; ``rms_reduction`` (1 - final / initial rms) and
``time_to_goal_s`` (first sample, the start's at 0 s included, where the rms fell by ``goal.rms_reduction``:
0.0 for a goal of 0 or a terrain already level, rms 0; null if never); ``rms_reduction`` is 0.0 for a terrain
already level;
``volume_error_m3`` (sand volume now - at the start); the tilt estimate's error against the true pitch (rms
and max over every control step, deg); the behaviour's counters. ``success``: the rms fell by
``goal.rms_reduction`` within ``duration_s`` and the volume is conserved (|error| <= 1e-9 of the volume, or of
the heights' absolute volume where that is larger: a level terrain at 0 m has none above the bed).
Plots: ``roughness`` (rms height and max gradient vs time), ``terrain`` (heights before and after, with the
robots' paths), ``pitch`` (estimated vs true pitch of robot 0). Log: ``/hill/terrain`` every record, and
``/hill/robots`` (pose, true and estimated pitch, mode) every record; robot ``record.app_robot``'s app
(default 0; -1: none) recorded at its boundary (``/app/...``: its IMU samples, random-walk draws, ticks and
track commands), which ``python -m harness replay LOG`` rebuilds and compares bit for bit.
"""
import math
import time

import numpy as np

from harness.sim import hill_robots, hill_terrain
from harness.sim.hill_robots import TerrainImu, TrackedRobot
from harness.sim.hill_terrain import TrackContact, build_world, roughness
from onboard.core.settings import (ConfigError, POSITIVE, RATE_HZ, int_at_least, int_within, under, within)
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.leveling import hill_app
from onboard.leveling.hill_app import HillLevelerApp
from onboard.runtime.mcap_log import code_version
from onboard.runtime.scheduler import GROUP_RATES

DESCRIPTION = "1-8 tracked robots level a mound field by hill-sensing (thesis Alg. 6) on deformable sand"

APP_KEYS = ("imu_rate_hz", "control_rate_hz", "imu_timeout_us", "queue_limit", "tilt", "behaviour")

DEFAULTS = {
    "robots": 4,
    "duration_s": 1800.0,
    "terrain_rate_hz": 5,
    "terrain": dict(hill_terrain.DEFAULTS),
    "soil": dict(hill_terrain.SOIL_DEFAULTS),
    "vehicle": dict(hill_robots.VEHICLE_DEFAULTS),
    "imu": dict(hill_robots.IMU_DEFAULTS),
    "app": dict({k: hill_app.DEFAULTS[k] for k in APP_KEYS}, imu_rate_hz=50, control_rate_hz=10),
    "goal": {"rms_reduction": 0.5},
    "record": {"every_s": 10.0, "app_robot": 0},
}
# a run of a few seconds of wall time: 1 m x 1 m, three mounds (with duration_s=400 the rms halves: tested)
REDUCED = {"duration_s": 60.0, "terrain": {"size_m": [1.0, 1.0], "mounds": 3}, "record": {"every_s": 5.0}}

SETTING_RANGES = {"robots": int_within(1, 8), "duration_s": POSITIVE, "terrain_rate_hz": RATE_HZ,
                  "goal.rms_reduction": within(0.0, 1.0), "record.every_s": POSITIVE,
                  "record.app_robot": int_at_least(-1),
                  ("app.imu_rate_hz", "app.control_rate_hz", "terrain_rate_hz"): GROUP_RATES}
for _prefix, _rules in (("terrain", hill_terrain.SETTING_RANGES), ("soil", hill_terrain.SOIL_SETTING_RANGES),
                        ("vehicle", hill_robots.VEHICLE_SETTING_RANGES), ("imu", hill_robots.IMU_SETTING_RANGES),
                        ("app", hill_app.SETTING_RANGES)):
    SETTING_RANGES.update(under(_prefix, _rules, DEFAULTS[_prefix]))


def _app_config(config):
    cfg = {k: config["app"][k] for k in APP_KEYS}
    v = config["vehicle"]
    cfg.update(track_gauge_m=v["track_gauge_m"], sprocket_radius_m=v["sprocket_radius_m"],
               max_sprocket_radps=v["max_sprocket_radps"])
    return cfg


def check_settings(config):
    """Build the terrain once (a bad terrain file fails here, one line) and check the robots fit on it."""
    world = build_world(config["terrain"], np.random.default_rng(0))
    v = config["vehicle"]
    hill_robots.check_track_covers_cells(v, world.cell_m)
    need = 2.0 * math.hypot(v["track_length_m"], v["track_gauge_m"])
    side = min(world.rows, world.cols) * world.cell_m
    if side < need:
        raise ConfigError("terrain %.3f m on its smaller side: the robots need at least %.3f m" % (side, need))
    reach = 0.5 * v["track_length_m"] + 0.5 * v["track_width_m"] + 1.5 * world.cell_m
    if 2.0 * reach / world.cell_m + 2.0 >= min(world.rows, world.cols):
        raise ConfigError("terrain of %dx%d cells: a track's patch needs fewer cells than a side (cell_m %g too "
                          "coarse?)" % (world.rows, world.cols, world.cell_m))
    imu_hz = config["app"]["imu_rate_hz"]
    for key, hz in (("app.control_rate_hz", config["app"]["control_rate_hz"]),
                    ("terrain_rate_hz", config["terrain_rate_hz"])):
        if hz > imu_hz:
            raise ConfigError("%s (%g Hz) is faster than app.imu_rate_hz (%g Hz), the simulation's step"
                              % (key, hz, imu_hz))
    if config["record"]["app_robot"] >= config["robots"]:
        raise ConfigError("record.app_robot: the run has %d robots (0..%d; -1 records none), got %d"
                          % (config["robots"], config["robots"] - 1, config["record"]["app_robot"]))
    if int(round(config["duration_s"] * imu_hz)) < 1:
        raise ConfigError("duration_s (%g) is shorter than one step of app.imu_rate_hz (%g Hz): nothing would run"
                          % (config["duration_s"], imu_hz))
    if config["record"]["every_s"] > config["duration_s"]:
        raise ConfigError("record.every_s (%g) is longer than duration_s (%g)"
                          % (config["record"]["every_s"], config["duration_s"]))
    HillLevelerApp(lambda cmd: None, None, _app_config(config))


class _Fleet:
    """The robots, their IMUs and apps."""

    def __init__(self, config, world, ctx):
        n = config["robots"]
        rng = ctx.random.stream("level-hill/start")
        v = config["vehicle"]
        margin = math.hypot(v["track_length_m"], v["track_gauge_m"])
        size_n, size_e = world.rows * world.cell_m, world.cols * world.cell_m
        self.robots, self.imus, self.apps = [], [], []
        app_cfg = _app_config(config)
        for k in range(n):
            robot = TrackedRobot(world, rng.uniform(margin, size_n - margin), rng.uniform(margin, size_e - margin),
                                 rng.uniform(-math.pi, math.pi), v)
            self.robots.append(robot)
            self.imus.append(TerrainImu(robot, ctx.random.stream("level-hill/imu%d" % k), config["imu"]))
            self.apps.append(HillLevelerApp(robot.command, NumpyDraws(ctx.random.stream("level-hill/walk%d" % k)),
                                            app_cfg, name="leveler%d" % k))
        k = config["record"]["app_robot"]
        if k >= 0 and ctx.report is not None:       # robot k's app at its boundary, for `harness replay`
            self.apps[k].record(ctx.log, code_version(), 0)


def run(config, ctx):
    rate = config["app"]["imu_rate_hz"]
    dt_us = 1000000 // rate
    dt_s = dt_us * 1e-6
    press_every = rate // config["terrain_rate_hz"]
    control_every = rate // config["app"]["control_rate_hz"]
    record_every = max(1, int(round(config["record"]["every_s"] * rate)))
    ticks = int(round(config["duration_s"] * rate))
    world = build_world(config["terrain"], ctx.random.stream("level-hill/terrain"))
    contact = TrackContact(world, config["soil"])
    fleet = _Fleet(config, world, ctx)
    cell = world.cell_m
    volume0 = world.volume_m3()
    before = world.height_m.copy()
    r0 = roughness(world.height_m, cell)
    trace = {"time_s": [0.0], "rms_m": [r0["rms_m"]], "max_gradient": [r0["max_gradient"]]}
    paths = [[(r.north_m, r.east_m)] for r in fleet.robots]
    pitch_trace = {"time_s": [], "true_deg": [], "est_deg": []}
    err_sq, err_n, err_max = 0.0, 0, 0.0
    displaced = 0.0
    goal = config["goal"]["rms_reduction"]
    # the start is the trace's first sample: a goal of 0 or a terrain already level (rms 0) is met there
    time_to_goal = 0.0 if r0["rms_m"] <= (1.0 - goal) * r0["rms_m"] else None
    wall0 = time.perf_counter()
    bar = ctx.progress(config["duration_s"], "level-hill")
    _log(ctx, 0, world, r0, fleet)
    robots, imus, apps = fleet.robots, fleet.imus, fleet.apps
    for tick in range(1, ticks + 1):
        now_us = tick * dt_us
        for robot, imu, app in zip(robots, imus, apps):
            robot.step(dt_s)
            sample = imu.sample(now_us)
            if sample is not None:
                app.on_imu(sample)
            app.step(now_us)
        if tick % control_every == 0:
            for robot, app in zip(robots, apps):
                est = app.tilt.pitch_rad
                if est is not None:
                    e = abs(est - robot.pitch_rad)
                    err_sq += e * e
                    err_n += 1
                    err_max = max(err_max, e)
            a0 = apps[0].tilt.pitch_rad
            if a0 is not None and len(pitch_trace["time_s"]) < 20000:
                pitch_trace["time_s"].append(now_us * 1e-6)
                pitch_trace["true_deg"].append(math.degrees(robots[0].pitch_rad))
                pitch_trace["est_deg"].append(math.degrees(a0))
        if tick % press_every == 0:
            for robot in robots:
                displaced += robot.press(contact, press_every * dt_s)
            world.erode()
        if tick % record_every == 0 or tick == ticks:
            r = roughness(world.height_m, cell)
            t_s = now_us * 1e-6
            trace["time_s"].append(t_s)
            trace["rms_m"].append(r["rms_m"])
            trace["max_gradient"].append(r["max_gradient"])
            for path, robot in zip(paths, robots):
                path.append((robot.north_m, robot.east_m))
            if time_to_goal is None and r["rms_m"] <= (1.0 - goal) * r0["rms_m"]:
                time_to_goal = t_s
            _log(ctx, now_us, world, r, fleet)
            bar.update_to(t_s)
    bar.close()
    wall = time.perf_counter() - wall0
    ctx.timing(loop_wall_s=wall, sim_seconds_per_wall_second=config["duration_s"] / wall if wall > 0 else None)
    r1 = roughness(world.height_m, cell)
    volume_error = world.volume_m3() - volume0
    # the sand above and below the bed, the scale of the float rounding in volume_error (a terrain file that is
    # level at 0 has no volume above the bed, and ruts dug below it)
    gross_m3 = float(np.abs(world.height_m).sum()) * cell * cell
    reduction = 1.0 - r1["rms_m"] / r0["rms_m"] if r0["rms_m"] > 0 else 0.0
    reports = [app.report() for app in apps]
    metrics = {
        "success": bool(time_to_goal is not None and abs(volume_error) <= 1e-9 * max(volume0, gross_m3, 1e-12)),
        "robots": len(robots), "variant": config["app"]["behaviour"]["variant"],
        "duration_s": config["duration_s"],
        "terrain_source": config["terrain"]["file"] or "mounds",
        "rows": world.rows, "cols": world.cols, "cell_m": cell,
        "initial_rms_m": r0["rms_m"], "final_rms_m": r1["rms_m"], "rms_reduction": reduction,
        "goal_rms_reduction": goal, "time_to_goal_s": time_to_goal,
        "initial_max_gradient": r0["max_gradient"], "final_max_gradient": r1["max_gradient"],
        "initial_range_m": r0["range_m"], "final_range_m": r1["range_m"],
        "volume_m3": volume0, "volume_error_m3": volume_error,
        "moved_m3": displaced, "sheared_m3": contact.sheared_m3, "track_contacts": contact.contacts,
        "pitch_source": "onboard tilt estimator (IMU)",
        "pitch_error_rms_deg": math.degrees(math.sqrt(err_sq / err_n)) if err_n else None,
        "pitch_error_max_deg": math.degrees(err_max) if err_n else None,
        "climbs": sum(rep["hill"]["climbs"] for rep in reports),
        "spins": sum(rep["hill"]["spins"] for rep in reports),
        "failsafe_stops": sum(rep["hill"]["stops"] for rep in reports),
        "distance_m": [r.distance_m for r in robots],
        "wraps": sum(r.wraps for r in robots),
        "roughness_trace": trace,
    }
    if ctx.report is not None:
        _plots(ctx.report, trace, before, world.height_m, paths, pitch_trace, metrics, goal,
               config["record"]["every_s"])
    return metrics


def _log(ctx, time_us, world, r, fleet):
    if ctx.report is None:
        return
    ctx.log("/hill/terrain", time_us, {"rms_m": r["rms_m"], "max_gradient": r["max_gradient"],
                                       "range_m": r["range_m"], "volume_m3": world.volume_m3()})
    ctx.log("/hill/robots", time_us, {"robots": [
        {"id": k, "north_m": rb.north_m, "east_m": rb.east_m, "yaw_rad": rb.yaw_rad, "pitch_true_rad": rb.pitch_rad,
         "pitch_est_rad": app.tilt.pitch_rad if app.tilt.pitch_rad is not None else float("nan"),
         "mode": app.mode_name} for k, (rb, app) in enumerate(zip(fleet.robots, fleet.apps))]})


def _plots(report, trace, before, after, paths, pitch, m, goal, every_s):
    from harness.report.plots import figure, label
    fig, ax = figure(1, 2, title="level-hill: %d robots (%s), %.0f s" % (m["robots"], m["variant"], m["duration_s"]))
    ax[0].plot(trace["time_s"], [v * 1000.0 for v in trace["rms_m"]], color="C0", label="rms height")
    ax[0].axhline((1.0 - goal) * m["initial_rms_m"] * 1000.0, color="C3", linestyle="--",
                  label="goal: -%d %% rms" % round(goal * 100))
    label(ax[0], "rms height (std of the heights)", "simulated time (s)", "rms height (mm)")
    ax[1].plot(trace["time_s"], trace["max_gradient"], color="C1", label="max gradient")
    label(ax[1], "largest 4-neighbour slope", "simulated time (s)", "slope (m/m)")
    report.save_figure(fig, "roughness")

    fig, ax = figure(1, 2, title="sand heights before and after (mm), robots' paths")
    lo = min(float(before.min()), float(after.min())) * 1000.0
    hi = max(float(before.max()), float(after.max())) * 1000.0
    rows, cols = before.shape
    cell = m["cell_m"]
    extent = (0.0, cols * cell, 0.0, rows * cell)
    for a, grid, name in ((ax[0], before, "before"), (ax[1], after, "after %.0f s" % m["duration_s"])):
        im = a.imshow(grid * 1000.0, origin="lower", vmin=lo, vmax=max(hi, lo + 1e-3), cmap="terrain",
                      extent=extent)
        cb = a.figure.colorbar(im, ax=a)
        cb.set_label("height (mm)")
        label(a, name, "east (m)", "north (m)", legend=False)
    jump = 0.5 * min(rows, cols) * cell
    for k, path in enumerate(paths):
        north, east = [], []
        for p, q in zip(path, path[1:] + path[-1:]):
            north.append(p[0])
            east.append(p[1])
            if abs(q[0] - p[0]) > jump or abs(q[1] - p[1]) > jump:
                north.append(float("nan"))     # a wrap-around: no line across the field
                east.append(float("nan"))
        ax[1].plot(east, north, color="k", linewidth=0.4, alpha=0.3,
                   label="robot paths (sampled every %g s)" % every_s if k == 0 else None)
    ax[1].legend(fontsize="small")
    report.save_figure(fig, "terrain")

    fig, ax = figure(1, 1, title="robot 0: pitch from its tilt estimator vs the truth")
    ax.plot(pitch["time_s"], pitch["true_deg"], color="C0", label="true pitch")
    ax.plot(pitch["time_s"], pitch["est_deg"], color="C1", linestyle="--", label="estimated pitch (IMU)")
    err = m["pitch_error_rms_deg"]          # None: the estimator gave no pitch (no samples)
    label(ax, "pitch (rms error of all robots %s)" % ("n/a" if err is None else "%.2f deg" % err),
          "simulated time (s)", "pitch (deg)")
    report.save_figure(fig, "pitch")
