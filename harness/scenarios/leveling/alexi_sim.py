"""Scenario `alexi-sim`: the Alexi surrogate (harness/sim/alexi) in closed loop against the reference
Sandbox on the same held-out command stream (Cook thesis 6.3-6.5; reading aid H12).

A fresh Alg. 5 command stream (``frames`` frames, default 6000 = 60 s at 10 ms; amplitudes from the seeded
stream ``alexi-sim/commands``, never used in training) drives the reference from the experiment INI's start
on terrain A (``config.file``; null: the example), then the surrogate from the same start on the same
heightmap, once with the terrain network applying its dh each frame and once without. The surrogate runs the
committed networks (``models.dir``; ``models.kind`` auto (the card's choice), int8 or float; ``models.backend``
litert or pure) through the onboard policy backends with pitch and roll read off its own heightmap, with each
card's output calibration applied per frame (``models.calibrated``; false: the bare networks).

Metrics: per surrogate run the final position error against the reference (m, unwrapped positions), the RMS
position error over the run, the final heading error (deg) and the path lengths; the terrain network's dh
against the reference's: (a) one step ahead along the reference run (the reference's inputs and previous dh:
pixel Pearson r), (b) closed loop: the Pearson r of the whole run's height change (end minus start) of the
surrogate and of the reference over the cells within ``corridor_m`` of the reference path, (c) the terrain net
rolled out along the reference's own path (the reference's per-frame inputs and cells; the net's own previous
dh, as in the surrogate): the same corridor correlation without the kinematic nets' drift. ``success``: every
value finite and the terrain net's own correlations (a) and (c) positive; (b) is reported, not required (once
the surrogate's path leaves the reference's, it compares its ruts with the reference's at other places).

Outputs: ``paths.png`` (the three paths), ``dh_maps.png`` (the height change of the reference and of the
surrogate, and the corridor), ``frame_<k>.png`` (the surrogate's 2-D view at ``png.frames`` instants), log
topics ``/alexi_sim/reference`` and ``/alexi_sim/surrogate`` (every ``log.every_frames``).
"""
import math
import time

import numpy as np

from harness.config import BOOLEAN, ConfigError, POSITIVE, TEXT, int_at_least, one_of, or_null
from harness.scenarios.leveling import sandbox_datagen as sdg
from harness.sim.alexi.sim import AlexiSim, _shifted
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.world import SandboxWorld
from harness.training.alexi import evaluate as ev
from harness.training.alexi import metrics as mt

DESCRIPTION = "Alexi surrogate vs the Sandbox reference in closed loop on a held-out 60 s command stream"

DEFAULTS = {
    "config": {"file": None},
    "frames": 6000, "segment_frames": 250,
    "command": {"speed_max_mps": 0.25, "yaw_rate_max_radps": math.pi / 2.0},
    "crop_cells": 32,
    "models": {"dir": None, "kind": "auto", "backend": "litert", "calibrated": True},
    "corridor_m": 0.1,
    "png": {"frames": 3},
    "log": {"every_frames": 10},
}
REDUCED = {"frames": 80, "segment_frames": 10, "crop_cells": 16, "png": {"frames": 1}, "log": {"every_frames": 4}}
SETTING_RANGES = {
    "config.file": or_null(TEXT), "frames": int_at_least(8), "segment_frames": int_at_least(1),
    "command.speed_max_mps": POSITIVE, "command.yaw_rate_max_radps": POSITIVE, "crop_cells": int_at_least(2),
    "models.dir": or_null(TEXT), "models.kind": one_of("auto", "int8", "float"),
    "models.backend": one_of("litert", "pure"), "models.calibrated": BOOLEAN,
    "corridor_m": POSITIVE, "png.frames": int_at_least(0), "log.every_frames": int_at_least(1),
}


def check_settings(config):
    from harness.scenarios.leveling.alexi_eval import check_all as eval_check
    eval_check({"models": config["models"], "data": {"dir": None}, "config": config["config"],
                "terrain_b": {"file": None, "wavelength_m": 0.3}, "datagen": {"crop_cells": config["crop_cells"]}},
               None)
    import json
    import os
    from harness.scenarios.leveling.alexi_eval import _models_dir
    card = os.path.join(_models_dir(config), "terrain", "card.json")
    try:
        with open(card) as fh:
            window = int(json.load(fh)["alexi"]["window_cells"])
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError("%s: malformed card: alexi.window_cells unreadable (%s)" % (card, exc)) from None
    if config["crop_cells"] < window:
        raise ConfigError("crop_cells (%d) must hold the terrain net's %d-cell window" % (config["crop_cells"], window))


def _reference(config, ctx, exp):
    north, east, yaw = exp.start
    world = SandboxWorld(exp.terrain(), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us, exp.substeps,
                         exp.erosion_iterations)
    rng = ctx.random.stream("alexi-sim/commands")
    bar = ctx.progress(config["frames"], "alexi-sim reference", unit="frames")
    t0 = time.process_time()
    arrays = sess.run_session(world, config["frames"], config["segment_frames"], config["command"]["speed_max_mps"],
                              config["command"]["yaw_rate_max_radps"], rng.uniform, (0.25, 1.0), config["crop_cells"],
                              log=lambda t, rec: ctx.log("/alexi_sim/reference", t, rec),
                              log_every=config["log"]["every_frames"],
                              progress=lambda i: bar.update_to(i) if i % 100 == 0 else None)
    ctx.timing(reference_cpu_us_per_frame=(time.process_time() - t0) / config["frames"] * 1e6)
    bar.close()
    return arrays


def _surrogate(exp, nets, terrain_net):
    north, east, yaw = exp.start
    sim = AlexiSim(exp.heights_m, exp.cell_m, north, east, yaw, exp.vehicle,
                   {"speed": nets["v2_speed"], "dyaw": nets["v2_dyaw"]}, terrain_net, exp.frame_dt_us)
    return sim


def _run_surrogate(sim, speed, yaw_rate, ctx, tag, every, report=None, png_at=()):
    path = np.zeros((len(speed) + 1, 2))
    path[0] = sim.unwrapped_ne_m
    wrapped = []
    yaw = np.zeros(len(speed))
    t0 = time.process_time()
    drawing = 0.0
    for i, (v, w) in enumerate(zip(speed, yaw_rate)):
        rec = sim.frame(float(v), float(w))
        path[i + 1] = sim.unwrapped_ne_m
        wrapped.append((sim.north_m, sim.east_m))
        yaw[i] = sim.yaw_rad
        if i % every == 0:
            ctx.log("/alexi_sim/surrogate", sim.now_us, dict(rec, run=tag, teleport=bool(rec["teleport"])))
        if report is not None and i + 1 in png_at:
            d0 = time.process_time()
            _frame_png(report, sim, wrapped, tag, i + 1)
            drawing += time.process_time() - d0
    cpu = (time.process_time() - t0 - drawing) / max(len(speed), 1)     # the PNG frames are not simulation
    return path, yaw, cpu


def _frame_png(report, sim, wrapped, tag, frame):
    from harness.report.plots import figure
    fig, ax = figure(1, 1, title="Alexi 2-D view (%s), frame %d (%.1f s)"
                     % (tag, frame, frame * sim.frame_dt_us * 1e-6))
    sim.render(ax, wrapped, "surrogate heightmap, path and robot")
    report.save_figure(fig, "frame_%05d" % frame)


def _corridor(shape, cell_m, path_ne, radius_m):
    """Cells within ``radius_m`` of the (wrapped) path points."""
    rows, cols = shape
    mask = np.zeros(shape, dtype=bool)
    r = int(math.ceil(radius_m / cell_m))
    offs = [(di, dj) for di in range(-r, r + 1) for dj in range(-r, r + 1)
            if (di * di + dj * dj) * cell_m ** 2 <= radius_m ** 2]
    cells = {(int(math.floor(n / cell_m)) % rows, int(math.floor(e / cell_m)) % cols) for n, e in path_ne}
    for i, j in cells:
        for di, dj in offs:
            mask[(i + di) % rows, (j + dj) % cols] = True
    return mask


def _terrain_along_reference(terrain_net, ref, heights_m):
    """Height change (m, the tile) of the terrain net applied frame by frame along the reference run: its
    inputs are the reference's (v_left, v_right, pitch, roll) and its window is centred on the reference's
    cell at each frame's start (``crop_centre_cell``); the previous dh is the net's own, shifted as the
    surrogate shifts it (:mod:`harness.sim.alexi.sim`)."""
    h = np.array(heights_m, dtype=np.float64)
    rows, cols = h.shape
    w = int(terrain_net.card["alexi"]["window_cells"])
    half = w // 2
    prev = np.zeros((w, w))
    prev_centre = None
    kin = np.column_stack([ref[k] for k in ("left_radps", "right_radps", "pitch_start_rad", "roll_start_rad")])
    for x, (i, j) in zip(kin, ref["crop_centre_cell"].astype(np.int64)):
        i, j = int(i), int(j)
        if prev_centre is not None and (i, j) != prev_centre:
            prev = _shifted(prev, i - prev_centre[0], j - prev_centre[1], rows, cols)
        dh = terrain_net.predict_one(np.concatenate([x, prev.ravel()])).reshape(w, w)
        h[np.ix_((np.arange(w) - half + i) % rows, (np.arange(w) - half + j) % cols)] += dh
        prev, prev_centre = dh, (i, j)
    return h - np.asarray(heights_m, dtype=np.float64)


def run(config, ctx):
    from harness.scenarios.leveling.alexi_eval import load_nets
    exp = sdg.load_experiment(config["config"]["file"] or sdg.EXAMPLE_INI)
    nets, terrain_net = load_nets({"models": config["models"]})
    ref = _reference(config, ctx, exp)
    n0, e0, yaw0 = exp.start
    ref_path = np.zeros((config["frames"] + 1, 2))
    ref_path[0] = (n0, e0)
    ref_path[1:, 0] = n0 + np.cumsum(ref["dnorth_m"])
    ref_path[1:, 1] = e0 + np.cumsum(ref["deast_m"])
    speed, yaw_rate = ref["cmd_speed_mps"], ref["cmd_yaw_rate_radps"]
    every = config["log"]["every_frames"]
    k = config["png"]["frames"]
    png_at = set(int(round(config["frames"] * (q + 1) / k)) for q in range(k)) if k else set()
    runs = {}
    sims = {}
    for tag, tnet in (("terrain_net_on", terrain_net), ("terrain_net_off", None)):
        sim = _surrogate(exp, nets, tnet)
        path, yaw, cpu = _run_surrogate(sim, speed, yaw_rate, ctx, tag, every, ctx.report,
                                        png_at if tnet is not None else ())
        ctx.timing(**{"surrogate_cpu_us_per_frame_%s" % tag: cpu * 1e6})
        err = np.hypot(*(path - ref_path).T)
        runs[tag] = {"final_position_error_m": float(err[-1]),
                     "rms_position_error_m": float(np.sqrt(np.mean(err ** 2))),
                     "max_position_error_m": float(err.max()),
                     "final_heading_error_deg": math.degrees(abs(math.atan2(math.sin(yaw[-1] - ref["yaw_rad"][-1]),
                                                                            math.cos(yaw[-1] - ref["yaw_rad"][-1])))),
                     "path_length_m": float(np.sum(np.hypot(*np.diff(path, axis=0).T)))}
        sims[tag] = (sim, path)
    # terrain: one step along the reference, and the closed-loop height change in the corridor
    one_step = ev.terrain_one_step(terrain_net, (ref, {}))
    sim_on = sims["terrain_net_on"][0]
    ref_change = ref["terrain_end_m"].astype(np.float64) - ref["terrain_start_m"].astype(np.float64)
    sur_change = sim_on.h - exp.heights_m
    wrapped_ref = np.column_stack([ref_path[:, 0] % sim_on.size_n_m, ref_path[:, 1] % sim_on.size_e_m])
    corridor = _corridor(ref_change.shape, exp.cell_m, wrapped_ref[::5], config["corridor_m"])
    closed_r = mt.pearson(ref_change[corridor], sur_change[corridor])
    along_change = _terrain_along_reference(terrain_net, ref, exp.heights_m)
    terrain = {"one_step_pixel_pearson": one_step["pixel_pearson"],
               "one_step_persistence_pixel_pearson": one_step["persistence_pixel_pearson"],
               "closed_loop_change_pearson_in_corridor": closed_r, "corridor_cells": int(corridor.sum()),
               "along_reference_change_pearson_in_corridor": mt.pearson(ref_change[corridor],
                                                                         along_change[corridor]),
               "along_reference_change_rms_m": float(np.sqrt(np.mean(along_change[corridor] ** 2))),
               "reference_change_rms_m": float(np.sqrt(np.mean(ref_change[corridor] ** 2))),
               "surrogate_change_rms_m": float(np.sqrt(np.mean(sur_change[corridor] ** 2))),
               "surrogate_volume_change_m3": float(sur_change.sum() * exp.cell_m ** 2)}
    finite = all(math.isfinite(v) for r in runs.values() for v in r.values()) and \
        all(math.isfinite(v) for v in terrain.values())
    metrics = {"success": bool(finite and one_step["pixel_pearson"] > 0
                               and terrain["along_reference_change_pearson_in_corridor"] > 0),
               "frames": config["frames"], "duration_s": config["frames"] * exp.frame_dt_us * 1e-6,
               "reference_path_length_m": float(np.sum(np.hypot(*np.diff(ref_path, axis=0).T))),
               "runs": runs, "terrain": terrain,
               "models": {"kind": config["models"]["kind"], "backend": config["models"]["backend"],
                          "output_calibration": {k: [float(n.calibration[0][0]), float(n.calibration[1][0])]
                                                 for k, n in sorted(nets.items()) if n.calibration is not None}}}
    if ctx.report is not None:
        _plots(ctx.report, ref_path, sims, ref_change, sur_change, corridor, exp)
    return metrics


def _plots(report, ref_path, sims, ref_change, sur_change, corridor, exp):
    from harness.report.plots import figure, label
    fig, ax = figure(1, 1, title="alexi-sim: paths on the same command stream (unwrapped)")
    ax.plot(ref_path[:, 1], ref_path[:, 0], color="k", label="Sandbox reference")
    for (tag, (_, path)), c in zip(sims.items(), ("C1", "C0")):
        ax.plot(path[:, 1], path[:, 0], color=c, linewidth=0.8, label="Alexi, %s" % tag.replace("_", " "))
    ax.plot([ref_path[0, 1]], [ref_path[0, 0]], "o", color="C3", label="start")
    ax.set_aspect("equal")
    label(ax, "paths", "east (m)", "north (m)")
    report.save_figure(fig, "paths")
    fig, ax = figure(1, 3, title="alexi-sim: height change over the run (end minus start)")
    lim = max(float(np.percentile(np.abs(ref_change), 99.5)), 1e-6) * 1000.0
    extent = (0.0, ref_change.shape[1] * exp.cell_m, 0.0, ref_change.shape[0] * exp.cell_m)
    for a, data, title in ((ax[0], ref_change, "Sandbox reference"), (ax[1], sur_change, "Alexi with the terrain net")):
        im = a.imshow(data * 1000.0, origin="lower", cmap="RdBu", vmin=-lim, vmax=lim, extent=extent)
        a.figure.colorbar(im, ax=a).set_label("height change (mm)")
        label(a, title, "east (m)", "north (m)")
    im = ax[2].imshow(corridor.astype(float), origin="lower", cmap="Greys", extent=extent)
    ax[2].figure.colorbar(im, ax=ax[2]).set_label("in the corridor (1)")
    label(ax[2], "cells compared (corridor)", "east (m)", "north (m)")
    report.save_figure(fig, "dh_maps")
