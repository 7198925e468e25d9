"""Deformable sand terrain for the hill-sensing levelers: the grading task's sand world (volume-conserving,
erosion to the angle of repose) with track sinkage and bulldozing under rigid tracks.

Heights: :class:`harness.sim.sand_world.SandWorld` ``height_m[i, j]`` (cell centre at north = (i + 0.5) *
cell_m, east = (j + 0.5) * cell_m), metres above the datum; there is no hard floor (the sand bed is deep).

Terrain: a seeded **mound field** (``mounds`` raised-cosine mounds of peak ``mound_height_m`` and radius
``mound_radius_m``, drawn uniformly, on a bed of ``bed_m``, then relaxed to the angle of repose), or a
user's **heightmap file** (``file``: a grayscale PNG or a .npy array, read by the voxel grid's loader
:func:`harness.sim.voxel_terrain.load_heights`, see :func:`file_heights_m`): heights = file value *
``height_scale_m`` (a PNG's value is its intensity, white = 1), or, when that is null, scaled so the file's
highest value is ``peak_m``; each pixel covers ``pixel_m`` on the ground (null: one ``cell_m`` cell, or
more so that the file's smaller side covers ``min_side_m``: a 16 x 16 file becomes 1 m x 1 m), resampled
bilinearly to ``cell_m`` cells; the file sits on the bed, its first row (a PNG's top edge) along the north
edge. The grid, a file's or the generated field's, has at
most ``MAX_CELLS`` (1024 x 1024) cells: a larger one is a ConfigError line, checked before it is made.

Track contact (per track, each time the terrain is stepped; the SCM-lite model the thesis's reading aid
proposes, section 6.2: Bekker sinkage with the parameter names of Chrono's ``SetSoilParameters``, the
displaced sand bulldozed to the rut's sides, then erosion): the track is a rigid straight bar of
``track_length_m`` x ``track_width_m`` whose slope along its length is the robot's pitch; it carries
``W = mass_kg * g / 2``. A cell under it that the bar penetrates by ``pen`` bears Bekker's pressure
p = (k_c / b + k_phi) * (s + pen)^n (the pressure-sinkage relation; Wong, Theory of Ground Vehicles,
ch. 2), ``s`` the plastic sinkage the cell already took since it was last loosened. The bar's height is
the one where the cells' bearing carries ``W`` (bisection); the cells it penetrates are cut to the bar
(``s`` grows by ``pen``). On flat ground a fresh rut is z0 = (p / (k_c/b + k_phi))^(1/n) deep; over a
crest only the crest carries the track, so it sinks deeper there: the track "screeds" the crest.

Bulldozing: the displaced volume is not lost (compaction is not modelled: the volume is conserved
exactly). A share ``bulldoze_front_fraction`` goes to the cells just ahead of the track (the direction it
moves), the rest to the cells beside it (the rut's berms); within each, loose sand runs to the lower cells:
a cell's share is proportional to ``drop_floor_m`` + how far it lies below the bar. Cells receiving sand are
loosened (``s = 0``).

Slip shear: a track that needs thrust slips (ratio i from the Janosi-Hanamoto shear-displacement relation
with Mohr-Coulomb strength, Wong ch. 2: :meth:`TrackContact.slip`); its grousers throw a layer of
i * distance * width * ``grouser_depth_m`` from under it to the cells behind it. Climbing needs thrust,
descending does not, so a climbing track throws sand downhill.

The contact patch wraps around the grid's borders as the robots do. Erosion to the angle of repose
(SandWorld.erode, not wrapped: no sand crosses a border) then relaxes the whole grid.
"""
import math

import numpy as np

from harness.sim.sand_world import SandWorld
from harness.sim.voxel_terrain import load_heights
from onboard.core.settings import (ConfigError, NON_NEGATIVE, POSITIVE, TEXT, checked, int_at_least, or_null, pair,
                                   within)

QUANT_M = 1e-4                        # height resolution of a terrain file (m per loader unit)
MIN_FILE_CELLS = 8                    # cells per side of a terrain file, at least
MAX_CELLS = 1024 * 1024               # cells of the terrain grid, at most (the default field is 60 x 60)
TOLERANCE_M = 1e-5                    # the track's sinkage is solved to this height

DEFAULTS = {
    "size_m": [1.5, 1.5],             # north, east extent of the generated field
    "cell_m": 0.025,
    "bed_m": 0.05,                    # sand bed under the mounds (or under a file's heights)
    "mounds": 5,
    "mound_height_m": [0.04, 0.07],   # peak height of each raised-cosine mound (before relaxing to repose)
    "mound_radius_m": [0.15, 0.3],
    "margin_m": 0.1,                  # mound edges this far from the borders (where robots wrap around)
    "repose_deg": 34.0,               # angle of repose of dry sand
    "erosion_iterations": 2,          # per terrain step
    "file": None,                     # grayscale PNG or .npy heightmap (replaces the mound field)
    "height_scale_m": None,           # metres per file value (null: the file's highest value is peak_m)
    "peak_m": 0.06,
    "pixel_m": None,                  # ground size of a file's pixel (null: cell_m, or larger so that the
    "min_side_m": 1.0,                #   file's smaller side covers min_side_m); resampled to cell_m
}
SETTING_RANGES = {
    "size_m": pair(POSITIVE), "cell_m": POSITIVE, "bed_m": NON_NEGATIVE, "mounds": int_at_least(0),
    "mound_height_m": pair(POSITIVE, ordered=True), "mound_radius_m": pair(POSITIVE, ordered=True),
    "margin_m": NON_NEGATIVE, "repose_deg": ("a number in (0, 90)", lambda v: 0.0 < v < 90.0),
    "erosion_iterations": int_at_least(0), "file": or_null(TEXT), "height_scale_m": or_null(POSITIVE),
    "peak_m": POSITIVE, "pixel_m": or_null(POSITIVE), "min_side_m": POSITIVE,
    ("cell_m", "size_m"): ("a cell at most an eighth of the field's smaller side",
                           lambda cell, size: cell * MIN_FILE_CELLS <= min(size)),
}

SOIL_DEFAULTS = {
    # Bekker parameters of dry sand (Wong, Theory of Ground Vehicles, ch. 2, LLL dry sand: k_c 0.99 kN/m^(n+1),
    # k_phi 1528.43 kN/m^(n+2), n 1.10)
    "bekker_kc": 990.0,
    "bekker_kphi": 1528430.0,
    "bekker_n": 1.1,
    "bulldoze_front_fraction": 0.0,   # share of the displaced sand pushed ahead of the track
    "drop_floor_m": 0.001,            # deposit weight floor: sand spreads even onto cells level with the bar
    # slip shear: Mohr-Coulomb and Janosi-Hanamoto (Wong ch. 2); cohesionless dry sand (Wong's
    # LLL dry sand has c = 1.04 kPa, phi = 28 deg), K of loose sand
    "cohesion_pa": 0.0,
    "friction_deg": 28.0,
    "shear_modulus_k_m": 0.025,
    "grouser_depth_m": 0.005,         # the layer a slipping track's grousers throw back
}
SOIL_SETTING_RANGES = {
    "bekker_kc": NON_NEGATIVE, "bekker_kphi": NON_NEGATIVE, "bekker_n": within(0.3, 3.0),
    "bulldoze_front_fraction": ("a number in [0, 1]", lambda v: isinstance(v, (int, float)) and 0 <= v <= 1),
    "drop_floor_m": POSITIVE, "cohesion_pa": NON_NEGATIVE, "friction_deg": within(1.0, 60.0),
    "shear_modulus_k_m": POSITIVE, "grouser_depth_m": NON_NEGATIVE,
    ("bekker_kc", "bekker_kphi"): ("not both 0 (the sand must bear the robot)", lambda a, b: a + b > 0),
}


def mound_volume_m3(height_m, radius_m):
    """Volume of a raised-cosine mound h (1 + cos(pi d / r)) / 2 of peak ``height_m``, radius ``radius_m``:
    pi r^2 h (1/2 - 2/pi^2)."""
    return math.pi * radius_m * radius_m * height_m * (0.5 - 2.0 / (math.pi * math.pi))


def file_heights_m(path, height_scale_m=None, peak_m=0.06):
    """Heights (2-D float array, m) of a user's heightmap file read through the voxel grid's loader (a
    grayscale PNG's intensities in [0, 1], white = 1, or a .npy's values, at a resolution of ``QUANT_M``
    file units): value * ``height_scale_m``, or, with ``height_scale_m`` None, scaled so that the file's
    highest value is ``peak_m`` (the same file levels in ``level-grid``, whose .npy holds voxel units, and
    here). One ConfigError line for a missing, empty, malformed, non-grayscale, non-finite or negative file."""
    units = load_heights(path, height_scale=1.0 / QUANT_M)
    if min(units.shape) < MIN_FILE_CELLS:
        raise ConfigError("terrain file %s: %dx%d cells; level-hill needs at least %d per side"
                          % (path, units.shape[0], units.shape[1], MIN_FILE_CELLS))
    values = units.astype(np.float64) * QUANT_M
    if height_scale_m is not None:
        return values * height_scale_m
    top = float(values.max())
    return values * (peak_m / top) if top > 0.0 else values


def check_grid(rows, cols, cell_m, cause):
    """Raise ConfigError (one line) when a terrain grid of ``rows`` x ``cols`` cells exceeds ``MAX_CELLS``;
    ``cause`` names the settings that made it. Checked before the grid is allocated."""
    if rows * cols > MAX_CELLS:
        raise ConfigError("%s gives a terrain grid of %dx%d cells of %g m (%.4g m x %.4g m); level-hill allows at "
                          "most %d cells (1024x1024): make the terrain smaller or terrain.cell_m larger"
                          % (cause, rows, cols, cell_m, rows * cell_m, cols * cell_m, MAX_CELLS))


def resample(heights_m, cell_m, pixel_m=None, min_side_m=1.0):
    """A file's heights on the grid of ``cell_m`` cells: each pixel covers ``pixel_m`` (None: ``cell_m``, or
    more so that the smaller side covers ``min_side_m``); bilinear when a pixel is not one cell. A grid of
    more than ``MAX_CELLS`` cells is a ConfigError (before it is made)."""
    if pixel_m is None:
        cause = "terrain.file of %dx%d pixels with terrain.min_side_m %g" % (heights_m.shape + (min_side_m,))
        pixel_m = max(cell_m, min_side_m / min(heights_m.shape))
    else:
        cause = "terrain.file of %dx%d pixels with terrain.pixel_m %g" % (heights_m.shape + (pixel_m,))
    factor = pixel_m / cell_m
    if abs(factor - 1.0) < 1e-9:
        check_grid(heights_m.shape[0], heights_m.shape[1], cell_m, cause)
        return heights_m
    from scipy.ndimage import zoom
    rows = max(MIN_FILE_CELLS, int(round(heights_m.shape[0] * factor)))
    cols = max(MIN_FILE_CELLS, int(round(heights_m.shape[1] * factor)))
    check_grid(rows, cols, cell_m, cause)
    out = zoom(heights_m, (rows / heights_m.shape[0], cols / heights_m.shape[1]), order=1, mode="nearest",
               grid_mode=True)
    return np.clip(out, 0.0, None)


def build_world(config, rng):
    """A SandWorld holding the configured terrain (module docstring); ``rng`` a NumPy Generator."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "terrain")
    cell = float(cfg["cell_m"])
    heights = None
    size = cfg["size_m"]
    if cfg["file"] is not None:
        # the file's first row is the north edge (as in level-grid); the world's row 0 is the south edge
        heights = resample(np.flipud(file_heights_m(cfg["file"], cfg["height_scale_m"], cfg["peak_m"])), cell,
                           cfg["pixel_m"], cfg["min_side_m"])
        size = [heights.shape[0] * cell, heights.shape[1] * cell]
    else:
        check_grid(int(round(size[0] / cell)), int(round(size[1] / cell)), cell,
                   "terrain.size_m [%g, %g]" % (size[0], size[1]))
    world = SandWorld({"size_m": size, "cell_m": cell, "ground_level_m": float(cfg["bed_m"]),
                       "spoil_band_m": cell, "piles_min": 0, "piles_max": 0, "repose_deg": cfg["repose_deg"],
                       "erosion_iterations": cfg["erosion_iterations"]})
    if heights is not None:
        world.height_m = world.height_m + heights
        world.erode(iterations=20)
        return world
    margin = cfg["margin_m"]
    for _ in range(cfg["mounds"]):
        h = float(rng.uniform(*cfg["mound_height_m"]))
        r = float(rng.uniform(*cfg["mound_radius_m"]))
        north = float(rng.uniform(min(r + margin, 0.5 * size[0]), max(size[0] - r - margin, 0.5 * size[0])))
        east = float(rng.uniform(min(r + margin, 0.5 * size[1]), max(size[1] - r - margin, 0.5 * size[1])))
        world.add_pile(north, east, mound_volume_m3(h, r), r)
    world.erode(iterations=20)
    return world


def roughness(height_m, cell_m):
    """{rms_m: std of the heights about their mean, max_gradient: largest 4-neighbour slope (m/m),
    range_m}."""
    g = 0.0
    if height_m.shape[0] > 1:
        g = max(g, float(np.abs(np.diff(height_m, axis=0)).max()))
    if height_m.shape[1] > 1:
        g = max(g, float(np.abs(np.diff(height_m, axis=1)).max()))
    return {"rms_m": float(height_m.std()), "max_gradient": g / cell_m,
            "range_m": float(height_m.max() - height_m.min())}


class _Patch:
    """The cells around one track: ``window`` (row and column indices, wrapped around the grid's borders),
    each cell centre's ``along`` and ``lateral`` offsets (m) from the track's centre, the cells ``under``
    it."""

    def __init__(self, world, centre_ne_m, yaw_rad, length_m, width_m):
        cell = world.cell_m
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        self.half_l, self.half_w = 0.5 * length_m, 0.5 * width_m
        reach = self.half_l + cell * 1.5 + self.half_w
        i0 = int(math.floor((centre_ne_m[0] - reach) / cell))
        i1 = int(math.floor((centre_ne_m[0] + reach) / cell)) + 1
        j0 = int(math.floor((centre_ne_m[1] - reach) / cell))
        j1 = int(math.floor((centre_ne_m[1] + reach) / cell)) + 1
        dn = (np.arange(i0, i1) + 0.5)[:, None] * cell - centre_ne_m[0]
        de = (np.arange(j0, j1) + 0.5)[None, :] * cell - centre_ne_m[1]
        self.along = c * dn + s * de
        self.lateral = -s * dn + c * de
        self.under = (np.abs(self.along) <= self.half_l) & (np.abs(self.lateral) <= self.half_w)
        # the grid wraps around like the robots; a patch larger than the grid would hold a cell twice (its
        # volume written back twice: not conserved)
        if i1 - i0 > world.rows or j1 - j0 > world.cols:
            raise ValueError("a track's contact patch of %dx%d cells does not fit the %dx%d terrain grid (a track "
                             "too long for the terrain, or cell_m too coarse)" % (i1 - i0, j1 - j0, world.rows,
                                                                                  world.cols))
        self.window = np.ix_(np.arange(i0, i1) % world.rows, np.arange(j0, j1) % world.cols)
        self.cell = cell

    def band(self, direction, beyond_m):
        """Cells in line with the track, past its end on the ``direction`` side (+1 front, -1 rear), up to
        ``beyond_m`` beyond it."""
        d = direction * self.along
        return (~self.under) & (np.abs(self.lateral) <= self.half_w) & (d > self.half_l) \
            & (d <= self.half_l + beyond_m)

    def berms(self):
        """Cells beside the track, one cell wide on each side."""
        lat = np.abs(self.lateral)
        return (~self.under) & (np.abs(self.along) <= self.half_l) & (lat > self.half_w) \
            & (lat <= self.half_w + self.cell * 1.01)


class TrackContact:
    """Sinkage, bulldozing and slip shear of rigid tracks on a SandWorld (module docstring). ``sunk_m``:
    each cell's plastic sinkage since it was last loosened; counters ``displaced_m3`` (volume moved by
    sinkage and bulldozing), ``sheared_m3`` (volume thrown back by slip) and ``contacts``."""

    def __init__(self, world, soil=None):
        cfg = checked(SOIL_DEFAULTS, SOIL_SETTING_RANGES, soil, "soil")
        self.cfg = cfg
        self.world = world
        self.sunk_m = np.zeros_like(world.height_m)
        self.n = float(cfg["bekker_n"])
        self.kc = float(cfg["bekker_kc"])
        self.kphi = float(cfg["bekker_kphi"])
        self.front = float(cfg["bulldoze_front_fraction"])
        self.floor_m = float(cfg["drop_floor_m"])
        self.cohesion_pa = float(cfg["cohesion_pa"])
        self.tan_phi = math.tan(math.radians(cfg["friction_deg"]))
        self.shear_k_m = float(cfg["shear_modulus_k_m"])
        self.grouser_m = float(cfg["grouser_depth_m"])
        self.displaced_m3 = 0.0
        self.sheared_m3 = 0.0
        self.contacts = 0

    def flat_sinkage_m(self, load_n, length_m, width_m):
        """Bekker sinkage of a track of ``length_m`` x ``width_m`` carrying ``load_n`` on fresh flat sand:
        z0 = (p / (k_c/b + k_phi))^(1/n), p = load / (length * width) (Bekker; Wong ch. 2)."""
        k = self.kc / width_m + self.kphi
        return (load_n / (length_m * width_m) / k) ** (1.0 / self.n)

    def slip(self, grade_rad, load_n, length_m, width_m):
        """Slip ratio i in [0, 1] of a track climbing ``grade_rad`` (uphill positive, along its travel):
        the thrust it needs, T = W sin(grade) + R_c (R_c Bekker's compaction resistance
        b (k_c/b + k_phi) z0^(n+1) / (n+1)), against the Janosi-Hanamoto thrust
        F(i) = (A c + W cos(grade) tan(phi)) (1 - K / (i L) (1 - exp(-i L / K))) (Wong ch. 2);
        bisection on i."""
        n = self.n
        k = self.kc / width_m + self.kphi
        z0 = self.flat_sinkage_m(load_n, length_m, width_m)
        need = load_n * math.sin(grade_rad) + width_m * k * z0 ** (n + 1.0) / (n + 1.0)
        if need <= 0.0:
            return 0.0
        fmax = length_m * width_m * self.cohesion_pa + load_n * math.cos(grade_rad) * self.tan_phi
        kl = self.shear_k_m / length_m

        def thrust(i):
            return fmax * (1.0 - kl / i * (1.0 - math.exp(-i / kl)))
        if thrust(1.0) <= need:
            return 1.0
        lo, hi = 0.0, 1.0
        while hi - lo > 1e-6:
            mid = 0.5 * (lo + hi)
            if thrust(mid) >= need:
                hi = mid
            else:
                lo = mid
        return hi

    def _spread(self, h, sunk, parts, volume_m3, bar):
        """Put ``volume_m3`` on the cells of ``parts`` ((mask, share) pairs; empty masks skipped, their share
        to the others), each cell's part proportional to ``drop_floor_m`` + its depth below ``bar`` (loose
        sand runs downhill); the cells are loosened."""
        parts = [(m, f) for m, f in parts if f > 0.0 and m.any()]
        if not parts:
            raise ValueError("no cells to take %.3g m^3 of displaced sand (grid smaller than a track's patch?)"
                             % volume_m3)
        total = sum(f for _, f in parts)
        area = self.world.cell_area_m2
        placed = 0.0
        for k, (mask, frac) in enumerate(parts):
            vol = volume_m3 - placed if k == len(parts) - 1 else volume_m3 * frac / total
            w = np.clip(bar[mask] - h[mask], 0.0, None) + self.floor_m
            h[mask] += w * (vol / (float(w.sum()) * area))
            sunk[mask] = 0.0
            placed += vol

    def press(self, centre_ne_m, yaw_rad, pitch_rad, length_m, width_m, load_n, direction, moved_m=0.0):
        """One track's contact: the bar centred at ``centre_ne_m`` (m) along heading ``yaw_rad`` with
        slope ``pitch_rad`` (nose up positive) carrying ``load_n`` (N); ``direction`` +1 when the track
        moves forward over the ground, -1 backward (where bulldozed sand goes), ``moved_m`` how far it
        moved since the last contact (the slip shear). Returns the volume moved (m^3). A track that covers no
        cell centre (smaller than a cell's diagonal, see hill_robots.check_track_covers_cells) is a ValueError,
        nothing changed."""
        world = self.world
        patch = _Patch(world, centre_ne_m, yaw_rad, length_m, width_m)
        under = patch.under
        if not under.any():
            raise ValueError("a track of %g m x %g m at (%g, %g) m covers no centre of the terrain's %g m cells (each "
                             "side must be at least a cell's diagonal)" % (length_m, width_m, centre_ne_m[0],
                                                                           centre_ne_m[1], world.cell_m))
        h = world.height_m[patch.window]
        sunk = self.sunk_m[patch.window]
        bar_all = math.tan(pitch_rad) * patch.along            # the bar's height relative to its centre
        ahead, berms = patch.band(direction, world.cell_m * 1.01), patch.berms()
        behind = patch.band(-direction, world.cell_m * 1.01)
        self.contacts += 1
        moved = self._sink(h, sunk, under, bar_all, width_m, load_n, ((ahead, self.front), (berms, 1.0 - self.front)))
        if moved_m > 0.0:
            grade = pitch_rad * direction
            vol = self.slip(grade, load_n, length_m, width_m) * moved_m * width_m * self.grouser_m
            if vol > 0.0:
                # the grousers' layer under the track, thrown behind it (downhill while climbing)
                cells = int(under.sum())
                h[under] -= vol / (cells * world.cell_area_m2)
                self._spread(h, sunk, ((behind, 1.0),), vol, bar_all + float(h[under].mean()))
                self.sheared_m3 += vol
                moved += vol
        if moved > 0.0:
            world.height_m[patch.window] = h
            self.sunk_m[patch.window] = sunk
        world.cell_updates += int(under.sum())
        return moved

    def _sink(self, h, sunk, under, bar_all, width_m, load_n, rim):
        """Bekker sinkage under the bar and the displaced sand to ``rim``; the volume displaced."""
        hu = h[under]
        su = sunk[under]
        rel = hu - bar_all[under]
        k = self.kc / width_m + self.kphi
        area = self.world.cell_area_m2
        n = self.n
        need = load_n / (k * area)              # sum of (s + pen)^n the touching cells must reach

        def bearing(offset):
            pen = rel - offset
            touching = pen >= 0.0
            return ((su[touching] + pen[touching]) ** n).sum()
        # bisection on the bar's height: the bearing falls from >= load at the lowest to 0 above the top
        hi = float(rel.max())
        if bearing(hi) >= need:
            return 0.0                          # already carried by compacted sand: nothing sinks
        step = max(4.0 * (need / max(1, rel.size)) ** (1.0 / n), 1e-3)
        lo = hi - step
        while bearing(lo) < need:
            lo -= step
        while hi - lo > TOLERANCE_M:
            mid = 0.5 * (lo + hi)
            if bearing(mid) >= need:
                lo = mid
            else:
                hi = mid
        pen = np.clip(rel - lo, 0.0, None)
        cut_m3 = float(pen.sum()) * area
        if cut_m3 <= 0.0:
            return 0.0
        h[under] = hu - pen
        sunk[under] = np.where(pen > 0.0, su + pen, su)
        self._spread(h, sunk, rim, cut_m3, bar_all + lo)
        self.displaced_m3 += cut_m3
        return cut_m3
