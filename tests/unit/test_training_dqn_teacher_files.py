"""dqn_teacher.load_float_reference closes float_weights.npz before it returns (it left the archive and its file
handle open until the garbage collector found them)."""
import numpy as np

from harness.training import dqn_teacher


def test_load_float_reference_closes_the_file(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    arrays = {"mean": rng.normal(size=7), "std": rng.uniform(0.5, 2.0, 7)}
    for i, (n_in, n_out) in enumerate([(7, 5), (5, 9)]):
        arrays["W%d" % i] = rng.normal(size=(n_out, n_in)).astype(np.float32)
        arrays["b%d" % i] = rng.normal(size=n_out).astype(np.float32)
    np.savez(tmp_path / "float_weights.npz", **arrays)
    opened = []
    real_load = np.load

    def recording_load(*args, **kwargs):
        opened.append(real_load(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(dqn_teacher.np, "load", recording_load)
    layers, mean, std = dqn_teacher.load_float_reference(str(tmp_path))
    assert len(opened) == 1 and opened[0].zip is None and opened[0].fid is None      # closed
    assert [a for _, _, a in layers] == ["RELU", "NONE"]
    np.testing.assert_array_equal(layers[1][0], arrays["W1"].astype(np.float64))
    np.testing.assert_array_equal(mean, arrays["mean"])
    np.testing.assert_array_equal(std, arrays["std"])
