"""The Sandbox terrain: a tileable heightmap (metres) that wraps around at its borders (Cook thesis 5.1.4:
robots reaching a border are teleported to the opposite one, so the map must be seamless).

Grid: :class:`harness.sim.sand_world.SandWorld`'s (``height_m[i, j]`` the height of the cell whose centre
is at north = (i + 0.5) * cell_m, east = (j + 0.5) * cell_m; one cell per heightmap pixel, as Chrono's SCM
puts one mesh vertex per pixel, thesis 5.1.3). Everything here is periodic: sampling, the track footprints,
the crops and the erosion (sand flows across a border onto the opposite side), so the volume
``sum(height) * cell_area`` is conserved exactly up to float rounding by every operation:

- :meth:`TileTerrain.press_track`: the cells under a track's footprint that stand above the track's bottom
  plane are cut to it (plastic sinkage); the cut volume is **bulldozed** to the rut's sides (a berm one cell
  wide on each side), a share ``front_fraction`` ahead of the track; a cell's part is proportional to a
  floor plus how far it lies below the plane (loose sand runs to the lower cells). ``sunk_m`` keeps each
  cell's plastic sinkage (Bekker's pressure then grows from there); loose sand landing on a cell (bulldozed
  or eroded) undoes as much of it (the new layer must be compacted again).
- :meth:`TileTerrain.erode`: relaxation to the angle of repose, 4-neighbour, periodic (SandWorld's rule:
  a quarter of the excess over tan(repose) * cell per iteration, so it is stable).

The contact test (which cells a track presses, and the track bottom's height over each: SCM's ray hit and
``p_hit_level``) is done one of two ways, ``contact_test``:

- ``"mesh"`` (default, faithful to the SCM the thesis ran): every vertex of the whole map is tested against
  the track each time a track is pressed (each substep), as Chrono 3.0's
  ``SCMDeformableSoil::ComputeInternalForces`` casts one ray per mesh vertex at every step
  (``for (int i=0; i< vertices.size(); ++i) { ... RayHit(from,to,mrayhit_result) ... }``); the per-vertex
  offsets from the track and the hit mask it yields are what the cut and the bulldozing then use. Its cost
  grows with the number of cells, as the thesis's Sandbox frame time grew with its heightmap (6.4).
- ``"patch"``: the same test only over the box of cells around the track that can hold it (the optional
  "moving patch" of later SCM releases, ``EnableMovingPatch``, Chrono 4.0, off by default there).

Both give bit-identical results (the same per-cell arithmetic; the cells outside the box are misses); only the
cost differs.

Generated terrains (:func:`tileable_heights`) are seeded, band-limited noise synthesised in Fourier space,
hence seamless; a user's heightmap comes through :mod:`harness.sim.sandbox.config`.
"""
import math
import numbers

import numpy as np

from harness.sim.sand_world import SandWorld

MIN_CELLS = 16                        # cells per side, at least
CONTACT_TESTS = ("mesh", "patch")     # module docstring


def wrap_into_tile(x_m, size_m):
    """``x_m`` wrapped into [0, ``size_m``) (m): ``x_m % size_m``, except that a tiny negative ``x_m`` (whose
    float remainder rounds up to ``size_m`` itself, e.g. -1e-18 % 0.64 == 0.64) gives 0.0, the same point of
    the tile inside it."""
    x = x_m % size_m
    return 0.0 if x >= size_m else x


def tileable_heights(rows, cols, cell_m, peak_m, wavelength_m, rng):
    """Seamless heights (rows x cols, m) in [0, ``peak_m``]: white noise filtered in Fourier space by a
    Gaussian of the spatial wavelength ``wavelength_m`` (periodic by construction); ``rng`` a NumPy
    Generator."""
    noise = rng.standard_normal((rows, cols))
    fn = np.fft.fftfreq(rows, d=cell_m)[:, None]
    fe = np.fft.fftfreq(cols, d=cell_m)[None, :]
    f2 = fn * fn + fe * fe
    sigma_f = 1.0 / wavelength_m
    field = np.real(np.fft.ifft2(np.fft.fft2(noise) * np.exp(-0.5 * f2 / (sigma_f * sigma_f))))
    lo, hi = float(field.min()), float(field.max())
    if hi - lo <= 0.0:
        return np.zeros((rows, cols))
    return (field - lo) * (peak_m / (hi - lo))


class TileTerrain(SandWorld):
    """A periodic SandWorld with per-cell plastic sinkage ``sunk_m`` (m) and counters ``displaced_m3``
    (volume cut by the tracks and bulldozed), ``presses``, ``ray_casts`` (cells contact-tested) and
    ``ray_hits`` (cells found under a track); ``contact_test`` "mesh" or "patch" (module docstring)."""

    def __init__(self, heights_m, cell_m, repose_deg=34.0, erosion_iterations=2, front_fraction=0.0,
                 floor_m=0.001, contact_test="mesh"):
        if contact_test not in CONTACT_TESTS:
            raise ValueError("contact_test must be one of %s, got %r" % (", ".join(CONTACT_TESTS), contact_test))
        heights = np.asarray(heights_m, dtype=np.float64)
        if heights.ndim != 2 or min(heights.shape) < MIN_CELLS:
            raise ValueError("a Sandbox terrain needs a 2-D grid of at least %d cells per side, got shape %s"
                             % (MIN_CELLS, heights.shape))
        if not np.all(np.isfinite(heights)):
            raise ValueError("a Sandbox terrain's heights must be finite (NaN or inf in %d cells)"
                             % int(np.count_nonzero(~np.isfinite(heights))))
        cell = float(cell_m) if isinstance(cell_m, numbers.Real) and not isinstance(cell_m, bool) else math.nan
        if not (math.isfinite(cell) and cell > 0.0):
            raise ValueError("cell_m must be a finite number > 0 (m), got %r" % (cell_m,))
        rows, cols = heights.shape
        super().__init__({"size_m": [rows * cell_m, cols * cell_m], "cell_m": cell_m, "ground_level_m": 0.0,
                          "spoil_band_m": cell_m, "piles_min": 0, "piles_max": 0, "repose_deg": repose_deg,
                          "erosion_iterations": erosion_iterations})
        self.rows, self.cols = rows, cols
        self.height_m = heights.copy()
        self.sunk_m = np.zeros_like(self.height_m)
        self.front_fraction = float(front_fraction)
        self.floor_m = float(floor_m)
        self.displaced_m3 = 0.0
        self.presses = 0
        self.contact_test = contact_test
        self.ray_casts = 0
        self.ray_hits = 0
        self._cell_index_n = np.arange(rows)
        self._cell_index_e = np.arange(cols)
        self._rays = None                 # ray_cast_mesh's work arrays

    @property
    def size_ne_m(self):
        """(north, east) extent of one tile (m)."""
        return self.rows * self.cell_m, self.cols * self.cell_m

    # ------------------------------------------------------------ sampling (periodic)
    def sample(self, north_m, east_m):
        """Bilinear heights (m) at points (arrays of north, east in m; any value: wrapped)."""
        x = np.asarray(north_m, dtype=np.float64) / self.cell_m - 0.5
        y = np.asarray(east_m, dtype=np.float64) / self.cell_m - 0.5
        i0 = np.floor(x)
        j0 = np.floor(y)
        fx, fy = x - i0, y - j0
        i0 = i0.astype(np.int64) % self.rows
        j0 = j0.astype(np.int64) % self.cols
        i1 = (i0 + 1) % self.rows
        j1 = (j0 + 1) % self.cols
        h = self.height_m
        return ((1.0 - fx) * ((1.0 - fy) * h[i0, j0] + fy * h[i0, j1])
                + fx * ((1.0 - fy) * h[i1, j0] + fy * h[i1, j1]))

    def cell_of(self, north_m, east_m):
        """(rows, cols) index arrays of the cells holding the points (wrapped)."""
        i = np.floor(np.asarray(north_m) / self.cell_m).astype(np.int64) % self.rows
        j = np.floor(np.asarray(east_m) / self.cell_m).astype(np.int64) % self.cols
        return i, j

    def crop(self, north_m, east_m, cells):
        """The ``cells`` x ``cells`` heights (m, a copy) centred on the cell holding (north, east), rows
        northward, columns eastward, wrapped around the borders."""
        i, j = self.cell_of(north_m, east_m)
        half = cells // 2
        rows = (np.arange(cells) - half + int(i)) % self.rows
        cols = (np.arange(cells) - half + int(j)) % self.cols
        return self.height_m[np.ix_(rows, cols)]

    # ------------------------------------------------------------ deformation
    def _patch(self, centre_n_m, centre_e_m, length_m, width_m):
        """The box of cells around a track that can hold it and its berms: its unwrapped first and last + 1
        row and column indices (i0, i1, j0, j1)."""
        cell = self.cell_m
        reach = 0.5 * length_m + 0.5 * width_m + 1.5 * cell
        i0 = int(math.floor((centre_n_m - reach) / cell))
        i1 = int(math.floor((centre_n_m + reach) / cell)) + 1
        j0 = int(math.floor((centre_e_m - reach) / cell))
        j1 = int(math.floor((centre_e_m + reach) / cell)) + 1
        if i1 - i0 >= self.rows or j1 - j0 >= self.cols:
            raise ValueError("a track's patch (%d x %d cells) does not fit in the %d x %d terrain"
                             % (i1 - i0, j1 - j0, self.rows, self.cols))
        return i0, i1, j0, j1

    def _footprint(self, centre_n_m, centre_e_m, yaw_rad, length_m, width_m):
        """Cells around a track: wrapped (rows, cols) of a box holding it, each cell centre's ``along``
        and ``lateral`` offsets (m, forward and right of the track's centre)."""
        cell = self.cell_m
        i0, i1, j0, j1 = self._patch(centre_n_m, centre_e_m, length_m, width_m)
        dn = (np.arange(i0, i1) + 0.5)[:, None] * cell - centre_n_m
        de = (np.arange(j0, j1) + 0.5)[None, :] * cell - centre_e_m
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        along = c * dn + s * de
        lateral = -s * dn + c * de
        window = np.ix_(np.arange(i0, i1) % self.rows, np.arange(j0, j1) % self.cols)
        return window, along, lateral

    def _unwrapped_offsets(self, index, count, centre_m):
        """Offsets (m) of the cell centres ``(index + 0.5) * cell_m`` from ``centre_m`` along one axis, each
        cell taken at its periodic image nearest the centre (``index`` shifted by a whole number of tiles,
        so the offset is computed exactly as for that unwrapped index in :meth:`_footprint`)."""
        cell = self.cell_m
        tiles = np.floor(((index + 0.5) * cell - centre_m) / (count * cell) + 0.5).astype(np.int64)
        return (index - count * tiles + 0.5) * cell - centre_m

    def ray_cast_mesh(self, centre_n_m, centre_e_m, yaw_rad, length_m, width_m, base_m, tan_pitch, tan_roll):
        """Cast the vertical ray of every vertex of the map against a track's bottom face (rectangle
        ``length_m`` x ``width_m`` centred at (north, east), heading ``yaw_rad``, in the plane
        ``base_m + along * tan_pitch - lateral * tan_roll``): SCM 3.0's ray cast per mesh vertex and step
        (``SCMDeformableSoil::ComputeInternalForces``: ``RayHit`` from below to above each vertex, giving
        ``p_hit_level``). Returns full-map arrays ``along``, ``lateral`` (m, each vertex's offset
        forward/right of the track's centre, nearest periodic image), ``level_m`` (m, where the vertex's
        ray meets the face's plane) and ``hit`` (that point lies on the face), held in work arrays that the
        next call overwrites; counts ``ray_casts`` and ``ray_hits``."""
        if self._rays is None:
            shape = self.height_m.shape
            self._rays = tuple(np.empty(shape) for _ in range(4)) + (np.empty(shape, bool), np.empty(shape, bool))
        along, lateral, level, scratch, hit, inside = self._rays
        dn = self._unwrapped_offsets(self._cell_index_n, self.rows, centre_n_m)[:, None]
        de = self._unwrapped_offsets(self._cell_index_e, self.cols, centre_e_m)[None, :]
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        # along = c dn + s de, lateral = -s dn + c de, level = base + along tan_pitch - lateral tan_roll,
        # evaluated in that order (as in _footprint and press_track: the same bits)
        np.add(c * dn, s * de, out=along)
        np.add(-s * dn, c * de, out=lateral)
        np.less_equal(np.abs(along, out=scratch), 0.5 * length_m, out=hit)
        np.less_equal(np.abs(lateral, out=scratch), 0.5 * width_m, out=inside)
        np.logical_and(hit, inside, out=hit)
        np.add(base_m, np.multiply(along, tan_pitch, out=level), out=level)
        np.subtract(level, np.multiply(lateral, tan_roll, out=scratch), out=level)
        self.ray_casts += hit.size
        self.ray_hits += int(np.count_nonzero(hit))
        return along, lateral, level, hit

    def press_track(self, centre_n_m, centre_e_m, yaw_rad, length_m, width_m, base_m, tan_pitch, tan_roll,
                    direction, bekker_k=None, n=1.0, elastic_k_pa_per_m=None):
        """Cut the cells under a track (rectangle ``length_m`` x ``width_m`` centred at (north, east),
        heading ``yaw_rad``) to its bottom plane ``base_m + along * tan_pitch - lateral * tan_roll`` (m;
        ``along``/``lateral`` from the track's centre, forward/right) and bulldoze the cut volume to the rut's
        sides (and ahead of the track, ``direction`` +1 forward, -1 backward); returns the volume (m^3).
        With ``bekker_k`` (k_c/b + k_phi), ``n`` and ``elastic_k_pa_per_m`` given, only the plastic part of
        the penetration is cut: a cell penetrated by pen bears p = min(k (s + pen)^n, k_e pen) (SCM's
        elastic reload up to Bekker's curve) and keeps pen - p / k_e (the elastic part springs back).
        Which cells the track presses, and its plane's height over them, come from the contact test
        ``contact_test`` (module docstring)."""
        half_l, half_w = 0.5 * length_m, 0.5 * width_m
        if self.contact_test == "mesh":
            # every vertex's ray cast (SCM 3.0); the hits and the levels are then taken on the track's box of
            # cells (which holds every hit and every berm cell), so that the sums below run over the same
            # cells in the same order as with "patch" and round identically
            hits_before = self.ray_hits
            m_along, m_lateral, m_level, m_hit = self.ray_cast_mesh(centre_n_m, centre_e_m, yaw_rad, length_m,
                                                                    width_m, base_m, tan_pitch, tan_roll)
            i0, i1, j0, j1 = self._patch(centre_n_m, centre_e_m, length_m, width_m)
            window = np.ix_(np.arange(i0, i1) % self.rows, np.arange(j0, j1) % self.cols)
            along, lateral, plane, under = m_along[window], m_lateral[window], m_level[window], m_hit[window]
            if int(np.count_nonzero(under)) != self.ray_hits - hits_before:
                raise ValueError("a track's ray hits lie outside its patch (terrain smaller than the robot?)")
        else:
            window, along, lateral = self._footprint(centre_n_m, centre_e_m, yaw_rad, length_m, width_m)
            under = (np.abs(along) <= half_l) & (np.abs(lateral) <= half_w)
            plane = base_m + along * tan_pitch - lateral * tan_roll
            self.ray_casts += under.size
            self.ray_hits += int(np.count_nonzero(under))
        self.presses += 1
        if not under.any():
            return 0.0
        h = self.height_m[window]
        sunk = self.sunk_m[window]
        pen = np.where(under, np.clip(h - plane, 0.0, None), 0.0)
        if bekker_k is None:
            cut = pen
        else:
            p = np.minimum(bekker_k * (sunk + pen) ** n, elastic_k_pa_per_m * pen)
            cut = np.clip(pen - p / elastic_k_pa_per_m, 0.0, None)
        volume = float(cut.sum()) * self.cell_area_m2
        if volume <= 0.0:
            return 0.0
        h = h - cut
        sunk = sunk + cut
        lat = np.abs(lateral)
        berms = (~under) & (np.abs(along) <= half_l) & (lat > half_w) & (lat <= half_w + 1.01 * self.cell_m)
        ahead = direction * along
        front = (~under) & (lat <= half_w) & (ahead > half_l) & (ahead <= half_l + 1.01 * self.cell_m)
        parts = [(m, f) for m, f in ((front, self.front_fraction), (berms, 1.0 - self.front_fraction))
                 if f > 0.0 and m.any()]
        if not parts:
            raise ValueError("no cells beside a track to take the bulldozed sand (cell_m too coarse?)")
        total = sum(f for _, f in parts)
        placed = 0.0
        for k, (mask, frac) in enumerate(parts):
            vol = volume - placed if k == len(parts) - 1 else volume * frac / total
            w = np.where(mask, np.clip(plane - h, 0.0, None) + self.floor_m, 0.0)
            gain = w * (vol / (float(w.sum()) * self.cell_area_m2))
            h = h + gain
            sunk = np.maximum(sunk - gain, 0.0)
            placed += vol
        self.height_m[window] = h
        self.sunk_m[window] = sunk
        self.displaced_m3 += volume
        self.cell_updates += int(under.sum())
        return volume

    def erode(self, iterations=None):
        """Relax slopes steeper than the angle of repose, 4-neighbour and periodic (volume-conserving);
        loose sand landing on a cell undoes as much of its plastic sinkage (``sunk_m``)."""
        iterations = self.cfg["erosion_iterations"] if iterations is None else iterations
        h = self.height_m
        max_step = self._tan_repose * self.cell_m
        gained = np.zeros_like(h)
        for _ in range(iterations):
            flux = np.zeros_like(h)
            for axis in (0, 1):
                diff = np.roll(h, -1, axis=axis) - h        # h[k+1] - h[k], wrapped
                excess = np.where(np.abs(diff) > max_step, diff - np.sign(diff) * max_step, 0.0)
                move = 0.25 * excess
                flux += move
                flux -= np.roll(move, 1, axis=axis)
            h += flux
            gained += flux
        np.maximum(self.sunk_m - np.clip(gained, 0.0, None), 0.0, out=self.sunk_m)
        self.cell_updates += iterations * h.size
