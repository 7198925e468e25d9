"""Truth soil force on the blade (harness; NumPy): the onboard FEE evaluated slice by slice on the truth
terrain, plus an inertial term, so that estimating from it is not an inverse crime.

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader": eqs. 1, 2, 4 (the FEE, ``onboard.soil.fee_numpy``), Alg. 4 line 5
(the wedge length x_max), section 3.1 (Vortex's soil force is "FEE plus extras": the pseudo ground truth);
the blade is sliced after Holz et al. (the paper's [36], Alg. 2); reading aid ``shared/papers/notes/soil.md``
section 5.3. The inertial term is McKyes' (1985) acceleration term as written by Wilkinson and DeGennaro
(2007): F_a = (gamma / g) v^2 d w N_a,
N_a = (tan beta + cot(beta + phi)) / ((cos(rho + delta) + sin(rho + delta) cot(beta + phi)) (1 + tan beta cot rho)).

Where the onboard estimator sees one (alpha, rho, d, w, Q) per sweep from its map and one set of
properties, the truth force cuts the blade into ``slices`` strips across its width; each strip gets

- its own surface: a weighted line fit z = z0 + x tan(alpha_s) (weights exp(-C_x x)) to the truth bank
  surface at ``fit_points`` points from one cell to ``look_ahead_m`` ahead of its edge point, along the
  blade's horizontal normal; its depth d_s = (z0 - z_edge) cos(alpha_s) (perpendicular to the surface, 0
  when the edge is above it) and rake rho_s = rho_h + alpha_s (rho_h: the face from the horizontal);
- its own properties: the truth fields averaged at ``wedge_points`` points along its failure wedge, from the
  edge to x_max = d / (cos alpha (tan(alpha + beta) - tan alpha)) (beta* of the properties at the edge);
- its share of the surcharge, Q w_s / w, with Q = gamma_l V the weight of the truth carried pile;
- the FEE with its own beta* (min N_gamma), plus the inertial term at the blade's speed.

The strips' forces, each along its own direction rho_s + delta_s - alpha_s (eq. 2), sum to the horizontal
force ``fx_n`` (positive against the direction of travel: the draught), the vertical force ``fz_n``
(positive down, NED; negative when the soil lifts the blade) and the moments about the edge centre
``roll_moment_nm`` = sum lam_s fz_s and ``yaw_moment_nm`` = sum lam_s fx_s (lam_s: the strip's position
right of the centre along the edge). Sensor noise and bias are added by the sensors of
``harness.sim.track_loader``.
"""
import math

import numpy as np

from onboard.core.rotations import euler_to_dcm
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least
from onboard.soil import fee_numpy
from onboard.soil.blind_map import rake_from_horizontal
from onboard.soil.fee import DEFAULTS as FEE_LIMITS

GRAVITY_MPS2 = 9.80665
PROPERTY_KEYS = ("c_pa", "phi_rad", "gamma_npm3", "ca_pa", "delta_rad")

DEFAULTS = {
    "slices": 16,                     # strips across the blade
    "fit_points": 8,                  # surface points per strip for its line fit
    "look_ahead_m": 0.8,              # farthest surface point ahead of the edge
    "line_fit_weight_per_m": 2.0,     # C_x of the per-strip fit
    "wedge_points": 4,                # property samples along each strip's failure wedge
    "inertial": True,                 # McKyes' acceleration term
    "alpha_abs_max_rad": 0.7,         # a strip's fitted slope is clipped here (inside the FEE's domain)
    "min_depth_m": 0.0,               # strips shallower than this cut nothing
}
SETTING_RANGES = {
    "slices": int_at_least(1),
    "fit_points": int_at_least(2),
    "look_ahead_m": POSITIVE,
    "line_fit_weight_per_m": NON_NEGATIVE,
    "wedge_points": int_at_least(1),
    "inertial": BOOLEAN,
    "alpha_abs_max_rad": ("a number in (0, 0.78]", lambda v: isinstance(v, (int, float)) and 0.0 < v <= 0.78),
    "min_depth_m": NON_NEGATIVE,
}


class BladeForce:
    """The truth force of one instant (module docstring for the frames): ``fx_n``, ``fz_n``,
    ``roll_moment_nm``, ``yaw_moment_nm``, ``inertial_n`` (the inertial terms' share of the magnitude
    summed over strips), ``surcharge_n`` (Q), and per strip (arrays of length ``slices``): ``lam_m``,
    ``alpha_rad``, ``rho_rad``, ``depth_m``, ``width_m``, ``beta_rad``, ``f_n``, ``theta_u`` (five arrays in the
    ``onboard.soil.fee`` slots). ``depth_m_mean`` is the depth averaged over strips in contact (0 if none)."""

    def __init__(self):
        self.fx_n = 0.0
        self.fz_n = 0.0
        self.roll_moment_nm = 0.0
        self.yaw_moment_nm = 0.0
        self.inertial_n = 0.0
        self.surcharge_n = 0.0
        self.depth_m_mean = 0.0
        self.lam_m = None
        self.alpha_rad = None
        self.rho_rad = None
        self.depth_m = None
        self.width_m = None
        self.beta_rad = None
        self.f_n = None
        self.theta_u = None


def inertial_factor(rho_rad, beta_rad, phi_rad, delta_rad):
    """McKyes' N_a (module docstring), dimensionless, over arrays."""
    cot_bp = 1.0 / np.tan(beta_rad + phi_rad)
    num = np.tan(beta_rad) + cot_bp
    den = ((np.cos(rho_rad + delta_rad) + np.sin(rho_rad + delta_rad) * cot_bp)
           * (1.0 + np.tan(beta_rad) / np.tan(rho_rad)))
    return num / den


def _weighted_line(xs, zs, ws):
    """Row-wise weighted least-squares lines z = z0 + m x: (z0, m) arrays (one row per strip)."""
    sw = ws.sum(axis=1)
    sx = (ws * xs).sum(axis=1)
    sz = (ws * zs).sum(axis=1)
    sxx = (ws * xs * xs).sum(axis=1)
    sxz = (ws * xs * zs).sum(axis=1)
    den = sw * sxx - sx * sx
    m = (sw * sxz - sx * sz) / den
    return (sz - m * sx) / sw, m


class TruthBladeForce:
    """The sliced truth force (module docstring); settings :data:`DEFAULTS`."""

    def __init__(self, config=None):
        self.config = checked(DEFAULTS, SETTING_RANGES, config, "truth blade force")

    def _properties(self, terrain, north_m, east_m):
        """Five arrays of the truth properties at the cells holding the points (clamped to the grid)."""
        g = terrain.cell_m
        i = np.clip(np.floor(np.asarray(north_m) / g).astype(int), 0, terrain.n_north - 1)
        j = np.clip(np.floor(np.asarray(east_m) / g).astype(int), 0, terrain.n_east - 1)
        vals = terrain.fields.values
        return [vals[k][i, j] for k in PROPERTY_KEYS]

    def force(self, terrain, pose, width_m, speed_mps=0.0):
        """:class:`BladeForce` on the blade (``onboard.soil.blind_map.BladePose``, ``width_m`` wide) cutting
        ``terrain`` (``harness.sim.soil_terrain.SoilTerrain``) while moving at ``speed_mps`` along its
        horizontal normal; the surcharge is the terrain's carried pile."""
        cfg = self.config
        n_s = cfg["slices"]
        r = euler_to_dcm(pose.roll_rad, pose.pitch_rad, pose.yaw_rad)
        y = np.array([r[1], r[4], -r[7]])
        nh = np.array([r[0], r[3]])
        nn = math.hypot(nh[0], nh[1])
        normal = nh / nn if nn > 1e-9 else np.array([math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)])
        centre = np.array([pose.north_m, pose.east_m, -pose.down_m])
        lam = (np.arange(n_s) + 0.5) / n_s * width_m - 0.5 * width_m
        tips = centre[None, :] + lam[:, None] * y[None, :]
        # per-strip surface line fit along the normal
        g = terrain.cell_m
        x = np.linspace(g, max(cfg["look_ahead_m"], 2.0 * g), cfg["fit_points"])
        pn = tips[:, 0:1] + x[None, :] * normal[0]
        pe = tips[:, 1:2] + x[None, :] * normal[1]
        zs = terrain.bank_at(pn, pe)
        xs = np.broadcast_to(x, zs.shape)
        ws = np.broadcast_to(np.exp(-cfg["line_fit_weight_per_m"] * x), zs.shape)
        z0, slope = _weighted_line(xs, zs, ws)
        a_max = cfg["alpha_abs_max_rad"]
        alpha = np.clip(np.arctan(slope), -a_max, a_max)
        depth = (z0 - tips[:, 2]) * np.cos(alpha)
        depth = np.where(depth > cfg["min_depth_m"], depth, 0.0)
        rho_h = rake_from_horizontal(pose, (float(normal[0]), float(normal[1])))
        lim = FEE_LIMITS
        rho = np.clip(rho_h + alpha, lim["rho_min_rad"], lim["rho_max_rad"])
        w_s = np.full(n_s, width_m / n_s * float(math.hypot(y[0], y[1])))
        q_total = terrain.loose_unit_weight_npm3 * terrain.pile_m3
        q = q_total * w_s / max(float(w_s.sum()), 1e-12)
        # properties under each strip's failure wedge (beta* of the properties at its edge first)
        theta0 = self._properties(terrain, tips[:, 0] + 0.5 * g * normal[0], tips[:, 1] + 0.5 * g * normal[1])
        beta0, _rho0 = self._beta(alpha, rho, theta0)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_max = fee_numpy.wedge_length(np.maximum(depth, 1e-3), alpha, beta0)
        x_max = np.where(np.isfinite(x_max) & (x_max > 0.0), x_max, g)
        frac = (np.arange(cfg["wedge_points"]) + 0.5) / cfg["wedge_points"]
        wn = tips[:, 0:1] + (x_max[:, None] * frac[None, :]) * normal[0]
        we = tips[:, 1:2] + (x_max[:, None] * frac[None, :]) * normal[1]
        theta = [p.mean(axis=1) for p in self._properties(terrain, wn, we)]
        beta, rho = self._beta(alpha, rho, theta)
        theta_k = [alpha, rho, depth, w_s, q]
        f, _fx, _fz = fee_numpy.force_from_beta(theta, theta_k, beta)
        inertial = np.zeros(n_s)
        if cfg["inertial"] and speed_mps != 0.0:
            c, phi, gamma, ca, delta = theta
            inertial = (gamma / GRAVITY_MPS2 * speed_mps * speed_mps * depth * w_s
                        * inertial_factor(rho, beta, phi, delta))
            inertial = np.where(np.isfinite(inertial), inertial, 0.0)
        f = np.where(np.isfinite(f), f + inertial, 0.0)
        psi = rho + theta[4] - alpha
        fx_s = f * np.sin(psi)
        fz_s = f * np.cos(psi)
        out = BladeForce()
        out.fx_n = float(fx_s.sum())
        out.fz_n = float(fz_s.sum())
        out.roll_moment_nm = float((lam * fz_s).sum())
        out.yaw_moment_nm = float((lam * fx_s).sum())
        out.inertial_n = float(inertial.sum())
        out.surcharge_n = float(q_total)
        out.lam_m, out.alpha_rad, out.rho_rad, out.depth_m, out.width_m = lam, alpha, rho, depth, w_s
        out.beta_rad, out.f_n, out.theta_u = beta, f, theta
        touching = depth > 0.0
        out.depth_m_mean = float(depth[touching].mean()) if np.any(touching) else 0.0
        return out

    @staticmethod
    def _beta(alpha, rho, theta):
        """(beta*, rho): the failure angle minimising N_gamma per strip, and the rake, clipped where needed so
        that an angle is admissible (eta = delta + rho + phi + beta below its limit, with beta above
        beta_min and above beta_min - alpha - phi: ``onboard.soil.fee.beta_bounds``)."""
        lim = FEE_LIMITS
        phi, delta = theta[1], theta[4]
        extra = np.maximum(-alpha - phi, 0.0)        # how far the lower bound lies above beta_min
        rho_ok = np.minimum(rho, lim["eta_max_rad"] - delta - phi - 2.0 * lim["beta_min_rad"] - extra)
        return fee_numpy.beta_star(alpha, rho_ok, phi, delta, lim["beta_min_rad"], lim["eta_max_rad"])[0], rho_ok
