"""boat-hil-lag: the heading error is counted after settle_s; a settle_s that leaves no sample is bad input."""
import pytest

from harness.config import ConfigError
from harness.scenarios import prepare


@pytest.mark.parametrize("settle_s", [12.0, 20.0])
def test_settle_s_at_or_past_the_run_length_is_refused(settle_s):
    """Otherwise every case's heading_error_rms_deg is 0.0 over no sample, heading_error_monotonic holds
    trivially and success can be true with no heading tracked."""
    with pytest.raises(ConfigError, match="settle_s"):
        prepare("boat-hil-lag", {"duration_s": 12.0, "settle_s": settle_s})


def test_settle_s_inside_the_run_is_accepted():
    _module, config = prepare("boat-hil-lag", {"duration_s": 12.0, "settle_s": 11.5})
    assert config["settle_s"] == 11.5
