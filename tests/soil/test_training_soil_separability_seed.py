"""The soil separability study refuses a --seed numpy or torch cannot take (fold f is seeded seed + f) with its
own one line before reading the dataset. Before, a negative seed read the dataset, imported torch and then
reported numpy's bare "expected non-negative integer"."""
import pytest

from harness.training.soil_estimator import separability as sep


@pytest.mark.parametrize("seed,folds", [(-1, 10), (2 ** 64 - 3, 4)])
def test_a_seed_out_of_range_is_one_line_before_reading(tmp_path, capsys, seed, folds):
    code = sep.main(["--dataset", str(tmp_path / "never_read.npz"), "--seed", str(seed), "--folds", str(folds)])
    err = capsys.readouterr().err
    assert code == 2 and err == "soil separability: --seed must be in 0..%d, got %d\n" % (2 ** 64 - folds, seed), err
