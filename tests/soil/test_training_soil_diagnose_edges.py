"""``harness.training.soil_estimator.diagnose`` with windows whose horizon has no valid FEE point, and with a
dataset lacking the optional controller array. A window without a valid point has no force error: it is left out
of the bin means (as the training's card metrics leave it out), not averaged in as NaN; a dataset without the
controller array and the controller model given (the default list holds it) is one line and exit 2. Before, one
such window turned its whole bin into "nan %", and the missing array ended in a ValueError traceback after the
models had loaded. Runs the committed kinematic model on 12 synthetic windows (NumPy only)."""
import numpy as np
import pytest

from harness.training.soil_estimator import dataset as ds
from harness.training.soil_estimator import diagnose as dg
from onboard.soil import learned_estimator as le

P = 12


def _data(b=12):
    rng = np.random.default_rng(0)
    geom = np.zeros((b, P, 6))
    for k, v in enumerate((0.3, 0.3, 0.05, 0.05, 1.0, 100.0)):
        geom[..., k] = v
    geom[0, :, 0], geom[0, :, 1] = 0.9, 0.6            # window 0 (clay): no valid horizon point
    return {"x_raw": rng.normal(size=(b, 16 * P + 2)), "geometry": geom,
            "force_n": rng.normal(1000.0, 100.0, size=(b, P, 2)),
            "truth": np.tile([5000.0, 0.5, 17000.0, 1000.0, 0.3], (b, 1)), "soil": np.arange(b) % 4,
            "relative_density_pct": np.full(b, 10.0), "episode": np.arange(b), "cut": np.zeros(b, dtype=int),
            "whole_cut": np.ones(b, dtype=bool), "samples": np.full(b, 60)}


@pytest.fixture()
def dataset(tmp_path):
    data = _data()
    assert not np.any(le.fee_window_force(data["truth"][0], data["geometry"][0])[2])
    assert np.all(le.fee_window_force(data["truth"][4], data["geometry"][4])[2])
    path = str(tmp_path / "dataset.npz")
    ds.save(path, data)
    return path


def test_a_window_without_a_valid_point_is_left_out_of_its_bin(dataset, capsys):
    assert dg.main(["--dataset", dataset, "--model", le.KINEMATIC_MODEL]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out, out
    clay = [line for line in out.splitlines() if line.startswith("clay ")][0]
    assert clay.split()[4] == "3"                                   # the bin still counts its 3 cuts
    data = _data()
    truth = dg.truth_errors(data, np.array([0, 4, 8]))
    assert np.all(np.isnan(truth[0])) and np.all(np.isfinite(truth[1:]))
    assert "%7.1f %%" % dg.mean_pct(truth, np.ones(3, dtype=bool)) in clay     # the mean of the two cuts with one


def test_a_dataset_without_the_controller_array_is_one_line_with_the_controller_model(dataset, capsys):
    assert dg.main(["--dataset", dataset]) == 2                  # default models: the controller model among them
    err = capsys.readouterr().err
    assert err.startswith("soil diagnose: ") and err.count("\n") == 1 and "no controller array" in err, err
