"""Limits of the Sandbox experiment INI (harness.sim.sandbox.config.load_experiment), each refusal one ConfigError
line and exit 2 through sandbox-datagen before anything runs:

- numbers beyond the project's magnitude rule (``MAX_MAGNITUDE``, 1e12: "a unit or typing error?") in every
  section, as the [vehicle] geometry already was through ``settings.checked`` (a [soil] modulus of 1e300 used to
  overflow the contact solve into NaN and end in an IndexError traceback from the terrain);
- a frame_dt that is not a whole number of microseconds (it was rounded silently; the format says whole);
- a substep (frame_dt / substeps) longer than 20 ms: the robot's integration is not stable at any substep
  length (1 s substeps moved it some 43 m in a frame at 0.25 m/s; 50 ms already has contact Newton failures);
  SandboxWorld refuses it too. The project's INIs (1 ms substeps) still read."""
import glob
import os

import numpy as np
import pytest

from harness.cli import main
from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI
from harness.sim.sandbox.config import load_experiment
from harness.sim.sandbox.terrain import TileTerrain
from harness.sim.sandbox.tracked_robot import MAX_SUBSTEP_US
from harness.sim.sandbox.world import SandboxWorld
from onboard.core.settings import ConfigError

from tests.leveling.test_sandbox_config import _copy_example

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBSTEP_NEEDLE = "[experiment] frame_dt / substeps is"


def _refused(tmp_path, capsys, path, needle):
    """The reader's one-line message holding ``needle``, after checking that sandbox-datagen with this INI says
    it in one line, exits 2 and writes no metrics."""
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg, msg
    out = tmp_path / "out"
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--set", "config.file=" + path, "--out", str(out)])
    err_text = capsys.readouterr().err
    assert code == 2 and err_text.count("\n") == 1 and needle in err_text, err_text
    assert not (out / "metrics.json").exists()
    return msg


@pytest.mark.parametrize("old,new,needle", [
    ("k_c = 990.0", "k_c = 1e300", "[soil] k_c is 1e+300"),
    ("k_phi = 1528430.0", "k_phi = 1e100", "[soil] k_phi is 1e+100"),
    ("frame_dt = 0.01", "frame_dt = 1e300", "[experiment] frame_dt is 1e+300"),
    ("h = 30.0", "h = -2e13", "[vehicle] h is -2e+13"),
])
def test_a_number_beyond_the_magnitude_rule_is_one_line_exit_2(tmp_path, capsys, old, new, needle):
    msg = _refused(tmp_path, capsys, _copy_example(tmp_path, {old: new}), needle)
    assert "no setting takes a magnitude above 1e+12" in msg


def test_numbers_up_to_the_rule_still_read(tmp_path):
    exp = load_experiment(_copy_example(tmp_path, {"k_c = 990.0": "k_c = 1e12", "h = 30.0": "h = -1e12"}))
    assert exp.soil["k_c"] == 1e12


def test_a_frame_dt_off_the_microsecond_grid_is_refused_not_rounded(tmp_path, capsys):
    _refused(tmp_path, capsys, _copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = 0.0100005"}),
             "[experiment] frame_dt = 0.0100005 s is not a whole number of microseconds")


@pytest.mark.parametrize("frame_dt,us", [("0.01", 10000), ("0.001", 1000), ("0.0123", 12300)])
def test_a_frame_dt_on_the_microsecond_grid_still_reads(tmp_path, frame_dt, us):
    exp = load_experiment(_copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = " + frame_dt}))
    assert exp.frame_dt_us == us


@pytest.mark.parametrize("frame_dt,substeps", [("1.0", 1), ("0.05", 1), ("0.021", 1), ("0.5", 10)])
def test_a_substep_longer_than_20_ms_is_one_line_exit_2(tmp_path, capsys, frame_dt, substeps):
    path = _copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = " + frame_dt,
                                    "substeps = 10": "substeps = %d" % substeps})
    assert "at most 20 ms" in _refused(tmp_path, capsys, path, SUBSTEP_NEEDLE)


@pytest.mark.parametrize("frame_dt,substeps,us", [("0.02", 1, 20000), ("0.2", 10, 200000), ("0.01", 10, 10000)])
def test_substeps_up_to_20_ms_read(tmp_path, frame_dt, substeps, us):
    exp = load_experiment(_copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = " + frame_dt,
                                                   "substeps = 10": "substeps = %d" % substeps}))
    assert (exp.frame_dt_us, exp.substeps) == (us, substeps)


def test_the_projects_inis_read():
    paths = [EXAMPLE_INI] + sorted(glob.glob(os.path.join(ROOT, "harness", "training", "alexi", "sessions", "*.ini")))
    assert len(paths) >= 5
    for path in paths:
        exp = load_experiment(path)
        assert exp.frame_dt_us <= MAX_SUBSTEP_US * exp.substeps, path


def test_the_world_refuses_a_long_substep():
    terrain = TileTerrain(np.full((32, 32), 0.05), 0.02)
    with pytest.raises(ValueError, match=r"frame_dt_us / substeps \(1000000 / 1\) must be at most 20000 us"):
        SandboxWorld(terrain, 0.32, 0.32, 0.0, frame_dt_us=1000000, substeps=1)
    world = SandboxWorld(terrain, 0.32, 0.32, 0.0, frame_dt_us=20000, substeps=1)
    assert world.frame_dt_us == 20000
    SandboxWorld(terrain, 0.32, 0.32, 0.0)           # the defaults: 10 ms frames of 10 substeps
