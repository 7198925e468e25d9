"""Dataset of the learned soil estimator (soil paper section 3.1: 268 episodes of 10 s over four soils and
I_d 1-100 %), collected in the soil world through the sweep runner.

Episode k (job seed ``seed * 100000 + k``) is one soil-sweep episode (``harness.scenarios.soil.soil_sweep``'s
episode settings: one 5 m lane with random speed, depth, tilt and roll setpoints, about 9 s), soil
``SOILS[k % 4]`` at a relative density drawn uniformly in [``id_min_pct``, ``id_max_pct``] (stream
"soil_dataset" of ``RunRandom(seed)``), the classical estimator off. Every closed cut (its window on the
force path: ``capture.cut_inputs``) gives training windows: the whole cut and its sub-windows of
``window_samples`` samples (each length, stride half of it).

Per window the arrays saved (``save`` / ``load``, one ``.npz``; B windows, P = ``horizon`` points):

- ``x_raw`` (B, 16 P + 2): the model input of ``onboard.soil.learned_estimator.window_inputs``: per horizon
  point the geometry (alpha [rad], rho [rad], depth [m], rms depth [m], width [m], surcharge [N]), the
  kinematics (speed [m/s], blade pitch, blade roll, chassis pitch [rad], lift [m]) and the actions (the
  commanded speed [m/s], lift [m], tilt [rad], roll [rad], depth [m]), then duration [s] and travel [m].
  Not the force.
- ``geometry`` (B, P, 6): the horizon points' geometry (the FEE's theta_k, SI units);
- ``force_n`` (B, P, 2): the measured force (F_x, F_z) [N] at the horizon points (the training label);
- ``controller`` (B, P, 2): ``learned_estimator.CONTROLLER_CHANNELS`` at the horizon points (the chassis'
  longitudinal acceleration [m/s^2], the track speed loop's commanded tractive effort [N]): the controller
  model's extra inputs (``learned_estimator.with_point_channels``). Optional on loading (a dataset
  collected before the loop's command was logged lacks it);
- ``truth`` (B, 5): the truth properties the blade failed over the window (``onboard.soil.fee`` slots, SI;
  evaluation only); ``soil`` (B,) index into ``SOILS``; ``relative_density_pct`` (B,); ``episode`` (B,);
  ``cut`` (B,) index within the episode; ``whole_cut`` (B,) True for the whole-cut window; ``samples`` (B,).
"""
import hashlib
import os

import numpy as np

from harness.data_files import NPZ_READ_ERRORS, not_npz_reason, npz_bytes, read_error_reason
from harness.parallel import ordered_map
from harness.report.run_report import write_whole
from harness.scenarios.soil import soil_episode as ep
from harness.scenarios.soil import soil_sweep
from harness.sim.rng import RunRandom
from harness.sim.soil_world import SOILS
from harness.training.soil_estimator.capture import Capture, cut_controller, cut_inputs
from onboard.soil import learned_estimator as le
from onboard.soil.fee import THETA_U_NAMES

DEFAULTS = {"episodes": 268, "seed": 1, "id_min_pct": 1.0, "id_max_pct": 100.0, "horizon": 12,
            "window_samples": [60, 120], "workers": 2}
KEYS = ("x_raw", "geometry", "force_n", "truth", "soil", "relative_density_pct", "episode", "cut", "whole_cut",
        "samples")
OPTIONAL_KEYS = ("controller",)


def episode_config(soil, relative_density_pct, over=None):
    """The episode settings of one dataset episode (soil-sweep's episode, the classical estimator off),
    with ``over`` merged in (e.g. another tilt range)."""
    cfg = ep.merge_blocks(soil_sweep.DEFAULTS["episode"], {
        "world": {"soil": soil, "relative_density_pct": float(relative_density_pct)},
        "app": {"estimation": False}})
    return ep.merge_blocks(cfg, over or {})


def run_capture(episode_cfg, seed):
    """(episode, capture) of one episode with its cuts and commands captured."""
    cap = Capture()
    e = ep.run_episode(episode_cfg, RunRandom(seed), log=cap.log, on_app=cap.on_app)
    return e, cap


def window_rows(episode, cap, horizon, window_samples, min_samples=60):
    """Training windows of an episode's cuts (module docstring) as dicts of the per-window arrays; a cut whose
    inputs cannot be built (``CutEstimateError``: no operator command before it, too few machine samples) gives
    none, as the learned estimator skips it onboard, and the collection goes on."""
    from onboard.soil.cut_estimator import CutEstimateError
    rows = []
    for ci, cut in enumerate(cap.cuts):
        try:
            window, kin, act = cut_inputs(cap.app_config, cut, cap.commands)
            if len(window) < min_samples:
                continue
            ctl = cut_controller(cut, cap.commands, window)
        except CutEstimateError:
            continue
        n = len(window)
        geom = le.geometry_array(window)
        spans = [(0, n, True)]
        for length in window_samples:
            if length >= n:
                continue
            for s in range(0, n - length + 1, max(length // 2, 1)):
                spans.append((s, s + length, False))
        for a, b, whole in spans:
            x, idx = le.window_inputs(geom[a:b], kin[a:b], act[a:b], horizon)
            t = window.time_us[a:b]
            truth = ep.cut_truth(episode.world, {"t0_us": int(t[0]), "t1_us": int(t[-1])})
            f = np.stack([window.fx_n[a:b][idx], window.fz_n[a:b][idx]], axis=1)
            rows.append({"x_raw": x, "geometry": geom[a:b][idx], "force_n": f, "controller": ctl[a:b][idx],
                         "truth": np.array([truth[k] for k in le.THETA_U_NAMES]), "cut": ci, "whole_cut": whole,
                         "samples": b - a})
    return rows


def collect_job(job):
    """One dataset episode: ``job`` = (episode index, soil, I_d, job seed, horizon, window_samples,
    episode overrides); returns its window rows."""
    k, soil, idd, seed, horizon, window_samples, over = job
    e, cap = run_capture(episode_config(soil, idd, over), seed)
    rows = window_rows(e, cap, horizon, window_samples)
    for r in rows:
        r.update(soil=SOILS.index(soil), relative_density_pct=idd, episode=k)
    return rows


def jobs(episodes, seed, id_min_pct, id_max_pct, horizon, window_samples, over=None):
    """The dataset's jobs (module docstring), in order."""
    rng = RunRandom(seed).stream("soil_dataset")
    ids = rng.uniform(id_min_pct, id_max_pct, size=episodes)
    return [(k, SOILS[k % len(SOILS)], float(ids[k]), seed * 100000 + k, horizon, list(window_samples), over)
            for k in range(episodes)]


def collect(episodes=DEFAULTS["episodes"], seed=DEFAULTS["seed"], id_min_pct=DEFAULTS["id_min_pct"],
            id_max_pct=DEFAULTS["id_max_pct"], horizon=DEFAULTS["horizon"],
            window_samples=DEFAULTS["window_samples"], workers=DEFAULTS["workers"], over=None, progress=None):
    """{key: array} of the whole dataset (:data:`KEYS`), the episodes run through the sweep runner
    (``workers`` processes; the same arrays with any count)."""
    rows = []
    for k, res in enumerate(ordered_map(collect_job, jobs(episodes, seed, id_min_pct, id_max_pct, horizon,
                                                          window_samples, over), workers=workers)):
        rows.extend(res)
        if progress is not None:
            progress(k + 1, episodes)
    if not rows:
        raise ValueError("soil dataset: no cut gave a window")
    out = {}
    for key in KEYS + OPTIONAL_KEYS:
        out[key] = np.array([r[key] for r in rows])
    out["x_raw"] = out["x_raw"].astype(float)
    out["whole_cut"] = out["whole_cut"].astype(bool)
    return out


def digest(data, keys=None):
    """SHA-256 (hex, first 16) of the dataset's arrays in :data:`KEYS` order, then the
    :data:`OPTIONAL_KEYS` it holds (``keys``: those keys only, e.g. :data:`KEYS` to compare with a dataset
    collected without the optional arrays)."""
    h = hashlib.sha256()
    for key in keys or (KEYS + tuple(k for k in OPTIONAL_KEYS if k in data)):
        a = np.ascontiguousarray(data[key])
        h.update(key.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def save(path, data):
    """Write the dataset arrays (:data:`KEYS` and the :data:`OPTIONAL_KEYS` ``data`` holds) as a compressed
    ``.npz`` at ``path`` (the name as given), whole (``write_whole``): an interrupted save leaves the earlier
    file or none, never a truncated cache that the next run would try to load."""
    blob = npz_bytes({k: data[k] for k in KEYS + OPTIONAL_KEYS if k in data}, compressed=True)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_whole(path, blob)


def check_windows(data):
    """ValueError (one line) unless the dataset arrays ``data`` holds (of :data:`KEYS` and
    :data:`OPTIONAL_KEYS`; ``x_raw`` and ``geometry`` at least) are numeric and finite, agree in
    their number of windows B >= 1 and have the layout of the module docstring: ``geometry`` (B, P, 6) with
    P >= 1, ``x_raw`` (B, 16 P + 2), ``force_n`` and ``controller`` (B, P, 2), ``truth`` (B, 5), the others
    (B,), ``soil`` indices into ``SOILS``, ``samples`` counts >= 1."""
    arrays = {k: np.asarray(data[k]) for k in KEYS + OPTIONAL_KEYS if k in data}
    for key, a in arrays.items():
        if a.dtype.kind not in "biuf":
            raise ValueError("dataset array %s is not numeric (dtype %s)" % (key, a.dtype))
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise ValueError("dataset array %s holds %d NaN or infinite values" % (key, int(np.sum(~np.isfinite(a)))))
    x = arrays["x_raw"]
    b = x.shape[0] if x.ndim else 0
    for key, a in arrays.items():
        if (a.shape[0] if a.ndim else 0) != b:
            raise ValueError("dataset array %s has %d windows, x_raw %d" % (key, a.shape[0] if a.ndim else 0, b))
    geometry = arrays["geometry"]
    if geometry.ndim != 3 or geometry.shape[2] != len(le.GEOMETRY_CHANNELS):
        raise ValueError("dataset array geometry must be (B, P, %d), got shape %s"
                         % (len(le.GEOMETRY_CHANNELS), geometry.shape))
    if b == 0:
        raise ValueError("dataset holds no windows")
    p = geometry.shape[1]
    if p == 0:
        raise ValueError("dataset array geometry must have at least one horizon point, got shape %s"
                         % (geometry.shape,))
    if x.ndim != 2 or x.shape[1] != len(le.CHANNELS) * p + len(le.GLOBALS):
        raise ValueError("dataset array x_raw must be (B, %d) for %d horizon points, got shape %s"
                         % (len(le.CHANNELS) * p + len(le.GLOBALS), p, x.shape))
    for key, shape in (("force_n", (b, p, 2)), ("controller", (b, p, 2)), ("truth", (b, len(THETA_U_NAMES)))):
        if key in arrays and arrays[key].shape != shape:
            raise ValueError("dataset array %s must be %s, got shape %s" % (key, shape, arrays[key].shape))
    for key in ("soil", "relative_density_pct", "episode", "cut", "whole_cut", "samples"):
        if key in arrays and arrays[key].ndim != 1:
            raise ValueError("dataset array %s must be (B,), got shape %s" % (key, arrays[key].shape))
    samples = arrays.get("samples")
    if samples is not None and not np.all(samples >= 1):
        raise ValueError("dataset array samples must hold window sample counts >= 1, got %d below 1"
                         % int(np.sum(~(samples >= 1))))
    soil = arrays.get("soil")
    if soil is not None and b and not (soil.dtype.kind in "iu" and soil.min() >= 0 and soil.max() < len(SOILS)):
        raise ValueError("dataset array soil must hold soil indices 0..%d" % (len(SOILS) - 1))


def load(path):
    """The dataset saved at ``path`` (with the :data:`OPTIONAL_KEYS` it holds); ValueError (one line, naming
    the file) when it is no .npz, a key of :data:`KEYS` is missing or the arrays fail :func:`check_windows`
    (a NaN would otherwise train a NaN network through the normalisation)."""
    reason = not_npz_reason(path)
    if reason:
        raise ValueError("soil dataset %s: %s" % (path, reason))
    try:
        with np.load(path) as z:
            missing = [k for k in KEYS if k not in z]
            data = {k: np.array(z[k]) for k in KEYS + OPTIONAL_KEYS if k in z}
    except NPZ_READ_ERRORS as exc:
        raise ValueError("soil dataset %s: %s" % (path, read_error_reason(exc)))
    if missing:
        raise ValueError("soil dataset %s: missing arrays %s" % (path, ", ".join(missing)))
    try:
        check_windows(data)
    except ValueError as exc:
        raise ValueError("soil dataset %s: %s" % (path, exc))
    return data
