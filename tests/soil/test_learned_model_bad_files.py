"""A damaged learned soil model folder (weights.npz empty, truncated, or with arrays of the wrong shape) is
refused at load with one LearnedModelError line naming the problem, and the CLI exits 2 with one line."""
import shutil

import numpy as np
import pytest

from onboard.soil import learned_estimator as le


@pytest.fixture
def model(tmp_path):
    d = tmp_path / "model"
    shutil.copytree(le.CONTROLLER_MODEL, d)
    return d


def _rewrite(model, **changes):
    with np.load(model / "weights.npz") as zf:
        z = {k: zf[k] for k in zf.files}
    z.update(changes)
    np.savez(model / "weights.npz", **z)


def _refused(model, match):
    with pytest.raises(le.LearnedModelError, match=match) as info:
        le.LearnedEstimator(str(model))
    assert "\n" not in str(info.value)
    return str(info.value)


def test_the_undamaged_copy_loads(model):
    assert le.LearnedEstimator(str(model)).inputs == "controller"


def test_an_empty_weights_file_is_a_malformed_model(model):
    (model / "weights.npz").write_bytes(b"")
    _refused(model, "malformed model")


def test_a_truncated_weights_archive_is_a_malformed_model(model):
    data = (model / "weights.npz").read_bytes()
    (model / "weights.npz").write_bytes(data[:len(data) // 2])
    _refused(model, "malformed model")


# (array, how it is cut): each no longer fits the card and the other arrays
CUTS = [("bounds_hi", lambda a: a[:1]), ("x_std", lambda a: a[:-3]), ("m2_w1", lambda a: a[:, :-1]),
        ("m3_b2", lambda a: a[:-1]), ("m0_w2", lambda a: a[:-1])]


@pytest.mark.parametrize("name,cut", CUTS, ids=[name for name, _ in CUTS])
def test_an_array_that_does_not_fit_is_refused_naming_it(model, name, cut):
    """Truncated bounds, a short normalisation, a layer that does not chain (weights or bias), a head of the
    wrong size."""
    with np.load(model / "weights.npz") as zf:
        array = zf[name]
    _rewrite(model, **{name: cut(array)})
    msg = _refused(model, name)
    if name == "bounds_hi":
        assert "(1,)" in msg and "(5,)" in msg


def test_unordered_bounds_are_refused(model):
    with np.load(model / "weights.npz") as zf:
        lo, hi = zf["bounds_lo"], zf["bounds_hi"]
    _rewrite(model, bounds_lo=hi, bounds_hi=lo)
    _refused(model, "bounds_lo, bounds_hi")


@pytest.mark.parametrize("damage", ["empty", "shape"])
def test_the_cli_exits_2_with_one_line(model, damage, capsys):
    from harness.cli import main
    if damage == "empty":
        (model / "weights.npz").write_bytes(b"")
    else:
        with np.load(model / "weights.npz") as zf:
            hi = zf["bounds_hi"]
        _rewrite(model, bounds_hi=hi[:1])
    rc = main(["run", "soil-sweep", "--reduced", "--quiet", "--set", "estimator=learned",
               "--set", "learned_model=%s" % model])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error:") and "Traceback" not in err
    assert ("malformed model" if damage == "empty" else "bounds_hi") in err
