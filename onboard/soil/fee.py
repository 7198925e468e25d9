"""The fundamental equation of earthmoving (FEE) for a flat blade cutting sloped soil (pure, MicroPython).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader" (eqs. 1, 2, 4, 9, 11; Alg. 4 line 5), with the reading aid
``shared/papers/notes/soil.md`` (its decisions A2-A4, A6-A8 are taken here).

Parameters (SI units; a flat list indexed by the named slots below):

- unknown soil properties ``theta_u`` = (c_pa, phi_rad, gamma_npm3, ca_pa, delta_rad): cohesion [Pa],
  internal friction angle [rad], moist unit weight [N/m^3] (a weight per volume), soil-tool adhesion [Pa],
  soil-tool friction angle [rad];
- known geometry ``theta_k`` = (alpha_rad, rho_rad, depth_m, width_m, surcharge_n).

Frames and signs (notes section 2.2, decision A2), all in the vertical plane that holds the direction of
travel:

- alpha: inclination of the bank-soil surface ahead of the blade, positive when it rises along travel;
- rho: rake of the blade measured from that surface: the angle at the cutting edge between the blade
  face (from the edge upwards) and the surface continued behind the edge. With the face at rho_h from the
  horizontal (90 deg for a vertical blade, less when its top leans back), rho = rho_h + alpha;
- beta: angle of the planar failure surface from the surface ahead (eq. 11 gives its nominal value);
- depth: cut depth of the cutting edge, perpendicular to the surface; width: blade width in contact;
- surcharge: weight Q [N] of the loose soil carried in front of the blade;
- force (eq. 2): ``fx_n`` is the horizontal resistance of the soil on the blade, positive against the
  direction of travel (the draught the machine supplies); ``fz_n`` the vertical component, positive
  downward (NED down): it is negative, the soil lifting the blade, when rho + delta - alpha > 90 deg.

The failure angle is the minimiser beta* of N_gamma (notes A4), found by a safeguarded Newton iteration on
d ln N_gamma / d beta seeded with eq. 11; ``beta="eq11"`` selects eq. 11 itself. Jacobians are analytic,
with d beta*/d theta from the implicit function theorem.
"""
import math

from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked, one_of, within

# slots of theta_u (soil properties) and theta_k (geometry)
C = 0
PHI = 1
GAMMA = 2
CA = 3
DELTA = 4
N_U = 5
THETA_U_NAMES = ("c_pa", "phi_rad", "gamma_npm3", "ca_pa", "delta_rad")

ALPHA = 0
RHO = 1
DEPTH = 2
WIDTH = 3
SURCHARGE = 4
N_K = 5
THETA_K_NAMES = ("alpha_rad", "rho_rad", "depth_m", "width_m", "surcharge_n")

# rows of a force Jacobian
FX = 0
FZ = 1

HALF_PI = 0.5 * math.pi
ETA_ULP_RAD = 4.5e-16     # about one unit in the last place of eta near its clipping limit (2 .. pi)

DEFAULTS = {
    "beta": "min_n_gamma",        # "min_n_gamma": beta* = argmin N_gamma (notes A4); "eq11": beta0 (eq. 11)
    "beta_tol_rad": 1e-12,        # convergence of beta*
    "beta_min_rad": 0.0175,       # clipping limits of the validity domain (paper section 2.1; values ours)
    "eta_max_rad": 3.124,         # eta = delta + rho + phi + beta below pi
    "rho_min_rad": 0.0175,
    "rho_max_rad": 3.124,
    "alpha_abs_max_rad": 0.7854,
    "pinv_atol": 1500.0,          # eq. 9 pseudo-inverse tolerances (paper section 2.1)
    "pinv_rtol": 0.05,
}
SETTING_RANGES = {
    "beta": one_of("min_n_gamma", "eq11"),
    "beta_tol_rad": POSITIVE,
    "beta_min_rad": within(1e-6, 0.5),
    "eta_max_rad": within(2.0, math.pi),
    "rho_min_rad": within(1e-6, 1.5),
    "rho_max_rad": within(1.6, math.pi),
    "alpha_abs_max_rad": within(0.0, 1.5),
    "pinv_atol": NON_NEGATIVE,
    "pinv_rtol": NON_NEGATIVE,
}


class FeeDomainError(ValueError):
    """The FEE is not valid for these parameters (outside the clipping limits or physically meaningless);
    the message names the first violated condition."""


def _cot(x):
    return math.cos(x) / math.sin(x)


def beta_eq11(phi_rad):
    """Nominal failure angle beta0 = pi/4 - phi/2 [rad] (soil paper eq. 11, Miedema's frictionless vertical
    blade in flat cohesionless soil)."""
    return 0.25 * math.pi - 0.5 * phi_rad


def n_factors(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """The dimensionless FEE factors (n_gamma, n_c, n_q, n_ca) of soil paper eq. 4, with
    eta = delta + rho + phi + beta (the missing eq. 3, notes A3)."""
    eta = delta_rad + rho_rad + phi_rad + beta_rad
    s_eta = math.sin(eta)
    s_u = math.sin(alpha_rad + phi_rad + beta_rad)
    n_gamma = (_cot(rho_rad) + _cot(beta_rad)) * s_u / (2.0 * s_eta)
    n_q = s_u / s_eta
    n_c = math.cos(phi_rad) / (math.sin(beta_rad) * s_eta)
    n_ca = -math.cos(rho_rad + phi_rad + beta_rad) / (math.sin(rho_rad) * s_eta)
    return n_gamma, n_c, n_q, n_ca


def force_from_beta(theta_u, theta_k, beta_rad):
    """(f_n, fx_n, fz_n) for a given failure angle: the magnitude f of soil paper eq. 1,
    f = gamma d^2 w N_gamma + c d w N_c + Q N_Q + c_a d w N_ca, and its horizontal/vertical components of
    eq. 2, F = f [sin(rho + delta - alpha), cos(rho + delta - alpha)] (signs in the module docstring)."""
    alpha, rho, d, w, q = theta_k[ALPHA], theta_k[RHO], theta_k[DEPTH], theta_k[WIDTH], theta_k[SURCHARGE]
    n_gamma, n_c, n_q, n_ca = n_factors(alpha, rho, beta_rad, theta_u[PHI], theta_u[DELTA])
    f = (theta_u[GAMMA] * d * d * w * n_gamma + theta_u[C] * d * w * n_c + q * n_q
         + theta_u[CA] * d * w * n_ca)
    psi = rho + theta_u[DELTA] - alpha
    return f, f * math.sin(psi), f * math.cos(psi)


def wedge_length(depth_m, alpha_rad, beta_rad):
    """Horizontal length x_max [m] of the failure wedge ahead of the cutting edge (soil paper Alg. 4 line 5):
    x_max = d / (cos(alpha) (tan(alpha + beta) - tan(alpha))), where the failure plane from the edge, at
    alpha + beta to the horizontal, meets the surface. Needs 0 < beta and alpha + beta < pi/2."""
    return depth_m / (math.cos(alpha_rad) * (math.tan(alpha_rad + beta_rad) - math.tan(alpha_rad)))


def beta_bounds(alpha_rad, rho_rad, phi_rad, delta_rad, beta_min_rad=0.0175, eta_max_rad=3.124):
    """(lo, hi, which) of the admissible failure angle [rad]: beta >= beta_min, alpha + phi + beta >=
    beta_min (the wedge's weight resists the cut, sin(alpha + phi + beta) > 0: on a surface falling faster
    than phi, N_gamma drops to 0 where alpha + phi + beta reaches 0, so its minimiser would be that pole),
    eta = delta + rho + phi + beta <= eta_max and alpha + beta <= pi/2 - beta_min (the failure plane meets
    the surface ahead). ``which`` names the bound that sets hi: "eta" or "alpha". hi < lo when no angle is
    admissible. hi is admissible as :func:`domain_problem` sums eta (delta + rho + phi + hi <= eta_max in
    floating point)."""
    lo = beta_min_rad - alpha_rad - phi_rad
    if not lo > beta_min_rad:
        lo = beta_min_rad
    hi_eta = eta_max_rad - delta_rad - rho_rad - phi_rad
    s = delta_rad + rho_rad + phi_rad
    for _ in range(8):
        if not s + hi_eta > eta_max_rad:
            break
        hi_eta -= ETA_ULP_RAD
    hi_alpha = HALF_PI - beta_min_rad - alpha_rad
    if hi_eta <= hi_alpha:
        return lo, hi_eta, "eta"
    return lo, hi_alpha, "alpha"


def dlog_n_gamma_dbeta(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """d ln N_gamma / d beta (eq. 4); zero at beta*. N_gamma > 0 in the domain, so its sign is that of
    d N_gamma / d beta."""
    a = _cot(rho_rad) + _cot(beta_rad)
    s_b = math.sin(beta_rad)
    return (-1.0 / (s_b * s_b * a) + _cot(alpha_rad + phi_rad + beta_rad)
            - _cot(delta_rad + rho_rad + phi_rad + beta_rad))


def _g_partials(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """Partial derivatives of g = d ln N_gamma / d beta with respect to (beta, phi, delta, rho, alpha)."""
    a = _cot(rho_rad) + _cot(beta_rad)
    s_b = math.sin(beta_rad)
    csc2_b = 1.0 / (s_b * s_b)
    s_r = math.sin(rho_rad)
    csc2_r = 1.0 / (s_r * s_r)
    s_u = math.sin(alpha_rad + phi_rad + beta_rad)
    csc2_u = 1.0 / (s_u * s_u)
    s_e = math.sin(delta_rad + rho_rad + phi_rad + beta_rad)
    csc2_e = 1.0 / (s_e * s_e)
    g_beta = 2.0 * csc2_b * _cot(beta_rad) / a - csc2_b * csc2_b / (a * a) - csc2_u + csc2_e
    g_phi = -csc2_u + csc2_e
    g_delta = csc2_e
    g_rho = -csc2_b * csc2_r / (a * a) + csc2_e
    g_alpha = -csc2_u
    return g_beta, g_phi, g_delta, g_rho, g_alpha


def beta_star(alpha_rad, rho_rad, phi_rad, delta_rad, beta_min_rad=0.0175, eta_max_rad=3.124, tol_rad=1e-12):
    """(beta*, at_bound) [rad]: the failure angle that minimises N_gamma over the admissible interval of
    :func:`beta_bounds` (notes A4; the paper's d N_gamma / d beta = 0 regulariser of eq. 10), by Newton's
    method on d ln N_gamma / d beta kept inside a shrinking bracket, seeded with eq. 11. ``at_bound`` is
    True when beta* is a bound of that interval (N_gamma still falls at the upper one, or already rises at
    the lower one). Raises FeeDomainError when no angle is admissible."""
    lo, hi, _which = beta_bounds(alpha_rad, rho_rad, phi_rad, delta_rad, beta_min_rad, eta_max_rad)
    if not hi > lo:
        raise FeeDomainError("no admissible failure angle: eta or alpha + beta leave no room above beta_min "
                             "and -(alpha + phi) + beta_min")
    if dlog_n_gamma_dbeta(alpha_rad, rho_rad, hi, phi_rad, delta_rad) <= 0.0:
        return hi, True
    if dlog_n_gamma_dbeta(alpha_rad, rho_rad, lo, phi_rad, delta_rad) >= 0.0:
        return lo, True
    beta = min(max(beta_eq11(phi_rad), lo), hi)
    for _ in range(100):
        g = dlog_n_gamma_dbeta(alpha_rad, rho_rad, beta, phi_rad, delta_rad)
        if g < 0.0:
            lo = beta
        else:
            hi = beta
        g_beta = _g_partials(alpha_rad, rho_rad, beta, phi_rad, delta_rad)[0]
        step_ok = g_beta > 0.0
        if step_ok:
            new = beta - g / g_beta
            step_ok = lo < new < hi
        if not step_ok:
            new = 0.5 * (lo + hi)
        if abs(new - beta) <= tol_rad or hi - lo <= tol_rad:
            return new, False
        beta = new
    return beta, False


def domain_problem(theta_u, theta_k, beta_rad, limits=None):
    """None when the FEE is valid for these parameters, else a short text naming the first violated
    condition: non-finite values, c, c_a, Q, d, w >= 0, gamma > 0, 0 < phi < pi/2, 0 <= delta < pi/2, the
    clipping limits on |alpha|, rho, beta, eta (soil paper section 2.1), alpha + beta < pi/2 (the failure
    plane meets the surface) and sin(alpha + phi + beta) > 0 (the wedge's weight resists the cut).
    ``limits``: a settings dict like :data:`DEFAULTS` (None: the defaults)."""
    lim = DEFAULTS if limits is None else limits
    values = list(theta_u) + list(theta_k) + [beta_rad]
    for v in values:
        if not (v - v == 0):
            return "parameters must be finite"
    if theta_u[C] < 0.0:
        return "cohesion c must be >= 0"
    if theta_u[CA] < 0.0:
        return "adhesion c_a must be >= 0"
    if not theta_u[GAMMA] > 0.0:
        return "unit weight gamma must be > 0"
    if not 0.0 < theta_u[PHI] < HALF_PI:
        return "friction angle phi must be in (0, pi/2)"
    if not 0.0 <= theta_u[DELTA] < HALF_PI:
        return "soil-tool friction delta must be in [0, pi/2)"
    if theta_k[DEPTH] < 0.0:
        return "depth d must be >= 0"
    if theta_k[WIDTH] < 0.0:
        return "width w must be >= 0"
    if theta_k[SURCHARGE] < 0.0:
        return "surcharge Q must be >= 0"
    if abs(theta_k[ALPHA]) > lim["alpha_abs_max_rad"]:
        return "surface inclination |alpha| beyond its clipping limit"
    if not lim["rho_min_rad"] <= theta_k[RHO] <= lim["rho_max_rad"]:
        return "rake rho beyond its clipping limits"
    if beta_rad < lim["beta_min_rad"]:
        return "failure angle beta below its clipping limit"
    eta = theta_u[DELTA] + theta_k[RHO] + theta_u[PHI] + beta_rad
    if eta > lim["eta_max_rad"]:
        return "eta = delta + rho + phi + beta beyond its clipping limit"
    if theta_k[ALPHA] + beta_rad >= HALF_PI:
        return "alpha + beta must be < pi/2 (the failure plane must meet the surface)"
    if not math.sin(theta_k[ALPHA] + theta_u[PHI] + beta_rad) > 0.0:
        return "sin(alpha + phi + beta) must be > 0"
    return None


def _n_partials(alpha, rho, beta, phi, delta):
    """N factors and their partial derivatives with respect to (beta, phi, delta, rho, alpha), beta held
    fixed: four 5-lists in that order, one per factor (gamma, c, q, ca)."""
    eta = delta + rho + phi + beta
    u = alpha + phi + beta
    v = rho + phi + beta
    s_eta = math.sin(eta)
    cot_eta = math.cos(eta) / s_eta
    s_u = math.sin(u)
    c_u = math.cos(u)
    s_b = math.sin(beta)
    s_r = math.sin(rho)
    a = _cot(rho) + _cot(beta)
    n_gamma = a * s_u / (2.0 * s_eta)
    n_q = s_u / s_eta
    n_c = math.cos(phi) / (s_b * s_eta)
    n_ca = -math.cos(v) / (s_r * s_eta)
    # d/d(beta, phi, delta, rho, alpha) of eta, u, v, a
    d_eta = (1.0, 1.0, 1.0, 1.0, 0.0)
    d_u = (1.0, 1.0, 0.0, 0.0, 1.0)
    d_v = (1.0, 1.0, 0.0, 1.0, 0.0)
    d_a = (-1.0 / (s_b * s_b), 0.0, 0.0, -1.0 / (s_r * s_r), 0.0)
    dg, dq, dc, dca = [], [], [], []
    sin_v = math.sin(v)
    for k in range(5):
        e = cot_eta * d_eta[k]
        dg.append((d_a[k] * s_u + a * c_u * d_u[k]) / (2.0 * s_eta) - n_gamma * e)
        dq.append(c_u * d_u[k] / s_eta - n_q * e)
        dca.append(sin_v * d_v[k] / (s_r * s_eta) - n_ca * (e + (_cot(rho) if k == 3 else 0.0)))
    dc.append(-n_c * (_cot(beta) + cot_eta))                      # beta
    dc.append(-math.sin(phi) / (s_b * s_eta) - n_c * cot_eta)    # phi
    dc.append(-n_c * cot_eta)                                     # delta
    dc.append(-n_c * cot_eta)                                     # rho
    dc.append(0.0)                                                # alpha
    return (n_gamma, n_c, n_q, n_ca), (dg, dc, dq, dca)


def beta_sensitivity(theta_u, theta_k, beta_mode="min_n_gamma", beta_rad=None, limits=None):
    """(beta [rad], [d beta/d phi, d beta/d delta, d beta/d rho, d beta/d alpha]) for the failure angle of
    ``beta_mode``: "min_n_gamma" (beta*, derivatives by the implicit function theorem on
    d ln N_gamma / d beta = 0, or those of the bound it sits on), "eq11" (eq. 11) or "fixed" (``beta_rad``,
    no dependence)."""
    lim = DEFAULTS if limits is None else limits
    phi, delta = theta_u[PHI], theta_u[DELTA]
    alpha, rho = theta_k[ALPHA], theta_k[RHO]
    if beta_mode == "fixed":
        return beta_rad, [0.0, 0.0, 0.0, 0.0]
    if beta_mode == "eq11":
        return beta_eq11(phi), [-0.5, 0.0, 0.0, 0.0]
    if beta_mode != "min_n_gamma":
        raise ValueError("unknown beta mode %r (min_n_gamma, eq11 or fixed)" % (beta_mode,))
    beta, at_bound = beta_star(alpha, rho, phi, delta, lim["beta_min_rad"], lim["eta_max_rad"],
                               lim.get("beta_tol_rad", 1e-12))
    if at_bound:
        lo, hi, which = beta_bounds(alpha, rho, phi, delta, lim["beta_min_rad"], lim["eta_max_rad"])
        if beta == lo:
            if lo > lim["beta_min_rad"]:             # on alpha + phi + beta = beta_min
                return beta, [-1.0, 0.0, 0.0, -1.0]
            return beta, [0.0, 0.0, 0.0, 0.0]
        if which == "eta":
            return beta, [-1.0, -1.0, -1.0, 0.0]
        return beta, [0.0, 0.0, 0.0, -1.0]
    g_beta, g_phi, g_delta, g_rho, g_alpha = _g_partials(alpha, rho, beta, phi, delta)
    return beta, [-g_phi / g_beta, -g_delta / g_beta, -g_rho / g_beta, -g_alpha / g_beta]


def jacobian(theta_u, theta_k, beta_mode="min_n_gamma", beta_rad=None, limits=None):
    """(j_u, j_k, force): analytic Jacobians of (fx_n, fz_n) (eq. 2) with respect to theta_u (2 x 5,
    flat row-major, rows FX, FZ) and theta_k (2 x 5), the failure angle following ``beta_mode`` (see
    :func:`beta_sensitivity`), and force = (f_n, fx_n, fz_n, beta_rad). These are the J of soil paper
    eqs. 6-9."""
    beta, dbeta = beta_sensitivity(theta_u, theta_k, beta_mode, beta_rad, limits)
    c, phi, gamma, ca, delta = theta_u[C], theta_u[PHI], theta_u[GAMMA], theta_u[CA], theta_u[DELTA]
    alpha, rho, d, w, q = theta_k[ALPHA], theta_k[RHO], theta_k[DEPTH], theta_k[WIDTH], theta_k[SURCHARGE]
    ns, dns = _n_partials(alpha, rho, beta, phi, delta)
    n_gamma, n_c, n_q, n_ca = ns
    kg = gamma * d * d * w
    kc = c * d * w
    kca = ca * d * w
    f = kg * n_gamma + kc * n_c + q * n_q + kca * n_ca
    # partials of f over the angles (beta, phi, delta, rho, alpha), beta held fixed
    df_ang = [kg * dns[0][k] + kc * dns[1][k] + q * dns[2][k] + kca * dns[3][k] for k in range(5)]
    df_beta = df_ang[0]
    # total derivatives: phi, delta, rho, alpha also move beta
    df_phi = df_ang[1] + df_beta * dbeta[0]
    df_delta = df_ang[2] + df_beta * dbeta[1]
    df_rho = df_ang[3] + df_beta * dbeta[2]
    df_alpha = df_ang[4] + df_beta * dbeta[3]
    df_u = [d * w * n_c, df_phi, d * d * w * n_gamma, d * w * n_ca, df_delta]
    df_k = [df_alpha, df_rho, 2.0 * gamma * d * w * n_gamma + c * w * n_c + ca * w * n_ca,
            gamma * d * d * n_gamma + c * d * n_c + ca * d * n_ca, n_q]
    psi = rho + delta - alpha
    s_psi = math.sin(psi)
    c_psi = math.cos(psi)
    dpsi_u = (0.0, 0.0, 0.0, 0.0, 1.0)
    dpsi_k = (-1.0, 1.0, 0.0, 0.0, 0.0)
    j_u = [0.0] * (2 * N_U)
    j_k = [0.0] * (2 * N_K)
    for k in range(5):
        j_u[FX * N_U + k] = df_u[k] * s_psi + f * c_psi * dpsi_u[k]
        j_u[FZ * N_U + k] = df_u[k] * c_psi - f * s_psi * dpsi_u[k]
        j_k[FX * N_K + k] = df_k[k] * s_psi + f * c_psi * dpsi_k[k]
        j_k[FZ * N_K + k] = df_k[k] * c_psi - f * s_psi * dpsi_k[k]
    return j_u, j_k, (f, f * s_psi, f * c_psi, beta)


def _sym_eigen(a, n, sweeps=60):
    """(eigenvalues, eigenvectors) of the symmetric n x n flat matrix ``a`` by cyclic Jacobi rotations;
    eigenvector k is column k of the returned flat n x n matrix."""
    m = list(a)
    v = [0.0] * (n * n)
    for i in range(n):
        v[i * n + i] = 1.0
    for _ in range(sweeps):
        off = 0.0
        scale = 0.0
        for i in range(n):
            scale += m[i * n + i] * m[i * n + i]
            for j in range(i + 1, n):
                off += m[i * n + j] * m[i * n + j]
        if off <= 1e-30 * scale or off == 0.0:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = m[p * n + q]
                if apq == 0.0:
                    continue
                theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                cs = 1.0 / math.sqrt(t * t + 1.0)
                sn = t * cs
                for k in range(n):
                    akp = m[k * n + p]
                    akq = m[k * n + q]
                    m[k * n + p] = cs * akp - sn * akq
                    m[k * n + q] = sn * akp + cs * akq
                for k in range(n):
                    apk = m[p * n + k]
                    aqk = m[q * n + k]
                    m[p * n + k] = cs * apk - sn * aqk
                    m[q * n + k] = sn * apk + cs * aqk
                for k in range(n):
                    vkp = v[k * n + p]
                    vkq = v[k * n + q]
                    v[k * n + p] = cs * vkp - sn * vkq
                    v[k * n + q] = sn * vkp + cs * vkq
    return [m[i * n + i] for i in range(n)], v


def null_projector(j, rows, cols, atol=1500.0, rtol=0.05):
    """(N, rank): N = I - J^+ J (cols x cols, flat) of soil paper eq. 9, with J^+ the pseudo-inverse that
    keeps singular values above atol + rtol * sigma_max (scipy.linalg.pinv's cut-off). The singular values
    come from J^T J, so those below about 1e-8 sigma_max count as zero whatever the tolerances."""
    jtj = [0.0] * (cols * cols)
    for a in range(cols):
        for b in range(a, cols):
            s = 0.0
            for r in range(rows):
                s += j[r * cols + a] * j[r * cols + b]
            jtj[a * cols + b] = s
            jtj[b * cols + a] = s
    lam, vec = _sym_eigen(jtj, cols)
    sig = [math.sqrt(x) if x > 0.0 else 0.0 for x in lam]
    cut = atol + rtol * max(sig)
    proj = [0.0] * (cols * cols)
    for i in range(cols):
        proj[i * cols + i] = 1.0
    rank = 0
    for k in range(cols):
        if sig[k] > cut:
            rank += 1
            for a in range(cols):
                va = vec[a * cols + k]
                for b in range(cols):
                    proj[a * cols + b] -= va * vec[b * cols + k]
    return proj, rank


def nullspace_variance(j, rows, cols, var_ambiguity, atol=1500.0, rtol=0.05, scale=None):
    """(variances, rank): the diagonal of Sigma^n = N Sigma^a N^T, N = I - J^+ J (soil paper eq. 9, made
    symmetric as in notes A6), with Sigma^a = diag(``var_ambiguity``) in the parameters' units squared.
    ``scale`` (one positive number per parameter, or None) makes the null space that of the scaled
    parameters theta / scale (notes A7): J is multiplied column-wise by the scale before the
    pseudo-inverse, so which directions count as unidentifiable depends on it."""
    if scale is None:
        scale = [1.0] * cols
    js = [j[r * cols + k] * scale[k] for r in range(rows) for k in range(cols)]
    proj, rank = null_projector(js, rows, cols, atol, rtol)
    out = []
    for a in range(cols):
        s = 0.0
        for b in range(cols):
            s += proj[a * cols + b] * proj[a * cols + b] * var_ambiguity[b] / (scale[b] * scale[b])
        out.append(s * scale[a] * scale[a])
    return out, rank


def inflate_variances(variances, j, rows, cols, var_ambiguity, atol=1500.0, rtol=0.05, scale=None):
    """The estimate's variances after the null-space inflation of soil paper eq. 9, combined element-wise
    with max (notes A6: the printed min would let them shrink): max(variances, diag(N Sigma^a N^T))."""
    extra, _rank = nullspace_variance(j, rows, cols, var_ambiguity, atol, rtol, scale)
    return [variances[k] if variances[k] >= extra[k] else extra[k] for k in range(cols)]


def _all_finite(theta_u, theta_k):
    for v in list(theta_u) + list(theta_k):
        if not (v - v == 0):
            return False
    return True


class Fee:
    """The FEE with its settings (:data:`DEFAULTS`, :data:`SETTING_RANGES`): the failure-angle rule, the
    validity domain's clipping limits and the eq. 9 pseudo-inverse tolerances."""

    def __init__(self, config=None):
        self.config = checked(DEFAULTS, SETTING_RANGES, config, "fee")

    def beta(self, theta_u, theta_k):
        """The failure angle [rad] of the configured rule (beta* of eq. 4's N_gamma, or eq. 11)."""
        cfg = self.config
        if cfg["beta"] == "eq11":
            return beta_eq11(theta_u[PHI])
        return beta_star(theta_k[ALPHA], theta_k[RHO], theta_u[PHI], theta_u[DELTA], cfg["beta_min_rad"],
                         cfg["eta_max_rad"], cfg["beta_tol_rad"])[0]

    def problem(self, theta_u, theta_k):
        """None when the FEE is valid here, else the first violated condition (:func:`domain_problem`)."""
        if not _all_finite(theta_u, theta_k):
            return "parameters must be finite"
        try:
            beta = self.beta(theta_u, theta_k)
        except (FeeDomainError, ValueError, ZeroDivisionError) as exc:
            return str(exc)
        return domain_problem(theta_u, theta_k, beta, self.config)

    def force(self, theta_u, theta_k):
        """(f_n, fx_n, fz_n, beta_rad) of soil paper eqs. 1, 2, 4; raises FeeDomainError outside the
        validity domain."""
        if not _all_finite(theta_u, theta_k):
            raise FeeDomainError("FEE not valid: parameters must be finite")
        try:
            beta = self.beta(theta_u, theta_k)
        except ZeroDivisionError:
            raise FeeDomainError("parameters at a singularity of eq. 4")
        problem = domain_problem(theta_u, theta_k, beta, self.config)
        if problem is not None:
            raise FeeDomainError("FEE not valid: " + problem)
        f, fx, fz = force_from_beta(theta_u, theta_k, beta)
        return f, fx, fz, beta

    def wedge_length(self, theta_u, theta_k):
        """x_max [m] of Alg. 4 line 5 with the configured failure angle."""
        return wedge_length(theta_k[DEPTH], theta_k[ALPHA], self.force(theta_u, theta_k)[3])

    def jacobian(self, theta_u, theta_k):
        """(j_u, j_k, force) of :func:`jacobian` with the configured failure-angle rule."""
        self.force(theta_u, theta_k)
        return jacobian(theta_u, theta_k, self.config["beta"], None, self.config)

    def inflate(self, variances, j, rows, var_ambiguity, scale=None):
        """:func:`inflate_variances` over theta_u with the configured pinv tolerances (eq. 9)."""
        return inflate_variances(variances, j, rows, N_U, var_ambiguity, self.config["pinv_atol"],
                                 self.config["pinv_rtol"], scale)
