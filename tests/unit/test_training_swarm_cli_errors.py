"""The swarm training commands (train_dqn, train_bearing, export_dqn, export_bearing) and the pocket DQN teacher
check their input before any work and end with an exit status. Before: a negative ``--seed`` (and
``--goal-scale -1``, ``--shaping nan``, ``--hysteretic 2``, ``--k`` not below ``--seq-len``) was accepted and
failed deep in numpy or trained on nonsense; a missing or damaged weights.npz of the exporters and an output
folder that cannot be created (dqn_teacher, after training) were tracebacks; the exporters' main returned None.
Now a bad number is argparse's error (exit 2) and a bad file or folder one line on stderr (exit 2); success 0.
No training runs: the training and export functions are replaced by fakes that fail when called."""
import importlib

import numpy as np
import pytest

SWARM = "harness.training.swarm_policy."


def _no_work(*args, **kwargs):
    raise AssertionError("worked despite bad input")


def _module(name, monkeypatch):
    mod = importlib.import_module(name)
    for fn in ("train", "export", "train_and_export"):
        if hasattr(mod, fn):
            monkeypatch.setattr(mod, fn, _no_work)
    return mod


@pytest.mark.parametrize("name,argv,needle", [
    (SWARM + "train_dqn", ["--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (SWARM + "train_dqn", ["--goal-scale", "-1"], "argument --goal-scale: expected a number >= 0"),
    (SWARM + "train_dqn", ["--shaping", "nan"], "argument --shaping: expected a number >= 0"),
    (SWARM + "train_dqn", ["--hysteretic", "2"], "argument --hysteretic: expected a number in [0, 1]"),
    (SWARM + "train_bearing", ["--seed", "-3"], "argument --seed: expected an integer >= 0, got '-3'"),
    (SWARM + "train_bearing", ["--k", "80", "--seq-len", "80"], "--k must be < --seq-len"),
    (SWARM + "train_bearing", ["--seq-len", "500"], "--seq-len must be <= 400"),
    (SWARM + "export_dqn", ["--seed", "-1"], "argument --seed: expected an integer >= 0"),
    (SWARM + "export_bearing", ["--seed", "-1"], "argument --seed: expected an integer >= 0"),
    ("harness.training.dqn_teacher", ["--seed", "-1"], "argument --seed: expected an integer >= 0"),
])
def test_out_of_range_numbers_exit_2_before_any_work(tmp_path, capsys, monkeypatch, name, argv, needle):
    if "train_" in name:
        pytest.importorskip("torch")
    mod = _module(name, monkeypatch)
    out = ["--out", str(tmp_path / "m")] if "export_" not in name else ["--dir", str(tmp_path / "m")]
    with pytest.raises(SystemExit) as exc:
        mod.main(argv + out)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err.strip().splitlines()[-1], err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("name", [SWARM + "train_dqn", SWARM + "train_bearing", "harness.training.dqn_teacher"])
def test_an_output_folder_that_cannot_be_created_is_one_line_before_training(tmp_path, capsys, monkeypatch, name):
    if "train_" in name:
        pytest.importorskip("torch")
    mod = _module(name, monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = mod.main(["--out", str(blocker / "model")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "cannot write the output folder %s" % (blocker / "model") in err, err


def _damage(folder, case):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "weights.npz"
    if case == "empty":
        path.write_bytes(b"")
    elif case == "text":
        path.write_text("w0 = 1\n")
    elif case == "truncated":
        np.savez(path, w0=np.zeros((7, 100)), b0=np.zeros(100))
        path.write_bytes(path.read_bytes()[:300])
    elif case == "wrong_arrays":
        np.savez(path, other=np.zeros(3))
    return path


@pytest.mark.parametrize("name,what", [(SWARM + "export_dqn", "DQN weights"),
                                       (SWARM + "export_bearing", "bearing estimator weights")])
@pytest.mark.parametrize("case,needle", [("missing", "No such file"), ("empty", "empty file"),
                                         ("text", "not an .npz"), ("truncated", "not an .npz"),
                                         ("wrong_arrays", "")])
def test_a_missing_or_damaged_weights_file_is_one_line_and_exit_2(tmp_path, capsys, name, what, case, needle):
    mod = importlib.import_module(name)
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "weights.npz" if case == "missing" else _damage(folder, case)
    code = mod.main(["--dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2, err
    prefix = "%s: %s %s: " % (name.rsplit(".", 1)[1], what, path)
    assert err.count("\n") == 1 and err.startswith(prefix) and needle in err, err
    assert sorted(p.name for p in folder.iterdir()) == ([] if case == "missing" else ["weights.npz"])


@pytest.mark.parametrize("name", [SWARM + "export_dqn", SWARM + "export_bearing", "harness.training.dqn_teacher"])
def test_success_is_exit_status_0(tmp_path, capsys, monkeypatch, name):
    mod = importlib.import_module(name)
    card = {"metrics": {"agreement": 1.0}, "size_bytes": 10}
    monkeypatch.setattr(mod, "train_and_export" if "teacher" in name else "export", lambda *a, **k: card)
    argv = ["--out", str(tmp_path / "m")] if "teacher" in name else ["--dir", str(tmp_path / "m")]
    assert mod.main(argv) == 0
    assert "agreement" in capsys.readouterr().out


def test_a_damaged_data_policy_of_the_bearing_trainer_is_one_line_before_training(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    mod = _module(SWARM + "train_bearing", monkeypatch)
    path = _damage(tmp_path / "dqn", "truncated")
    code = mod.main(["--data-policy", str(tmp_path / "dqn"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("train_bearing: --data-policy DQN weights %s: " % path), err
    assert not (tmp_path / "m").exists()
