"""Recursive least squares fit of the vessel constants: the online estimator the RobotX AAVS paper tried
first and found unstable (III-B: "an online recursive least squares estimator ... proved unstable").

The model's velocity equations (robotx eqs. 2, 5, 6 as ``onboard.vessel.model.step``, NED/FRD) are
linear in a re-parameterisation theta of the constants. Over ``stride`` rows from row k - s to row k
(h = t_k - t_{k-s}, thrusts averaged over those rows; s = 1 is the model's own step, exact):

    (r_k - r_{k-s}) / h                              = [T_l - T_r, -r, -r|r|, -2uv] . [1/c1, c2, c3, c9]  (eq. 2)
    (u_k - u cos(r h) - v sin(r h)) / h              = [T_l + T_r, -u, -u|u|]       . [1/c4, c5, c6]      (eq. 5)
    (v_k - v cos(r h) + u sin(r h)) / h              = [-v, -v|v|]                  . [c7, c8]            (eq. 6)

(regressors at row k - s). Three RLS estimators with exponential forgetting ``forgetting`` (lambda)
track the three thetas:

    K = P phi / (lambda + phi^T P phi),  theta += K (y - phi^T theta),  P = (P - K phi^T P) / lambda.

Online (:func:`rls_fit` without ``states``): the states are the boat EKF's (``ekf_seeds.ekf_states``),
and the EKF predicts with the RLS's current constants, the coupling an online estimator has (the EKF
keeps the last physical constants while the RLS's are not). Offline (``states`` given, e.g. the truth
vessel's): the same regressions on those states, no feedback.

Divergence: the constants leave the physical range (an inertia c1, c4 <= 0 or infinite, a damping
c2, c3, c5..c8 < -``DAMPING_TOL``, anything non-finite); the result says whether and when that first happened.
"""
import math

import numpy as np

from harness.training.boat_fit.ekf_seeds import ekf_states
from onboard.vessel import model as vm

C1, C2, C3, C4, C5, C6, C7, C8, C9 = (vm.C1, vm.C2, vm.C3, vm.C4, vm.C5, vm.C6, vm.C7, vm.C8, vm.C9)
YAW, YAW_RATE, SURGE, SWAY = vm.YAW, vm.YAW_RATE, vm.SURGE, vm.SWAY

# A damping above -DAMPING_TOL (1/s, 1/m or 1/rad) counts as physical (zero): from a prior of 0 (c3, c8)
# the estimates pass slightly below 0 while the data hardly excite them.
DAMPING_TOL = 0.01

# The three regressions: (name, [(constant slot, inverted?)] in theta order, theta floors for P0). A theta
# entry is 1/c for an inertia (inverted) and c itself for a damping or c9.
GROUPS = (
    ("yaw", ((C1, True), (C2, False), (C3, False), (C9, False)), (1e-3, 0.5, 0.5, 0.05)),
    ("surge", ((C4, True), (C5, False), (C6, False)), (1e-3, 0.2, 0.2)),
    ("sway", ((C7, False), (C8, False)), (0.2, 0.2)),
)


class Rls:
    """One recursive least squares estimator with exponential forgetting (module docstring)."""

    def __init__(self, theta0, p0_diag, forgetting):
        self.theta = np.array(theta0, dtype=float)
        self.P = np.diag(np.asarray(p0_diag, dtype=float))
        self.lam = float(forgetting)
        self.updates = 0

    def update(self, phi, y):
        phi = np.asarray(phi, dtype=float)
        Pphi = self.P @ phi
        denom = self.lam + float(phi @ Pphi)
        if not (math.isfinite(denom) and denom > 0.0 and math.isfinite(y)):
            return False
        K = Pphi / denom
        self.theta = self.theta + K * (y - float(phi @ self.theta))
        self.P = (self.P - np.outer(K, Pphi)) / self.lam
        self.P = 0.5 * (self.P + self.P.T)
        self.updates += 1
        return True


def physical(c):
    """True when the nine constants are finite, c1, c4 > 0 and every damping >= -``DAMPING_TOL``."""
    if not all(math.isfinite(v) for v in c):
        return False
    return c[C1] > 0 and c[C4] > 0 and all(c[i] >= -DAMPING_TOL for i in (C2, C3, C5, C6, C7, C8))


def _theta_of(c, slots):
    return [(1.0 / c[i] if inv else c[i]) for i, inv in slots]


def _params_of(estimators, c_prev):
    c = list(c_prev)
    for (_, slots, _), est in zip(GROUPS, estimators):
        for (i, inv), th in zip(slots, est.theta):
            c[i] = (1.0 / th if th != 0.0 else math.inf) if inv else float(th)
    return c


def regressors(x0, x1, thrust_lr, h):
    """[(phi, y)] of the three regressions (module docstring) between states x0 and x1 (model slots) h
    seconds apart under the mean thrusts ``thrust_lr`` (N)."""
    r, u, v = x0[YAW_RATE], x0[SURGE], x0[SWAY]
    t_l, t_r = thrust_lr
    cr, sr = math.cos(r * h), math.sin(r * h)
    return ((np.array([t_l - t_r, -r, -r * abs(r), -2.0 * u * v]), (x1[YAW_RATE] - r) / h),
            (np.array([t_l + t_r, -u, -u * abs(u)]), (x1[SURGE] - u * cr - v * sr) / h),
            (np.array([-v, -v * abs(v)]), (x1[SWAY] - v * cr + u * sr) / h))


class _Tracker:
    """The RLS run over the rows of a log; ``row(i, x)`` takes row i's state estimate."""

    def __init__(self, log, c0, forgetting, stride, p0_rel, record_s, warmup_s):
        self.t = np.asarray(log["time_s"], dtype=float)
        self.start_s = (self.t[0] if len(self.t) else 0.0) + warmup_s
        self.thrust = np.stack([np.asarray(log["thrust_left_n"], float), np.asarray(log["thrust_right_n"], float)],
                               axis=1)
        self.stride = int(stride)
        self.c = list(c0)
        self.physical_c = list(c0)
        self.estimators = []
        for _, slots, floors in GROUPS:
            th = _theta_of(c0, slots)
            self.estimators.append(Rls(th, [(p0_rel * max(abs(a), f)) ** 2 for a, f in zip(th, floors)], forgetting))
        self.states = {}
        self.record_s = record_s
        self.next_record_s = self.t[0] if len(self.t) else 0.0
        self.rec_t, self.rec_c, self.rec_trace = [], [], []
        self.diverged_at_s = None
        self.reason = None
        self.unphysical_rows = 0
        self.rows = 0

    def row(self, i, x):
        if x is None or self.t[i] < self.start_s or not all(math.isfinite(v) for v in x):
            self.states.pop(i - self.stride, None)
            return
        self.states[i] = list(x)
        x0 = self.states.pop(i - self.stride, None)
        if x0 is not None:
            h = float(self.t[i] - self.t[i - self.stride])
            thr = self.thrust[i - self.stride:i].mean(axis=0)
            for est, (phi, y) in zip(self.estimators, regressors(x0, x, thr, h)):
                est.update(phi, y)
            self.rows += 1
            self.c = _params_of(self.estimators, self.c)
            if physical(self.c):
                self.physical_c = list(self.c)
            else:
                self.unphysical_rows += 1
                if self.diverged_at_s is None:
                    self.diverged_at_s = float(self.t[i] - self.t[0])
                    self.reason = _reason(self.c)
        if self.t[i] >= self.next_record_s:
            self.next_record_s += self.record_s
            self.rec_t.append(float(self.t[i] - self.t[0]))
            self.rec_c.append(list(self.c))
            self.rec_trace.append([float(np.trace(e.P)) for e in self.estimators])


def _reason(c):
    bad = [name for name, v in zip(vm.PARAM_NAMES, c) if not math.isfinite(v)]
    if bad:
        return "%s not finite" % ", ".join(bad)
    if c[C1] <= 0 or c[C4] <= 0:
        return "inertia <= 0 (%s)" % ", ".join("%s %.3g" % (vm.PARAM_NAMES[i], c[i]) for i in (C1, C4) if c[i] <= 0)
    return "negative damping (%s)" % ", ".join("%s %.3g" % (vm.PARAM_NAMES[i], c[i])
                                                for i in (C2, C3, C5, C6, C7, C8) if c[i] < -DAMPING_TOL)


def rls_fit(log, c0=None, states=None, forgetting=0.999, stride=1, p0_rel=1.0, ekf=None, record_s=1.0,
            warmup_s=10.0):
    """Run the RLS over ``log`` (the columns of ``harness.training.boat_fit``) from the constants ``c0``
    (default the VRX priors), its updates starting ``warmup_s`` after the log's start (the EKF's settling
    time). ``states``: (rows, 6) state estimates to regress on (offline); None: the
    online estimator coupled to the boat EKF (``ekf``: its settings). Returns {"diverged": bool,
    "diverged_at_s": first time (s from the log start) the constants left the physical range or None,
    "reason", "unphysical_fraction" (of the updates), "params": the last constants, "last_physical":
    the last physical ones, "t_s" (record times), "history" (records, 9) constants, "p_trace" (records,
    3) trace of P per regression, "updates", "ekf_counters" (online only)}. ValueError unless ``stride`` is a
    whole number >= 1, 0 < ``forgetting`` <= 1, ``p0_rel`` > 0 and ``record_s`` > 0."""
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError("rls_fit: stride must be a whole number of rows >= 1, got %r" % (stride,))
    for label, value in (("forgetting", forgetting), ("p0_rel", p0_rel), ("record_s", record_s)):
        if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0):
            raise ValueError("rls_fit: %s must be a number > 0, got %r" % (label, value))
    if forgetting > 1:
        raise ValueError("rls_fit: forgetting must lie in (0, 1], got %r" % (forgetting,))
    c0 = list(vm.params_from() if c0 is None else c0)
    tr = _Tracker(log, c0, forgetting, stride, p0_rel, record_s, warmup_s)
    counters = None
    if states is None:
        def on_row(i, f):
            tr.row(i, f.x if f.initialized else None)
            if physical(tr.c):
                f.params = list(tr.c)
            elif f.params != tr.physical_c:
                f.params = list(tr.physical_c)
        _, counters = ekf_states(log, ekf=ekf, params=c0, on_row=on_row)
    else:
        states = np.asarray(states, dtype=float)
        for i in range(len(states)):
            tr.row(i, list(states[i]))
    return {"diverged": tr.diverged_at_s is not None, "diverged_at_s": tr.diverged_at_s, "reason": tr.reason,
            "unphysical_fraction": tr.unphysical_rows / float(max(tr.rows, 1)), "params": tr.c,
            "last_physical": tr.physical_c, "t_s": np.array(tr.rec_t), "history": np.array(tr.rec_c),
            "p_trace": np.array(tr.rec_trace), "updates": tr.rows, "ekf_counters": counters}
