"""Scenario `sandbox-datagen`: the thesis's data generation (Cook 5.3, Alg. 5) on the reference simulator
Sandbox (:mod:`harness.sim.sandbox`), on terrain A and on an unseen terrain B.

The experiment (terrain A's heightmap and scale, the robot's start pose and geometry, the soil, the frame
length and substeps) comes from an INI file with the keys of thesis fig. 5.3 (``config.file``; null: the
example ``harness/scenarios/leveling/sandbox/experiment.ini``; format: docs/formats/sandbox-ini.md).
Terrain B is ``terrain_b.file`` (a grayscale PNG at A's ``xy_scale`` and ``scale``) or, when null, a seeded
tileable terrain of A's size and peak height (features of ``terrain_b.wavelength_m``), from the run's seed.
Each session runs ``frames`` frames of the Alg. 5 schedule (eight blocks: forward, reverse, spin right and
left, four arcs; a new amplitude r ~ U(``command.amplitude``) every ``segment_frames`` frames, from the
seeded stream ``sandbox-datagen/schedule-<terrain>``) from the INI's start pose on a fresh terrain.

Outputs in the report folder: ``sandbox_<terrain>.npz`` per terrain (table 5.1 per frame, terrain crops
around the robot before the frame and the change after it, the whole heightmap at the start and the end;
docs/formats/sandbox-data.md), ``path.png`` (each path over its terrain), ``traces.png`` (per-frame traces
of terrain A), and the log topics ``/sandbox/<terrain>/frame`` (table 5.1 every ``log.every_frames``).

Metrics (outcomes only): per terrain the frames, teleports, the content digest of its arrays, the volume
error (m^3), the mean slip in the forward block, the ratio of the achieved to the commanded forward
speed and spin rate, per Alg. 5 block the achieved / commanded speed and yaw rate and the median slip
(teleport frames left out), the Spearman checks of thesis table 6.2 ((v_left - v_right) vs dtheta, speed vs
pitch), the pitch and roll ranges, Newton failures of the contact solver. ``success``: every
session ran all its frames, all values finite, the soil volume conserved (|error| <= 1e-9 of it).
"""
import math
import os
import time

import numpy as np

from harness.config import ConfigError, POSITIVE, TEXT, int_at_least, int_within, or_null, pair, within
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.config import QUANT, check_fits, load_experiment
from harness.sim.sandbox.terrain import tileable_heights
from harness.sim.sandbox.world import SandboxWorld
from harness.sim.voxel_terrain import load_heights

DESCRIPTION = "Sandbox reference simulator: Alg. 5 data generation (table 5.1 + terrain crops) on terrains A and B"

EXAMPLE_INI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox", "experiment.ini")
TERRAINS = ("A", "B")

DEFAULTS = {
    "config": {"file": None},                 # the experiment INI (null: the example)
    "frames": 16000,                          # per session (thesis V1: 16 000; V2: 64 000)
    "segment_frames": 250,                    # one amplitude per segment (Alg. 5)
    "command": {"speed_max_mps": 0.25,        # l = r * speed_max (Dagu Rover 5's 0.25 m/s; reading aid A11)
                "yaw_rate_max_radps": math.pi / 2.0,      # w = r * pi/2 (Alg. 5)
                "amplitude": [0.25, 1.0]},    # r ~ U(lo, hi)
    "terrains": ["A", "B"],
    "terrain_b": {"file": None, "wavelength_m": 0.3},
    "crop": {"cells": 32},                    # crop side (cells); 0: no crops
    "log": {"every_frames": 1},
}
REDUCED = {"frames": 120, "segment_frames": 15, "crop": {"cells": 16}, "log": {"every_frames": 2}}
SETTING_RANGES = {
    "config.file": or_null(TEXT), "frames": int_within(8, 10_000_000), "segment_frames": int_at_least(1),
    "command.speed_max_mps": POSITIVE, "command.yaw_rate_max_radps": POSITIVE,
    "command.amplitude": pair(within(0.0, 10.0), ordered=True),
    "terrains": ("a non-empty list of distinct terrains from A, B",
                 lambda v: isinstance(v, list) and 0 < len(v) == len(set(v)) and all(t in TERRAINS for t in v)),
    "terrain_b.file": or_null(TEXT), "terrain_b.wavelength_m": POSITIVE,
    "crop.cells": int_within(0, 512), "log.every_frames": int_at_least(1),
}


def _experiment(config):
    return load_experiment(config["config"]["file"] or EXAMPLE_INI)


def _terrain_b(config, exp, rng):
    """Heights (m) of terrain B: the user's PNG at A's scales, or a seeded tileable terrain like A."""
    path = config["terrain_b"]["file"]
    peak = float(exp.heights_m.max())
    if path is None:
        rows, cols = exp.heights_m.shape
        return tileable_heights(rows, cols, exp.cell_m, peak if peak > 0 else 0.05,
                                config["terrain_b"]["wavelength_m"], rng)
    if os.path.splitext(path)[1].lower() != ".png":
        raise ConfigError("terrain_b.file %s: a grayscale PNG heightmap is needed" % path)
    units = load_heights(path, height_scale=1.0 / QUANT)
    heights = np.flipud(units.astype(np.float64) * QUANT) * exp.height_scale_m
    check_fits(heights.shape, exp.cell_m, exp.vehicle, "terrain_b.file %s:" % path)
    return heights


def check_settings(config):
    """Read the experiment INI (and terrain B's file) once: a bad file is one ConfigError line."""
    exp = _experiment(config)
    if config["terrain_b"]["file"] is not None:
        sides = _terrain_b(config, exp, np.random.default_rng(0)).shape
    else:
        sides = exp.heights_m.shape
    if config["crop"]["cells"] > min(exp.heights_m.shape + sides):
        raise ConfigError("crop.cells (%d) is larger than a terrain's side (%d cells)"
                          % (config["crop"]["cells"], min(exp.heights_m.shape + sides)))


def _session(config, ctx, exp, label, heights):
    terrain = exp.terrain(heights)
    north, east, yaw = exp.start
    world = SandboxWorld(terrain, north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us, exp.substeps,
                         exp.erosion_iterations)
    volume0 = terrain.volume_m3()
    rng = ctx.random.stream("sandbox-datagen/schedule-%s" % label)
    topic = "/sandbox/%s/frame" % label
    frames = config["frames"]
    bar = ctx.progress(frames, "sandbox-datagen %s" % label, unit="frames")
    wall0 = time.perf_counter()
    arrays = sess.run_session(world, frames, config["segment_frames"], config["command"]["speed_max_mps"],
                              config["command"]["yaw_rate_max_radps"], rng.uniform,
                              tuple(config["command"]["amplitude"]), config["crop"]["cells"],
                              log=lambda t, rec: ctx.log(topic, t, rec), log_every=config["log"]["every_frames"],
                              progress=lambda i: bar.update_to(i) if i % 100 == 0 or i == frames else None)
    wall = time.perf_counter() - wall0
    bar.close()
    ctx.timing(**{"frame_wall_us_%s" % label: wall / frames * 1e6})
    volume_error = terrain.volume_m3() - volume0
    source = exp.source if label == "A" else (config["terrain_b"]["file"] or "generated (seed %d)" % ctx.seed)
    meta = sess.meta(label, world, ctx.seed, source, {"experiment": exp.name, "ini": exp.source,
                                                      "segment_frames": config["segment_frames"],
                                                      "command": config["command"]})
    name = "sandbox_%s.npz" % label
    if ctx.report is not None:
        sess.save_npz(ctx.report.path(name), arrays, meta)
    return arrays, _summary(arrays, exp, world, volume0, volume_error, name)


def _summary(arrays, exp, world, volume0, volume_error, name):
    dt_s = exp.frame_dt_us * 1e-6
    block = arrays["block"]
    fwd = block == 0
    cmd = arrays["cmd_speed_mps"][fwd] * dt_s
    speed_ratio = float(arrays["dx_body_m"][fwd].sum() / cmd.sum()) if cmd.sum() > 0 else None
    spin = block == 2
    cmd_yaw = arrays["cmd_yaw_rate_radps"][spin] * dt_s
    spin_ratio = float(arrays["dyaw_rad"][spin].sum() / cmd_yaw.sum()) if spin.any() and cmd_yaw.sum() != 0 else None
    finite = all(np.all(np.isfinite(arrays[k])) for k in arrays if arrays[k].dtype.kind == "f")
    blocks = []
    keep = ~arrays["teleport"]
    for k in range(8):
        b = (block == k) & keep
        v_cmd = float(arrays["cmd_speed_mps"][b].sum())
        w_cmd = float(arrays["cmd_yaw_rate_radps"][b].sum())
        slip_b = 0.5 * (np.abs(arrays["slip_left"][b]) + np.abs(arrays["slip_right"][b]))
        blocks.append({
            "block": k + 1,
            "speed_ratio": float(arrays["dx_body_m"][b].sum() / dt_s / v_cmd) if v_cmd != 0.0 else None,
            "yaw_rate_ratio": float(arrays["dyaw_rad"][b].sum() / dt_s / w_cmd) if w_cmd != 0.0 else None,
            "median_slip": float(np.median(slip_b)) if slip_b.size else None})
    from scipy.stats import spearmanr
    v = arrays["dx_body_m"][keep] / dt_s
    rho_turn = spearmanr(arrays["left_radps"][keep] - arrays["right_radps"][keep], arrays["dyaw_rad"][keep])
    rho_pitch = spearmanr(v, arrays["pitch_start_rad"][keep])
    slip = 0.5 * (arrays["slip_left"][fwd] + arrays["slip_right"][fwd])
    return {
        "frames": int(block.size), "teleports": int(arrays["teleport"].sum()), "dataset": name,
        "digest_sha256": sess.digest(arrays), "all_finite": bool(finite),
        "volume_m3": volume0, "volume_error_m3": volume_error, "moved_m3": world.moved_m3,
        "forward_slip_mean": float(slip.mean()) if slip.size else None,
        "forward_speed_ratio": speed_ratio, "spin_rate_ratio": spin_ratio,
        "pitch_range_deg": [math.degrees(float(arrays["pitch_rad"].min())),
                            math.degrees(float(arrays["pitch_rad"].max()))],
        "roll_range_deg": [math.degrees(float(arrays["roll_rad"].min())),
                           math.degrees(float(arrays["roll_rad"].max()))],
        "sinkage_mean_m": float(arrays["sinkage_m"].mean()),
        "blocks": blocks,
        # thesis table 6.2's checks: (v_left - v_right) vs dtheta (positive in NED), v vs pitch
        "spearman_track_difference_vs_dyaw": _finite_or_none(rho_turn.statistic),
        "spearman_speed_vs_pitch": _finite_or_none(rho_pitch.statistic),
        "contact_solver_fails": world.robot.newton_fails,
        "cell_m": exp.cell_m, "rows": world.terrain.rows, "cols": world.terrain.cols,
    }


def _finite_or_none(x):
    x = float(x)
    return x if math.isfinite(x) else None


def run(config, ctx):
    exp = _experiment(config)
    sessions, results = {}, {}
    for label in config["terrains"]:
        heights = exp.heights_m if label == "A" else _terrain_b(config, exp,
                                                                ctx.random.stream("sandbox-datagen/terrain-b"))
        arrays, summary = _session(config, ctx, exp, label, heights)
        sessions[label] = arrays
        results[label] = summary
    ok = all(r["frames"] == config["frames"] and r["all_finite"]
             and abs(r["volume_error_m3"]) <= 1e-9 * max(r["volume_m3"], 1e-12) for r in results.values())
    metrics = {"success": bool(ok), "experiment": exp.name, "frames_per_session": config["frames"],
               "segment_frames": config["segment_frames"], "frame_dt_s": exp.frame_dt_us * 1e-6,
               "substeps": exp.substeps, "crop_cells": config["crop"]["cells"], "terrains": results}
    if ctx.report is not None:
        _plots(ctx.report, sessions, exp, config)
    return metrics


def _path_lines(arrays):
    """(east, north) of a path with a break (NaN) at every teleport."""
    north = arrays["north_m"].copy()
    east = arrays["east_m"].copy()
    jumps = np.flatnonzero(arrays["teleport"])
    return np.insert(east, jumps, np.nan), np.insert(north, jumps, np.nan)


def _plots(report, sessions, exp, config):
    from harness.report.plots import figure, label
    labels = list(sessions)
    fig, ax = figure(1, len(labels), title="sandbox-datagen: robot paths over the terrain (end of the session)")
    ax = np.atleast_1d(ax)
    for a, name in zip(ax, labels):
        arr = sessions[name]
        h = arr["terrain_end_m"]
        rows, cols = h.shape
        extent = (0.0, cols * exp.cell_m, 0.0, rows * exp.cell_m)
        im = a.imshow(h * 1000.0, origin="lower", cmap="terrain", extent=extent)
        cb = a.figure.colorbar(im, ax=a)
        cb.set_label("height (mm)")
        east, north = _path_lines(arr)
        a.plot(east, north, color="k", linewidth=0.6, label="path (%d teleports)" % int(arr["teleport"].sum()))
        a.plot([arr["east_m"][0]], [arr["north_m"][0]], "o", color="C3", label="start")
        label(a, "terrain %s, %d frames" % (name, arr["time_us"].size), "east (m)", "north (m)")
    report.save_figure(fig, "path")

    arr = sessions[labels[0]]
    t = arr["time_us"] * 1e-6
    dt_s = exp.frame_dt_us * 1e-6
    fig, ax = figure(4, 1, title="sandbox-datagen: per-frame traces, terrain %s" % labels[0], size_in=(9.0, 11.0))
    ax[0].plot(t, arr["left_radps"], color="C0", label="left sprocket")
    ax[0].plot(t, arr["right_radps"], color="C1", label="right sprocket")
    ax[0].plot(t, arr["left_cmd_radps"], color="C0", linestyle=":", label="left command")
    ax[0].plot(t, arr["right_cmd_radps"], color="C1", linestyle=":", label="right command")
    label(ax[0], "track sprocket speeds (Alg. 5 blocks of %d frames)" % (arr["time_us"].size // 8),
          "simulated time (s)", "speed (rad/s)")
    ax[1].plot(t, arr["dx_body_m"] / dt_s, color="C2", label="forward speed dx/dt")
    ax[1].plot(t, arr["cmd_speed_mps"], color="C2", linestyle=":", label="commanded l")
    ax[1].plot(t, arr["dyaw_rad"] / dt_s, color="C4", label="yaw rate dtheta/dt")
    ax[1].plot(t, arr["cmd_yaw_rate_radps"], color="C4", linestyle=":", label="commanded w (NED)")
    label(ax[1], "pose deltas per frame (robot frame)", "simulated time (s)", "m/s, rad/s")
    ax[2].plot(t, np.degrees(arr["pitch_rad"]), color="C0", label="pitch")
    ax[2].plot(t, np.degrees(arr["roll_rad"]), color="C1", label="roll")
    label(ax[2], "attitude from the contact points", "simulated time (s)", "angle (deg)")
    ax[3].plot(t, arr["slip_left"], color="C0", label="left slip")
    ax[3].plot(t, arr["slip_right"], color="C1", label="right slip")
    ax[3].plot(t, arr["sinkage_m"] * 100.0, color="C2", label="sinkage (cm)")
    ax[3].set_ylim(-1.5, 1.5)
    label(ax[3], "track slip and sinkage", "simulated time (s)", "slip (1), sinkage (cm)")
    report.save_figure(fig, "traces")
