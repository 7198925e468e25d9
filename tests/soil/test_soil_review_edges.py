"""Edge cases of the soil map and the FEE: cell index at the map's edges and for non-finite points, the line,
ray and polygon iterators at degenerate or non-finite inputs, the failure angle's upper bound inside the FEE's
own validity domain, and the Gaussian fusion never raising a variance through rounding."""
import math
import random

import numpy as np
import pytest

from onboard.soil import fee, fee_numpy
from onboard.soil.grid_map import ELEVATION, GridMap, GridMapError, SOIL_KEYS, soil_mean, soil_var
from onboard.soil.soil_layers import SoilLayers


def _map():
    # negative origin: the cell edges origin + k * cell are not all exact binary fractions
    return GridMap({"size_m": [1.0, 1.0], "cell_m": 0.1, "origin_ne_m": [-1.0, -0.5]})


def test_a_point_on_a_cell_edge_belongs_to_the_cell_north_of_it_whatever_the_division_rounds():
    g = _map()
    for k in range(g.n_north):
        edge = g.origin_n_m + k * g.cell_m            # (-1.0 + 0.1) / 0.1 divides to 0.999...: cell 0
        assert g.index_of(edge, 0.0) == (k, 5)
        assert g.index_of(-0.55, g.origin_e_m + k * g.cell_m) == (4, k)
    # just inside the north edge (-1e-17 above -> 10.0 after the division) is the last row
    assert g.index_of(-1e-17, 0.0) == (g.n_north - 1, 5)
    assert g.index_of(g.origin_n_m + g.n_north * g.cell_m, 0.0) is None
    for n in (-1.0, -0.3, -0.7, -0.05):
        ij = g.index_of(n, 0.0)
        lo_n = g.origin_n_m + ij[0] * g.cell_m
        assert lo_n <= n < lo_n + g.cell_m


@pytest.mark.parametrize("point", [(math.nan, 0.0), (math.inf, 0.0), (0.0, -math.inf), (1e308, 0.0),
                                   (-1e308, -1e308)])
def test_a_non_finite_or_huge_point_is_outside_the_map(point):
    g = _map()
    assert g.index_of(*point) is None
    assert g.at(ELEVATION, *point) is None


def test_a_zero_length_line_is_the_cell_holding_its_point_or_nothing():
    g = _map()
    assert g.line_cells((-0.55, 0.0), (-0.55, 0.0)) == [(4, 5)]
    assert g.line_cells((0.0, 0.0), (0.0, 0.0)) == []          # on the north border: outside (index_of)
    assert g.line_cells((5.0, 5.0), (5.0, 5.0)) == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_iterator_inputs_raise_a_grid_map_error(bad):
    g = _map()
    with pytest.raises(GridMapError, match="finite"):
        g.line_cells((bad, 0.0), (-0.5, 0.0))
    with pytest.raises(GridMapError, match="finite"):
        g.line_cells((-0.5, 0.0), (-0.5, bad))
    with pytest.raises(GridMapError, match="finite"):
        g.ray_cells((-0.5, 0.0), (bad, 1.0), 1.0)
    with pytest.raises(GridMapError, match="finite"):
        g.ray_cells((-0.5, 0.0), (1.0, 0.0), bad)
    with pytest.raises(GridMapError, match="finite"):
        g.polygon_cells([(-0.9, -0.4), (bad, 0.0), (-0.1, 0.4)])


def test_degenerate_polygons_hold_no_cells():
    g = _map()
    assert g.polygon_cells([(-0.9, -0.4), (-0.5, 0.0), (-0.1, 0.4)]) == []      # collinear
    assert g.polygon_cells([(5.0, 5.0), (6.0, 5.0), (6.0, 6.0)]) == []          # beyond the map
    assert g.polygon_cells([(-0.55, 0.05), (-0.55, 0.05), (-0.55, 0.05)]) == []  # one point


def test_the_failure_angle_upper_bound_is_admissible_as_the_domain_sums_eta():
    rng = random.Random(4)
    lim = fee.DEFAULTS
    checked = 0
    for _ in range(3000):
        phi, delta = rng.uniform(0.01, 1.5), rng.uniform(0.0, 1.5)
        rho, alpha = rng.uniform(0.02, 3.1), rng.uniform(-0.7, 0.7)
        lo, hi, which = fee.beta_bounds(alpha, rho, phi, delta)
        if which != "eta" or not hi > lo:
            continue
        checked += 1
        assert delta + rho + phi + hi <= lim["eta_max_rad"]
        assert hi > lim["eta_max_rad"] - delta - rho - phi - 1e-14
        b_np = fee_numpy.beta_star(alpha, rho, phi, delta)[0]
        b_pure = fee.beta_star(alpha, rho, phi, delta)[0]
        assert float(b_np) == pytest.approx(b_pure, rel=1e-9, abs=1e-12)
    assert checked > 500


def test_a_failure_angle_at_the_eta_bound_is_accepted_by_the_fee():
    # beta* sits on eta's bound; eta_max - delta - rho - phi summed back as delta + rho + phi + beta rounds
    # one unit above eta_max
    alpha, rho, phi, delta = 0.4564622821889117, 3.051369152267929, 0.033450302791615316, 0.017359914868944414
    lim = fee.DEFAULTS["eta_max_rad"]
    assert delta + rho + phi + (lim - delta - rho - phi) > lim
    beta, at_bound = fee.beta_star(alpha, rho, phi, delta)
    assert at_bound and fee.beta_bounds(alpha, rho, phi, delta)[2] == "eta"
    theta_u, theta_k = [1e3, phi, 1e4, 1e3, delta], [alpha, rho, 0.1, 1.0, 0.0]
    assert fee.Fee().problem(theta_u, theta_k) is None
    f, fx, fz, b = fee.Fee().force(theta_u, theta_k)
    assert b == beta and f > 0.0
    assert bool(fee_numpy.force(theta_u, theta_k)[4])


def test_on_a_surface_falling_faster_than_phi_the_failure_angle_stops_where_the_wedge_has_weight():
    # alpha + phi < 0: N_gamma falls to 0 at alpha + phi + beta = 0; beta* is the bound beta_min above it,
    # not a bisection onto the pole (whose sign, and so the domain's verdict, rounding decided)
    lim = fee.DEFAULTS
    f = fee.Fee()
    for alpha in (-0.4, -0.5, -0.6, -0.7):
        phi, delta, rho = 0.3, 0.2, 1.4 + alpha
        beta, at_bound = fee.beta_star(alpha, rho, phi, delta)
        assert at_bound
        assert beta == pytest.approx(lim["beta_min_rad"] - alpha - phi, abs=1e-15)
        theta_u, theta_k = [5e3, phi, 16e3, 2e3, delta], [alpha, rho, 0.2, 1.85, 0.0]
        assert f.problem(theta_u, theta_k) is None
        assert fee.n_factors(alpha, rho, beta, phi, delta)[0] > 0.01
        assert float(fee_numpy.beta_star(alpha, rho, phi, delta)[0]) == beta
        # on that bound beta moves with alpha and phi: the Jacobian still matches central differences
        j_u, j_k, _force = f.jacobian(theta_u, theta_k)
        for slot, jac, vec, cols in ((fee.PHI, j_u, theta_u, fee.N_U), (fee.ALPHA, j_k, theta_k, fee.N_K)):
            h = 1e-6
            up, dn = list(vec), list(vec)
            up[slot] += h
            dn[slot] -= h
            args_up = (up, theta_k) if vec is theta_u else (theta_u, up)
            args_dn = (dn, theta_k) if vec is theta_u else (theta_u, dn)
            num = (f.force(*args_up)[1] - f.force(*args_dn)[1]) / (2 * h)
            assert jac[fee.FX * cols + slot] == pytest.approx(num, rel=1e-4)
    with pytest.raises(fee.FeeDomainError, match="no admissible"):
        fee.beta_star(-0.78, 2.9, 0.05, 0.1)


def test_non_finite_fee_parameters_are_named_as_such():
    f = fee.Fee()
    tk = [0.0, math.radians(80.0), 0.2, 1.85, 0.0]
    for k in (fee.PHI, fee.DELTA):
        tu = [5e3, 0.5, 16e3, 2e3, 0.3]
        tu[k] = math.nan
        with pytest.raises(fee.FeeDomainError, match="finite"):
            f.force(tu, tk)
        assert f.problem(tu, tk) == "parameters must be finite"
    with pytest.raises(fee.FeeDomainError, match="finite"):
        f.force([5e3, 0.5, 16e3, 2e3, 0.3], [math.inf] + tk[1:])


def test_fusion_never_raises_a_variance_through_rounding():
    g = GridMap({"size_m": [1.0, 1.0], "cell_m": 0.1})
    layers = SoilLayers(g, {"wedge_weight": 0.0, "min_wedge_m": 0.0})
    cell = g.flat(3, 4)
    s = 8.568666217068631e-10                  # r s / (s + r) rounds to s + 1 ulp for this pair
    r = 3250008093.295209
    assert r * s / (s + r) > s
    for key in SOIL_KEYS:
        g.layer(soil_var(key))[cell] = s
    before = [g.layer(soil_mean(key))[cell] for key in SOIL_KEYS]
    assert layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [r] * 5, [(cell, 0.0, 0.5)]) == [cell]
    for k, key in enumerate(SOIL_KEYS):
        assert g.layer(soil_var(key))[cell] <= s
        assert g.layer(soil_mean(key))[cell] == pytest.approx(before[k], rel=1e-15)
    rng = np.random.default_rng(3)
    for _ in range(300):
        s = float(10.0 ** rng.uniform(-10, 10))
        r = float(10.0 ** rng.uniform(-10, 10))
        for key in SOIL_KEYS:
            g.layer(soil_var(key))[cell] = s
        layers.fuse([1.0, 0.5, 1.0, 1.0, 0.3], [r] * 5, [(cell, 0.0, 0.5)])
        assert all(g.layer(soil_var(key))[cell] <= s for key in SOIL_KEYS)


def test_the_truth_force_and_the_estimator_keep_an_admissible_angle_on_a_steep_fall():
    # a surface falling faster than phi raises beta's lower bound to beta_min - alpha - phi: the truth force
    # and the classical estimator clip the rake so that an angle stays admissible (they raised otherwise)
    from harness.sim.blade_force import TruthBladeForce
    from onboard.soil.cut_estimator import CutEstimator, CutWindow
    alpha = np.array([-0.7, -0.7, 0.0])
    rho = np.array([1.05, 0.7, 1.4])
    theta = [np.full(3, 1e3), np.full(3, 0.017), np.full(3, 1.5e4), np.full(3, 1e3), np.full(3, 1.5)]
    beta, rho_ok = TruthBladeForce._beta(alpha, rho, theta)
    assert np.all(fee_numpy.valid_mask(theta, [alpha, rho_ok, 0.1, 1.85, 0.0], beta))
    assert rho_ok[2] == min(1.4, fee.DEFAULTS["eta_max_rad"] - 1.5 - 0.017 - 2 * fee.DEFAULTS["beta_min_rad"])
    window = CutWindow(alpha, rho, [0.1] * 3, [1.85] * 3, [0.0] * 3, [1e3] * 3, [1e3] * 3)
    fx, fz = CutEstimator({"bounds": {"delta_rad": [0.0, 1.5]}}).predict([1e3, 0.09, 1.5e4, 1e3, 1.5], window)
    assert np.all(np.isfinite(fx)) and np.all(np.isfinite(fz))


def test_line_cells_start_and_end_in_the_cells_index_of_finds_even_on_grid_lines_and_corners():
    g = GridMap({"size_m": [1.0, 1.5], "cell_m": 0.1, "origin_ne_m": [-0.6, -0.35]})
    rng = random.Random(3)

    def point():
        if rng.random() < 0.5:            # on grid lines and corners, some beyond the map
            return (g.origin_n_m + rng.randint(-2, 12) * g.cell_m, g.origin_e_m + rng.randint(-2, 17) * g.cell_m)
        return (rng.uniform(-1.0, 0.8), rng.uniform(-0.8, 1.5))

    for _ in range(400):
        a, b = point(), point()
        cells = g.line_cells(a, b)
        if g.index_of(*a) is not None:
            assert cells[0] == g.index_of(*a), (a, b)
        if g.index_of(*b) is not None:
            assert cells[-1] == g.index_of(*b), (a, b)
        assert len(set(cells)) == len(cells)
        assert all(abs(p[0] - q[0]) + abs(p[1] - q[1]) == 1 for p, q in zip(cells, cells[1:]))
    # the corner case: from the south-east up to a corner point, which belongs to the cell north-east of it
    a, b = (-0.8, 0.9500000000000001), (-0.5, 0.050000000000000044)
    assert g.line_cells(a, b)[-1] == g.index_of(*b) == (1, 4)
