"""The learned soil estimator feeding the loader app's soil layers (soil paper Alg. 4, section 2.1): the app
setting ``layers.estimator = "learned"`` makes the estimation part estimate every layers window with the
committed learned model, from the machine's samples and the operator's commands the app receives on its
``command`` entry point, and fuse those estimates into the layers; one short soil-strip run (one lane, one
pass) through the scenario's own settings. Bad commands are counted and dropped."""
import numpy as np
import pytest

pytest.importorskip("scipy")

from harness.scenarios import prepare  # noqa: E402
from harness.scenarios.soil import soil_episode as ep  # noqa: E402
from harness.sim.rng import RunRandom  # noqa: E402
from onboard.soil import loader_app  # noqa: E402
from onboard.soil.grid_map import FEE_INDEX, UPDATES  # noqa: E402
from onboard.soil.grid_map_numpy import view  # noqa: E402


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
