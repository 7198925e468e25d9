"""The Sandbox experiment file: the INI of Cook thesis fig. 5.3, read into a checked experiment.

Format (``docs/formats/sandbox-ini.md``): optional top-level keys (before any section)
``output_directory_prefix`` and ``chrono_data_path`` (the folder the heightmap's ``filename`` is relative
to, itself relative to the INI's folder; default the INI's folder); sections:

- ``[vehicle]``: ``tracks`` (must be true: only tracked vehicles), ``model`` (``Dagu5``), the start pose
  ``x``, ``y``, ``z`` (m; Chrono's Y-up axes of the thesis: x north and z east from the terrain's centre, y up
  -- ignored, the robot settles on the soil), ``r``, ``p`` (deg, ignored: the contact sets roll and pitch),
  ``h`` (heading, deg from north towards east), and optionally the geometry of
  :data:`harness.sim.sandbox.tracked_robot.VEHICLE_DEFAULTS` (``mass_kg``, ``track_length_m``, ...).
- ``[map]``: ``filename`` (grayscale PNG heightmap, tileable), ``scale`` (m: the height of white),
  ``xy_scale`` (m per pixel: one cell per pixel as SCM's one vertex per pixel), ``model`` (``scm``; the
  thesis's ``particle`` is not modelled), ``particle_radius`` (accepted, unused by ``scm``).
- ``[raygrid]``: ``resolution`` (accepted; the heightmap is read from the cells, no ray casting).
- ``[soil]`` (optional): ``k_c``, ``k_phi``, ``n``, ``c``, ``phi``, ``K``, ``repose`` (deg), with the
  literature's names and :data:`harness.sim.sandbox.terramechanics.SANDY_SOIL` as defaults.
- ``[experiment]``: ``name``, ``algorithm`` (``datagen``: Alg. 5), ``frame_dt`` (s), ``substeps``,
  ``erosion_iterations``; a substep (``frame_dt / substeps``) of at most 20 ms
  (:data:`harness.sim.sandbox.tracked_robot.MAX_SUBSTEP_US`: the robot's integration is not stable beyond).

Every problem (a missing file, an unknown section or key, a value of the wrong kind, a missing or unreadable
heightmap) raises :class:`onboard.core.settings.ConfigError` with one line naming the file and the key.
"""
import configparser
import math
import os

import numpy as np

from harness.sim.sandbox import terramechanics as tm
from harness.sim.sandbox.terrain import MIN_CELLS, TileTerrain
from harness.sim.sandbox.tracked_robot import MAX_SUBSTEP_US, VEHICLE_DEFAULTS, VEHICLE_SETTING_RANGES
from harness.sim.voxel_terrain import load_heights
from onboard.core.settings import MAX_MAGNITUDE, ConfigError, checked
from onboard.core.units import is_whole_us

TOP = "__top__"
QUANT = 1.0e-4                        # heightmap intensity resolution through the voxel loader
SCHEMA = {
    TOP: {"output_directory_prefix": "text", "chrono_data_path": "text"},
    "vehicle": dict({"tracks": "bool", "model": "text", "x": "number", "y": "number", "z": "number",
                     "r": "number", "p": "number", "h": "number"},
                    **{k: {"contact_points": "int", "track_resistance_coeff": "non_negative"}.get(k, "positive")
                       for k in VEHICLE_DEFAULTS}),
    "map": {"filename": "text", "scale": "positive", "xy_scale": "positive", "model": "text",
            "particle_radius": "positive"},
    "raygrid": {"resolution": "positive"},
    "soil": {"k_c": "non_negative", "k_phi": "non_negative", "n": "positive", "c": "non_negative",
             "phi": "positive", "K": "positive", "repose": "positive"},
    "experiment": {"name": "text", "algorithm": "text", "frame_dt": "positive", "substeps": "int",
                   "erosion_iterations": "int"},
}
# upper bounds (far above the project's INIs: scale 0.06-0.10 m, erosion_iterations 2); beyond them the physics
# overflows (a white pixel 1e300 m high) or a frame never ends (1e8 erosion passes per frame)
UPPER = {("map", "scale"): 10.0, ("experiment", "erosion_iterations"): 100}
REQUIRED = {"vehicle": ("x", "z", "h"), "map": ("filename", "scale", "xy_scale"), "experiment": ("algorithm",)}
MODELS = ("Dagu5",)
ALGORITHMS = ("datagen",)


class Experiment:
    """A checked experiment: ``heights_m`` (rows x cols, m), ``cell_m``, ``start`` (north, east, yaw: m, m,
    rad, inside the tile), ``height_scale_m`` (m of a white pixel), ``vehicle`` and ``soil`` settings,
    ``frame_dt_us``, ``substeps``,
    ``erosion_iterations``, ``name``, ``source`` (the INI's path)."""

    def __init__(self, heights_m, cell_m, start, vehicle, soil, frame_dt_us=10000, substeps=10,
                 erosion_iterations=2, name="sandbox", source=None, heightmap=None, height_scale_m=1.0):
        self.heights_m = heights_m
        self.height_scale_m = float(height_scale_m)
        self.cell_m = float(cell_m)
        self.start = start
        self.vehicle = vehicle
        self.soil = soil
        self.frame_dt_us = int(frame_dt_us)
        self.substeps = int(substeps)
        self.erosion_iterations = int(erosion_iterations)
        self.name = name
        self.source = source
        self.heightmap = heightmap

    def terrain(self, heights_m=None, contact_test="mesh"):
        """A fresh :class:`TileTerrain` of this experiment's heights (or of ``heights_m``); ``contact_test``
        "mesh" (every cell tested each substep, as the thesis's SCM) or "patch" (:mod:`terrain`)."""
        return TileTerrain(self.heights_m if heights_m is None else heights_m, self.cell_m,
                           repose_deg=self.soil["repose_deg"], erosion_iterations=self.erosion_iterations,
                           contact_test=contact_test)


def _value(path, section, key, raw, kind):
    where = "%s: [%s] %s" % (path, section, key) if section != TOP else "%s: %s" % (path, key)
    raw = raw.strip()
    if kind == "text":
        if not raw:
            raise ConfigError("%s is empty" % where)
        return raw
    if kind == "bool":
        low = raw.lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise ConfigError("%s must be true or false, got %r" % (where, raw))
    if kind == "int":
        try:
            v = int(raw)
        except ValueError:
            raise ConfigError("%s must be a whole number, got %r" % (where, raw))
        least = 0 if key == "erosion_iterations" else 1
        if v < least:
            raise ConfigError("%s must be a whole number >= %d, got %r" % (where, least, raw))
        if (section, key) in UPPER and v > UPPER[section, key]:
            raise ConfigError("%s must be a whole number <= %d, got %r" % (where, UPPER[section, key], raw))
        return v
    try:
        v = float(raw)
    except ValueError:
        raise ConfigError("%s must be a number, got %r" % (where, raw))
    if not math.isfinite(v):
        raise ConfigError("%s must be finite, got %r" % (where, raw))
    if kind == "positive" and v <= 0.0:
        raise ConfigError("%s must be > 0, got %r" % (where, raw))
    if kind == "non_negative" and v < 0.0:
        raise ConfigError("%s must be >= 0, got %r" % (where, raw))
    if (section, key) in UPPER and v > UPPER[section, key]:
        raise ConfigError("%s must be <= %g, got %r" % (where, UPPER[section, key], raw))
    if abs(v) > MAX_MAGNITUDE:      # the rule of every setting (settings.checked, which sees [vehicle] only)
        raise ConfigError("%s is %g: no setting takes a magnitude above %g (a unit or typing error?)"
                          % (where, v, MAX_MAGNITUDE))
    return v


def _parse_error(exc, lines):
    """What a configparser error says, with the line number of the user's file (``lines``: the parser reads one
    line ``[__top__]`` put before it, so its own numbers are one too high) and no internal section name."""
    def where(section):
        return "at the top level" if section == TOP else "in [%s]" % section
    if isinstance(exc, configparser.DuplicateOptionError):
        return "line %d: key %r appears twice %s" % (exc.lineno - 1, exc.option, where(exc.section))
    if isinstance(exc, configparser.DuplicateSectionError):
        if exc.section == TOP:
            return "line %d: section [%s] is reserved" % (exc.lineno - 1, TOP)
        return "line %d: section [%s] appears twice" % (exc.lineno - 1, exc.section)
    if isinstance(exc, configparser.ParsingError) and exc.errors:
        lineno = exc.errors[0][0] - 1
        line = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        return "line %d: cannot read %r (a [section] header or key = value is needed)" % (lineno, line)
    return str(exc).splitlines()[0]


def read_ini(path):
    """``{section: {key: value}}`` of an experiment INI, every key known and of its kind (module docstring)."""
    if not isinstance(path, str) or not path:
        raise ConfigError("sandbox experiment file must be a path, got %r" % (path,))
    if not os.path.isfile(path):
        raise ConfigError("sandbox experiment file %s not found" % path)
    try:
        # utf-8-sig: a byte-order mark (as Windows editors write) is not part of the first line's key or section
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("sandbox experiment file %s: unreadable (%s)" % (path, exc))
    parser = configparser.ConfigParser(interpolation=None, strict=True, default_section="\x00none")
    parser.optionxform = str              # keys are case-sensitive (k_c, K)
    try:
        parser.read_string("[%s]\n%s" % (TOP, text), source=path)
    except configparser.Error as exc:
        raise ConfigError("sandbox experiment file %s: not a valid INI (%s)"
                          % (path, _parse_error(exc, text.splitlines())))
    out = {}
    for section in parser.sections():
        if section not in SCHEMA:
            raise ConfigError("%s: unknown section [%s] (known: %s)" % (
                path, section, ", ".join("[%s]" % s for s in SCHEMA if s != TOP)))
        known = SCHEMA[section]
        values = {}
        for key, raw in parser.items(section):
            if key not in known:
                raise ConfigError("%s: unknown key %r in %s (known: %s)" % (
                    path, key, "[%s]" % section if section != TOP else "the top level", ", ".join(sorted(known))))
            values[key] = _value(path, section, key, raw, known[key])
        out[section] = values
    for section, keys in REQUIRED.items():
        for key in keys:
            if key not in out.get(section, {}):
                raise ConfigError("%s: [%s] %s is missing" % (path, section, key))
    return out


def check_fits(shape, cell_m, vehicle, where):
    """ConfigError unless a heightmap of ``shape`` cells of ``cell_m`` is large enough for the robot: it and
    its tracks' patches must not meet their own image across the wrapped borders."""
    rows, cols = shape
    reach = max(vehicle["track_length_m"], vehicle["track_gauge_m"] + vehicle["track_width_m"]) + 4.0 * cell_m
    if min(rows, cols) < MIN_CELLS or min(rows, cols) * cell_m < 2.0 * reach:
        raise ConfigError("%s a %dx%d heightmap at xy_scale %g m is %.2f x %.2f m: too small for the robot "
                          "(%.2f m and %d cells at least per side)"
                          % (where, rows, cols, cell_m, rows * cell_m, cols * cell_m, 2 * reach, MIN_CELLS))


def load_experiment(path):
    """The :class:`Experiment` of an INI file (module docstring); ConfigError (one line) on any problem."""
    ini = read_ini(path)
    veh, mp, exp = ini["vehicle"], ini["map"], ini["experiment"]
    if not veh.get("tracks", True):
        raise ConfigError("%s: [vehicle] tracks = false: only tracked vehicles are modelled" % path)
    if veh.get("model", "Dagu5") not in MODELS:
        raise ConfigError("%s: [vehicle] model %r is not known (known: %s)" % (path, veh["model"], ", ".join(MODELS)))
    if mp.get("model", "scm").lower() != "scm":
        raise ConfigError("%s: [map] model %r: only the SCM-like heightmap terrain is modelled (model = scm)"
                          % (path, mp["model"]))
    if exp["algorithm"] not in ALGORITHMS:
        raise ConfigError("%s: [experiment] algorithm %r is not known (known: %s)"
                          % (path, exp["algorithm"], ", ".join(ALGORITHMS)))
    base = os.path.dirname(os.path.abspath(path))
    data = ini.get(TOP, {}).get("chrono_data_path")
    if data is not None:
        base = os.path.join(base, data)
    image = os.path.join(base, mp["filename"])
    if os.path.splitext(image)[1].lower() != ".png":
        raise ConfigError("%s: [map] filename %s: a grayscale PNG heightmap is needed" % (path, mp["filename"]))
    try:
        units = load_heights(image, height_scale=1.0 / QUANT)
    except ConfigError as exc:
        raise ConfigError("%s: [map] filename: %s" % (path, exc))
    if min(units.shape) < MIN_CELLS:
        raise ConfigError("%s: [map] filename %s is %dx%d pixels; at least %d per side"
                          % (path, mp["filename"], units.shape[0], units.shape[1], MIN_CELLS))
    # image row 0 is the top (north) edge: flip so that row i is i cells north of the south-west corner
    heights = np.flipud(units.astype(np.float64) * QUANT) * mp["scale"]
    vehicle = {k: v for k, v in veh.items() if k in VEHICLE_DEFAULTS}
    vehicle = checked(VEHICLE_DEFAULTS, VEHICLE_SETTING_RANGES, vehicle, "%s: [vehicle]" % path)
    soil = dict(tm.SANDY_SOIL)
    names = {"k_c": "k_c", "k_phi": "k_phi", "n": "n", "c": "c_pa", "phi": "phi_deg", "K": "K_m",
             "repose": "repose_deg"}
    for key, value in ini.get("soil", {}).items():
        soil[names[key]] = value
    if soil["k_c"] + soil["k_phi"] <= 0.0:
        raise ConfigError("%s: [soil] k_c and k_phi are both 0 (the soil must bear the robot)" % path)
    if not 0.0 < soil["phi_deg"] < 90.0 or not 0.0 < soil["repose_deg"] < 90.0:
        raise ConfigError("%s: [soil] phi and repose must be angles in (0, 90) deg" % path)
    cell = mp["xy_scale"]
    rows, cols = heights.shape
    frame_dt_us = int(round(exp.get("frame_dt", 0.01) * 1e6))
    if not is_whole_us(exp.get("frame_dt", 0.01)):
        raise ConfigError("%s: [experiment] frame_dt = %r s is not a whole number of microseconds"
                          % (path, exp["frame_dt"]))
    substeps = exp.get("substeps", 10)
    if frame_dt_us < substeps or frame_dt_us % substeps:
        raise ConfigError("%s: [experiment] frame_dt (%d us) must be a whole multiple of substeps (%d) in us"
                          % (path, frame_dt_us, substeps))
    if frame_dt_us > MAX_SUBSTEP_US * substeps:
        raise ConfigError("%s: [experiment] frame_dt / substeps is %d us / %d = %g ms per substep: at most %g ms (the "
                          "robot's integration is not stable at longer substeps; raise substeps)"
                          % (path, frame_dt_us, substeps, frame_dt_us / substeps / 1000.0, MAX_SUBSTEP_US / 1000.0))
    check_fits(heights.shape, cell, vehicle, "%s: [map]" % path)
    if vehicle["track_width_m"] < cell:
        raise ConfigError("%s: [map] xy_scale %g m is coarser than the track width %g m" % (
            path, cell, vehicle["track_width_m"]))
    north = rows * cell / 2.0 + veh["x"]
    east = cols * cell / 2.0 + veh["z"]
    start = (north % (rows * cell), east % (cols * cell), math.radians(veh["h"]))
    return Experiment(heights, cell, start, vehicle, soil, frame_dt_us, substeps, exp.get("erosion_iterations", 2),
                      exp.get("name", "sandbox"), path, image, mp["scale"])
