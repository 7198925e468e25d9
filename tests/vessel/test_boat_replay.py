"""Playback of the WAM-V app with LIDAR perception and the DAMN arbiter on (RobotX AAVS fig. 11): a short closed
loop against the simulated WAM-V (harness.sim.boat_world, harness.sim.lidar) recorded at the app's boundary into
an MCAP log with the app's Foxglove views; ``python -m harness replay`` rebuilds the app from the log and gets
every output back bit for bit; a changed setting or a missing input is reported as a divergence; the views
open with Foxglove's schemas (checked with the ``mcap`` reader) and show what the app computed."""
import base64
import json
import math
import pathlib

import numpy as np
import pytest
from mcap.reader import make_reader

from boards.wamv.app import WamvApp
from harness.replay import EXIT_IDENTICAL, main_replay, read_recording, replay_events
from harness.sim.boat_course import Buoy, Course
from harness.sim.boat_playback import record_run
from harness.sim.boat_world import BoatWorld
from harness.sim.rng import RunRandom
from onboard.runtime.mcap_log import FOXGLOVE_SCHEMAS, GRID, POINT_CLOUD, SCENE_UPDATE, McapLog
from onboard.runtime.replay_feed import decode_sample
from onboard.vessel import boat_views
from onboard.vessel.arbiters import DamnArbiter, NavState
from onboard.vessel.arbiters_part import DestinationSample, ObstaclesSample

try:
    import jsonschema
except ImportError:          # not in every .venv: schema names and encodings are still checked
    jsonschema = None

BUOYS = (Buoy(15.0, -1.0, 0.4, 1.2), Buoy(25.0, 4.0, 0.5, 0.8))
RUN_US = 5_000_000
REPO = pathlib.Path(__file__).resolve().parents[2]
NEW_DESTINATION = (40.0, 3.0)


def _world(config, log):
    """The app without a LIDAR on the simulated WAM-V, its views to ``log``."""
    w = BoatWorld(RunRandom(1), gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                  interface={"latency_s": 0.0, "timeout_ms": 200})
    app = WamvApp(w.driver(), w.gnss_app_end, config, view=log.log_view)
    w.attach_app(app, app.frame)
    return w, app


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """5 simulated seconds with LIDAR + perception + DAMN, a destination change at 2 s, views on
    (``python -m harness.sim.boat_playback``'s run)."""
    path = tmp_path_factory.mktemp("boat") / "log.mcap"
    course = Course(0.0, 0.0, 0.0, BUOYS, (40.0, 0.0), ())
    report = record_run(path, course, seed=1, duration_s=RUN_US * 1e-6, arbiter="damn",
                        gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                        schedule=[(2.0, lambda app, now_us: app.on_destination(
                            DestinationSample(now_us, *NEW_DESTINATION)))])
    return path, report


def test_a_boat_run_with_lidar_and_damn_replays_bit_exactly(recorded, tmp_path, capsys):
    path, report = recorded
    assert report["perception"]["frames"] >= 40 and report["perception"]["buoys_confirmed"] == len(BUOYS)
    assert report["arbiter"]["decisions"] >= 40 and report["views"]["views"] > 50
    code = main_replay([str(path), "--out", str(tmp_path / "r"), "--views", str(tmp_path / "views.mcap")])
    out = capsys.readouterr().out
    assert code == EXIT_IDENTICAL and "identical" in out, out
    # the rebuilt app's views (--views: e.g. for a log recorded on the boat without them) are the live ones
    live = [m[:2] + m[5:] for m in _messages(path) if m[0].startswith(boat_views.PREFIX)]
    again = [m[:2] + m[5:] for m in _messages(tmp_path / "views.mcap")]
    assert len(live) > 50 and again == live
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert rep["app"] == "wamv_boat" and rep["identical"] and rep["damage"] is None
    for name in ("arbiter", "buoys", "command", "estimate", "thrust"):
        t = rep["topics"][name]
        assert t["logged"] == t["replayed"] > 0 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None, t
    events, _ = read_recording(str(path))
    lidar_in = [e for e in events if e[0] == "/app/in/lidar"]
    assert len(lidar_in) >= 40 and all(e[1] == "LidarFrame" for e in lidar_in)
    assert [e[3]["north_m"] for e in events if e[0] == "/app/in/destination"] == [NEW_DESTINATION[0]]
    # the arbiter steered to the new destination after it came in (what the replay reproduced)
    dest = [tuple(d["destination_ne_m"]) for t, d in
            ((e[2], e[3]) for e in events if e[0] == "/app/out/arbiter") if t > 2_100_000]
    assert dest and set(dest) == {NEW_DESTINATION}


@pytest.mark.parametrize("change", ["perception.azimuth_res_deg", "arbiter_config.avoid_weight"])
def test_a_changed_setting_is_reported_as_a_divergence(recorded, change):
    events, _ = read_recording(str(recorded[0]))
    header = events[0][3]
    config = json.loads(json.dumps(header["config"]))
    block, key = change.split(".")
    config[block] = dict(config[block], **{key: {"azimuth_res_deg": 0.3, "avoid_weight": 0.5}[key]})
    # the first 3 s (up to a tick) are enough to diverge
    cut = next(i for i, e in enumerate(events) if e[0] == "/app/step" and e[2] > 3_000_000)
    changed = [(events[0][0], events[0][1], events[0][2], dict(header, config=config))] + events[1:cut]
    result = replay_events(changed)
    assert not result["identical"]
    diverged = {name for name, t in result["topics"].items() if t["first_divergence_us"] is not None}
    # a wider azimuth step widens every buoy's radius (the buoy map differs; DAMN's 5 deg regions may still pick
    # the same heading); a weaker avoid vote changes the decisions and so the commands
    assert diverged >= ({"buoys"} if block == "perception" else {"arbiter", "command"}), result["topics"]
    assert all(t["max_abs_diff"] > 0 for name, t in result["topics"].items() if name in diverged)


def test_the_obstacles_entry_replays_and_a_lost_input_diverges(tmp_path):
    """Without perception the obstacles come in on the arbiter's ``obstacles`` entry (potential field here)."""
    path = tmp_path / "pf.mcap"
    log = McapLog(str(path))
    w, app = _world({"arbiter": "potential_field", "destination": [30.0, 0.0]}, log)
    try:
        w.start(app, record=log.log)
        app.on_obstacles(ObstaclesSample(0, [(12.0, 0.5, 0.5)]))
        w.run(3_000_000, 1_000_000)
    finally:
        w.close()
        log.close()
    events, _ = read_recording(str(path))
    assert replay_events(events)["identical"]
    lost = [e for e in events if e[0] != "/app/in/obstacles"]
    assert len(lost) == len(events) - 1
    result = replay_events(lost)
    assert not result["identical"] and result["topics"]["arbiter"]["first_divergence_us"] is not None
    names = {r[0] for r in _messages(path)}
    assert "/viz/boat/field" in names and "/viz/boat/votes" not in names and "/viz/boat/lidar" not in names


def test_recorded_vessel_samples_decode_exactly_with_nulls_as_nan():
    frame = decode_sample("LidarFrame", {"time_us": 7, "points_body_m": [[0.1, None, -1.0], [2.5, 0.3, -0.7]]})
    p = np.asarray(frame.points_body_m, float)
    assert frame.time_us == 7 and p.shape == (2, 3) and math.isnan(p[0, 1]) and p[1, 0] == 2.5
    obs = decode_sample("ObstaclesSample", {"time_us": 3, "obstacles": [[1.0, 2.0, None]]})
    assert math.isnan(obs.obstacles[0][2])
    dest = decode_sample("DestinationSample", {"time_us": 4, "north_m": 0.1 + 0.2, "east_m": -3.0})
    assert dest.north_m == 0.1 + 0.2 and dest.east_m == -3.0


def _messages(path):
    out = []
    with open(path, "rb") as fh:
        for schema, channel, message in make_reader(fh).iter_messages():
            out.append((channel.topic, schema.name, schema.encoding, channel.message_encoding, schema.data,
                        message.log_time, message.data))
    return out


def _floats(msg):
    """The packed float32 fields of a PointCloud / Grid message: (n, fields) array."""
    names = [f["name"] for f in msg["fields"]]
    assert all(f["type"] == 7 and f["offset"] == 4 * k for k, f in enumerate(msg["fields"]))
    return np.frombuffer(base64.b64decode(msg["data"]), "<f4").reshape(-1, len(names)), names


def test_the_views_open_with_foxglove_schemas_and_show_what_the_app_computed(recorded):
    msgs = [m for m in _messages(recorded[0]) if m[0].startswith(boat_views.PREFIX)]
    by_topic = {}
    for topic, name, schema_enc, msg_enc, schema, _t, data in msgs:
        assert schema_enc == "jsonschema" and msg_enc == "json"
        assert json.loads(schema) == FOXGLOVE_SCHEMAS[name]
        by_topic.setdefault(topic, (name, []))[1].append(json.loads(data))
    names = {t[len(boat_views.PREFIX):]: v[0] for t, v in by_topic.items()}
    assert names == {"tf_static": "foxglove.FrameTransform", "tf": "foxglove.FrameTransform",
                     "estimate": "foxglove.PoseInFrame", "lidar": POINT_CLOUD, "buoys": SCENE_UPDATE,
                     "votes": GRID, "decision": SCENE_UPDATE}
    layout = json.loads((REPO / "docs" / "foxglove" / "boat_layout.json").read_text())
    panel_topics = set(layout["configById"]["3D!boat"]["topics"])
    assert panel_topics - set(by_topic) == {boat_views.PREFIX + "field"}      # the potential field's grid
    if jsonschema is not None:
        for name, items in by_topic.values():
            cls = jsonschema.validators.validator_for(FOXGLOVE_SCHEMAS[name])
            cls.check_schema(FOXGLOVE_SCHEMAS[name])
            validator = cls(FOXGLOVE_SCHEMAS[name])          # checked once, not per message
            for msg in items:
                validator.validate(msg)
    # the sweep, placed with the estimated pose: the buoys' walls (ned, z up is negative)
    cloud, fields = _floats(by_topic[boat_views.PREFIX + "lidar"][1][-1])
    assert fields == ["x", "y", "z"] and len(cloud) > 50
    wall = np.min([np.abs(np.hypot(cloud[:, 0] - b.north_m, cloud[:, 1] - b.east_m) - b.radius_m) for b in BUOYS],
                  axis=0)
    assert np.median(wall) < 0.3 and np.all(cloud[:, 2] < 0.0)
    # the perceived buoys as cylinders where they are
    cyl = by_topic[boat_views.PREFIX + "buoys"][1][-1]["entities"][0]["cylinders"]
    assert len(cyl) == len(BUOYS)
    for b in BUOYS:
        c = min(cyl, key=lambda c: math.hypot(c["pose"]["position"]["x"] - b.north_m,
                                              c["pose"]["position"]["y"] - b.east_m))
        assert math.hypot(c["pose"]["position"]["x"] - b.north_m, c["pose"]["position"]["y"] - b.east_m) < 0.5
    # the vote grid, centred on the estimate of its decision: its best-voted cell lies in the direction the
    # arbiter chose at that time (its recorded heading), within a region's bearing step and a cell
    events, _ = read_recording(str(recorded[0]))
    decisions = {t: d for topic, _s, t, d in events if topic == "/app/out/arbiter"}
    checked = 0
    for grid in by_topic[boat_views.PREFIX + "votes"][1]:
        values, fields = _floats(grid)
        assert fields == ["total", "goal", "avoid"]
        n = grid["column_count"]
        total = values[:, 0].reshape(n, n)
        assert np.isnan(total[0, 0]) and np.isfinite(total[n // 2, n // 2 + 3])
        r, c = np.unravel_index(np.nanargmax(total), total.shape)
        cell = grid["cell_size"]["x"]
        half = 0.5 * n * cell
        dn, de = (c + 0.5) * cell - half, (r + 0.5) * cell - half
        t_us = grid["timestamp"]["sec"] * 1000000 + grid["timestamp"]["nsec"] // 1000
        heading = decisions[t_us]["heading_rad"]
        off = abs(math.remainder(math.atan2(de, dn) - heading, 2.0 * math.pi))
        assert off < math.radians(5.0) + cell / math.hypot(dn, de), (t_us, math.degrees(off))
        checked += 1
    assert checked >= 8
    dests = [e for m in by_topic[boat_views.PREFIX + "decision"][1] for e in m["entities"] if e["id"] == "destination"]
    p = dests[-1]["spheres"][0]["pose"]["position"]
    assert (p["x"], p["y"]) == NEW_DESTINATION


def test_the_vote_grid_resamples_every_region_where_it_lies():
    arb = DamnArbiter()
    arb.decide(NavState(3.0, -2.0, 0.3, 1.0), [(12.0, -2.0, 0.5)], (40.0, -2.0))
    votes = arb.last_votes
    cell = 0.5
    msg = boat_views.vote_grid(1000, votes, cell)
    values, _ = _floats(msg)
    n = msg["column_count"]
    corner = (msg["pose"]["position"]["x"], msg["pose"]["position"]["y"])
    for i in (0, 5, votes["best"], 300, len(votes["total"]) - 1):
        dn, de = arb.region_offset_ne_m(i)
        c = int((3.0 + dn - corner[0]) / cell)
        r = int((-2.0 + de - corner[1]) / cell)
        k = r * n + c
        assert tuple(values[k]) == tuple(np.float32([votes["total"][i], votes["goal"][i], votes["avoid"][i]]))
    total = values[:, 0]
    assert np.nanmax(total) == np.float32(votes["total"][votes["best"]])
    # the obstacle straight ahead is voted against, the cells beyond the outer ring hold no votes
    avoid = values[:, 2].reshape(n, n)
    ahead = (int((12.0 - corner[0]) / cell), int((-2.0 - corner[1]) / cell))
    assert avoid[ahead[1], ahead[0]] == -1.0 and np.isnan(avoid[0, 0])


def test_views_off_adds_no_part_and_no_view():
    written = []
    w = BoatWorld(RunRandom(1))
    try:
        app = WamvApp(w.driver(), w.gnss_app_end, {"views": False},
                      view=lambda *args: written.append(args))
        assert app.views is None and "views" not in app.report()
    finally:
        w.close()
