"""The soil paper's learned physics-informed estimator, run onboard in NumPy (CPython host side; no torch).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader", section 2.1 and Fig. 3: a network reads the kinematic observation
window, the action history and the FEE geometry the blind map extracted (not the force) and outputs the
five soil properties Theta_u with their log-variances S_Theta (eq. 8), the failure angle's residual
beta = beta0 + beta_res (eq. 11), residual corrections of the extracted geometry (theta_res: the depth and
the surcharge) and a residual force F^r constant over the horizon; the predicted force is
F^FEE(Theta) + F^r (eqs. 1, 2, 4). Reading aid ``shared/papers/notes/soil.md`` sections 2.3-2.4, 5.2.
The network is trained through the FEE with the paper's NLL loss (eqs. 5-10) by
``harness.training.soil_estimator``. Two committed models, told apart by their card's ``input.channels``:

- ``models/soil/estimator`` (:data:`DEFAULT_MODEL`, input kind ``"force"``): the paper's inputs and the
  measured blade force (F_x, F_z) at the horizon points. A departure from the paper, whose network does not
  read the force: in this soil world the machine's motion carries too little of the soil (a PI speed loop
  absorbs the load; the controller model below reads that loop's command instead; measured errors of the
  three in ``docs/results/soil_learned.md``);
- ``models/soil/estimator_kinematic`` (:data:`KINEMATIC_MODEL`, input kind ``"kinematic"``): the paper's
  network, kinematics, actions and geometry only (``soil-ood`` reproduces the paper's failure with it);
- ``models/soil/estimator_controller`` (:data:`CONTROLLER_MODEL`, input kind ``"controller"``): the paper's
  network with the rest of its signal list (notes section 2.8: the chassis twist's rate and the cascaded
  controller's commands): the kinematic inputs and :data:`CONTROLLER_CHANNELS`, the chassis' longitudinal
  acceleration and the track speed loop's commanded tractive effort. Not the force.

Inputs of one window (``n`` samples, a cut or part of one; the samples of a
``onboard.soil.cut_estimator.CutWindow``):

- geometry (the window's ``theta_k`` per sample): alpha [rad], rho [rad], depth [m], rms depth over the
  blade's slices [m], width [m], surcharge Q [N];
- kinematics (:data:`KINEMATIC_CHANNELS`, an (n, 5) array): ground speed [m/s], blade pitch [rad], blade
  roll [rad], chassis pitch [rad], lift actuator position [m] (:func:`kinematics_from_samples`);
- actions (:data:`ACTION_CHANNELS`, an (n, 5) array): the operator's commands, speed [m/s], lift [m],
  tilt [rad], roll [rad], depth [m] (:func:`actions_from_commands`);
- the controller model only (:data:`CONTROLLER_CHANNELS`, an (n, 2) array, :func:`controller_channels`):
  the longitudinal acceleration [m/s^2] (the ground speed's central difference over +-``ACCEL_HALF_SPAN``
  samples of the cut) and the track speed loop's commanded tractive effort [N] (the command stream's
  ``drive_cmd_n``);
- the force-informed model only: the window's measured force F_x, F_z [N] (:data:`FORCE_CHANNELS`).

The window is resampled at ``horizon`` points evenly spaced over it (the prediction horizon T_P, the
samples whose force the training predicts); the input vector is the standardised (card's normalisation)
concatenation of those points' channels and the window's duration [s] and travel [m]. The network is a
multilayer perceptron with tanh hidden layers (:func:`mlp_forward`); an ensemble of members (different
seeds) is averaged and the spread of their means added to the variance (an epistemic term the paper asks
for in section 3.2).

Output of :meth:`LearnedEstimator.estimate`: a ``onboard.soil.cut_estimator.CutEstimate`` (the same
fields as the classical estimator's), so both feed the same soil layers:

- ``theta``: the members' mean, each property bounded to the trained range (a sigmoid, card ``bounds``);
- ``var_data``: the members' mean predicted variance exp(S) plus the variance of their means;
- ``var``: eq. 9's inflation max(var_data, diag(N Sigma^a N^T)) (notes A6), N = I - J^+ J from the window's
  force Jacobian in units of the prior sigmas, whitened by the sensor noise (the classical estimator's
  ``"whitened"`` rule, ``correlated_samples`` samples counting as one); a property in the null space
  (diag N > 0.5) is flagged and keeps at least the ambiguity variance;
- the force prediction ``predicted`` and its error ``force_mae_n`` / ``force_mae_pct`` over every window
  sample where the force is measured: F^FEE(Theta; d + d_res, Q (1 + q_rel)) + F^r with beta = beta0 +
  beta_res, the residuals linear between the horizon points (the training's rule at those points).
"""
import json
import math
import numbers
import os
import zipfile

import numpy as np

from onboard.soil import fee_numpy
from onboard.soil.cut_estimator import CutEstimate, CutEstimateError
from onboard.soil.fee import DEFAULTS as FEE_LIMITS
from onboard.soil.fee import N_U, THETA_U_NAMES

GEOMETRY_CHANNELS = ("alpha_rad", "rho_rad", "depth_m", "depth_rms_m", "width_m", "surcharge_n")
KINEMATIC_CHANNELS = ("speed_mps", "blade_pitch_rad", "blade_roll_rad", "chassis_pitch_rad", "lift_m")
ACTION_CHANNELS = ("cmd_speed_mps", "cmd_lift_m", "cmd_tilt_rad", "cmd_roll_rad", "cmd_depth_m")
CHANNELS = GEOMETRY_CHANNELS + KINEMATIC_CHANNELS + ACTION_CHANNELS
# the measured blade force, an input of the force-informed model only (card ``input.channels``)
FORCE_CHANNELS = ("fx_n", "fz_n")
# the chassis' longitudinal acceleration and the track speed loop's command: the controller model's extra
# kinematic and action channels (no force sensor)
CONTROLLER_CHANNELS = ("accel_mps2", "cmd_drive_n")
GLOBALS = ("duration_s", "travel_m")
INPUT_KINDS = {"kinematic": CHANNELS, "force": CHANNELS + FORCE_CHANNELS,
               "controller": CHANNELS + CONTROLLER_CHANNELS}
ACCEL_HALF_SPAN = 6                # samples each side of the acceleration's central difference (0.1 s)
SAMPLE_RATE_HZ = 60.0

# output head: 5 properties, 5 log-variances, `horizon` beta residuals, depth residual, surcharge residual,
# residual force (x, z); the bounds of the residuals (tanh)
BETA_RES_MAX_RAD = 0.35
DEPTH_RES_MAX_M = 0.03
SURCHARGE_RES_MAX = 0.3
FORCE_RES_MAX_N = 3000.0
SIGMA_MIN_FRACTION = 1e-3          # the smallest predicted sigma, a fraction of the property's range

_MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "soil")
DEFAULT_MODEL = os.path.join(_MODELS, "estimator")                  # the force-informed model (the default)
KINEMATIC_MODEL = os.path.join(_MODELS, "estimator_kinematic")      # the paper's inputs only (no force)
CONTROLLER_MODEL = os.path.join(_MODELS, "estimator_controller")    # and the track loop's command (no force)


class LearnedModelError(ValueError):
    """The committed model is missing or malformed."""


def output_size(horizon):
    return 2 * N_U + horizon + 4


def horizon_index(n, horizon):
    """Indices of ``horizon`` samples evenly spaced over a window of ``n`` samples (first and last kept)."""
    return np.rint(np.linspace(0.0, n - 1.0, horizon)).astype(int)


def geometry_array(window):
    """(n, 6) array of the window's :data:`GEOMETRY_CHANNELS` (SI units)."""
    return np.stack([window.alpha_rad, window.rho_rad, window.depth_m, np.sqrt(np.maximum(window.depth_sq_m2, 0.0)),
                     window.width_m, window.surcharge_n], axis=1)


def kinematics_from_samples(samples, times_us):
    """(n, 5) array of :data:`KINEMATIC_CHANNELS` at ``times_us`` from machine samples (objects with
    ``time_us``, ``blade_pose`` (pitch_rad, roll_rad), ``speed_mps``, ``pitch_rad``, ``lift_m``:
    ``onboard.soil.loader_app.MachineSample``). Raises CutEstimateError for a time without a sample."""
    by_t = {s.time_us: s for s in samples}
    rows = []
    for t in times_us:
        s = by_t.get(int(t))
        if s is None:
            raise CutEstimateError("no machine sample at time %d us" % int(t))
        rows.append((s.speed_mps, s.blade_pose.pitch_rad, s.blade_pose.roll_rad, s.pitch_rad, s.lift_m))
    return np.array(rows, dtype=float).reshape(-1, len(KINEMATIC_CHANNELS))


def actions_from_commands(commands_by_time_us, times_us):
    """(n, 5) array of :data:`ACTION_CHANNELS` at ``times_us`` from the operator's commands
    {time_us: {"speed_mps", "lift_m", "tilt_rad", "roll_rad", "depth_m"}}; the last command at or before
    each time (the one in force). Raises CutEstimateError when none precedes a time."""
    keys = sorted(commands_by_time_us)
    if not keys:
        raise CutEstimateError("no operator commands")
    kt = np.array(keys, dtype=np.int64)
    rows = []
    for t in times_us:
        k = int(np.searchsorted(kt, int(t), side="right")) - 1
        if k < 0:
            raise CutEstimateError("no operator command at or before %d us" % int(t))
        c = commands_by_time_us[keys[k]]
        rows.append((c["speed_mps"], c["lift_m"], c["tilt_rad"], c["roll_rad"], c["depth_m"]))
    return np.array(rows, dtype=float).reshape(-1, len(ACTION_CHANNELS))


def drive_command_n(command):
    """The track speed loop's commanded tractive effort [N] of an operator command dict, its ``drive_cmd_n``
    as a float; None when the command carries none: the key absent, None (JSON null, as a log holds it), not
    a number (bools included) or not finite."""
    d = command.get("drive_cmd_n")
    if d is None or isinstance(d, bool) or not isinstance(d, numbers.Real):
        return None
    d = float(d)
    return d if math.isfinite(d) else None


def controller_channels(samples, commands_by_time_us, times_us):
    """(n, 2) array of :data:`CONTROLLER_CHANNELS` at ``times_us``: the longitudinal acceleration [m/s^2],
    the central difference of the ground speed of the machine samples ``samples`` (all of the cut's, objects
    with ``time_us`` and ``speed_mps``) over +-:data:`ACCEL_HALF_SPAN` samples (one-sided at the cut's ends),
    and the track speed loop's commanded tractive effort [N], the ``drive_cmd_n`` of the command in force
    at each time. Raises CutEstimateError for a time without a sample or a command, or a command in force
    without ``drive_cmd_n`` (absent, None, NaN: :func:`drive_command_n`; an
    ``onboard.soil.loader_app.OperatorCommand`` without it)."""
    ordered = sorted(samples, key=lambda s: s.time_us)
    if len(ordered) < 2:
        raise CutEstimateError("acceleration needs at least 2 machine samples, got %d" % len(ordered))
    t = np.array([s.time_us for s in ordered], dtype=np.int64)
    v = np.array([s.speed_mps for s in ordered], dtype=float)
    pos = {int(tt): i for i, tt in enumerate(t)}
    keys = sorted(commands_by_time_us)
    if not keys:
        raise CutEstimateError("no operator commands")
    kt = np.array(keys, dtype=np.int64)
    rows = []
    h = ACCEL_HALF_SPAN
    for tq in times_us:
        i = pos.get(int(tq))
        if i is None:
            raise CutEstimateError("no machine sample at time %d us" % int(tq))
        a, b = max(i - h, 0), min(i + h, len(t) - 1)
        accel = (v[b] - v[a]) / ((t[b] - t[a]) * 1e-6)
        k = int(np.searchsorted(kt, int(tq), side="right")) - 1
        if k < 0:
            raise CutEstimateError("no operator command at or before %d us" % int(tq))
        drive_n = drive_command_n(commands_by_time_us[keys[k]])
        if drive_n is None:
            raise CutEstimateError("the command in force at %d us carries no drive_cmd_n (the track speed loop's "
                                   "command, which the controller model reads)" % int(tq))
        rows.append((accel, drive_n))
    return np.array(rows, dtype=float).reshape(-1, len(CONTROLLER_CHANNELS))


def window_inputs(geometry, kinematics, actions, horizon, force=None, controller=None):
    """(raw input vector, horizon indices) of one window: the channels at the horizon points, flattened
    point by point (:data:`CHANNELS`, then :data:`CONTROLLER_CHANNELS` when ``controller`` (n, 2) is given,
    then :data:`FORCE_CHANNELS` when ``force`` (n, 2) [N] is given), then :data:`GLOBALS` (duration from the
    sample count at 60 Hz, travel as speed x dt)."""
    g = np.asarray(geometry, dtype=float)
    k = np.asarray(kinematics, dtype=float)
    a = np.asarray(actions, dtype=float)
    n = g.shape[0]
    if k.shape != (n, len(KINEMATIC_CHANNELS)) or a.shape != (n, len(ACTION_CHANNELS)) or g.shape[1] != 6:
        raise CutEstimateError("window inputs have shapes %s, %s, %s (expected (n, 6), (n, 5), (n, 5))"
                               % (g.shape, k.shape, a.shape))
    if n < 2:
        raise CutEstimateError("window has %d samples, at least 2 needed" % n)
    parts = [g, k, a]
    if controller is not None:
        cc = np.asarray(controller, dtype=float)
        if cc.shape != (n, len(CONTROLLER_CHANNELS)):
            raise CutEstimateError("window controller channels have shape %s (expected (%d, 2))" % (cc.shape, n))
        parts.append(cc)
    if force is not None:
        f = np.asarray(force, dtype=float)
        if f.shape != (n, len(FORCE_CHANNELS)):
            raise CutEstimateError("window force has shape %s (expected (%d, 2))" % (f.shape, n))
        parts.append(f)
    allc = np.concatenate(parts, axis=1)
    if not np.all(np.isfinite(allc)):
        raise CutEstimateError("window inputs hold NaN or infinite values (the force-informed model needs "
                               "F_x and F_z)" if force is not None else "window inputs hold NaN or infinite values")
    idx = horizon_index(n, horizon)
    glob = np.array([n / SAMPLE_RATE_HZ, float(np.sum(np.abs(k[:, 0]))) / SAMPLE_RATE_HZ])
    return np.concatenate([allc[idx].ravel(), glob]), idx


def with_point_channels(x_raw, extra, horizon):
    """Kinematic-model inputs ``x_raw`` (B, 16 P + 2) with ``extra`` (B, P, k) channels at the same horizon
    points added after each point's :data:`CHANNELS`: the layout :func:`window_inputs` gives with ``force``
    or ``controller`` (B, (16 + k) P + 2)."""
    x = np.asarray(x_raw, dtype=float)
    e = np.asarray(extra, dtype=float)
    b = x.shape[0]
    per_point = x[:, :len(CHANNELS) * horizon].reshape(b, horizon, len(CHANNELS))
    both = np.concatenate([per_point, e.reshape(b, horizon, -1)], axis=2)
    return np.concatenate([both.reshape(b, -1), x[:, len(CHANNELS) * horizon:]], axis=1)


def with_force_channels(x_raw, force_n, horizon):
    """Kinematic-model inputs ``x_raw`` (B, 16 P + 2) with the force at the same horizon points ``force_n``
    (B, P, 2) [N] added: the layout :func:`window_inputs` gives with ``force`` (B, 18 P + 2)."""
    return with_point_channels(x_raw, force_n, horizon)


def mlp_forward(layers, x):
    """The network: ``layers`` [(W (out, in), b (out,))], tanh after every layer but the last; ``x`` (B, in)."""
    h = x
    for i, (w, b) in enumerate(layers):
        h = h @ w.T + b
        if i < len(layers) - 1:
            h = np.tanh(h)
    return h


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def decode(out, bounds_lo, bounds_hi, horizon):
    """{theta (B, 5), logvar (B, 5), beta_res_rad (B, horizon), depth_res_m (B,), surcharge_rel (B,),
    residual_force_n (B, 2)} of the raw head ``out`` (B, :func:`output_size`): properties bounded to
    [lo, hi] by a sigmoid, log-variances between (1e-3 range)^2 and range^2, residuals bounded by tanh."""
    lo = np.asarray(bounds_lo, dtype=float)
    hi = np.asarray(bounds_hi, dtype=float)
    span = hi - lo
    lv_lo = 2.0 * np.log(SIGMA_MIN_FRACTION * span)
    lv_hi = 2.0 * np.log(span)
    o = out
    p = horizon
    return {"theta": lo + span * _sigmoid(o[:, 0:N_U]),
            "logvar": lv_lo + (lv_hi - lv_lo) * _sigmoid(o[:, N_U:2 * N_U]),
            "beta_res_rad": BETA_RES_MAX_RAD * np.tanh(o[:, 2 * N_U:2 * N_U + p]),
            "depth_res_m": DEPTH_RES_MAX_M * np.tanh(o[:, 2 * N_U + p]),
            "surcharge_rel": SURCHARGE_RES_MAX * np.tanh(o[:, 2 * N_U + p + 1]),
            "residual_force_n": FORCE_RES_MAX_N * np.tanh(o[:, 2 * N_U + p + 2:2 * N_U + p + 4])}


def corrected_geometry(geometry, depth_res_m=0.0, surcharge_rel=0.0):
    """(alpha, rho, d, w, Q, d^2) arrays of a window's geometry (n, 6) with the depth and surcharge
    corrections (eq. 10's theta_res): d + d_res where the blade cuts, Q (1 + q_rel)."""
    g = np.asarray(geometry, dtype=float)
    alpha, rho, d, drms, w, q = (g[:, i] for i in range(6))
    d2 = drms * drms
    cut = d > 0.0
    if depth_res_m != 0.0:
        d2 = np.where(cut, np.maximum(d2 + 2.0 * depth_res_m * d + depth_res_m * depth_res_m, 0.0), d2)
        d = np.where(cut, np.maximum(d + depth_res_m, 0.0), d)
    return alpha, rho, d, w, q * (1.0 + surcharge_rel), d2


def failure_angle(theta, alpha, rho, beta_res_rad=None):
    """(beta, rho) arrays: the rake kept inside the domain (as the classical estimator keeps it) and beta =
    beta0(phi) + beta_res (eq. 11) inside the admissible interval, as the training computes it; without
    ``beta_res_rad`` beta* = argmin N_gamma."""
    lim = FEE_LIMITS
    rho = np.minimum(rho, lim["eta_max_rad"] - theta[4] - theta[1] - 2.0 * lim["beta_min_rad"])
    phi = np.full(alpha.shape, float(theta[1]))
    delta = np.full(alpha.shape, float(theta[4]))
    if beta_res_rad is None:
        # an admissible failure angle also above beta_min - alpha - phi (fee.beta_bounds)
        rho = np.minimum(rho, lim["eta_max_rad"] - theta[4] - theta[1] - 2.0 * lim["beta_min_rad"]
                         - np.maximum(-alpha - theta[1], 0.0))
        return fee_numpy.beta_star(alpha, rho, phi, delta, lim["beta_min_rad"], lim["eta_max_rad"])[0], rho
    hi = np.minimum(lim["eta_max_rad"] - delta - rho - phi, 0.5 * math.pi - lim["beta_min_rad"] - alpha)
    beta = np.maximum(np.minimum(fee_numpy.beta_eq11(phi) + beta_res_rad, hi - 1e-4), lim["beta_min_rad"])
    return beta, rho


def fee_force(theta, parts, beta, rho, residual_force_n=(0.0, 0.0)):
    """(fx_n, fz_n, valid): F^FEE(theta) + F^r (eqs. 1, 2, 4) over ``parts`` (corrected_geometry) with the
    failure angle ``beta`` and rake ``rho`` held (failure_angle)."""
    alpha, _rho, d, w, q, d2 = parts
    tu = [theta[0], np.full(alpha.shape, float(theta[1])), theta[2], theta[3], np.full(alpha.shape, float(theta[4]))]
    _f, fx, fz = fee_numpy.force_from_beta(tu, [alpha, rho, d, w, q], beta, d2)
    valid = fee_numpy.valid_mask(tu, [alpha, rho, d, w, q], beta) & np.isfinite(fx) & np.isfinite(fz)
    return fx + residual_force_n[0], fz + residual_force_n[1], valid


def fee_window_force(theta, geometry, depth_res_m=0.0, surcharge_rel=0.0, residual_force_n=(0.0, 0.0),
                     beta_res_rad=None):
    """(fx_n, fz_n, valid) arrays over a window's samples: F^FEE(theta; the corrected geometry) + F^r
    (eqs. 1, 2, 4) with beta = beta0 + ``beta_res_rad`` per sample (None: beta*)."""
    parts = corrected_geometry(geometry, depth_res_m, surcharge_rel)
    beta, rho = failure_angle(theta, parts[0], parts[1], beta_res_rad)
    return fee_force(theta, parts, beta, rho, residual_force_n)


class LearnedEstimator:
    """The committed learned estimator (module docstring) loaded from ``model_dir`` (``weights.npz`` and
    ``card.json``); ``members``: how many ensemble members to use (None: all)."""

    def __init__(self, model_dir=None, members=None):
        d = DEFAULT_MODEL if model_dir is None else model_dir
        wpath = os.path.join(d, "weights.npz")
        cpath = os.path.join(d, "card.json")
        if not (os.path.isfile(wpath) and os.path.isfile(cpath)):
            raise LearnedModelError("learned soil estimator: %s needs weights.npz and card.json (make train-soil)"
                                    % os.path.normpath(d))
        try:
            with open(cpath) as f:
                card = json.load(f)
            with np.load(wpath) as zf:
                z = {k: zf[k] for k in zf.files}
            self.horizon = int(card["input"]["horizon"])
            channels = tuple(card["input"]["channels"])
            self.x_mean = np.asarray(z["x_mean"], dtype=float)
            self.x_std = np.asarray(z["x_std"], dtype=float)
            self.lo = np.asarray(z["bounds_lo"], dtype=float)
            self.hi = np.asarray(z["bounds_hi"], dtype=float)
            n_members = int(z["members"])
            n_layers = int(z["layers"])
            self.members = []
            for m in range(n_members if members is None else min(members, n_members)):
                self.members.append([(np.asarray(z["m%d_w%d" % (m, i)], dtype=float),
                                      np.asarray(z["m%d_b%d" % (m, i)], dtype=float)) for i in range(n_layers)])
            est = card.get("eq9", {})
            self.prior_sigma = np.asarray(card["prior_sigma"], dtype=float)
            self.noise_rel = float(card["noise"]["rel_sigma"])
            self.noise_abs = float(card["noise"]["abs_sigma_n"])
            self.atol = float(est.get("whitened_atol", 2.0))
            self.rtol = float(est.get("whitened_rtol", 1e-4))
            self.correlated_samples = float(est.get("correlated_samples", 6.0))
        except (KeyError, TypeError, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise LearnedModelError("learned soil estimator %s: malformed model (%s: %s)"
                                    % (os.path.normpath(d), type(exc).__name__, str(exc).splitlines()[0]
                                       if str(exc) else "empty or truncated file"))
        self.null_fraction = 0.5
        self.card = card
        kinds = [k for k, v in INPUT_KINDS.items() if v == channels]
        if not kinds:
            raise LearnedModelError("learned soil estimator %s: unknown input channels %s in the card"
                                    % (os.path.normpath(d), ", ".join(channels)))
        self.inputs = kinds[0]
        self._check_shapes(z, len(channels) * self.horizon + len(GLOBALS), n_layers, os.path.normpath(d))
        if (self.x_mean.shape != (len(channels) * self.horizon + len(GLOBALS),) or not self.members
                or self.prior_sigma.shape != (N_U,) or not np.all(self.prior_sigma > 0)
                or not all(np.all(np.isfinite(a)) for layers in self.members for wb in layers for a in wb)):
            raise LearnedModelError("learned soil estimator %s: input size, prior or weights do not match the "
                                    "card (or hold NaN)" % os.path.normpath(d))

    def _check_shapes(self, z, n_in, n_layers, where):
        """Raise LearnedModelError naming the first array of weights.npz ``z`` whose shape does not fit the
        card's input size ``n_in`` and output head, or the other arrays (a member's layers chained in order)."""
        def need(name, arr, shape):
            if arr.shape != shape:
                raise LearnedModelError("learned soil estimator %s: weights.npz array %s has shape %s, %s expected "
                                        "(the card and the other arrays)" % (where, name, arr.shape, shape))
        need("x_mean", self.x_mean, (n_in,))
        need("x_std", self.x_std, (n_in,))
        need("bounds_lo", self.lo, (N_U,))
        need("bounds_hi", self.hi, (N_U,))
        for name, arr in (("x_mean", self.x_mean), ("x_std", self.x_std), ("bounds_lo", self.lo),
                          ("bounds_hi", self.hi)):
            if not np.all(np.isfinite(arr)):
                raise LearnedModelError("learned soil estimator %s: weights.npz array %s holds NaN or infinite "
                                        "values" % (where, name))
        if not np.all(self.x_std > 0.0):
            raise LearnedModelError("learned soil estimator %s: weights.npz array x_std holds values <= 0"
                                    % where)
        if not np.all(self.hi > self.lo):
            raise LearnedModelError("learned soil estimator %s: weights.npz arrays bounds_lo, bounds_hi are not "
                                    "in order (lo < hi)" % where)
        if n_layers < 1:
            raise LearnedModelError("learned soil estimator %s: weights.npz array layers is %d, at least 1 needed"
                                    % (where, n_layers))
        n_out = output_size(self.horizon)
        for m, layers in enumerate(self.members):
            width = n_in
            for i, (w, b) in enumerate(layers):
                if w.ndim != 2 or w.shape[1] != width or (i == n_layers - 1 and w.shape[0] != n_out):
                    rows = n_out if i == n_layers - 1 else "any"
                    raise LearnedModelError("learned soil estimator %s: weights.npz array m%d_w%d has shape %s, "
                                            "(%s, %d) expected (the card and the other arrays)"
                                            % (where, m, i, w.shape, rows, width))
                need("m%d_b%d" % (m, i), b, (w.shape[0],))
                width = w.shape[0]

    def forward(self, x_raw):
        """Per member the decoded outputs (:func:`decode`) of raw input vectors ``x_raw`` (B, in)."""
        x = (np.atleast_2d(x_raw) - self.x_mean) / self.x_std
        return [decode(mlp_forward(layers, x), self.lo, self.hi, self.horizon) for layers in self.members]

    def estimate(self, window, kinematics, actions, controller=None):
        """The ``CutEstimate`` of a ``CutWindow`` with its kinematics and actions (and, for the controller
        model, its :data:`CONTROLLER_CHANNELS` (n, 2), :func:`controller_channels`; module docstring);
        raises CutEstimateError for a window too short, with bad or missing inputs, or without a sample with a
        measured force where the FEE is valid for the estimate."""
        n = len(window)
        if n < 10:
            raise CutEstimateError("cut window has %d samples, at least 10 needed" % n)
        geom = geometry_array(window)
        force = np.stack([window.fx_n, window.fz_n], axis=1) if self.inputs == "force" else None
        if self.inputs == "controller" and controller is None:
            raise CutEstimateError("the controller model needs the acceleration and the track loop's command "
                                   "(controller channels)")
        x, _idx = window_inputs(geom, kinematics, actions, self.horizon, force,
                                controller if self.inputs == "controller" else None)
        outs = self.forward(x[None, :])
        thetas = np.array([o["theta"][0] for o in outs])
        theta = thetas.mean(axis=0)
        var_alea = np.mean([np.exp(o["logvar"][0]) for o in outs], axis=0)
        var_epi = thetas.var(axis=0) if len(outs) > 1 else np.zeros(N_U)
        var_data = var_alea + var_epi
        d_res = float(np.mean([o["depth_res_m"][0] for o in outs]))
        q_rel = float(np.mean([o["surcharge_rel"][0] for o in outs]))
        f_res = np.mean([o["residual_force_n"][0] for o in outs], axis=0)
        # beta residuals: the members' mean at the horizon points, linear between them over the window
        beta_h = np.mean([o["beta_res_rad"][0] for o in outs], axis=0)
        beta_res = np.interp(np.arange(n), _idx, beta_h)
        parts = corrected_geometry(geom, d_res, q_rel)
        beta, rho = failure_angle(theta, parts[0], parts[1], beta_res)
        fx, fz, valid = fee_force(theta, parts, beta, rho, f_res)
        # eq. 9 (notes A6, A7): the window's force Jacobian per prior sigma, whitened by the sensor noise
        has_x = np.isfinite(window.fx_n)
        has_z = np.isfinite(window.fz_n)
        if not np.any((has_x | has_z) & valid):
            # nothing to check the estimate against (its force error would be NaN) and no eq. 9 Jacobian
            raise CutEstimateError("no window sample with a measured force lies inside the FEE's domain for "
                                   "the estimate (e.g. |alpha| beyond its clipping limit)")
        sx = self.noise_rel * np.abs(np.where(has_x, window.fx_n, 0.0)) + self.noise_abs
        sz = self.noise_rel * np.abs(np.where(has_z, window.fz_n, 0.0)) + self.noise_abs
        jac = np.zeros((2 * n, N_U))
        for k in range(N_U):
            h = 1e-4 * self.prior_sigma[k]
            tp = theta.copy()
            tm = theta.copy()
            tp[k] += h
            tm[k] -= h
            fxp, fzp, _v = fee_force(tp, parts, beta, rho, f_res)
            fxm, fzm, _v = fee_force(tm, parts, beta, rho, f_res)
            jac[:n, k] = (fxp - fxm) / (2.0 * h) * self.prior_sigma[k] / sx
            jac[n:, k] = (fzp - fzm) / (2.0 * h) * self.prior_sigma[k] / sz
        rows = np.concatenate([has_x & valid, has_z & valid])
        j_w = jac[rows] / math.sqrt(self.correlated_samples)
        if j_w.shape[0] == 0:
            j_w = np.zeros((1, N_U))
        var_amb = self.prior_sigma ** 2
        var_null_z, rank = fee_numpy.nullspace_variance(j_w, np.ones(N_U), self.atol, self.rtol)
        proj, _r = fee_numpy.null_projector(j_w, self.atol, self.rtol)
        null_diag = np.diag(proj)
        var = np.maximum(var_data, var_null_z * var_amb)
        flags = [False] * N_U
        reasons = [""] * N_U
        if not np.any(has_z):
            flags[4] = True
            reasons[4] = "F_z not measured: the force direction (rho + delta - alpha) is unobserved"
        for k in range(N_U):
            if not flags[k] and null_diag[k] > self.null_fraction:
                flags[k] = True
                reasons[k] = "in the null space of the force Jacobian (eq. 9)"
            if flags[k]:
                var[k] = max(var[k], var_amb[k])
        mx = has_x & valid
        mz = has_z & valid
        errs = np.concatenate([window.fx_n[mx] - fx[mx], window.fz_n[mz] - fz[mz]])
        chi2 = float(np.mean((errs / np.concatenate([sx[mx], sz[mz]])) ** 2)) if errs.size else 0.0
        return CutEstimate(theta, var, var_data, flags, reasons, window, (fx, fz), (mx, mz),
                           residual_force_n=f_res,
                           known_residuals={"surcharge_rel": (q_rel, 0.0), "depth_m": (d_res, 0.0)},
                           null_diag=null_diag, rank=rank, chi2_red=chi2, nfev=len(outs),
                           message="learned estimator, %d member(s)" % len(outs), var_epistemic=var_epi)


__all__ = ["LearnedEstimator", "LearnedModelError", "CHANNELS", "THETA_U_NAMES"]
