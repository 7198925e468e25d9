"""Blind mapping of the blade-swept soil (pure, MicroPython): soil paper Algs. 1-3 and 5 with eq. 12.

Once the blade has moved far enough (CheckMovement, Alg. 1), the volume its cutting edge swept between
the poses T0 and T1 is intersected with the map (IntersectHeightmap): cells whose height lies above the
swept surface are being cut, and the FEE geometry of the sweep is extracted from the bank surface ahead of
the edge (Alg. 2: alpha, rho, d, w and the surcharge volume V^Q, by per-slice weighted line fits); the cut
soil is then moved, swelled, to the first cell beyond the swept footprint (Alg. 3), the depth and surcharge
are interpolated over the sweep's poses (InterpolateFEEParams), and loose soil near the blade erodes to its
repose (Alg. 5, eq. 12).

Frames and units: poses are NED (the cutting-edge centre's north, east, down [m] and the blade frame's
Z-Y-X Euler angles, CONVENTIONS.md); the map's heights are **up** [m] (``grid_map``). The blade frame is
x forward (the blade normal, out of its face), y right along the cutting edge, z down: the face runs from
the edge along -z, so pitch tilts its top back and the blade's rake from the horizontal is
rho_h = pi/2 - pitch (80 deg at a pitch of 10 deg). t_hat is the horizontal direction of travel of the
edge centre over the sweep, n_hat the horizontal blade normal at T0 (both (north, east) unit vectors).

Decisions (reading aid notes A1, A11-A14 and ours):

- The swept volume's bottom is the ruled surface swept by the cutting edge, triangulated between poses
  sub-stepped so that no edge end moves more than ``substep_cells`` cells per step (nothing aliases:
  every cell centre the edge passes over is tested); for a rake up to 90 deg the face lies above and
  behind the edge, so it only adds the overhang mask of the blade at T1. A cell is cut when its centre
  lies in that footprint and its height above the bottom (Fig. 5's ray test).
- Alg. 2's slices are the cut cells grouped into one-cell-wide bins across t_hat; each slice fits a line,
  weighted exp(-C_x x), to the *bank* surface (elevation minus loose) on a DDA ray from the edge along
  t_hat, so the surcharge pile on top of it does not tilt the fit.
- The surcharge V^Q (Alg. 1 line 13, GetDeltaVolume) is the pile the blade carries (``surcharge`` =
  "gathered", the default): the loose volume the blade gathered since the last :meth:`BlindMapper.reset`
  (the start of a pass): the bank soil it cut, swelled, plus the loose soil that lay in its path before
  the pass (soil the pass itself deposited ahead and cuts again is already in the pile); less what spills
  at the blade's ends, ``pile.side_spill_per_m`` pile cross-sections A = V / w per end per metre of
  forward travel, and what exceeds the blade's capacity w h_v^2 / (2 tan r) (h_v: the face's vertical
  extent, r: ``pile.repose_rad``, by default phi_l); the spilled soil moves on the map from the pass's soil
  ahead of the edge to the cells just beyond the ends (windrows). A blade whose edge rises above its pile's
  face height sqrt(2 A tan r) over the ground just behind the edge leaves the pile behind (V^Q = 0).
  ``surcharge`` = "ahead" takes notes A13's reading instead, the loose volume within ``pile_length_m``
  ahead of the edge at T0 and T1: it also counts loose soil the blade has not reached and has no spill or
  capacity, so it overstates the pile (by 9-23 % on the loader's lanes, docs/results/soil.md).
- w is the spread of the cut cells across t_hat at the map's resolution: a side ends at the blade's
  projected end when that end lies before the next cell centre beyond the outermost cut cell (the
  contact reaches it), else half a cell past that cell; so w = blade width x cos(yaw) in full contact
  (the paper's section 2.2) and less under partial contact. (The cells' spread plus one cell, capped at
  the projected width, is short by up to a cell: 1.80 m for the 1.85 m blade on a lane whose centre
  lies on a cell border, 3 % of w, which the FEE puts on the depth terms only, against the surcharge's,
  and so on gamma.)
- The depth the estimator gets per pose (InterpolateFEEParams) is not one average but two moments over
  the n slices with a line fit, d_s clipped at 0 where the edge is above a slice's surface: the mean
  d1 = sum(d_s) / n and the mean square d2 = sum(d_s^2) / n. Eq. 1 summed over slices of one alpha and rho
  is then exact: gamma w d2 N_gamma + (c N_c + c_a N_ca) w d1 + Q N_Q; Alg. 2's depth-weighted average
  (``depth_m``, weights exp(C_d d), "somewhat crude" in the paper) would bias gamma against c and c_a
  when the depth varies along the edge (roll, partial contact).
- Alg. 3 swells only the bank part of a cut (notes A14): deposit = min(dh, L) + s max(dh - L, 0);
  Get1SigmaMaxDisplacement = s (dh + sigma_a + sigma_SV) (notes A13).
- Alg. 5: every 4-neighbour pair of the region of interest exchanges loose soil from its higher to its
  lower cell, in four passes of disjoint pairs (north pairs with even, then odd, row; then east pairs),
  the paper's tiling (Fig. 7), so the result does not depend on the visiting order. Slip uses eq. 12 on
  the step between the two cells; the minimum over failure planes of F_s falls below 1 exactly when the
  excess of shear force over strength is positive on Culmann's plane (i + phi_l) / 2, which is the
  plane whose Newton's-law slip is integrated (one semi-implicit Euler step of ``dt_s`` from rest). A slip
  never takes the step below the repose slope tan(phi_l) or below the loose soil there. Masks: no soil
  leaves a cell under the swept volume or the blade; soil enters one only up to the swept bottom
  (Alg. 5 lines 24-25). Variances follow notes A12.

Which runs where: everything here is pure and runs on MicroPython and CPython alike; the cost of a sweep
is dominated by the erosion passes over the region of interest (cutting and extraction touch only the
swept cells and the DDA rays ahead), so the harness may hand ``BlindMapper`` the NumPy erosion kernel of
``onboard.soil.blind_map_numpy`` (same results, tested), and boards keep the pure one.
"""
import math
from array import array

from onboard.core.rotations import euler_to_dcm
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, one_of, or_null, within
from onboard.soil.grid_map import ELEVATION, ELEVATION_VAR, LOOSE

GRAVITY_MPS2 = 9.80665
_INF = float("inf")

DEFAULTS = {
    "blade_width_m": 1.85,              # the paper's FEE-index width (section 3.2)
    "blade_height_m": 0.6,
    "swell": 1.2,                       # s, loose / bank volume (paper section 3)
    "deposit_normal_weight": 0.5,       # lambda_n of Alg. 3
    "blade_height_sigma_m": 0.02,       # sigma_SV of Algs. 1, 3
    "min_translation_m": 0.1,           # CheckMovement (notes A1: about one cell)
    "min_rotation_rad": 0.035,          # CheckMovement (2 deg)
    "substep_cells": 0.5,               # largest edge-end motion per swept-volume sub-step [cells]
    "cut_tolerance_m": 1e-9,            # a height above the swept bottom by less is not cut
    "line_fit_weight_per_m": 2.0,       # C_x of Alg. 2
    "depth_weight_per_m": 10.0,         # C_d of Alg. 2
    "look_ahead_m": 1.0,                # DDA length of the surface points ahead of the edge
    "surcharge": "gathered",            # V^Q: "gathered" (the blade's pile) or "ahead" (notes A13)
    "pile_length_m": 1.0,               # the pile region ahead of the edge (spill source; "ahead": V^Q)
    "pile": {
        "side_spill_per_m": 0.05,       # windrow per end per metre of forward travel [pile cross-sections]
        "repose_rad": None,             # slope of the pile's face; None: erosion.friction_rad
    },
    "deposit_search_m": 3.0,            # longest DDA search for a deposit cell
    "loose_unit_weight_npm3": 14000.0,  # gamma_l (surcharge Q = gamma_l V^Q, erosion weight)
    "min_travel_cos": 0.5,              # a sweep is FEE-valid when t_hat . n_hat exceeds this
    "erosion": {
        "enabled": True,
        "cohesion_pa": 25.0,            # c_l (paper section 3)
        "friction_rad": 0.26,           # phi_l (paper section 3)
        "dt_s": 0.05,                   # delta t of Alg. 5
        "iterations": 10,               # erosion passes after each sweep
        "roi_m": 2.0,                   # half size of the region of interest D_ROI around the blade
    },
}
SETTING_RANGES = {
    "blade_width_m": POSITIVE,
    "blade_height_m": POSITIVE,
    "swell": within(1.0, 3.0),
    "deposit_normal_weight": within(0.0, 1.0),
    "blade_height_sigma_m": NON_NEGATIVE,
    "min_translation_m": POSITIVE,
    "min_rotation_rad": POSITIVE,
    "substep_cells": within(0.05, 1.0),
    "cut_tolerance_m": NON_NEGATIVE,
    "line_fit_weight_per_m": NON_NEGATIVE,
    "depth_weight_per_m": NON_NEGATIVE,
    "look_ahead_m": POSITIVE,
    "surcharge": one_of("gathered", "ahead"),
    "pile_length_m": POSITIVE,
    "pile.side_spill_per_m": within(0.0, 10.0),
    "pile.repose_rad": or_null(within(0.05, 1.4)),
    "deposit_search_m": POSITIVE,
    "loose_unit_weight_npm3": POSITIVE,
    "min_travel_cos": within(-1.0, 1.0),
    "erosion.enabled": BOOLEAN,
    "erosion.cohesion_pa": NON_NEGATIVE,
    "erosion.friction_rad": within(0.0, 1.4),
    "erosion.dt_s": POSITIVE,
    "erosion.iterations": int_at_least(0),
    "erosion.roi_m": POSITIVE,
}


MAX_POSITION_M = 1e7                    # |north|, |east|, |down| of a blade pose (10,000 km)


class BlindMapError(ValueError):
    """A blade pose is malformed (not numbers, non-finite, beyond MAX_POSITION_M, or time going
    backwards)."""


class BladePose:
    """Pose of the blade at ``time_us`` (an integer number of microseconds): the centre of its cutting edge in
    NED [m] (each coordinate within +-MAX_POSITION_M) and the blade frame's (roll, pitch, yaw) [rad] (module
    docstring); anything else raises BlindMapError."""

    def __init__(self, time_us, north_m, east_m, down_m, roll_rad=0.0, pitch_rad=0.0, yaw_rad=0.0):
        values = (north_m, east_m, down_m, roll_rad, pitch_rad, yaw_rad)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v - v == 0):
                raise BlindMapError("blade pose values must be finite numbers, got %r" % (values,))
        for v in (north_m, east_m, down_m):
            if not -MAX_POSITION_M <= v <= MAX_POSITION_M:
                raise BlindMapError("blade pose position must be within %g m of the origin, got %r"
                                    % (MAX_POSITION_M, values[:3]))
        if isinstance(time_us, bool) or not isinstance(time_us, (int, float)) or not (time_us - time_us == 0):
            raise BlindMapError("blade pose time_us must be a finite number of microseconds, got %r" % (time_us,))
        self.time_us = int(time_us)
        self.north_m = float(north_m)
        self.east_m = float(east_m)
        self.down_m = float(down_m)
        self.roll_rad = float(roll_rad)
        self.pitch_rad = float(pitch_rad)
        self.yaw_rad = float(yaw_rad)


class _Blade:
    """A pose's blade in (north, east, up): the edge centre, its ends, the axes and the face direction."""

    def __init__(self, pose, width_m):
        r = euler_to_dcm(pose.roll_rad, pose.pitch_rad, pose.yaw_rad)
        self.centre = (pose.north_m, pose.east_m, -pose.down_m)
        self.x_axis = (r[0], r[3], -r[6])          # blade normal (body x), up = -down
        self.y_axis = (r[1], r[4], -r[7])          # along the edge, to the right
        self.face = (-r[2], -r[5], r[8])           # up the face: body -z, (-r2, -r5, -r8) in NED
        half = 0.5 * width_m
        c, y = self.centre, self.y_axis
        self.left = (c[0] - half * y[0], c[1] - half * y[1], c[2] - half * y[2])
        self.right = (c[0] + half * y[0], c[1] + half * y[1], c[2] + half * y[2])

    def edge_point(self, lam):
        """Point of the cutting edge ``lam`` metres right of the centre."""
        c, y = self.centre, self.y_axis
        return (c[0] + lam * y[0], c[1] + lam * y[1], c[2] + lam * y[2])


def _unit2(n, e):
    norm = math.sqrt(n * n + e * e)
    if norm < 1e-12:
        return None
    return (n / norm, e / norm)


def _raster_triangle(grid, p0, p1, p2, out):
    """Cells whose centres lie in the plan view of triangle p0 p1 p2 ((north, east, up) points, boundary
    included): out[flat index] = min(out, the triangle's height there)."""
    v0n, v0e = p1[0] - p0[0], p1[1] - p0[1]
    v1n, v1e = p2[0] - p0[0], p2[1] - p0[1]
    den = v0n * v1e - v1n * v0e
    if abs(den) < 1e-14:
        return
    g = grid.cell_m
    on, oe = grid.origin_n_m, grid.origin_e_m
    n_lo = min(p0[0], p1[0], p2[0])
    n_hi = max(p0[0], p1[0], p2[0])
    e_lo = min(p0[1], p1[1], p2[1])
    e_hi = max(p0[1], p1[1], p2[1])
    i0 = max(int(math.ceil((n_lo - on) / g - 0.5 - 1e-9)), 0)
    i1 = min(int(math.floor((n_hi - on) / g - 0.5 + 1e-9)), grid.n_north - 1)
    j0 = max(int(math.ceil((e_lo - oe) / g - 0.5 - 1e-9)), 0)
    j1 = min(int(math.floor((e_hi - oe) / g - 0.5 + 1e-9)), grid.n_east - 1)
    eps = -1e-9
    ne = grid.n_east
    for i in range(i0, i1 + 1):
        wn = on + (i + 0.5) * g - p0[0]
        for j in range(j0, j1 + 1):
            we = oe + (j + 0.5) * g - p0[1]
            b1 = (wn * v1e - v1n * we) / den
            if b1 < eps:
                continue
            b2 = (v0n * we - wn * v0e) / den
            if b2 < eps:
                continue
            b0 = 1.0 - b1 - b2
            if b0 < eps:
                continue
            z = b0 * p0[2] + b1 * p1[2] + b2 * p2[2]
            k = i * ne + j
            if z < out.get(k, _INF):
                out[k] = z


def swept_footprint(grid, poses, width_m, substep_cells=0.5):
    """{flat cell index: height [m, up] of the bottom of the volume the cutting edge swept} over the poses
    (IntersectHeightmap's swept volume, soil paper Alg. 1 line 9, Fig. 5): the ruled surface between
    consecutive edges, sub-stepped so no edge end moves more than ``substep_cells`` cells horizontally
    per step, as triangles; the lower envelope where steps overlap."""
    out = {}
    blades = [_Blade(p, width_m) for p in poses]
    step_m = substep_cells * grid.cell_m
    for b in range(len(blades) - 1):
        a0, a1 = blades[b].left, blades[b + 1].left
        c0, c1 = blades[b].right, blades[b + 1].right
        move = max(math.sqrt((a1[0] - a0[0]) ** 2 + (a1[1] - a0[1]) ** 2),
                   math.sqrt((c1[0] - c0[0]) ** 2 + (c1[1] - c0[1]) ** 2))
        steps = max(1, int(math.ceil(move / step_m)))
        prev_l, prev_r = a0, c0
        for k in range(1, steps + 1):
            u = k / steps
            cur_l = (a0[0] + u * (a1[0] - a0[0]), a0[1] + u * (a1[1] - a0[1]), a0[2] + u * (a1[2] - a0[2]))
            cur_r = (c0[0] + u * (c1[0] - c0[0]), c0[1] + u * (c1[1] - c0[1]), c0[2] + u * (c1[2] - c0[2]))
            _raster_triangle(grid, prev_l, prev_r, cur_r, out)
            _raster_triangle(grid, prev_l, cur_r, cur_l, out)
            prev_l, prev_r = cur_l, cur_r
    return out


def blade_footprint(grid, pose, width_m, height_m):
    """{flat cell index: height [m, up] of the blade's underside} for the cells the blade at ``pose``
    overhangs (its face from the edge up to ``height_m``, in plan view): the blade part of Alg. 5's mask."""
    out = {}
    bl = _Blade(pose, width_m)
    f = bl.face
    l2 = (bl.left[0] + height_m * f[0], bl.left[1] + height_m * f[1], bl.left[2] + height_m * f[2])
    r2 = (bl.right[0] + height_m * f[0], bl.right[1] + height_m * f[1], bl.right[2] + height_m * f[2])
    _raster_triangle(grid, bl.left, bl.right, r2, out)
    _raster_triangle(grid, bl.left, r2, l2, out)
    return out


def intersect(grid, footprint, tolerance_m=1e-9):
    """(cells, dh): the cut cells A (sorted flat indices) whose height lies above the swept bottom by more
    than ``tolerance_m`` and their displaced heights dh = H - bottom [m] (soil paper Alg. 1 line 9)."""
    h = grid.layer(ELEVATION)
    cells, dh = [], []
    for k in sorted(footprint):
        d = h[k] - footprint[k]
        if d > tolerance_m:
            cells.append(k)
            dh.append(d)
    return cells, dh


def weighted_line_fit(xs, zs, ws):
    """(z0, slope, rms) of the weighted least-squares line z = z0 + slope x (Alg. 2's WLSLineFitIntersect);
    None with fewer than two distinct x."""
    sw = sx = sz = sxx = sxz = 0.0
    for x, z, w in zip(xs, zs, ws):
        sw += w
        sx += w * x
        sz += w * z
        sxx += w * x * x
        sxz += w * x * z
    if sw <= 0.0:
        return None
    den = sw * sxx - sx * sx
    if den <= 1e-12 * sw * sw:
        return None
    slope = (sw * sxz - sx * sz) / den
    z0 = (sz - slope * sx) / sw
    res = 0.0
    for x, z, w in zip(xs, zs, ws):
        r = z - z0 - slope * x
        res += w * r * r
    return z0, slope, math.sqrt(res / sw)


def rake_from_horizontal(pose, t_hat):
    """rho_h [rad]: angle of the blade face from the horizontal behind the edge, in the vertical plane
    along t_hat (pi/2 for a vertical face); the FEE's rake is rho_h + alpha (``onboard.soil.fee``)."""
    bl = _Blade(pose, 1.0)
    nb = bl.x_axis
    v = (t_hat[1], -t_hat[0], 0.0)                   # normal of the vertical plane through t_hat
    d = (nb[1] * v[2] - nb[2] * v[1], nb[2] * v[0] - nb[0] * v[2], nb[0] * v[1] - nb[1] * v[0])
    if d[2] < 0.0:
        d = (-d[0], -d[1], -d[2])
    back = -(d[0] * t_hat[0] + d[1] * t_hat[1])
    return math.atan2(d[2], back)


def pile_cells(grid, pose, t_hat, width_m, pile_length_m):
    """Sorted flat indices of the cells within ``pile_length_m`` ahead of the cutting edge along t_hat (DDA
    rays from points half a cell apart along the edge): the pile region."""
    bl = _Blade(pose, width_m)
    g = grid.cell_m
    n_rays = max(2, int(math.ceil(width_m / (0.5 * g))) + 1)
    cells = {}
    for r in range(n_rays):
        lam = -0.5 * width_m + width_m * r / (n_rays - 1)
        p = bl.edge_point(lam)
        for i, j in grid.ray_cells((p[0], p[1]), t_hat, pile_length_m):
            cn, ce = grid.centre(i, j)
            x = (cn - p[0]) * t_hat[0] + (ce - p[1]) * t_hat[1]
            if 0.0 < x <= pile_length_m:
                cells[i * grid.n_east + j] = True
    return sorted(cells)


def pile_volume(grid, pose, t_hat, width_m, pile_length_m):
    """Loose-soil volume [m^3] of the pile region (:func:`pile_cells`): V^Q as notes A13 read it
    (``surcharge`` = "ahead")."""
    loose = grid.layer(LOOSE)
    total = 0.0
    for k in pile_cells(grid, pose, t_hat, width_m, pile_length_m):
        total += loose[k]
    return total * grid.cell_m * grid.cell_m


def pile_capacity(width_m, face_height_m, repose_rad):
    """Largest pile [m^3] a blade ``width_m`` wide with a face ``face_height_m`` high (vertically) holds: a
    wedge at the repose angle up to the face's top, w h^2 / (2 tan r)."""
    return width_m * face_height_m * face_height_m / (2.0 * math.tan(repose_rad))


def pile_repose_rad(config):
    """Slope [rad] of the carried pile's face for a blind-map ``config``: ``pile.repose_rad``, or
    ``erosion.friction_rad`` when that is null; at least 0.05 rad."""
    repose = config["pile"]["repose_rad"]
    return max(config["erosion"]["friction_rad"] if repose is None else repose, 0.05)


def pile_face_height(volume_m3, width_m, repose_rad):
    """Face height [m] of a pile of ``volume_m3`` against a blade ``width_m`` wide, a wedge at the repose
    angle: sqrt(2 (V / w) tan r)."""
    if volume_m3 <= 0.0 or width_m <= 0.0:
        return 0.0
    return math.sqrt(2.0 * volume_m3 / width_m * math.tan(repose_rad))


class _Slice:
    def __init__(self, lam, tip, z0, slope, rms):
        self.lam = lam
        self.tip = tip
        self.z0 = z0
        self.slope = slope
        self.alpha = math.atan(slope)
        self.rms = rms
        self.depth = (z0 - tip[2]) * math.cos(self.alpha)


def _depth_average(values, depths, c_d):
    """WAvg of Alg. 2 line 12: weights exp(C_d d) over slices of positive depth; None when none."""
    sw = sv = 0.0
    for v, d in zip(values, depths):
        if d > 0.0:
            w = math.exp(c_d * d)
            sw += w
            sv += w * v
    if sw <= 0.0:
        return None
    return sv / sw


class SweepRecord:
    """What one sweep (Alg. 1) found and did. Geometry for the FEE: ``alpha_rad``, ``rho_rad``,
    ``depth_m`` (at T0, Alg. 2's depth-weighted average), ``width_m``; per pose of the sweep (``times_us``):
    the depth moments over the slices (module docstring) ``depths_m`` (mean) and ``depths_sq_m2`` (mean
    square), the rake ``rhos_rad`` (the pose's blade attitude with the sweep's alpha) and ``surcharge_m3`` /
    ``surcharge_n`` (Q = gamma_l V^Q, InterpolateFEEParams). Bookkeeping [m^3]:
    ``cut_m3`` (= ``bank_cut_m3`` + ``loose_cut_m3``), ``deposited_m3`` (= loose cut + swell * bank cut,
    less the cut soil that found no deposit cell: none off the swept footprint within ``deposit_search_m``
    on the map), ``lost_m3`` (that soil, plus end spill whose windrow cell lies off the map: what left the
    map), ``gathered_m3`` (loose volume the blade newly gathered into its
    pile), ``spilled_m3`` (pile volume spilled at the ends, off the carried pile) and ``pile_left`` (True
    when the blade rose above its pile and left it). ``wedge_cells``: [(flat index, x_m)] of the surface cells ahead
    of the edge with their distance along t_hat (Alg. 4's P, X^t). ``valid`` is True when the sweep cut
    soil edge-first with a positive depth (the FEE's contact-and-failure assumption); else ``reason``."""

    def __init__(self):
        self.valid = False
        self.reason = "no cut"
        self.t0_us = 0
        self.t1_us = 0
        self.times_us = []
        self.t_hat_ne = (1.0, 0.0)
        self.n_hat_ne = (1.0, 0.0)
        self.m_hat_ne = (1.0, 0.0)
        self.alpha_rad = 0.0
        self.rho_rad = 0.0
        self.rho_h_rad = 0.0
        self.depth_m = 0.0
        self.width_m = 0.0
        self.surcharge0_m3 = 0.0
        self.delta_surcharge_m3 = 0.0
        self.depths_m = []
        self.depths_sq_m2 = []
        self.rhos_rad = []
        self.surcharge_m3 = []
        self.surcharge_n = []
        self.fit_rms_m = 0.0
        self.slices = 0
        self.cut_cells = 0
        self.cut_m3 = 0.0
        self.bank_cut_m3 = 0.0
        self.loose_cut_m3 = 0.0
        self.deposited_m3 = 0.0
        self.lost_m3 = 0.0
        self.gathered_m3 = 0.0
        self.spilled_m3 = 0.0
        self.pile_left = False
        self.wedge_cells = []
        self.footprint_cells = 0

    def theta_k(self, k=-1):
        """[alpha, rho, d, w, Q] (``onboard.soil.fee`` slots) at pose ``k`` of the sweep (default T1), d the
        slices' mean depth."""
        return [self.alpha_rad, self.rhos_rad[k], self.depths_m[k], self.width_m, self.surcharge_n[k]]


class BlindMapper:
    """Blind mapping on a ``GridMap`` (soil paper Alg. 1): feed blade poses with :meth:`on_blade_pose`;
    a sweep runs whenever the blade has moved ``min_translation_m`` or turned ``min_rotation_rad`` since
    the last one, and returns its :class:`SweepRecord`. Settings: :data:`DEFAULTS`. ``erode_fn``: the
    erosion kernel, :func:`erode` (pure, the default) or ``onboard.soil.blind_map_numpy.erode`` (CPython).
    ``carried_m3``: the pile the blade carries now (``surcharge`` = "gathered")."""

    def __init__(self, grid, config=None, erode_fn=None):
        self.grid = grid
        self.config = checked(DEFAULTS, SETTING_RANGES, config, "blind map")
        self.erode_fn = erode if erode_fn is None else erode_fn
        self.poses = []
        self.sweeps = 0
        self.lost_m3 = 0.0
        self.reset()

    def reset(self, pose=None):
        """Start a pass: forget the poses (keep ``pose`` as the first) and the carried pile; the loose soil
        on the map now is what the pass finds in its path."""
        self.poses = [] if pose is None else [pose]
        self.carried_m3 = 0.0
        self._loose0 = None                 # the loose layer at the pass's first sweep
        self._native_cut = {}               # flat index -> that loose soil cut since [m]

    def _pass_soil(self, k, loose_k):
        """Thickness [m] of loose soil on cell ``k`` that the pass itself put there (on top of what it found)."""
        native = self._loose0[k] - self._native_cut.get(k, 0.0)
        if native > loose_k:
            native = loose_k
        if native < 0.0:
            native = 0.0
        return loose_k - native

    def on_blade_pose(self, pose):
        """Record ``pose``; returns a SweepRecord when this pose completes a sweep, else None."""
        if self.poses and pose.time_us < self.poses[-1].time_us:
            raise BlindMapError("blade pose time went backwards: %d us after %d us"
                                % (pose.time_us, self.poses[-1].time_us))
        self.poses.append(pose)
        if len(self.poses) < 2 or not self._moved(self.poses[0], pose):
            return None
        record = self.sweep(self.poses)
        self.poses = [pose]
        return record

    def flush(self):
        """Run a sweep over the poses recorded since the last one, even below the movement thresholds (the
        blade stopped or is lifting out); returns its SweepRecord, or None with fewer than two poses."""
        if len(self.poses) < 2:
            return None
        record = self.sweep(self.poses)
        self.poses = [self.poses[-1]]
        return record

    def settle(self, centre_ne_m, roi_m, iterations):
        """Let the loose soil in the square of half size ``roi_m`` [m] around ``centre_ne_m`` (north, east
        [m]) come to rest once the blade has left: ``iterations`` erosion passes (Alg. 5, eq. 12) without
        masks. Returns the volume moved [m^3]."""
        ero = self.config["erosion"]
        return self.erode_fn(self.grid, centre_ne_m, {}, ero["cohesion_pa"], ero["friction_rad"],
                             self.config["loose_unit_weight_npm3"], ero["dt_s"], iterations, roi_m)

    def _moved(self, p0, p1):
        """CheckMovement (Alg. 1 line 6): edge-centre translation or blade rotation past its threshold."""
        cfg = self.config
        dn, de, dd = p1.north_m - p0.north_m, p1.east_m - p0.east_m, p1.down_m - p0.down_m
        if math.sqrt(dn * dn + de * de + dd * dd) >= cfg["min_translation_m"]:
            return True
        r0 = euler_to_dcm(p0.roll_rad, p0.pitch_rad, p0.yaw_rad)
        r1 = euler_to_dcm(p1.roll_rad, p1.pitch_rad, p1.yaw_rad)
        trace = 0.0
        for a in range(3):
            for b in range(3):
                trace += r0[b * 3 + a] * r1[b * 3 + a]
        cos_angle = max(-1.0, min(1.0, 0.5 * (trace - 1.0)))
        return math.acos(cos_angle) >= cfg["min_rotation_rad"]

    def sweep(self, poses):
        """Run Alg. 1 over the poses T0..T1 of one sweep (all of them, in time order) and return its
        SweepRecord; the map is cut, filled and eroded in place."""
        cfg = self.config
        grid = self.grid
        rec = SweepRecord()
        p0, p1 = poses[0], poses[-1]
        rec.t0_us, rec.t1_us = p0.time_us, p1.time_us
        rec.times_us = [p.time_us for p in poses]
        width = cfg["blade_width_m"]
        b0 = _Blade(p0, width)
        n_hat = _unit2(b0.x_axis[0], b0.x_axis[1]) or (1.0, 0.0)
        t_hat = _unit2(p1.north_m - p0.north_m, p1.east_m - p0.east_m) or n_hat
        lam_n = cfg["deposit_normal_weight"]
        m_hat = _unit2(lam_n * n_hat[0] + (1.0 - lam_n) * t_hat[0], lam_n * n_hat[1] + (1.0 - lam_n) * t_hat[1])
        m_hat = m_hat or t_hat
        rec.t_hat_ne, rec.n_hat_ne, rec.m_hat_ne = t_hat, n_hat, m_hat
        footprint = swept_footprint(grid, poses, width, cfg["substep_cells"])
        mask = dict(footprint)
        for k, z in blade_footprint(grid, p1, width, cfg["blade_height_m"]).items():
            if z < mask.get(k, _INF):
                mask[k] = z
        rec.footprint_cells = len(footprint)
        cells, dh = intersect(grid, footprint, cfg["cut_tolerance_m"])
        rec.cut_cells = len(cells)
        if self._loose0 is None:
            self._loose0 = array("d", grid.layer(LOOSE))
        slices, fitted = self._extract(rec, cells, p0, t_hat)
        self._cut_and_deposit(rec, cells, dh, mask, m_hat)
        if cfg["surcharge"] == "gathered":
            rec.surcharge0_m3 = self.carried_m3
            self.carried_m3 += rec.gathered_m3
            self._spill(rec, p0, p1, t_hat)
            rec.delta_surcharge_m3 = self.carried_m3 - rec.surcharge0_m3
        else:
            rec.delta_surcharge_m3 = pile_volume(grid, p1, t_hat, width, cfg["pile_length_m"]) - rec.surcharge0_m3
        self._interpolate(rec, fitted, poses, t_hat)
        if cfg["erosion"]["enabled"] and cfg["erosion"]["iterations"] > 0:
            ero = cfg["erosion"]
            self.erode_fn(grid, (p1.north_m, p1.east_m), mask, ero["cohesion_pa"], ero["friction_rad"],
                          cfg["loose_unit_weight_npm3"], ero["dt_s"], ero["iterations"], ero["roi_m"])
        if rec.cut_cells == 0:
            rec.reason = "no cut"
        elif not slices:
            rec.reason = "no slice with surface points ahead and a positive depth"
        elif t_hat[0] * n_hat[0] + t_hat[1] * n_hat[1] <= cfg["min_travel_cos"]:
            rec.reason = "blade not moving edge-first"
        else:
            rec.valid = True
            rec.reason = ""
        self.sweeps += 1
        self.lost_m3 += rec.lost_m3
        return rec

    def _extract(self, rec, cells, p0, t_hat):
        """ExtractFEEParams (soil paper Alg. 2) into ``rec``; returns (the slices of positive depth at T0,
        every slice with a line fit)."""
        cfg = self.config
        grid = self.grid
        g = grid.cell_m
        width = cfg["blade_width_m"]
        b0 = _Blade(p0, width)
        perp = (-t_hat[1], t_hat[0])
        c0 = b0.centre
        if cfg["surcharge"] == "ahead":
            rec.surcharge0_m3 = pile_volume(grid, p0, t_hat, width, cfg["pile_length_m"])
        rho_h = rake_from_horizontal(p0, t_hat)
        rec.rho_h_rad = rho_h
        if not cells:
            return [], []
        # lateral coordinate of each cut cell across t_hat, grouped into one-cell bins (the slices)
        bins = {}
        s_min, s_max = _INF, -_INF
        for k in cells:
            cn, ce = grid.centre(k // grid.n_east, k % grid.n_east)
            s = (cn - c0[0]) * perp[0] + (ce - c0[1]) * perp[1]
            s_min = min(s_min, s)
            s_max = max(s_max, s)
            b = int(math.floor(s / g))
            if b in bins:
                bins[b][0] += s
                bins[b][1] += 1
            else:
                bins[b] = [s, 1]
        y_perp = b0.y_axis[0] * perp[0] + b0.y_axis[1] * perp[1]
        # Alg. 2 lines 13-14, the spread of the intersection across t_hat at the map's resolution: a side of
        # the contact ends at the blade's end when that end lies before the next cell centre beyond the
        # outermost cut cell (the cells sample the contact every g), else half a cell past that cell
        half_w = 0.5 * width * abs(y_perp)
        hi = half_w if half_w < s_max + g else s_max + 0.5 * g
        lo = -half_w if -half_w > s_min - g else s_min - 0.5 * g
        rec.width_m = max(0.0, hi - lo)
        if abs(y_perp) < 1e-6:
            return [], []
        c_x = cfg["line_fit_weight_per_m"]
        bank_h = grid.layer(ELEVATION)
        loose = grid.layer(LOOSE)
        wedge = {}
        slices = []
        fitted = []
        for b in sorted(bins):
            s_mean = bins[b][0] / bins[b][1]
            lam = min(max(s_mean / y_perp, -0.5 * width), 0.5 * width)
            tip = b0.edge_point(lam)
            xs, zs, ws = [], [], []
            for i, j in grid.ray_cells((tip[0], tip[1]), t_hat, cfg["look_ahead_m"]):
                cn, ce = grid.centre(i, j)
                x = (cn - tip[0]) * t_hat[0] + (ce - tip[1]) * t_hat[1]
                if x <= 0.0:
                    continue
                k = i * grid.n_east + j
                xs.append(x)
                zs.append(bank_h[k] - loose[k])
                ws.append(math.exp(-c_x * x))
                if x < wedge.get(k, _INF):
                    wedge[k] = x
            fit = weighted_line_fit(xs, zs, ws)
            if fit is None:
                continue
            sl = _Slice(lam, tip, fit[0], fit[1], fit[2])
            fitted.append(sl)
            if sl.depth > 0.0:
                slices.append(sl)
        rec.wedge_cells = [(k, wedge[k]) for k in sorted(wedge)]
        if not slices:
            return [], fitted
        depths = [sl.depth for sl in slices]
        c_d = cfg["depth_weight_per_m"]
        rec.alpha_rad = _depth_average([sl.alpha for sl in slices], depths, c_d)
        rec.rho_rad = rho_h + rec.alpha_rad
        rec.depth_m = _depth_average(depths, depths, c_d)
        rec.fit_rms_m = sum(sl.rms for sl in slices) / len(slices)
        rec.slices = len(slices)
        return slices, fitted

    def _cut_and_deposit(self, rec, cells, dh, mask, m_hat):
        """CutAndDeposit (soil paper Alg. 3, notes A13-A14) into the map and ``rec``."""
        cfg = self.config
        grid = self.grid
        g = grid.cell_m
        area = g * g
        h = grid.layer(ELEVATION)
        var = grid.layer(ELEVATION_VAR)
        loose = grid.layer(LOOSE)
        s = cfg["swell"]
        sigma_sv = cfg["blade_height_sigma_m"]
        search = cfg["deposit_search_m"]
        for k, d in zip(cells, dh):
            cn, ce = grid.centre(k // grid.n_east, k % grid.n_east)
            target = None
            for i, j in grid.ray_cells((cn, ce), m_hat, search):
                kk = i * grid.n_east + j
                if kk not in mask:
                    target = kk
                    break
            loose_part = min(d, loose[k])
            bank_part = d - loose_part
            from_pass = min(loose_part, self._pass_soil(k, loose[k]))
            if loose_part > from_pass:
                self._native_cut[k] = self._native_cut.get(k, 0.0) + (loose_part - from_pass)
            rec.gathered_m3 += (loose_part - from_pass + s * bank_part) * area
            sigma_a = math.sqrt(var[k])
            h[k] -= d
            loose[k] = max(loose[k] - d, 0.0)
            sig = max(max(sigma_a - d, 0.0), sigma_sv)
            var[k] = sig * sig
            deposit = loose_part + s * bank_part
            rec.cut_m3 += d * area
            rec.loose_cut_m3 += loose_part * area
            rec.bank_cut_m3 += bank_part * area
            if target is None:
                rec.lost_m3 += deposit * area
                continue
            h[target] += deposit
            loose[target] += deposit
            dh_max = s * (d + sigma_a + sigma_sv)
            var[target] += 0.25 * dh_max * dh_max
            rec.deposited_m3 += deposit * area

    def _spill(self, rec, p0, p1, t_hat):
        """The carried pile's end spill, capacity overflow and a blade risen above its pile (module
        docstring) over the sweep T0 -> T1: ``carried_m3`` and the map updated, ``rec`` filled in."""
        cfg = self.config
        grid = self.grid
        if self.carried_m3 <= 0.0:
            return
        width = cfg["blade_width_m"]
        pile = cfg["pile"]
        repose = pile_repose_rad(cfg)
        r = euler_to_dcm(p1.roll_rad, p1.pitch_rad, p1.yaw_rad)
        y_len = math.sqrt(r[1] * r[1] + r[4] * r[4])
        w_eff = width * y_len
        n1 = _unit2(r[0], r[3]) or t_hat
        # the ground the blade stands on: half a cell behind the edge (ahead of it lies the pile on the map)
        ij = grid.index_of(p1.north_m - 0.5 * grid.cell_m * n1[0], p1.east_m - 0.5 * grid.cell_m * n1[1])
        if ij is not None:
            ground = grid.layer(ELEVATION)[grid.flat(ij[0], ij[1])]
            if -p1.down_m - ground >= pile_face_height(self.carried_m3, w_eff, repose):
                self.carried_m3 = 0.0
                rec.pile_left = True
                return
        if w_eff <= 0.0:
            return
        forward = (p1.north_m - p0.north_m) * n1[0] + (p1.east_m - p0.east_m) * n1[1]
        spill = 0.0
        if forward > 0.0:
            spill = min(self.carried_m3, 2.0 * pile["side_spill_per_m"] * self.carried_m3 / w_eff * forward)
        face = cfg["blade_height_m"] * abs(r[8])
        over = self.carried_m3 - spill - pile_capacity(w_eff, face, repose)
        if over > 0.0:
            spill += over
        if spill <= 0.0:
            return
        self.carried_m3 -= spill
        rec.spilled_m3 = spill
        # the spilled soil leaves the pass's soil in the pile region for the cells just beyond the ends
        h = grid.layer(ELEVATION)
        loose = grid.layer(LOOSE)
        var = grid.layer(ELEVATION_VAR)
        area = grid.cell_m * grid.cell_m
        source = []
        total = 0.0
        for k in pile_cells(grid, p1, t_hat, width, cfg["pile_length_m"]):
            ps = self._pass_soil(k, loose[k])
            if ps > 0.0:
                source.append((k, ps))
                total += ps
        if total <= 0.0:
            return
        take = spill / area
        frac = 1.0 if take >= total else take / total
        moved = 0.0
        for k, ps in source:
            dz = ps * frac
            h[k] -= dz
            loose[k] -= dz
            moved += dz
        moved *= area
        half = 0.5 * moved / area
        bl = _Blade(p1, width)
        y_h = _unit2(r[1], r[4]) or (-n1[1], n1[0])
        g = grid.cell_m
        for side in (-1.0, 1.0):
            pn = bl.centre[0] + side * (0.5 * w_eff + 0.5 * g) * y_h[0] + 0.5 * g * n1[0]
            pe = bl.centre[1] + side * (0.5 * w_eff + 0.5 * g) * y_h[1] + 0.5 * g * n1[1]
            cell = grid.index_of(pn, pe)
            if cell is None:
                rec.lost_m3 += half * area
                continue
            k = grid.flat(cell[0], cell[1])
            h[k] += half
            loose[k] += half
            var[k] += 0.25 * half * half

    def _interpolate(self, rec, fitted, poses, t_hat):
        """InterpolateFEEParams (Alg. 1 line 12): the depth moments at every pose of the sweep from the
        slices' fitted surface lines (``fitted``: every slice with a line fit), the rake at every pose (its
        blade attitude, the sweep's alpha), and V^Q growing with the distance travelled from V0^Q to
        V0^Q + Delta V^Q."""
        cfg = self.config
        width = cfg["blade_width_m"]
        dist = [0.0]
        for a in range(1, len(poses)):
            dn = poses[a].north_m - poses[a - 1].north_m
            de = poses[a].east_m - poses[a - 1].east_m
            dist.append(dist[-1] + math.sqrt(dn * dn + de * de))
        total = dist[-1]
        gamma_l = cfg["loose_unit_weight_npm3"]
        rec.depths_m, rec.depths_sq_m2, rec.surcharge_m3, rec.surcharge_n = [], [], [], []
        rec.rhos_rad = []
        n = len(fitted)
        for a in range(len(poses)):
            rec.rhos_rad.append(rake_from_horizontal(poses[a], t_hat) + rec.alpha_rad)
            bl = _Blade(poses[a], width)
            s1 = s2 = 0.0
            for sl in fitted:
                tip = bl.edge_point(sl.lam)
                x = (tip[0] - sl.tip[0]) * t_hat[0] + (tip[1] - sl.tip[1]) * t_hat[1]
                d = (sl.z0 + sl.slope * x - tip[2]) * math.cos(sl.alpha)
                if d > 0.0:
                    s1 += d
                    s2 += d * d
            rec.depths_m.append(s1 / n if n else 0.0)
            rec.depths_sq_m2.append(s2 / n if n else 0.0)
            frac = dist[a] / total if total > 0.0 else 1.0
            v = rec.surcharge0_m3 + frac * rec.delta_surcharge_m3
            rec.surcharge_m3.append(v)
            rec.surcharge_n.append(gamma_l * v)


def safety_factor(failure_rad, step_m, run_m, cohesion_pa, friction_rad, unit_weight_npm3):
    """F_s of soil paper eq. 12, F_s = (c L + W cos(a) tan(phi)) / (W sin(a)), for a plane at ``failure_rad``
    through the toe of a step ``step_m`` high over ``run_m`` (slope i = atan(step / run), 0 < a < i):
    wedge weight per unit width W = gamma step^2 (cot a - cot i) / 2, plane length L = step / sin(a)."""
    i = math.atan2(step_m, run_m)
    w = 0.5 * unit_weight_npm3 * step_m * step_m * (1.0 / math.tan(failure_rad) - 1.0 / math.tan(i))
    length = step_m / math.sin(failure_rad)
    return (cohesion_pa * length + w * math.cos(failure_rad) * math.tan(friction_rad)) / (w * math.sin(failure_rad))


def slip_height(step_m, run_m, cohesion_pa, friction_rad, unit_weight_npm3, dt_s):
    """Height [m] of loose soil that slips down a step of ``step_m`` over ``run_m`` in one erosion step
    ``dt_s`` (soil paper Alg. 5 lines 16-18, eq. 12): zero unless min over planes of F_s < 1, which holds
    exactly when the shear force exceeds the strength on Culmann's plane a* = (i + phi) / 2; there the
    wedge accelerates at g (W sin a* - c L - W cos a* tan phi) / W (Newton), one semi-implicit Euler step
    from rest moves it a dt^2, and the slip height is that travel's vertical part, capped so the step stays
    at least at the repose slope run * tan(phi)."""
    if step_m <= run_m * math.tan(friction_rad):
        return 0.0
    i = math.atan2(step_m, run_m)
    a = 0.5 * (i + friction_rad)
    w = 0.5 * unit_weight_npm3 * step_m * step_m * (1.0 / math.tan(a) - 1.0 / math.tan(i))
    if w <= 0.0:
        return 0.0
    net = w * math.sin(a) - cohesion_pa * step_m / math.sin(a) - w * math.cos(a) * math.tan(friction_rad)
    if net <= 0.0:
        return 0.0
    travel = GRAVITY_MPS2 * net / w * dt_s * dt_s
    return min(travel * math.sin(a), 0.5 * (step_m - run_m * math.tan(friction_rad)))


def erosion_window(grid, centre_ne_m, roi_m):
    """The cells (i0, i1, j0, j1), first and last row and column, of the square of half size ``roi_m`` [m]
    around ``centre_ne_m`` (NE [m]) clipped to the grid (an infinite ``roi_m``: the whole grid); None when
    the square misses the grid, the centre is not finite or ``roi_m`` is not > 0."""
    g = grid.cell_m
    cn, ce = centre_ne_m[0], centre_ne_m[1]
    if not (cn - cn == 0 and ce - ce == 0 and roi_m > 0.0):
        return None
    span = grid.n_north + grid.n_east + 2          # cells: a half size beyond this covers the grid
    if roi_m / g > span:
        return 0, grid.n_north - 1, 0, grid.n_east - 1
    ij = grid.index_of(cn, ce)
    if ij is None:
        u = (cn - grid.origin_n_m) / g
        v = (ce - grid.origin_e_m) / g
        if not (-2 * span <= u <= 2 * span and -2 * span <= v <= 2 * span):
            return None
        ci = int(math.floor(u))
        cj = int(math.floor(v))
    else:
        ci, cj = ij
    half = int(math.ceil(roi_m / g))
    i0, i1 = max(ci - half, 0), min(ci + half, grid.n_north - 1)
    j0, j1 = max(cj - half, 0), min(cj + half, grid.n_east - 1)
    if i0 > i1 or j0 > j1:
        return None
    return i0, i1, j0, j1


def erode(grid, centre_ne_m, mask, cohesion_pa, friction_rad, unit_weight_npm3, dt_s, iterations, roi_m):
    """PerformSoilErosion (soil paper Alg. 5, eq. 12) of the loose soil (c_l [Pa], phi_l [rad], gamma_l
    [N/m^3]) in the square of half size ``roi_m`` around ``centre_ne_m``: ``iterations`` times four passes
    of disjoint 4-neighbour pairs with slip steps of ``dt_s`` (module docstring); ``mask`` = {flat index:
    swept-volume or blade bottom height [m, up]} (E and Z; empty for none).
    Conserves the sum of the elevation and of the loose layer exactly up to rounding. Returns the
    volume moved [m^3]."""
    window = erosion_window(grid, centre_ne_m, roi_m)
    if window is None:
        return 0.0
    i0, i1, j0, j1 = window
    g = grid.cell_m
    h = grid.layer(ELEVATION)
    loose = grid.layer(LOOSE)
    var = grid.layer(ELEVATION_VAR)
    ne = grid.n_east
    c_l, phi_l, gamma_l, dt = cohesion_pa, friction_rad, unit_weight_npm3, dt_s
    repose = g * math.tan(phi_l)
    moved = 0.0
    for _ in range(iterations):
        for axis in (0, 1):
            for parity in (0, 1):
                if axis == 0:
                    first = i0 + ((parity - i0) % 2)
                    pairs_i = range(first, i1, 2)
                    offset = ne
                else:
                    pairs_i = range(i0, i1 + 1)
                    offset = 1
                for i in pairs_i:
                    if axis == 0:
                        js = range(j0, j1 + 1)
                    else:
                        js = range(j0 + ((parity - j0) % 2), j1, 2)
                    for j in js:
                        ka = i * ne + j
                        kb = ka + offset
                        if loose[ka] <= 0.0 and loose[kb] <= 0.0:
                            continue
                        if h[ka] >= h[kb]:
                            src, dst = ka, kb
                        else:
                            src, dst = kb, ka
                        step = h[src] - h[dst]
                        if loose[src] < step:
                            step = loose[src]
                        if step <= repose:
                            continue
                        if src in mask:
                            continue
                        slip = slip_height(step, g, c_l, phi_l, gamma_l, dt)
                        if slip <= 0.0:
                            continue
                        if dst in mask:
                            room = mask[dst] - h[dst]
                            if room <= 0.0:
                                continue
                            if slip > room:
                                slip = room
                        h[src] -= slip
                        h[dst] += slip
                        loose[src] -= slip
                        loose[dst] += slip
                        var[dst] += 0.25 * slip * slip
                        moved += slip
    return moved * g * g
