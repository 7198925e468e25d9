"""The soil-estimator dataset and trainer at the edges: a dataset with no windows, no horizon points or window
sample counts below 1 is refused by ``dataset.load`` (one line naming the file; ``train-soil`` exits 2), a save
stopped midway leaves the earlier cache file, and ``train-soil`` refuses settings torch cannot honour and reports
an --out it cannot write in one line. Before: an empty dataset trained, then ended in "Out of range float values
are not JSON compliant" (its NaN normalisation); negative sample counts in an SVD LinAlgError; a save stopped
midway left a truncated cache that the next run failed to read; ``--weight-decay inf`` trained a NaN network and
ended in the JSON traceback; a --seed past 2^64 / 100 in torch's "Overflow when unpacking long long"; an --out that
is a file in a FileExistsError traceback after the training."""
import os

import numpy as np
import pytest

from harness.training.soil_estimator import dataset as ds
from harness.training.soil_estimator import train as tr

P = 4


def _data(b=12, p=P, seed=0):
    rng = np.random.default_rng(seed)
    return {"x_raw": rng.normal(size=(b, 16 * p + 2)), "geometry": rng.normal(size=(b, p, 6)),
            "force_n": rng.normal(size=(b, p, 2)), "truth": rng.normal(size=(b, 5)), "soil": np.arange(b) % 4,
            "relative_density_pct": rng.uniform(0.0, 100.0, b), "episode": np.arange(b),
            "cut": np.zeros(b, dtype=int), "whole_cut": np.ones(b, dtype=bool), "samples": np.full(b, 60)}


CASES = {"no_windows": (_data(b=0), "dataset holds no windows"),
         "no_horizon": (_data(p=0), "at least one horizon point"),
         "negative_samples": (dict(_data(), samples=np.full(12, -60)), "samples must hold window sample counts >= 1"),
         "zero_samples": (dict(_data(), samples=np.arange(12)), "got 1 below 1")}


def _train(path, out, *extra):
    return tr.main(["--dataset", str(path), "--horizon", str(P), "--epochs", "1", "--members", "1", "--hidden", "4",
                    "--inputs", "kinematic", "--out", str(out)] + list(extra))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_dataset_without_windows_or_samples_is_refused(tmp_path, capsys, case):
    data, needle = CASES[case]
    path = str(tmp_path / (case + ".npz"))
    ds.save(path, data)
    with pytest.raises(ValueError) as err:
        ds.load(path)
    assert path in str(err.value) and needle in str(err.value), err.value
    out = tmp_path / "model"
    code = _train(path, out)
    msg = capsys.readouterr().err
    assert code == 2 and msg.startswith("train-soil: ") and msg.count("\n") == 1 and needle in msg, msg
    assert not out.exists()


def test_a_save_stopped_midway_leaves_the_earlier_cache(tmp_path, monkeypatch):
    import numpy.lib.format as fmt
    path = str(tmp_path / "dataset.npz")
    ds.save(path, _data(seed=1))
    before = open(path, "rb").read()

    class Stopped(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stopped("stopped while writing the arrays")

    monkeypatch.setattr(fmt, "write_array", stop)
    with pytest.raises(Stopped):
        ds.save(path, _data(seed=2))
    monkeypatch.undo()
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(str(tmp_path))) == ["dataset.npz"]
    np.testing.assert_array_equal(ds.load(path)["x_raw"], _data(seed=1)["x_raw"])


@pytest.mark.parametrize("extra,needle", [
    (["--weight-decay", "inf"], "--weight-decay a finite number >= 0"),
    (["--seed", str(2 ** 64 // 100 + 1)], "--seed must be <= 184467440737095516 for 1 members"),
])
def test_train_soil_refuses_settings_torch_cannot_honour(tmp_path, capsys, extra, needle):
    path = tmp_path / "good.npz"
    ds.save(str(path), _data())
    out = tmp_path / "model"
    code = _train(path, out, *extra)
    msg = capsys.readouterr().err
    assert code == 2 and msg.count("\n") == 1 and needle in msg, msg
    assert not out.exists()


def test_train_soil_with_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "good.npz"
    ds.save(str(path), _data())
    out = tmp_path / "model"
    out.write_text("a file")
    code = _train(path, out)
    msg = capsys.readouterr().err
    assert code == 2 and msg == "train-soil: --out %s is not a folder\n" % out, msg
    assert out.read_text() == "a file"
