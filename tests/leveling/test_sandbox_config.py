"""The Sandbox experiment INI (thesis fig. 5.3 keys): the example reads; every bad file is one line and exit 2
through ``python -m harness run sandbox-datagen --set config.file=PATH``."""
import math
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from harness.cli import main
from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI
from harness.sim.sandbox.config import load_experiment, read_ini
from onboard.core.settings import ConfigError

EXAMPLE_DIR = os.path.dirname(EXAMPLE_INI)


def _copy_example(tmp_path, replace=None, append=""):
    """The example INI and its PNG in ``tmp_path``, with ``replace`` {old line: new line} and ``append``."""
    shutil.copy(os.path.join(EXAMPLE_DIR, "terrain_a.png"), tmp_path / "terrain_a.png")
    text = open(EXAMPLE_INI).read()
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "exp.ini"
    path.write_text(text + append)
    return str(path)


def test_the_example_reads_as_the_thesis_lays_it_out():
    exp = load_experiment(EXAMPLE_INI)
    ini = read_ini(EXAMPLE_INI)
    assert set(ini) >= {"vehicle", "map", "experiment"}
    assert exp.heights_m.shape == (128, 128) and math.isclose(exp.heights_m.max(), ini["map"]["scale"])
    assert exp.cell_m == ini["map"]["xy_scale"]
    side = 128 * exp.cell_m
    assert math.isclose(exp.start[0], side / 2 + ini["vehicle"]["x"])     # x north, z east of the centre
    assert math.isclose(exp.start[1], side / 2 + ini["vehicle"]["z"])
    assert math.isclose(exp.start[2], math.radians(ini["vehicle"]["h"]))
    assert exp.soil["k_c"] == 990.0 and exp.soil["phi_deg"] == 28.0 and exp.frame_dt_us == 10000


def test_the_image_rows_run_north_and_scale_is_the_height_of_white(tmp_path):
    img = np.zeros((40, 48), dtype=np.uint8)
    img[0, :] = 255                                       # the top row of the image: the north edge
    Image.fromarray(img, mode="L").save(tmp_path / "north.png")
    path = _copy_example(tmp_path, {"filename = terrain_a.png": "filename = north.png",
                                    "x = -0.5": "x = 0.0", "z = -0.5": "z = 0.0"})
    exp = load_experiment(path)
    assert exp.heights_m.shape == (40, 48)
    assert np.allclose(exp.heights_m[-1], 0.06) and np.allclose(exp.heights_m[:-1], 0.0)


@pytest.mark.parametrize("replace,append,needle", [
    ({}, "\n[vehicle2]\nx = 1\n", "unknown section [vehicle2]"),
    ({"scale = 0.06": "scale = 0.06\nsclae = 2"}, "", "unknown key 'sclae' in [map]"),
    ({"scale = 0.06": "scale = -1"}, "", "[map] scale must be > 0"),
    ({"xy_scale = 0.02": "xy_scale = nan"}, "", "[map] xy_scale must be finite"),
    ({"h = 30.0": "h = north"}, "", "[vehicle] h must be a number"),
    ({"tracks = true": "tracks = maybe"}, "", "[vehicle] tracks must be true or false"),
    ({"tracks = true": "tracks = false"}, "", "only tracked vehicles"),
    ({"model = scm": "model = particle"}, "", "only the SCM-like"),
    ({"algorithm = datagen": "algorithm = random"}, "", "algorithm 'random' is not known"),
    ({"filename = terrain_a.png": "filename = missing.png"}, "", "missing.png not found"),
    ({"filename = terrain_a.png\n": ""}, "", "[map] filename is missing"),
    ({"substeps = 10": "substeps = 0"}, "", "[experiment] substeps must be a whole number >= 1"),
    ({"substeps = 10": "substeps = 3"}, "", "whole multiple of substeps"),
    ({"xy_scale = 0.02": "xy_scale = 0.001"}, "", "too small for the robot"),
    ({"[vehicle]": "[vehicle]\ntrack_width_m = 0.5"}, "", "track_width_m"),
    ({"[map]": "[map\n"}, "", "not a valid INI"),
])
def test_a_bad_experiment_file_is_one_line_and_exit_2(tmp_path, capsys, replace, append, needle):
    path = _copy_example(tmp_path, replace, append)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert needle in str(err.value) and "\n" not in str(err.value)
    out = tmp_path / "out"
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--set", "config.file=" + path,
                 "--out", str(out)])
    msg = capsys.readouterr().err
    assert code == 2 and msg.count("\n") == 1 and needle in msg, msg
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize("content,needle", [(b"", "is empty"), (b"not a png", "not a readable PNG")])
def test_a_broken_heightmap_is_one_line(tmp_path, content, needle):
    path = _copy_example(tmp_path)
    (tmp_path / "terrain_a.png").write_bytes(content)
    with pytest.raises(ConfigError, match=needle):
        load_experiment(path)


def test_a_missing_experiment_file_and_a_bad_terrain_b_are_one_line(tmp_path, capsys):
    for setting, needle in (("config.file=" + str(tmp_path / "nope.ini"), "nope.ini not found"),
                            ("terrain_b.file=" + str(tmp_path / "b.png"), "b.png not found")):
        code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--set", setting,
                     "--out", str(tmp_path / "out")])
        msg = capsys.readouterr().err
        assert code == 2 and msg.count("\n") == 1 and needle in msg, msg


def test_a_terrain_b_too_small_for_the_robot_is_one_line(tmp_path, capsys):
    Image.fromarray(np.zeros((20, 20), dtype=np.uint8), mode="L").save(tmp_path / "tiny.png")
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet",
                 "--set", "terrain_b.file=" + str(tmp_path / "tiny.png"), "--out", str(tmp_path / "out")])
    msg = capsys.readouterr().err
    assert code == 2 and msg.count("\n") == 1 and "too small for the robot" in msg, msg
