"""Scenario boat-sim-gap's pieces: the rank statistics against scipy's, and the two conditions as robotx-course
settings (ideal: no disturbances, lag or sensor noise; realistic: all of them), checked before anything runs."""
import pytest
from scipy import stats

from harness import scenarios
from harness.config import ConfigError
from harness.scenarios.boat import boat_sim_gap as sg


@pytest.mark.parametrize("a,b", [
    ([650.0, 600.0, 420.0, 300.0], [600.0, 610.0, 200.0, 100.0]),
    ([1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 2.0, 1.0]),
    ([1.0, 1.0, 2.0, 3.0], [2.0, 1.0, 2.0, 3.0]),            # ties in both
    ([3.0, 1.0, 2.0], [3.0, 1.0, 2.0]),
])
def test_rank_correlations_match_scipy(a, b):
    assert sg.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)
    assert sg.kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)


def test_ranks_and_undefined_correlations():
    assert sg.ranks([10.0, 30.0, 20.0, 30.0]) == [4.0, 1.5, 3.0, 1.5]
    assert sg.spearman([1.0, 1.0], [2.0, 3.0]) is None and sg.kendall_tau_b([1.0, 1.0], [1.0, 1.0]) is None


def test_conditions_switch_the_disturbances_lag_and_noise():
    _, config = scenarios.prepare("boat-sim-gap")
    ideal = sg.condition_config(config, "ideal", "damn")
    real = sg.condition_config(config, "realistic", "potential_field")
    assert ideal["arbiter"] == "damn" and real["arbiter"] == "potential_field"
    assert ideal["wamv"]["wind"]["speed_mps"] == 0.0 and ideal["wamv"]["waves"]["force_n"] == 0.0
    assert ideal["wamv"]["thrusters"]["lag_tau_s"] == 0.0 and ideal["outboard_latency_s"] == 0.0
    assert ideal["lidar"]["range_sigma_m"] == 0.0 and ideal["pinger"]["outlier_prob"] == 0.0
    assert ideal["lidar"]["azimuth_res_deg"] == 0.4            # merged over robotx-course's defaults
    assert real["wamv"]["wind"]["speed_mps"] == 4.0 and real["outboard_latency_s"] == 0.3
    assert real["gnss"]["sigma_m"] == 0.5 and real["pinger"]["outlier_prob"] == 0.15


@pytest.mark.parametrize("layer,needle", [
    ({"realistic": {"gnss": {"sigma_m": -1.0}}}, "sigma_m"),
    ({"ideal": {"outboard_latency_s": 9.0}}, "outboard_latency_s"),
    ({"robotx": {"warp": 1}}, "robotx.warp"),
    ({"layout": "triangle"}, "layouts"),
])
def test_bad_condition_settings_are_refused_before_running(layer, needle):
    with pytest.raises(ConfigError, match=needle):
        scenarios.prepare("boat-sim-gap", layer)


def test_a_broken_course_file_is_refused_in_this_scenarios_name(tmp_path, capsys):
    from harness.cli import main
    course = tmp_path / "broken.toml"
    course.write_text("[start]\nnorth_m = \n")
    code = main(["run", "boat-sim-gap", "--reduced", "--quiet", "--out", str(tmp_path / "r"), "--set",
                 "course.file=%s" % course])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: boat-sim-gap: course.file: "), err
    assert "robotx-course" not in err and len(err.strip().splitlines()) == 1, err
