"""The training commands write their models, cards and fits whole: each file is serialised first and renamed
into place (``harness.report.run_report.write_whole``), so a reader (or a run interrupted while it writes)
sees the earlier file or the new one, never half of one. Before, these writers opened the final names for
writing and wrote into them: the grading trainer's per-round and final weights.npz / card.json (its docstring
promises an interrupted run leaves a usable model), the soil estimator's export, the swarm DQN and bearing
trainers' weights.npz / train_card.json, the Alexi card update and float layers, boat-fit's fit.json and the
pocket DQN's float_weights.npz. Shown two ways: no final name is ever opened for writing (the open() calls are
recorded, numpy's zipfile included), and a serialisation that fails midway leaves the earlier file as it was
(before, a truncated .npz or half a JSON text). No real training runs: the training functions are replaced by
fakes returning small weights."""
import argparse
import builtins
import contextlib
import io
import json
import os
import types

import numpy as np
import pytest


class Interrupted(Exception):
    """Stands for a run stopped while it serialises (an exception, a full disk, Ctrl-C)."""


@contextlib.contextmanager
def opened_for_writing(monkeypatch):
    """Records the paths opened for writing, by open() and by io.open() (what zipfile, so np.savez, uses)."""
    real_open = builtins.open
    written = []

    def recording_open(path, mode="r", *args, **kwargs):
        if isinstance(path, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+"):
            written.append(os.path.abspath(os.fsdecode(path)))
        return real_open(path, mode, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", recording_open)
        m.setattr(io, "open", recording_open)
        yield written


def fail_writing_arrays(monkeypatch):
    """np.savez breaks while it writes an array (after the archive was opened): the .npz is cut short."""
    import numpy.lib.format as fmt

    def fail(*args, **kwargs):
        raise Interrupted("stopped while writing the arrays")

    monkeypatch.setattr(fmt, "write_array", fail)


def assert_whole(paths, written):
    finals = {os.path.abspath(str(p)) for p in paths}
    assert written, "nothing was written"
    assert not finals & set(written), sorted(finals & set(written))
    for p in paths:
        assert os.path.exists(p), p
        assert not [n for n in os.listdir(os.path.dirname(str(p))) if n.endswith(".tmp")]


def load_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


# ---------------------------------------------------------------- grading: train_policy's per-round and final save
def _grading_run(tmp_path, monkeypatch, after_round=None):
    pytest.importorskip("torch")
    from harness.training.grading_policy import train_policy as tp
    monkeypatch.setattr(tp.dataset, "collect_parallel",
                        lambda *a, **k: {"true_pose": np.zeros((2, 3))})
    monkeypatch.setattr(tp.dataset, "label_geometry",
                        lambda data, obs: {"green": {"outside_fraction": 0.0}, "red": {"outside_fraction": 0.0}})
    metrics = {"heldout_true_pose": {"green": {"median_lateral_err_m": 0.1}}}

    def fake_train_agent(agent, data, val, args, fcn_config, obs_config, log=print, on_round=None):
        on_round({"w": np.full(50, 1.0, np.float32)}, {"round": 1}, dict(metrics))
        if after_round is not None:
            after_round()
        return {"w": np.full(50, 2.0, np.float32)}, {"round": 2, "train_time_s": 0.0}, dict(metrics)

    monkeypatch.setattr(tp, "train_agent", fake_train_agent)
    out = tmp_path / "models"
    code = tp.main(["--agents", "agent1", "--episodes", "1", "--val-episodes", "1", "--threads", "1",
                    "--out", str(out)])
    return code, out / "agent1"


def test_grading_saves_are_whole(tmp_path, monkeypatch):
    with opened_for_writing(monkeypatch) as written:
        code, folder = _grading_run(tmp_path, monkeypatch)
    assert code == 0
    assert_whole([folder / "weights.npz", folder / "card.json"], written)
    assert load_npz(folder / "weights.npz")["w"][0] == 2.0
    assert json.loads((folder / "card.json").read_text())["training"]["round"] == 2


def test_grading_run_stopped_while_saving_leaves_the_last_rounds_model(tmp_path, monkeypatch):
    with pytest.raises(Interrupted):
        _grading_run(tmp_path, monkeypatch, after_round=lambda: fail_writing_arrays(monkeypatch))
    folder = tmp_path / "models" / "agent1"
    assert load_npz(folder / "weights.npz")["w"][0] == 1.0               # the round's model, whole
    assert json.loads((folder / "card.json").read_text())["training"]["round"] == 1


# ---------------------------------------------------------------- soil estimator export
def _soil_members():
    rng = np.random.default_rng(1)
    return [[(rng.normal(size=(4, 3)), rng.normal(size=4))]]


def test_soil_export_is_whole(tmp_path, monkeypatch):
    from harness.training.soil_estimator import train as tr
    lo, hi = tr.preset_bounds()
    with opened_for_writing(monkeypatch) as written:
        tr.export(str(tmp_path), _soil_members(), np.zeros(3), np.ones(3), lo, hi, {"metrics": {}})
    assert_whole([tmp_path / "weights.npz", tmp_path / "card.json"], written)
    assert int(load_npz(tmp_path / "weights.npz")["members"]) == 1


def test_soil_export_stopped_midway_leaves_the_earlier_model(tmp_path, monkeypatch):
    from harness.training.soil_estimator import train as tr
    lo, hi = tr.preset_bounds()
    tr.export(str(tmp_path), _soil_members(), np.zeros(3), np.ones(3), lo, hi, {"metrics": {"run": 1}})
    before = (tmp_path / "weights.npz").read_bytes()
    fail_writing_arrays(monkeypatch)
    with pytest.raises(Interrupted):
        tr.export(str(tmp_path), _soil_members() * 2, np.zeros(3), np.ones(3), lo, hi, {"metrics": {"run": 2}})
    assert (tmp_path / "weights.npz").read_bytes() == before
    assert json.loads((tmp_path / "card.json").read_text())["metrics"]["run"] == 1


# ---------------------------------------------------------------- swarm trainers' weights.npz + train_card.json
SWARM = [("train_dqn", {"w0": np.ones((7, 3), np.float32)}),
         ("train_bearing", {"w_ih": np.ones((6, 3), np.float32)})]


def _swarm_main(name, weights, out, monkeypatch):
    pytest.importorskip("torch")
    import importlib
    mod = importlib.import_module("harness.training.swarm_policy." + name)
    monkeypatch.setattr(mod, "train", lambda **kwargs: (weights, {"best": 1.0, "np_value": np.float32(0.5)}))
    return mod.main(["--out", str(out)])


@pytest.mark.parametrize("name,weights", SWARM)
def test_swarm_trainer_saves_are_whole(tmp_path, monkeypatch, name, weights):
    out = tmp_path / "m"
    with opened_for_writing(monkeypatch) as written:
        code = _swarm_main(name, weights, out, monkeypatch)
    assert_whole([out / "weights.npz", out / "train_card.json"], written)
    assert code == 0                            # an exit status (before: None)
    key = next(iter(weights))
    np.testing.assert_array_equal(load_npz(out / "weights.npz")[key], weights[key])
    assert json.loads((out / "train_card.json").read_text())["np_value"] == 0.5


@pytest.mark.parametrize("name,weights", SWARM)
def test_swarm_trainer_stopped_while_saving_leaves_the_earlier_weights(tmp_path, monkeypatch, name, weights):
    out = tmp_path / "m"
    out.mkdir()
    np.savez(out / "weights.npz", earlier=np.arange(3))
    before = (out / "weights.npz").read_bytes()
    fail_writing_arrays(monkeypatch)
    two = dict(weights, second=np.zeros(2))
    with pytest.raises(Interrupted):
        _swarm_main(name, two, out, monkeypatch)
    assert (out / "weights.npz").read_bytes() == before


# ---------------------------------------------------------------- Alexi: card update and float layers
def test_alexi_card_update_and_float_layers_are_whole(tmp_path, monkeypatch):
    from harness.training.alexi import export as ax
    from harness.training.alexi import train as at
    layers = [(np.ones((3, 2)), np.zeros(3), "TANH"), (np.ones((1, 3)), np.zeros(1), "NONE")]
    with opened_for_writing(monkeypatch) as written:
        ax.save_float_layers(str(tmp_path), layers)
        at._update_card(str(tmp_path), {"alexi": {"recipe": "v2"}}, {"r2": 0.9}, "int8")
    assert_whole([tmp_path / ax.FLOAT_FILE, tmp_path / "card.json"], written)
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["metrics"] == {"r2": 0.9} and card["alexi"]["runtime_kind"] == "int8"
    assert [a for _, _, a in ax.load_float_layers(str(tmp_path))] == ["TANH", "NONE"]


def test_alexi_float_layers_stopped_midway_leave_the_earlier_file(tmp_path, monkeypatch):
    from harness.training.alexi import export as ax
    ax.save_float_layers(str(tmp_path), [(np.ones((1, 2)), np.zeros(1), "NONE")])
    before = (tmp_path / ax.FLOAT_FILE).read_bytes()
    fail_writing_arrays(monkeypatch)
    with pytest.raises(Interrupted):
        ax.save_float_layers(str(tmp_path), [(np.ones((3, 2)), np.zeros(3), "TANH")])
    assert (tmp_path / ax.FLOAT_FILE).read_bytes() == before


def test_alexi_card_update_that_fails_midway_leaves_the_earlier_card(tmp_path):
    from harness.training.alexi import train as at
    at._update_card(str(tmp_path), {"alexi": {}}, {"r2": 0.9}, "int8")
    before = (tmp_path / "card.json").read_text()
    with pytest.raises(TypeError):              # a value JSON cannot hold, late in the card
        at._update_card(str(tmp_path), {"alexi": {}, "zz": object()}, {"r2": 0.5}, "float")
    assert (tmp_path / "card.json").read_text() == before


# ---------------------------------------------------------------- boat-fit's fit.json
def _boat_fit(out, monkeypatch, extra=None):
    from harness.training.boat_fit import fit_cli
    log = {"notes": [], "source": "csv", "time_s": np.array([0.0, 1.0, 2.0])}
    monkeypatch.setattr(fit_cli, "read_log", lambda path: log)
    result = {"params": {"c1": 1.0}, "mse_train_m2": 0.1, "mse_test_m2": None, "windows": 3, "windows_test": 1}
    result.update(extra or {})
    monkeypatch.setattr(fit_cli.procedure, "fit_log", lambda log, overrides, progress=None: (dict(result), {}))
    args = argparse.Namespace(set=[], method=None, rounds=None, log="x.csv", out=str(out), no_plots=True,
                              quiet=True)
    return fit_cli.run_cli(args)


def test_boat_fit_json_is_whole(tmp_path, monkeypatch):
    with opened_for_writing(monkeypatch) as written:
        assert _boat_fit(tmp_path, monkeypatch) == 0
    assert_whole([tmp_path / "fit.json"], written)
    assert json.loads((tmp_path / "fit.json").read_text())["params"] == {"c1": 1.0}


def test_boat_fit_json_that_fails_midway_leaves_the_earlier_fit(tmp_path, monkeypatch):
    assert _boat_fit(tmp_path, monkeypatch) == 0
    before = (tmp_path / "fit.json").read_text()
    with pytest.raises(TypeError):
        _boat_fit(tmp_path, monkeypatch, {"zz": types.SimpleNamespace()})
    assert (tmp_path / "fit.json").read_text() == before


# ---------------------------------------------------------------- pocket DQN teacher's float_weights.npz
def test_dqn_teacher_files_are_whole(tmp_path, monkeypatch):
    from harness.training import dqn_teacher
    out = tmp_path / "pocket"
    with opened_for_writing(monkeypatch) as written:
        dqn_teacher.train_and_export(str(out), seed=1, n_train=200, n_test=50, n_calib=100, epochs=1)
    assert_whole([out / "float_weights.npz", out / "model.tflite", out / "card.json"], written)
    layers, mean, std = dqn_teacher.load_float_reference(str(out))
    assert len(layers) == 3 and mean.shape == (7,)
