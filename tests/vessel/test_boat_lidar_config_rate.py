"""The boat LIDAR's settings check refuses a rate its sensor cannot tick at on the microsecond clock (it
passed the check, then the run failed when the sensor was attached), and settings that are not a table."""
import pytest

from harness.sim.clock import SimClock
from harness.sim.lidar import Lidar, LidarConfigError, LidarSensor, check_config


@pytest.mark.parametrize("rate_hz", [0.5, 3, 7.0, 12.5, 0.1])
def test_rates_without_a_whole_microsecond_period_are_refused(rate_hz):
    with pytest.raises(LidarConfigError, match="lidar.rate_hz"):
        check_config({"rate_hz": rate_hz})


@pytest.mark.parametrize("rate_hz", [1, 5, 10, 20.0, 64, 100])
def test_accepted_rates_attach_to_the_clock(rate_hz):
    lidar = Lidar({"rate_hz": rate_hz})
    sensor = LidarSensor(lidar, None, None, lambda frame: None)
    sensor.attach(SimClock())                     # no ValueError from the clock


@pytest.mark.parametrize("cfg", [[1, 2], "vlp16", 3])
def test_settings_that_are_not_a_table_are_one_config_error(cfg):
    with pytest.raises(LidarConfigError, match="lidar: settings must be a table"):
        check_config(cfg)
