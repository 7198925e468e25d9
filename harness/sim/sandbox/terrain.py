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

Generated terrains (:func:`tileable_heights`) are seeded, band-limited noise synthesised in Fourier space,
hence seamless; a user's heightmap comes through :mod:`harness.sim.sandbox.config`.
"""
import math

import numpy as np

from harness.sim.sand_world import SandWorld

MIN_CELLS = 16                        # cells per side, at least


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
    (volume cut by the tracks and bulldozed), ``presses``."""

    def __init__(self, heights_m, cell_m, repose_deg=34.0, erosion_iterations=2, front_fraction=0.0,
                 floor_m=0.001):
        heights = np.asarray(heights_m, dtype=np.float64)
        if heights.ndim != 2 or min(heights.shape) < MIN_CELLS:
            raise ValueError("a Sandbox terrain needs a 2-D grid of at least %d cells per side, got shape %s"
                             % (MIN_CELLS, heights.shape))
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
    def _footprint(self, centre_n_m, centre_e_m, yaw_rad, length_m, width_m):
        """Cells around a track: wrapped (rows, cols) of a box holding it, each cell centre's ``along``
        and ``lateral`` offsets (m, forward and right of the track's centre)."""
        cell = self.cell_m
        reach = 0.5 * length_m + 0.5 * width_m + 1.5 * cell
        i0 = int(math.floor((centre_n_m - reach) / cell))
        i1 = int(math.floor((centre_n_m + reach) / cell)) + 1
        j0 = int(math.floor((centre_e_m - reach) / cell))
        j1 = int(math.floor((centre_e_m + reach) / cell)) + 1
        if i1 - i0 >= self.rows or j1 - j0 >= self.cols:
            raise ValueError("a track's patch (%d x %d cells) does not fit in the %d x %d terrain"
                             % (i1 - i0, j1 - j0, self.rows, self.cols))
        dn = (np.arange(i0, i1) + 0.5)[:, None] * cell - centre_n_m
        de = (np.arange(j0, j1) + 0.5)[None, :] * cell - centre_e_m
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        along = c * dn + s * de
        lateral = -s * dn + c * de
        window = np.ix_(np.arange(i0, i1) % self.rows, np.arange(j0, j1) % self.cols)
        return window, along, lateral

    def press_track(self, centre_n_m, centre_e_m, yaw_rad, length_m, width_m, base_m, tan_pitch, tan_roll,
                    direction, bekker_k=None, n=1.0, elastic_k_pa_per_m=None):
        """Cut the cells under a track (rectangle ``length_m`` x ``width_m`` centred at (north, east),
        heading ``yaw_rad``) to its bottom plane ``base_m + along * tan_pitch - lateral * tan_roll`` (m;
        ``along``/``lateral`` from the track's centre, forward/right) and bulldoze the cut volume to the rut's
        sides (and ahead of the track, ``direction`` +1 forward, -1 backward); returns the volume (m^3).
        With ``bekker_k`` (k_c/b + k_phi), ``n`` and ``elastic_k_pa_per_m`` given, only the plastic part of
        the penetration is cut: a cell penetrated by pen bears p = min(k (s + pen)^n, k_e pen) (SCM's
        elastic reload up to Bekker's curve) and keeps pen - p / k_e (the elastic part springs back)."""
        window, along, lateral = self._footprint(centre_n_m, centre_e_m, yaw_rad, length_m, width_m)
        half_l, half_w = 0.5 * length_m, 0.5 * width_m
        under = (np.abs(along) <= half_l) & (np.abs(lateral) <= half_w)
        self.presses += 1
        if not under.any():
            return 0.0
        h = self.height_m[window]
        plane = base_m + along * tan_pitch - lateral * tan_roll
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
