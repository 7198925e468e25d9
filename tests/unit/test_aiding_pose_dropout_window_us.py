"""AidingPoseSensor: the dropout window [start, start + duration) is taken in whole microseconds, so a
sample exactly at its start is dropped whatever the float rounding of now_us * 1e-6 (100000 us * 1e-6 is
0.09999999999999999, below 0.1)."""
import numpy as np
import pytest

from harness.sim.sensors.pose import AidingPoseSensor


@pytest.mark.parametrize("start_s, duration_s", [(0.1, 0.7), (0.2, 0.2), (0.05, 0.02), (0.9, 0.1), (4.0, 1.0)])
def test_dropout_window_edges_in_microseconds(start_s, duration_s):
    s = AidingPoseSensor(lambda: ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), np.random.default_rng(0),
                         {"dropout_start_s": start_s, "dropout_duration_s": duration_s})
    start_us = round(start_s * 1e6)
    end_us = start_us + round(duration_s * 1e6)
    assert not s.in_dropout(start_us - 1)
    assert s.in_dropout(start_us)
    assert s.sample(start_us) is None
    assert s.in_dropout(end_us - 1)
    assert not s.in_dropout(end_us)
    assert s.sample(end_us) is not None


def test_no_dropout_when_start_is_negative():
    s = AidingPoseSensor(lambda: ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), np.random.default_rng(0))
    assert not any(s.in_dropout(t) for t in (0, 1, 10 ** 12))
