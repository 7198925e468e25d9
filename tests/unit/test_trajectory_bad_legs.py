"""Trajectory legs that cannot be sampled are one TrajectoryError (a ValueError), not an IndexError or a
TypeError from inside the sampler."""
import numpy as np
import pytest

from harness.sim.trajectory import TrajectoryError, generate, leg_samples

START = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_a_leg_shorter_than_half_a_microsecond_is_refused():
    with pytest.raises(TrajectoryError, match="leg 1 duration 4e-07 s is shorter than the 10000 us sample period"):
        generate([START, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4e-7]], 100)
    with pytest.raises(TrajectoryError, match="shorter than"):
        leg_samples([START, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4e-7]], 100)


@pytest.mark.parametrize("legs, needle", [
    (None, "legs must be a list"),
    ("abc", "legs must be a list"),
    ([START, "abcdefg"], "leg 1 must be"),
    ([START, 5], "leg 1 must be"),
    ([START, [1.0, 0.0, 0.0, 0.0, 0.0, "0", 1.0]], "leg 1 must be"),
    ([START, [1.0, 0.0, 0.0, 0.0, 0.0, True, 1.0]], "leg 1 must be"),
    ([None, START], "leg 0 must be"),
])
def test_malformed_legs_are_one_trajectory_error(legs, needle):
    with pytest.raises(TrajectoryError, match=needle):
        generate(legs, 100)


def test_legs_as_an_array_or_tuples_still_sample():
    legs = [START, [1.0, 0.5, 0.0, 0.0, 0.0, 30.0, 1.0]]
    a = generate(legs, 100)
    b = generate(np.array(legs), 100)
    c = generate(tuple(tuple(v) for v in legs), 100)
    assert len(a) == len(b) == len(c) == 101
    assert np.array_equal(a.pos_ned_m, b.pos_ned_m) and np.array_equal(a.quat, c.quat)
