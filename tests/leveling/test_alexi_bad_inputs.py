"""Bad user files of the Alexi tools give one clear line and exit 2, never a traceback: a damaged session file
(``data.dir``'s sandbox_A.npz, calibrate's ``--val``), a damaged network folder (``models.dir``: card.json,
model.tflite, float_layers.npz) in alexi-eval, alexi-sim and calibrate, and out-of-range experiment INI values
(``[map] scale``, ``erosion_iterations``) in sandbox-datagen."""
import json
import os
import shutil
import zipfile

import numpy as np
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.scenarios.leveling import alexi_eval
from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI
from harness.sim.alexi import nets
from harness.sim.sandbox import session as sess
from harness.sim.sandbox.config import load_experiment
from harness.training.alexi import calibrate as cal


@pytest.fixture(scope="module")
def good_session(example_session):
    return example_session(40, 10, 3, "bad_inputs", 8)


def _arrays(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _damaged(good, folder, case):
    """``folder/sandbox_A.npz`` (and a good sandbox_B.npz) holding the damage ``case``."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "sandbox_A.npz")
    shutil.copy(good, os.path.join(folder, "sandbox_B.npz"))
    raw = open(good, "rb").read()
    a = _arrays(good)
    if case == "empty":
        open(path, "wb").close()
        return path
    if case == "random":
        open(path, "wb").write(np.random.default_rng(0).bytes(1000))
        return path
    if case == "truncated":
        open(path, "wb").write(raw[:len(raw) // 2])
        return path
    if case == "no_meta":
        a.pop("meta_json")
    elif case == "bad_meta":
        a["meta_json"] = np.array("{not json")
    elif case == "meta_list":
        a["meta_json"] = np.array("[1, 2]")
    elif case == "missing_key":
        a.pop("dx_body_m")
    elif case == "zero_frames":
        a = {k: (v[:0] if k in sess.TABLE or k.startswith("crop_") else v) for k, v in a.items()}
    elif case == "strings":
        a["north_m"] = a["north_m"].astype(str)
    elif case == "objects":
        a["block"] = a["block"].astype(object)
    elif case == "nan":
        a["north_m"] = np.full_like(a["north_m"], np.nan)
    elif case == "short":
        a["time_us"] = a["time_us"][:3]
    np.savez_compressed(path, **a)
    return path


SESSION_CASES = {"empty": "empty file", "random": "not an .npz", "truncated": "not an .npz",
                 "no_meta": "no meta_json", "bad_meta": "meta_json is not valid JSON",
                 "meta_list": "meta_json must be a JSON object", "missing_key": "missing array dx_body_m",
                 "zero_frames": "no frames", "strings": "array north_m is not numeric",
                 "objects": "array block is not numeric", "nan": "array north_m holds 40 non-finite",
                 "short": "expected 3 frames"}


def _one_line(msg, *needles):
    assert msg.count("\n") == 1 and "Traceback" not in msg, msg
    for n in needles:
        assert n in msg, msg


@pytest.mark.parametrize("case", sorted(SESSION_CASES))
def test_a_damaged_session_file_is_one_clear_error(good_session, tmp_path, case):
    path = _damaged(good_session, str(tmp_path / case), case)
    with pytest.raises(sess.SessionError) as err:
        sess.load_npz(path)
    msg = str(err.value)
    assert path in msg and SESSION_CASES[case] in msg and "\n" not in msg, msg


def test_a_good_session_still_loads(good_session):
    arrays, meta = sess.load_npz(good_session)
    assert arrays["time_us"].size == 40 and arrays["crop_dh_m"].shape == (40, 8, 8) and meta["terrain"] == "A"


@pytest.mark.parametrize("case", ["empty", "truncated", "missing_key", "zero_frames", "strings", "objects", "nan"])
def test_alexi_eval_and_calibrate_with_a_damaged_session_exit_2(good_session, tmp_path, capsys, case):
    folder = str(tmp_path / "data")
    path = _damaged(good_session, folder, case)
    out = tmp_path / "out"
    code = main(["run", "alexi-eval", "--reduced", "--quiet", "--out", str(out), "--set", "data.dir=" + folder])
    msg = capsys.readouterr().err
    assert code == 2, msg
    _one_line(msg, path, SESSION_CASES[case])
    assert not (out / "metrics.json").exists()
    code = cal.main(["--net", "v2_speed", "--val", path, "--dry-run"])
    msg = capsys.readouterr().err
    assert code == 2, msg
    _one_line(msg, "alexi calibrate: ", path, SESSION_CASES[case])


def _models_copy(tmp_path):
    root = tmp_path / "models"
    for n in alexi_eval.ev.KIN_NETS + ("terrain",):
        shutil.copytree(nets.model_dir(n), root / n)
    return str(root)


def _damage_models(root, case):
    d = os.path.join(root, "v2_speed")
    if case == "tflite_random":
        open(os.path.join(d, "model.tflite"), "wb").write(np.random.default_rng(1).bytes(2000))
    elif case == "tflite_empty":
        open(os.path.join(d, "model.tflite"), "wb").close()
    elif case == "tflite_missing":
        os.remove(os.path.join(d, "model.tflite"))
    elif case == "card_list":
        open(os.path.join(d, "card.json"), "w").write("[1, 2]")
    elif case == "card_no_inputs":
        card = json.load(open(os.path.join(d, "card.json")))
        card.pop("inputs")
        json.dump(card, open(os.path.join(d, "card.json"), "w"))
    elif case == "float_random":
        open(os.path.join(d, nets.FLOAT_FILE), "wb").write(np.random.default_rng(1).bytes(2000))
    elif case == "float_missing":
        os.remove(os.path.join(d, nets.FLOAT_FILE))
    elif case == "float_nan":
        z = _arrays(os.path.join(d, nets.FLOAT_FILE))
        z["w0"][0, 0] = np.nan
        np.savez(os.path.join(d, nets.FLOAT_FILE), **z)
    elif case == "float_shape":
        z = _arrays(os.path.join(d, nets.FLOAT_FILE))
        z["w0"] = z["w0"][:, :3]
        np.savez(os.path.join(d, nets.FLOAT_FILE), **z)


# case -> (models.kind, the file named, what the line says)
MODEL_CASES = {"tflite_random": ("int8", "model.tflite", "the card says"),
               "tflite_empty": ("int8", "model.tflite", "has 0 bytes"),
               "tflite_missing": ("int8", "model.tflite", "missing"),
               "card_list": ("int8", "card.json", "must be a JSON object"),
               "card_no_inputs": ("int8", "card.json", "malformed card (no 'inputs')"),
               "float_random": ("float", nets.FLOAT_FILE, "not an .npz"),
               "float_missing": ("float", nets.FLOAT_FILE, "missing"),
               "float_nan": ("float", nets.FLOAT_FILE, "non-finite weights"),
               "float_shape": ("float", nets.FLOAT_FILE, "layer 0 has w (7, 3)")}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_a_damaged_model_folder_is_one_line_exit_2(good_session, tmp_path, capsys, case):
    kind, fname, needle = MODEL_CASES[case]
    root = _models_copy(tmp_path)
    _damage_models(root, case)
    named = os.path.join(root, "v2_speed", fname)
    with pytest.raises(nets.ModelError) as err:
        nets.load("v2_speed", kind, "litert", root)
    assert named in str(err.value) and needle in str(err.value) and "\n" not in str(err.value)
    data = str(tmp_path / "data")
    os.makedirs(data)
    for t in "AB":
        shutil.copy(good_session, os.path.join(data, "sandbox_%s.npz" % t))
    for scenario, extra in (("alexi-eval", ["--set", "data.dir=" + data]), ("alexi-sim", [])):
        out = tmp_path / ("out-" + scenario)
        code = main(["run", scenario, "--reduced", "--quiet", "--out", str(out), "--set", "models.dir=" + root,
                     "--set", "models.kind=" + kind] + extra)
        msg = capsys.readouterr().err
        assert code == 2, (scenario, msg)
        _one_line(msg, named, needle)
        assert not (out / "metrics.json").exists()
    card_before = open(os.path.join(root, "v2_speed", "card.json")).read()
    code = cal.main(["--net", "v2_speed", "--val", good_session, "--models", root, "--kind", kind])
    msg = capsys.readouterr().err
    assert code == 2, msg
    _one_line(msg, "alexi calibrate: ", named, needle)
    assert open(os.path.join(root, "v2_speed", "card.json")).read() == card_before


def test_the_committed_models_still_load_both_kinds():
    for kind in ("int8", "float"):
        for name in alexi_eval.ev.KIN_NETS + ("terrain",):
            net = nets.load(name, kind, "pure")
            assert net.kind == kind


@pytest.mark.parametrize("old,new,needle", [
    ("scale = 0.06", "scale = 1e300", "[map] scale must be <= 10"),
    ("erosion_iterations = 2", "erosion_iterations = 100000000", "[experiment] erosion_iterations must be a whole "
                                                                 "number <= 100"),
])
def test_huge_ini_values_are_one_line_exit_2(tmp_path, capsys, old, new, needle):
    shutil.copy(os.path.join(os.path.dirname(EXAMPLE_INI), "terrain_a.png"), tmp_path / "terrain_a.png")
    text = open(EXAMPLE_INI).read()
    assert old + "\n" in text
    path = tmp_path / "exp.ini"
    path.write_text(text.replace(old + "\n", new + "\n"))
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load_experiment(str(path))
    out = tmp_path / "out"
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--out", str(out), "--set",
                 "config.file=%s" % path, "--set", "frames=8", '--set=terrains=["A"]', "--set", "crop.cells=0"])
    msg = capsys.readouterr().err
    assert code == 2, msg
    _one_line(msg, needle)
    assert not (out / "metrics.json").exists()
