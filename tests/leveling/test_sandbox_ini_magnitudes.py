"""Numbers of the Sandbox experiment INI beyond the project's magnitude rule (``MAX_MAGNITUDE``, 1e12: "a unit or
typing error?") are one ConfigError line and exit 2 in every section, as the [vehicle] geometry already was
through ``settings.checked``: a [soil] modulus of 1e300 used to overflow the contact solve into NaN and end in an
IndexError traceback from the terrain."""
import pytest

from harness.cli import main
from harness.sim.sandbox.config import load_experiment
from onboard.core.settings import ConfigError

from tests.leveling.test_sandbox_config import _copy_example


@pytest.mark.parametrize("old,new,needle", [
    ("k_c = 990.0", "k_c = 1e300", "[soil] k_c is 1e+300"),
    ("k_phi = 1528430.0", "k_phi = 1e100", "[soil] k_phi is 1e+100"),
    ("frame_dt = 0.01", "frame_dt = 1e300", "[experiment] frame_dt is 1e+300"),
    ("h = 30.0", "h = -2e13", "[vehicle] h is -2e+13"),
])
def test_a_number_beyond_the_magnitude_rule_is_one_line_exit_2(tmp_path, capsys, old, new, needle):
    path = _copy_example(tmp_path, {old: new})
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    msg = str(err.value)
    assert needle in msg and "no setting takes a magnitude above 1e+12" in msg and "\n" not in msg, msg
    out = tmp_path / "out"
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--set", "config.file=" + path, "--out", str(out)])
    err_text = capsys.readouterr().err
    assert code == 2 and err_text.count("\n") == 1 and needle in err_text, err_text
    assert not (out / "metrics.json").exists()


def test_numbers_up_to_the_rule_still_read(tmp_path):
    exp = load_experiment(_copy_example(tmp_path, {"k_c = 990.0": "k_c = 1e12", "h = 30.0": "h = -1e12"}))
    assert exp.soil["k_c"] == 1e12


def test_a_frame_dt_off_the_microsecond_grid_is_refused_not_rounded(tmp_path, capsys):
    path = _copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = 0.0100005"})
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    msg = str(err.value)
    assert "[experiment] frame_dt = 0.0100005 s is not a whole number of microseconds" in msg and "\n" not in msg
    out = tmp_path / "out"
    code = main(["run", "sandbox-datagen", "--reduced", "--quiet", "--set", "config.file=" + path, "--out", str(out)])
    err_text = capsys.readouterr().err
    assert code == 2 and err_text.count("\n") == 1 and "frame_dt = 0.0100005" in err_text, err_text
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize("frame_dt,us", [("0.01", 10000), ("0.001", 1000), ("0.0123", 12300)])
def test_a_frame_dt_on_the_microsecond_grid_still_reads(tmp_path, frame_dt, us):
    exp = load_experiment(_copy_example(tmp_path, {"frame_dt = 0.01": "frame_dt = " + frame_dt}))
    assert exp.frame_dt_us == us
