"""dataset.merge of ``collect`` results that hold no decision (a chunk of episodes in which the expert never
decided) is the empty dataset ``collect`` itself gives, so ``collect_parallel`` equals ``collect`` there too;
before, numpy's concatenate raised "need at least one array to concatenate"."""
import numpy as np
import pytest

from harness.training.grading_policy import dataset


def _one_decision(value):
    return {"height_m": np.full((1, 2, 2), value, np.float32), "true_pose": np.array([[value, 0.0, 0.0]]),
            "est_pose": np.array([[value, 0.1, 0.0]]), "est_cov": np.eye(3).reshape(1, 9),
            "green_ne_m": np.array([[value, 1.0]]), "red_ne_m": np.array([[value, 2.0]]),
            "cell_m": np.float64(0.04), "policy_decisions": np.int64(1)}


def test_merging_only_empty_datasets_gives_the_empty_dataset():
    empty = dataset.collect(0, 3)
    merged = dataset.merge(empty, dataset.collect(0, 4))
    assert set(merged) == set(empty)
    for key in dataset.RECORD_KEYS:
        assert merged[key].shape == empty[key].shape and merged[key].dtype == empty[key].dtype, key
    assert merged["cell_m"] == empty["cell_m"] and int(merged["policy_decisions"]) == 0


def test_empty_datasets_add_nothing_to_full_ones():
    empty = dataset.collect(0, 3)
    merged = dataset.merge(empty, _one_decision(1.0), empty, _one_decision(2.0))
    assert merged["true_pose"][:, 0].tolist() == [1.0, 2.0]
    assert merged["height_m"].shape == (2, 2, 2) and int(merged["policy_decisions"]) == 2


def test_merging_nothing_is_a_value_error():
    with pytest.raises(ValueError, match="at least one dataset"):
        dataset.merge()
