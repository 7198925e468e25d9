"""The soil-type separability study behind the force-blind learned estimator's F_z error
(``harness.training.soil_estimator.separability``): cross-validated over whole episodes, a soil the inputs
carry is told apart (AUROC near 1, and the F_z of the posterior near the true soil's), one they do not
carry is not (AUROC near 0.5); bad input is one line, exit 2."""
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
