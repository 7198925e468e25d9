"""Foxglove views of the MCAP log (``onboard.runtime.mcap_log``): Foxglove's schema names and encodings,
messages that validate against their schemas, the NED -> world frame, and a waypoints run's ``/viz`` topics.

Messages are validated with the ``jsonschema`` package when it is installed, else with the small checker
below (type, properties, required, items, minimum/maximum, oneOf of consts: what our schemas use).
"""
import json
import math
import os

import pytest
from mcap.reader import make_reader

from harness.config import merge
from harness.report import RunReport
from harness.scenarios import load
from harness.scenarios.context import RunContext
from onboard.core.rotations import quat_from_euler, quat_rotate
from onboard.runtime import mcap_log
from onboard.runtime.mcap_log import (FRAME_TRANSFORM, POSE_IN_FRAME, QUAT_NED_TO_WORLD_WXYZ, SCENE_UPDATE, McapLog,
                                      scene_entity, sphere)

try:
    import jsonschema
except ImportError:          # not in every .venv: the checker below covers what our schemas use
    jsonschema = None

FOXGLOVE_NAMES = {POSE_IN_FRAME, FRAME_TRANSFORM, SCENE_UPDATE}
VIZ_TOPICS = {"/viz/tf_static": FRAME_TRANSFORM, "/viz/tf": FRAME_TRANSFORM, "/viz/truth/pose": POSE_IN_FRAME,
              "/viz/estimate/pose": POSE_IN_FRAME, "/viz/waypoints": SCENE_UPDATE}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _check(schema, value, path="$"):
    """Minimal JSON-schema check: raises AssertionError naming the path of the first violation."""
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if "const" in s and s["const"] == value and not isinstance(value, bool)]
        assert len(matches) == 1, "%s: %r matches none of %s" % (path, value, [s.get("const") for s in schema["oneOf"]])
        return
    kind = schema.get("type")
    if kind == "number":
        assert isinstance(value, (int, float)) and not isinstance(value, bool), "%s: %r is no number" % (path, value)
    elif kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), "%s: %r is no integer" % (path, value)
    elif kind is not None:
        assert isinstance(value, _TYPES[kind]), "%s: %r is no %s" % (path, value, kind)
    if "minimum" in schema:
        assert value >= schema["minimum"], "%s: %r < %r" % (path, value, schema["minimum"])
    if "maximum" in schema:
        assert value <= schema["maximum"], "%s: %r > %r" % (path, value, schema["maximum"])
    if kind == "object":
        for name in schema.get("required", ()):
            assert name in value, "%s: required field %r missing" % (path, name)
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                _check(sub, value[name], "%s.%s" % (path, name))
    if kind == "array":
        for i, item in enumerate(value):
            _check(schema["items"], item, "%s[%d]" % (path, i))


def _validate(schema, message):
    if jsonschema is not None:
        jsonschema.validate(message, schema)
    _check(schema, message)


def _read(path):
    """[(topic, schema name, schema encoding, message encoding, schema dict, log_time_ns, message dict)]"""
    out = []
    with open(path, "rb") as fh:
        for schema, channel, message in make_reader(fh).iter_messages():
            out.append((channel.topic, schema.name, schema.encoding, channel.message_encoding,
                        json.loads(schema.data), message.log_time, json.loads(message.data)))
    return out


def test_the_checker_catches_what_it_must():
    schema = mcap_log.FOXGLOVE_SCHEMAS[POSE_IN_FRAME]
    good = {"timestamp": {"sec": 1, "nsec": 5}, "frame_id": "ned",
            "pose": {"position": {"x": 1.0, "y": 2, "z": 0.0}, "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}}
    _check(schema, good)
    for bad in ({"frame_id": "ned", "pose": good["pose"]},                          # no timestamp
                dict(good, timestamp={"sec": 1, "nsec": 1000000000}),                # nsec out of range
                dict(good, frame_id=3),
                dict(good, pose={"position": {"x": "1", "y": 0.0, "z": 0.0},
                                 "orientation": good["pose"]["orientation"]})):
        with pytest.raises(AssertionError):
            _check(schema, bad)
    line = mcap_log.line([(0, 0, 0), (1, 0, 0)], 0.1, (1, 1, 1, 1))
    entity = mcap_log.FOXGLOVE_SCHEMAS[SCENE_UPDATE]["properties"]["entities"]["items"]
    _check(entity["properties"]["lines"]["items"], line)
    with pytest.raises(AssertionError):
        _check(entity["properties"]["lines"]["items"], dict(line, type=7))            # no such LineType


def test_views_have_foxglove_schemas_and_validate(tmp_path):
    path = str(tmp_path / "views.mcap")
    log = McapLog(path)
    q = quat_from_euler(0.1, -0.2, 2.5)
    assert log.log_frames("/viz/tf_static", 0)
    assert log.log_pose("/viz/pose", 1500000, (1.0, 2.0, -0.5), quat_wxyz=q)
    assert log.log_pose("/viz/pose", 1550000, (1.1, 2.0, 0.0), yaw_rad=-1.0)
    assert log.log_body_transform("/viz/tf", 1500000, (1.0, 2.0, 0.0), yaw_rad=0.3)
    assert log.log_waypoints("/viz/waypoints", 0, [[3.0, 0.0], [3.0, 2.5]], start_ne_m=[0.0, 0.0], reached=1)
    assert log.log_scene("/viz/markers", 2000000, [scene_entity(2000000, "ball", spheres=[sphere((1, 2, 0), 0.3,
                                                                                                   (1, 0, 0, 1))])],
                         deletions=[{"timestamp": {"sec": 1, "nsec": 0}, "type": mcap_log.DELETE_ALL, "id": ""}])
    log.log("/truth", 1500000, {"time_us": 1500000, "pos_ned_m": [1.0, 2.0, 0.0]})      # our own topic, untouched
    log.close()

    rows = _read(path)
    assert len(rows) == 7
    views = [r for r in rows if r[0] != "/truth"]
    for topic, name, schema_enc, msg_enc, schema, log_time_ns, msg in views:
        assert name in FOXGLOVE_NAMES and schema["title"] == name, topic
        assert schema_enc == "jsonschema" and msg_enc == "json"
        _validate(schema, msg)
        stamps = [msg["timestamp"]] if "timestamp" in msg else [e["timestamp"] for e in msg["entities"]]
        for stamp in stamps:
            assert stamp["sec"] * 10 ** 9 + stamp["nsec"] == log_time_ns
    truth = [r for r in rows if r[0] == "/truth"][0]
    assert truth[1] == "truth"                     # log() names its schemas as before

    by_topic = {}
    for r in views:
        by_topic.setdefault(r[0], []).append(r[6])
    pose = by_topic["/viz/pose"][0]["pose"]
    assert by_topic["/viz/pose"][0]["frame_id"] == "ned"
    assert [pose["orientation"][k] for k in "wxyz"] == pytest.approx(list(q))
    assert [pose["position"][k] for k in "xyz"] == [1.0, 2.0, -0.5]
    yaw_q = by_topic["/viz/pose"][1]["pose"]["orientation"]
    assert (yaw_q["w"], yaw_q["z"]) == pytest.approx((math.cos(-0.5), math.sin(-0.5)))
    static = by_topic["/viz/tf_static"][0]
    assert (static["parent_frame_id"], static["child_frame_id"]) == ("world", "ned")
    body = by_topic["/viz/tf"][0]
    assert (body["parent_frame_id"], body["child_frame_id"]) == ("ned", "base_link")
    scene = by_topic["/viz/waypoints"][0]
    ids = {e["id"]: e for e in scene["entities"]}
    assert set(ids) == {"waypoints", "planned_path", "start"}
    spheres = ids["waypoints"]["spheres"]
    assert [(s["pose"]["position"]["x"], s["pose"]["position"]["y"]) for s in spheres] == [(3.0, 0.0), (3.0, 2.5)]
    assert spheres[0]["color"] != spheres[1]["color"]                  # reached vs not yet
    assert len(ids["planned_path"]["lines"][0]["points"]) == 3        # start + 2 way-points


def test_ned_to_world_is_enu_with_z_up():
    """The static transform maps NED coordinates to the display frame's ENU ones: (n, e, d) -> (e, n, -d)."""
    for v_ned, v_world in (((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
                           ((0.0, 0.0, 1.0), (0.0, 0.0, -1.0)), ((2.0, -3.0, 0.5), (-3.0, 2.0, -0.5))):
        assert quat_rotate(QUAT_NED_TO_WORLD_WXYZ, v_ned) == pytest.approx(v_world, abs=1e-12)


def test_bad_views_are_refused_or_counted(tmp_path):
    log = McapLog(str(tmp_path / "bad.mcap"))
    with pytest.raises(ValueError):
        log.log_pose("/viz/p", 0, (0.0, 0.0, 0.0))                                # neither quaternion nor yaw
    with pytest.raises(ValueError):
        log.log_pose("/viz/p", 0, (0.0, 0.0, 0.0), quat_wxyz=(1, 0, 0, 0), yaw_rad=0.0)
    with pytest.raises(ValueError):
        log.log_pose("/viz/p", -1, (0.0, 0.0, 0.0), yaw_rad=0.0)                 # negative time
    with pytest.raises(ValueError):
        log.log_view("/viz/p", 0, "foxglove.Nonsense", {})
    assert not log.log_pose("/viz/p", 0, (float("nan"), 0.0, 0.0), yaw_rad=0.0)  # an estimate gone NaN
    assert log.views_dropped == 1 and log.messages == 0
    assert log.log_pose("/viz/p", 0, (0.0, 0.0, 0.0), yaw_rad=0.0)
    with pytest.raises(ValueError):
        log.log_frames("/viz/p", 0)                                               # a topic keeps its schema
    log.log("/sample", 0, {"a": 1})
    with pytest.raises(ValueError):
        log.log_pose("/sample", 0, (0.0, 0.0, 0.0), yaw_rad=0.0)
    log.close()


def test_a_waypoints_run_writes_the_viz_topics_and_keeps_its_metrics(tmp_path):
    module = load("waypoints")
    cfg = merge(module.DEFAULTS, {"max_duration_s": 5.0})
    report = RunReport(str(tmp_path / "run"), "waypoints", 4, cfg)
    metrics = module.run(cfg, RunContext(4, report=report))
    report.finish(metrics)
    assert metrics == module.run(cfg, RunContext(4))          # the views change no metric

    rows = _read(os.path.join(str(tmp_path / "run"), "log.mcap"))
    seen = {}
    for topic, name, schema_enc, msg_enc, schema, _t, msg in rows:
        if topic.startswith("/viz/"):
            assert VIZ_TOPICS[topic] == name and schema_enc == "jsonschema" and msg_enc == "json"
            _validate(schema, msg)
            assert msg
            seen[topic] = seen.get(topic, 0) + 1
        elif topic.startswith("/app/in/"):
            assert name in ("ImuSample", "PoseSample")             # replay's sample types, unchanged
        else:
            assert name not in FOXGLOVE_NAMES
    assert set(seen) == set(VIZ_TOPICS)
    assert seen["/viz/tf_static"] == 1 and seen["/viz/truth/pose"] == seen["/viz/estimate/pose"] == 100
    assert {"/app/config", "/app/step", "/app/out/estimate", "/app/out/wheels", "/truth", "/estimate"} <= {
        r[0] for r in rows}
    last = [r[6] for r in rows if r[0] == "/viz/truth/pose"][-1]
    truth = [r[6] for r in rows if r[0] == "/truth"][-1]
    assert (last["pose"]["position"]["x"], last["pose"]["position"]["y"]) == tuple(truth["pos_ned_m"][:2])
    assert last["pose"]["position"]["x"] > 0.5                # the robot drove north towards (3, 0)

    # the shipped layout shows topics this run has
    with open(os.path.join(REPO, "docs", "foxglove", "ground_robot_layout.json")) as fh:
        layout = json.load(fh)
    panels = layout["configById"]
    shown = set(panels["3D!ground"]["topics"])
    plotted = {p["value"].split(".")[0] for k, v in panels.items() if k.startswith("Plot!") for p in v["paths"]}
    assert shown == set(VIZ_TOPICS) and plotted <= {r[0] for r in rows} and {"/truth", "/estimate"} <= plotted
    assert panels["3D!ground"]["followTf"] == "world"
