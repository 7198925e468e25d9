"""Scores of the committed Alexi networks on a Sandbox test session (thesis 6.2.4, 6.3.4, tables 6.1-6.3),
through the onboard backends (:mod:`harness.sim.alexi.nets`; no torch).

- ``preprocessed``: inputs and targets through the net's own recipe (cull, min-max with the card's ranges,
  smoothing, quantisation) as the thesis scored them;
- ``raw``: per-frame inputs and targets, only min-max normalised with the card's ranges (teleport frames
  dropped): what the simulator sees frame by frame (reading aid A19).

The three-network variant is scored by the speed its dx, dy imply (v = +-sqrt(dx^2 + dy^2), signed by the
command, thesis 6.1) against the two-network speed net's targets (reading aid H7).
"""
import numpy as np

from harness.training.alexi import dataset as ds
from harness.training.alexi import metrics as mt
from harness.training.alexi import preprocess as pp

# thesis table 6.3 (V2, two networks, R^2) and table 6.1 (V1)
THESIS_V2_R2 = {"A": {"speed": 0.8828, "dyaw": 0.9657}, "B": {"speed": 0.9254, "dyaw": 0.9842}}
THESIS_V1_R2 = {"speed": 0.398, "dyaw": 0.56}
KIN_NETS = ("v2_speed", "v2_dyaw", "v1_speed", "v1_dyaw", "v2_dnorth", "v2_deast")


def _alexi(net):
    return net.card["alexi"]


def preprocessed_xy(net, session):
    a = _alexi(net)
    return ds.kinematic([session], a["recipe"], a["target"], a["ranges"])


def raw_kinematic(sessions, target, ranges):
    """(x, y) of the raw per-frame mode: inputs and targets only min-max normalised with ``ranges`` (teleport
    frames dropped), as alexi-eval's raw figures and the training's ``raw_cod`` selection score them."""
    return ds.kinematic(sessions, dict(pp.RAW_RECIPE), target, ranges)


def raw_xy(net, session):
    a = _alexi(net)
    return raw_kinematic([session], a["target"], a["ranges"])


def score_net(net, session):
    """{preprocessed: scores, raw: scores (+ gain)} of one kinematic net, plus the predictions used; a net whose
    card holds an output calibration also gets ``raw_calibrated`` (the per-frame figures the simulator sees)
    and ``preprocessed_calibrated`` (its Pearson R^2 equals the uncalibrated one: an affine map)."""
    out = {}
    preds = {}
    for mode, fn in (("preprocessed", preprocessed_xy), ("raw", raw_xy)):
        x, y = fn(net, session)
        p = net.predict_normalised(x)[:, 0]
        out[mode] = mt.scores_and_gain(y, p) if mode == "raw" else mt.scores(y, p)
        preds[mode] = (x, y, p)
        if net.calibration is not None:
            pc = net.calibrate(p[:, None])[:, 0]
            out[mode + "_calibrated"] = mt.scores_and_gain(y, pc)
            preds[mode + "_calibrated"] = (x, y, pc)
    return out, preds


def implied_speed(nets, session, mode):
    """(target, prediction) of the speed implied by the three-network dx, dy nets, in the speed net's
    normalised space, over the frames the V2 cull keeps."""
    speed = nets["v2_speed"]
    recipe = _alexi(speed)["recipe"] if mode == "preprocessed" else dict(pp.RAW_RECIPE)
    arrays = session[0]
    keep = ds.kept(arrays, recipe)
    _, y = ds.kinematic([session], recipe, "speed", _alexi(speed)["ranges"])
    parts = []
    for name in ("v2_dnorth", "v2_deast"):
        net = nets[name]
        x, _ = ds.kinematic([session], recipe, _alexi(net)["target"], _alexi(net)["ranges"])
        parts.append(net.denormalise(net.predict_normalised(x))[:, 0])
    sign = np.where(np.asarray(arrays["cmd_speed_mps"])[keep] < 0.0, -1.0, 1.0)
    v = sign * np.hypot(parts[0], parts[1])
    lo, hi = _alexi(speed)["ranges"]["target"]
    v_norm = pp.minmax_apply(v, lo, hi)
    if mode == "preprocessed":
        v_norm = pp.series(v_norm[:, None], dict(recipe, normalise=False))[:, 0]
    return y, v_norm


def spearman_checks(nets, session):
    """Thesis table 6.2: Spearman (v_left - v_right) vs dtheta and v vs phi, on the test session ("reference")
    and on the V2 two-network predictions for the same per-frame inputs ("predicted")."""
    arrays = session[0]
    keep = ~np.asarray(arrays["teleport"], dtype=bool)
    diff = (arrays["left_radps"] - arrays["right_radps"])[keep]
    pitch = arrays["pitch_start_rad"][keep]
    x = ds.raw_columns(arrays, ds.INPUTS)[keep]
    v_hat = nets["v2_speed"].predict(x)[:, 0]
    dyaw_hat = nets["v2_dyaw"].predict(x)[:, 0]
    return {"reference": {"track_difference_vs_dyaw": mt.spearman(diff, arrays["dyaw_rad"][keep]),
                          "speed_vs_pitch": mt.spearman(arrays["dx_body_m"][keep], pitch)},
            "predicted": {"track_difference_vs_dyaw": mt.spearman(diff, dyaw_hat),
                          "speed_vs_pitch": mt.spearman(v_hat, pitch)}}


SPIN_BLOCKS = (2, 3)                  # Alg. 5 blocks (0, +w) and (0, -w): spins in place
TILT_PROBE_DEG = 4.0


def spin_response(session, min_track_difference_radps=2.0):
    """The reference's yaw response in the spin blocks: per frame dtheta / (v_left - v_right) (rad per frame
    per rad/s), its mean, and its Pearson r with the tilt magnitude sqrt(phi^2 + psi^2) and with the sinkage
    (frames with |v_left - v_right| above ``min_track_difference_radps``, teleports dropped). Says what the
    yaw response depends on (a tilt dependence a dtheta net may learn, or not)."""
    a = session[0]
    diff = np.asarray(a["left_radps"] - a["right_radps"], dtype=np.float64)
    keep = (np.isin(a["block"], SPIN_BLOCKS) & ~np.asarray(a["teleport"], dtype=bool)
            & (np.abs(diff) > min_track_difference_radps))
    if keep.sum() < 3:
        return {"frames": int(keep.sum())}
    eff = a["dyaw_rad"][keep] / diff[keep]
    tilt = np.hypot(a["pitch_start_rad"], a["roll_start_rad"])[keep]
    return {"frames": int(keep.sum()), "dyaw_per_track_difference_mean": float(eff.mean()),
            "tilt_mean_deg": float(np.degrees(tilt.mean())), "sinkage_mean_m": float(a["sinkage_m"][keep].mean()),
            "pearson_with_tilt": mt.pearson(eff, tilt), "pearson_with_sinkage": mt.pearson(eff, a["sinkage_m"][keep])}


def tilt_sensitivity(net, track_radps=3.2, tilt_deg=TILT_PROBE_DEG):
    """A dtheta net's spin prediction (v_left = -v_right = ``track_radps``) at a tilt of +-``tilt_deg`` in
    pitch and in roll, over its prediction on level ground (1: the tilt changes nothing)."""
    t = np.radians(tilt_deg)
    x = np.array([[track_radps, -track_radps, p, r] for p, r in ((0, 0), (t, 0), (-t, 0), (0, t), (0, -t))])
    out = net.predict(x)[:, 0]
    return {"tilt_deg": tilt_deg, "level": float(out[0]),
            "ratio_to_level": {k: float(v / out[0]) if out[0] != 0 else None
                               for k, v in zip(("pitch_up", "pitch_down", "roll_right", "roll_left"), out[1:])}}


def terrain_one_step(net, session):
    """Pixel Pearson r of the terrain net's dh against the session's, one step ahead (the reference's previous
    dh as input), and of the previous dh alone (persistence)."""
    a = _alexi(net)
    kin, prev, dh = ds.terrain([session], a["window_cells"], a["kinematic_ranges"])
    scale = a["dh_scale_m"]
    p = net.predict_normalised(np.concatenate([kin, prev / scale], axis=1)) * scale
    return {"pixel_pearson": mt.pearson(dh, p), "persistence_pixel_pearson": mt.pearson(dh, prev),
            "mse_m2": mt.mse(dh, p), "frames": int(len(dh))}


def evaluate(nets, session, terrain_net=None):
    """All scores of one test session; ``nets`` {name: Net} with every name of :data:`KIN_NETS`."""
    res = {"nets": {}}
    preds = {}
    for name in KIN_NETS:
        res["nets"][name], preds[name] = score_net(nets[name], session)
    res["three_network_speed"] = {}
    for mode in ("preprocessed", "raw"):
        y, p = implied_speed(nets, session, mode)
        res["three_network_speed"][mode] = mt.scores(y, p)
    res["spearman"] = spearman_checks(nets, session)
    res["spin_response"] = spin_response(session)
    if terrain_net is not None and "crop_dh_m" in session[0]:
        res["terrain"] = terrain_one_step(terrain_net, session)
    return res, preds
