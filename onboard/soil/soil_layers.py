"""Per-cell Bayesian soil-property layers and the FEE index map (pure, MicroPython).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader": Alg. 4 (UpdateSoilLayers) and section 3.2 (the FEE index);
reading aid ``shared/papers/notes/soil.md`` (section 2.6, the cleaned-up Alg. 4; decisions A5, A6, A11,
A15-A17).

**Fusion (Alg. 4 as the notes clean it up, decision A5).** An estimate (theta_hat_k, s_hat_k) per soil
property k of ``grid_map.SOIL_KEYS`` (its variance already carries eq. 9's null-space inflation combined
with ``max``, notes A6) updates each cell i of the failure wedge ahead of the blade by a scalar product of
Gaussians, the *estimate's* variance inflated with the cell's distance x_i from the blade along travel:

    r_i   = exp(C_s x_i / x_max) s_hat_k                      (Alg. 4 line 11-12, C_w = 1 at the blade)
    mu_i+ = (r_i mu_i- + s_i- theta_hat_k) / (s_i- + r_i)     (line 16)
    s_i+  = r_i s_i- / (s_i- + r_i)                           (line 17)

for the cells with 0 <= x_i < max(x_max, x_min) (line 10); x_max = d / (cos(alpha)(tan(alpha + beta) -
tan(alpha))) (line 5, ``onboard.soil.fee.wedge_length``) with the sweep's geometry and the failure angle
beta* of the estimated phi and delta (notes A4). A cell reached from several poses keeps its smallest
x / x_max (notes A11). The update commutes (two estimates fused in either order give the same layers, up
to rounding) and never raises a variance. There is no process noise (the paper has none).

Counters: ``updated`` (cells fused), ``rejected`` (cells refused: a flat index that is not an int inside the
map, a distance that is not a finite number >= 0 (a bool is not a number), a cell whose layer variance is not
finite and positive, or every cell of an estimate whose mean is not a finite number or whose variance is not
a finite number > 0), ``fusions`` (estimates fused), ``refused``
(estimates refused whole). A refused cell or estimate leaves the layers as they were.

**FEE index (section 3.2, decisions A15, A17).** F^idx = f_FEE(Theta^idx), the magnitude of eq. 1 with a
cell's fused property means at the fixed geometry alpha = 0, rho = 80 deg, w = 1.85 m, d = 0.2 m, Q = 0
(:data:`INDEX_THETA_K`) and beta* [N]; written into ``grid_map.FEE_INDEX`` for the cells fused (the others
keep 0). ``updates`` counts the fusions per cell.
"""
import math

from onboard.core.settings import NON_NEGATIVE, checked, one_of, within
from onboard.soil import fee
from onboard.soil.grid_map import FEE_INDEX, SOIL_KEYS, UPDATES, soil_mean, soil_var

# the index geometry of section 3.2 (onboard.soil.fee theta_k slots): alpha, rho, d, w, Q
INDEX_THETA_K = (0.0, math.radians(80.0), 0.2, 1.85, 0.0)

DEFAULTS = {
    "wedge_weight": 1.0,          # C_s of Alg. 4: the estimate's variance grows by e^{C_s} to the wedge's end
    "min_wedge_m": 0.2,           # x_min of Alg. 4: the wedge reaches at least this far ahead of the blade
    "beta": "min_n_gamma",        # failure angle of x_max and the index: beta* (notes A4) or "eq11"
}
SETTING_RANGES = {
    "wedge_weight": within(0.0, 20.0),
    "min_wedge_m": NON_NEGATIVE,
    "beta": one_of("min_n_gamma", "eq11"),
}


class SoilLayersError(ValueError):
    """A malformed estimate or wedge (wrong number of values, a wedge entry that is not (cell, x, x_max))."""


_INF = float("inf")


def _finite(v):
    """A finite int or float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (v - v == 0)


def wedge_ahead(grid, edge_ne_m, t_hat_ne, width_m, length_m):
    """[(flat index, x_m)] of the cells whose centres lie ahead of the cutting-edge centre ``edge_ne_m`` by
    0 <= x < ``length_m`` along the horizontal unit direction of travel ``t_hat_ne`` and within
    ``width_m`` / 2 across it (the horizontal extent of the failure wedge under a blade of that width)."""
    tn, te = t_hat_ne[0], t_hat_ne[1]
    norm = math.sqrt(tn * tn + te * te)
    if not norm > 0.0:
        raise SoilLayersError("wedge direction must not be zero")
    tn, te = tn / norm, te / norm
    pn, pe = -te, tn                                 # across, to the left of travel
    h = 0.5 * width_m
    n0, e0 = edge_ne_m[0], edge_ne_m[1]
    corners = [(n0 + pn * h, e0 + pe * h), (n0 - pn * h, e0 - pe * h),
               (n0 - pn * h + tn * length_m, e0 - pe * h + te * length_m),
               (n0 + pn * h + tn * length_m, e0 + pe * h + te * length_m)]
    lo_n = min(c[0] for c in corners) - grid.cell_m
    hi_n = max(c[0] for c in corners) + grid.cell_m
    lo_e = min(c[1] for c in corners) - grid.cell_m
    hi_e = max(c[1] for c in corners) + grid.cell_m
    i0 = max(int(math.floor((lo_n - grid.origin_n_m) / grid.cell_m)), 0)
    i1 = min(int(math.floor((hi_n - grid.origin_n_m) / grid.cell_m)), grid.n_north - 1)
    j0 = max(int(math.floor((lo_e - grid.origin_e_m) / grid.cell_m)), 0)
    j1 = min(int(math.floor((hi_e - grid.origin_e_m) / grid.cell_m)), grid.n_east - 1)
    out = []
    for i in range(i0, i1 + 1):
        for j in range(j0, j1 + 1):
            cn, ce = grid.centre(i, j)
            x = (cn - n0) * tn + (ce - e0) * te
            s = (cn - n0) * pn + (ce - e0) * pe
            if 0.0 <= x < length_m and -h <= s <= h:
                out.append((i * grid.n_east + j, x))
    return out


def failure_angle(alpha_rad, rho_rad, phi_rad, delta_rad, beta_mode="min_n_gamma"):
    """The failure angle [rad]: beta* = argmin N_gamma (notes A4) or eq. 11's beta0."""
    if beta_mode == "eq11":
        return fee.beta_eq11(phi_rad)
    return fee.beta_star(alpha_rad, rho_rad, phi_rad, delta_rad)[0]


def record_wedge(records, phi_rad, delta_rad, min_wedge_m=0.0, beta_mode="min_n_gamma"):
    """[(flat index, x_m, x_max_m)] of the failure wedges of the valid sweeps ``records``
    (``onboard.soil.blind_map.SweepRecord``: ``wedge_cells`` = Alg. 4's P and X^t, and the sweep's
    alpha, rho, depth), each sweep's x_max from Alg. 4 line 5 with its geometry and the failure angle of the
    estimated ``phi_rad`` and ``delta_rad``; the cells with x < max(x_max, ``min_wedge_m``), a cell reached by
    several sweeps once, with its smallest x / x_max (notes A11). Sweeps whose wedge is undefined (no
    admissible failure angle) are left out."""
    best = {}
    for rec in records:
        if not rec.valid or not rec.depth_m > 0.0:
            continue
        try:
            beta = failure_angle(rec.alpha_rad, rec.rho_rad, phi_rad, delta_rad, beta_mode)
            x_max = fee.wedge_length(rec.depth_m, rec.alpha_rad, beta)
        except (ValueError, ZeroDivisionError):
            continue
        if not (_finite(x_max) and x_max > 0.0):
            continue
        limit = x_max if x_max > min_wedge_m else min_wedge_m
        for k, x in rec.wedge_cells:
            if x < limit:
                ratio = x / x_max
                old = best.get(k)
                if old is None or ratio < old[1] / old[2]:
                    best[k] = (k, x, x_max)
    return [best[k] for k in sorted(best)]


class SoilLayers:
    """Alg. 4 and the FEE index on a ``grid_map.GridMap`` (module docstring); settings :data:`DEFAULTS`."""

    def __init__(self, grid, config=None):
        self.config = checked(DEFAULTS, SETTING_RANGES, config, "soil layers")
        self.grid = grid
        self.fee = fee.Fee({"beta": self.config["beta"]})
        self.updated = 0
        self.rejected = 0
        self.fusions = 0
        self.refused = 0
        self.index_failed = 0

    def counters(self):
        return {"updated": self.updated, "rejected": self.rejected, "fusions": self.fusions,
                "refused": self.refused, "index_failed": self.index_failed}

    def fuse(self, theta, var, wedge):
        """Fuse one estimate, ``theta`` and ``var`` (5 values each, ``grid_map.SOIL_KEYS`` order, SI units),
        into the cells of ``wedge``, [(flat index, x_m, x_max_m)] (:func:`record_wedge`; x_max_m the wedge
        length that scales the inflation); the cells with 0 <= x < max(x_max, min_wedge_m) are fused, those
        beyond are left untouched. Returns the flat indices fused. Bad values are counted (module
        docstring); a malformed argument raises :class:`SoilLayersError`; either way nothing changes
        except the counters."""
        n = len(SOIL_KEYS)
        if len(theta) != n or len(var) != n:
            raise SoilLayersError("a soil estimate needs %d means and %d variances, got %d and %d"
                                  % (n, n, len(theta), len(var)))
        entries = []
        for item in wedge:
            if len(item) != 3:
                raise SoilLayersError("a wedge entry is (flat index, x_m, x_max_m), got %r" % (item,))
            entries.append(item)
        ok = True
        for k in range(n):
            if not (_finite(theta[k]) and _finite(var[k]) and var[k] > 0.0):
                ok = False
        if not ok:
            self.refused += 1
            self.rejected += len(entries)
            return []
        grid = self.grid
        c_s = self.config["wedge_weight"]
        x_min = self.config["min_wedge_m"]
        means = [grid.layer(soil_mean(key)) for key in SOIL_KEYS]
        vars_ = [grid.layer(soil_var(key)) for key in SOIL_KEYS]
        updates = grid.layer(UPDATES)
        done = []
        for cell, x, x_max in entries:
            if not (isinstance(cell, int) and not isinstance(cell, bool) and 0 <= cell < grid.size
                    and _finite(x) and x >= 0.0 and _finite(x_max) and x_max > 0.0):
                self.rejected += 1
                continue
            if x >= (x_max if x_max > x_min else x_min):
                continue
            good = True
            for k in range(n):
                s = vars_[k][cell]
                if not (_finite(s) and s > 0.0 and _finite(means[k][cell])):
                    good = False
            if not good:
                self.rejected += 1
                continue
            try:
                c_w = math.exp(c_s * x / x_max)      # Alg. 4 line 11
            except (OverflowError, ValueError):      # MicroPython: ValueError("math domain error")
                c_w = _INF
            if not c_w < _INF:
                # a cell far beyond a tiny wedge (x / x_max in the thousands): r is infinite, the
                # estimate says nothing about this cell, which keeps its values (the update's limit)
                continue
            for k in range(n):
                r = c_w * var[k]                     # line 12 (the estimate's variance, notes A5)
                s = vars_[k][cell]
                mean = (r * means[k][cell] + s * theta[k]) / (s + r)     # line 16
                v = r * s / (s + r)                                      # line 17
                if v > s:
                    v = s                # rounding (r >> s): the product never raises the variance
                # r so large that the products overflow (or so small they underflow to 0): the limit is
                # no change (or one the layer cannot hold); the property keeps its values
                if mean - mean == 0 and v - v == 0 and v > 0.0:
                    means[k][cell] = mean
                    vars_[k][cell] = v
            updates[cell] += 1.0
            done.append(cell)
        if done:
            self.fusions += 1
        self.updated += len(done)
        return done

    def fuse_records(self, theta, var, records):
        """Fuse an estimate over the failure wedges of the sweeps it was estimated from (:func:`record_wedge`
        with the estimate's phi and delta); returns the flat indices fused."""
        if len(theta) != len(SOIL_KEYS):
            raise SoilLayersError("a soil estimate needs %d means, got %d" % (len(SOIL_KEYS), len(theta)))
        phi, delta = theta[fee.PHI], theta[fee.DELTA]
        if not (_finite(phi) and _finite(delta)):
            return self.fuse(theta, var, [])
        wedge = record_wedge(records, phi, delta, self.config["min_wedge_m"], self.config["beta"])
        return self.fuse(theta, var, wedge)

    def index_at(self, theta):
        """F^idx [N] of properties ``theta`` (section 3.2: eq. 1's f at :data:`INDEX_THETA_K`), or None
        where the FEE is not valid for them."""
        try:
            return self.fee.force(theta, INDEX_THETA_K)[0]
        except (ValueError, ZeroDivisionError):
            return None

    def refresh_index(self, cells):
        """Write F^idx of each cell's fused means into ``FEE_INDEX`` for the flat indices ``cells``; a cell
        where the FEE is not valid keeps its value and is counted in ``index_failed``."""
        grid = self.grid
        means = [grid.layer(soil_mean(key)) for key in SOIL_KEYS]
        out = grid.layer(FEE_INDEX)
        for cell in cells:
            f = self.index_at([m[cell] for m in means])
            if f is None or not _finite(f):
                self.index_failed += 1
                continue
            out[cell] = f
