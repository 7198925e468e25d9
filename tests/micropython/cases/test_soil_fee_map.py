"""Soil paper FEE (eqs. 1, 2, 4, 9, 11), grid map and blind mapping (Algs. 1-3, 5): the same numbers under
CPython and inside MicroPython."""
import math

from onboard.soil import blind_map, fee
from onboard.soil.blind_map import BladePose, BlindMapper
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap

R = math.radians
POINTS = (
    ([5e3, R(30.0), 16e3, 2e3, R(20.0)], [0.0, R(80.0), 0.2, 1.85, 0.0]),
    ([15e3, R(40.0), 19e3, 5e3, R(25.0)], [0.0, R(70.0), 0.1, 1.2, 3000.0]),
    ([0.0, R(35.0), 17e3, 0.0, R(22.0)], [R(8.0), R(95.0), 0.3, 1.85, 500.0]),
)


def _mckyes_f(theta_u, theta_k, beta):
    c, phi, gamma, ca, delta = theta_u
    rho, d, w, big_q = theta_k[1], theta_k[2], theta_k[3], theta_k[4]
    den = math.cos(rho + delta) + math.sin(rho + delta) / math.tan(beta + phi)
    wedge = 1.0 / math.tan(rho) + 1.0 / math.tan(beta)
    n_c = (1.0 + 1.0 / (math.tan(beta) * math.tan(beta + phi))) / den
    n_a = (1.0 - 1.0 / (math.tan(rho) * math.tan(beta + phi))) / den
    return gamma * d * d * w * wedge / (2.0 * den) + c * d * w * n_c + big_q / den + ca * d * w * n_a


def test_fee_equals_mckyes_on_flat_ground():
    for theta_u, theta_k in POINTS[:2]:
        f, fx, fz, beta = fee.Fee().force(theta_u, theta_k)
        p = _mckyes_f(theta_u, theta_k, beta)
        assert abs(f - p) < 1e-9 * p
        assert abs(fx - p * math.sin(theta_k[1] + theta_u[4])) < 1e-9 * p


def test_invalid_domain_raises():
    try:
        fee.Fee().force([-1.0, R(30.0), 16e3, 0.0, R(20.0)], [0.0, R(80.0), 0.2, 1.85, 0.0])
    except fee.FeeDomainError as exc:
        assert "cohesion" in str(exc)
    else:
        raise AssertionError("negative cohesion accepted")


def golden_forces_and_failure_angles():
    out = []
    for theta_u, theta_k in POINTS:
        f, fx, fz, beta = fee.Fee().force(theta_u, theta_k)
        out.extend([f, fx, fz, beta, fee.wedge_length(theta_k[2], theta_k[0], beta)])
        out.extend(fee.force_from_beta(theta_u, theta_k, fee.beta_eq11(theta_u[1])))
    return out


def golden_jacobians_and_inflation():
    out = []
    rows = []
    for d in (0.05, 0.1, 0.15, 0.2):
        j_u, j_k, _force = fee.jacobian(POINTS[0][0], [0.0, R(80.0), d, 1.85, 0.0])
        rows.extend(j_u)
        out.extend(j_k)
    out.extend(rows)
    extra, rank = fee.nullspace_variance(rows, 8, 5, [1e8, 0.01, 1e7, 1e8, 0.01], 1500.0, 0.05)
    out.extend(extra)
    out.append(rank)
    return out


def golden_grid_lines_and_polygons():
    g = GridMap({"size_m": [2.0, 1.5], "cell_m": 0.1})
    cells = g.line_cells((0.13, 0.07), (1.91, 1.37)) + g.line_cells((1.95, 0.3), (-0.5, 0.9))
    poly = g.polygon_cells([(0.2, 0.2), (1.7, 0.4), (1.1, 1.3), (0.6, 0.9)])
    return [list(c) for c in cells] + [len(poly)] + [list(c) for c in poly]


def _cut():
    g = GridMap({"size_m": [3.0, 2.0], "cell_m": 0.1})
    h = g.layer(ELEVATION)
    for i in range(g.n_north):
        for j in range(g.n_east):
            h[g.flat(i, j)] = 0.05 * (i * 0.1)          # rising 2.9 deg northwards
    m = BlindMapper(g, {"blade_width_m": 1.0, "erosion": {"iterations": 3, "roi_m": 0.6}})
    records = []
    for k in range(31):
        n = 0.52 + 0.02 * k
        rec = m.on_blade_pose(BladePose(k * 16667, n, 1.0, -(0.05 * (n - 0.05) - 0.12), 0.0, R(12.0), 0.0))
        if rec is not None:
            records.append(rec)
    return g, m, records


def test_blind_cut_keeps_the_volumes():
    g, m, records = _cut()
    bank = 0.0
    for r in records:
        bank += r.bank_cut_m3
    assert bank > 0.0
    assert abs(g.volume_m3(LOOSE) - 1.2 * bank) < 1e-12
    assert records[1].valid


def golden_blind_cut():
    g, m, records = _cut()
    out = [g.volume_m3(ELEVATION), g.volume_m3(LOOSE), len(records)]
    for r in records:
        out.extend([r.alpha_rad, r.rho_rad, r.depth_m, r.width_m, r.cut_m3, r.surcharge_m3[-1], r.cut_cells])
    out.append(blind_map.slip_height(0.3, 0.1, 25.0, 0.26, 14000.0, 0.05))
    return out
