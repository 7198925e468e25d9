"""boat-sim-gap checks its conditions' settings with robotx-course's check_settings: those errors name the running
scenario (boat-sim-gap and the condition), not robotx-course (they used to start with "robotx-course:"); run
as robotx-course itself they still name robotx-course."""
import copy

import pytest

from harness import scenarios
from harness.cli import main
from harness.config import ConfigError
from harness.scenarios.boat import boat_sim_gap as sg, robotx_course as rc


def _cli_error(tmp_path, capsys, scenario, *sets):
    argv = ["run", scenario, "--reduced", "--quiet", "--out", str(tmp_path / "r")]
    for s in sets:
        argv += ["--set", s]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r" / "metrics.json").exists()
    return err


def test_the_cli_names_boat_sim_gap_in_robotx_course_checks(tmp_path, capsys):
    err = _cli_error(tmp_path, capsys, "boat-sim-gap", "robotx.pinger.max_pings=3")
    assert err.startswith("error: boat-sim-gap: ideal: pinger.max_pings must be >= pinger.min_pings"), err
    assert "robotx-course" not in err, err


def test_robotx_course_run_itself_still_names_robotx_course(tmp_path, capsys):
    err = _cli_error(tmp_path, capsys, "robotx-course", "pinger.max_pings=3")
    assert err.startswith("error: robotx-course: pinger.max_pings must be >= pinger.min_pings"), err


@pytest.mark.parametrize("change,needle", [
    (lambda c: c.__setitem__("layouts", ["nope"]), "layouts: 'nope' is not in hydrophone_layouts"),
    (lambda c: c["pinger"].__setitem__("max_pings", 2), "pinger.max_pings must be >= pinger.min_pings"),
    (lambda c: c["lidar"].__setitem__("range_sigma_m", -1.0), "lidar.range_sigma_m"),
])
def test_every_robotx_course_check_takes_the_scenario_name(change, needle):
    _, config = scenarios.prepare("boat-sim-gap")
    cfg = copy.deepcopy(sg.condition_config(config, "realistic", "damn"))
    change(cfg)
    with pytest.raises(ConfigError) as info:
        rc.check_settings(cfg, "boat-sim-gap: realistic")
    assert str(info.value).startswith("boat-sim-gap: realistic: ") and needle in str(info.value), str(info.value)
    with pytest.raises(ConfigError) as info:
        rc.check_settings(cfg)
    assert str(info.value).startswith("robotx-course: ") and needle in str(info.value), str(info.value)
