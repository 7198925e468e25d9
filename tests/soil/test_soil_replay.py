"""The soil loader app (onboard.soil.loader_app) recorded at its boundary by a soil episode and rebuilt by
``python -m harness replay``: a short lane (blind map, per-cut estimates on two sensor paths, the soil layers
with the classical or the learned estimator, whose operator commands are recorded inputs too) replays with zero
differences; a changed setting diverges (exit 3); a machine sample with a NaN round-trips through the log and
is refused again."""
import json

import pytest
from mcap.reader import make_reader
from mcap.writer import Writer

from harness.config import merge
from harness.replay import EXIT_DIVERGED, EXIT_IDENTICAL, main_replay, read_recording, replay_events
from harness.scenarios.soil import soil_episode as ep
from harness.sim.rng import RunRandom
from onboard.runtime.mcap_log import McapLog, encode_message
from onboard.runtime.replay_feed import decode_sample
from onboard.soil import loader_app
from onboard.soil.blind_map import BladePose

pytest.importorskip("scipy")


def _config(estimator):
    """One 3 m lane, one pass: whole-cut estimates on two sensor paths and the layers' windows."""
    return merge(ep.DEFAULTS, {
        "world": {"size_m": [6.0, 4.0]},
        "loader": {"operator": {"random": {"enabled": False},
                                "lanes": {"count": 1, "passes": 1, "start_ne_m": [0.5, 2.0], "length_m": 3.0}}},
        "app": {"sensor_paths": ["force", "drive+pressure"], "layers": {"enabled": True, "estimator": estimator}}},
        "test", ep.SETTING_RANGES)


@pytest.fixture(scope="module", params=["classical", "learned"])
def recorded(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("soil_" + request.param) / "log.mcap"
    log = McapLog(str(path))
    try:
        episode = ep.run_episode(_config(request.param), RunRandom(1), mcap=log)
    finally:
        log.close()
    return request.param, path, episode


def test_a_recorded_soil_episode_replays_with_zero_differences(recorded, tmp_path, capsys):
    estimator, path, episode = recorded
    est = episode.app.part("estimation")
    assert sum("theta" in r for r in est.estimates) == 2 and sum("theta" in r for r in est.layer_rows) >= 2
    code = main_replay([str(path), "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == EXIT_IDENTICAL and "identical" in out, out
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert rep["app"] == loader_app.APP and rep["identical"] and rep["damage"] is None
    for name in ("sweep", "cut_estimate", "layer_update"):
        t = rep["topics"][name]
        assert t["logged"] == t["replayed"] > 0 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None, t
    events, _ = read_recording(str(path))
    inputs = {e[0] for e in events if e[0].startswith("/app/in/")}
    assert inputs == ({"/app/in/machine", "/app/in/finish"} | ({"/app/in/command"} if estimator == "learned"
                                                                 else set()))
    assert rep["inputs"] == sum(1 for e in events if e[0].startswith("/app/in/"))


def _rewritten(src, dst, config):
    """The MCAP ``src`` copied to ``dst`` with the recorded app settings replaced by ``config``."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        w = Writer(fout)
        w.start()
        schemas, channels = {}, {}
        for schema, channel, message in make_reader(fin).iter_messages():
            if schema.id not in schemas:
                schemas[schema.id] = w.register_schema(schema.name, schema.encoding, schema.data)
            if channel.id not in channels:
                channels[channel.id] = w.register_channel(channel.topic, channel.message_encoding,
                                                          schemas[schema.id])
            data = message.data
            if channel.topic == "/app/config":
                header = json.loads(data)
                header["config"]["app"] = config
                data = json.dumps(header).encode()
            w.add_message(channels[channel.id], message.log_time, data, message.publish_time)
        w.finish()


@pytest.mark.parametrize("block,key,value,topics", [
    ("layers", "window_m", 0.8, {"layer_update"}),
    ("blind_map", "swell", 1.35, {"sweep", "cut_estimate"})])
def test_a_changed_setting_diverges(recorded, tmp_path, capsys, block, key, value, topics):
    _estimator, path, _episode = recorded
    events, _ = read_recording(str(path))
    config = json.loads(json.dumps(events[0][3]["config"]["app"]))
    assert config[block][key] != value
    config[block][key] = value
    changed = tmp_path / "changed.mcap"
    _rewritten(str(path), str(changed), config)
    code = main_replay([str(changed), "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == EXIT_DIVERGED and "DIVERGED" in out, out
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    diverged = {n for n, t in rep["topics"].items() if t["first_divergence_us"] is not None}
    assert diverged >= topics, rep["topics"]


def test_a_machine_sample_round_trips_and_a_nan_is_refused_again():
    pose = BladePose(1000, 1.5, 2.0, 0.1, 0.01, -0.2, 0.3)
    ok = loader_app.MachineSample(1000, pose, (1234.5, -87.25), 410.0, 2.5e6, 0.31, 0.8, 0.02, "cut", (0, 1))
    bad = loader_app.MachineSample(1000, pose, (float("nan"), -87.25), 410.0, float("inf"), 0.31, 0.8, 0.02,
                                   "cut", (0, 1))
    again = decode_sample("MachineSample", json.loads(encode_message(ok)))
    assert again.as_dict() == ok.as_dict() and again.is_finite()
    back = decode_sample("MachineSample", json.loads(encode_message(bad)))
    assert back.blade_force_n[0] != back.blade_force_n[0] and not back.is_finite()
    cmd = decode_sample("OperatorCommand", json.loads(encode_message(
        loader_app.OperatorCommand(5, 0.5, float("nan"), 0.0, 0.0, 0.1))))
    assert not cmd.is_finite()
    assert decode_sample("MissionEnd", {"time_us": 7}).time_us == 7
    # rebuilt apps refuse them as the recorded one did
    node = loader_app.app_from_recipe(loader_app.recipe_config(
        _grid(), {"estimation": False}, None, "pure"))
    mapping = node.part("mapping")
    mapping.on_machine(back)
    mapping.on_machine(again)
    assert mapping.rejected == 1 and len(mapping.queue) == 1


def _grid():
    from onboard.soil.grid_map import GridMap
    return GridMap({"size_m": [3.0, 4.0], "cell_m": 0.1})


def test_a_recipe_that_does_not_fit_is_one_clear_error():
    recipe = loader_app.recipe_config(_grid(), {"estimation": False}, None, "numpy")
    recipe["grid"]["elevation_m"] = recipe["grid"]["elevation_m"][:-1]
    with pytest.raises(loader_app.ConfigError, match="elevation_m holds"):
        loader_app.app_from_recipe(recipe)
    with pytest.raises(loader_app.ConfigError, match="erosion kernel"):
        loader_app.recipe_config(_grid(), None, None, "fortran")
