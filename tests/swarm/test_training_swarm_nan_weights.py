"""The swarm exporters (export_dqn, export_bearing) and train_bearing's ``--data-policy`` refuse a weights.npz
holding NaN or infinite numbers (a diverged training's) with one line naming the file and the array, exit 2.
Before, export_dqn recorded its calibration flights with the NaN policy and ended in an AssertionError
traceback (exit 1), although its docstring promises one line for a damaged weights file."""
import importlib
import os

import numpy as np
import pytest

SWARM = "harness.training.swarm_policy."
SWARM_MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "models",
                            "swarm")
REPO_MODELS = {name: os.path.join(SWARM_MODELS, name, "weights.npz") for name in ("dqn", "bearing")}


def _damaged(tmp_path, which, key, value=np.nan):
    arrays = dict(np.load(REPO_MODELS[which]))
    arrays[key] = np.array(arrays[key], dtype=np.float32)
    arrays[key].flat[0] = value
    folder = tmp_path / which
    folder.mkdir()
    np.savez(folder / "weights.npz", **arrays)
    return folder


def _no_work(*args, **kwargs):
    raise AssertionError("worked despite damaged weights")


@pytest.mark.parametrize("key,value", [("b0", np.nan), ("w2", np.inf)])
def test_export_dqn_refuses_nan_weights_in_one_line(tmp_path, capsys, key, value):
    from harness.training.swarm_policy import export_dqn
    folder = _damaged(tmp_path, "dqn", key, value)
    assert export_dqn.main(["--dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("export_dqn: DQN weights %s" % (folder / "weights.npz")), err
    assert "%s holds NaN or infinite numbers" % key in err
    assert not (folder / "model.tflite").exists()


def test_export_bearing_refuses_nan_weights_in_one_line(tmp_path, capsys):
    from harness.training.swarm_policy import export_bearing
    folder = _damaged(tmp_path, "bearing", "w_hh")
    assert export_bearing.main(["--dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bearing estimator weights" in err and "w_hh holds NaN" in err, err


def test_train_bearing_refuses_a_nan_data_policy_before_training(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    mod = importlib.import_module(SWARM + "train_bearing")
    monkeypatch.setattr(mod, "train", _no_work)
    folder = _damaged(tmp_path, "dqn", "w1")
    assert mod.main(["--data-policy", str(folder), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data-policy DQN weights" in err and "w1 holds NaN" in err, err
    assert not (tmp_path / "m").exists()


def test_the_committed_weights_pass_the_check():
    from harness.training.swarm_policy.export_dqn import finite
    for path in REPO_MODELS.values():
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        assert finite(dict)(arrays).keys() == arrays.keys()
