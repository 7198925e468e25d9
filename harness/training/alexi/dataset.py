"""Inputs and targets of the Alexi networks from Sandbox sessions (docs/formats/sandbox-data.md).

Kinematic inputs (thesis 6.2.1 and 6.3.1, the same for V1 and V2): v_left, v_right (sprocket speeds reached,
rad/s), phi, psi (pitch and roll at the frame's start, rad). Targets, per 10 ms frame:

- ``speed``: v, the forward displacement in the robot frame (m per frame, signed: reversing is negative; the
  thesis multiplied its non-negative v by -1 when the command was negative, the same thing);
- ``dyaw``: dtheta (rad per frame, NED: positive turns right);
- ``dnorth``, ``deast``: the thesis's world-frame dx, dy (m per frame) of the three-network variant.

Terrain-net samples (6.3.1): the kinematic inputs plus the previous frame's height change in a
``window`` x ``window`` world-aligned window centred on the robot's cell, target the frame's change in the
same window (both taken in one world window per frame: reading aid A27).
"""
import numpy as np

from harness.sim.sandbox.session import load_npz
from harness.training.alexi import preprocess as pp

INPUTS = ("left_radps", "right_radps", "pitch_start_rad", "roll_start_rad")
INPUT_UNITS = ("rad/s", "rad/s", "rad", "rad")
INPUT_MEANINGS = ("left sprocket speed v_left", "right sprocket speed v_right", "pitch phi at the frame's start",
                  "roll psi at the frame's start")
TARGETS = {"speed": ("dx_body_m", "m/frame", "v: forward displacement over the frame, robot frame"),
           "dyaw": ("dyaw_rad", "rad/frame", "dtheta: heading change over the frame (positive: right)"),
           "dnorth": ("dnorth_m", "m/frame", "thesis dx: world-frame displacement north over the frame"),
           "deast": ("deast_m", "m/frame", "thesis dy: world-frame displacement east over the frame")}


def load_sessions(paths):
    """[(arrays, meta)] of the session files ``paths``."""
    return [load_npz(p) for p in paths]


def raw_columns(arrays, names):
    return np.stack([np.asarray(arrays[k], dtype=np.float64) for k in names], axis=1)


def kept(arrays, recipe):
    """Mask of the frames the recipe's cull keeps in one session."""
    return pp.cull_mask(recipe["cull"], arrays["dyaw_rad"], arrays["pitch_start_rad"], arrays["roll_start_rad"],
                        arrays["dx_body_m"], arrays["dnorth_m"], arrays["deast_m"],
                        arrays["teleport"] if recipe["drop_teleports"] else None)


def fit_ranges(sessions, recipe, target):
    """Min-max ranges (inputs lo, hi; target lo, hi) over the kept frames of the training sessions; ValueError
    when no session is given or the cull keeps no frame of them."""
    xs, ys = [], []
    for arrays, _ in sessions:
        k = kept(arrays, recipe)
        xs.append(raw_columns(arrays, INPUTS)[k])
        ys.append(np.asarray(arrays[TARGETS[target][0]], dtype=np.float64)[k, None])
    if sum(len(x) for x in xs) == 0:
        raise ValueError("no training frame to fit the min-max ranges on: the %r cull%s keeps none of the %d "
                         "frame(s) of %d session(s)" % (recipe["cull"], " with teleports dropped" if
                                                       recipe["drop_teleports"] else "",
                                                       sum(len(a["dyaw_rad"]) for a, _ in sessions), len(sessions)))
    x_lo, x_hi = pp.minmax_fit(np.concatenate(xs))
    y_lo, y_hi = pp.minmax_fit(np.concatenate(ys))
    return {"inputs": [x_lo.tolist(), x_hi.tolist()], "target": [float(y_lo[0]), float(y_hi[0])]}


def kinematic(sessions, recipe, target, ranges):
    """(x [n, 4], y [n]) preprocessed by ``recipe`` with the stored ``ranges``, sessions concatenated
    (each processed as its own series)."""
    xs, ys = [], []
    x_lo, x_hi = (np.asarray(v) for v in ranges["inputs"])
    y_lo, y_hi = ranges["target"]
    for arrays, _ in sessions:
        k = kept(arrays, recipe)
        xs.append(pp.series(raw_columns(arrays, INPUTS)[k], recipe, x_lo, x_hi))
        ys.append(pp.series(np.asarray(arrays[TARGETS[target][0]], dtype=np.float64)[k, None], recipe,
                            np.array([y_lo]), np.array([y_hi]))[:, 0])
    return np.concatenate(xs), np.concatenate(ys)


def centre_window(crops, window):
    """The central ``window`` x ``window`` cells of C x C crops (C even, window even, window <= C)."""
    c = crops.shape[-1]
    a = (c - window) // 2
    return crops[..., a:a + window, a:a + window]


def previous_dh(dh, centres):
    """The previous frame's height change seen in each frame's window: frame i-1's window shifted by the
    change of the centre cell (cells that fall outside are 0); frame 0 sees zeros."""
    prev = np.zeros_like(dh)
    n, w, _ = dh.shape
    for i in range(1, n):
        di, dj = centres[i] - centres[i - 1]
        if abs(di) > 2 or abs(dj) > 2:           # a wrap-around jump: no previous change in view
            continue
        src = dh[i - 1]
        r0, r1 = max(0, di), min(w, w + di)
        c0, c1 = max(0, dj), min(w, w + dj)
        prev[i, r0 - di:r1 - di, c0 - dj:c1 - dj] = src[r0:r1, c0:c1]
    return prev


def terrain(sessions, window, x_ranges, recipe=pp.V2_RECIPE):
    """(kin [n, 4] normalised per frame (no smoothing), prev_dh [n, w*w] m, dh [n, w*w] m) over the frames
    kept by the kinematic cull of ``recipe`` (thesis 6.3.2)."""
    kins, prevs, dhs = [], [], []
    x_lo, x_hi = (np.asarray(v) for v in x_ranges)
    for arrays, _ in sessions:
        if "crop_dh_m" not in arrays:
            raise ValueError("the session has no terrain crops (sandbox-datagen crop.cells = 0)")
        if arrays["crop_dh_m"].shape[-1] < window:
            raise ValueError("terrain window %d cells is larger than the session's crops (%d)"
                             % (window, arrays["crop_dh_m"].shape[-1]))
        dh = centre_window(arrays["crop_dh_m"].astype(np.float64), window)
        prev = previous_dh(dh, arrays["crop_centre_cell"].astype(np.int64))
        k = kept(arrays, recipe)
        kins.append(pp.minmax_apply(raw_columns(arrays, INPUTS)[k], x_lo, x_hi))
        prevs.append(prev[k].reshape(int(k.sum()), window * window))
        dhs.append(dh[k].reshape(int(k.sum()), window * window))
    return np.concatenate(kins), np.concatenate(prevs), np.concatenate(dhs)
