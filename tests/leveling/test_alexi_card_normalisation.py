"""A network card whose normalisation is unusable (a std of 0 or NaN, a NaN mean) is one ModelError line naming
card.json for both kinds, and exit 2 from alexi-sim, never NaN states or a traceback from deep in the
simulator (the float kind read the card without the checks the int8 loader makes, and neither checked the
means)."""
import json
import os
import shutil

import pytest

from harness.cli import main
from harness.scenarios.leveling import alexi_eval
from harness.sim.alexi import nets

# case -> (side, key, index, value)
CASES = {"input_std_zero": ("inputs", "std", 0, 0.0), "output_std_nan": ("outputs", "std", 0, float("nan")),
         "input_mean_nan": ("inputs", "mean", 2, float("nan")), "output_mean_inf": ("outputs", "mean", 0, float("inf"))}


def _damaged_models(tmp_path, case):
    root = tmp_path / "models"
    for n in alexi_eval.ev.KIN_NETS + ("terrain",):
        shutil.copytree(nets.model_dir(n), root / n)
    side, key, i, value = CASES[case]
    path = root / "v2_speed" / "card.json"
    card = json.loads(path.read_text())
    card[side][0]["normalization"][key][i] = value
    path.write_text(json.dumps(card))
    return str(root), str(path)


@pytest.mark.parametrize("kind", ["float", "int8"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unusable_normalisation_is_one_line(tmp_path, case, kind):
    root, card = _damaged_models(tmp_path, case)
    with pytest.raises(nets.ModelError) as err:
        nets.load("v2_speed", kind, "pure", root)
    msg = str(err.value)
    # the int8 loader named model.tflite for a bad std (already one line); card.json now, first
    assert os.path.dirname(card) in msg and "normalization" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("case", ["output_std_nan", "input_mean_nan"])
def test_alexi_sim_with_an_unusable_normalisation_exits_2(tmp_path, capsys, case):
    root, card = _damaged_models(tmp_path, case)
    out = tmp_path / "out"
    code = main(["run", "alexi-sim", "--reduced", "--quiet", "--out", str(out), "--set", "models.dir=" + root,
                 "--set", "models.kind=float"])
    msg = capsys.readouterr().err
    assert code == 2 and msg.count("\n") == 1 and os.path.dirname(card) in msg, msg
    assert not (out / "metrics.json").exists()


def test_the_committed_cards_pass_the_checks():
    for name in alexi_eval.ev.KIN_NETS + ("terrain",):
        for kind in ("float", "int8"):
            assert nets.load(name, kind, "pure").kind == kind
    assert os.path.isdir(nets.MODEL_ROOT)
