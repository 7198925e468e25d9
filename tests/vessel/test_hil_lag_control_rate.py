"""boat-hil-lag: the lag experiment (wamv_thrusters.lag_experiment) refuses a control period that is not a whole
multiple of its physics step with a ValueError; the scenario refuses such a control_rate_hz up front, one line
and exit 2, instead of failing in the middle of the run (after the cases before it)."""
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.scenarios import prepare
from harness.scenarios.boat.hil_lag import LAG_PHYSICS_HZ
from harness.sim.wamv_thrusters import lag_experiment

NEEDLE = "setting config.control_rate_hz must give a control period that is a whole number of microseconds"


@pytest.mark.parametrize("hz", [3, 7, 15, 30, 200, 1000])
def test_a_control_rate_the_lag_experiment_refuses_is_refused_before_the_run(hz):
    with pytest.raises(ValueError, match="lag experiment: the control period"):
        lag_experiment(0.0, duration_s=1.0, control_hz=hz)         # refused before any pty opens
    with pytest.raises(ConfigError, match=NEEDLE) as info:
        prepare("boat-hil-lag", {"control_rate_hz": hz})
    assert "\n" not in str(info.value) and "got %d" % hz in str(info.value)


def test_the_defaults_and_every_rate_the_lag_experiment_takes_pass():
    assert LAG_PHYSICS_HZ == 100
    for reduced in (False, True):
        assert prepare("boat-hil-lag", reduced=reduced)[1]["control_rate_hz"] == 10
    took = []
    for hz in range(1, 201):
        try:
            prepare("boat-hil-lag", {"control_rate_hz": hz})
        except ConfigError:
            continue
        took.append(hz)
    assert took == [1, 2, 4, 5, 10, 20, 25, 50, 100]


def test_the_cli_refuses_it_with_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "boat-hil-lag", "--reduced", "--quiet", "--out", str(out), "--set", "control_rate_hz=3"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and NEEDLE in err, err
    assert not (out / "metrics.json").exists()
