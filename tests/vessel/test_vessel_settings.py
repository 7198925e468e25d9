"""The vessel components' settings: every rule names a setting of its component, the defaults pass, and
a misspelled key is refused in one line naming the owner and the closest key (the settings mechanism of
onboard.core.settings, as tests/unit/test_settings_mechanism.py checks it for the other components)."""
import importlib

import pytest

from harness.sim.sensors.wamv_sensors import BoatImu, Gnss, Heading, YawGyro
from harness.sim.wamv import Wamv
from onboard.core.settings import ConfigError, range_problem
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel.model import params_from
from onboard.vessel.thrust_map import ThrustMap

MODULES = [("onboard.vessel.model", "DEFAULTS", "SETTING_RANGES"),
           ("onboard.vessel.thrust_map", "DEFAULTS", "SETTING_RANGES"),
           ("onboard.estimators.boat_ekf", "DEFAULTS", "SETTING_RANGES"),
           ("harness.sim.wamv", "DEFAULTS", "SETTING_RANGES"),
           ("harness.sim.sensors.wamv_sensors", "GNSS_DEFAULTS", "GNSS_SETTING_RANGES"),
           ("harness.sim.sensors.wamv_sensors", "IMU_DEFAULTS", "IMU_SETTING_RANGES"),
           ("harness.sim.sensors.wamv_sensors", "HEADING_DEFAULTS", "HEADING_SETTING_RANGES"),
           ("harness.sim.sensors.wamv_sensors", "GYRO_DEFAULTS", "GYRO_SETTING_RANGES")]


def _paths(tree, prefix=""):
    for key, value in tree.items():
        yield prefix + key
        if isinstance(value, dict):
            yield from _paths(value, prefix + key + ".")


@pytest.mark.parametrize("module,defaults,rules", MODULES, ids=["%s.%s" % (m, d) for m, d, _ in MODULES])
def test_each_rule_names_a_setting_and_the_defaults_pass(module, defaults, rules):
    mod = importlib.import_module(module)
    defaults, rules = getattr(mod, defaults), getattr(mod, rules)
    known = set(_paths(defaults))
    leaves = {p for p in known if not isinstance(_get(defaults, p), dict)}
    for path in rules:
        assert path in known, (module, path)
    assert leaves <= set(rules), (module, sorted(leaves - set(rules)))         # every setting has a rule
    assert range_problem(defaults, rules) is None


def _get(tree, path):
    for part in path.split("."):
        tree = tree[part]
    return tree


@pytest.mark.parametrize("owner,bad,key,make", [
    ("vessel model", "c05", "c5", params_from),
    ("thrust map", "lag_tau_,s", "lag_tau_s", ThrustMap),
    ("boat EKF", "gnss_sigma_n", "gnss_sigma_m", BoatEkf),
    ("wamv", "mdoe", "mode", Wamv),
    ("gnss", "outlier_porb", "outlier_prob", lambda cfg: Gnss(None, None, cfg)),
    ("boat imu", "gyro_bias_sigma_dsp", "gyro_bias_sigma_dps", lambda cfg: BoatImu(None, None, cfg)),
    ("heading", "ofset_deg", "offset_deg", lambda cfg: Heading(None, None, cfg)),
    ("yaw gyro", "bias_dsp", "bias_dps", lambda cfg: YawGyro(None, None, cfg)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_misspelled_key_is_refused_in_one_line(owner, bad, key, make):
    with pytest.raises(ConfigError) as exc:
        make({bad: 1})
    assert str(exc.value) == "unknown %s setting %r (did you mean %r?)" % (owner, bad, key)
