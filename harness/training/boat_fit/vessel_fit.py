"""Vectorised open-loop rollouts of the vessel model over fitting windows, the paper's position-MSE
loss with its exact gradient, and the optimisers (RobotX AAVS III-B).

The step is ``onboard.vessel.model.step`` (robotx eqs. 1-6, NED/FRD) evaluated on numpy arrays over
all windows at once; the gradient comes from forward sensitivities S = dx/dc propagated alongside,
S' = F S + dstep/dc (``model.jacobian_state`` / ``jacobian_params`` in array form). Loss (reading aid
2.3, per withheld point):

    L(c) = 1/N sum_w sum_j || p_w(t_j; c, x_w, T_w) - p_gnss_w,j ||^2      (m^2)

with p_w the rollout's (north, east) from the seed state x_w under the recorded thrusts T_w.

The optimisers work on scaled constants (by default the Gauss-Newton scale at the start, so that each
scaled constant moves the loss alike). ``fit_gradient_descent`` is the paper's gradient descent
(first-order only: accelerated, projected onto the bounds, backtracking line search);
``fit_lbfgsb`` is scipy's L-BFGS-B on the same loss and gradient (the quasi-Newton baseline).
"""
import math

import numpy as np

from onboard.vessel import model as vm

C1, C2, C3, C4, C5, C6, C7, C8, C9 = (vm.C1, vm.C2, vm.C3, vm.C4, vm.C5, vm.C6, vm.C7, vm.C8, vm.C9)
YAW, YAW_RATE, NORTH, EAST, SURGE, SWAY = vm.YAW, vm.YAW_RATE, vm.NORTH, vm.EAST, vm.SURGE, vm.SWAY
N_STATE, N_PARAM = vm.N_STATE, vm.N_PARAM

# the loss reported for constants whose rollouts overflow (the line searches then step back)
DIVERGED_LOSS = 1e30

# lower bounds of the constants (c1, c4 inertias > 0; damping >= 0; c9 free), in units of the scale
LOWER = (1e-3, 0.0, 0.0, 1e-3, 0.0, 0.0, 0.0, 0.0, None)


def step_np(x, thrust, c, dt):
    """``onboard.vessel.model.step`` over arrays: x (W, 6), thrust (W, 2), dt (W,); c: 9 numbers.
    Yaw is not wrapped (rollouts only use its sine and cosine)."""
    yaw, r, u, v = x[:, YAW], x[:, YAW_RATE], x[:, SURGE], x[:, SWAY]
    t_l, t_r = thrust[:, 0], thrust[:, 1]
    cy, sy = np.cos(yaw), np.sin(yaw)
    cr, sr = np.cos(r * dt), np.sin(r * dt)
    out = np.empty_like(x)
    out[:, YAW] = yaw + r * dt
    out[:, YAW_RATE] = r + dt * ((t_l - t_r) / c[C1] - c[C2] * r - c[C3] * r * np.abs(r) - 2.0 * c[C9] * u * v)
    out[:, NORTH] = x[:, NORTH] + dt * (u * cy - v * sy)
    out[:, EAST] = x[:, EAST] + dt * (u * sy + v * cy)
    out[:, SURGE] = u * cr + v * sr + dt * ((t_l + t_r) / c[C4] - c[C5] * u - c[C6] * u * np.abs(u))
    out[:, SWAY] = v * cr - u * sr + dt * (-c[C7] * v - c[C8] * v * np.abs(v))
    return out


def jacobians_np(x, thrust, c, dt):
    """(F (W, 6, 6), J (W, 6, 9)): ``model.jacobian_state`` and ``model.jacobian_params`` over arrays."""
    w = x.shape[0]
    yaw, r, u, v = x[:, YAW], x[:, YAW_RATE], x[:, SURGE], x[:, SWAY]
    t_l, t_r = thrust[:, 0], thrust[:, 1]
    cy, sy = np.cos(yaw), np.sin(yaw)
    cr, sr = np.cos(r * dt), np.sin(r * dt)
    F = np.zeros((w, N_STATE, N_STATE))
    F[:, YAW, YAW] = 1.0
    F[:, YAW, YAW_RATE] = dt
    F[:, YAW_RATE, YAW_RATE] = 1.0 - dt * (c[C2] + 2.0 * c[C3] * np.abs(r))
    F[:, YAW_RATE, SURGE] = -2.0 * dt * c[C9] * v
    F[:, YAW_RATE, SWAY] = -2.0 * dt * c[C9] * u
    F[:, NORTH, YAW] = -dt * (u * sy + v * cy)
    F[:, NORTH, NORTH] = 1.0
    F[:, NORTH, SURGE] = dt * cy
    F[:, NORTH, SWAY] = -dt * sy
    F[:, EAST, YAW] = dt * (u * cy - v * sy)
    F[:, EAST, EAST] = 1.0
    F[:, EAST, SURGE] = dt * sy
    F[:, EAST, SWAY] = dt * cy
    F[:, SURGE, YAW_RATE] = dt * (v * cr - u * sr)
    F[:, SURGE, SURGE] = cr - dt * (c[C5] + 2.0 * c[C6] * np.abs(u))
    F[:, SURGE, SWAY] = sr
    F[:, SWAY, YAW_RATE] = -dt * (v * sr + u * cr)
    F[:, SWAY, SURGE] = -sr
    F[:, SWAY, SWAY] = cr - dt * (c[C7] + 2.0 * c[C8] * np.abs(v))
    J = np.zeros((w, N_STATE, N_PARAM))
    J[:, YAW_RATE, C1] = -dt * (t_l - t_r) / (c[C1] * c[C1])
    J[:, YAW_RATE, C2] = -dt * r
    J[:, YAW_RATE, C3] = -dt * r * np.abs(r)
    J[:, YAW_RATE, C9] = -2.0 * dt * u * v
    J[:, SURGE, C4] = -dt * (t_l + t_r) / (c[C4] * c[C4])
    J[:, SURGE, C5] = -dt * u
    J[:, SURGE, C6] = -dt * u * np.abs(u)
    J[:, SWAY, C7] = -dt * v
    J[:, SWAY, C8] = -dt * v * np.abs(v)
    return F, J


def rollout(c, seeds, windows):
    """(W, L, 6) states of the open-loop rollouts: row 0 the seeds, row k after k steps."""
    thrust, dt = windows["thrust_n"], windows["dt_s"]
    rows = thrust.shape[1]
    x = np.array(seeds, dtype=float)
    out = np.empty((x.shape[0], rows, N_STATE))
    out[:, 0] = x
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(rows - 1):
            x = step_np(x, thrust[:, k], c, dt[:, k])
            out[:, k + 1] = x
    return out


def _step_with_sensitivities(X, S, t_l, t_r, dt, c):
    """One model step of the states X (6, W) and their sensitivities S = dX/dc (6, 9, W), transposed so
    that each slot is one contiguous array: X' = step(X), S' = F S + J (F, J as :func:`jacobians_np`,
    applied through their sparsity)."""
    yaw, r, n, e, u, v = X
    rdt = r * dt
    cy, sy, cr, sr = np.cos(yaw), np.sin(yaw), np.cos(rdt), np.sin(rdt)
    ar, au, av = np.abs(r), np.abs(u), np.abs(v)
    dtc, dts = dt * cy, dt * sy
    Xn = np.empty_like(X)
    Xn[YAW] = yaw + rdt
    Xn[YAW_RATE] = r + dt * ((t_l - t_r) / c[C1] - c[C2] * r - c[C3] * r * ar - 2.0 * c[C9] * u * v)
    Xn[NORTH] = n + dtc * u - dts * v
    Xn[EAST] = e + dts * u + dtc * v
    Xn[SURGE] = u * cr + v * sr + dt * ((t_l + t_r) / c[C4] - c[C5] * u - c[C6] * u * au)
    Xn[SWAY] = v * cr - u * sr + dt * (-c[C7] * v - c[C8] * v * av)
    s_y, s_r, s_n, s_e, s_u, s_v = S
    Sn = np.empty_like(S)
    Sn[YAW] = s_y + dt * s_r
    Sn[YAW_RATE] = (1.0 - dt * (c[C2] + 2.0 * c[C3] * ar)) * s_r - (2.0 * c[C9]) * dt * (v * s_u + u * s_v)
    Sn[NORTH] = s_n - dt * (u * sy + v * cy) * s_y + dtc * s_u - dts * s_v
    Sn[EAST] = s_e + dt * (u * cy - v * sy) * s_y + dts * s_u + dtc * s_v
    Sn[SURGE] = dt * (v * cr - u * sr) * s_r + (cr - dt * (c[C5] + 2.0 * c[C6] * au)) * s_u + sr * s_v
    Sn[SWAY] = -dt * (v * sr + u * cr) * s_r - sr * s_u + (cr - dt * (c[C7] + 2.0 * c[C8] * av)) * s_v
    Sn[YAW_RATE, C1] -= dt * (t_l - t_r) / (c[C1] * c[C1])
    Sn[YAW_RATE, C2] -= dt * r
    Sn[YAW_RATE, C3] -= dt * r * ar
    Sn[YAW_RATE, C9] -= 2.0 * dt * u * v
    Sn[SURGE, C4] -= dt * (t_l + t_r) / (c[C4] * c[C4])
    Sn[SURGE, C5] -= dt * u
    Sn[SURGE, C6] -= dt * u * au
    Sn[SWAY, C7] -= dt * v
    Sn[SWAY, C8] -= dt * v * av
    return Xn, Sn


def loss_and_grad(c, seeds, windows, fit_idx=None, gn_diagonal=False, gn_matrix=False):
    """(objective, d objective/dc over ``fit_idx`` (default all nine)): the MSE (m^2) of the rollouts
    against the withheld fixes, plus, when ``windows`` carries ``heading_weight`` w > 0 (m^2/rad^2), w times
    the mean squared (wrapped) yaw error against the logged headings ``target_yaw_rad`` where ``yaw_mask``
    (an addition of ours: the paper's loss is the position MSE alone). With ``gn_diagonal`` also the
    Gauss-Newton diagonal (the curvature scale per constant), with ``gn_matrix`` instead the whole
    Gauss-Newton matrix, 2/N sum J^T J over the residuals (weights included)."""
    mode = "matrix" if gn_matrix else ("diagonal" if gn_diagonal else None)
    return combine_sums([loss_sums(c, seeds, windows, mode)], fit_idx, mode)


def loss_sums(c, seeds, windows, curvature=None):
    """The raw sums behind :func:`loss_and_grad` over these windows, so that the windows can be split into
    parts evaluated apart (another process) and combined by :func:`combine_sums`: a dict of ``pos`` (sum of
    squared position residuals, m^2), ``n_pos`` (withheld fixes), ``yaw`` (sum of squared yaw residuals,
    rad^2, 0 without the heading term), ``n_yaw``, ``weight`` (w), the gradients ``g_pos``, ``g_yaw`` (9,) of
    the two sums and, with ``curvature`` "diagonal" or "matrix", their Gauss-Newton diagonals ``d_pos``,
    ``d_yaw`` (9,) or matrices ``h_pos``, ``h_yaw`` (9, 9)."""
    c = [float(v) for v in c]
    thrust, dt, mask = windows["thrust_n"], windows["dt_s"], windows["mask"]
    t_l = np.ascontiguousarray(thrust[:, :, 0].T)
    t_r = np.ascontiguousarray(thrust[:, :, 1].T)
    dt_t = np.ascontiguousarray(dt.T)
    w = float(windows.get("heading_weight", 0.0) or 0.0)
    yaw = None
    if w > 0 and "yaw_mask" in windows and windows["yaw_mask"].any():
        yaw = (windows["yaw_mask"].T, windows["target_yaw_rad"].T)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _sums(c, seeds, t_l, t_r, dt_t, mask.T, windows["target_ne_m"][:, :, 0].T,
                    windows["target_ne_m"][:, :, 1].T, thrust.shape[1], curvature, yaw)
    out["n_pos"] = int(mask.sum())
    out["n_yaw"] = int(windows["yaw_mask"].sum()) if yaw is not None else 0
    out["weight"] = w if yaw is not None else 0.0
    return out


def combine_sums(parts, fit_idx=None, curvature=None):
    """(objective, gradient over ``fit_idx``[, GN diagonal or matrix]) from the :func:`loss_sums` of a
    partition of the windows: position MSE + w * yaw MSE over all parts (m^2), the counts and sums added
    in the order of ``parts``."""
    fit_idx = list(range(N_PARAM)) if fit_idx is None else list(fit_idx)
    n_pos = sum(p["n_pos"] for p in parts)
    n_yaw = sum(p["n_yaw"] for p in parts)
    w = max(p["weight"] for p in parts)
    a = w / float(n_yaw) if n_yaw and w > 0 else 0.0     # yaw sums per unit of the position MSE
    f = sum(p["pos"] for p in parts) / n_pos + a * sum(p["yaw"] for p in parts)
    g = (sum(p["g_pos"] for p in parts) / n_pos + a * sum(p["g_yaw"] for p in parts))[fit_idx]
    if curvature == "diagonal":
        d = sum(p["d_pos"] for p in parts) / n_pos + a * sum(p["d_yaw"] for p in parts)
        return f, g, d[fit_idx]
    if curvature == "matrix":
        h = sum(p["h_pos"] for p in parts) / n_pos + a * sum(p["h_yaw"] for p in parts)
        return f, g, h[np.ix_(fit_idx, fit_idx)]
    return f, g


def _sums(c, seeds, t_l, t_r, dt_t, mask_t, target_n, target_e, rows, curvature, yaw=None):
    X = np.array(seeds, dtype=float).T.copy()
    S = np.zeros((N_STATE, N_PARAM, X.shape[1]))
    pos, g_pos, g_yaw = 0.0, np.zeros(N_PARAM), np.zeros(N_PARAM)
    yaw_sum = 0.0
    diag = curvature == "diagonal"
    matrix = curvature == "matrix"
    shape = (N_PARAM, N_PARAM) if matrix else N_PARAM
    c_pos, c_yaw = np.zeros(shape), np.zeros(shape)
    # rows where every window has a target: plain slices instead of boolean indexing (the same values)
    every = slice(None)
    pos_any, pos_all = mask_t.any(axis=1), mask_t.all(axis=1)
    if yaw is not None:
        yaw_mask_t, target_yaw = yaw
        yaw_any, yaw_all = yaw_mask_t.any(axis=1), yaw_mask_t.all(axis=1)
    for k in range(rows - 1):
        X, S = _step_with_sensitivities(X, S, t_l[k], t_r[k], dt_t[k], c)
        if pos_any[k + 1]:
            m = every if pos_all[k + 1] else mask_t[k + 1]
            res_n = X[NORTH, m] - target_n[k + 1, m]
            res_e = X[EAST, m] - target_e[k + 1, m]
            pos += float(res_n @ res_n + res_e @ res_e)
            s_n, s_e = S[NORTH][:, m], S[EAST][:, m]
            g_pos += 2.0 * (s_n @ res_n + s_e @ res_e)
            if diag:
                c_pos += 2.0 * ((s_n * s_n).sum(axis=1) + (s_e * s_e).sum(axis=1))
            if matrix:
                c_pos += 2.0 * (s_n @ s_n.T + s_e @ s_e.T)
        if yaw is not None and yaw_any[k + 1]:
            my = every if yaw_all[k + 1] else yaw_mask_t[k + 1]
            res_y = np.mod(X[YAW, my] - target_yaw[k + 1, my] + math.pi, 2.0 * math.pi) - math.pi
            s_y = S[YAW][:, my]
            yaw_sum += float(res_y @ res_y)
            g_yaw += 2.0 * (s_y @ res_y)
            if diag:
                c_yaw += 2.0 * (s_y * s_y).sum(axis=1)
            if matrix:
                c_yaw += 2.0 * (s_y @ s_y.T)
    out = {"pos": pos, "yaw": yaw_sum, "g_pos": g_pos, "g_yaw": g_yaw}
    if diag:
        out["d_pos"], out["d_yaw"] = c_pos, c_yaw
    if matrix:
        out["h_pos"], out["h_yaw"] = c_pos, c_yaw
    return out


def loss(c, seeds, windows):
    """The position MSE (m^2) alone (no heading term), without sensitivities."""
    states = rollout(c, seeds, windows)
    res = states[..., (NORTH, EAST)] - windows["target_ne_m"]
    m = windows["mask"]
    return float((res[m] ** 2).sum() / m.sum())


def endpoint_errors(c, seeds, windows, horizons_s=(1.0, 2.0, 3.0, 4.0, 5.0)):
    """{horizon_s: (W,) position error (m) at the last withheld fix at or before that horizon}; NaN for
    a window with no fix in reach."""
    states = rollout(c, seeds, windows)
    err = np.linalg.norm(states[..., (NORTH, EAST)] - windows["target_ne_m"], axis=-1)
    elapsed = np.cumsum(windows["dt_s"], axis=1) - windows["dt_s"]
    out = {}
    for h in horizons_s:
        ok = windows["mask"] & (elapsed <= h + 1e-9)
        last = np.where(ok.any(axis=1), ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1), -1)
        out[h] = np.where(last >= 0, err[np.arange(len(last)), np.maximum(last, 0)], np.nan)
    return out


class _Problem:
    """The loss over scaled, selected constants: theta = c[fit_idx] / scale[fit_idx]. ``scale``: None for
    the Gauss-Newton scale at ``c0`` (1 / sqrt of the curvature diagonal, so that every scaled constant
    moves the loss alike), or 9 numbers. ``parts``: None, or a callable ``parts(c, curvature)`` giving the
    :func:`loss_sums` of a partition of ``windows`` (e.g. halves evaluated in two processes)."""

    def __init__(self, c0, seeds, windows, fit_idx, scale, parts=None):
        self.c0 = np.array(c0, dtype=float)
        self.seeds = seeds
        self.windows = windows
        self.fit_idx = list(range(N_PARAM)) if fit_idx is None else list(fit_idx)
        self.parts = parts or (lambda c, curvature: [loss_sums(c, seeds, windows, curvature)])
        self.evals = 0
        if scale is None:
            _, _, diag = combine_sums(self.parts(self.c0, "diagonal"), self.fit_idx, "diagonal")
            self.evals += 1
            sc = np.where(diag > 0, 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)), 1.0)
        else:
            sc = np.array(scale, dtype=float)[self.fit_idx]
        self.scale = np.where(sc > 0, sc, 1.0)

    def params(self, theta):
        c = self.c0.copy()
        c[self.fit_idx] = np.asarray(theta) * self.scale
        return c

    def theta0(self):
        return self.c0[self.fit_idx] / self.scale

    def bounds(self):
        return [(None if LOWER[i] is None else LOWER[i] / s, None) for i, s in zip(self.fit_idx, self.scale)]

    def project(self, theta):
        out = np.array(theta, dtype=float)
        for k, (lo, _) in enumerate(self.bounds()):
            if lo is not None and out[k] < lo:
                out[k] = lo
        return out

    def __call__(self, theta):
        self.evals += 1
        f, g = combine_sums(self.parts(self.params(theta), None), self.fit_idx)
        if not (math.isfinite(f) and np.all(np.isfinite(g))):
            return DIVERGED_LOSS, np.zeros(len(self.fit_idx))     # constants whose rollouts blow up
        return f, g * self.scale


def fit_gradient_descent(c0, seeds, windows, fit_idx=None, scale=None, iterations=100, step=0.5, tol=1e-9,
                         parts=None):
    """The paper's fit by gradient descent: accelerated (Nesterov, with a restart whenever the loss rises)
    projected gradient descent on the scaled constants, the step from a backtracking line search
    (sufficient decrease f(y - s g) <= f(y) - s/2 |g|^2 after projection) and grown 1.2x after each
    iteration. Stops after ``iterations`` or when the loss improves by less than ``tol`` (relative)
    over 5 iterations. ``parts``: as :class:`_Problem`. Returns {"params": 9 constants, "loss": MSE,
    "history": [MSE per iteration], "evals": loss evaluations}."""
    prob = _Problem(c0, seeds, windows, fit_idx, scale, parts)
    theta = prob.theta0()
    f, g = prob(theta)
    y, f_y, g_y = theta, f, g
    t = 1.0
    history = [f]
    for _ in range(iterations):
        for _ in range(40):
            trial = prob.project(y - step * g_y)
            f_t, g_t = prob(trial)
            if f_t <= f_y - 0.5 * float(g_y @ (y - trial)):
                break
            step *= 0.5
        if f_t > f:                                   # momentum overshot: restart from the best point
            y, f_y, g_y, t = theta, f, g, 1.0
            continue
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = prob.project(trial + (t - 1.0) / t_next * (trial - theta))
        theta, f, g, t = trial, f_t, g_t, t_next
        f_y, g_y = prob(y)
        history.append(f)
        step *= 1.2
        if len(history) > 5 and history[-6] - f < tol * history[-6]:
            break
    return {"params": [float(v) for v in prob.params(theta)], "loss": f, "history": history, "evals": prob.evals}


def fit_lbfgsb(c0, seeds, windows, fit_idx=None, scale=None, iterations=200, tol=1e-10, parts=None):
    """The quasi-Newton baseline: scipy's L-BFGS-B on the same scaled loss and exact gradient, with the
    constants' bounds, starting from ``c0`` (the warm start of the alternation's rounds). ``parts``: as
    :class:`_Problem`. Same result dict as :func:`fit_gradient_descent` (plus ``message``)."""
    from scipy.optimize import minimize
    prob = _Problem(c0, seeds, windows, fit_idx, scale, parts)
    history = []

    def fun(theta):
        f, g = prob(theta)
        history.append(f)
        return f, g
    res = minimize(fun, prob.theta0(), jac=True, method="L-BFGS-B", bounds=prob.bounds(),
                   options={"maxiter": iterations, "ftol": tol, "gtol": 1e-10})
    return {"params": [float(v) for v in prob.params(res.x)], "loss": float(res.fun), "history": history,
            "evals": prob.evals, "message": str(res.message)}


def standard_errors(c, seeds, windows, fit_idx=None):
    """Approximate 1-sigma of the fitted constants from the Gauss-Newton matrix at ``c``: with N withheld
    fixes and white GNSS noise, Cov(c) ~ MSE / N * H^-1, H = 2/N sum (dp/dc)^T (dp/dc) (seed errors
    ignored). A list over ``fit_idx`` (default all nine); inf where the matrix is singular."""
    fit_idx = list(range(N_PARAM)) if fit_idx is None else list(fit_idx)
    mse, _, H = loss_and_grad(c, seeds, windows, fit_idx, gn_matrix=True)
    n = int(windows["mask"].sum())
    try:
        cov = np.linalg.inv(H) * mse / n
    except np.linalg.LinAlgError:
        return [math.inf] * len(fit_idx)
    return [float(math.sqrt(v)) if v > 0 else math.inf for v in np.diag(cov)]


def relative_errors(fitted, truth, names=vm.PARAM_NAMES):
    """{name: |fitted - truth| / |truth|} (NaN where the truth is 0)."""
    out = {}
    for i, name in enumerate(vm.PARAM_NAMES):
        if name in names:
            out[name] = abs(fitted[i] - truth[i]) / abs(truth[i]) if truth[i] != 0 else math.nan
    return out
