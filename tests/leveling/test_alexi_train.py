"""A reduced Sandbox datagen + Alexi training smoke run (torch): the loss decreases, the folded network equals
torch, the int8 export loads through the onboard backend and stays within its quantisation bound of torch, and
the training CLI writes complete model folders; bad CLI input is one line, exit 2."""
import json

import numpy as np
import pytest

from harness.training.alexi import dataset as ds
from harness.training.alexi import preprocess as pp

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def session_file(example_session):
    return example_session(240, 30, 4, "smoke", 8)


def test_v2_training_reduces_the_loss_and_exports_within_the_quantisation_bound(session_file, tmp_path):
    from harness.sim.alexi.nets import Net
    from harness.training.alexi import train
    from harness.training.alexi.export import export
    from harness.training.alexi.models import fold
    from harness.training.quantize import mlp_forward
    sessions = ds.load_sessions([session_file])
    recipe = dict(pp.V2_RECIPE, window=20)
    ranges = ds.fit_ranges(sessions, recipe, "speed")
    x, y = ds.kinematic(sessions, recipe, "speed", ranges)
    net, hist = train.fit_v2(x, y, seed=3, epochs=6, lr=0.05)
    assert hist["train_mse"][-1] < 0.8 * hist["train_mse"][0]
    layers = fold(net)
    with torch.no_grad():
        t = net(torch.tensor(x, dtype=torch.float32)).numpy()
    assert np.allclose(mlp_forward(layers, x)[:, 0], t, atol=1e-5)          # batch norm folded exactly
    export(str(tmp_path / "m"), "smoke", "smoke", layers, x, ([0.0] * 4, [1.0] * 4), ([0.0], [1.0]),
           [{"name": n, "unit": u, "meaning": n} for n, u in zip(ds.INPUTS, ds.INPUT_UNITS)],
           {"unit": "m/frame", "meaning": "v"}, {"recipe": recipe, "ranges": ranges, "target": "speed"}, {},
           input_range=(-1.25, 1.25))
    q = Net(str(tmp_path / "m"), "int8", "pure").predict_normalised(x[:40])[:, 0]
    # 14 layers whose outputs are quantised at 1/128 (TANH) and 1/255 of their range
    assert np.max(np.abs(q - t[:40])) <= 0.1 and np.mean(np.abs(q - t[:40])) <= 0.03


def test_training_cli_writes_model_folders(session_file, tmp_path, capsys):
    from harness.training.alexi import train
    out = tmp_path / "models"
    code = train.main(["--train", session_file, "--test", session_file, "--val", session_file, "--out", str(out),
                       "--nets", "v1_dyaw,v2_dyaw,terrain", "--v1-epochs", "30", "--v2-epochs", "2",
                       "--terrain-epochs", "2", "--window", "6", "--terrain-width", "8"])
    assert code == 0, capsys.readouterr().err
    for name in ("v1_dyaw", "v2_dyaw", "terrain"):
        card = json.loads((out / name / "card.json").read_text())
        assert (out / name / "model.tflite").stat().st_size == card["size_bytes"]
        assert card["alexi"]["runtime_kind"] in ("int8", "float")
        assert (out / name / "float_layers.npz").exists()
    assert json.loads((out / "terrain" / "card.json").read_text())["alexi"]["window_cells"] == 6
    v2 = json.loads((out / "v2_dyaw" / "card.json").read_text())
    assert v2["training"]["select_on"].startswith("validation") and v2["training"]["best_epoch"] in (1, 2)
    assert v2["training"]["select"] == "prep_r2"                     # the default selection, recorded


def test_raw_cod_selection_is_recorded_and_keeps_the_best_raw_per_frame_epoch(session_file, tmp_path, capsys):
    """--select raw_cod: the card records it, every check's prep R^2, raw COD and raw gain, and the kept net is
    the one whose raw per-frame coefficient of determination on the validation session (alexi-eval's raw mode)
    is the curve's best."""
    from harness.training.alexi import evaluate as ev
    from harness.training.alexi import metrics as mt
    from harness.training.alexi import train
    from harness.training.quantize import mlp_forward
    from harness.sim.alexi.nets import load_float_layers
    out = tmp_path / "models"
    code = train.main(["--train", session_file, "--test", session_file, "--val", session_file, "--out", str(out),
                       "--nets", "v2_speed", "--v2-epochs", "4", "--val-every", "1", "--select", "raw_cod",
                       "--v2-lr", "0.05"])
    assert code == 0, capsys.readouterr().err
    card = json.loads((out / "v2_speed" / "card.json").read_text())
    t = card["training"]
    assert t["select"] == "raw_cod" and t["select_on"].startswith("validation sessions (raw_cod")
    table = t["validation_scores"]
    assert [row[0] for row in table] == [1, 2, 3, 4]
    assert t["validation_r2"] == [[row[0], row[2]] for row in table]    # the selected curve is the raw COD
    best = max(table, key=lambda row: row[2])
    assert t["best_epoch"] == best[0] and t["best_validation_r2"] == best[2]
    x, y = ev.raw_kinematic(ds.load_sessions([session_file]), "speed", card["alexi"]["ranges"])
    p = mlp_forward(load_float_layers(str(out / "v2_speed")), x)[:, 0]
    assert mt.r2_cod(y, p) == pytest.approx(best[2], abs=1e-5) and mt.gain(y, p) == pytest.approx(best[3], abs=1e-4)


def test_v2_keeps_the_epoch_best_on_the_validation_session(session_file):
    """Model selection on a validation session: the net returned is the one of the best validation R^2 on the
    curve (measured every ``val_every`` epochs and at the last), not the last epoch's."""
    from harness.training.alexi import metrics as mt
    from harness.training.alexi import train
    from harness.training.quantize import mlp_forward
    from harness.training.alexi.models import fold
    sessions = ds.load_sessions([session_file])
    recipe = dict(pp.V2_RECIPE, window=20)
    ranges = ds.fit_ranges(sessions, recipe, "dyaw")
    x, y = ds.kinematic(sessions, recipe, "dyaw", ranges)
    val = (x[120:], y[120:])
    net, hist = train.fit_v2(x[:120], y[:120], seed=5, epochs=7, lr=0.05, val=val, val_every=3)
    epochs = [e for e, _ in hist["validation_r2"]]
    assert epochs == [3, 6, 7]
    best_epoch, best_r2 = max(hist["validation_r2"], key=lambda er: er[1])
    assert hist["best_epoch"] == best_epoch and hist["best_validation_r2"] == best_r2
    with torch.no_grad():
        kept = net(torch.tensor(val[0], dtype=torch.float32)).numpy()
    assert mt.r2_pearson(val[1], kept) == pytest.approx(best_r2, abs=1e-9)
    assert np.allclose(mlp_forward(fold(net), val[0])[:, 0], kept, atol=1e-5)


def test_tilt_shuffle_moves_only_the_tilt_columns_of_the_chosen_share():
    from harness.training.alexi.train import tilt_shuffled
    x = np.column_stack([np.arange(1000.0), -np.arange(1000.0), np.arange(1000.0) + 0.5, np.arange(1000.0) + 0.25])
    assert np.array_equal(tilt_shuffled(x, 0.0, 1), x)
    a = tilt_shuffled(x, 0.5, 1)
    assert np.array_equal(a, tilt_shuffled(x, 0.5, 1)) and not np.array_equal(a, tilt_shuffled(x, 0.5, 2))
    assert np.array_equal(a[:, :2], x[:, :2])                        # wheel speeds untouched
    moved = a[:, 2] != x[:, 2]
    assert 0.4 < moved.mean() < 0.6
    assert np.array_equal(a[:, 3] - a[:, 2], np.full(1000, -0.25))  # pitch and roll move together, from one row
    assert set(a[:, 2]) <= set(x[:, 2])


@pytest.mark.parametrize("argv,needle", [
    (["--nets", "v9_speed"], "unknown nets v9_speed"),
    (["--window", "5"], "--window must be an even number"),
    (["--train", "/nonexistent.npz"], "cannot read a session"),
    (["--val", "/nonexistent.npz"], "cannot read a session"),
    (["--val-every", "0"], "--val-every must be >= 1"),
    (["--select", "raw_r2"], "--select must be one of prep_r2, raw_cod"),
    (["--tilt-shuffle", "1.5"], "--tilt-shuffle must be a share in [0, 1]"),
])
def test_training_cli_refuses_bad_input(session_file, tmp_path, capsys, argv, needle):
    from harness.training.alexi import train
    base = ["--train", session_file, "--test", session_file, "--out", str(tmp_path / "m")]
    code = train.main(base + argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1
    assert not (tmp_path / "m").exists()
