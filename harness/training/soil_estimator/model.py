"""The learned soil estimator's network and its physics-informed loss, in torch (training only).

Soil paper section 2.1, Fig. 3, eqs. 5-11 (reading aid ``shared/papers/notes/soil.md`` section 2.4 and
decisions A6, A9): a network maps the window's inputs (``onboard.soil.learned_estimator``: kinematics,
action history, extracted geometry; not the force) to the five soil properties and their log-variances,
the failure angle's residuals, the geometry's residual corrections and a residual force; the force is
predicted through the FEE (a torch port of ``onboard.soil.fee_numpy``: eqs. 1, 2, 4) and the loss is
eq. 10:

    L = lambda_F  wMAE(F, F_hat; w_xz = [1, 0.5])                       (F_hat = F^FEE(Theta_hat) + F^r)
      + lambda_NLL NLL(F, F_hat, Sigma_F)     gradient only into S_Theta  (eqs. 5-8, per sample 2x2 blocks, A9)
      + lambda_beta MAE(0, d ln N_gamma / d beta) gradient only into beta (beta = beta0 (eq. 11) + beta_res)
      + lambda_res  MSE(0, theta_res / bound)                           (depth and surcharge corrections)
      + lambda_Fr   wMAE(0, F^r)

with Sigma_F = J Sigma_Theta J^T + R (eq. 7; R = diag((0.02 |F| + 200 N)^2), the sensor's noise floor that
makes a 2x2 block invertible, A9), J = d F^FEE / d Theta per horizon point (autograd), and Sigma_Theta =
max(exp(S_Theta), diag(N Sigma^a N^T)) (eq. 9 with notes A6: N = I - J^+ J of the horizon's stacked
Jacobian in prior-sigma units whitened by the noise, singular values below ``atol`` null; Sigma^a the
prior's variances). The properties are bounded to the presets' ranges by a sigmoid, so the paper's range
terms (L_ReLU) are not needed. Points where the FEE is not valid are left out of every term but F^r's.

The output decoding matches ``onboard.soil.learned_estimator.decode`` exactly; :func:`export_layers` gives
the NumPy inference its weights.
"""
import math

import torch

from onboard.soil import learned_estimator as le
from onboard.soil.fee import DEFAULTS as FEE_LIMITS
from onboard.soil.fee import N_U

SAFE_RHO_RAD = 0.5      # the rake a point outside the FEE's domain is evaluated at (masked out; any valid value)
LOSS_DEFAULTS = {"lambda_f": 1.0, "lambda_nll": 0.05, "lambda_beta": 0.1, "lambda_res": 0.01, "lambda_fr": 0.1,
                 "w_xz": [1.0, 0.5], "force_scale_n": 10000.0, "noise_rel": 0.02, "noise_abs_n": 200.0,
                 "eq9_atol": 2.0, "eq9_rtol": 1e-4, "correlated_samples": 6.0,
                 # True: the wMAE of a window divided by its mean |F| (+ 1 kN) instead of force_scale_n
                 "relative_force": False}


# ---- the FEE in torch (soil paper eqs. 1, 2, 4, 11; the same expressions as onboard.soil.fee_numpy) ----

def _cot(x):
    return torch.cos(x) / torch.sin(x)


def beta_eq11(phi_rad):
    """beta0 = pi/4 - phi/2 (eq. 11)."""
    return 0.25 * math.pi - 0.5 * phi_rad


def n_factors(alpha, rho, beta, phi, delta):
    """(N_gamma, N_c, N_Q, N_ca) of eq. 4."""
    eta = delta + rho + phi + beta
    s_eta = torch.sin(eta)
    s_u = torch.sin(alpha + phi + beta)
    n_gamma = (_cot(rho) + _cot(beta)) * s_u / (2.0 * s_eta)
    n_q = s_u / s_eta
    n_c = torch.cos(phi) / (torch.sin(beta) * s_eta)
    n_ca = -torch.cos(rho + phi + beta) / (torch.sin(rho) * s_eta)
    return n_gamma, n_c, n_q, n_ca


def force_from_beta(theta_u, theta_k, beta, depth_sq_m2=None):
    """(f, fx, fz) of eqs. 1 and 2 (``fee_numpy.force_from_beta``): ``theta_u`` (c, phi, gamma, c_a, delta)
    and ``theta_k`` (alpha, rho, d, w, Q) sequences of broadcastable tensors."""
    c, phi, gamma, ca, delta = theta_u
    alpha, rho, d, w, q = theta_k
    n_gamma, n_c, n_q, n_ca = n_factors(alpha, rho, beta, phi, delta)
    d2 = d * d if depth_sq_m2 is None else depth_sq_m2
    f = gamma * d2 * w * n_gamma + c * d * w * n_c + q * n_q + ca * d * w * n_ca
    psi = rho + delta - alpha
    return f, f * torch.sin(psi), f * torch.cos(psi)


def dlog_n_gamma_dbeta(alpha, rho, beta, phi, delta):
    """d ln N_gamma / d beta (eq. 4; ``fee_numpy.dlog_n_gamma_dbeta``)."""
    a = _cot(rho) + _cot(beta)
    s_b = torch.sin(beta)
    return -1.0 / (s_b * s_b * a) + _cot(alpha + phi + beta) - _cot(delta + rho + phi + beta)


# ---- the network ----

class SoilNet(torch.nn.Module):
    """An MLP (tanh hidden layers) from the standardised input to the raw head of
    ``learned_estimator.output_size(horizon)`` values."""

    def __init__(self, n_in, horizon, hidden=(128, 128)):
        super().__init__()
        sizes = [n_in] + list(hidden) + [le.output_size(horizon)]
        self.linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.horizon = horizon

    def forward(self, x):
        h = x
        for i, lin in enumerate(self.linears):
            h = lin(h)
            if i < len(self.linears) - 1:
                h = torch.tanh(h)
        return h


def decode(out, lo, hi, horizon):
    """The torch twin of ``learned_estimator.decode`` (same bounds and squashing)."""
    span = hi - lo
    lv_lo = 2.0 * torch.log(le.SIGMA_MIN_FRACTION * span)
    lv_hi = 2.0 * torch.log(span)
    p = horizon
    return {"theta": lo + span * torch.sigmoid(out[:, 0:N_U]),
            "logvar": lv_lo + (lv_hi - lv_lo) * torch.sigmoid(out[:, N_U:2 * N_U]),
            "beta_res_rad": le.BETA_RES_MAX_RAD * torch.tanh(out[:, 2 * N_U:2 * N_U + p]),
            "depth_res_m": le.DEPTH_RES_MAX_M * torch.tanh(out[:, 2 * N_U + p]),
            "surcharge_rel": le.SURCHARGE_RES_MAX * torch.tanh(out[:, 2 * N_U + p + 1]),
            "residual_force_n": le.FORCE_RES_MAX_N * torch.tanh(out[:, 2 * N_U + p + 2:2 * N_U + p + 4])}


def export_layers(net):
    """[(W, b)] float64 NumPy arrays of the network's layers (``learned_estimator.mlp_forward``)."""
    return [(lin.weight.detach().double().numpy().copy(), lin.bias.detach().double().numpy().copy())
            for lin in net.linears]


# ---- the physics-informed prediction and loss ----

def predict_force(theta, geometry, beta_res, depth_res, surcharge_rel, residual_force):
    """(fx, fz, beta, valid, parts) over the horizon: F^FEE + F^r with the corrected geometry; ``theta``
    (B, 5), ``geometry`` (B, P, 6: alpha, rho, d, rms d, w, Q), residuals (B, P), (B,), (B,), (B, 2).
    beta = beta0(phi) + beta_res kept inside the admissible interval. A point is valid where the FEE is
    (``onboard.soil.fee_numpy.valid_mask``, the inference's rule: finite geometry, |alpha| <= alpha_abs_max,
    rho_min <= rho <= rho_max, d, w, Q >= 0, an admissible beta, sin(alpha + phi + beta) > 0) and the force is
    finite; at a point whose geometry is outside the domain the FEE is evaluated at stand-in values (alpha 0,
    rho ``SAFE_RHO_RAD``, d = w = Q = 0), so that no infinity there (cot(0) at rho = 0) turns the masked-out
    point's zero gradient into NaN (0 * inf) in every weight of the network."""
    lim = FEE_LIMITS
    alpha, rho, d, drms, w, q = (geometry[..., i] for i in range(6))
    cut = d > 0.0
    dr = depth_res[:, None]
    d2 = torch.where(cut, torch.clamp(drms * drms + 2.0 * dr * d + dr * dr, min=0.0), drms * drms)
    d_hat = torch.where(cut, torch.clamp(d + dr, min=0.0), d)
    q_hat = q * (1.0 + surcharge_rel[:, None])
    c, phi, gamma, ca, delta = (theta[:, k:k + 1] for k in range(N_U))
    rho = torch.minimum(rho, lim["eta_max_rad"] - delta - phi - 2.0 * lim["beta_min_rad"])
    geo_ok = (torch.isfinite(alpha) & torch.isfinite(rho) & torch.isfinite(d_hat) & torch.isfinite(w)
              & torch.isfinite(q_hat) & torch.isfinite(d2) & (alpha.abs() <= lim["alpha_abs_max_rad"])
              & (rho >= lim["rho_min_rad"]) & (rho <= lim["rho_max_rad"]) & (d_hat >= 0.0) & (w >= 0.0)
              & (q_hat >= 0.0))
    zero = torch.zeros_like(d_hat)
    alpha = torch.where(geo_ok, alpha, zero)
    rho = torch.where(geo_ok, rho, torch.full_like(d_hat, SAFE_RHO_RAD))
    d_hat, w, q_hat, d2 = (torch.where(geo_ok, v, zero) for v in (d_hat, w, q_hat, d2))
    beta = beta_eq11(phi) + beta_res
    hi = torch.minimum(lim["eta_max_rad"] - delta - rho - phi, 0.5 * math.pi - lim["beta_min_rad"] - alpha)
    beta = torch.clamp(torch.minimum(beta, hi - 1e-4), min=lim["beta_min_rad"])
    _f, fx, fz = force_from_beta((c, phi, gamma, ca, delta), (alpha, rho, d_hat, w, q_hat), beta, d2)
    fx = fx + residual_force[:, 0:1]
    fz = fz + residual_force[:, 1:2]
    valid = (geo_ok & (hi > lim["beta_min_rad"] + 1e-4) & (torch.sin(alpha + phi + beta) > 0.0)
             & torch.isfinite(fx) & torch.isfinite(fz))
    return fx, fz, beta, valid, (alpha, rho, d_hat, w, q_hat, d2)


def force_jacobian(theta, parts, beta):
    """J (B, P, 2, 5): d(F_x, F_z)/d Theta at every horizon point (beta held), by autograd."""
    alpha, rho, d_hat, w, q_hat, d2 = (p.detach() for p in parts)
    beta = beta.detach()
    b, p = alpha.shape
    th = theta.detach()[:, None, :].expand(b, p, N_U).clone().requires_grad_(True)
    tu = tuple(th[..., k] for k in range(N_U))
    _f, fx, fz = force_from_beta(tu, (alpha, rho, d_hat, w, q_hat), beta, d2)
    gx, = torch.autograd.grad(fx.sum(), th, retain_graph=True)
    gz, = torch.autograd.grad(fz.sum(), th)
    return torch.stack([gx, gz], dim=2)


def null_variance(jac, mask, force_n, prior_sigma, cfg, samples):
    """diag(N Sigma^a N^T) (B, 5) of eq. 9 (notes A6, A7) from the horizon's stacked Jacobian: columns in
    prior sigmas, rows whitened by the noise, the horizon standing for the window's ``samples`` (B,) with
    ``correlated_samples`` samples counting as one."""
    b, p = mask.shape
    s = cfg["noise_rel"] * force_n.abs() + cfg["noise_abs_n"]                 # (B, P, 2)
    jw = jac * prior_sigma[None, None, None, :] / s[..., None]
    jw = jw * mask[..., None, None]
    scale = torch.sqrt(samples.double() / (p * cfg["correlated_samples"]))
    jw = (jw.reshape(b, 2 * p, N_U) * scale[:, None, None].to(jw.dtype))
    _u, sv, vt = torch.linalg.svd(jw, full_matrices=False)
    cut = cfg["eq9_atol"] + cfg["eq9_rtol"] * sv[:, :1]
    keep = (sv > cut).to(jw.dtype)                                              # (B, 5)
    proj = torch.eye(N_U, dtype=jw.dtype)[None] - torch.einsum("bk,bki,bkj->bij", keep, vt, vt)
    var_a = prior_sigma ** 2
    return torch.einsum("bij,j->bi", proj * proj, var_a)


def loss_terms(net, batch, lo, hi, prior_sigma, cfg=None):
    """{total, force, nll, beta, res, fr, force_mae_pct} of eq. 10 over a batch {x, geometry, force_n,
    samples} (tensors)."""
    cfg = dict(LOSS_DEFAULTS, **(cfg or {}))
    out = decode(net(batch["x"]), lo, hi, net.horizon)
    theta = out["theta"]
    fx, fz, beta, valid, parts = predict_force(theta, batch["geometry"], out["beta_res_rad"], out["depth_res_m"],
                                               out["surcharge_rel"], out["residual_force_n"])
    f = batch["force_n"]
    mask = valid.to(theta.dtype)
    n_valid = mask.sum().clamp(min=1.0)
    wx, wz = cfg["w_xz"]
    fs = cfg["force_scale_n"]
    ex = torch.where(valid, f[..., 0] - fx, torch.zeros_like(fx))
    ez = torch.where(valid, f[..., 1] - fz, torch.zeros_like(fz))
    if cfg["relative_force"]:
        ref = ((f[..., 0].abs() + f[..., 1].abs()) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0) + 1000.0
        l_force = (((wx * ex.abs() + wz * ez.abs()) * mask).sum(dim=1) / ref).sum() / n_valid
    else:
        l_force = ((wx * ex.abs() + wz * ez.abs()) * mask).sum() / n_valid / fs
    # eqs. 5-9: Sigma_F = J Sigma_Theta J^T + R per point; gradient only into S_Theta
    jac = force_jacobian(theta, parts, beta)
    jac = torch.where(valid[..., None, None], jac, torch.zeros_like(jac))
    var_null = null_variance(jac, mask, f, prior_sigma, cfg, batch["samples"]).detach()
    var_theta = torch.maximum(torch.exp(out["logvar"]), var_null)
    jk = jac.double() / fs                  # float64: the 2x2 determinant cancels
    sig_f = torch.einsum("bpik,bk,bpjk->bpij", jk, var_theta.double(), jk)
    noise = (cfg["noise_rel"] * f.double().abs() + cfg["noise_abs_n"]) / fs
    sig_f = sig_f + torch.diag_embed(noise * noise)
    r = torch.stack([ex, ez], dim=-1).detach().double() / fs
    a, bb, d = sig_f[..., 0, 0], sig_f[..., 0, 1], sig_f[..., 1, 1]
    det = torch.clamp(a * d - bb * bb, min=1e-30)
    maha = (d * r[..., 0] ** 2 - 2.0 * bb * r[..., 0] * r[..., 1] + a * r[..., 1] ** 2) / det
    nll_pt = torch.where(valid, 0.5 * (maha + torch.log(det)), torch.zeros_like(det))
    l_nll = (nll_pt.sum() / n_valid.double()).to(theta.dtype)
    # d N_gamma / d beta -> 0, gradient only into beta
    alpha, rho = parts[0].detach(), parts[1].detach()
    phi = theta[:, 1:2].detach()
    delta = theta[:, 4:5].detach()
    lim = FEE_LIMITS                       # beta recomputed with Theta held: only beta_res moves
    hi_b = torch.minimum(lim["eta_max_rad"] - delta - rho - phi, 0.5 * math.pi - lim["beta_min_rad"] - alpha)
    beta_only = torch.clamp(torch.minimum(beta_eq11(phi) + out["beta_res_rad"], hi_b - 1e-4),
                            min=lim["beta_min_rad"])
    g = dlog_n_gamma_dbeta(alpha, rho, beta_only, phi, delta)
    l_beta = (torch.where(valid, g.abs(), torch.zeros_like(g)) * mask).sum() / n_valid
    l_res = ((out["depth_res_m"] / le.DEPTH_RES_MAX_M) ** 2 + (out["surcharge_rel"] / le.SURCHARGE_RES_MAX) ** 2).mean()
    fr = out["residual_force_n"]
    l_fr = (wx * fr[:, 0].abs() + wz * fr[:, 1].abs()).mean() / fs
    total = (cfg["lambda_f"] * l_force + cfg["lambda_nll"] * l_nll + cfg["lambda_beta"] * l_beta
             + cfg["lambda_res"] * l_res + cfg["lambda_fr"] * l_fr)
    err = (ex.abs() + ez.abs()) * mask
    mag = (f[..., 0].abs() + f[..., 1].abs()) * mask
    pct = 100.0 * err.sum() / mag.sum().clamp(min=1e-9)
    return {"total": total, "force": l_force.detach(), "nll": l_nll.detach(), "beta": l_beta.detach(),
            "res": l_res.detach(), "fr": l_fr.detach(), "force_mae_pct": pct.detach(), "out": out}
