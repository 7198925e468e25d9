"""MCAP log of every sample and command, JSON-encoded with a JSON schema per topic (CPython only).

Used by the harness reports and by boards that run CPython (Raspberry Pi) alike.

Foxglove opens these files directly (message encoding ``json``, schema encoding
``jsonschema``). Log time is the simulated (or board) time in nanoseconds.

Messages go out in zstd-compressed chunks of ``CHUNK_BYTES`` (uncompressed), each with its CRC:
a log cut short by a crash keeps every whole chunk before the cut (at most the last ``CHUNK_BYTES`` of
messages are lost, plus the ``batch_records`` messages :meth:`McapLog.log` may hold; ``harness replay``
replays such a prefix). Each finished chunk is handed to the OS as one write; the log never calls fsync,
so after a power loss what survives is what the OS had put on the storage by then.

Recording cost: :meth:`McapLog.log` only holds the message; every ``batch_records`` messages are
encoded together (:func:`encode_message`: a fields getter per sample class and the C JSON encoder,
the same bytes as ``json.dumps`` of ``as_dict()``); a recording Node has them written between its
ticks (:meth:`onboard.runtime.node.Node.idle`). The encoding still costs ~40 % of a ground robot
tick on CPython (the float-to-text conversion alone ~9 %), so ``McapLog(path, writer_process=True)``
moves the encoding, compression and writes to a separate process (:mod:`onboard.runtime.mcap_writer`):
the app's process then only marshals each batch into a pipe (``bench/replay.py``).

Foxglove views (``McapLog.log_pose``, ``log_transform``, ``log_frames``, ``log_scene``,
``log_waypoints``) write messages of Foxglove's well-known schemas (``foxglove.PoseInFrame``,
``foxglove.FrameTransform``, ``foxglove.SceneUpdate``; ``foxglove.Grid`` and ``foxglove.PointCloud`` through
``log_view``; schema encoding ``jsonschema``, message
encoding ``json``) next to our own topics, so that Foxglove's 3D panel draws them. By convention the
harness writes them under ``/viz/...``; our own topics (``/app/...`` included) are not touched.

Frames of the views (Foxglove's 3D panel is right-handed with z up):

- ``world`` (``WORLD_FRAME``): the display frame, ENU: x east, y north, z up. The root of the tree.
- ``ned`` (``NED_FRAME``): our navigation frame (north, east, down), child of ``world`` with the
  origins coinciding; the static transform ``world -> ned`` (``log_frames``) is the rotation by
  pi about (x + y) / sqrt(2) (quaternion x = y = sqrt(1/2), z = w = 0): it maps NED coordinates
  to ENU ones, (n, e, d) -> (e, n, -d). Poses and markers are written in ``ned`` untouched.
- ``base_link`` (``BODY_FRAME``): the robot's body frame (FRD: forward, right, down), child of
  ``ned``: translation ``pos_ned_m``, rotation the quaternion of ``R_body_to_ned``.

A ``foxglove.PoseInFrame`` in ``ned`` carries ``pos_ned_m`` and the quaternion of
``R_body_to_ned`` as they are (our ``(w, x, y, z)`` written as Foxglove's ``{x, y, z, w}``); Foxglove
draws a pose's arrow along its +x axis: the robot's forward direction. Timestamps are
``{sec, nsec}`` of the log time. A view with a non-finite number (an estimate gone NaN) is not
written: it is counted in ``McapLog.views_dropped``.
"""
import json
import marshal
import math
import os
import pickle
import struct
import subprocess
import sys
from operator import attrgetter, itemgetter

from mcap.writer import CompressionType, Writer

from onboard.core.rotations import quat_from_euler
from onboard.runtime import signal_guard

CHUNK_BYTES = 64 * 1024
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def code_version():
    """The checkout's commit (``git describe --always --dirty``), written with a recording; "" when the
    code does not run from a git checkout."""
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _json_type(value):
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, (list, tuple)):
        return {"type": "array", "items": _json_type(value[0]) if value else {}}
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: _json_type(v) for k, v in value.items()}}
    return {}


def _clean(value):
    """NaN/inf are not JSON: logged as null so the file stays valid."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------- Foxglove views
# The JSON schemas below are written here from the field layouts Foxglove documents for its message
# schemas (https://docs.foxglove.dev/docs/visualization/message-schemas/introduction; the layouts of
# the ``jsonschema/`` folder of the npm package @foxglove/schemas, foxglove_msgs 3.x: FrameTransform as
# consolidated in 2.0.0, SceneEntity and its primitives as introduced in 2.1.0). Schema names are
# Foxglove's exactly: its panels recognise a message by that name. Our schemas also list which fields
# we always write (``required``), a constraint of ours that Foxglove does not need.
WORLD_FRAME = "world"
NED_FRAME = "ned"
BODY_FRAME = "base_link"
_SQRT_HALF = math.sqrt(0.5)
# quaternion (w, x, y, z) of the rotation NED -> world (ENU): pi about (x + y) / sqrt(2)
QUAT_NED_TO_WORLD_WXYZ = (0.0, _SQRT_HALF, _SQRT_HALF, 0.0)

POSE_IN_FRAME = "foxglove.PoseInFrame"
FRAME_TRANSFORM = "foxglove.FrameTransform"
SCENE_UPDATE = "foxglove.SceneUpdate"
GRID = "foxglove.Grid"
POINT_CLOUD = "foxglove.PointCloud"
NUMERIC_TYPES = ("UNKNOWN", "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "FLOAT64")
LINE_STRIP, LINE_LOOP, LINE_LIST = 0, 1, 2          # foxglove.LineType
DELETE_MATCHING_ID, DELETE_ALL = 0, 1               # foxglove.SceneEntityDeletionType


def _obj(title, properties, required=None):
    schema = {"type": "object", "properties": properties}
    if title:
        schema["title"] = title
    if required:
        schema["required"] = list(required)
    return schema


def _num():
    return {"type": "number"}


def _array(items):
    return {"type": "array", "items": items}


def _time_schema(title="time"):
    sec = {"type": "integer"} if title == "duration" else {"type": "integer", "minimum": 0}
    return _obj(title, {"sec": sec, "nsec": {"type": "integer", "minimum": 0, "maximum": 999999999}},
                ("sec", "nsec"))


def _xyz_schema(title):
    return _obj(title, {"x": _num(), "y": _num(), "z": _num()}, ("x", "y", "z"))


def _quat_schema():
    return _obj("foxglove.Quaternion", {"x": _num(), "y": _num(), "z": _num(), "w": _num()}, ("x", "y", "z", "w"))


def _pose_schema():
    return _obj("foxglove.Pose", {"position": _xyz_schema("foxglove.Vector3"), "orientation": _quat_schema()},
                ("position", "orientation"))


def _color_schema():
    return _obj("foxglove.Color", {"r": _num(), "g": _num(), "b": _num(), "a": _num()}, ("r", "g", "b", "a"))


def _enum_schema(title, names):
    return {"title": title, "oneOf": [{"title": name, "const": i} for i, name in enumerate(names)]}


def _sized_primitive(title, extra=None):
    props = {"pose": _pose_schema(), "size": _xyz_schema("foxglove.Vector3")}
    props.update(extra or {})
    props["color"] = _color_schema()
    return _obj(title, props, ("pose", "size", "color"))


def _pose_in_frame_schema():
    """foxglove.PoseInFrame: timestamp, frame_id, pose {position {x, y, z}, orientation {x, y, z, w}}."""
    return _obj(POSE_IN_FRAME, {"timestamp": _time_schema(), "frame_id": {"type": "string"}, "pose": _pose_schema()},
                ("timestamp", "frame_id", "pose"))


def _frame_transform_schema():
    """foxglove.FrameTransform: timestamp, parent_frame_id, child_frame_id, translation, rotation."""
    return _obj(FRAME_TRANSFORM, {"timestamp": _time_schema(), "parent_frame_id": {"type": "string"},
                                  "child_frame_id": {"type": "string"},
                                  "translation": _xyz_schema("foxglove.Vector3"), "rotation": _quat_schema()},
                ("timestamp", "parent_frame_id", "child_frame_id", "translation", "rotation"))


def _scene_update_schema():
    """foxglove.SceneUpdate: deletions (SceneEntityDeletion[]) and entities (SceneEntity[]) with every
    primitive list of a SceneEntity (arrows, cubes, spheres, cylinders, lines, triangles, texts, models)."""
    point3 = _xyz_schema("foxglove.Point3")
    colors = _array(_color_schema())
    indices = _array({"type": "integer", "minimum": 0})
    arrow = _obj("foxglove.ArrowPrimitive", {"pose": _pose_schema(), "shaft_length": _num(), "shaft_diameter": _num(),
                                             "head_length": _num(), "head_diameter": _num(),
                                             "color": _color_schema()})
    line = _obj("foxglove.LinePrimitive", {
        "type": _enum_schema("foxglove.LineType", ("LINE_STRIP", "LINE_LOOP", "LINE_LIST")),
        "pose": _pose_schema(), "thickness": _num(), "scale_invariant": {"type": "boolean"},
        "points": _array(point3), "color": _color_schema(), "colors": colors, "indices": indices},
        ("type", "pose", "thickness", "scale_invariant", "points", "color", "colors", "indices"))
    triangles = _obj("foxglove.TriangleListPrimitive", {"pose": _pose_schema(), "points": _array(point3),
                                                        "color": _color_schema(), "colors": colors,
                                                        "indices": indices})
    text = _obj("foxglove.TextPrimitive", {"pose": _pose_schema(), "billboard": {"type": "boolean"},
                                           "font_size": _num(), "scale_invariant": {"type": "boolean"},
                                           "color": _color_schema(), "text": {"type": "string"}},
                ("pose", "billboard", "font_size", "scale_invariant", "color", "text"))
    model = _obj("foxglove.ModelPrimitive", {"pose": _pose_schema(), "scale": _xyz_schema("foxglove.Vector3"),
                                             "color": _color_schema(), "override_color": {"type": "boolean"},
                                             "url": {"type": "string"}, "media_type": {"type": "string"},
                                             "data": {"type": "string", "contentEncoding": "base64"}})
    key_value = _obj("foxglove.KeyValuePair", {"key": {"type": "string"}, "value": {"type": "string"}},
                     ("key", "value"))
    entity = _obj("foxglove.SceneEntity", {
        "timestamp": _time_schema(), "frame_id": {"type": "string"}, "id": {"type": "string"},
        "lifetime": _time_schema("duration"), "frame_locked": {"type": "boolean"}, "metadata": _array(key_value),
        "arrows": _array(arrow), "cubes": _array(_sized_primitive("foxglove.CubePrimitive")),
        "spheres": _array(_sized_primitive("foxglove.SpherePrimitive")),
        "cylinders": _array(_sized_primitive("foxglove.CylinderPrimitive",
                                             {"bottom_scale": _num(), "top_scale": _num()})),
        "lines": _array(line), "triangles": _array(triangles), "texts": _array(text), "models": _array(model)},
        ("timestamp", "frame_id", "id", "lifetime", "frame_locked", "metadata", "arrows", "cubes", "spheres",
         "cylinders", "lines", "triangles", "texts", "models"))
    deletion = _obj("foxglove.SceneEntityDeletion", {
        "timestamp": _time_schema(), "type": _enum_schema("foxglove.SceneEntityDeletionType", ("MATCHING_ID", "ALL")),
        "id": {"type": "string"}}, ("timestamp", "type", "id"))
    return _obj(SCENE_UPDATE, {"deletions": _array(deletion), "entities": _array(entity)}, ("deletions", "entities"))


def _grid_schema():
    """``foxglove.Grid`` (a 2-D grid of packed fields per cell; Foxglove's ``jsonschema/Grid.json``)."""
    field = _obj("foxglove.PackedElementField", {"name": {"type": "string"},
                                                 "offset": {"type": "integer", "minimum": 0},
                                                 "type": _enum_schema("foxglove.NumericType", NUMERIC_TYPES)},
                 ("name", "offset", "type"))
    return _obj(GRID, {
        "timestamp": _time_schema(), "frame_id": {"type": "string"}, "pose": _pose_schema(),
        "column_count": {"type": "integer", "minimum": 0},
        "cell_size": _obj("foxglove.Vector2", {"x": _num(), "y": _num()}, ("x", "y")),
        "row_stride": {"type": "integer", "minimum": 0}, "cell_stride": {"type": "integer", "minimum": 0},
        "fields": _array(field), "data": {"type": "string", "contentEncoding": "base64"}},
        ("timestamp", "frame_id", "pose", "column_count", "cell_size", "row_stride", "cell_stride", "fields",
         "data"))


def _point_cloud_schema():
    """``foxglove.PointCloud`` (points of packed fields, e.g. float32 x, y, z; Foxglove's
    ``jsonschema/PointCloud.json``): timestamp, frame_id, pose, point_stride, fields, data (base64)."""
    field = _obj("foxglove.PackedElementField", {"name": {"type": "string"},
                                                 "offset": {"type": "integer", "minimum": 0},
                                                 "type": _enum_schema("foxglove.NumericType", NUMERIC_TYPES)},
                 ("name", "offset", "type"))
    return _obj(POINT_CLOUD, {
        "timestamp": _time_schema(), "frame_id": {"type": "string"}, "pose": _pose_schema(),
        "point_stride": {"type": "integer", "minimum": 0}, "fields": _array(field),
        "data": {"type": "string", "contentEncoding": "base64"}},
        ("timestamp", "frame_id", "pose", "point_stride", "fields", "data"))


# schema name -> its JSON schema (what McapLog registers for a view)
FOXGLOVE_SCHEMAS = {POSE_IN_FRAME: _pose_in_frame_schema(), FRAME_TRANSFORM: _frame_transform_schema(),
                    SCENE_UPDATE: _scene_update_schema(), GRID: _grid_schema(), POINT_CLOUD: _point_cloud_schema()}


def fox_time(time_us):
    """Foxglove ``time`` {sec, nsec} of an integer time in microseconds (>= 0); ValueError otherwise."""
    try:
        t = int(time_us)
    except (TypeError, ValueError, OverflowError):
        raise ValueError("a Foxglove timestamp must be a number of microseconds, got %r" % (time_us,))
    if t < 0:
        raise ValueError("a Foxglove timestamp cannot be negative (time_us=%d)" % t)
    return {"sec": t // 1000000, "nsec": (t % 1000000) * 1000}


def fox_vector3(v):
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def fox_quaternion(quat_wxyz):
    """Our quaternion ``(w, x, y, z)`` as Foxglove's ``{x, y, z, w}``."""
    w, x, y, z = (float(c) for c in quat_wxyz)
    return {"x": x, "y": y, "z": z, "w": w}


def fox_pose(pos_m, quat_wxyz=(1.0, 0.0, 0.0, 0.0)):
    return {"position": fox_vector3(pos_m), "orientation": fox_quaternion(quat_wxyz)}


def fox_color(rgba):
    """``(r, g, b, a)``, each 0..1."""
    return {"r": float(rgba[0]), "g": float(rgba[1]), "b": float(rgba[2]), "a": float(rgba[3])}


def sphere(pos_m, diameter_m, rgba):
    """A foxglove.SpherePrimitive centred at ``pos_m``."""
    d = float(diameter_m)
    return {"pose": fox_pose(pos_m), "size": fox_vector3((d, d, d)), "color": fox_color(rgba)}


def cube(pos_m, size_m, rgba, quat_wxyz=(1.0, 0.0, 0.0, 0.0)):
    """A foxglove.CubePrimitive centred at ``pos_m``, ``size_m`` = (x, y, z) edge lengths."""
    return {"pose": fox_pose(pos_m, quat_wxyz), "size": fox_vector3(size_m), "color": fox_color(rgba)}


def line(points_m, thickness_m, rgba, line_type=LINE_STRIP):
    """A foxglove.LinePrimitive through ``points_m`` (a strip by default), thickness in metres."""
    return {"type": int(line_type), "pose": fox_pose((0.0, 0.0, 0.0)), "thickness": float(thickness_m),
            "scale_invariant": False, "points": [fox_vector3(p) for p in points_m], "color": fox_color(rgba),
            "colors": [], "indices": []}


def text(pos_m, label, font_size_m, rgba):
    """A foxglove.TextPrimitive at ``pos_m`` facing the camera."""
    return {"pose": fox_pose(pos_m), "billboard": True, "font_size": float(font_size_m), "scale_invariant": False,
            "color": fox_color(rgba), "text": str(label)}


def scene_entity(time_us, entity_id, frame_id=NED_FRAME, spheres=(), cubes=(), lines=(), texts=()):
    """A foxglove.SceneEntity (every primitive list present; lifetime 0: shown until replaced)."""
    return {"timestamp": fox_time(time_us), "frame_id": frame_id, "id": str(entity_id),
            "lifetime": {"sec": 0, "nsec": 0}, "frame_locked": False, "metadata": [], "arrows": [],
            "cubes": list(cubes), "spheres": list(spheres), "cylinders": [], "lines": list(lines), "triangles": [],
            "texts": list(texts), "models": []}


WAYPOINT_RGBA = (0.85, 0.15, 0.15, 0.9)      # not reached yet
REACHED_RGBA = (0.15, 0.7, 0.25, 0.9)
PATH_RGBA = (0.6, 0.6, 0.6, 0.8)
START_RGBA = (0.2, 0.4, 0.9, 0.9)


def waypoint_entities(time_us, waypoints_ne_m, start_ne_m=None, reached=0, frame_id=NED_FRAME):
    """SceneEntities of a way-point mission in ``ned``: the way-points as spheres (the first ``reached``
    green, the others red, numbered), the start as a cube, the planned path as a line strip."""
    pts = [(float(w[0]), float(w[1]), 0.0) for w in waypoints_ne_m]
    path = ([(float(start_ne_m[0]), float(start_ne_m[1]), 0.0)] if start_ne_m is not None else []) + pts
    spheres = [sphere(p, 0.2, REACHED_RGBA if i < reached else WAYPOINT_RGBA) for i, p in enumerate(pts)]
    # labels float above the ground: "up" is -z in ned
    texts = [text((p[0], p[1], -0.25), str(i + 1), 0.2, (1.0, 1.0, 1.0, 1.0)) for i, p in enumerate(pts)]
    entities = [scene_entity(time_us, "waypoints", frame_id, spheres=spheres, texts=texts),
                scene_entity(time_us, "planned_path", frame_id, lines=[line(path, 0.03, PATH_RGBA)])]
    if start_ne_m is not None:
        entities.append(scene_entity(time_us, "start", frame_id, cubes=[cube(path[0], (0.15, 0.15, 0.02), START_RGBA)]))
    return entities


def _all_finite(value):
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_all_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_all_finite(v) for v in value.values())
    return True


def _not_json(value):
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _json_encoder():
    """``encode(obj) -> str``: the C encoder built once (``json.JSONEncoder.encode`` builds it per call)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:          # pragma: no cover - a Python without the json C accelerator
        return json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    encode = make(None, _not_json, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    return lambda obj: "".join(encode(obj, 0))


# the JSON encoder of the log's messages: compact separators, ASCII, and no NaN/inf (json.dumps would
# write ``NaN``): a message with a non-finite number raises ValueError here and goes through _clean
_ENCODE = _json_encoder()
BATCH_RECORDS = 256          # messages held before they are encoded and written (McapLog.log)
SEQUENCE_MASK = 0xFFFFFFFF   # an MCAP message's sequence number is a uint32: it wraps around
MAX_LOG_TIME_NS = 0xFFFFFFFFFFFFFFFF   # an MCAP message's log time is a uint64 (ns)


def _log_time_ns(time_us):
    """The MCAP log time (ns) of a time in microseconds; ValueError for a time that is no number or lies
    outside MCAP's unsigned 64-bit nanoseconds (negative, or past ~584 years), which the MCAP writer would
    take half-written into its chunk and its statistics (a file that can no longer be finished)."""
    try:
        t_ns = int(time_us) * 1000
    except (TypeError, ValueError, OverflowError):
        raise ValueError("log time must be a number of microseconds, got %r" % (time_us,))
    if not 0 <= t_ns <= MAX_LOG_TIME_NS:
        raise ValueError("log time %r us is outside MCAP's unsigned 64-bit nanoseconds" % (time_us,))
    return t_ns


_first = itemgetter(0)
# types marshal writes back as themselves (what the writer process reads is what was logged); marshal writes
# any other object with the buffer protocol (a NumPy array or scalar such as numpy.float64, an array.array) as
# its bytes, and refuses the rest (ValueError)
_MARSHAL_SCALARS = frozenset((int, float, str, bool, type(None)))
# the sample types built of such values only (their constructors convert every field): not checked per message
_PLAIN_SAMPLE_MODULE = "onboard.core.samples"


def _marshals_as_itself(values):
    """True when every value of the iterable ``values`` (nested lists, tuples and dicts, their keys too) is an
    int, float, text, boolean or None, which marshal writes as themselves."""
    if _MARSHAL_SCALARS.issuperset(map(type, values)):
        return True
    for v in values:
        t = type(v)
        if t in _MARSHAL_SCALARS:
            continue
        if t is tuple or t is list:
            if not _marshals_as_itself(v):
                return False
        elif t is dict:
            if not (_marshals_as_itself(v) and _marshals_as_itself(v.values())):
                return False
        else:
            return False
    return True


FRAME_HEAD_FMT = "<I"        # frames to the writer process: length (bytes), then a kind byte and the body
FRAME_MARSHAL = b"M"
FRAME_PICKLE = b"P"


def _grow_pipe(stream, size_bytes=1 << 20):
    """A larger pipe buffer to the writer process (Linux ``F_SETPIPE_SZ``), so a burst of batches does
    not wait for it; a no-op where that cannot be set."""
    try:
        import fcntl
        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), size_bytes)
    except (ImportError, OSError, ValueError):
        pass


def _fields_getter(cls):
    """-> (field names, fn(msg) -> their values) of a sample class (``FIELDS``), or None."""
    names = getattr(cls, "FIELDS", None)
    if names is None or not hasattr(cls, "as_dict"):
        return None
    names = tuple(names)
    if len(names) == 1:
        get = attrgetter(names[0])
        return names, lambda msg: (get(msg),)
    return names, attrgetter(*names)


def encode_message(message, getters=None):
    """The JSON bytes ``McapLog`` writes for ``message`` (a sample with ``FIELDS``/``as_dict()`` or a
    dict): its fields in order, tuples as arrays, NaN/inf as null. ``getters``: a cache (class -> fields
    getter) to reuse between calls."""
    cls = type(message)
    got = getters.get(cls, 0) if getters is not None else 0
    if got == 0:
        got = _fields_getter(cls)
        if getters is not None:
            getters[cls] = got
    if got is not None:
        data = dict(zip(got[0], got[1](message)))
    elif hasattr(message, "as_dict"):
        data = message.as_dict()
    else:
        data = dict(message)
    try:
        text = _ENCODE(data)
    except ValueError:
        text = _ENCODE(_clean(data))
    except TypeError:
        # a field holding a nested sample (its FIELDS values are not all JSON): the sample's own as_dict()
        if got is None or not hasattr(message, "as_dict"):
            raise
        data = message.as_dict()
        try:
            text = _ENCODE(data)
        except ValueError:
            text = _ENCODE(_clean(data))
    return text.encode()


class McapLogError(OSError):
    """The MCAP writer process failed (its one line of error)."""


class McapLogClosedError(ValueError):
    """A message logged after :meth:`McapLog.close`."""


class McapLog:
    """MCAP writer of our topics (:meth:`log`) and Foxglove views (:meth:`log_view` ...).

    :meth:`log` is what a recording Node calls for every input, tick and output (``sink(topic,
    time_us, msg)``), so it only captures the message: up to ``batch_records`` messages are held and
    then encoded (JSON) and written together, in the order they came (also at :meth:`flush`,
    :meth:`close` and before any view). A logged message must not be changed afterwards (samples are
    immutable; a dict is copied, one level deep, when it is logged). A crash loses what is held
    (at most ``batch_records`` messages) plus the chunk in progress (``CHUNK_BYTES``).

    writer_process: encode and write in a separate process (``python -m onboard.runtime.mcap_writer``,
    CPython on a Linux host with a core to spare): each batch is marshalled (doubles as 8 bytes;
    pickled where marshal cannot) and sent to it through a pipe, so the recording process does no
    JSON, compression or file work. The file is the same. :meth:`close` waits for the process;
    ``writer_cpu_s`` is then the CPU time (s) it spent writing (its start-up, ~0.1 s, apart). A crash
    of the recording process loses what is held only: the writer process finishes the file with what
    it was sent.

    :meth:`write_held` (also :meth:`flush`) writes what is held: a recording Node calls it between
    ticks (:meth:`onboard.runtime.node.Node.idle`)."""

    def __init__(self, path, library="onboard-runtime", batch_records=BATCH_RECORDS, writer_process=False):
        if not isinstance(batch_records, int) or batch_records < 1:
            raise ValueError("batch_records must be a whole number >= 1, got %r" % (batch_records,))
        self.path = path
        self._channels = {}          # topic of our samples -> channel id
        self._view_channels = {}     # view topic -> channel id
        self._seq = {}
        self._done = 0               # messages written (or sent to the writer process)
        self.closed = False
        self._view_schemas = {}      # Foxglove schema name -> schema id
        self._view_topics = {}       # view topic -> its Foxglove schema name
        self.views_dropped = 0       # views not written: a non-finite number
        self.batch_records = batch_records
        self._held = []              # (topic, time_us, message) logged, not yet encoded
        self._getters = {}           # sample class -> (field names, values getter)
        self._proc = None
        self._proc_error = None      # the writer process's error line once it stopped
        self._log_topics = set()     # topics sent to the writer process
        self._classes = {}           # sample class -> (its number in the frames sent, values getter)
        self.writer_cpu_s = None
        if writer_process:
            self._fh = self._writer = None
            # the writer process runs in the checkout (cwd=REPO): a relative path is the caller's, made absolute
            # here; in a session of its own, so that Ctrl-C in a terminal (SIGINT to the foreground process group)
            # does not kill it in the middle of the file: it ends when its input does, as the recording process
            # closes the log or dies
            self._proc = subprocess.Popen([sys.executable, "-m", "onboard.runtime.mcap_writer", os.path.abspath(path),
                                           library],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          cwd=REPO, start_new_session=True)
            _grow_pipe(self._proc.stdin)
        else:
            self._fh = open(path, "wb")
            self._writer = Writer(self._fh, chunk_size=CHUNK_BYTES, compression=CompressionType.ZSTD)
            self._writer.start(profile="", library=library)

    def log(self, topic, time_us, message):
        """Log ``message`` (a sample with ``as_dict()`` or a dict) on ``topic`` at ``time_us`` (us).
        McapLogClosedError after :meth:`close`."""
        if self.closed:
            raise McapLogClosedError("MCAP log %s is closed: %s at %r us not logged" % (self.path, topic, time_us))
        if type(message) is dict:
            message = dict(message)
        held = self._held
        held.append((topic, time_us, message))
        if len(held) >= self.batch_records:
            self.write_held()

    @property
    def messages(self):
        """Messages logged (views included), held ones too."""
        return self._done + len(self._held)

    def write_held(self):
        """Encode and write the held messages (or send them to the writer process), in order. Ctrl-C or SIGTERM
        arriving meanwhile takes effect when the batch is written (:mod:`onboard.runtime.signal_guard`), so a
        run cut short keeps every message it counted."""
        if not self._held:
            return
        with signal_guard.deferred():
            self._write_held()

    def _write_held(self):
        """A message that cannot be written (not JSON, a time outside MCAP's unsigned 64-bit nanoseconds, a
        topic that carries a view) is not: the others of the batch are, then its error is raised. Sequence
        numbers (MCAP's uint32) wrap around after 2**32 messages of a topic."""
        held = self._held
        self._held = []
        if self._proc is not None:
            self._send(held)
            return
        channels = self._channels
        seq = self._seq
        getters = self._getters
        add = self._writer.add_message
        error = None
        written = 0
        try:
            for topic, time_us, message in held:
                try:
                    data = encode_message(message, getters)
                    t_ns = _log_time_ns(time_us)
                    channel = channels.get(topic)
                    if channel is None:
                        channel = self._register(topic, message)
                except (TypeError, ValueError) as exc:
                    error = error or exc
                    continue
                n = seq[topic]
                add(channel_id=channel, log_time=t_ns, publish_time=t_ns, sequence=n, data=data)
                seq[topic] = (n + 1) & SEQUENCE_MASK
                written += 1
        finally:
            self._done += written
        if error is not None:
            raise error

    def _send(self, items):
        """One frame of ``items`` to the writer process (:mod:`onboard.runtime.mcap_writer`): marshal
        (samples as their class's number and their field values) where every value allows it, else
        pickle (and the sample classes numbered for the frame forgotten: the writer process never got them).
        A message that can be neither (a lambda in a dict: not JSON either) is not sent: the others are, then
        TypeError is raised."""
        if self._proc_error is not None or self._proc.returncode is not None:
            raise McapLogError("MCAP writer process for %s stopped: %s" % (self.path, self._proc_error))
        error = None
        classes_sent = len(self._classes)
        try:
            body = FRAME_MARSHAL + marshal.dumps(self._plain(items))
        except (ValueError, TypeError):
            self._forget_classes(classes_sent)
            try:
                body = FRAME_PICKLE + pickle.dumps(items, pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                kept = []
                for item in items:
                    try:
                        pickle.dumps(item, pickle.HIGHEST_PROTOCOL)
                    except (pickle.PicklingError, TypeError, AttributeError) as exc:
                        error = error or TypeError("a message on %s cannot be sent to the writer process: %s"
                                                   % (item[0], exc))
                        continue
                    kept.append(item)
                items = kept
                body = FRAME_PICKLE + pickle.dumps(items, pickle.HIGHEST_PROTOCOL)
        # every topic sent: a view's is in _view_topics before it is sent (see _send_view)
        self._log_topics.update(map(_first, items))
        self._done += len(items)
        try:
            self._proc.stdin.write(struct.pack(FRAME_HEAD_FMT, len(body)) + body)
            self._proc.stdin.flush()
        except OSError:
            self._finish_process()
            raise McapLogError("MCAP writer process for %s stopped: %s" % (self.path, self._proc_error))
        if error is not None:
            raise error

    def _plain(self, items):
        """``items`` in the form :func:`onboard.runtime.mcap_writer.unmarshal` reads: a sample as
        ``(topic, time_us, class number, field values)`` after its class's ``(number, (name, fields))``;
        dicts and views as they are. TypeError for a message of another kind, or holding a value that marshal
        would not write as itself (:func:`_marshals_as_itself`; then the frame is pickled)."""
        classes = self._classes
        scalars_only = _MARSHAL_SCALARS.issuperset
        out = []
        append = out.append
        for item in items:
            msg = item[2] if len(item) == 3 else item[3]
            if type(msg) is dict:
                if not (scalars_only(map(type, msg.values())) and scalars_only(map(type, msg))
                        or _marshals_as_itself((msg,))):
                    raise TypeError("a message with a value marshal does not write as itself")
                append(item)
                continue
            known = classes.get(type(msg))
            if known is None:
                got = _fields_getter(type(msg))
                if got is None or len(item) != 3:
                    raise TypeError("not a sample: %s" % type(msg).__name__)
                known = classes[type(msg)] = (len(classes), got[1], type(msg).__module__ != _PLAIN_SAMPLE_MODULE)
                append((known[0], (type(msg).__name__, got[0])))
            values = known[1](msg)
            if known[2] and not _marshals_as_itself(values):
                raise TypeError("a %s with a value marshal does not write as itself" % type(msg).__name__)
            append((item[0], item[1], known[0], values))
        return out

    def _forget_classes(self, count):
        """Forget the sample classes numbered ``count`` and after (numbered for a frame that was not sent)."""
        for cls in [c for c, known in self._classes.items() if known[0] >= count]:
            del self._classes[cls]

    def _finish_process(self):
        """Close the pipe and wait for the writer process; its error line (or None) in ``_proc_error``."""
        proc = self._proc
        if proc.returncode is not None:
            return
        out, err = proc.communicate()          # closes the pipe: the end of the writer's input
        if proc.returncode != 0:
            lines = err.decode(errors="replace").strip().splitlines()
            self._proc_error = lines[-1] if lines else "exit %d" % proc.returncode
        else:
            try:
                self.writer_cpu_s = float(out.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                self.writer_cpu_s = None

    def _register(self, topic, message):
        """The channel of ``topic``, its JSON schema built from its first message; ValueError for a topic that
        carries a view, TypeError for a topic that is not text."""
        if not isinstance(topic, str):
            raise TypeError("an MCAP topic is text, got %r" % (topic,))
        if topic in self._view_topics:
            raise ValueError("topic %r already carries %s, not a sample" % (topic, self._view_topics[topic]))
        data = message.as_dict() if hasattr(message, "as_dict") else dict(message)
        schema_name = type(message).__name__ if hasattr(message, "as_dict") else topic.strip("/")
        schema = {"type": "object", "title": schema_name,
                  "properties": {k: _json_type(v) for k, v in data.items()}}
        schema_id = self._writer.register_schema(
            name=schema_name, encoding="jsonschema", data=json.dumps(schema).encode())
        channel = self._writer.register_channel(topic=topic, message_encoding="json", schema_id=schema_id)
        self._channels[topic] = channel
        self._seq[topic] = 0
        return channel

    def flush(self):
        """Write the held messages (the chunk in progress stays open)."""
        self.write_held()

    # ------------------------------------------------------------------ Foxglove views
    def log_view(self, topic, time_us, schema_name, message):
        """Write ``message`` (a dict of Foxglove schema ``schema_name``, one of ``FOXGLOVE_SCHEMAS``) on
        ``topic``. Returns False (and counts it in ``views_dropped``) for a message with a non-finite
        number; raises ValueError for a topic already used with another schema or a time outside MCAP's
        unsigned 64-bit nanoseconds, McapLogClosedError after :meth:`close`."""
        if self.closed:
            raise McapLogClosedError("MCAP log %s is closed: %s at %r us not logged" % (self.path, topic, time_us))
        schema = FOXGLOVE_SCHEMAS.get(schema_name)
        if schema is None:
            raise ValueError("no Foxglove view schema %r (known: %s)"
                             % (schema_name, ", ".join(sorted(FOXGLOVE_SCHEMAS))))
        t_ns = _log_time_ns(time_us)
        if not _all_finite(message):
            self.views_dropped += 1
            return False
        if self._proc is not None:
            return self._send_view(topic, time_us, schema_name, message)
        self.write_held()
        channel = self._view_channels.get(topic)
        if channel is None:
            if topic in self._channels:
                raise ValueError("topic %r already carries a sample, not %s" % (topic, schema_name))
            schema_id = self._view_schemas.get(schema_name)
            if schema_id is None:
                schema_id = self._writer.register_schema(name=schema_name, encoding="jsonschema",
                                                         data=json.dumps(schema).encode())
                self._view_schemas[schema_name] = schema_id
            channel = self._writer.register_channel(topic=topic, message_encoding="json", schema_id=schema_id)
            self._view_channels[topic] = channel
            self._seq[topic] = 0
            self._view_topics[topic] = schema_name
        elif self._view_topics[topic] != schema_name:
            raise ValueError("topic %r already carries %s, not %s" % (topic, self._view_topics[topic], schema_name))
        data = json.dumps(message, separators=(",", ":")).encode()
        with signal_guard.deferred():
            self._writer.add_message(channel_id=channel, log_time=t_ns, publish_time=t_ns,
                                     sequence=self._seq[topic], data=data)
            self._seq[topic] = (self._seq[topic] + 1) & SEQUENCE_MASK
            self._done += 1
        return True

    def _send_view(self, topic, time_us, schema_name, message):
        """A view for the writer process, held in order with the logged messages; the topic's schema
        checked here as :meth:`log_view` does."""
        known = self._view_topics.get(topic)
        if known is None:
            self.write_held()
            if topic in self._log_topics:
                raise ValueError("topic %r already carries a sample, not %s" % (topic, schema_name))
            self._view_topics[topic] = schema_name
        elif known != schema_name:
            raise ValueError("topic %r already carries %s, not %s" % (topic, known, schema_name))
        self._held.append((topic, time_us, schema_name, message))
        if len(self._held) >= self.batch_records:
            self.write_held()
        return True

    def log_pose(self, topic, time_us, pos_ned_m, quat_wxyz=None, yaw_rad=None, frame_id=NED_FRAME):
        """A ``foxglove.PoseInFrame``: position ``pos_ned_m`` (m) and attitude (the quaternion ``(w, x, y, z)``
        of ``R_body_to_ned``, or a planar ``yaw_rad``) in ``frame_id`` (``ned``) at ``time_us``."""
        if (quat_wxyz is None) == (yaw_rad is None):
            raise ValueError("log_pose takes one of quat_wxyz or yaw_rad")
        q = quat_wxyz if quat_wxyz is not None else quat_from_euler(0.0, 0.0, float(yaw_rad))
        return self.log_view(topic, time_us, POSE_IN_FRAME, {"timestamp": fox_time(time_us), "frame_id": frame_id,
                                                             "pose": fox_pose(pos_ned_m, q)})

    def log_transform(self, topic, time_us, parent_frame_id, child_frame_id, translation_m, quat_wxyz):
        """A ``foxglove.FrameTransform`` parent -> child: the child's origin ``translation_m`` (m) and the
        rotation ``quat_wxyz`` mapping child coordinates to parent ones, both in the parent frame."""
        return self.log_view(topic, time_us, FRAME_TRANSFORM, {
            "timestamp": fox_time(time_us), "parent_frame_id": parent_frame_id, "child_frame_id": child_frame_id,
            "translation": fox_vector3(translation_m), "rotation": fox_quaternion(quat_wxyz)})

    def log_body_transform(self, topic, time_us, pos_ned_m, quat_wxyz=None, yaw_rad=None, child_frame_id=BODY_FRAME):
        """The body frame in ``ned`` as a ``foxglove.FrameTransform`` ``ned -> child_frame_id`` (with the static
        ``world -> ned`` of :meth:`log_frames`, the world -> body transform)."""
        if (quat_wxyz is None) == (yaw_rad is None):
            raise ValueError("log_body_transform takes one of quat_wxyz or yaw_rad")
        q = quat_wxyz if quat_wxyz is not None else quat_from_euler(0.0, 0.0, float(yaw_rad))
        return self.log_transform(topic, time_us, NED_FRAME, child_frame_id, pos_ned_m, q)

    def log_frames(self, topic, time_us=0):
        """The static ``world`` (ENU, z up) -> ``ned`` ``foxglove.FrameTransform`` (see the module docstring)."""
        return self.log_transform(topic, time_us, WORLD_FRAME, NED_FRAME, (0.0, 0.0, 0.0), QUAT_NED_TO_WORLD_WXYZ)

    def log_scene(self, topic, time_us, entities, deletions=()):
        """A ``foxglove.SceneUpdate`` of ``entities`` (:func:`scene_entity`) and ``deletions``."""
        return self.log_view(topic, time_us, SCENE_UPDATE, {"deletions": list(deletions), "entities": list(entities)})

    def log_waypoints(self, topic, time_us, waypoints_ne_m, start_ne_m=None, reached=0):
        """The mission's markers (:func:`waypoint_entities`) as a ``foxglove.SceneUpdate``."""
        return self.log_scene(topic, time_us, waypoint_entities(time_us, waypoints_ne_m, start_ne_m, reached))

    def close(self):
        """Write what is held and finish the file (with a writer process: wait for it; McapLogError
        with its error line when it failed)."""
        if self.closed:
            return
        self.closed = True
        if self._proc is not None:
            try:
                self.write_held()
            finally:
                self._finish_process()     # also when the last batch could not be sent: the file is finished
            if self._proc_error is not None:
                raise McapLogError("MCAP writer process for %s failed: %s" % (self.path, self._proc_error))
            return
        with signal_guard.deferred():
            try:
                self._write_held()     # a message that cannot be encoded raises here, after the others
            finally:
                try:
                    self._writer.finish()
                finally:
                    self._fh.close()   # also when finishing failed (a write error): the file is not left open
