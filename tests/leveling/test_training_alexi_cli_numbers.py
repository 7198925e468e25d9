"""The Alexi training CLI refuses out-of-range numbers with one line and exit 2 before it reads or trains
anything. Before, ``--v2-epochs 0`` ended in a traceback after the sessions were read (no training loss to
report: IndexError), ``--v1-epochs 0`` likewise (no epoch kept: TypeError from ``load_state_dict(None)``),
``--threads 0`` a RuntimeError from torch,
``--batch 1`` trained nothing (every batch skipped for the batch norm) and wrote the untrained nets,
``--max-frames -5`` silently dropped each session's last 5 frames (``v[:-5]``), a negative learning rate trained
uphill. Runs without torch: nothing is trained."""
import pytest


@pytest.fixture(scope="module")
def session_file(example_session):
    return example_session(40, 10, 3, "cli_numbers", 0)


@pytest.mark.parametrize("argv,needle", [
    (["--v1-epochs", "0"], "--v1-epochs must be >= 1, got 0"),
    (["--v2-epochs", "0", "--nets", "v2_speed"], "--v2-epochs must be >= 1, got 0"),
    (["--terrain-epochs", "-1"], "--terrain-epochs must be >= 1, got -1"),
    (["--batch", "1"], "--batch must be >= 2, got 1"),
    (["--threads", "0"], "--threads must be >= 1, got 0"),
    (["--terrain-width", "0"], "--terrain-width must be >= 1, got 0"),
    (["--max-frames", "-5"], "--max-frames must be >= 0, got -5"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--v2-lr", "0"], "--v2-lr must be a finite number > 0"),
    (["--v2-lr", "nan"], "--v2-lr must be a finite number > 0"),
    (["--terrain-lr", "-0.001"], "--terrain-lr must be a finite number > 0"),
])
def test_training_cli_refuses_out_of_range_numbers(session_file, tmp_path, capsys, monkeypatch, argv, needle):
    from harness.training.alexi import train

    def no_training(*args, **kwargs):
        raise AssertionError("trained despite a bad setting")

    monkeypatch.setattr(train, "train_kinematic", no_training)
    monkeypatch.setattr(train, "train_terrain", no_training)
    out = tmp_path / "m"
    code = train.main(["--train", session_file, "--test", session_file, "--out", str(out)] + argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and err.count("\n") == 1 and err.startswith("alexi train: "), err
    assert not out.exists()
