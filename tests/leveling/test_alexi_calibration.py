"""The output calibration of an Alexi net (card ``alexi.output_calibration``; harness.training.alexi.calibrate):
the least-squares fit, the CLI that writes it into a card (reproducible from the session, recorded by digest),
its use per frame by :class:`harness.sim.alexi.nets.Net` (a card without it behaves as before), the invariance
of the Pearson R^2, and bad input (malformed entry, NaN): one clear line / exit 2, the card left as it was."""
import json
import os
import shutil

import numpy as np
import pytest

from harness.config import ConfigError
from harness.sim.alexi import nets
from harness.sim.sandbox import session as sess
from harness.training.alexi import calibrate as cal
from harness.training.alexi import dataset as ds
from harness.training.alexi import evaluate as ev
from harness.training.alexi import metrics as mt

VALIDATION_SESSION = os.path.join(nets.REPO, "build", "alexi", "train_3", "sandbox_A.npz")


@pytest.fixture(scope="module")
def session_file(example_session):
    return example_session(200, 25, 5, "cal", 0)


def _models_copy(tmp_path, names=("v2_speed",)):
    root = tmp_path / "models"
    for n in names:
        shutil.copytree(nets.model_dir(n), root / n)
    return str(root)


def _strip(root, name="v2_speed"):
    path = os.path.join(root, name, "card.json")
    with open(path) as fh:
        card = json.load(fh)
    card["alexi"].pop(nets.CALIBRATION_KEY, None)
    with open(path, "w") as fh:
        json.dump(card, fh)
    return path


def test_fit_affine_recovers_a_known_map_and_rejects_bad_data():
    rng = np.random.default_rng(3)
    p = rng.uniform(-1, 1, 500)
    y = 1.25 * p - 0.05 + 0.01 * rng.standard_normal(500)
    a, b = cal.fit_affine(y, p)
    assert abs(a - 1.25) < 0.01 and abs(b + 0.05) < 0.01
    yc = a * p + b
    assert mt.r2_pearson(y, yc) == pytest.approx(mt.r2_pearson(y, p), abs=1e-12)     # affine: Pearson unchanged
    assert mt.r2_cod(y, yc) >= mt.r2_cod(y, p) - 1e-12                               # least squares
    assert mt.gain(y, yc) == pytest.approx(mt.r2_pearson(y, p), abs=1e-12)           # by construction
    for bad_y, bad_p in ((np.r_[y[:-1], np.nan], p), (y, np.zeros_like(p)), (y[:2], p[:2]), (y, -p)):
        with pytest.raises(ValueError):
            cal.fit_affine(bad_y, bad_p)


def test_cli_fit_reproduces_from_the_session_and_the_net_applies_it(session_file, tmp_path, capsys):
    root = _models_copy(tmp_path, ("v2_speed",))
    card_path = _strip(root)
    bare = nets.load("v2_speed", "int8", "litert", root)
    assert bare.calibration is None
    assert cal.main(["--net", "v2_speed", "--val", session_file, "--models", root]) == 0
    assert "a = " in capsys.readouterr().out
    with open(card_path) as fh:
        entry = json.load(fh)["alexi"][nets.CALIBRATION_KEY]
    arrays, _ = sess.load_npz(session_file)
    assert entry["fitted_on"][0]["digest_sha256"] == sess.digest(arrays)
    a, b, before, after = cal.fit_net(bare, ds.load_sessions([session_file]))
    assert (entry["a"], entry["b"]) == (a, b)                         # the fit reproduces from the session
    assert after["r2_pearson"] == pytest.approx(before["r2_pearson"], abs=1e-9)
    assert after["r2_cod"] >= before["r2_cod"] - 1e-12
    assert cal.main(["--net", "v2_speed", "--val", session_file, "--models", root]) == 0
    with open(card_path) as fh:
        again = json.load(fh)["alexi"][nets.CALIBRATION_KEY]
    assert (again["a"], again["b"]) == (a, b)                         # re-fitting ignores the stored calibration
    net = nets.load("v2_speed", "int8", "litert", root)
    x = np.random.default_rng(1).uniform(-8, 8, (20, 4)) * [1, 1, 0.01, 0.01]
    raw = net.predict_normalised(net.normalise(x))
    assert np.allclose(net.predict(x), net.denormalise(a * raw + b))
    assert np.array_equal(net.predict(x, calibrated=False), bare.predict(x))
    # alexi-eval's raw figures: with and without; the preprocessed Pearson R^2 is unchanged by the map
    scores, _ = ev.score_net(net, ds.load_sessions([session_file])[0])
    assert scores["raw_calibrated"]["r2_pearson"] == pytest.approx(scores["raw"]["r2_pearson"], abs=1e-9)
    assert scores["preprocessed_calibrated"]["r2_pearson"] == pytest.approx(
        scores["preprocessed"]["r2_pearson"], abs=1e-9)
    assert scores["raw_calibrated"]["gain"] == pytest.approx(after["gain"])


def test_committed_v2_speed_calibration_was_fitted_on_the_validation_session():
    net = nets.load("v2_speed", "int8", "litert")
    entry = net.card["alexi"][nets.CALIBRATION_KEY]
    val = net.card["training"]["data"]["validation"]
    test = net.card["training"]["data"]["test"]
    assert [d["digest_sha256"] for d in entry["fitted_on"]] == [d["digest_sha256"] for d in val]
    assert not {d["digest_sha256"] for d in entry["fitted_on"]} & {d["digest_sha256"] for d in test}
    assert 0.95 <= entry["validation_after"]["gain"] <= 1.05                     # the adoption rule
    assert entry["validation_after"]["r2_cod"] >= entry["validation_before"]["r2_cod"]
    if os.path.isfile(VALIDATION_SESSION):                                        # made by `make train-alexi`
        a, b, _, _ = cal.fit_net(nets.load("v2_speed", "int8", "litert", calibrated=False),
                                 ds.load_sessions([VALIDATION_SESSION]))
        assert (a, b) == pytest.approx((entry["a"], entry["b"]), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", ("v2_dyaw", "v1_speed", "v1_dyaw", "v2_dnorth", "v2_deast", "terrain"))
def test_a_card_without_calibration_behaves_as_before(name):
    net = nets.load(name, "int8", "pure")
    assert nets.CALIBRATION_KEY not in net.card["alexi"] and net.calibration is None
    x = np.random.default_rng(2).uniform(-1, 1, (6, net.n_in)) * 0.1
    assert np.array_equal(net.predict(x), net.predict(x, calibrated=False))
    assert np.array_equal(net.predict_normalised(x, calibrated=True), net.predict_normalised(x))


@pytest.mark.parametrize("entry", [{"a": float("nan"), "b": 0.0}, {"a": "big", "b": 0.0}, {"a": 1.1},
                                   {"a": -1.0, "b": 0.0}, {"a": [1.0, 2.0], "b": 0.0}, [1.0, 0.0]])
def test_malformed_calibration_is_one_clear_error(entry, tmp_path, capsys, session_file):
    from harness.scenarios.leveling import alexi_eval
    root = _models_copy(tmp_path, ev.KIN_NETS + ("terrain",))
    path = _strip(root)
    with open(path) as fh:
        card = json.load(fh)
    card["alexi"][nets.CALIBRATION_KEY] = entry
    with open(path, "w") as fh:
        json.dump(card, fh, allow_nan=True)
    before = open(path).read()
    with pytest.raises(nets.CalibrationError, match="output_calibration"):
        nets.load("v2_speed", "int8", "pure", root)
    assert nets.load("v2_speed", "int8", "pure", root, calibrated=False).calibration is None
    with pytest.raises(ConfigError, match="output_calibration"):
        alexi_eval.check_settings(dict(alexi_eval.DEFAULTS, models={"dir": root}, data={"dir": None}))
    assert cal.main(["--net", "v2_speed", "--val", session_file, "--models", root]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "output_calibration" in err
    assert open(path).read() == before


def test_cli_bad_input_is_one_line_exit_2_and_keeps_the_card(session_file, tmp_path, capsys):
    root = _models_copy(tmp_path, ("v2_speed",))
    path = os.path.join(root, "v2_speed", "card.json")
    before = open(path).read()
    arrays, meta = sess.load_npz(session_file)
    arrays = dict(arrays)
    left = np.array(arrays["left_radps"], dtype=np.float64)
    left[7] = np.nan
    arrays["left_radps"] = left
    nan_file = str(tmp_path / "nan.npz")
    sess.save_npz(nan_file, arrays, meta)
    for argv in (["--net", "v2_speed", "--val", nan_file], ["--net", "v2_speed", "--val", str(tmp_path / "no.npz")],
                 ["--net", "v3_speed", "--val", session_file]):
        assert cal.main(argv + ["--models", root]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("alexi calibrate:")
    assert open(path).read() == before


def test_v2_against_v1_is_reported_on_the_raw_targets_beside_the_preprocessed_acceptance():
    """On each version's preprocessed targets V1 may lead (the mounds PNG) while on the shared raw frames V2
    does: both are in the metrics, the acceptance reads the preprocessed ones."""
    from harness.scenarios.leveling import alexi_eval
    from harness.training.alexi import evaluate as ev

    def nets(prep, raw):
        out = {n: {"preprocessed": {"r2_pearson": 0.5}, "raw": {"r2_pearson": 0.5}} for n in ev.KIN_NETS}
        for n in ("v1_speed", "v2_speed", "v1_dyaw", "v2_dyaw"):
            out[n] = {"preprocessed": {"r2_pearson": prep[n]}, "raw": {"r2_pearson": raw[n]}}
        return out
    prep = {"v1_speed": 0.9616, "v2_speed": 0.9594, "v1_dyaw": 0.887, "v2_dyaw": 0.951}
    raw = {"v1_speed": 0.967, "v2_speed": 0.981, "v1_dyaw": 0.909, "v2_dyaw": 0.962}
    results = {"B": {"nets": nets(prep, raw)}}
    checks = alexi_eval.acceptance(results, 0.05)
    assert checks == {"v2_beats_v1_speed_B": False, "v2_beats_v1_dyaw_B": True}
    assert alexi_eval.v2_against_v1_raw(results) == {"v2_beats_v1_speed_B_raw": True, "v2_beats_v1_dyaw_B_raw": True}
