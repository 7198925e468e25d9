"""harness.scenario_jobs.scenario_job: the seed is a whole number >= 0 (as RunRandom takes it); a fraction, a bool,
NaN or a negative number is a ValueError, not silently another seed's job (1.7 was seed 1's job, True seed 1's)."""
import math

import numpy as np
import pytest

from harness.scenario_jobs import scenario_job


@pytest.mark.parametrize("seed", [1.7, True, False, -1, math.nan, math.inf, None])
def test_a_seed_that_is_no_whole_number_is_refused(seed):
    with pytest.raises(ValueError, match="seed must be a whole number >= 0"):
        scenario_job("waypoints", {}, seed)


@pytest.mark.parametrize("seed", [3, 3.0, np.int64(3)])
def test_a_whole_seed_names_the_same_job(seed):
    job = scenario_job("waypoints", {"imu": {"rate_hz": 100}}, seed)
    assert job.key == scenario_job("waypoints", {"imu": {"rate_hz": 100}}, 3).key
    assert job.info["seed"] == 3 and type(job.info["seed"]) is int and job.args[2] == 3
