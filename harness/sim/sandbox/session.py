"""A data-generation session (Cook thesis 5.3): the Alg. 5 schedule driven through a :class:`SandboxWorld`,
logged frame by frame as table 5.1 plus terrain crops, saved as one compressed ``.npz``.

Keys, units and shapes: ``docs/formats/sandbox-data.md`` (``FORMAT_VERSION``). ``TABLE_KEYS`` are the
per-frame scalars (one value per frame); the crops are ``crop_before_m`` (the ``cells`` x ``cells`` heights
centred on the robot's cell at the frame's start, before the frame) and ``crop_dh_m`` (the same world window
after the frame minus before: the deformation, not the motion).
"""
import hashlib
import json
import zipfile

import numpy as np

from harness.data_files import NPZ_READ_ERRORS, not_npz_reason, npz_bytes, read_error_reason
from harness.report.run_report import write_whole
from harness.sim.sandbox import schedule

FORMAT_VERSION = 1
# per-frame scalars: name -> (dtype, unit, meaning)
TABLE = {
    "time_us": ("int64", "us", "simulated time at the frame's end"),
    "north_m": ("float64", "m", "x of table 5.1: position north at the frame's end, inside the tile (wrapped)"),
    "east_m": ("float64", "m", "y of table 5.1: position east at the frame's end, inside the tile (wrapped)"),
    "yaw_rad": ("float64", "rad", "heading at the frame's end, from north towards east, in (-pi, pi]"),
    "dx_body_m": ("float64", "m", "displacement over the frame, forward in the robot frame at the frame's start"),
    "dy_body_m": ("float64", "m", "displacement over the frame, to the right in the robot frame at the frame's start"),
    "dyaw_rad": ("float64", "rad", "dtheta of table 5.1: heading change over the frame (positive: turned right)"),
    "dnorth_m": ("float64", "m", "dx of table 5.1 as the thesis logs it: world-frame displacement north"),
    "deast_m": ("float64", "m", "dy of table 5.1 as the thesis logs it: world-frame displacement east"),
    "left_radps": ("float64", "rad/s", "v_left of table 5.1: left sprocket speed reached at the frame's end"),
    "right_radps": ("float64", "rad/s", "v_right of table 5.1: right sprocket speed reached at the frame's end"),
    "left_cmd_radps": ("float64", "rad/s", "left sprocket speed commanded (thesis 5.1.2 from l, w)"),
    "right_cmd_radps": ("float64", "rad/s", "right sprocket speed commanded"),
    "pitch_rad": ("float64", "rad", "phi of table 5.1: pitch at the frame's end, nose up positive"),
    "roll_rad": ("float64", "rad", "psi of table 5.1: roll at the frame's end, right side down positive"),
    "pitch_start_rad": ("float64", "rad", "pitch at the frame's start (the previous frame's pitch_rad)"),
    "roll_start_rad": ("float64", "rad", "roll at the frame's start"),
    "cmd_speed_mps": ("float64", "m/s", "l of table 5.1: desired linear speed"),
    "cmd_yaw_rate_radps": ("float64", "rad/s", "w of table 5.1: desired yaw rate, NED (positive turns right)"),
    "amplitude": ("float64", "1", "Alg. 5's r of the frame's segment"),
    "block": ("int8", "1", "Alg. 5 block 0..7"),
    "segment": ("int32", "1", "segment index (one amplitude per segment)"),
    "teleport": ("bool", "1", "the robot wrapped around a border in this frame (north_m/east_m jump)"),
    "slip_left": ("float64", "1", "left track slip 1 - v_ground / v_track at the frame's end"),
    "slip_right": ("float64", "1", "right track slip at the frame's end"),
    "sinkage_m": ("float64", "m", "mean plastic sinkage of the loaded contact points at the frame's end"),
}
TABLE_KEYS = tuple(TABLE)


def run_session(world, frames, segment_frames, speed_max_mps, yaw_rate_max_radps, uniform, amplitude=(0.25, 1.0),
                crop_cells=32, log=None, log_every=1, progress=None):
    """Drive ``world`` through Alg. 5 for ``frames`` frames; returns ``{key: array}`` (``TABLE_KEYS``, the
    crops when ``crop_cells`` > 0, ``terrain_start_m``, ``terrain_end_m``). ``log(time_us, record)`` gets
    every ``log_every``-th frame's scalars; ``progress(frame)`` every frame."""
    speed, yaw_rate, amp, block, segment = schedule.commands(frames, segment_frames, speed_max_mps,
                                                             yaw_rate_max_radps, uniform, amplitude)
    cols = {k: np.zeros(frames, dtype=TABLE[k][0]) for k in TABLE_KEYS}
    terrain = world.terrain
    robot = world.robot
    crops = crop_cells > 0
    if crops:
        before = np.zeros((frames, crop_cells, crop_cells), dtype=np.float32)
        dh = np.zeros((frames, crop_cells, crop_cells), dtype=np.float32)
        centre = np.zeros((frames, 2), dtype=np.int32)
    start = terrain.height_m.astype(np.float32)
    for i in range(frames):
        n0, e0 = robot.north_m, robot.east_m
        pitch0, roll0 = robot.pitch_rad, robot.roll_rad
        if crops:
            c0 = terrain.crop(n0, e0, crop_cells)
        rec = world.frame(speed[i], yaw_rate[i])
        if crops:
            before[i] = c0
            dh[i] = terrain.crop(n0, e0, crop_cells) - c0
            ci, cj = terrain.cell_of(n0, e0)
            centre[i] = (int(ci), int(cj))
        rec.update(time_us=world.now_us, north_m=robot.north_m, east_m=robot.east_m, yaw_rad=robot.yaw_rad,
                   pitch_start_rad=pitch0, roll_start_rad=roll0, cmd_speed_mps=speed[i],
                   cmd_yaw_rate_radps=yaw_rate[i], amplitude=amp[i], block=block[i], segment=segment[i])
        for k in TABLE_KEYS:
            cols[k][i] = rec[k]
        if log is not None and i % log_every == 0:
            log(world.now_us, {k: (bool(rec[k]) if k == "teleport" else rec[k]) for k in TABLE_KEYS})
        if progress is not None:
            progress(i + 1)
    out = dict(cols)
    if crops:
        out.update(crop_before_m=before, crop_dh_m=dh, crop_centre_cell=centre)
    out.update(terrain_start_m=start, terrain_end_m=terrain.height_m.astype(np.float32))
    return out


def meta(label, world, seed, source, extra=None):
    """The session's description stored in the .npz as ``meta_json``."""
    r = world.robot
    m = {"format": "sandbox-data", "format_version": FORMAT_VERSION, "terrain": label, "seed": int(seed),
         "source": source, "cell_m": world.terrain.cell_m, "rows": world.terrain.rows, "cols": world.terrain.cols,
         "frame_dt_us": world.frame_dt_us, "substeps": world.substeps, "vehicle": r.cfg, "soil": r.soil,
         "units": {k: TABLE[k][1] for k in TABLE_KEYS}}
    if extra:
        m.update(extra)
    return m


def save_npz(path, arrays, meta_dict):
    """Write the session (``np.savez_compressed``) with ``meta_json`` whole or not at all (a failure leaves
    the file that was there, never half of one: :func:`harness.report.run_report.write_whole`); returns the
    path."""
    data = dict(arrays)
    data["meta_json"] = np.array(json.dumps(meta_dict, sort_keys=True, allow_nan=False))
    write_whole(path, npz_bytes(data, compressed=True))
    return path


def digest(arrays):
    """sha256 (hex) of the arrays' bytes in key order (the same seed gives the same digest)."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(k.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


class SessionError(ValueError):
    """A session file cannot be used: one line naming the file and what is wrong with it."""


# arrays with one row per frame besides TABLE_KEYS (present when the session was logged with crops)
FRAME_ARRAYS = ("crop_before_m", "crop_dh_m", "crop_centre_cell")
GRID_ARRAYS = ("terrain_start_m", "terrain_end_m")


def inspect_npz(path):
    """``({key: (dtype, shape)}, meta)`` of a session file, read from the array headers only (cheap); raises
    :class:`SessionError` when it is not a readable session: not an .npz, ``meta_json`` missing or not a JSON
    object, a table array missing, not numeric or not one value per frame, no frames."""
    try:
        with zipfile.ZipFile(path) as zf:
            heads = {}
            for name in zf.namelist():
                key = name[:-4] if name.endswith(".npy") else name
                with zf.open(name) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _fortran, dtype = read(fh)
                claimed = dtype.itemsize
                for d in shape:
                    claimed *= d
                if claimed > zf.getinfo(name).file_size:      # a tiny file claiming a huge array (MemoryError)
                    raise SessionError("%s: array %s claims shape %s of %s, more than its %d bytes hold"
                                       % (path, key, shape, dtype, zf.getinfo(name).file_size))
                heads[key] = (dtype, shape)
            if "meta_json" not in heads:
                raise SessionError("%s: no meta_json (not a session file written by sandbox-datagen)" % path)
            if heads["meta_json"][0].kind not in "US" or heads["meta_json"][1] != ():
                raise SessionError("%s: meta_json must be one JSON string, got %s %s"
                                   % (path, heads["meta_json"][0], heads["meta_json"][1]))
            with np.load(path, allow_pickle=False) as z:
                text = str(z["meta_json"])
    except SessionError:
        raise
    except IsADirectoryError:
        raise SessionError("%s: is a folder, not a session file (.npz)" % path) from None
    except FileNotFoundError:
        raise SessionError("%s: no such session file" % path) from None
    except NPZ_READ_ERRORS as exc:
        raise SessionError("%s: not a readable session file: %s"
                           % (path, not_npz_reason(path) or read_error_reason(exc))) from None
    try:
        m = json.loads(text)
    except ValueError as exc:
        raise SessionError("%s: meta_json is not valid JSON (%s)" % (path, exc)) from None
    except RecursionError:
        raise SessionError("%s: meta_json is not valid JSON (nested too deeply)" % path) from None
    if not isinstance(m, dict):
        raise SessionError("%s: meta_json must be a JSON object, got %s" % (path, type(m).__name__))
    missing = [k for k in TABLE_KEYS if k not in heads]
    if missing:
        raise SessionError("%s: missing array%s %s" % (path, "s" if len(missing) > 1 else "", ", ".join(missing)))
    frames = heads["time_us"][1][0] if len(heads["time_us"][1]) == 1 else None
    for k in TABLE_KEYS + FRAME_ARRAYS + GRID_ARRAYS:
        if k not in heads:
            continue
        dtype, shape = heads[k]
        if dtype.kind not in "biuf":
            raise SessionError("%s: array %s is not numeric (dtype %s)" % (path, k, dtype))
        if k in GRID_ARRAYS:
            if len(shape) != 2 or 0 in shape:
                raise SessionError("%s: array %s must be a non-empty 2-D height grid, got shape %s" % (path, k, shape))
        elif k in TABLE or k in FRAME_ARRAYS:
            if frames is None:
                raise SessionError("%s: array time_us must hold one value per frame, got shape %s"
                                   % (path, heads["time_us"][1]))
            if (k in TABLE and len(shape) != 1) or not shape or shape[0] != frames:
                raise SessionError("%s: array %s has shape %s, expected %d frame%s like time_us"
                                   % (path, k, shape, frames, "" if frames == 1 else "s"))
    if frames == 0:
        raise SessionError("%s: no frames (the table arrays are empty)" % path)
    return heads, m


def load_npz(path):
    """``(arrays, meta)`` of a session file written by :func:`save_npz`. Raises :class:`SessionError` (one line
    naming the file and the problem) when the file is unreadable, an array is missing, not numeric, not one
    value per frame or holds NaN/inf, or the session has no frames."""
    heads, m = inspect_npz(path)
    arrays = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for k in z.files:
                if k == "meta_json":
                    continue
                try:
                    arrays[k] = z[k]
                except NPZ_READ_ERRORS as exc:
                    raise SessionError("%s: array %s is unreadable (%s)" % (path, k, read_error_reason(exc))) from None
    except SessionError:
        raise
    except NPZ_READ_ERRORS as exc:
        raise SessionError("%s: not a readable session file (.npz): %s" % (path, read_error_reason(exc))) from None
    for k in TABLE_KEYS + FRAME_ARRAYS + GRID_ARRAYS:
        a = arrays.get(k)
        if a is not None and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise SessionError("%s: array %s holds %d non-finite value%s (NaN or inf)"
                               % (path, k, bad, "" if bad == 1 else "s"))
    return arrays, m
