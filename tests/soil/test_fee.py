"""The FEE of onboard.soil.fee (soil paper eqs. 1, 2, 4, 9, 11; Alg. 4 line 5) against independent forms:
McKyes' and Swick-Perumpral's at alpha = 0, a rotation of the surface-frame force, a numeric plane
intersection for x_max, finite differences for the Jacobians, scipy's pinv for eq. 9, and the NumPy path."""
import math
import random

import numpy as np
import pytest
import scipy.linalg

from onboard.core.settings import ConfigError
from onboard.soil import fee, fee_numpy

R = math.radians


def _random_point(rng, alpha_rad=0.0):
    """A random valid (theta_u, theta_k, beta) with the failure angle drawn inside its admissible range."""
    while True:
        theta_u = [rng.uniform(0.0, 30e3), R(rng.uniform(15.0, 45.0)), rng.uniform(13e3, 21e3),
                   rng.uniform(0.0, 15e3), R(rng.uniform(5.0, 30.0))]
        theta_k = [alpha_rad, R(rng.uniform(40.0, 110.0)), rng.uniform(0.01, 0.4), rng.uniform(0.5, 2.5),
                   rng.uniform(0.0, 20e3)]
        lo, hi, _ = fee.beta_bounds(alpha_rad, theta_k[fee.RHO], theta_u[fee.PHI], theta_u[fee.DELTA])
        if hi > lo + 0.05:
            beta = rng.uniform(lo + 0.01, hi - 0.01)
            if fee.domain_problem(theta_u, theta_k, beta) is None:
                return theta_u, theta_k, beta


def _mckyes(theta_u, theta_k, beta):
    """McKyes (1985) at a flat surface: P = gamma d^2 w N_g + c d w N_c + q d w N_q + c_a d w N_a with
    q = Q / (w d (cot rho + cot beta)) the surcharge pressure over the wedge top; F = P [sin, cos](rho + delta)."""
    c, phi, gamma, ca, delta = theta_u
    _alpha, rho, d, w, big_q = theta_k
    den = math.cos(rho + delta) + math.sin(rho + delta) / math.tan(beta + phi)
    wedge = 1.0 / math.tan(rho) + 1.0 / math.tan(beta)
    n_g = wedge / (2.0 * den)
    n_c = (1.0 + 1.0 / (math.tan(beta) * math.tan(beta + phi))) / den
    n_a = (1.0 - 1.0 / (math.tan(rho) * math.tan(beta + phi))) / den
    n_q = wedge / den
    q_pa = big_q / (w * d * wedge)
    p = gamma * d * d * w * n_g + c * d * w * n_c + q_pa * d * w * n_q + ca * d * w * n_a
    return p, p * math.sin(rho + delta), p * math.cos(rho + delta)


def _swick_perumpral(theta_u, theta_k, beta):
    """Swick & Perumpral (1988, after Wilkinson & DeGennaro 2007) without the inertial term: every term over
    sin(rho + delta + phi + beta), surcharge as a pressure over the wedge top."""
    c, phi, gamma, ca, delta = theta_u
    _alpha, rho, d, w, big_q = theta_k
    common = w * d / math.sin(rho + delta + phi + beta)
    wedge = 1.0 / math.tan(rho) + 1.0 / math.tan(beta)
    q_pa = big_q / (w * d * wedge)
    depth = gamma * d / 2.0 * wedge * math.sin(phi + beta) * common
    cohesion = c * math.cos(phi) / math.sin(beta) * common
    adhesion = -ca * math.cos(rho + phi + beta) / math.sin(rho) * common
    surcharge = q_pa * wedge * math.sin(phi + beta) * common
    return depth + cohesion + adhesion + surcharge


def test_flat_ground_equals_mckyes_and_swick_perumpral_at_50_points():
    rng = random.Random(47)
    worst = 0.0
    for _ in range(50):
        theta_u, theta_k, beta = _random_point(rng)
        f, fx, fz = fee.force_from_beta(theta_u, theta_k, beta)
        p, px, pz = _mckyes(theta_u, theta_k, beta)
        sp = _swick_perumpral(theta_u, theta_k, beta)
        scale = max(abs(p), 1.0)
        worst = max(worst, abs(f - p) / scale, abs(fx - px) / scale, abs(fz - pz) / scale, abs(f - sp) / scale)
    assert worst < 1e-11


def test_sloped_force_is_the_surface_frame_force_rotated_by_alpha():
    """Eq. 2: McKyes' components in the surface frame (tangential resistance, inward normal) rotated by alpha
    into the gravity frame (horizontal resistance, downward)."""
    rng = random.Random(3)
    for _ in range(30):
        alpha = R(rng.uniform(-20.0, 20.0))
        theta_u, theta_k, beta = _random_point(rng, alpha)
        f, fx, fz = fee.force_from_beta(theta_u, theta_k, beta)
        psi = theta_k[fee.RHO] + theta_u[fee.DELTA]
        p_t, p_n = f * math.sin(psi), f * math.cos(psi)
        # surface rising at alpha ahead: tangent (cos a, up sin a); resistance along -tangent, normal into soil
        back = (-math.cos(alpha), -math.sin(alpha))       # (forward, up)
        inward = (math.sin(alpha), -math.cos(alpha))      # (forward, up): into the soil below a rising surface
        force_fwd = p_t * back[0] + p_n * inward[0]
        force_up = p_t * back[1] + p_n * inward[1]
        assert abs(fx - (-force_fwd)) < 1e-9 * f
        assert abs(fz - (-force_up)) < 1e-9 * f


def test_paper_index_geometry_gives_the_notes_magnitudes_and_sign():
    """alpha = 0, rho = 80 deg, w = 1.85 m, d = 0.2 m (soil paper section 3.2): the vertical force lifts the
    blade (fz < 0) because rho + delta > 90 deg; loose-ish soil ~12.8 kN with beta* = 22.2 deg (notes 2.2)."""
    model = fee.Fee()
    f, fx, fz, beta = model.force([5e3, R(30.0), 16e3, 2e3, R(20.0)], [0.0, R(80.0), 0.2, 1.85, 0.0])
    assert abs(math.degrees(beta) - 22.16) < 0.01
    assert abs(f - 12810.0) < 5.0
    assert fx > 0.0 > fz
    f_eq11 = fee.Fee({"beta": "eq11"}).force([5e3, R(30.0), 16e3, 2e3, R(20.0)], [0.0, R(80.0), 0.2, 1.85, 0.0])[0]
    assert f_eq11 > f     # beta* minimises N_gamma, and here the whole force with it


def test_beta_star_minimises_n_gamma_inside_its_bounds():
    rng = random.Random(11)
    for _ in range(40):
        alpha = R(rng.uniform(-15.0, 15.0))
        theta_u, theta_k, _ = _random_point(rng, alpha)
        a, rho, phi, delta = alpha, theta_k[fee.RHO], theta_u[fee.PHI], theta_u[fee.DELTA]
        beta, at_bound = fee.beta_star(a, rho, phi, delta)
        lo, hi, _ = fee.beta_bounds(a, rho, phi, delta)
        assert lo <= beta <= hi
        assert 0.0 < beta < math.pi - delta - rho - phi
        n_best = fee.n_factors(a, rho, beta, phi, delta)[0]
        for k in range(1, 200):
            b = lo + (hi - lo) * k / 200.0
            assert fee.n_factors(a, rho, b, phi, delta)[0] >= n_best * (1.0 - 1e-12)
        if not at_bound:
            h = 1e-6
            dn = (fee.n_factors(a, rho, beta + h, phi, delta)[0]
                  - fee.n_factors(a, rho, beta - h, phi, delta)[0]) / (2 * h)
            assert abs(dn) < 1e-6 * n_best


def test_wedge_length_equals_a_numeric_plane_intersection():
    """x_max (Alg. 4 line 5): intersect, by solving a 2 x 2 system, the failure plane (the surface tangent
    turned by beta about the cutting edge) with the surface line (tangent through the point above the edge)."""
    rng = random.Random(5)
    for _ in range(50):
        alpha, beta, d = R(rng.uniform(-30.0, 30.0)), R(rng.uniform(5.0, 50.0)), rng.uniform(0.01, 0.5)
        if alpha + beta >= R(85.0):
            continue
        tangent = (math.cos(alpha), math.sin(alpha))          # (forward, up)
        normal_up = (-math.sin(alpha), math.cos(alpha))
        s0 = (0.3, 1.0)                     # the surface point over the edge along the surface normal
        tip = (s0[0] - d * normal_up[0], s0[1] - d * normal_up[1])
        cb, sb = math.cos(beta), math.sin(beta)
        failure = (cb * tangent[0] - sb * tangent[1], sb * tangent[0] + cb * tangent[1])
        # tip + s * failure = s0 + r * tangent
        a11, a12, a21, a22 = failure[0], -tangent[0], failure[1], -tangent[1]
        b1, b2 = s0[0] - tip[0], s0[1] - tip[1]
        det = a11 * a22 - a12 * a21
        s = (b1 * a22 - a12 * b2) / det
        x_numeric = s * failure[0]
        assert abs(fee.wedge_length(d, alpha, beta) - x_numeric) < 1e-12 * max(1.0, x_numeric)
    assert abs(fee.wedge_length(0.2, 0.0, R(22.1634)) - 0.2 / math.tan(R(22.1634))) < 1e-12


@pytest.mark.parametrize("mode", ["min_n_gamma", "eq11", "fixed"])
def test_jacobians_match_central_differences(mode):
    rng = random.Random(21)
    for _ in range(12):
        alpha = R(rng.uniform(-10.0, 10.0))
        theta_u, theta_k, beta_fixed = _random_point(rng, alpha)
        j_u, j_k, (f, fx, fz, beta) = fee.jacobian(theta_u, theta_k, mode, beta_fixed)

        def forces(tu, tk):
            b = beta_fixed
            if mode == "min_n_gamma":
                b = fee.beta_star(tk[fee.ALPHA], tk[fee.RHO], tu[fee.PHI], tu[fee.DELTA], tol_rad=1e-15)[0]
            elif mode == "eq11":
                b = fee.beta_eq11(tu[fee.PHI])
            return fee.force_from_beta(tu, tk, b)[1:]

        for which, theta, jac in (("u", theta_u, j_u), ("k", theta_k, j_k)):
            for k in range(5):
                h = 1e-6 * max(abs(theta[k]), 1.0) if k not in (fee.PHI, fee.DELTA) or which == "k" else 1e-7
                if which == "k" and k in (fee.ALPHA, fee.RHO):
                    h = 1e-7
                plus, minus = list(theta), list(theta)
                plus[k] += h
                minus[k] -= h
                fp = forces(plus, theta_k) if which == "u" else forces(theta_u, plus)
                fm = forces(minus, theta_k) if which == "u" else forces(theta_u, minus)
                for row in (fee.FX, fee.FZ):
                    numeric = (fp[row] - fm[row]) / (2 * h)
                    analytic = jac[row * 5 + k]
                    tol = 2e-5 * max(abs(numeric), abs(f) * 1e-3 / max(abs(theta[k]), 1e-3), 1e-6)
                    assert abs(numeric - analytic) <= tol, (which, k, row, numeric, analytic)


def test_invalid_domain_is_refused_with_a_named_condition():
    model = fee.Fee()
    good_u, good_k = [5e3, R(30.0), 16e3, 2e3, R(20.0)], [0.0, R(80.0), 0.2, 1.85, 0.0]
    assert model.problem(good_u, good_k) is None
    cases = [([-1.0, R(30.0), 16e3, 2e3, R(20.0)], good_k, "cohesion"),
             ([5e3, R(30.0), 0.0, 2e3, R(20.0)], good_k, "gamma"),
             ([5e3, float("nan"), 16e3, 2e3, R(20.0)], good_k, "finite"),
             (good_u, [0.0, R(80.0), -0.01, 1.85, 0.0], "depth"),
             (good_u, [0.0, R(179.5), 0.2, 1.85, 0.0], "failure angle"),
             (good_u, [R(60.0), R(80.0), 0.2, 1.85, 0.0], "alpha")]
    for theta_u, theta_k, word in cases:
        with pytest.raises(fee.FeeDomainError, match=word):
            model.force(theta_u, theta_k)
    with pytest.raises(ConfigError, match="beta"):
        fee.Fee({"beta": "guess"})


def _index_jacobian(beta_mode="eq11"):
    """J of (fx, fz) stacked over four depths at the loose point of the notes (alpha 0, rho 80 deg)."""
    theta_u = [5e3, R(30.0), 16e3, 2e3, R(20.0)]
    rows = []
    for d in (0.05, 0.10, 0.15, 0.20):
        j_u = fee.jacobian(theta_u, [0.0, R(80.0), d, 1.85, 0.0], beta_mode)[0]
        rows.extend(j_u)
    return rows


def test_nullspace_projection_matches_scipy_pinv_and_the_notes_case():
    """Eq. 9 in SI units with atol = 1500, rtol = 0.05: only the phi and delta directions are identified, so
    c, gamma and c_a get the whole ambiguity variance (notes 2.4: diag(I - J+J) = [1, 0, 1, 1, 0])."""
    j = _index_jacobian()
    n_pure, rank = fee.null_projector(j, 8, 5, 1500.0, 0.05)
    jj = np.array(j).reshape(8, 5)
    n_scipy = np.eye(5) - scipy.linalg.pinv(jj, atol=1500.0, rtol=0.05) @ jj
    assert rank == 2
    assert np.allclose(np.array(n_pure).reshape(5, 5), n_scipy, atol=1e-9)
    assert np.allclose(np.diag(n_scipy), [1.0, 0.0, 1.0, 1.0, 0.0], atol=1e-6)
    n_np, rank_np = fee_numpy.null_projector(jj, 1500.0, 0.05)
    assert rank_np == 2 and np.allclose(n_np, n_scipy, atol=1e-9)


def test_inflation_only_along_null_directions_and_never_shrinks():
    # J sees theta_0 and theta_1 + theta_2 only: the null space is theta_3, theta_4 and (theta_1 - theta_2)
    j = [1e4, 0.0, 0.0, 0.0, 0.0,
         0.0, 5e3, 5e3, 0.0, 0.0]
    var_a = [4.0, 4.0, 4.0, 4.0, 4.0]
    extra, rank = fee.nullspace_variance(j, 2, 5, var_a, 1500.0, 0.05)
    assert rank == 2
    assert abs(extra[0]) < 1e-12
    assert abs(extra[1] - 2.0) < 1e-9 and abs(extra[2] - 2.0) < 1e-9     # half of (1, -1)/sqrt 2 each
    assert abs(extra[3] - 4.0) < 1e-9 and abs(extra[4] - 4.0) < 1e-9
    small = [0.1, 0.1, 9.0, 0.1, 9.0]
    inflated = fee.inflate_variances(small, j, 2, 5, var_a)
    assert inflated == [0.1, 2.0, 9.0, 4.0, 9.0]
    assert all(a >= b for a, b in zip(inflated, small))


def test_scaling_decides_which_directions_count_as_null():
    """Notes A7: the pseudo-inverse's tolerances act on J's columns in the parameters' units. In SI units phi
    and delta are the identified directions; with the parameters divided by their ranges, c and delta are,
    and phi joins c_a and gamma in the null space. A test documents this, the estimator picks the scale."""
    j = _index_jacobian()
    var_a = [1.0, 1.0, 1.0, 1.0, 1.0]
    scale = [30e3, R(30.0), 8e3, 15e3, R(25.0)]
    si, rank_si = fee.nullspace_variance(j, 8, 5, var_a, 1500.0, 0.05)
    proj_scaled, rank_scaled = fee.null_projector([j[r * 5 + k] * scale[k] for r in range(8) for k in range(5)],
                                                  8, 5, 1500.0, 0.05)
    assert rank_si == 2 and rank_scaled == 2
    assert np.allclose(si, [1.0, 0.0, 1.0, 1.0, 0.0], atol=1e-6)
    diag_scaled = [proj_scaled[k * 5 + k] for k in range(5)]
    assert diag_scaled[fee.C] < 0.1 and diag_scaled[fee.DELTA] < 0.01
    assert diag_scaled[fee.PHI] > 0.9 and diag_scaled[fee.GAMMA] > 0.99 and diag_scaled[fee.CA] > 0.9
    var_si = [1e8, 0.01, 1e7, 1e8, 0.01]
    pure, _ = fee.nullspace_variance(j, 8, 5, var_si, 1500.0, 0.05, scale=scale)
    ref, _ = fee_numpy.nullspace_variance(np.array(j).reshape(8, 5), var_si, 1500.0, 0.05, scale=scale)
    assert np.allclose(pure, ref, rtol=1e-7, atol=1e-9)


def test_numpy_path_agrees_with_the_pure_path():
    rng = random.Random(8)
    points = [_random_point(rng, R(rng.uniform(-15.0, 15.0))) for _ in range(40)]
    tu = [np.array([p[0][k] for p in points]) for k in range(5)]
    tk = [np.array([p[1][k] for p in points]) for k in range(5)]
    f, fx, fz, beta, valid = fee_numpy.force(tu, tk)
    bs, _ = fee_numpy.beta_star(tk[0], tk[1], tu[1], tu[4])
    assert np.array_equal(beta, bs)
    for i, (theta_u, theta_k, _b) in enumerate(points):
        b = fee.beta_star(theta_k[0], theta_k[1], theta_u[1], theta_u[4])[0]
        pf, pfx, pfz = fee.force_from_beta(theta_u, theta_k, b)
        assert abs(beta[i] - b) < 1e-10
        assert abs(f[i] - pf) < 1e-9 * abs(pf) and abs(fx[i] - pfx) < 1e-9 * abs(pf)
        assert abs(fz[i] - pfz) < 1e-9 * abs(pf)
        assert bool(valid[i]) == (fee.domain_problem(theta_u, theta_k, b) is None)
        x_np = fee_numpy.wedge_length(theta_k[2], theta_k[0], b)
        assert abs(x_np - fee.wedge_length(theta_k[2], theta_k[0], b)) < 1e-12
    bad_u = [np.array([-1.0]), np.array([R(30.0)]), np.array([16e3]), np.array([0.0]), np.array([R(20.0)])]
    assert not fee_numpy.force(bad_u, [np.array([0.0]), np.array([R(80.0)]), 0.2, 1.85, 0.0])[4][0]


def _curvature_reference(alpha_rad, rho_rad, beta_rad, phi_rad, delta_rad):
    """d^2 ln N_gamma / d beta^2 written out on its own, every term from the angles: the reference the Newton
    step's shared terms must reproduce bit for bit."""
    cot = fee_numpy._cot
    a = cot(rho_rad) + cot(beta_rad)
    csc2_b = 1.0 / np.sin(beta_rad) ** 2
    csc2_u = 1.0 / np.sin(alpha_rad + phi_rad + beta_rad) ** 2
    csc2_e = 1.0 / np.sin(delta_rad + rho_rad + phi_rad + beta_rad) ** 2
    return 2.0 * csc2_b * cot(beta_rad) / a - csc2_b * csc2_b / (a * a) - csc2_u + csc2_e


def test_the_newton_steps_shared_terms_give_the_separate_functions_bits():
    """beta_star's Newton step computes the slope and curvature of ln N_gamma together from the terms that do
    not depend on beta: bit for bit what dlog_n_gamma_dbeta and the curvature written out on its own give (the
    failure angles, and with them every force and estimate, stay as they were)."""
    rng = np.random.default_rng(5)
    n = 20000
    alpha, rho = rng.uniform(-0.4, 0.5, n), rng.uniform(0.2, 1.5, n)
    phi, delta, beta = rng.uniform(0.1, 0.9, n), rng.uniform(0.0, 0.7, n), rng.uniform(0.02, 1.2, n)
    slope, curvature = fee_numpy._slope_and_curvature(beta, fee_numpy._cot(rho), alpha + phi, delta + rho + phi)
    assert np.array_equal(slope, fee_numpy.dlog_n_gamma_dbeta(alpha, rho, beta, phi, delta))
    assert np.array_equal(curvature, _curvature_reference(alpha, rho, beta, phi, delta))
