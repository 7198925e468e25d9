"""The vessel's samples take their time as the core samples do: a whole number of microseconds, else SampleError
(a ValueError) naming it; never a silent truncation (10.7 us to 10) nor an OverflowError for an infinity."""
import math

import numpy as np
import pytest

from onboard.core.samples import SampleError
from onboard.vessel.arbiters_part import DestinationSample, ObstaclesSample
from onboard.vessel.buoy_perception import LidarFrame
from onboard.vessel.mission_part import PingSample
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample

BUILDERS = [
    lambda t: ThrustSample(t, 10.0, 20.0),
    lambda t: PositionSample(t, (1.0, 2.0), 0.25),
    lambda t: HeadingSample(t, 0.3),
    lambda t: YawRateSample(t, 0.01),
    lambda t: DestinationSample(t, 1.0, 2.0),
    lambda t: ObstaclesSample(t, [(1.0, 2.0, 0.5)]),
    lambda t: PingSample(t, (1e-4, -2e-4)),
    lambda t: LidarFrame(t, [[1.0, 2.0, -0.5]]),
]


@pytest.mark.parametrize("build", BUILDERS)
@pytest.mark.parametrize("bad", [10.7, math.inf, -math.inf, math.nan, "12", True, None])
def test_a_time_that_is_not_a_whole_number_is_a_sample_error(build, bad):
    with pytest.raises(SampleError, match="time_us must be a whole number"):
        build(bad)


@pytest.mark.parametrize("build", BUILDERS)
def test_whole_number_times_are_taken_as_ints(build):
    for t in (0, 12345, 1000.0, np.int64(7), -5):
        s = build(t)
        assert s.time_us == int(t) and type(s.time_us) is int
