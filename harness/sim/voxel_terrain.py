"""Voxel terrain of the thesis's grid leveling (Cook thesis 4.2): integer heights on a grid of cells.

A cell holds a stack of voxels; its height is a whole number of *units* (one unit is one block of one
cell, thesis 4.2.3). Cell (row, col) is at row steps north and col steps east of the south-west corner;
heights are kept as a flat row-major list of ints (``h[row * cols + col]``) for the agents' inner loop.

- **Volume** is conserved exactly: material only moves by :meth:`VoxelTerrain.take` (one unit from a
  cell into an agent) and :meth:`VoxelTerrain.put` (one unit from an agent into a cell); the world adds
  the units agents carry (``volume + carried == initial_volume``, thesis 4.1 assumption 3).
- **Level conditions** (the thesis's flatness |grad f| <= epsilon, 4.1; the grid's "level condition" of
  4.2.2 is not defined there, reading aid A1), chosen by ``level.condition``:
  ``range``: max(h) - min(h) <= epsilon (default 1 unit: the flattest a volume that is not a multiple of
  the cell count allows); ``grad``: every 4-neighbour height difference |h(i+1, j) - h(i, j)|,
  |h(i, j+1) - h(i, j)| <= epsilon; ``rms``: the standard deviation of the heights <= epsilon. All three
  are kept up to date at each take/put, so checking one is O(1) per cycle.
- **Generators** (seeded, reading aid A3): ``mounds`` (a sum of Gaussian bumps), ``ridges`` (Gaussian
  ridges along random segments), ``pits`` (the negative of mounds); the sum is scaled so its lowest cell
  is ``min_units`` and its highest ``max_units``, then rounded to whole units.
- **A user's terrain file** (``file``): a grayscale PNG (8 or 16 bit; an RGB(A) image whose channels are
  equal passes) read as intensities in [0, 1] (white = 1), or a ``.npy`` 2-D array of heights. Heights =
  round(value * ``height_scale``); ``height_scale`` null means a PNG's white is ``max_units`` and a .npy
  holds units. The file reads as an image viewer shows it: its first row (a PNG's top edge) is the grid's north
  edge, its first column the west edge (the Sandbox reads its PNG alike). The file sets the grid's size. A
  format description for users: ``docs/formats/terrain-heightmap.md``. A missing, empty, malformed, non-grayscale, non-finite or
  negative file raises :class:`onboard.core.settings.ConfigError` with one line naming the file.
"""
import math
import os

import numpy as np

from harness.data_files import not_npy_reason
from onboard.core.settings import (ConfigError, POSITIVE, TEXT, checked, int_at_least, int_within, is_number,
                                   one_of, or_null, pair)

KINDS = ("mounds", "ridges", "pits")
CONDITIONS = ("range", "grad", "rms")
MAX_SIDE = 4096                       # cells per side of a terrain file
MAX_UNITS = 2 ** 31                   # the tallest cell a terrain file may give, grid units (int64 sums stay exact)

DEFAULTS = {
    "rows": 32,                       # cells north
    "cols": 32,                       # cells east
    "kind": "mounds",                 # mounds | ridges | pits
    # bumps, ridges or pits summed, and their Gaussian sigma (cells, drawn uniformly): hills of a few cells'
    # radius; the best constant rho depends on it (thesis 4.2.2's conjecture)
    "features": 30,
    "radius_cells": [1.5, 3.5],
    "min_units": 0,                   # lowest cell after scaling
    "max_units": 12,                  # highest cell after scaling (A3: heights ~0-12 units, mean ~6)
    "file": None,                     # a grayscale PNG or a .npy height array (replaces the generator)
    "height_scale": None,             # file value -> units (null: PNG white = max_units, .npy = units)
}
SETTING_RANGES = {
    "rows": int_within(2, MAX_SIDE), "cols": int_within(2, MAX_SIDE), "kind": one_of(*KINDS),
    "features": int_at_least(1), "radius_cells": pair(POSITIVE, ordered=True),
    "min_units": int_at_least(0), "max_units": int_at_least(0), "file": or_null(TEXT),
    "height_scale": or_null(POSITIVE),
    ("min_units", "max_units"): ("in order (min_units <= max_units)", lambda lo, hi: lo <= hi),
}
LEVEL_DEFAULTS = {
    "condition": "range",             # range | grad | rms
    "epsilon_units": 1.0,             # the threshold of the condition (units)
}
LEVEL_SETTING_RANGES = {
    "condition": one_of(*CONDITIONS),
    "epsilon_units": ("a number >= 0", lambda v: is_number(v) and v >= 0),
}


class TerrainError(ValueError):
    """A take from an empty cell, or a cell index off the grid."""


# ------------------------------------------------------------------ generators
def generate(config, rng):
    """Heights (2-D int64 array, units) of a seeded terrain; ``rng`` a NumPy Generator (e.g.
    ``RunRandom(seed).stream("terrain")``)."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "terrain")
    rows, cols = cfg["rows"], cfg["cols"]
    north = np.arange(rows, dtype=np.float64)[:, None] + 0.5
    east = np.arange(cols, dtype=np.float64)[None, :] + 0.5
    field = np.zeros((rows, cols))
    r_lo, r_hi = cfg["radius_cells"]
    for _ in range(cfg["features"]):
        cn = rng.uniform(0.0, rows)
        ce = rng.uniform(0.0, cols)
        sigma = rng.uniform(r_lo, r_hi)
        amp = rng.uniform(0.5, 1.0)
        if cfg["kind"] == "ridges":
            angle = rng.uniform(0.0, math.pi)
            half = rng.uniform(0.25, 0.5) * max(rows, cols)
            un, ue = math.cos(angle), math.sin(angle)
            along = np.clip((north - cn) * un + (east - ce) * ue, -half, half)
            d2 = (north - cn - along * un) ** 2 + (east - ce - along * ue) ** 2
        else:
            d2 = (north - cn) ** 2 + (east - ce) ** 2
        field += amp * np.exp(-d2 / (2.0 * sigma * sigma))
    if cfg["kind"] == "pits":
        field = -field
    lo, hi = float(field.min()), float(field.max())
    unit = (field - lo) / (hi - lo) if hi > lo else np.zeros_like(field)
    return np.rint(cfg["min_units"] + (cfg["max_units"] - cfg["min_units"]) * unit).astype(np.int64)


def _check_sides(path, rows, cols):
    """ConfigError unless a terrain file of ``rows`` x ``cols`` cells has each side 2..MAX_SIDE."""
    if min(rows, cols) < 2 or max(rows, cols) > MAX_SIDE:
        raise ConfigError("terrain file %s: %dx%d cells; each side must be 2..%d" % (path, rows, cols, MAX_SIDE))


def _png_header_size(path):
    """(columns, rows) from a PNG's IHDR chunk (the first 24 bytes), or None when the file does not start as a
    PNG does."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _png_values(path):
    """Intensities in [0, 1] of a grayscale PNG (white = 1). Its size is checked from its header, before its
    pixels are decoded (a small file may declare gigabytes of them)."""
    from PIL import Image
    size = _png_header_size(path)
    if size is not None:
        _check_sides(path, size[1], size[0])
    try:
        with Image.open(path) as img:
            cols, rows = img.size
            if min(rows, cols) < 2 or max(rows, cols) > MAX_SIDE:
                arr = None
            else:
                img.load()
                mode = img.mode
                if mode == "P":
                    img = img.convert("RGBA")
                    mode = "RGBA"
                arr = np.asarray(img)
    except Exception as exc:          # PIL raises many kinds for a broken file
        raise ConfigError("terrain file %s: not a readable PNG (%s)" % (path, str(exc).splitlines()[0]
                                                                         if str(exc) else type(exc).__name__))
    if arr is None:
        _check_sides(path, rows, cols)
    full = {"1": 1.0, "L": 255.0, "LA": 255.0, "RGB": 255.0, "RGBA": 255.0, "I;16": 65535.0,
            "I;16B": 65535.0, "I;16L": 65535.0, "I": 65535.0}.get(mode)
    if full is None:
        raise ConfigError("terrain file %s: unsupported PNG mode %s (give a grayscale PNG)" % (path, mode))
    arr = arr.astype(np.float64)
    if arr.ndim == 3:
        colour = arr[..., :3] if arr.shape[2] >= 3 else arr[..., :1]
        if not np.all(colour == colour[..., :1]):
            raise ConfigError("terrain file %s: a colour image; give a grayscale PNG" % path)
        arr = colour[..., 0]
    if mode == "1":
        arr = (arr > 0).astype(np.float64)
    return arr / full


def _npy_values(path):
    reason = not_npy_reason(path)
    if reason:
        raise ConfigError("terrain file %s: %s" % (path, reason))
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise ConfigError("terrain file %s: not a readable .npy array (%s)" % (path, str(exc).splitlines()[0]
                                                                               if str(exc) else type(exc).__name__))
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
        raise ConfigError("terrain file %s: a .npy of numbers is needed, got dtype %s"
                          % (path, getattr(arr, "dtype", type(arr).__name__)))
    return arr.astype(np.float64)


def load_heights(path, height_scale=None, max_units=12):
    """Heights (2-D int64 array, units) from a user's terrain file (see the module docstring), rows in the
    file's order: row 0 is its first row (a PNG's top edge)."""
    if not isinstance(path, str) or not path:
        raise ConfigError("terrain file must be a path, got %r" % (path,))
    if os.path.isdir(path):
        raise ConfigError("terrain file %s is a directory, not a file" % path)
    if not os.path.isfile(path):
        raise ConfigError("terrain file %s not found" % path)
    if os.path.getsize(path) == 0:
        raise ConfigError("terrain file %s is empty" % path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".png":
        values = _png_values(path)
        scale = float(max_units) if height_scale is None else float(height_scale)
    elif ext == ".npy":
        values = _npy_values(path)
        scale = 1.0 if height_scale is None else float(height_scale)
    else:
        raise ConfigError("terrain file %s: expected a grayscale .png or a .npy height array" % path)
    if values.size == 0:
        raise ConfigError("terrain file %s holds no cells" % path)
    if values.ndim != 2:
        raise ConfigError("terrain file %s: a 2-D height grid is needed, got shape %s"
                          % (path, "x".join(str(s) for s in values.shape) or "() (a single number)"))
    _check_sides(path, values.shape[0], values.shape[1])
    if not np.all(np.isfinite(values)):
        raise ConfigError("terrain file %s holds NaN or infinite heights" % path)
    heights = np.rint(values * scale)
    # the messages give the file's own values (the caller's scale to grid units is not the user's setting)
    if heights.min() < 0:
        raise ConfigError("terrain file %s holds negative heights (lowest value %g)" % (path, values.min()))
    if heights.max() > MAX_UNITS:
        raise ConfigError("terrain file %s: its highest value %g is too tall (at most %g at this height scale)"
                          % (path, values.max(), MAX_UNITS / scale))
    return heights.astype(np.int64)


def build_heights(config, rng):
    """Heights of the configured terrain: the user's file when ``file`` is set, else the generator."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "terrain")
    if cfg["file"] is not None:
        # the file's first row is the north edge; the grid's row 0 is the south edge
        return np.flipud(load_heights(cfg["file"], cfg["height_scale"], cfg["max_units"]))
    return generate(cfg, rng)


# ------------------------------------------------------------------ terrain
class VoxelTerrain:
    """Integer heights with their level statistics kept up to date (see the module docstring).

    ``heights``: a 2-D array-like of whole numbers >= 0 (units). ``level``: the level-condition settings
    (LEVEL_DEFAULTS). Counters: ``takes``, ``puts``."""

    def __init__(self, heights, level=None):
        arr = np.asarray(heights)
        if arr.ndim != 2 or min(arr.shape) < 1:
            raise TerrainError("heights must be a non-empty 2-D grid, got shape %s" % (arr.shape,))
        if arr.dtype.kind not in "biuf" or not np.all(np.isfinite(arr)) or np.any(arr != np.rint(arr)) \
                or np.any(arr < 0):
            raise TerrainError("heights must be whole numbers >= 0 (units)")
        cfg = checked(LEVEL_DEFAULTS, LEVEL_SETTING_RANGES, level, "level")
        self.level_cfg = cfg
        self.condition = cfg["condition"]
        self.eps = float(cfg["epsilon_units"])
        self.rows, self.cols = int(arr.shape[0]), int(arr.shape[1])
        self.n = self.rows * self.cols
        self.h = [int(v) for v in arr.ravel()]
        rows, cols = self.rows, self.cols
        self.nb4 = []                 # 4-neighbours of each cell
        for r in range(rows):
            for c in range(cols):
                nb = []
                if r > 0:
                    nb.append((r - 1) * cols + c)
                if r + 1 < rows:
                    nb.append((r + 1) * cols + c)
                if c > 0:
                    nb.append(r * cols + c - 1)
                if c + 1 < cols:
                    nb.append(r * cols + c + 1)
                self.nb4.append(tuple(nb))
        self._recount()
        self.initial_volume = self.total
        self.takes = 0
        self.puts = 0

    def _recount(self):
        """The statistics (total, sum of squares, histogram, lo, hi, steep pairs) from the heights."""
        h = self.h
        self.total = sum(h)
        self.sumsq = sum(v * v for v in h)
        self.hist = {}
        for v in h:
            self.hist[v] = self.hist.get(v, 0) + 1
        self.lo = min(h)
        self.hi = max(h)
        eps = self.eps
        bad = 0
        for i in range(self.n):
            for j in self.nb4[i]:
                if j > i and abs(h[i] - h[j]) > eps:
                    bad += 1
        self.bad_pairs = bad          # 4-neighbour pairs steeper than epsilon

    def mirror(self, heights, takes, puts):
        """Take over heights (flat, units) and counters computed elsewhere (the Cython inner loop):
        the statistics are recounted, the initial volume kept."""
        if len(heights) != self.n:
            raise TerrainError("mirror: %d heights for %d cells" % (len(heights), self.n))
        self.h[:] = [int(v) for v in heights]
        self._recount()
        self.takes = int(takes)
        self.puts = int(puts)

    # ------------------------------------------------------------ changes
    def take(self, idx):
        """One unit out of cell ``idx`` (flat index); TerrainError when it is empty."""
        old = self.h[idx]
        if old <= 0:
            raise TerrainError("cell %d is empty: nothing to take" % idx)
        self._change(idx, old, old - 1)
        self.takes += 1

    def put(self, idx):
        """One unit into cell ``idx`` (flat index)."""
        old = self.h[idx]
        self._change(idx, old, old + 1)
        self.puts += 1

    def _change(self, idx, old, new):
        h = self.h
        eps = self.eps
        bad = self.bad_pairs
        for j in self.nb4[idx]:
            hj = h[j]
            bad += (abs(new - hj) > eps) - (abs(old - hj) > eps)
        self.bad_pairs = bad
        h[idx] = new
        self.total += new - old
        self.sumsq += new * new - old * old
        hist = self.hist
        hist[new] = hist.get(new, 0) + 1
        if new < self.lo:
            self.lo = new
        if new > self.hi:
            self.hi = new
        left = hist[old] - 1
        if left:
            hist[old] = left
        else:
            del hist[old]
            while self.lo not in hist:
                self.lo += 1
            while self.hi not in hist:
                self.hi -= 1

    # ------------------------------------------------------------ statistics
    @property
    def volume(self):
        """Units in the terrain (carried units not included)."""
        return self.total

    def range_units(self):
        return self.hi - self.lo

    def rms_units(self):
        """Standard deviation of the heights about their mean (units)."""
        n = self.n
        return math.sqrt(max(0, n * self.sumsq - self.total * self.total)) / n

    def max_gradient_units(self):
        """Largest 4-neighbour height difference (units)."""
        a = self.as_array()
        g = 0
        if self.rows > 1:
            g = max(g, int(np.abs(np.diff(a, axis=0)).max()))
        if self.cols > 1:
            g = max(g, int(np.abs(np.diff(a, axis=1)).max()))
        return g

    def is_level(self):
        """The configured level condition holds (O(1))."""
        c = self.condition
        if c == "range":
            return self.hi - self.lo <= self.eps
        if c == "grad":
            return self.bad_pairs == 0
        n = self.n
        return n * self.sumsq - self.total * self.total <= (self.eps * n) ** 2

    def as_array(self):
        """Heights as a rows x cols int64 array (a copy)."""
        return np.array(self.h, dtype=np.int64).reshape(self.rows, self.cols)

    def stats(self):
        """{range_units, max_gradient_units, rms_units, mean_units, volume_units}."""
        return {"range_units": self.range_units(), "max_gradient_units": self.max_gradient_units(),
                "rms_units": self.rms_units(), "mean_units": self.total / self.n, "volume_units": self.total}
