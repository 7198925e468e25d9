"""The FEE over arrays (NumPy; CPython only): the same equations, signs and slots as :mod:`onboard.soil.fee`.

Soil paper eqs. 1, 2, 4, 9, 11 and Alg. 4 line 5. Every function broadcasts its array arguments; theta_u
and theta_k are sequences of five arrays (or numbers) in the slots of ``onboard.soil.fee`` (C, PHI, GAMMA,
CA, DELTA and ALPHA, RHO, DEPTH, WIDTH, SURCHARGE). Used by the harness and the windowed estimators,
where one call evaluates a whole cut; the pure module is the reference the tests compare this with.
"""
import numpy as np

from onboard.soil.fee import (ALPHA, CA, DEFAULTS, DEPTH, DELTA, ETA_ULP_RAD, GAMMA, HALF_PI, PHI, RHO, SURCHARGE,
                              WIDTH, C, FeeDomainError)


def _cot(x):
    return np.cos(x) / np.sin(x)


def beta_eq11(phi_rad):
    """beta0 = pi/4 - phi/2 [rad] (soil paper eq. 11)."""
    return 0.25 * np.pi - 0.5 * np.asarray(phi_rad, dtype=float)


def n_factors(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """(n_gamma, n_c, n_q, n_ca) of soil paper eq. 4 over arrays."""
    eta = delta_rad + rho_rad + phi_rad + beta_rad
    s_eta = np.sin(eta)
    s_u = np.sin(alpha_rad + phi_rad + beta_rad)
    n_gamma = (_cot(rho_rad) + _cot(beta_rad)) * s_u / (2.0 * s_eta)
    n_q = s_u / s_eta
    n_c = np.cos(phi_rad) / (np.sin(beta_rad) * s_eta)
    n_ca = -np.cos(rho_rad + phi_rad + beta_rad) / (np.sin(rho_rad) * s_eta)
    return n_gamma, n_c, n_q, n_ca


def force_from_beta(theta_u, theta_k, beta_rad, depth_sq_m2=None):
    """(f_n, fx_n, fz_n) arrays of soil paper eqs. 1 and 2 for given failure angles; ``depth_sq_m2`` (default
    d^2) replaces d^2 in the gamma term: the mean square depth of a blade cut into slices
    (``onboard.soil.blind_map``), with d their mean depth."""
    alpha, rho, d, w, q = (np.asarray(theta_k[k], dtype=float) for k in (ALPHA, RHO, DEPTH, WIDTH, SURCHARGE))
    c, phi, gamma, ca, delta = (np.asarray(theta_u[k], dtype=float) for k in (C, PHI, GAMMA, CA, DELTA))
    n_gamma, n_c, n_q, n_ca = n_factors(alpha, rho, beta_rad, phi, delta)
    d2 = d * d if depth_sq_m2 is None else np.asarray(depth_sq_m2, dtype=float)
    f = gamma * d2 * w * n_gamma + c * d * w * n_c + q * n_q + ca * d * w * n_ca
    psi = rho + delta - alpha
    return f, f * np.sin(psi), f * np.cos(psi)


def wedge_length(depth_m, alpha_rad, beta_rad):
    """x_max [m] of soil paper Alg. 4 line 5 over arrays."""
    return depth_m / (np.cos(alpha_rad) * (np.tan(alpha_rad + beta_rad) - np.tan(alpha_rad)))


def dlog_n_gamma_dbeta(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """d ln N_gamma / d beta (eq. 4) over arrays."""
    a = _cot(rho_rad) + _cot(beta_rad)
    s_b = np.sin(beta_rad)
    return (-1.0 / (s_b * s_b * a) + _cot(alpha_rad + phi_rad + beta_rad)
            - _cot(delta_rad + rho_rad + phi_rad + beta_rad))


def _slope_and_curvature(beta_rad, cot_rho, alpha_phi_rad, delta_rho_phi_rad):
    """(:func:`dlog_n_gamma_dbeta`, d^2 ln N_gamma / d beta^2) at ``beta_rad`` from the terms that do not depend
    on beta (cot rho, alpha + phi, delta + rho + phi), the sines and cosines shared between the two; the slope
    is :func:`dlog_n_gamma_dbeta`'s operations in its order, so its bits. With A = cot rho + cot beta, u = alpha +
    phi + beta, e = delta + rho + phi + beta the curvature is
    2 csc^2(beta) cot(beta) / A - csc^4(beta) / A^2 - csc^2(u) + csc^2(e)."""
    s_b = np.sin(beta_rad)
    cot_b = np.cos(beta_rad) / s_b
    a = cot_rho + cot_b
    u = alpha_phi_rad + beta_rad
    e = delta_rho_phi_rad + beta_rad
    s_u = np.sin(u)
    s_e = np.sin(e)
    slope = -1.0 / (s_b * s_b * a) + np.cos(u) / s_u - np.cos(e) / s_e
    csc2_b = 1.0 / s_b ** 2
    curvature = 2.0 * csc2_b * cot_b / a - csc2_b * csc2_b / (a * a) - 1.0 / s_u ** 2 + 1.0 / s_e ** 2
    return slope, curvature


def beta_star(alpha_rad, rho_rad, phi_rad, delta_rad, beta_min_rad=DEFAULTS["beta_min_rad"],
              eta_max_rad=DEFAULTS["eta_max_rad"], tol_rad=1e-12, iterations=100):
    """(beta*, at_bound) arrays: the minimiser of N_gamma over the admissible interval (see
    ``onboard.soil.fee.beta_star``), by Newton steps on d ln N_gamma / d beta kept inside a shrinking bracket,
    seeded with eq. 11. Raises FeeDomainError when some element has no admissible angle."""
    alpha, rho, phi, delta = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                                   for x in (alpha_rad, rho_rad, phi_rad, delta_rad)))
    lo = np.maximum(float(beta_min_rad), beta_min_rad - alpha - phi)    # alpha + phi + beta >= beta_min
    hi_eta = eta_max_rad - delta - rho - phi
    total = delta + rho + phi
    for _ in range(8):                  # delta + rho + phi + hi <= eta_max as valid_mask sums it
        over = total + hi_eta > eta_max_rad
        if not np.any(over):
            break
        hi_eta = np.where(over, hi_eta - ETA_ULP_RAD, hi_eta)
    hi = np.minimum(hi_eta, HALF_PI - beta_min_rad - alpha)
    if not np.all(hi > lo):
        raise FeeDomainError("no admissible failure angle for some element")
    g_hi = dlog_n_gamma_dbeta(alpha, rho, hi, phi, delta)
    g_lo = dlog_n_gamma_dbeta(alpha, rho, lo, phi, delta)
    at_hi = g_hi <= 0.0
    at_lo = (g_lo >= 0.0) & ~at_hi
    beta = np.clip(beta_eq11(phi), lo, hi)
    done = at_hi | at_lo
    out = np.where(at_hi, hi, np.where(at_lo, lo, beta))
    cot_rho, alpha_phi, delta_rho_phi = _cot(rho), alpha + phi, delta + rho + phi
    for _ in range(iterations):
        if np.all(done):
            break
        g, gb = _slope_and_curvature(beta, cot_rho, alpha_phi, delta_rho_phi)
        descending = g < 0.0
        lo = np.where(descending, beta, lo)
        hi = np.where(descending, hi, beta)
        convex = gb > 0.0
        # the Newton step where the curvature is positive (elsewhere the bisection is taken, whatever it is)
        newton = beta - np.divide(g, gb, out=np.zeros_like(g), where=convex)
        ok = convex & (newton > lo) & (newton < hi)
        new = np.where(ok, newton, 0.5 * (lo + hi))
        finished = ~done & ((np.abs(new - beta) <= tol_rad) | (hi - lo <= tol_rad))
        out = np.where(finished, new, out)
        done = done | finished
        beta = np.where(done, beta, new)
    out = np.where(done, out, beta)
    return out, at_hi | at_lo


def valid_mask(theta_u, theta_k, beta_rad, limits=None):
    """Boolean array: True where the FEE is valid (the conditions of ``onboard.soil.fee.domain_problem``)."""
    lim = DEFAULTS if limits is None else limits
    c, phi, gamma, ca, delta = (np.asarray(theta_u[k], dtype=float) for k in (C, PHI, GAMMA, CA, DELTA))
    alpha, rho, d, w, q = (np.asarray(theta_k[k], dtype=float) for k in (ALPHA, RHO, DEPTH, WIDTH, SURCHARGE))
    beta = np.asarray(beta_rad, dtype=float)
    ok = np.ones(np.broadcast(c, phi, gamma, ca, delta, alpha, rho, d, w, q, beta).shape, dtype=bool)
    for v in (c, phi, gamma, ca, delta, alpha, rho, d, w, q, beta):
        ok &= np.isfinite(v)
    with np.errstate(invalid="ignore"):
        ok &= (c >= 0.0) & (ca >= 0.0) & (gamma > 0.0) & (phi > 0.0) & (phi < HALF_PI)
        ok &= (delta >= 0.0) & (delta < HALF_PI) & (d >= 0.0) & (w >= 0.0) & (q >= 0.0)
        ok &= np.abs(alpha) <= lim["alpha_abs_max_rad"]
        ok &= (rho >= lim["rho_min_rad"]) & (rho <= lim["rho_max_rad"])
        ok &= beta >= lim["beta_min_rad"]
        ok &= delta + rho + phi + beta <= lim["eta_max_rad"]
        ok &= alpha + beta < HALF_PI
        ok &= np.sin(alpha + phi + beta) > 0.0
    return ok


def force(theta_u, theta_k, beta="min_n_gamma", limits=None):
    """(f_n, fx_n, fz_n, beta_rad, valid) arrays: soil paper eqs. 1, 2, 4 with beta* (or eq. 11 with
    ``beta="eq11"``); ``valid`` flags the validity domain instead of raising."""
    lim = DEFAULTS if limits is None else limits
    if beta == "eq11":
        b = beta_eq11(theta_u[PHI])
    else:
        b = beta_star(theta_k[ALPHA], theta_k[RHO], theta_u[PHI], theta_u[DELTA], lim["beta_min_rad"],
                      lim["eta_max_rad"], lim.get("beta_tol_rad", 1e-12))[0]
    f, fx, fz = force_from_beta(theta_u, theta_k, b)
    return f, fx, fz, b, valid_mask(theta_u, theta_k, b, lim)


def null_projector(j, atol=1500.0, rtol=0.05):
    """(N, rank): N = I - J^+ J of soil paper eq. 9 for a (rows x cols) array J, keeping singular values
    above atol + rtol * sigma_max (scipy.linalg.pinv's cut-off), by SVD."""
    j = np.asarray(j, dtype=float)
    _u, s, vt = np.linalg.svd(j, full_matrices=True)
    cut = atol + rtol * (s.max() if s.size else 0.0)
    keep = vt[:s.size][s > cut]
    return np.eye(j.shape[1]) - keep.T @ keep, int(keep.shape[0])


def nullspace_variance(j, var_ambiguity, atol=1500.0, rtol=0.05, scale=None):
    """(variances, rank): diag(N Sigma^a N^T) of soil paper eq. 9 (notes A6), Sigma^a = diag(var_ambiguity),
    the null space taken for the parameters divided by ``scale`` (notes A7)."""
    j = np.asarray(j, dtype=float)
    s = np.ones(j.shape[1]) if scale is None else np.asarray(scale, dtype=float)
    proj, rank = null_projector(j * s, atol, rtol)
    var_scaled = np.asarray(var_ambiguity, dtype=float) / (s * s)
    return (proj * proj) @ var_scaled * s * s, rank


def inflate_variances(variances, j, var_ambiguity, atol=1500.0, rtol=0.05, scale=None):
    """max(variances, diag(N Sigma^a N^T)) element-wise (soil paper eq. 9 with notes A6)."""
    extra, _rank = nullspace_variance(j, var_ambiguity, atol, rtol, scale)
    return np.maximum(np.asarray(variances, dtype=float), extra)
