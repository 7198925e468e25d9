"""Soil terrain of the soil paper's world (full CTL scale, SI units): bank soil, a loose-soil layer, blade
cutting at an explicit depth into a surcharge pile carried by the blade, spill, and erosion to repose.

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader" (section 3: the hybrid heightmap of Vortex, swell s = 1.2, loose-soil
c_l = 25 Pa, phi_l = 0.26 rad; section 3.1: terrain as a mixture of Gaussians); reading aid
``shared/papers/notes/soil.md`` (sections 5.3, decisions A13, A14, A18).

Grid (as ``harness.sim.soil_world`` and ``onboard.soil.grid_map``, origin at (0, 0)): ``height_m[i, j]`` is
the surface height **up** [m] of the cell whose centre is at north = (i + 0.5) * cell_m,
east = (j + 0.5) * cell_m; ``loose_m[i, j]`` the thickness [m] of loose (disturbed, swelled) soil on top
of the bank soil, so the bank surface is ``height_m - loose_m``. The truth property fields
(``soil_world.SoilFields``) belong to the bank soil of the same cells.

The blade (``onboard.soil.blind_map.BladePose``: the cutting edge's centre in NED and the blade frame's
Z-Y-X Euler angles, x out of the face, y right along the edge) is moved from pose to pose with
:meth:`SoilTerrain.move_blade`. Between two poses:

- **cut**: every cell whose centre the cutting edge passes over (the edge line at T0 behind the centre, at
  T1 at or ahead of it, within the edge's ends) and whose surface lies above the edge there is cut down to
  the edge: its loose part goes to the pile as it is, its bank part swells by s (notes A14);
- **spread**: where the edge passes above the surface, pile soil flows under it up to the edge, at most
  the pile's face height (a raised blade spreads); a blade lifted above its pile leaves the pile where it
  stands (:meth:`drop_pile`);
- **pile**: the carried loose volume V (the truth surcharge, Q = gamma_l V) rests against the blade as a
  wedge at the pile's repose angle r (``pile.repose_rad``, by default the loose soil's phi_l), cross-section
  A = V / w, face height h_p = sqrt(2 A tan r); above
  the blade's height it is over capacity and the excess spills at the ends;
- **spill**: each end leaves ``pile.side_spill_per_m`` A per metre of forward travel as a windrow in the
  cell just beyond the end;
- **erosion** of loose soil around the blade after every ``erosion.every_m`` of travel, in four passes of
  disjoint 4-neighbour pairs (the tiling of the paper's Alg. 5, Fig. 7): model ``"eq12"`` slips with the
  eq. 12 slip law of ``onboard.soil.blind_map`` (the onboard map's own model: "matched" erosion when the
  loose-soil settings agree), model ``"repose"`` moves half the excess over the repose slope tan(r) per pass
  (a different law, for the mismatched case); nothing leaves a cell under the blade, and soil enters one
  only up to the blade's underside.

Volume bookkeeping is exact (up to rounding): bank soil turns into s times its volume of loose soil, loose
soil only moves, so ``bank_m3 + (loose_m3 + pile_m3 + off_map_m3) / s`` never changes
(:meth:`SoilTerrain.volumes`), where ``off_map_m3`` is loose soil spilled or dropped beyond the map.
"""
import math

import numpy as np

from onboard.core.rotations import euler_to_dcm
from onboard.core.settings import ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, one_of, \
    or_null, pair, within
from onboard.soil.blind_map import blade_footprint
from onboard.soil.blind_map_numpy import blade_mask, pair_passes, slip_pass, slip_height as eq12_slip_height
from harness.sim.soil_world import loose_properties

DEFAULTS = {
    "datum_m": 0.0,                   # bank surface height of flat ground [m, up]
    "relief": {                       # mixture of Gaussians (paper section 3.1): hills (+) and dips (-)
        "count": 0,
        "height_m": [-0.3, 0.3],      # amplitude range
        "sigma_m": [1.0, 3.0],        # standard deviation range of each bump
        "margin_m": 1.0,              # bump centres this far inside the borders
    },
    "loose_layer_m": 0.02,            # initial loose-soil thickness over the bank soil [m]
    "swell": 1.2,                     # s, loose / bank volume (paper section 3)
    "loose": {
        "cohesion_pa": 25.0,          # c_l (paper section 3)
        "friction_rad": 0.26,         # phi_l (paper section 3)
        "unit_weight_npm3": None,     # gamma_l; None: soil_world.loose_properties of the fields' soil
    },
    "pile": {
        "repose_rad": None,           # slope of the pile's face ahead of the blade; None: loose.friction_rad
        "side_spill_per_m": 0.05,     # windrow per end per metre of travel, in pile cross-sections A
    },
    "cut_tolerance_m": 1e-9,          # a surface above the edge by less is not cut
    "erosion": {
        "enabled": True,
        "model": "eq12",              # "eq12" (the onboard map's slip law) or "repose"
        "repose_rad": 0.6,            # model "repose": angle of repose of loose soil
        "dt_s": 0.05,                 # model "eq12": slip time step (Alg. 5's delta t)
        "iterations": 10,             # passes after each erosion trigger
        "roi_m": 2.0,                 # half size of the square eroded around the blade
        "every_m": 0.1,               # blade travel between erosion triggers
    },
}
SETTING_RANGES = {
    "datum_m": ANY_NUMBER,
    "relief.count": int_at_least(0),
    "relief.height_m": pair(ANY_NUMBER, ordered=True),
    "relief.sigma_m": pair(POSITIVE, ordered=True),
    "relief.margin_m": NON_NEGATIVE,
    "loose_layer_m": NON_NEGATIVE,
    "swell": within(1.0, 3.0),
    "loose.cohesion_pa": NON_NEGATIVE,
    "loose.friction_rad": within(0.0, 1.4),
    "loose.unit_weight_npm3": or_null(POSITIVE),
    "pile.repose_rad": or_null(within(0.05, 1.4)),
    # a null pile.repose_rad takes loose.friction_rad, which may be 0: the pile's wedge needs a slope (tan r > 0)
    ("pile.repose_rad", "loose.friction_rad"): (
        "a pile slope of at least 0.05 rad (pile.repose_rad null takes loose.friction_rad)",
        lambda r, phi: r is not None or phi >= 0.05),
    "pile.side_spill_per_m": within(0.0, 10.0),
    "cut_tolerance_m": NON_NEGATIVE,
    "erosion.enabled": BOOLEAN,
    "erosion.model": one_of("eq12", "repose"),
    "erosion.repose_rad": within(0.0, 1.4),
    "erosion.dt_s": POSITIVE,
    "erosion.iterations": int_at_least(0),
    "erosion.roi_m": POSITIVE,
    "erosion.every_m": POSITIVE,
}


class BladeStep:
    """What one blade move did [m^3]: ``bank_cut_m3`` (bank volume cut), ``loose_cut_m3`` (loose volume
    cut), ``spread_m3`` (pile soil left under a raised edge), ``spilled_m3`` (windrows at the ends and
    over-capacity spill), ``dropped_m3`` (a pile left behind by a lifted blade), ``pile_m3`` (the carried
    pile after the move), ``cut_cells`` and ``forward_m`` (edge-centre travel along the blade normal)."""

    def __init__(self):
        self.bank_cut_m3 = 0.0
        self.loose_cut_m3 = 0.0
        self.spread_m3 = 0.0
        self.spilled_m3 = 0.0
        self.dropped_m3 = 0.0
        self.pile_m3 = 0.0
        self.cut_cells = 0
        self.forward_m = 0.0


class _Edge:
    """A blade pose's cutting edge in (north, east, up): centre, edge direction y (right), horizontal unit
    normal n (out of the face), and the horizontal edge direction y_h (not normalised)."""

    def __init__(self, pose):
        r = euler_to_dcm(pose.roll_rad, pose.pitch_rad, pose.yaw_rad)
        self.centre = np.array([pose.north_m, pose.east_m, -pose.down_m])
        self.y = np.array([r[1], r[4], -r[7]])
        xh = np.array([r[0], r[3]])
        norm = math.hypot(xh[0], xh[1])
        self.normal = xh / norm if norm > 1e-9 else np.array([math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)])
        self.y_h = self.y[:2]
        self.face_cos = abs(r[8])          # vertical part of the face direction (cos of the tilt from vertical)

    def ends(self, width_m):
        half = 0.5 * width_m
        return self.centre - half * self.y, self.centre + half * self.y


def mixture_relief(shape, cell_m, cfg, rng):
    """Bank heights [m, up] of a mixture of Gaussians (paper section 3.1) around ``cfg['datum_m']``:
    ``relief.count`` bumps of random amplitude, width and centre, drawn with numpy Generator ``rng``."""
    r = cfg["relief"]
    out = np.full(shape, float(cfg["datum_m"]))
    if r["count"] == 0:
        return out
    if rng is None:
        raise ValueError("soil terrain relief.count > 0 needs a random stream")
    n = (np.arange(shape[0]) + 0.5) * cell_m
    e = (np.arange(shape[1]) + 0.5) * cell_m
    nn, ee = np.meshgrid(n, e, indexing="ij")
    size_n, size_e = shape[0] * cell_m, shape[1] * cell_m
    m = min(r["margin_m"], 0.5 * size_n, 0.5 * size_e)
    for _ in range(r["count"]):
        cn = rng.uniform(m, size_n - m)
        ce = rng.uniform(m, size_e - m)
        amp = rng.uniform(*r["height_m"])
        sig = rng.uniform(*r["sigma_m"])
        out += amp * np.exp(-((nn - cn) ** 2 + (ee - ce) ** 2) / (2.0 * sig * sig))
    return out


class SoilTerrain:
    """The truth terrain over a ``soil_world.SoilFields`` grid (module docstring). Settings:
    :data:`DEFAULTS`; ``rng`` (numpy Generator, e.g. ``RunRandom(seed).stream("soil_terrain")``) draws the
    relief. The attributes ``cell_m``, ``origin_n_m``, ``origin_e_m``, ``n_north``, ``n_east`` describe the
    grid as ``onboard.soil.grid_map.GridMap`` does."""

    def __init__(self, fields, config=None, rng=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "soil terrain")
        self.config = cfg
        self.fields = fields
        self.cell_m = float(fields.cell_m)
        self.n_north, self.n_east = fields.shape
        self.origin_n_m = 0.0
        self.origin_e_m = 0.0
        self.area_m2 = self.cell_m * self.cell_m
        bank = mixture_relief(fields.shape, self.cell_m, cfg, rng)
        self.loose_m = np.full(fields.shape, float(cfg["loose_layer_m"]))
        self.height_m = bank + self.loose_m
        self.swell = float(cfg["swell"])
        lw = cfg["loose"]["unit_weight_npm3"]
        if lw is None:
            lw = self._default_loose_unit_weight()
        self.loose_unit_weight_npm3 = float(lw)
        self.pile_m3 = 0.0
        self.off_map_m3 = 0.0
        self.totals = BladeStep()            # running sums of every move's figures
        self._last_pose = None
        self._travel_since_erosion_m = 0.0
        n = (np.arange(self.n_north) + 0.5) * self.cell_m
        e = (np.arange(self.n_east) + 0.5) * self.cell_m
        self._cn, self._ce = n, e

    def _default_loose_unit_weight(self):
        soil = self.fields.soil
        if soil is not None:
            kinds = set(np.unique(np.asarray(soil, dtype=object)).tolist())
            if len(kinds) == 1:
                return loose_properties(kinds.pop())["unit_weight_npm3"]
        return 0.8 * float(np.min(self.fields.values["gamma_npm3"]))

    # ------------------------------------------------------------------ queries
    def bank_m(self):
        """Bank-surface heights [m, up] (a new array)."""
        return self.height_m - self.loose_m

    def _bilinear(self, grid, north_m, east_m):
        g = self.cell_m
        u = np.asarray(north_m, dtype=float) / g - 0.5
        v = np.asarray(east_m, dtype=float) / g - 0.5
        i0 = np.clip(np.floor(u).astype(int), 0, self.n_north - 2)
        j0 = np.clip(np.floor(v).astype(int), 0, self.n_east - 2)
        fu = np.clip(u - i0, 0.0, 1.0)
        fv = np.clip(v - j0, 0.0, 1.0)
        return ((1 - fu) * (1 - fv) * grid[i0, j0] + fu * (1 - fv) * grid[i0 + 1, j0]
                + (1 - fu) * fv * grid[i0, j0 + 1] + fu * fv * grid[i0 + 1, j0 + 1])

    def surface_at(self, north_m, east_m):
        """Surface height [m, up] (bank + loose, without the carried pile), bilinear between cell centres,
        clamped at the borders; broadcasts over arrays."""
        return self._bilinear(self.height_m, north_m, east_m)

    def bank_at(self, north_m, east_m):
        """Bank-surface height [m, up], bilinear (as :meth:`surface_at`)."""
        return self._bilinear(self.height_m - self.loose_m, north_m, east_m)

    def cell_index(self, north_m, east_m):
        """(i, j) of the cell holding the point, or None outside the grid or for a non-finite point."""
        if not (north_m - north_m == 0 and east_m - east_m == 0):     # NaN or an infinity
            return None
        i = int(math.floor(north_m / self.cell_m))
        j = int(math.floor(east_m / self.cell_m))
        if 0 <= i < self.n_north and 0 <= j < self.n_east:
            return i, j
        return None

    def index_of(self, north_m, east_m):
        """As :meth:`cell_index` (the name ``onboard.soil.grid_map.GridMap`` uses)."""
        return self.cell_index(north_m, east_m)

    def volumes(self):
        """{"bank_m3", "loose_m3", "pile_m3", "off_map_m3", "bank_equivalent_m3"}: the bank soil above the
        zero datum, the loose soil on the map, the carried pile, the loose soil gone off the map, and the
        conserved bank + (loose + pile + off map) / s."""
        a = self.area_m2
        bank = float(np.sum(self.height_m - self.loose_m)) * a
        loose = float(np.sum(self.loose_m)) * a
        return {"bank_m3": bank, "loose_m3": loose, "pile_m3": self.pile_m3, "off_map_m3": self.off_map_m3,
                "bank_equivalent_m3": bank + (loose + self.pile_m3 + self.off_map_m3) / self.swell}

    # ------------------------------------------------------------------ the pile
    def _pile_repose_rad(self):
        r = self.config["pile"]["repose_rad"]
        return self.config["loose"]["friction_rad"] if r is None else r

    def pile_shape(self, width_m):
        """(cross-section A [m^2], face height h_p [m], length L_p [m]) of the carried pile against a blade
        of projected width ``width_m``: a wedge at the pile's repose angle r, h_p = sqrt(2 A tan r),
        L_p = h_p / tan r."""
        if self.pile_m3 <= 0.0 or width_m <= 0.0:
            return 0.0, 0.0, 0.0
        tan_r = math.tan(self._pile_repose_rad())
        area = self.pile_m3 / width_m
        h = math.sqrt(2.0 * area * tan_r)
        return area, h, h / tan_r

    def pile_overlay(self, pose, width_m):
        """(flat cell indices, thicknesses [m]) of the carried pile rendered on the map ahead of the blade
        at ``pose``: the wedge's thickness h_p (1 - x / L_p) at each cell centre a distance 0 < x < L_p
        ahead of the edge and within its ends, scaled so the cells hold the pile's volume exactly (also the
        part beyond the map, returned with index -1); a pile too small to reach a cell centre sits in the
        cell just ahead of the edge centre."""
        if self.pile_m3 <= 0.0:
            return np.zeros(0, dtype=int), np.zeros(0)
        edge = _Edge(pose)
        w_eff = width_m * math.hypot(edge.y_h[0], edge.y_h[1])
        _a, _h, length = self.pile_shape(w_eff)
        g = self.cell_m
        left, right = edge.ends(width_m)
        pts = np.array([left[:2], right[:2], left[:2] + edge.normal * length, right[:2] + edge.normal * length])
        i0 = int(math.floor(pts[:, 0].min() / g)) - 1
        i1 = int(math.floor(pts[:, 0].max() / g)) + 1
        j0 = int(math.floor(pts[:, 1].min() / g)) - 1
        j1 = int(math.floor(pts[:, 1].max() / g)) + 1
        ii, jj = np.meshgrid(np.arange(i0, i1 + 1), np.arange(j0, j1 + 1), indexing="ij")
        ii, jj = ii.ravel(), jj.ravel()
        pn, pe = (ii + 0.5) * g - edge.centre[0], (jj + 0.5) * g - edge.centre[1]
        x = pn * edge.normal[0] + pe * edge.normal[1]
        yy = float(edge.y_h @ edge.y_h)
        lam = (pn * edge.y_h[0] + pe * edge.y_h[1]) / yy if yy > 1e-12 else np.zeros_like(pn)
        sel = (x > 0.0) & (x < length) & (np.abs(lam) <= 0.5 * width_m)
        if not np.any(sel):
            p = edge.centre[:2] + edge.normal * (0.5 * g)
            ij = self.cell_index(p[0], p[1])
            k = -1 if ij is None else ij[0] * self.n_east + ij[1]
            return np.array([k]), np.array([self.pile_m3 / self.area_m2])
        wgt = 1.0 - x[sel] / length
        thick = wgt * (self.pile_m3 / self.area_m2 / float(np.sum(wgt)))
        ii, jj = ii[sel], jj[sel]
        inside = (ii >= 0) & (ii < self.n_north) & (jj >= 0) & (jj < self.n_east)
        flat = np.where(inside, ii * self.n_east + jj, -1)
        return flat, thick

    def surface_with_pile(self, pose, width_m):
        """Surface heights [m, up] with the carried pile rendered ahead of the blade at ``pose`` (a new
        array): what a LIDAR or a comparison with a map sees."""
        out = self.height_m.copy()
        flat, thick = self.pile_overlay(pose, width_m)
        ok = flat >= 0
        np.add.at(out.ravel(), flat[ok], thick[ok])
        return out

    def _deposit(self, flat, thick):
        """Add loose soil of thicknesses ``thick`` [m] to cells ``flat`` (-1: off the map)."""
        ok = flat >= 0
        h, lo = self.height_m.ravel(), self.loose_m.ravel()
        np.add.at(h, flat[ok], thick[ok])
        np.add.at(lo, flat[ok], thick[ok])
        self.off_map_m3 += float(np.sum(thick[~ok])) * self.area_m2

    def drop_pile(self, pose=None, width_m=1.85):
        """Leave the carried pile on the ground ahead of the blade at ``pose`` (default: the last pose) as
        loose soil, shaped as :meth:`pile_overlay`; returns the volume dropped [m^3]."""
        pose = self._last_pose if pose is None else pose
        if self.pile_m3 <= 0.0 or pose is None:
            return 0.0
        flat, thick = self.pile_overlay(pose, width_m)
        self._deposit(flat, thick)
        dropped = self.pile_m3
        self.pile_m3 = 0.0
        self.totals.dropped_m3 += dropped
        return dropped

    def _spill_cell(self, edge, width_m, side):
        """Flat index (-1 off the map) of the cell half a cell beyond the edge's ``side`` end (-1 left,
        +1 right) and half a cell ahead of it."""
        g = self.cell_m
        yh = edge.y_h
        ny = math.hypot(yh[0], yh[1])
        u = yh / ny if ny > 1e-9 else np.array([-edge.normal[1], edge.normal[0]])
        end = edge.centre[:2] + side * (0.5 * width_m * ny) * u
        p = end + side * 0.5 * g * u + 0.5 * g * edge.normal
        ij = self.cell_index(p[0], p[1])
        return -1 if ij is None else ij[0] * self.n_east + ij[1]

    # ------------------------------------------------------------------ cutting
    def place_blade(self, pose):
        """Put the blade at ``pose`` without sweeping any soil (start of a lane, a teleport)."""
        self._last_pose = pose

    def swept_cells(self, pose0, pose1, width_m):
        """(flat indices, bottom heights [m, up]) of the cells whose centres the cutting edge passed over
        moving forward from ``pose0`` to ``pose1``: behind the edge line at T0, at or ahead of it at T1,
        and within the ends of the edge interpolated between the two; the bottom is that edge's height."""
        e0, e1 = _Edge(pose0), _Edge(pose1)
        g = self.cell_m
        pts = np.array([p[:2] for p in e0.ends(width_m) + e1.ends(width_m)])
        i0 = max(int(math.floor(pts[:, 0].min() / g)) - 1, 0)
        i1 = min(int(math.floor(pts[:, 0].max() / g)) + 1, self.n_north - 1)
        j0 = max(int(math.floor(pts[:, 1].min() / g)) - 1, 0)
        j1 = min(int(math.floor(pts[:, 1].max() / g)) + 1, self.n_east - 1)
        if i0 > i1 or j0 > j1:
            return np.zeros(0, dtype=int), np.zeros(0)
        ii, jj = np.meshgrid(np.arange(i0, i1 + 1), np.arange(j0, j1 + 1), indexing="ij")
        ii, jj = ii.ravel(), jj.ravel()
        pn, pe = (ii + 0.5) * g, (jj + 0.5) * g
        u0 = (pn - e0.centre[0]) * e0.normal[0] + (pe - e0.centre[1]) * e0.normal[1]
        u1 = (pn - e1.centre[0]) * e1.normal[0] + (pe - e1.centre[1]) * e1.normal[1]
        sel = (u0 > 0.0) & (u1 <= 0.0)
        if not np.any(sel):
            return np.zeros(0, dtype=int), np.zeros(0)
        ii, jj, pn, pe, u0, u1 = ii[sel], jj[sel], pn[sel], pe[sel], u0[sel], u1[sel]
        f = (u0 / (u0 - u1))[:, None]
        c = e0.centre[None, :] + f * (e1.centre - e0.centre)[None, :]
        y = e0.y[None, :] + f * (e1.y - e0.y)[None, :]
        yy = np.sum(y[:, :2] ** 2, axis=1)
        lam = ((pn - c[:, 0]) * y[:, 0] + (pe - c[:, 1]) * y[:, 1]) / np.maximum(yy, 1e-12)
        inside = np.abs(lam) <= 0.5 * width_m
        z = c[:, 2] + lam * y[:, 2]
        return (ii * self.n_east + jj)[inside], z[inside]

    def move_blade(self, pose, width_m, height_m):
        """Move the blade (``width_m`` wide, ``height_m`` high) from its last pose to ``pose``: drop a pile
        the edge has risen above, cut, spread, carry and spill (module docstring), and erode after every
        ``erosion.every_m`` of travel. Returns the move's :class:`BladeStep`. The first call only places the
        blade."""
        step = BladeStep()
        prev = self._last_pose
        self._last_pose = pose
        if prev is None:
            step.pile_m3 = self.pile_m3
            return step
        cfg = self.config
        e0, e1 = _Edge(prev), _Edge(pose)
        w_eff = width_m * math.hypot(e1.y_h[0], e1.y_h[1])
        # a blade lifted above its pile leaves the pile behind
        if self.pile_m3 > 0.0:
            _a, h_p, _l = self.pile_shape(w_eff)
            ground = float(self.surface_at(e1.centre[0], e1.centre[1]))
            if e1.centre[2] - ground >= h_p:
                step.dropped_m3 = self.drop_pile(prev, width_m)
        flat, zb = self.swept_cells(prev, pose, width_m)
        h, lo = self.height_m.ravel(), self.loose_m.ravel()
        if flat.size:
            hv = h[flat]
            dh = hv - zb
            cut = dh > cfg["cut_tolerance_m"]
            if np.any(cut):
                k, d = flat[cut], dh[cut]
                loose_part = np.minimum(d, lo[k])
                bank_part = d - loose_part
                h[k] -= d
                lo[k] -= loose_part
                step.loose_cut_m3 = float(np.sum(loose_part)) * self.area_m2
                step.bank_cut_m3 = float(np.sum(bank_part)) * self.area_m2
                step.cut_cells = int(k.size)
                self.pile_m3 += step.loose_cut_m3 + self.swell * step.bank_cut_m3
            gap = np.where(cut, 0.0, -dh)
            if self.pile_m3 > 0.0 and np.any(gap > 0.0):
                _a, h_p, _l = self.pile_shape(w_eff)
                gap = np.minimum(np.maximum(gap, 0.0), h_p)
                need = float(np.sum(gap)) * self.area_m2
                if need > 0.0:
                    frac = min(1.0, self.pile_m3 / need)
                    fill = gap * frac
                    h[flat] += fill
                    lo[flat] += fill
                    spread = float(np.sum(fill)) * self.area_m2
                    self.pile_m3 = max(self.pile_m3 - spread, 0.0) if frac < 1.0 else self.pile_m3 - spread
                    step.spread_m3 = spread
        # spill at the ends: windrows per metre of forward travel, then anything over capacity
        d_centre = e1.centre[:2] - e0.centre[:2]
        forward = float(d_centre @ e1.normal)
        step.forward_m = forward
        if self.pile_m3 > 0.0 and w_eff > 0.0:
            spill = 0.0
            if forward > 0.0:
                area, _h, _l = self.pile_shape(w_eff)
                spill = min(self.pile_m3, 2.0 * cfg["pile"]["side_spill_per_m"] * area * forward)
            tan_r = math.tan(self._pile_repose_rad())
            height_v = height_m * e1.face_cos
            capacity = w_eff * height_v * height_v / (2.0 * tan_r)
            spill += max(self.pile_m3 - spill - capacity, 0.0)
            if spill > 0.0:
                self.pile_m3 -= spill
                half = 0.5 * spill / self.area_m2
                cells = np.array([self._spill_cell(e1, width_m, -1), self._spill_cell(e1, width_m, 1)])
                self._deposit(cells, np.array([half, half]))
                step.spilled_m3 = spill
        step.pile_m3 = self.pile_m3
        t = self.totals
        t.bank_cut_m3 += step.bank_cut_m3
        t.loose_cut_m3 += step.loose_cut_m3
        t.spread_m3 += step.spread_m3
        t.spilled_m3 += step.spilled_m3
        t.cut_cells += step.cut_cells
        t.forward_m += abs(forward)
        ero = cfg["erosion"]
        self._travel_since_erosion_m += float(math.hypot(d_centre[0], d_centre[1]))
        if ero["enabled"] and self._travel_since_erosion_m >= ero["every_m"]:
            self._travel_since_erosion_m = 0.0
            self.erode((pose.north_m, pose.east_m), ero["roi_m"], ero["iterations"],
                       blade_footprint(self, pose, width_m, height_m))
        return step

    # ------------------------------------------------------------------ erosion
    def _slip(self, step_m):
        ero = self.config["erosion"]
        if ero["model"] == "eq12":
            lc = self.config["loose"]
            return eq12_slip_height(step_m, self.cell_m, lc["cohesion_pa"], lc["friction_rad"],
                                    self.loose_unit_weight_npm3, ero["dt_s"])
        excess = step_m - self.cell_m * math.tan(ero["repose_rad"])
        return np.maximum(0.5 * excess, 0.0)

    def _repose_step(self):
        ero = self.config["erosion"]
        angle = self.config["loose"]["friction_rad"] if ero["model"] == "eq12" else ero["repose_rad"]
        return self.cell_m * math.tan(angle)

    def erode(self, centre_ne_m, roi_m, iterations, mask=None):
        """Erode loose soil in the square of half size ``roi_m`` around ``centre_ne_m`` (the whole map for
        ``roi_m`` = inf): ``iterations`` times four passes of disjoint 4-neighbour pairs (north pairs from
        even rows, then odd rows, then east pairs likewise), each pair moving loose soil from its higher
        cell to its lower one by the configured model's slip, never more than the higher cell's loose soil;
        ``mask`` = {flat index: underside height [m, up]} of cells under the blade (nothing leaves them,
        soil enters up to the underside). Returns the volume moved [m^3]; volumes are conserved exactly."""
        g = self.cell_m
        if math.isinf(roi_m):
            i0, i1, j0, j1 = 0, self.n_north - 1, 0, self.n_east - 1
        else:
            ci = int(math.floor(centre_ne_m[0] / g))
            cj = int(math.floor(centre_ne_m[1] / g))
            half = int(math.ceil(roi_m / g))
            i0, i1 = max(ci - half, 0), min(ci + half, self.n_north - 1)
            j0, j1 = max(cj - half, 0), min(cj + half, self.n_east - 1)
        if i0 > i1 or j0 > j1:
            return 0.0
        h = self.height_m[i0:i1 + 1, j0:j1 + 1]
        loose = self.loose_m[i0:i1 + 1, j0:j1 + 1]
        masked, underside_m = blade_mask(mask or {}, h.shape, self.n_east, i0, j0)
        repose = self._repose_step()
        moved = 0.0
        for _ in range(iterations):
            moved_pass = 0.0
            for a_idx, b_idx in pair_passes(h.shape, i0, j0):
                done = slip_pass(h, loose, masked, underside_m, a_idx, b_idx, repose, self._slip)
                if done is not None:
                    moved_pass += float(done[0].sum())
            moved += moved_pass
            if moved_pass == 0.0:
                break
        return moved * g * g

    def settle(self, iterations=200):
        """Erode the whole map until nothing moves or ``iterations`` passes ran (the blade out of the way);
        returns the volume moved [m^3]."""
        return self.erode((0.0, 0.0), math.inf, iterations, None)
