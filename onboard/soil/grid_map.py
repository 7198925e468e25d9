"""A 2.5-D grid map with named float layers over one geometry (pure, MicroPython), after ANYbotics' grid_map.

The soil paper's map M (section 2.2, Algs. 1-5): elevation H, its variance, the loose-soil thickness L,
one mean and one variance layer per soil property (Alg. 4), the FEE index (section 3.2) and update counts.

Geometry (NED horizontal plane, CONVENTIONS.md): cell (i, j) has its centre at
north = origin_n + (i + 0.5) * cell_m, east = origin_e + (j + 0.5) * cell_m; i runs north (0..n_north-1),
j runs east (0..n_east-1). A layer is a flat ``array('d')`` of n_north * n_east values, element (i, j) at
``i * n_east + j``. Heights are **up** (``elevation_m`` is the height of the surface above the datum;
NED's down is its negative), variances are in the layer's unit squared.

``onboard.soil.grid_map_numpy`` views the same storage as NumPy arrays (CPython only, no copy).
"""
import math
from array import array

from onboard.core.settings import ConfigError, NON_NEGATIVE, POSITIVE, checked, is_number, pair, ANY_NUMBER

ELEVATION = "elevation_m"
ELEVATION_VAR = "elevation_var_m2"
LOOSE = "loose_m"
FEE_INDEX = "fee_index_n"
UPDATES = "updates"
SOIL_KEYS = ("c_pa", "phi_rad", "gamma_npm3", "ca_pa", "delta_rad")   # the slots of onboard.soil.fee


def soil_mean(key):
    """Name of the mean layer of soil property ``key`` (one of SOIL_KEYS), e.g. "soil.phi_rad.mean"."""
    return "soil." + key + ".mean"


def soil_var(key):
    """Name of the variance layer of soil property ``key``, e.g. "soil.phi_rad.var" [rad^2]."""
    return "soil." + key + ".var"


# prior per soil property: [mean, variance] = the preset mid-range and (range / 2)^2 (notes A16) over
# c 0-30 kPa, phi 15-45 deg, gamma 13-21 kN/m^3, c_a 0-15 kPa, delta 5-30 deg
DEFAULTS = {
    "size_m": [24.0, 16.0],                 # extent north, east [m]
    "cell_m": 0.1,                          # cell edge [m]
    "origin_ne_m": [0.0, 0.0],              # north, east of the map's south-west corner [m]
    "elevation_m": 0.0,                     # initial height [m, up]
    "elevation_var_m2": 1e-4,               # initial height variance [m^2]
    "soil_prior": {
        "c_pa": [15000.0, 2.25e8],
        "phi_rad": [0.5236, 0.0685],
        "gamma_npm3": [17000.0, 1.6e7],
        "ca_pa": [7500.0, 5.625e7],
        "delta_rad": [0.3054, 0.0476],
    },
}
# a soil prior: [mean, variance], the variance > 0 (Alg. 4 fuses only into cells of a positive variance)
PRIOR = ("a list [mean, variance] of two numbers, the variance > 0",
         lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and is_number(v[0]) and is_number(v[1]) and v[1] > 0)
SETTING_RANGES = {
    "size_m": pair(POSITIVE),
    "cell_m": POSITIVE,
    "origin_ne_m": pair(ANY_NUMBER),
    "elevation_m": ANY_NUMBER,
    "elevation_var_m2": NON_NEGATIVE,
    "soil_prior.c_pa": PRIOR,
    "soil_prior.phi_rad": PRIOR,
    "soil_prior.gamma_npm3": PRIOR,
    "soil_prior.ca_pa": PRIOR,
    "soil_prior.delta_rad": PRIOR,
}


class GridMapError(ValueError):
    """An unknown layer, a cell outside the map, or a malformed polygon, line or ray (too few vertices,
    non-finite coordinates, a zero direction)."""


def _filled(n, value):
    out = array("d", bytearray(8 * n))
    if value != 0.0:
        for k in range(n):
            out[k] = value
    return out


def _cell_along(x_m, origin_m, cell_m, n):
    """Index k in 0..n-1 of the cell with origin + k * cell <= x < origin + (k + 1) * cell, or None."""
    u = (x_m - origin_m) / cell_m
    if not -1.0 <= u <= n + 1.0:          # also NaN
        return None
    k = int(math.floor(u))
    if origin_m + (k + 1) * cell_m <= x_m:
        k += 1
    elif origin_m + k * cell_m > x_m:
        k -= 1
    if 0 <= k < n:
        return k
    return None


def _cell_or_clamp(x_m, u, origin_m, cell_m, n):
    """:func:`_cell_along` of ``x_m``, or floor(u) (u = (x - origin) / cell) clamped to 0..n-1 off the map."""
    k = _cell_along(x_m, origin_m, cell_m, n)
    if k is None:
        k = min(max(int(math.floor(u)), 0), n - 1)
    return k


def _finite_point(p):
    for v in (p[0], p[1]):
        if not v - v == 0:
            return False
    return True


class GridMap:
    """Named float layers over one grid (see the module docstring for the geometry and storage)."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "grid map")
        self.config = cfg
        self.cell_m = float(cfg["cell_m"])
        self.n_north = int(math.ceil(cfg["size_m"][0] / self.cell_m - 1e-9))
        self.n_east = int(math.ceil(cfg["size_m"][1] / self.cell_m - 1e-9))
        if self.n_north * self.n_east > 4000000:
            raise ConfigError("grid map setting size_m / cell_m gives more than 4 million cells")
        self.origin_n_m = float(cfg["origin_ne_m"][0])
        self.origin_e_m = float(cfg["origin_ne_m"][1])
        self.size = self.n_north * self.n_east
        self.layers = {}
        self.add_layer(ELEVATION, cfg["elevation_m"])
        self.add_layer(ELEVATION_VAR, cfg["elevation_var_m2"])
        self.add_layer(LOOSE, 0.0)
        for key in SOIL_KEYS:
            mean, var = cfg["soil_prior"][key]
            self.add_layer(soil_mean(key), mean)
            self.add_layer(soil_var(key), var)
        self.add_layer(FEE_INDEX, 0.0)
        self.add_layer(UPDATES, 0.0)

    # layers
    def add_layer(self, name, fill=0.0):
        """Add (or reset) layer ``name`` filled with ``fill``; returns its storage."""
        self.layers[name] = _filled(self.size, float(fill))
        return self.layers[name]

    def layer(self, name):
        """The flat storage of layer ``name`` (element (i, j) at i * n_east + j)."""
        try:
            return self.layers[name]
        except KeyError:
            raise GridMapError("no layer %r (layers: %s)" % (name, ", ".join(sorted(self.layers))))

    def layer_names(self):
        return sorted(self.layers)

    def has_layer(self, name):
        return name in self.layers

    # geometry
    def inside(self, i, j):
        return 0 <= i < self.n_north and 0 <= j < self.n_east

    def flat(self, i, j):
        """Flat index of cell (i, j)."""
        return i * self.n_east + j

    def cell_of_flat(self, k):
        return k // self.n_east, k % self.n_east

    def centre(self, i, j):
        """(north_m, east_m) of the centre of cell (i, j)."""
        return self.origin_n_m + (i + 0.5) * self.cell_m, self.origin_e_m + (j + 0.5) * self.cell_m

    def index_of(self, north_m, east_m):
        """(i, j) of the cell holding the point, or None outside the map or for a non-finite point. Cell i
        spans north from origin_n + i * cell_m (included) to origin_n + (i + 1) * cell_m (excluded), these
        edges computed as written, likewise east: a point on a shared edge belongs to the cell north/east of
        it, whatever the division rounds to."""
        i = _cell_along(north_m, self.origin_n_m, self.cell_m, self.n_north)
        j = _cell_along(east_m, self.origin_e_m, self.cell_m, self.n_east)
        if i is None or j is None:
            return None
        return i, j

    def get(self, name, i, j):
        if not self.inside(i, j):
            raise GridMapError("cell (%d, %d) outside the %d x %d map" % (i, j, self.n_north, self.n_east))
        return self.layer(name)[i * self.n_east + j]

    def set(self, name, i, j, value):
        if not self.inside(i, j):
            raise GridMapError("cell (%d, %d) outside the %d x %d map" % (i, j, self.n_north, self.n_east))
        self.layer(name)[i * self.n_east + j] = value

    def at(self, name, north_m, east_m):
        """Value of layer ``name`` in the cell holding the point, or None outside the map."""
        ij = self.index_of(north_m, east_m)
        if ij is None:
            return None
        return self.layer(name)[ij[0] * self.n_east + ij[1]]

    def volume_m3(self, name=ELEVATION, cells=None):
        """Sum of layer ``name`` times the cell area [m^3 for a height layer], over ``cells`` (flat indices)
        or the whole map."""
        values = self.layer(name)
        total = 0.0
        if cells is None:
            for v in values:
                total += v
        else:
            for k in cells:
                total += values[k]
        return total * self.cell_m * self.cell_m

    # iterators
    def _clip(self, n0, e0, n1, e1):
        """Parameters (t0, t1) in [0, 1] of the segment part inside the map's rectangle, or None
        (Liang-Barsky)."""
        t0, t1 = 0.0, 1.0
        dn, de = n1 - n0, e1 - e0
        lo_n, hi_n = self.origin_n_m, self.origin_n_m + self.n_north * self.cell_m
        lo_e, hi_e = self.origin_e_m, self.origin_e_m + self.n_east * self.cell_m
        for p, q in ((-dn, n0 - lo_n), (dn, hi_n - n0), (-de, e0 - lo_e), (de, hi_e - e0)):
            if p == 0.0:
                if q < 0.0:
                    return None
                continue
            r = q / p
            if p < 0.0:
                if r > t1:
                    return None
                if r > t0:
                    t0 = r
            else:
                if r < t0:
                    return None
                if r < t1:
                    t1 = r
        return t0, t1

    def line_cells(self, start_ne_m, end_ne_m):
        """Cells (i, j) the segment from ``start_ne_m`` to ``end_ne_m`` passes through, in order from the
        start, clipped to the map (the DDA grid traversal of Amanatides and Woo; soil paper Algs. 2-3)."""
        if not (_finite_point(start_ne_m) and _finite_point(end_ne_m)):
            raise GridMapError("line end points must be finite numbers, got %r and %r" % (start_ne_m, end_ne_m))
        n0, e0 = start_ne_m[0], start_ne_m[1]
        n1, e1 = end_ne_m[0], end_ne_m[1]
        if n0 == n1 and e0 == e1:
            # a point: the cell holding it (index_of), none on the map's north or east border
            ij = self.index_of(n0, e0)
            return [] if ij is None else [ij]
        clipped = self._clip(n0, e0, n1, e1)
        if clipped is None:
            return []
        t0, t1 = clipped
        dn, de = n1 - n0, e1 - e0
        g = self.cell_m
        # start and end points in cell units; their cells as index_of finds them (clamped onto the map
        # where the clipped segment ends on its north or east border)
        pn0, pe0 = (n0, e0) if t0 == 0.0 else (n0 + t0 * dn, e0 + t0 * de)
        pn1, pe1 = (n1, e1) if t1 == 1.0 else (n0 + t1 * dn, e0 + t1 * de)
        un = (pn0 - self.origin_n_m) / g
        ue = (pe0 - self.origin_e_m) / g
        vn = (pn1 - self.origin_n_m) / g
        ve = (pe1 - self.origin_e_m) / g
        i = _cell_or_clamp(pn0, un, self.origin_n_m, g, self.n_north)
        j = _cell_or_clamp(pe0, ue, self.origin_e_m, g, self.n_east)
        i_end = _cell_or_clamp(pn1, vn, self.origin_n_m, g, self.n_north)
        j_end = _cell_or_clamp(pe1, ve, self.origin_e_m, g, self.n_east)
        sn, se = vn - un, ve - ue
        step_i = 1 if sn > 0 else -1
        step_j = 1 if se > 0 else -1
        inf = float("inf")
        if sn != 0.0:
            t_max_i = ((i + (1 if sn > 0 else 0)) - un) / sn
            t_delta_i = abs(1.0 / sn)
        else:
            t_max_i, t_delta_i = inf, inf
        if se != 0.0:
            t_max_j = ((j + (1 if se > 0 else 0)) - ue) / se
            t_delta_j = abs(1.0 / se)
        else:
            t_max_j, t_delta_j = inf, inf
        out = [(i, j)]
        limit = abs(i_end - i) + abs(j_end - j)
        for _ in range(limit):
            # the next grid line crossed; a row (column) already at the end cell's is never left, so that a
            # tie at a corner (or rounding there) cannot step beside the end cell
            if j == j_end or (i != i_end and t_max_i < t_max_j):
                i += step_i
                t_max_i += t_delta_i
            else:
                j += step_j
                t_max_j += t_delta_j
            if not self.inside(i, j):
                break
            out.append((i, j))
        return out

    def ray_cells(self, start_ne_m, direction_ne, length_m):
        """Cells along the ray from ``start_ne_m`` in the horizontal ``direction_ne`` (normalised here) over
        ``length_m`` (:meth:`line_cells`)."""
        if not (_finite_point(direction_ne) and length_m - length_m == 0):
            raise GridMapError("ray direction and length must be finite numbers, got %r and %r"
                               % (direction_ne, length_m))
        norm = math.sqrt(direction_ne[0] * direction_ne[0] + direction_ne[1] * direction_ne[1])
        if not norm > 0.0:
            raise GridMapError("ray direction must not be zero")
        return self.line_cells(start_ne_m, (start_ne_m[0] + direction_ne[0] / norm * length_m,
                                            start_ne_m[1] + direction_ne[1] / norm * length_m))

    def polygon_cells(self, vertices_ne_m):
        """Cells (i, j) whose centres lie inside the polygon (a list of (north_m, east_m) vertices, closed
        implicitly; even-odd rule, scan lines through the cell centres, half-open so that a centre on an
        edge shared by two polygons belongs to exactly one), row by row."""
        n = len(vertices_ne_m)
        if n < 3:
            raise GridMapError("a polygon needs at least 3 vertices, got %d" % n)
        for v in vertices_ne_m:
            if not _finite_point(v):
                raise GridMapError("polygon vertices must be finite numbers, got %r" % (v,))
        ns = [v[0] for v in vertices_ne_m]
        es = [v[1] for v in vertices_ne_m]
        g = self.cell_m
        i_lo = max(int(math.floor((min(ns) - self.origin_n_m) / g - 0.5)), 0)
        i_hi = min(int(math.ceil((max(ns) - self.origin_n_m) / g - 0.5)), self.n_north - 1)
        out = []
        for i in range(i_lo, i_hi + 1):
            yn = self.origin_n_m + (i + 0.5) * g
            xs = []
            for k in range(n):
                na, ea = ns[k], es[k]
                nb, eb = ns[(k + 1) % n], es[(k + 1) % n]
                if nb < na:
                    # from the southern end: an edge shared by two polygons (traversed in opposite
                    # directions) then crosses a scan line at the same east, to the last bit
                    na, ea, nb, eb = nb, eb, na, ea
                if na <= yn < nb:
                    xs.append(ea + (yn - na) * (eb - ea) / (nb - na))
            xs.sort()
            for p in range(0, len(xs) - 1, 2):
                # centres e_j with xs[p] <= e_j < xs[p + 1]
                j0 = max(int(math.ceil((xs[p] - self.origin_e_m) / g - 0.5)), 0)
                j1 = min(int(math.ceil((xs[p + 1] - self.origin_e_m) / g - 0.5)) - 1, self.n_east - 1)
                for j in range(j0, j1 + 1):
                    out.append((i, j))
        return out
