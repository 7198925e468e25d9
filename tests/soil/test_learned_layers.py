"""The learned soil estimator feeding the loader app's soil layers (soil paper Alg. 4, section 2.1): the app
setting ``layers.estimator = "learned"`` makes the estimation part estimate every layers window with the
committed learned model, from the machine's samples and the operator's commands the app receives on its
``command`` entry point, and fuse those estimates into the layers; one short soil-strip run (one lane, one
pass) through the scenario's own settings. Bad commands are counted and dropped. The controller model (no
force input) reads the track speed loop's command ``drive_cmd_n`` the app's command entry carries: one short
lane through the layers gives the estimates the training's capture gives and replays bit-exactly; commands
without it (older logs) load, and are counted, with a clear refusal where the model needs it."""
import math

import numpy as np
import pytest

pytest.importorskip("scipy")

from harness.scenarios import prepare  # noqa: E402
from harness.scenarios.soil import soil_episode as ep  # noqa: E402
from harness.sim.rng import RunRandom  # noqa: E402
from onboard.soil import loader_app  # noqa: E402
from onboard.soil.grid_map import FEE_INDEX, UPDATES  # noqa: E402
from onboard.soil.grid_map_numpy import view  # noqa: E402
from onboard.soil.learned_estimator import CONTROLLER_MODEL  # noqa: E402


def test_one_short_strip_run_fuses_the_learned_estimates_into_the_layers():
    module, config = prepare("soil-strip", {"episode": {
        "app": {"layers": {"estimator": "learned"}},
        "loader": {"operator": {"lanes": {"passes": 1}}}}}, reduced=True)
    calls = {"learned": 0, "classical": 0}

    def spy(app, grid):
        est = app.part("estimation")
        assert est.learned is not None and est.on_command is not None
        for name, part in (("learned", est.learned), ("classical", est.estimator)):
            real = part.estimate

            def counted(*args, _real=real, _name=name):
                out = _real(*args)
                calls[_name] += 1                   # estimates returned (not those refused)
                return out
            part.estimate = counted
    e = ep.run_episode(module.episode_config(config), RunRandom(1), on_app=spy)
    est = e.app.part("estimation")
    done = [r for r in est.layer_rows if "theta" in r]
    assert len(done) >= 3 and calls["learned"] == len(done) and calls["classical"] == 0
    assert all(r["estimator"] == "learned" and r["cells"] > 0 for r in done)
    assert est.report()["rejected_commands"] == 0
    # the commands superseded before the last fused cut's end are dropped (the one then in force is kept)
    t_end = max(r["t1_us"] for r in est.layer_rows)
    assert sum(1 for t in est.commands if t <= t_end) == 1
    counters = est.layers.counters()
    assert counters["updated"] > 0 and counters["refused"] == 0
    fused = np.asarray(view(e.grid, UPDATES)) > 0
    index = np.asarray(view(e.grid, FEE_INDEX))
    assert fused.sum() > 100 and np.all(index[fused] > 0) and np.all(np.isfinite(index[fused]))
    # the variances fused are the learned estimator's: positive, and the FEE index follows the strip
    assert all(all(s > 0 for s in r["sigma"].values()) for r in done)


def test_bad_commands_are_counted_and_dropped():
    config = loader_app.checked_config({"layers": {"enabled": True, "estimator": "learned"}})
    from onboard.soil.grid_map import GridMap
    grid = GridMap({"size_m": [2.0, 2.0], "cell_m": 0.5})
    part = loader_app.CutEstimation(config, None, grid)
    from onboard.runtime.node import Node
    node = Node("loader")
    node.add("estimation", part)
    part.on_command(loader_app.OperatorCommand(10, 1.0, 0.1, 0.2, 0.0, 0.1))
    part.on_command(loader_app.OperatorCommand(20, float("nan"), 0.1, 0.2, 0.0, 0.1))
    part.on_command("not a command")
    assert part.rejected_commands == 2 and list(part.commands) == [10]
    assert part.commands[10]["speed_mps"] == 1.0


def _controller_config():
    """One 3 m lane, one pass, the layers on the controller model (no force input)."""
    from harness.config import merge
    return merge(ep.DEFAULTS, {
        "world": {"size_m": [6.0, 4.0], "soil": "clay", "relative_density_pct": 30.0},
        "loader": {"operator": {"random": {"enabled": False},
                                "lanes": {"count": 1, "passes": 1, "start_ne_m": [0.5, 2.0], "length_m": 3.0}}},
        "app": {"cut_estimates": False,
                "layers": {"enabled": True, "estimator": "learned", "learned_model": CONTROLLER_MODEL}}},
        "test", ep.SETTING_RANGES)


def test_the_controller_model_runs_through_the_layers_from_the_apps_command_entry(tmp_path, capsys):
    from harness.replay import EXIT_IDENTICAL, main_replay
    from harness.training.soil_estimator.capture import Capture
    from onboard.runtime.mcap_log import McapLog
    from onboard.soil import learned_estimator as le
    from onboard.soil.cut_estimator import CutEstimateError
    cap = Capture()
    path = tmp_path / "log.mcap"
    log = McapLog(str(path))

    def both(topic, time_us, msg):         # the world's log: the capture (what the training reads) and the MCAP
        cap.log(topic, time_us, msg)
        log.log(topic, time_us, msg)
    try:
        e = ep.run_episode(_controller_config(), RunRandom(1), log=both, on_app=cap.on_app, mcap=log)
    finally:
        log.close()
    est = e.app.part("estimation")
    assert est.learned.inputs == "controller" and est.on_command is not None
    done = [r for r in est.layer_rows if "theta" in r]
    assert len(done) >= 2 and all(r["estimator"] == "learned" and r["cells"] > 0 for r in done)
    rep = est.report()
    assert rep["rejected_commands"] == 0 and rep["commands_without_drive_cmd"] == 0
    assert rep["layers"]["updated"] > 0 and rep["layers"]["refused"] == 0
    # every fused window is the estimate the training's capture gives from the world's logged commands (the
    # loop's command the app received on its command entry is the one the world logged)
    (cut,) = cap.cuts
    subs = est.windows(cut, est.config["layers"]["window_m"])
    model = le.LearnedEstimator(CONTROLLER_MODEL)
    checked = 0
    for row in est.layer_rows:
        sub = subs[row["window"]]
        window = est.window(sub, "force")
        if "theta" not in row:
            continue
        want = model.estimate(window, le.kinematics_from_samples(sub.samples, window.time_us),
                              le.actions_from_commands(cap.commands, window.time_us),
                              le.controller_channels(cut.samples, cap.commands, window.time_us))
        assert [row["theta"][k] for k in le.THETA_U_NAMES] == [float(v) for v in want.theta]
        checked += 1
    assert checked == len(done)
    # commands without the loop's command (a log or an entry that does not carry it): a clear refusal
    bare = {t: dict(c, drive_cmd_n=float("nan")) for t, c in cap.commands.items()}
    est.commands = bare
    sub = subs[done[0]["window"]]
    with pytest.raises(CutEstimateError, match="drive_cmd_n"):
        est.layer_estimate(sub, est.window(sub, "force"), cut)
    est.commands = {t: dict(c, drive_cmd_n=None) for t, c in cap.commands.items()}     # a log's JSON null
    with pytest.raises(CutEstimateError, match="drive_cmd_n"):
        est.layer_estimate(sub, est.window(sub, "force"), cut)
    # recorded at the app's boundary (the commands with drive_cmd_n): the replay is bit-exact
    code = main_replay([str(path), "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == EXIT_IDENTICAL and "identical" in out, out


def test_a_command_without_the_loops_command_is_kept_counted_and_round_trips():
    import json
    from onboard.runtime.mcap_log import encode_message
    from onboard.runtime.node import Node
    from onboard.runtime.replay_feed import decode_sample
    from onboard.soil.grid_map import GridMap
    # a log written before the field existed decodes to NaN: accepted (the operator's setpoints are finite)
    old = decode_sample("OperatorCommand", {"time_us": 5, "speed_mps": 0.5, "lift_m": 0.1, "tilt_rad": 0.2,
                                            "roll_rad": 0.0, "depth_m": 0.1})
    assert old.is_finite() and not old.has_drive_cmd() and math.isnan(old.drive_cmd_n)
    new = loader_app.OperatorCommand(7, 0.5, 0.1, 0.2, 0.0, 0.1, 12345.5)
    again = decode_sample("OperatorCommand", json.loads(encode_message(new)))
    assert again.as_dict() == new.as_dict() and again.has_drive_cmd()
    # a non-finite value is "not given" (NaN), as the log (null) gives it back
    inf = loader_app.OperatorCommand(9, 0.5, 0.1, 0.2, 0.0, 0.1, float("inf"))
    assert inf.is_finite() and not inf.has_drive_cmd()
    back = decode_sample("OperatorCommand", json.loads(encode_message(inf)))
    assert math.isnan(back.drive_cmd_n)
    for model, counted in ((CONTROLLER_MODEL, 2), (None, None)):     # old and inf lack it
        config = loader_app.checked_config({"layers": {"enabled": True, "estimator": "learned",
                                                       "learned_model": model}})
        part = loader_app.CutEstimation(config, None, GridMap({"size_m": [2.0, 2.0], "cell_m": 0.5}))
        Node("loader").add("estimation", part)
        for cmd in (old, new, inf, loader_app.OperatorCommand(11, float("nan"), 0.1, 0.2, 0.0, 0.1, 1.0)):
            part.on_command(cmd)
        assert part.rejected_commands == 1 and sorted(part.commands) == [5, 7, 9]
        assert part.report().get("commands_without_drive_cmd") == counted


def test_the_loops_command_is_a_finite_number_or_absent():
    """``drive_cmd_n`` as the controller model reads it: a finite number is taken as a float; absent, None
    (a log's JSON null), NaN, infinite, a bool or a string are "not given", a clear refusal, not a TypeError."""
    from types import SimpleNamespace
    from onboard.soil import learned_estimator as le
    from onboard.soil.cut_estimator import CutEstimateError
    samples = [SimpleNamespace(time_us=t, speed_mps=0.5 + 1e-6 * t) for t in (0, 100000, 200000)]
    times = [0, 100000, 200000]
    for value in (1500, 1500.25, np.float32(1500.25), np.int64(-3)):
        ctl = le.controller_channels(samples, {0: {"drive_cmd_n": value}}, times)
        assert ctl.shape == (3, 2) and ctl.dtype == float and np.all(ctl[:, 1] == float(value))
        assert np.allclose(ctl[:, 0], 1.0)          # m/s^2: 0.1 m/s per 0.1 s
    for value in (None, float("nan"), float("inf"), True, "1500", [1500.0]):
        assert le.drive_command_n({"drive_cmd_n": value}) is None, value
        with pytest.raises(CutEstimateError, match="drive_cmd_n"):
            le.controller_channels(samples, {0: {"speed_mps": 0.5, "drive_cmd_n": value}}, times)
    assert le.drive_command_n({}) is None
