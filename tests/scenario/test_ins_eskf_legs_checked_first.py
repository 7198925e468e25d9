"""ins-eskf: its own ``legs`` are checked with the other settings, before anything runs (a one-line
ConfigError naming config.legs), not mid-run as a TrajectoryError traceback after the report folder exists."""
import pytest

from harness.config import ConfigError
from harness.scenarios import prepare

START = [0, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("leg,needle", [
    ([1, 0, 0, 0, 0, 0, 0], "leg 1 needs a positive duration_s"),
    ([1, 0, 0, 0, 0, 0, -1], "leg 1 needs a positive duration_s"),
    ([1, 0, 0, 0, 0, 0, 0.001], "shorter than the 10000 us sample period"),
    ([1, 0, 0, 0, 0, 0, 1e6], "more than 1000000"),       # 1e8 samples: would be sampled whole
])
def test_bad_legs_are_a_config_error(leg, needle):
    with pytest.raises(ConfigError, match="config.legs") as err:
        prepare("ins-eskf", {"legs": [START, leg], "imu_rate_hz": 100})
    assert needle in str(err.value)


def test_good_legs_pass_and_duration_s_does_not_bound_them():
    _module, config = prepare("ins-eskf", {"legs": [START, [1, 0, 0, 0, 0, 0, 2.5]], "duration_s": 0.001})
    assert config["legs"][1][6] == 2.5
