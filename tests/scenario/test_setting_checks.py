"""Every scenario checks its settings' value ranges before anything runs (harness.config rules)."""
import pytest


@pytest.mark.parametrize("scenario,setting,needle", [
    ("waypoints", "physics_hz=0", "config.physics_hz must be a whole number of Hz dividing 1000000"),
    ("waypoints", "vehicle.wheelbase_m=0.0", "config.vehicle.wheelbase_m must be a number > 0"),
    ("waypoints", "imu.rate_hz=0", "config.imu.rate_hz must be a whole number of Hz dividing 1000000"),
    ("waypoints", "imu.gyro_bias_sigma_dps=-1.0", "config.imu.gyro_bias_sigma_dps must be a number >= 0"),
    ("waypoints", "aiding.att_sigma_deg=[]", "config.aiding.att_sigma_deg must be a list of 3 numbers"),
    ("waypoints", "aiding.error_model=\"pink\"", "config.aiding.error_model must be one of 'white', 'constant'"),
    ("waypoints", "waypoints_ne_m=[]", "config.waypoints_ne_m must be a non-empty list"),
    ("waypoints", "waypoints_ne_m=[[1.0, NaN]]", "waypoints setting waypoints_ne_m must be finite"),
    ("waypoints", "runtime.imu_timeout_us=0", "config.runtime.imu_timeout_us must be an integer >= 1"),
    ("waypoints", "follower.slow_radius_m=0.0", "config.follower.slow_radius_m must be a number > 0"),
    ("vesc-waypoints", "drive.pole_pairs=0", "config.drive.pole_pairs must be an integer >= 1"),
    ("vesc-waypoints", "vesc.kv_erpm_per_v=0.0", "config.vesc.kv_erpm_per_v must be a number > 0"),
    ("vesc-waypoints", "topology=\"usb\"", "config.topology must be one of"),
    ("fil-avr", "board=\"mega\"", "config.board must be one of"),
    ("uwb-ranging", "duration_s=0.0", "config.duration_s must be a number > 0"),
    ("uwb-ranging", "warmup_s=5.0", "config.warmup_s must be less than config.duration_s"),
    ("uwb-ranging", "radio.prf_mhz=32", "config.radio.prf_mhz must be one of 16, 64"),
    ("uwb-ranging", "n_nodes=[4, 1]", "config.n_nodes must be a non-empty list of distinct values, each an integer >= 2"),
    ("ins-eskf", "settings=[]", "config.settings must be a non-empty list of"),
    ("ins-eskf", "imu_rate_hz=0", "config.imu_rate_hz must be a whole number of Hz dividing 1000000"),
    ("ins-eskf", "imu_rate_hz=300", "config.imu_rate_hz must be a whole number of Hz dividing 1000000"),
    ("ins-eskf", "aiding_rate_hz=3", "config.aiding_rate_hz must be a whole number of Hz dividing 1000000"),
    ("ins-eskf", "profile=\"zigzag\"", "config.profile must be one of"),
    ("mp-board", "board=\"uno\"", "config.board must be one of 'nano_esp32', 'pico_rp2040'"),
    ("mp-board", "batch_ticks=0", "config.batch_ticks must be an integer >= 1"),
    ("mp-board", "aiding.yaw_sigma_rad=-0.1", "config.aiding.yaw_sigma_rad must be a number >= 0"),
    ("grading", "agent=\"agent3\"", "config.agent must be one of 'expert', 'agent1', 'agent2', got 'agent3'"),
    ("swarm-fixed", "episode.goal_radius_m=2.0",
     "config.episode.goal_radius_m (2 m) must be below half the arena (arena_m 4 m)"),
    ("swarm-random", "episode.goal_radius_m=1e6", "must be below half the arena"),
    ("grading", "world.spoil_band_m=99.0",
     "config.world.spoil_band_m, config.world.size_m must be a spoil band narrower than the world's north side"),
])
def test_bad_setting_is_a_one_line_error_before_anything_runs(tmp_path, capsys, scenario, setting, needle):
    """Every scenario checks its settings' ranges first: exit 2, one line naming the setting, no report."""
    from harness.cli import main
    out = tmp_path / "out"
    assert main(["run", scenario, "--quiet", "--out", str(out), "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith(("error: setting", "error: %s setting " % scenario)) and err.count("\n") == 1, err
    assert needle in err
    assert not (out / "metrics.json").exists()


def test_a_missing_board_port_is_a_one_line_error(tmp_path, capsys):
    """mp-board on a real port that is not there: exit 4, the deploy error on one line, no report."""
    from harness.cli import main
    out = tmp_path / "out"
    port = str(tmp_path / "ttyACM9")
    assert main(["run", "mp-board", "--quiet", "--out", str(out), "--set", "port=%s" % port]) == 4
    err = capsys.readouterr().err
    assert err == "error: no board on %s: the port does not exist (is the board plugged in? " \
                  "`mpremote connect list` shows ports)\n" % port
    assert not (out / "metrics.json").exists()


def _leaf_paths(tree):
    from harness.cli import setting_leaves
    return [path for path, _value in setting_leaves(tree)]


@pytest.mark.parametrize("name", sorted(__import__("harness.scenarios", fromlist=["SCENARIOS"]).SCENARIOS))
def test_every_rule_names_a_setting_and_the_defaults_pass_them(name):
    """A rule whose path is not a setting would never fire (range_problem skips missing paths), so each
    must name a leaf of DEFAULTS; every setting has a rule (the swarm's replayed estimator tables are
    checked as a whole by the agent's own check); and the defaults themselves pass them."""
    from harness import scenarios
    from harness.config import range_problem
    module = scenarios.load(name)
    rules = module.SETTING_RANGES
    leaves = set(_leaf_paths(module.DEFAULTS))
    # the swarm scenarios' episode.goal_pf_config overrides only some particle-filter settings
    def optional(path):
        return path.startswith("episode.goal_pf_config.") or path.startswith("episode.pf_config.")
    related = [key for key in rules if isinstance(key, tuple)]       # rules relating several settings
    assert sorted(p for key in related for p in key if p not in leaves and not optional(p)) == []
    rules = {key: rule for key, rule in rules.items() if key not in related}
    optional = {p for p in rules if optional(p)}
    assert sorted(p for p in rules if p not in leaves and p not in optional) == []
    assert sorted(p for p in leaves if p not in rules and not p.startswith("estimators.")) == []
    assert range_problem(module.DEFAULTS, module.SETTING_RANGES) is None


def test_settings_command_lists_every_setting_with_its_rule(capsys):
    import json

    from harness.cli import main
    from harness.scenarios import waypoints
    from onboard.core.settings import RATE_HZ
    assert main(["settings", "waypoints", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    listed = out["settings"]
    assert sorted(listed) == sorted(_leaf_paths(waypoints.DEFAULTS))
    # the rule relating the rates of one scheduler is listed with the settings it relates
    assert out["related"] == [{"settings": ["imu.rate_hz", "aiding.rate_hz", "runtime.control_rate_hz"],
                               "rule": waypoints.SETTING_RANGES[("imu.rate_hz", "aiding.rate_hz",
                                                                 "runtime.control_rate_hz")][0]}]
    assert listed["physics_hz"] == {"default": 1000, "allowed": RATE_HZ[0]}
    assert listed["aiding.error_model"]["allowed"] == "one of 'white', 'constant'"
    assert main(["settings", "waypoints"]) == 0
    text = capsys.readouterr().out
    assert "vehicle.wheelbase_m" in text and "related settings (checked together):" in text
    assert main(["settings", "nosuch"]) == 2
    assert "unknown scenario 'nosuch'" in capsys.readouterr().err
