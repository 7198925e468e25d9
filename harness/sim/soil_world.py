"""Soil world of the soil paper (full CTL scale, SI units): the hidden truth soil-property fields.

Grid (as ``onboard.soil.grid_map`` and ``harness.sim.sand_world``): ``field[i, j]`` belongs to the cell whose
centre is at north = (i + 0.5) * cell_m, east = (j + 0.5) * cell_m (NED plane, metres).

Truth properties per cell, in the slots of ``onboard.soil.fee``: cohesion ``c_pa`` [Pa], internal friction
``phi_rad``, moist unit weight ``gamma_npm3`` [N/m^3], adhesion ``ca_pa`` [Pa], soil-tool friction
``delta_rad``. They come from a preset per soil type (clay, loam, sand, gravel) interpolated linearly in the
relative density I_d from 0 % (loosest) to 100 % (densest) (reading aid notes A19; placeholders, the paper's
Vortex values are not public), over a field of I_d built by one of:

- ``uniform``: one I_d everywhere;
- ``strip``: ``strip.relative_density_pct`` between ``strip.from_m`` and ``strip.to_m`` along ``strip.axis``
  (the paper's strip test, section 3.2: clay at 10 % with an 80 % strip);
- ``patches``: ``patches.count`` discs of random radius and I_d on the background;
- ``random``: a Gaussian random field with correlation length ``random.correlation_m``, its normal scores
  mapped uniformly onto ``random.relative_density_pct``;
- ``file``: a user's file (below).

User files (settings ``file``, ``regions_file`` and ``npy_files``; every problem is one line,
:class:`onboard.core.settings.ConfigError`):

- ``file``: one file of either kind below, by its extension: ``.toml`` (regions) or ``.npz`` (arrays named
  by the property keys, any subset; the others come from the soil preset at ``relative_density_pct``);
  it replaces the field builder (``field`` stays "uniform" or is "file");
- a TOML of geometric regions: top-level ``soil`` and ``relative_density_pct`` (the background, optional) and
  any property key, then ``[[regions]]`` tables applied in order, each with ``shape = "rectangle"``
  (``north_m = [lo, hi]``, ``east_m = [lo, hi]``), ``"circle"`` (``centre_ne_m``, ``radius_m``) or
  ``"polygon"`` (``vertices_ne_m``, cell centres inside by the even-odd rule) and what it sets: ``soil``,
  ``relative_density_pct`` and/or property keys;
- one ``.npy`` 2-D array per property, of the grid's shape, replacing that property everywhere.

Property keys in files are the user-facing units: ``c_pa``, ``phi_deg``, ``gamma_npm3``, ``ca_pa``,
``delta_deg``. A field is refused when it has the wrong shape or a non-numeric (or bool) array, holds NaN or
infinities, a negative cohesion or adhesion or one above 1 MPa (:data:`MAX_STRESS_PA`), a unit weight <= 0 or
above 50 kN/m^3 (:data:`MAX_UNIT_WEIGHT_NPM3`), or friction angles outside [0, 90) deg (phi > 0); a region
is refused when its geometry is not finite numbers, a rectangle's [lo, hi] is not in order, a circle's radius
is not > 0, or it sets nothing.
"""
import math
import os
import tomllib

import numpy as np

from harness.data_files import not_npy_reason
from onboard.core.settings import (NON_NEGATIVE, POSITIVE, ConfigError, checked, closest, int_at_least, one_of,
                                   or_null, pair, within)
from onboard.soil.fee import THETA_U_NAMES

PROPERTIES = THETA_U_NAMES                 # c_pa, phi_rad, gamma_npm3, ca_pa, delta_rad
FILE_KEYS = ("c_pa", "phi_deg", "gamma_npm3", "ca_pa", "delta_deg")   # the same, as users write them
SOILS = ("clay", "loam", "sand", "gravel")

# per soil: (value at I_d = 0 %, value at I_d = 100 %) for c [Pa], phi [deg], gamma [N/m^3]; c_a = ca_ratio c;
# delta = delta_ratio phi (notes A19). Loose (disturbed) soil: the paper's c_l, phi_l and swell (section 3),
# gamma_l = 0.8 gamma at I_d = 0.
PRESETS = {
    "clay": {"c_pa": (5e3, 30e3), "phi_deg": (20.0, 30.0), "gamma_npm3": (15e3, 19e3), "ca_ratio": 0.5,
             "delta_ratio": 2.0 / 3.0},
    "loam": {"c_pa": (2e3, 12e3), "phi_deg": (28.0, 38.0), "gamma_npm3": (14e3, 18e3), "ca_ratio": 0.5,
             "delta_ratio": 2.0 / 3.0},
    "sand": {"c_pa": (0.0, 1e3), "phi_deg": (30.0, 42.0), "gamma_npm3": (15e3, 18e3), "ca_ratio": 0.0,
             "delta_ratio": 2.0 / 3.0},
    "gravel": {"c_pa": (0.0, 0.0), "phi_deg": (35.0, 45.0), "gamma_npm3": (17e3, 21e3), "ca_ratio": 0.0,
               "delta_ratio": 2.0 / 3.0},
}
# upper bounds of what a field may hold (a user's file is refused above them): 1 MPa cohesion / adhesion
# (33x the densest clay preset, 17x the cut estimator's bound of 60 kPa), 50 kN/m^3 unit weight (2.4x the
# densest gravel preset, 2x the estimator's 25 kN/m^3, above any rock)
MAX_STRESS_PA = 1e6
MAX_UNIT_WEIGHT_NPM3 = 50e3
LOOSE = {"cohesion_pa": 25.0, "friction_rad": 0.26, "swell": 1.2, "unit_weight_ratio": 0.8}

PERCENT = within(0.0, 100.0)
DEFAULTS = {
    "size_m": [24.0, 16.0],           # extent north, east [m] (notes A18)
    "cell_m": 0.1,
    "soil": "loam",
    "relative_density_pct": 50.0,
    "field": "uniform",               # uniform | strip | patches | random | file
    "strip": {"axis": "north", "from_m": 8.0, "to_m": 11.0, "relative_density_pct": 80.0},
    "patches": {"count": 4, "radius_m": [1.0, 3.0], "relative_density_pct": [10.0, 90.0]},
    "random": {"correlation_m": 2.0, "relative_density_pct": [10.0, 90.0]},
    "file": None,                     # a user's field file: .toml regions or .npz property arrays
    "regions_file": None,             # a TOML of regions (field "file")
    "npy_files": {"c_pa": None, "phi_deg": None, "gamma_npm3": None, "ca_pa": None, "delta_deg": None},
}
SETTING_RANGES = {
    "size_m": pair(POSITIVE),
    "cell_m": POSITIVE,
    "soil": one_of(*SOILS),
    "relative_density_pct": PERCENT,
    "field": one_of("uniform", "strip", "patches", "random", "file"),
    "strip.axis": one_of("north", "east"),
    "strip.from_m": NON_NEGATIVE,
    "strip.to_m": NON_NEGATIVE,
    ("strip.from_m", "strip.to_m"): ("in order (from_m < to_m)", lambda a, b: a < b),
    "strip.relative_density_pct": PERCENT,
    "patches.count": int_at_least(0),
    "patches.radius_m": pair(POSITIVE, ordered=True),
    "patches.relative_density_pct": pair(PERCENT, ordered=True),
    "random.correlation_m": POSITIVE,
    "random.relative_density_pct": pair(PERCENT, ordered=True),
    "file": or_null(("a path ending in .toml or .npz", lambda v: isinstance(v, str)
                     and v.lower().endswith((".toml", ".npz")))),
    ("file", "field"): ("a file with field uniform or file (the file replaces the field builder)",
                        lambda f, kind: f is None or kind in ("uniform", "file")),
    "regions_file": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    "npy_files.c_pa": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    "npy_files.phi_deg": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    "npy_files.gamma_npm3": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    "npy_files.ca_pa": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    "npy_files.delta_deg": or_null(("a path", lambda v: isinstance(v, str) and len(v) > 0)),
    ("cell_m", "size_m"): ("a cell at most a quarter of the world's smaller side",
                           lambda cell, size: cell * 4 <= min(size)),
}


def preset_properties(soil, relative_density_pct):
    """{property: value or array} of soil ``soil`` at relative density I_d [%] (scalar or array), the
    properties in SI units (notes A19)."""
    if soil not in PRESETS:
        raise ConfigError("unknown soil %r (known: %s)" % (soil, ", ".join(SOILS)))
    p = PRESETS[soil]
    u = np.clip(np.asarray(relative_density_pct, dtype=float), 0.0, 100.0) / 100.0

    def lerp(pair_):
        return pair_[0] + (pair_[1] - pair_[0]) * u
    c = lerp(p["c_pa"])
    phi = np.radians(lerp(p["phi_deg"]))
    return {"c_pa": c, "phi_rad": phi, "gamma_npm3": lerp(p["gamma_npm3"]), "ca_pa": p["ca_ratio"] * c,
            "delta_rad": p["delta_ratio"] * phi}


def loose_properties(soil):
    """Loose (disturbed) soil of ``soil``: {"cohesion_pa", "friction_rad", "swell", "unit_weight_npm3"}
    (the paper's fixed c_l, phi_l, s; gamma_l = 0.8 gamma at I_d = 0, notes 5.3)."""
    gamma0 = PRESETS[soil]["gamma_npm3"][0]
    return {"cohesion_pa": LOOSE["cohesion_pa"], "friction_rad": LOOSE["friction_rad"], "swell": LOOSE["swell"],
            "unit_weight_npm3": LOOSE["unit_weight_ratio"] * gamma0}


class SoilFields:
    """The truth property fields: ``self.values[name]`` is an (n_north, n_east) array per property of
    :data:`PROPERTIES` (SI units); ``relative_density_pct`` and ``soil`` (an array of soil names) record what
    built them where that is known (None after a .npy replaced a property)."""

    def __init__(self, values, cell_m, relative_density_pct=None, soil=None, where="soil fields"):
        shape = None
        for name in PROPERTIES:
            arr = np.asarray(values[name], dtype=float)
            if shape is None:
                shape = arr.shape
            if arr.shape != shape:
                raise ConfigError("%s: %s has shape %s, the others %s" % (where, name, arr.shape, shape))
        self.values = {name: np.array(values[name], dtype=float) for name in PROPERTIES}
        self.cell_m = float(cell_m)
        self.shape = shape
        self.relative_density_pct = relative_density_pct
        self.soil = soil
        check_fields(self.values, where)

    def theta_u(self, i, j):
        """[c, phi, gamma, c_a, delta] of cell (i, j) (``onboard.soil.fee`` slots)."""
        return [float(self.values[name][i, j]) for name in PROPERTIES]

    def mean_theta_u(self, mask):
        """[c, phi, gamma, c_a, delta] averaged over the cells of boolean ``mask`` (e.g. a failure wedge)."""
        return [float(self.values[name][mask].mean()) for name in PROPERTIES]


def check_fields(values, where):
    """Raise ConfigError (one line naming ``where``, the property as users write it (``phi_deg``), the first
    bad cell and its value in that key's unit) unless every property is finite and physical."""
    def user(name, i, j):       # "phi_deg = 95" for the internal phi_rad
        key = FILE_KEYS[PROPERTIES.index(name)]
        v = float(values[name][i, j])
        return key, math.degrees(v) if key.endswith("_deg") else v

    for name in PROPERTIES:
        bad = ~np.isfinite(values[name])
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            key, v = user(name, i, j)
            raise ConfigError("%s: %s holds NaN or infinite values, first at cell (%d, %d) (%s = %g)"
                              % (where, key, i, j, key, v))
    checks = (("c_pa", lambda a: a >= 0.0, "negative cohesion"),
              ("c_pa", lambda a: a <= MAX_STRESS_PA, "a cohesion above %g Pa" % MAX_STRESS_PA),
              ("ca_pa", lambda a: a >= 0.0, "negative adhesion"),
              ("ca_pa", lambda a: a <= MAX_STRESS_PA, "an adhesion above %g Pa" % MAX_STRESS_PA),
              ("gamma_npm3", lambda a: a > 0.0, "a unit weight <= 0"),
              ("gamma_npm3", lambda a: a <= MAX_UNIT_WEIGHT_NPM3,
               "a unit weight above %g N/m^3" % MAX_UNIT_WEIGHT_NPM3),
              ("phi_rad", lambda a: (a > 0.0) & (a < 0.5 * math.pi), "a friction angle phi outside (0, 90) deg"),
              ("delta_rad", lambda a: (a >= 0.0) & (a < 0.5 * math.pi),
               "a soil-tool friction delta outside [0, 90) deg"))
    for name, ok, text in checks:
        bad = ~ok(values[name])
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            key, v = user(name, i, j)
            raise ConfigError("%s: %s at cell (%d, %d) (%s = %g)" % (where, text, i, j, key, v))


def _centres(shape, cell_m):
    n = (np.arange(shape[0]) + 0.5) * cell_m
    e = (np.arange(shape[1]) + 0.5) * cell_m
    return np.meshgrid(n, e, indexing="ij")


def _grid_shape(cfg):
    return (int(math.ceil(cfg["size_m"][0] / cfg["cell_m"] - 1e-9)),
            int(math.ceil(cfg["size_m"][1] / cfg["cell_m"] - 1e-9)))


def relative_density_field(cfg, rng):
    """The I_d field [%] of settings ``cfg`` (fields uniform, strip, patches, random) drawn with numpy
    Generator ``rng``."""
    shape = _grid_shape(cfg)
    base = np.full(shape, float(cfg["relative_density_pct"]))
    n, e = _centres(shape, cfg["cell_m"])
    kind = cfg["field"]
    if kind == "strip":
        s = cfg["strip"]
        coord = n if s["axis"] == "north" else e
        base[(coord >= s["from_m"]) & (coord < s["to_m"])] = s["relative_density_pct"]
    elif kind == "patches":
        p = cfg["patches"]
        for _ in range(p["count"]):
            cn = rng.uniform(0.0, cfg["size_m"][0])
            ce = rng.uniform(0.0, cfg["size_m"][1])
            r = rng.uniform(*p["radius_m"])
            base[(n - cn) ** 2 + (e - ce) ** 2 <= r * r] = rng.uniform(*p["relative_density_pct"])
    elif kind == "random":
        from scipy.special import ndtr
        r = cfg["random"]
        white = rng.standard_normal(shape)
        kn = np.fft.fftfreq(shape[0], d=cfg["cell_m"])[:, None]
        ke = np.fft.fftfreq(shape[1], d=cfg["cell_m"])[None, :]
        ell = r["correlation_m"]
        smooth = np.real(np.fft.ifft2(np.fft.fft2(white) * np.exp(-2.0 * (math.pi * ell) ** 2 * (kn ** 2 + ke ** 2))))
        std = smooth.std()
        scores = (smooth - smooth.mean()) / std if std > 0 else np.zeros(shape)
        lo, hi = r["relative_density_pct"]
        base = lo + (hi - lo) * ndtr(scores)
    return base


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _pair(region, key, where, what, ordered=False):
    """``region[key]`` as two finite numbers (and lo < hi where ``ordered``), else one-line ConfigError."""
    v = region[key]
    if not (isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v)):
        raise ConfigError("%s: %s must be %s (two finite numbers), got %r" % (where, key, what, v))
    if ordered and not v[0] < v[1]:
        raise ConfigError("%s: %s must be %s with lo < hi, got %r" % (where, key, what, v))
    return float(v[0]), float(v[1])


def _region_mask(region, n, e, where):
    shape = region.get("shape")
    try:
        if shape == "rectangle":
            n0, n1 = _pair(region, "north_m", where, "[lo, hi] in metres", ordered=True)
            e0, e1 = _pair(region, "east_m", where, "[lo, hi] in metres", ordered=True)
            return (n >= n0) & (n < n1) & (e >= e0) & (e < e1)
        if shape == "circle":
            cn, ce = _pair(region, "centre_ne_m", where, "[north, east] in metres")
            r = region["radius_m"]
            if not _is_number(r) or r <= 0.0:
                raise ConfigError("%s: radius_m must be a finite number > 0, got %r" % (where, r))
            return (n - cn) ** 2 + (e - ce) ** 2 <= float(r) * float(r)
        if shape == "polygon":
            raw = region["vertices_ne_m"]
            if not isinstance(raw, list):
                raise ConfigError("%s: vertices_ne_m must be a list of [north, east] pairs, got %r" % (where, raw))
            for k, v in enumerate(raw):
                if not (isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v)):
                    raise ConfigError("%s: vertex %d of vertices_ne_m must be [north, east] (two finite numbers), "
                                      "got %r" % (where, k + 1, v))
            verts = [(float(v[0]), float(v[1])) for v in raw]
            if len(verts) < 3:
                raise ConfigError("%s: a polygon needs at least 3 vertices" % where)
            inside = np.zeros(n.shape, dtype=bool)
            for k in range(len(verts)):
                (na, ea), (nb, eb) = verts[k], verts[(k + 1) % len(verts)]
                crosses = ((na <= n) & (n < nb)) | ((nb <= n) & (n < na))
                with np.errstate(divide="ignore", invalid="ignore"):
                    e_cross = ea + (n - na) * (eb - ea) / (nb - na)
                inside ^= crosses & (e < e_cross)
            return inside
    except KeyError as exc:
        raise ConfigError("%s: a %s region needs %s" % (where, shape, exc.args[0]))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError("%s: malformed %s region geometry (%s)" % (where, shape, exc))
    raise ConfigError("%s: region shape must be rectangle, circle or polygon, got %r" % (where, shape))


_REGION_GEOMETRY = {"rectangle": ("north_m", "east_m"), "circle": ("centre_ne_m", "radius_m"),
                    "polygon": ("vertices_ne_m",)}
_SETS = ("soil", "relative_density_pct") + FILE_KEYS


def _apply(values, mask, table, soil_arr, idd_arr, where):
    """Set the cells of ``mask`` from a table's soil / relative_density_pct / property keys."""
    if "soil" in table and not (isinstance(table["soil"], str) and table["soil"] in PRESETS):
        raise ConfigError("%s: unknown soil %r (known: %s)" % (where, table["soil"], ", ".join(SOILS)))
    if "relative_density_pct" in table:
        v = table["relative_density_pct"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 100.0:
            raise ConfigError("%s: relative_density_pct must be a number in [0, 100], got %r" % (where, v))
    if "soil" in table or "relative_density_pct" in table:
        if "soil" in table:
            soil_arr[mask] = table["soil"]
        if "relative_density_pct" in table:
            idd_arr[mask] = float(table["relative_density_pct"])
        for soil in SOILS:
            sel = mask & (soil_arr == soil)
            if np.any(sel):
                props = preset_properties(soil, idd_arr[sel])
                for name in PROPERTIES:
                    values[name][sel] = props[name]
    for key, name in zip(FILE_KEYS, PROPERTIES):
        if key in table:
            v = table[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError("%s: %s must be a number, got %r" % (where, key, v))
            values[name][mask] = math.radians(v) if key.endswith("_deg") else float(v)


def load_regions(path, shape, cell_m, soil, relative_density_pct):
    """SoilFields from a TOML of regions (module docstring) on a grid of ``shape`` cells of ``cell_m``, the
    background from ``soil`` at ``relative_density_pct`` unless the file sets its own."""
    if os.path.isdir(path):
        raise ConfigError("soil field file %s is a directory, not a file" % path)
    if not os.path.isfile(path):
        raise ConfigError("soil field file %s not found" % path)
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("soil field file %s: not valid TOML: %s" % (path, str(exc).splitlines()[0]))
    except RecursionError:              # tomllib recurses once per level of nested arrays / inline tables
        raise ConfigError("soil field file %s: not valid TOML: arrays or tables nested too deeply" % path)
    except ValueError as exc:           # an integer of more than 4300 digits (int's conversion limit)
        raise ConfigError("soil field file %s: not valid TOML: %s" % (path, " ".join(str(exc).split())))
    for key in doc:
        if key not in _SETS + ("regions",):
            near = closest(key, _SETS + ("regions",))
            raise ConfigError("soil field file %s: unknown key %r%s" % (path, key,
                                                                        " (did you mean %r?)" % near if near else ""))
    n, e = _centres(shape, cell_m)
    soil_arr = np.full(shape, soil, dtype=object)         # the file's own soil is checked and set by _apply
    idd_arr = np.full(shape, float(relative_density_pct))
    values = {name: np.zeros(shape) for name in PROPERTIES}
    everywhere = np.ones(shape, dtype=bool)
    _apply(values, everywhere, {"soil": doc.get("soil", soil),
                                "relative_density_pct": doc.get("relative_density_pct", relative_density_pct)},
           soil_arr, idd_arr, "soil field file %s" % path)
    _apply(values, everywhere, {k: doc[k] for k in FILE_KEYS if k in doc}, soil_arr, idd_arr,
           "soil field file %s" % path)
    regions = doc.get("regions", [])
    if not isinstance(regions, list):
        raise ConfigError("soil field file %s: regions must be an array of tables ([[regions]])" % path)
    for k, region in enumerate(regions):
        where = "soil field file %s, region %d" % (path, k + 1)
        if not isinstance(region, dict):
            raise ConfigError("%s: must be a table" % where)
        shape_name = region.get("shape")
        allowed = ("shape",) + (_REGION_GEOMETRY.get(shape_name, ()) if isinstance(shape_name, str) else ()) + _SETS
        for key in region:
            if key not in allowed:
                near = closest(key, allowed)
                raise ConfigError("%s: unknown key %r%s" % (where, key, " (did you mean %r?)" % near if near else ""))
        mask = _region_mask(region, n, e, where)
        if not any(key in region for key in _SETS):
            raise ConfigError("%s: sets nothing (give soil, relative_density_pct or a property key: %s)"
                              % (where, ", ".join(FILE_KEYS)))
        _apply(values, mask, region, soil_arr, idd_arr, where)
    return SoilFields(values, cell_m, idd_arr, soil_arr, "soil field file %s" % path)


def _shape_text(shape):
    return "x".join(str(s) for s in shape) if shape else "a single number (shape ())"


def load_npy(path, key, shape):
    """A property array [SI units] from a user's .npy (``key`` one of FILE_KEYS; degrees converted)."""
    where = "soil field file %s" % path
    if os.path.isdir(path):
        raise ConfigError("%s is a directory, not a file" % where)
    if not os.path.isfile(path):
        raise ConfigError("%s not found" % where)
    reason = not_npy_reason(path)
    if reason:
        raise ConfigError("%s: %s" % (where, reason))
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise ConfigError("%s: not a readable .npy array (%s)" % (where, str(exc).splitlines()[0] if str(exc)
                                                                  else type(exc).__name__))
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf":
        raise ConfigError("%s: a .npy of numbers is needed, got dtype %s" % (where, getattr(arr, "dtype", "?")))
    if arr.shape != tuple(shape):
        raise ConfigError("%s: %s needs shape %dx%d (north x east cells), got %s"
                          % (where, key, shape[0], shape[1], _shape_text(arr.shape)))
    arr = arr.astype(float)
    return np.radians(arr) if key.endswith("_deg") else arr


def load_npz(path, shape, soil, relative_density_pct):
    """Property arrays [SI units] from a user's .npz (module docstring): each array named by a key of
    FILE_KEYS replaces that property of the preset ``soil`` at ``relative_density_pct``."""
    where = "soil field file %s" % path
    if os.path.isdir(path):
        raise ConfigError("%s is a directory, not a file" % where)
    if not os.path.isfile(path):
        raise ConfigError("%s not found" % where)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:
        raise ConfigError("%s: not a readable .npz archive (%s)" % (where, str(exc).splitlines()[0] if str(exc)
                                                                    else type(exc).__name__))
    for name in arrays:
        if name not in FILE_KEYS:
            near = closest(name, FILE_KEYS)
            raise ConfigError("%s: unknown array %r (known: %s)%s" % (where, name, ", ".join(FILE_KEYS),
                                                                     " (did you mean %r?)" % near if near else ""))
    if not arrays:
        raise ConfigError("%s: no property arrays (known names: %s)" % (where, ", ".join(FILE_KEYS)))
    idd = np.full(shape, float(relative_density_pct))
    values = {name: np.array(v, dtype=float) for name, v in preset_properties(soil, idd).items()}
    for key, name in zip(FILE_KEYS, PROPERTIES):
        if key not in arrays:
            continue
        arr = arrays[key]
        if arr.dtype.kind not in "iuf":
            raise ConfigError("%s: %s must hold numbers, got dtype %s" % (where, key, arr.dtype))
        if arr.shape != tuple(shape):
            raise ConfigError("%s: %s needs shape %dx%d (north x east cells), got %s"
                              % (where, key, shape[0], shape[1], _shape_text(arr.shape)))
        arr = arr.astype(float)
        values[name] = np.radians(arr) if key.endswith("_deg") else arr
    return values


def build_fields(config=None, rng=None):
    """SoilFields from the settings (:data:`DEFAULTS`): the user's ``file``, or the regions file for field
    "file", or the I_d field and the soil preset; then every ``npy_files`` entry replaces its property.
    ``rng``: a numpy Generator (``harness.sim.rng.RunRandom(seed).stream("soil_fields")``), needed for
    patches and random."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "soil world")
    shape = _grid_shape(cfg)
    user = cfg["file"]
    regions = user if user is not None and user.lower().endswith(".toml") else cfg["regions_file"]
    if user is not None and user.lower().endswith(".npz"):
        values, idd, soil = load_npz(user, shape, cfg["soil"], cfg["relative_density_pct"]), None, None
    elif regions is not None and (user is not None or cfg["field"] == "file"):
        fields = load_regions(regions, shape, cfg["cell_m"], cfg["soil"], cfg["relative_density_pct"])
        values, idd, soil = fields.values, fields.relative_density_pct, fields.soil
    elif cfg["field"] == "file":
        if not any(cfg["npy_files"].values()):
            raise ConfigError("soil world setting field = 'file' needs file, regions_file or npy_files")
        idd = np.full(shape, float(cfg["relative_density_pct"]))
        values, soil = preset_properties(cfg["soil"], idd), np.full(shape, cfg["soil"], dtype=object)
    else:
        if cfg["field"] in ("patches", "random") and rng is None:
            raise ValueError("soil world field %r needs a random stream" % cfg["field"])
        idd = relative_density_field(cfg, rng)
        values, soil = preset_properties(cfg["soil"], idd), np.full(shape, cfg["soil"], dtype=object)
    values = {name: np.array(values[name], dtype=float) for name in PROPERTIES}
    replaced = False
    for key, name in zip(FILE_KEYS, PROPERTIES):
        path = cfg["npy_files"][key]
        if path is not None:
            values[name] = load_npy(path, key, shape)
            replaced = True
    files = [p for p in [user, cfg["regions_file"] if user is None else None] + list(cfg["npy_files"].values()) if p]
    where = "soil field file %s" % ", ".join(files) if files and (user is not None or cfg["field"] == "file") \
        else "soil fields"
    return SoilFields(values, cfg["cell_m"], None if replaced else idd, None if replaced else soil, where)
