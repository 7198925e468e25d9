"""One settings mechanism: ``onboard.core.settings.checked`` in every component, one ConfigError, rules
next to their component, related settings (the rates one scheduler runs) checked before anything starts."""
import numpy as np
import pytest

from onboard.core.settings import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, RATE_HZ, ConfigError, checked, int_at_least,
                                   mounted, pair, range_problem, under)

DEFAULTS = {"gain": 1.0, "count": 2, "on": True, "name": "a", "start_ne_m": [0.0, 0.0],
            "block": {"rate_hz": 10, "sigma_m": 0.5}, "table": {"x.y": 1}, "maybe": None}
RULES = {"gain": POSITIVE, "count": int_at_least(1), "start_ne_m": pair(ANY_NUMBER),
         "block.rate_hz": RATE_HZ, "block.sigma_m": NON_NEGATIVE,
         "table": ("a table of group.name = number", lambda v: isinstance(v, dict)),
         ("block.rate_hz", "count"): ("a rate at least the count", lambda rate, count: rate >= count)}


def _error(overrides, rules=RULES, owner="Thing"):
    with pytest.raises(ConfigError) as exc:
        checked(DEFAULTS, rules, overrides, owner)
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_checked_merges_nested_blocks_and_copies_the_defaults():
    cfg = checked(DEFAULTS, RULES, {"gain": 2, "block": {"sigma_m": 0.25}}, "Thing")
    assert cfg["gain"] == 2.0 and isinstance(cfg["gain"], float)            # an int passes for a float
    assert cfg["block"] == {"rate_hz": 10, "sigma_m": 0.25}
    cfg["block"]["rate_hz"] = 1
    cfg["start_ne_m"].append(1.0)
    assert DEFAULTS["block"]["rate_hz"] == 10 and DEFAULTS["start_ne_m"] == [0.0, 0.0]
    assert checked(DEFAULTS, RULES, None, "Thing") == DEFAULTS


def test_unknown_keys_name_the_owner_and_the_closest_known_key():
    assert _error({"gian": 2.0}) == "unknown Thing setting 'gian' (did you mean 'gain'?)"
    assert _error({"block": {"rate_h": 5}}) == "unknown Thing setting 'block.rate_h' (did you mean 'block.rate_hz'?)"
    assert _error({"zzzzzz": 1}).startswith("unknown Thing setting 'zzzzzz' (known: block, count, gain, ")


def test_types_non_finite_values_and_ranges():
    assert _error({"count": "3"}) == "Thing setting count must be an integer >= 1, got '3'"
    assert _error({"on": 1}) == "Thing setting on must be bool, got 1"
    assert _error({"name": 3}) == "Thing setting name must be str, got 3"
    assert _error({"block": 3}) == "Thing setting block must be a table of settings, got 3"
    assert _error({"gain": float("nan")}) == "Thing setting gain must be finite, got nan"
    assert _error({"start_ne_m": [0.0, float("inf")]}) == "Thing setting start_ne_m must be finite, got [0.0, inf]"
    assert _error({"gain": 0.0}) == "Thing setting gain must be a number > 0, got 0.0"
    assert _error({"block": {"rate_hz": 300}}) == ("Thing setting block.rate_hz must be a whole number of Hz dividing "
                                                    "1000000 (a whole-microsecond period), got 300")
    assert _error([1, 2]) == "Thing settings must be a table of settings, got [1, 2]"


def test_a_rule_on_a_table_takes_it_whole_and_a_rule_decides_the_type():
    cfg = checked(DEFAULTS, RULES, {"table": {"a.b": 2}}, "Thing")
    assert cfg["table"] == {"a.b": 2}                                        # replaced, not merged
    rules = dict(RULES, gain=("null or a number > 0", lambda v: v is None or v > 0))
    assert checked(DEFAULTS, rules, {"gain": None}, "Thing")["gain"] is None


def test_rules_relating_settings_name_them_all():
    assert _error({"count": 20}) == "Thing settings block.rate_hz, count must be a rate at least the count, got 10, 20"
    assert range_problem({"block": {"rate_hz": 10}}, RULES) is None            # a missing path: skipped
    assert under("x", RULES, DEFAULTS)[("x.block.rate_hz", "x.count")] == RULES[("block.rate_hz", "count")]
    assert ("x.block.rate_hz", "x.count") not in under("x", RULES, {"block": {"rate_hz": 1}})
    assert sorted(mounted({"x": {"gain": 1.0}}, ("x", RULES))) == ["x.gain"]


def test_one_config_error_everywhere():
    from boards.crazyflie.board import CrazyflieConfigError
    from harness.config import ConfigError as HarnessConfigError
    assert HarnessConfigError is ConfigError and CrazyflieConfigError is ConfigError
    assert issubclass(ConfigError, ValueError)


# ---------------------------------------------------------------- every component takes its settings checked
def _components():
    from boards.crazyflie.board import validate as crazyflie_validate
    from boards.rpi.service import merged_config as rpi_config
    from boards.rpi.vesc_motors import VescDiffDrive
    from harness.scenarios.grading.expert import GradingExpert
    from harness.scenarios.grading.observation import ObservationRenderer
    from harness.scenarios.swarm.flight import check_config as swarm_flight
    from harness.sim.avr_bridge import AvrPlant
    from harness.sim.radio.uwb_channel import merged_radio
    from harness.sim.sand_world import SandWorld
    from harness.sim.sensors.imu import PlanarImu
    from harness.sim.sensors.ins_errors import noise_setting
    from harness.sim.sensors.pose import AidingPoseSensor
    from harness.sim.swarm_arena import SwarmBatch
    from harness.sim.vehicles.diffdrive import DiffDriveRobot
    from harness.sim.vehicles.drone2d import Drone2D
    from harness.sim.vesc import SimVesc
    from onboard.comms.uwb.config import merged_config as uwb_config
    from onboard.comms.vesc.link import VescLink
    from onboard.control.waypoint import WaypointFollower
    from onboard.estimators.eskf import make_config as eskf_config
    from onboard.estimators.planar_ekf import PlanarEkf
    from onboard.runtime.ground_robot import GroundRobotRuntime
    from onboard.swarm.member import SwarmMember
    from boards.arduino.app import AvrGroundRobot
    from boards.rpi.app import RpiGroundRobot
    return [
        ("Eskf", "gate_nis", eskf_config),
        ("PlanarEkf", "gate_chi2", PlanarEkf),
        ("UWB", "reply_delay_us", uwb_config),
        ("crazyflie", "max_speed_mps", crazyflie_validate),
        ("rpi", "log", rpi_config),
        ("VescDiffDrive", "max_wheel_radps", lambda cfg: VescDiffDrive({}, [], cfg)),
        ("VescLink", "rx_frame_timeout_us", lambda cfg: VescLink("uart0", None, cfg)),
        ("SimVesc", "current_limit_a", SimVesc),
        ("AvrPlant", "imu_model", lambda cfg: AvrPlant(None, None, None, cfg)),
        ("swarm arena", "arena_m", lambda cfg: SwarmBatch(1, 2, np.random.default_rng(1), cfg)),
        ("swarm flight", "arena_m", swarm_flight),
        ("radio", "loss_prob", merged_radio),
        ("Drone2D", "max_speed_mps", Drone2D),
        ("DiffDriveRobot", "wheelbase_m", DiffDriveRobot),
        ("PlanarImu", "gyro_bias_sigma_dps", lambda cfg: PlanarImu(None, None, cfg)),
        ("AidingPoseSensor", "pos_sigma_m", lambda cfg: AidingPoseSensor(None, None, cfg)),
        ("extreme noise", "ic_pos_m", lambda cfg: noise_setting("extreme", cfg)),
        ("SandWorld", "cell_m", SandWorld),
        ("GradingExpert", "approach_m", lambda cfg: GradingExpert(0.4, cfg)),
        ("ObservationRenderer", "behind_m", ObservationRenderer),
        ("WaypointFollower", "accept_radius_m", lambda cfg: WaypointFollower([(1.0, 0.0)], cfg)),
        ("GroundRobotRuntime", "control_rate_hz", lambda cfg: GroundRobotRuntime([(1.0, 0.0)], None, cfg)),
        ("RpiGroundRobot runtime", "control_rate_hz", lambda cfg: RpiGroundRobot([(1.0, 0.0)], None,
                                                                                  runtime_config=cfg)),
        ("AvrGroundRobot runtime", "control_rate_hz", lambda cfg: AvrGroundRobot([(1.0, 0.0)], None, cfg)),
        ("SwarmMember", "queue_limit", lambda cfg: SwarmMember(None, None, None, [], None, cfg)),
    ]


def _misspelled(key):
    """``key`` with its last two letters swapped."""
    return key[:-2] + key[-1] + key[-2]


@pytest.mark.parametrize("owner,key,make", _components(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_component_refuses_a_misspelled_key_in_one_line(owner, key, make):
    bad = _misspelled(key)
    with pytest.raises(ConfigError) as exc:
        make({bad: 1})
    assert str(exc.value) == "unknown %s setting %r (did you mean %r?)" % (owner, bad, key)


def _modules_with_settings():
    import importlib
    names = ["onboard.estimators.eskf", "onboard.estimators.planar_ekf", "onboard.comms.uwb.config",
             "boards.crazyflie.board", "boards.rpi.vesc_motors", "onboard.comms.vesc.link", "harness.sim.vesc",
             "harness.sim.swarm_arena", "harness.sim.vehicles.drone2d", "harness.sim.vehicles.diffdrive",
             "harness.sim.sensors.imu", "harness.sim.sensors.pose", "harness.sim.sand_world",
             "harness.scenarios.grading.expert", "harness.scenarios.grading.observation", "onboard.control.waypoint",
             "onboard.runtime.ground_robot", "onboard.swarm.member"]
    out = [(name, "DEFAULTS", "SETTING_RANGES") for name in names]
    out += [("boards.rpi.service", "DEFAULT_CONFIG", "SETTING_RANGES"),
            ("boards.rpi.vesc_motors", "MOTOR_DEFAULTS", "MOTOR_SETTING_RANGES"),
            ("boards.rpi.vesc_motors", "DRIVE_DEFAULTS", "DRIVE_SETTING_RANGES"),
            ("harness.sim.i2c", "MPU6050_DEFAULTS", "MPU6050_SETTING_RANGES"),
            ("harness.sim.avr_bridge", "PLANT_DEFAULTS", "PLANT_SETTING_RANGES"),
            ("harness.sim.radio.uwb_channel", "RADIO_DEFAULTS", "RADIO_SETTING_RANGES")]
    return [(importlib.import_module(m), d, r) for m, d, r in out]


def _paths(tree, prefix=""):
    for key, value in tree.items():
        yield prefix + key
        if isinstance(value, dict):
            yield from _paths(value, prefix + key + ".")


@pytest.mark.parametrize("module,defaults,rules", _modules_with_settings(),
                         ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__", ""))
def test_each_rule_names_a_setting_of_its_component_and_the_defaults_pass(module, defaults, rules):
    defaults, rules = getattr(module, defaults), getattr(module, rules)
    known = set(_paths(defaults))
    for key in rules:
        for path in (key if isinstance(key, tuple) else (key,)):
            assert path in known, (module.__name__, path)
    assert range_problem(defaults, rules) is None


# ---------------------------------------------------------------- the runtime settings, written once
def test_runtime_config_from_a_scenarios_blocks():
    from onboard.runtime.ground_robot import DEFAULTS, runtime_config
    vehicle = {"wheelbase_m": 0.4, "wheel_radius_m": 0.06, "max_wheel_radps": 20.0, "start_ne_m": [0.0, 0.0]}
    cfg = runtime_config({"control_rate_hz": 25}, 200, 5, vehicle)
    assert cfg == dict(DEFAULTS, control_rate_hz=25, imu_rate_hz=200, aiding_rate_hz=5, wheelbase_m=0.4,
                       wheel_radius_m=0.06, max_wheel_radps=20.0)
    assert runtime_config(None, 100, 10, vehicle, max_wheel_radps=12.5)["max_wheel_radps"] == 12.5
    with pytest.raises(ConfigError, match="GroundRobotRuntime settings imu_rate_hz, aiding_rate_hz, control_rate_hz "
                                          "must be rates one scheduler can run"):
        runtime_config({"control_rate_hz": 40}, 100, 10, vehicle)


# ---------------------------------------------------------------- related rate settings: one line, exit 2
@pytest.mark.parametrize("scenario,setting", [
    ("waypoints", "imu.rate_hz=300"), ("waypoints", "runtime.control_rate_hz=30"), ("waypoints", "aiding.rate_hz=3"),
    ("waypoints", "runtime.control_rate_hz=40"),
    ("vesc-waypoints", "imu.rate_hz=300"), ("vesc-waypoints", "runtime.control_rate_hz=30"),
    ("vesc-waypoints", "aiding.rate_hz=3"), ("vesc-waypoints", "imu.rate_hz=125"),
    ("ins-eskf", "imu_rate_hz=300"), ("ins-eskf", "aiding_rate_hz=3"), ("ins-eskf", "record_hz=3"),
])
def test_rates_the_scheduler_cannot_run_are_one_line_before_anything_starts(tmp_path, capsys, scenario, setting):
    from harness.cli import main
    out = tmp_path / "out"
    assert main(["run", scenario, "--quiet", "--out", str(out), "--set", setting]) == 2
    err = capsys.readouterr().err
    key, value = setting.split("=")
    assert err.startswith("error: setting") and err.count("\n") == 1, err
    assert key in err and value in err and "Traceback" not in err
    assert not (out / "metrics.json").exists()


def test_a_misspelled_scenario_setting_names_the_scenario_and_the_closest_key(capsys):
    from harness.cli import main
    assert main(["run", "waypoints", "--quiet", "--set", "vehicle.wheelbse_m=0.3"]) == 2
    assert capsys.readouterr().err == ("error: unknown waypoints setting 'vehicle.wheelbse_m' "
                                       "(did you mean 'vehicle.wheelbase_m'?)\n")
