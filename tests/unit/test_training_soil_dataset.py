"""A damaged soil-estimator dataset file is one clear line and exit 2 in ``train-soil`` (and a ValueError naming the
file from ``dataset.load``), before anything is trained or written. Before, a NaN in one input trained a NaN
network through the normalisation and wrote it (exit 0, NaN metrics in the card); an empty or truncated file,
arrays of different lengths, a geometry of the wrong width or text arrays ended in tracebacks (EOFError,
BadZipFile, IndexError, TypeError)."""
import os

import numpy as np
import pytest

from harness.training.soil_estimator import dataset as ds
from harness.training.soil_estimator import train as tr

P = 4                                  # horizon points


def _data(b=12, seed=0):
    rng = np.random.default_rng(seed)
    return {"x_raw": rng.normal(size=(b, 16 * P + 2)), "geometry": rng.normal(size=(b, P, 6)),
            "force_n": rng.normal(size=(b, P, 2)), "truth": rng.normal(size=(b, 5)), "soil": np.arange(b) % 4,
            "relative_density_pct": rng.uniform(0.0, 100.0, b), "episode": np.arange(b),
            "cut": np.zeros(b, dtype=int), "whole_cut": np.ones(b, dtype=bool), "samples": np.full(b, 60)}


def _damaged(folder, case):
    path = os.path.join(folder, case + ".npz")
    data = _data()
    if case in ("empty", "truncated"):
        ds.save(path, data)
        raw = open(path, "rb").read()
        with open(path, "wb") as fh:
            fh.write(b"" if case == "empty" else raw[:len(raw) // 2])
        return path
    if case == "nan":
        data["x_raw"][3, 2] = np.nan
    elif case == "inf_force":
        data["force_n"][0, 1, 0] = np.inf
    elif case == "short_truth":
        data["truth"] = data["truth"][:5]
    elif case == "text":
        data["x_raw"] = data["x_raw"].astype(str)
    elif case == "geometry_3":
        data["geometry"] = data["geometry"][:, :, :3]
    elif case == "soil_index":
        data["soil"] = np.full(12, 7)
    ds.save(path, data)
    return path


CASES = {"empty": "empty file", "truncated": "not an .npz", "nan": "x_raw holds 1 NaN or infinite",
         "inf_force": "force_n holds 1 NaN or infinite", "short_truth": "truth has 5 windows, x_raw 12",
         "text": "x_raw is not numeric", "geometry_3": "geometry must be (B, P, 6)",
         "soil_index": "soil must hold soil indices"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_dataset_is_a_value_error_naming_the_file(tmp_path, case):
    path = _damaged(str(tmp_path), case)
    with pytest.raises(ValueError) as err:
        ds.load(path)
    msg = str(err.value)
    assert path in msg and CASES[case] in msg and "\n" not in msg, msg


@pytest.mark.parametrize("case", sorted(CASES))
def test_train_soil_with_a_damaged_dataset_is_one_line_and_exit_2(tmp_path, capsys, case):
    path = _damaged(str(tmp_path), case)
    out = tmp_path / "model"
    code = tr.main(["--dataset", path, "--horizon", str(P), "--epochs", "1", "--members", "1", "--hidden", "4",
                    "--inputs", "kinematic", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("train-soil: ") and CASES[case] in err, err
    assert not out.exists()


def test_a_good_dataset_round_trips(tmp_path):
    data = _data()
    path = str(tmp_path / "good.npz")
    ds.save(path, data)
    back = ds.load(path)
    assert sorted(back) == sorted(data)
    for k in data:
        np.testing.assert_array_equal(back[k], data[k])


@pytest.mark.parametrize("flag", ["--seed", "--data-seed"])
def test_train_soil_refuses_a_negative_seed_before_training(tmp_path, capsys, flag):
    """Before: ``--seed -1`` read the dataset, then ended in numpy's "expected non-negative integer" traceback
    when the first member's generator was made."""
    path = str(tmp_path / "good.npz")
    ds.save(path, _data())
    out = tmp_path / "model"
    code = tr.main(["--dataset", path, "--horizon", str(P), "--epochs", "1", "--members", "1", "--hidden", "4",
                    "--inputs", "kinematic", flag, "-1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == "train-soil: %s must be >= 0, got -1\n" % flag
    assert not out.exists()
