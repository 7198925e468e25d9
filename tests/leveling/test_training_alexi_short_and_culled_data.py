"""The Alexi training on data it cannot train on, and CLI settings it cannot honour: one clear line and exit 2
(or a clear ValueError) before anything is written. Before: a training set the cull empties ended in numpy's
"zero-size array to reduction operation minimum"; a terrain session with every frame culled in "cannot reshape
array of size 0"; a V1 net on one sample trained on nothing (its only sample held out) and a V2 net on one sample
skipped every batch, both exported untrained; ``--nets ,`` read the sessions and exited 0 having trained nothing;
a --seed past torch's 2^64 - 1 said "Overflow when unpacking long long"; an --out that is a file ended in a
traceback; ``--max-frames`` cut a whole-terrain grid whose row count happened to equal the frame count; test
sessions the cull empties were found only after the net was trained and exported; and validation sessions the
cull empties "selected" the first checked epoch, scored on no frame."""
import numpy as np
import pytest

from harness.training.alexi import dataset as ds
from harness.training.alexi import preprocess as pp
from harness.training.alexi import train


@pytest.fixture(scope="module")
def session_file(example_session):
    return example_session(40, 10, 3, "short_culled", 4)


def _arrays(n, teleport, crop=4):
    rng = np.random.default_rng(n)
    a = {k: rng.uniform(-0.01, 0.01, n) for k in ("dyaw_rad", "pitch_start_rad", "roll_start_rad", "dx_body_m",
                                                   "dnorth_m", "deast_m", "left_radps", "right_radps")}
    a["teleport"] = np.full(n, teleport)
    a["crop_dh_m"] = rng.uniform(-1e-3, 1e-3, (n, crop, crop))
    a["crop_centre_cell"] = np.zeros((n, 2), dtype=np.int64)
    a["time_us"] = np.arange(n, dtype=np.int64) * 10000
    return a


def test_a_training_set_the_cull_empties_is_a_clear_value_error():
    with pytest.raises(ValueError, match="cull with teleports dropped keeps none of the 6 frame"):
        ds.fit_ranges([(_arrays(6, True), {})], pp.V2_RECIPE, "speed")


def test_a_fully_culled_terrain_session_beside_a_good_one_adds_no_samples():
    good, culled = (_arrays(5, False), {}), (_arrays(3, True), {})
    kin, prev, dh = ds.terrain([good, culled], 4, [[-1.0] * 4, [1.0] * 4])
    kin1, prev1, dh1 = ds.terrain([good], 4, [[-1.0] * 4, [1.0] * 4])
    assert kin.shape == (5, 4) and prev.shape == dh.shape == (5, 16)
    assert np.array_equal(dh, dh1) and np.array_equal(prev, prev1) and np.array_equal(kin, kin1)


def test_truncation_keeps_a_grid_whose_rows_equal_the_frame_count_whole():
    a = _arrays(6, False)
    a["terrain_start_m"] = np.arange(36.0).reshape(6, 6)
    a["terrain_end_m"] = np.arange(36.0).reshape(6, 6)
    t = train.truncate(a, 2)
    assert t["terrain_start_m"].shape == (6, 6) and t["terrain_end_m"].shape == (6, 6)
    assert t["time_us"].shape == (2,) and t["crop_dh_m"].shape == (2, 4, 4)


def test_one_sample_is_refused_not_trained_on_nothing():
    pytest.importorskip("torch")
    x, y = np.zeros((1, 4)), np.zeros(1)
    with pytest.raises(ValueError, match="at least 2 training samples"):
        train.fit_v1(x, y, seed=1, epochs=2)
    with pytest.raises(ValueError, match="at least 2 samples"):
        train.fit_v2(x, y, seed=1, epochs=2)


@pytest.mark.parametrize("argv,needle", [
    (["--nets", ","], "--nets names no net"),
    (["--seed", str(2 ** 64 // 100 + 1)], "--seed must be <= 184467440737095516 "),
])
def test_cli_settings_it_cannot_honour_are_one_line(session_file, tmp_path, capsys, argv, needle):
    out = tmp_path / "m"
    code = train.main(["--train", session_file, "--test", session_file, "--out", str(out)] + argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1 and err.startswith("alexi train: "), err
    assert not out.exists()


def test_an_out_that_is_a_file_is_one_line(session_file, tmp_path, capsys):
    out = tmp_path / "m"
    out.write_text("not a folder")
    code = train.main(["--train", session_file, "--test", session_file, "--out", str(out), "--nets", "v2_speed"])
    err = capsys.readouterr().err
    assert code == 2 and "is not a folder" in err and err.count("\n") == 1, err
    assert out.read_text() == "not a folder"


def test_cli_with_one_frame_is_one_line_and_writes_nothing(session_file, tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "m"
    code = train.main(["--train", session_file, "--test", session_file, "--out", str(out), "--nets", "v1_speed",
                       "--max-frames", "1", "--v1-epochs", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "at least 2 training samples" in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("net", ["v2_speed", "terrain"])
def test_a_test_session_the_cull_empties_is_refused_before_anything_is_written(session_file, tmp_path, capsys, net):
    # before: the net trained and was exported, then the scoring ended in "zero-size array to reduction operation
    # maximum" (exit 2, a model folder left with a card that has no test metrics)
    from harness.sim.sandbox import session as sess
    arrays, meta = sess.load_npz(session_file)
    culled = str(tmp_path / "all_teleports.npz")
    sess.save_npz(culled, dict(arrays, teleport=np.ones_like(arrays["teleport"])), meta)
    out = tmp_path / "m"
    code = train.main(["--train", session_file, "--test", culled, "--out", str(out), "--nets", net, "--window", "4",
                       "--v2-epochs", "1", "--terrain-epochs", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "keeps no frame of the test sessions" in err and err.count("\n") == 1, err
    assert not out.exists()


def test_validation_sessions_the_cull_empties_are_refused_not_selected_on(session_file, tmp_path, capsys):
    # before: the V2 net was scored on no frame (R^2 0.0 every time), so the first checked epoch was "selected"
    from harness.sim.sandbox import session as sess
    arrays, meta = sess.load_npz(session_file)
    culled = str(tmp_path / "all_teleports.npz")
    sess.save_npz(culled, dict(arrays, teleport=np.ones_like(arrays["teleport"])), meta)
    out = tmp_path / "m"
    code = train.main(["--train", session_file, "--test", session_file, "--val", culled, "--out", str(out),
                       "--nets", "v2_speed", "--v2-epochs", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "validation sessions keep 0 frame(s)" in err and err.count("\n") == 1, err
    assert not out.exists()
