"""The soil-type separability study behind the force-blind learned estimator's F_z error
(``harness.training.soil_estimator.separability``): cross-validated over whole episodes, a soil the inputs
carry is told apart (AUROC near 1, and the F_z of the posterior near the true soil's), one they do not
carry is not (AUROC near 0.5); bad input is one line, exit 2."""
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("scipy")

from harness.training.soil_estimator import separability as sep  # noqa: E402

P = 2


def _data(carried, episodes=48, per_episode=4, seed=3):
    """A small dataset of the training layout: the soil is episode % 4; with ``carried`` one input channel
    (at every horizon point) is the soil plus noise, otherwise every input is noise. F_z = r_soil F_x."""
    rng = np.random.default_rng(seed)
    n = episodes * per_episode
    ep = np.repeat(np.arange(episodes), per_episode)
    soil = ep % 4
    x = rng.normal(size=(n, 16 * P + 2))
    if carried:
        for k in range(P):
            x[:, 16 * k + 7] = soil + 0.2 * rng.normal(size=n)
    fx = rng.uniform(5e3, 2e4, size=(n, P))
    ratio = np.array([-0.05, -0.2, -0.24, -0.26])[soil]
    force = np.stack([fx, ratio[:, None] * fx], axis=2)
    return {"x_raw": x, "controller": rng.normal(size=(n, P, 2)), "force_n": force,
            "geometry": np.zeros((n, P, 6)), "soil": soil, "relative_density_pct": np.full(n, 30.0),
            "episode": ep, "whole_cut": np.tile([True, False, False, False], episodes)}


def test_a_soil_the_inputs_carry_is_told_apart_and_one_they_do_not_is_not():
    got = sep.study(_data(True), ["kinematic"], folds=3, epochs=12)["kinematic"]
    assert got["auroc_whole"] > 0.95 and got["auroc_sub"] > 0.95
    assert got["fz_pct"]["truth"]["clay"] < 1e-6
    blind = sep.study(_data(False), ["kinematic"], folds=3, epochs=12)["kinematic"]
    assert 0.25 < blind["auroc_sub"] < 0.75
    # not told apart: clay's F_z is read as a frictional soil's (the median of the posterior)
    assert blind["fz_pct"]["median"]["clay"] > 5.0 > blind["fz_pct"]["truth"]["clay"]
    assert got["fz_pct"]["median"]["clay"] < 0.25 * blind["fz_pct"]["median"]["clay"]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert sep.main(["--dataset", str(tmp_path / "missing.npz")]) == 2
    assert sep.main(["--dataset", str(tmp_path / "missing.npz"), "--folds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("soil separability:") for line in err)
    with pytest.raises(ValueError, match="controller"):
        sep.inputs_of({"x_raw": np.zeros((1, 34))}, "controller", P)


def _save(path, data):
    from harness.training.soil_estimator import dataset as ds
    n = len(data["x_raw"])
    ds.save(str(path), dict(data, truth=np.zeros((n, 5)), cut=np.zeros(n, dtype=int), samples=np.full(n, 60)))
    return str(path)


def test_one_episode_group_is_refused_not_reported(tmp_path, capsys):
    """Windows that all fall in one fold get no held-out posterior: a ValueError (one line, exit 2), not an
    AUROC of 0.5 from untouched posteriors."""
    one = _data(True, episodes=4)                      # episodes 0-3: one group (episode // 4)
    with pytest.raises(ValueError, match="at least 2 episode groups"):
        sep.study(one, ["kinematic"], folds=3, epochs=1)
    with pytest.raises(ValueError, match="at least 2 episode groups"):
        sep.cv_posterior(np.zeros((8, 3)), np.zeros(8, dtype=int), np.full(8, 5), 4, folds=10)
    # groups 0 and 3 with 3 folds: both in fold 0, the same refusal
    with pytest.raises(ValueError, match="at least 2 episode groups"):
        sep.cv_posterior(np.zeros((8, 3)), np.zeros(8, dtype=int), np.repeat([0, 3], 4), 4, folds=3)
    assert sep.main(["--dataset", _save(tmp_path / "one.npz", one), "--folds", "3", "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("soil separability: cross-validation over 3 folds")


def test_malformed_datasets_and_a_missing_torch_are_one_line(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip archive")
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    short = _data(True)
    short["soil"] = short["soil"][:-1]                  # a per-window array shorter than the rest
    nan = _data(True)
    nan["x_raw"][3, 5] = np.nan
    for path in (bad, empty, _save(tmp_path / "short.npz", short), _save(tmp_path / "nan.npz", nan)):
        assert sep.main(["--dataset", str(path), "--folds", "3", "--epochs", "1", "--inputs", "kinematic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("soil separability: ") and len(line) > 20 for line in err), err
    assert "soil has 191 windows" in err[2] and "NaN" in err[3]
    # torch not installed: one line naming what is missing
    good = _save(tmp_path / "good.npz", _data(True))
    monkeypatch.setitem(sys.modules, "torch", None)
    assert sep.main(["--dataset", good, "--folds", "3", "--epochs", "1", "--inputs", "kinematic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("soil separability: needs torch and scipy") and "torch" in err[0][40:]
    # an exception without a message still gives a line
    assert sep._first_line(ValueError("")) == "ValueError" and sep._first_line(OSError("a\nb")) == "a"


def test_the_study_and_the_soil_strip_scenario_share_one_auroc():
    from harness.scenarios.soil import soil_strip
    assert sep.auroc is soil_strip.auroc
    assert sep.auroc([3.0, 2.0], [1.0, 2.0]) == 0.875 and sep.auroc([], [1.0]) is None


def test_arrays_of_the_wrong_shape_are_refused():
    for key, value, match in (("geometry", np.zeros(192), "geometry"), ("x_raw", np.zeros((192, 30)), "x_raw"),
                              ("force_n", np.zeros((192, P + 1, 2)), "force_n"),
                              ("soil", np.full(192, 4), "soil indices")):
        data = _data(True)
        data[key] = value
        with pytest.raises(ValueError, match=match):
            sep.study(data, ["kinematic"], folds=3, epochs=1)
