"""Scenario `alexi-eval`: the accuracy of the committed Alexi networks (models/alexi/) on Sandbox test sets A
and B, as thesis tables 6.1-6.3 and figs. 6.2-6.18 (Cook 2017, 6.2.4 and 6.3.4).

Test sets: ``data.dir`` (a ``sandbox-datagen`` report folder holding ``sandbox_A.npz``/``sandbox_B.npz``) or,
when null, sessions generated here on the reference (the example experiment INI, or ``config.file``) with the
Alg. 5 schedule from the run's seed (``datagen.frames`` frames each). Terrain B is the generated unseen terrain
or a user's heightmap image ``terrain_b.file`` (grayscale PNG, read as sandbox-datagen reads it), which is then
always generated here.

Per terrain and network (V2 two-network v and dtheta, V1 v and dtheta, V2 three-network dx, dy): MSE, R^2 as
the squared Pearson correlation and as the coefficient of determination, on the preprocessed targets (the
thesis's scoring) and on raw per-frame targets (for a net whose card holds an output calibration, raw also
calibrated: ``raw_calibrated``, with the per-frame gain); the speed implied by the three-network dx, dy against the
two-network v; the Spearman checks of table 6.2 on the test set and on the networks' predictions; the terrain
net's one-step pixel correlation. ``success`` is the acceptance: V2 two-network R^2 (Pearson) on A within
``accept.margin`` of table 6.3 or better, on B no worse than A minus the margin, V2 above V1 on both outputs
and terrains, the two-network speed above the three-network implied speed on A. Reported beside it,
``reported_v2_against_v1_raw``: V2 against V1 on the raw per-frame targets (the same frames for both; each
version's preprocessing culls its own).

Plots: ``real_vs_predicted.png`` (figs. 6.11-6.12, 6.15-6.16), ``regression.png`` (figs. 6.13-6.14,
6.17-6.18). Log: ``/alexi_eval/<terrain>/prediction`` (per-frame truth and prediction, every
``log.every_frames``).
"""
import os

import numpy as np

from harness.config import ConfigError, POSITIVE, TEXT, int_at_least, one_of, or_null, within
from harness.scenarios.leveling import sandbox_datagen as sdg
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.world import SandboxWorld
from harness.training.alexi import evaluate as ev

DESCRIPTION = "Alexi learned simulator: accuracy of the committed networks on Sandbox test sets A and B (thesis 6.3)"

DEFAULTS = {
    "data": {"dir": None},                       # a sandbox-datagen report folder (null: generate here)
    "config": {"file": None},                    # experiment INI for generated sessions (null: the example)
    "terrain_b": {"file": None, "wavelength_m": 0.3},
    "datagen": {"frames": 16000, "segment_frames": 250, "crop_cells": 32},
    "models": {"dir": None, "kind": "auto", "backend": "litert"},
    "accept": {"margin": 0.05},
    "log": {"every_frames": 10},
}
REDUCED = {"datagen": {"frames": 100, "segment_frames": 12, "crop_cells": 16}, "log": {"every_frames": 4}}
SETTING_RANGES = {
    "data.dir": or_null(TEXT), "config.file": or_null(TEXT), "terrain_b.file": or_null(TEXT),
    "terrain_b.wavelength_m": POSITIVE, "datagen.frames": int_at_least(16), "datagen.segment_frames": int_at_least(1),
    "datagen.crop_cells": int_at_least(0), "models.dir": or_null(TEXT), "models.kind": one_of("auto", "int8", "float"),
    "models.backend": one_of("litert", "pure"), "accept.margin": within(0.0, 1.0), "log.every_frames": int_at_least(1),
}


def _models_dir(config):
    from harness.sim.alexi.nets import MODEL_ROOT
    return config["models"]["dir"] or MODEL_ROOT


def check_settings(config):
    check_all(config, "datagen.crop_cells")


def check_all(config, crop_setting):
    """The checks of :func:`check_settings`; ``crop_setting`` names ``datagen.crop_cells`` in the message when it
    cannot hold the terrain net's window (None: that check left to the caller, as alexi-sim does)."""
    root = _models_dir(config)
    for name in ev.KIN_NETS + ("terrain",):
        if not os.path.isfile(os.path.join(root, name, "card.json")):
            raise ConfigError("models.dir %s has no network %s (card.json): run `make train-alexi`" % (root, name))
    # every network of the run readable (card, model.tflite / float_layers.npz; cheap), each card's output
    # calibration checked even where the run uses the bare networks
    _, terrain_net = load_nets(dict(config, models=dict(config["models"], calibrated=True)))
    window = _window_cells(terrain_net)      # data.dir's crops: checked in run, once the sessions are read
    d = config["data"]["dir"]
    if d is not None:
        for t in _data_labels(config):
            path = os.path.join(d, "sandbox_%s.npz" % t)
            if not os.path.isfile(path):
                raise ConfigError("data.dir %s has no sandbox_%s.npz (run sandbox-datagen --out %s)" % (d, t, d))
            try:
                sess.inspect_npz(path)
            except sess.SessionError as exc:
                raise ConfigError(str(exc)) from None
    generated = config["terrain_b"]["file"] is not None or d is None
    if crop_setting is not None and generated and 0 < config["datagen"]["crop_cells"] < window:
        raise ConfigError("%s (%d) must be 0 (no terrain score) or hold the terrain net's %d-cell window"
                          % (crop_setting, config["datagen"]["crop_cells"], window))
    if generated:
        sdg.check_settings({"config": config["config"], "terrain_b": config["terrain_b"],
                            "crop": {"cells": config["datagen"]["crop_cells"]}})


def _window_cells(terrain_net):
    """The terrain net's dh window (cells), from its card; ConfigError naming the card when unreadable."""
    try:
        window = terrain_net.card["alexi"]["window_cells"]
        if isinstance(window, bool) or int(window) != window or window < 1:
            raise ValueError("not a whole number >= 1: %r" % (window,))
        return int(window)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError("%s: malformed card: alexi.window_cells unreadable (%s)"
                          % (os.path.join(terrain_net.model_dir, "card.json"), exc)) from None


def _data_labels(config):
    """The terrains read from ``data.dir`` (B is generated when ``terrain_b.file`` is given)."""
    return ["A"] if config["terrain_b"]["file"] else ["A", "B"]


def load_nets(config):
    """``({kinematic net: Net}, terrain Net)``; ConfigError (one line naming the file) for a bad model folder."""
    from harness.sim.alexi import nets
    root = _models_dir(config)
    kind, backend = config["models"].get("kind", "auto"), config["models"].get("backend", "litert")
    cal = bool(config["models"].get("calibrated", True))
    try:
        out = {name: nets.load(name, kind, backend, root, cal) for name in ev.KIN_NETS}
        return out, nets.load("terrain", kind, backend, root)
    except nets.ModelError as exc:
        raise ConfigError(str(exc)) from None


def _generate(config, ctx, label):
    """A test session on terrain ``label`` generated on the reference (arrays, meta)."""
    exp = sdg.load_experiment(config["config"]["file"] or sdg.EXAMPLE_INI)
    if label == "A":
        heights = exp.heights_m
    else:
        heights = sdg._terrain_b({"terrain_b": config["terrain_b"]}, exp, ctx.random.stream("alexi-eval/terrain-b"))
    north, east, yaw = exp.start
    world = SandboxWorld(exp.terrain(heights), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us,
                         exp.substeps, exp.erosion_iterations)
    dg = config["datagen"]
    rng = ctx.random.stream("alexi-eval/schedule-%s" % label)
    bar = ctx.progress(dg["frames"], "alexi-eval datagen %s" % label, unit="frames")
    arrays = sess.run_session(world, dg["frames"], dg["segment_frames"], 0.25, np.pi / 2.0, rng.uniform,
                              (0.25, 1.0), dg["crop_cells"],
                              progress=lambda i: bar.update_to(i) if i % 100 == 0 else None)
    bar.close()
    return arrays, {"terrain": label, "source": "generated"}


def _read_session(path, window):
    """``(arrays, meta)`` of a session file; ConfigError (one line naming the file and the problem) when bad,
    or when its terrain crops cannot hold the terrain net's ``window`` (cells)."""
    try:
        arrays, meta = sess.load_npz(path)
    except sess.SessionError as exc:
        raise ConfigError(str(exc)) from None
    crop = arrays.get("crop_dh_m")
    if crop is not None and crop.ndim == 3 and crop.shape[-1] < window:
        raise ConfigError("%s: its terrain crops are %d cells, smaller than the terrain net's %d-cell window "
                          "(sandbox-datagen crop.cells >= %d)" % (path, crop.shape[-1], window, window))
    return arrays, meta


def _session(config, ctx, label, loaded):
    """``(session, source)``: the session ``loaded`` holds for ``label`` (read from data.dir), else generated here."""
    if label in loaded:
        return loaded[label], os.path.join(config["data"]["dir"], "sandbox_%s.npz" % label)
    user_b = label == "B" and config["terrain_b"]["file"]
    src = config["terrain_b"]["file"] if user_b else "generated (seed %d)" % ctx.seed
    return _generate(config, ctx, label), src


def _r2(results, mode):
    """{terrain: {net: R^2 Pearson}} of the kinematic nets on ``mode``'s targets (preprocessed or raw)."""
    return {t: {n: results[t]["nets"][n][mode]["r2_pearson"] for n in ev.KIN_NETS} for t in results}


def v2_against_v1_raw(results):
    """V2 against V1 on the raw per-frame targets, reported beside the acceptance: there both versions are
    scored on the same frames (teleports dropped), while each version's preprocessing (thesis recipe) culls
    its own frames, so the preprocessed figures compare different targets."""
    r = _r2(results, "raw")
    out = {}
    for t in r:
        out["v2_beats_v1_speed_%s_raw" % t] = r[t]["v2_speed"] > r[t]["v1_speed"]
        out["v2_beats_v1_dyaw_%s_raw" % t] = r[t]["v2_dyaw"] > r[t]["v1_dyaw"]
    return out


def acceptance(results, margin):
    """The issue's acceptance checks (dict of booleans and the figures they compare)."""
    r = _r2(results, "preprocessed")
    checks = {}
    if "A" in r:
        checks["v2_speed_A_within_margin_of_thesis"] = r["A"]["v2_speed"] >= ev.THESIS_V2_R2["A"]["speed"] - margin
        checks["v2_dyaw_A_within_margin_of_thesis"] = r["A"]["v2_dyaw"] >= ev.THESIS_V2_R2["A"]["dyaw"] - margin
        checks["two_network_speed_beats_three_network"] = (
            r["A"]["v2_speed"] > results["A"]["three_network_speed"]["preprocessed"]["r2_pearson"])
    if "A" in r and "B" in r:
        checks["v2_speed_B_not_worse_than_A_minus_margin"] = r["B"]["v2_speed"] >= r["A"]["v2_speed"] - margin
        checks["v2_dyaw_B_not_worse_than_A_minus_margin"] = r["B"]["v2_dyaw"] >= r["A"]["v2_dyaw"] - margin
    for t in r:
        checks["v2_beats_v1_speed_%s" % t] = r[t]["v2_speed"] > r[t]["v1_speed"]
        checks["v2_beats_v1_dyaw_%s" % t] = r[t]["v2_dyaw"] > r[t]["v1_dyaw"]
    return checks


def run(config, ctx):
    nets, terrain_net = load_nets(config)
    d = config["data"]["dir"]
    # every given session read (and checked) before any work, so a bad sandbox_B.npz costs nothing
    window = _window_cells(terrain_net)
    loaded = ({t: _read_session(os.path.join(d, "sandbox_%s.npz" % t), window) for t in _data_labels(config)}
              if d else {})
    results, preds, sources = {}, {}, {}
    for label in ("A", "B"):
        session, src = _session(config, ctx, label, loaded)
        res, p = ev.evaluate(nets, session, terrain_net)
        res["frames"] = int(session[0]["time_us"].size)
        res["source"] = src if isinstance(src, str) else str(src)
        results[label], preds[label] = res, p
        sources[label] = res["source"]
        topic = "/alexi_eval/%s/prediction" % label
        for name in ("v2_speed", "v2_dyaw"):
            _, y, pr = p[name]["preprocessed"]
            for i in range(0, len(y), config["log"]["every_frames"]):
                ctx.log(topic, i * 10000, {"net": name, "frame": i, "target": float(y[i]), "prediction": float(pr[i])})
    checks = acceptance(results, config["accept"]["margin"])
    metrics = {"success": bool(all(checks.values())), "acceptance": checks,
               "reported_v2_against_v1_raw": v2_against_v1_raw(results),
               "thesis_table_6_3_r2": ev.THESIS_V2_R2, "thesis_table_6_1_r2": ev.THESIS_V1_R2,
               "models": {"kind": config["models"]["kind"], "backend": config["models"]["backend"]},
               "v2_dyaw_tilt_sensitivity": ev.tilt_sensitivity(nets["v2_dyaw"]),
               "terrains": results}
    if ctx.report is not None:
        _plots(ctx.report, preds)
    return metrics


def _plots(report, preds):
    from harness.report.plots import figure, label
    outputs = (("v2_speed", "v (normalised)"), ("v2_dyaw", "dtheta (normalised)"))
    fig, ax = figure(len(preds), 2, title="alexi-eval: real and predicted on the test sets (preprocessed, V2)")
    ax = np.atleast_2d(ax)
    for r, t in enumerate(preds):
        for c, (name, what) in enumerate(outputs):
            _, y, p = preds[t][name]["preprocessed"]
            ax[r, c].plot(y, color="C0", label="Sandbox (real)")
            ax[r, c].plot(p, color="C1", linewidth=0.7, label="Alexi V2 (predicted)")
            label(ax[r, c], "test set %s: %s" % (t, what), "frame (kept frames)", what)
    report.save_figure(fig, "real_vs_predicted")
    fig, ax = figure(len(preds), 2, title="alexi-eval: linear regression of predicted on real (preprocessed, V2)")
    ax = np.atleast_2d(ax)
    for r, t in enumerate(preds):
        for c, (name, what) in enumerate(outputs):
            _, y, p = preds[t][name]["preprocessed"]
            ax[r, c].plot(y, p, ".", markersize=2, color="C0", label="frames")
            if np.std(y) > 0:
                k, b = np.polyfit(y, p, 1)
                xs = np.array([y.min(), y.max()])
                ax[r, c].plot(xs, k * xs + b, color="C3", label="fit p = %.2f y + %.2f" % (k, b))
            label(ax[r, c], "test set %s: %s" % (t, what), "real %s" % what, "predicted %s" % what)
    report.save_figure(fig, "regression")
