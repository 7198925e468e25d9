"""The tilt estimator counts a malformed sample (a field missing, of the wrong type or too short) in ``rejected``
and leaves its state and counters as they were, as its docstring says, instead of raising half way through (a
sample without ``time_us`` used to count a predict, then raise AttributeError)."""
import pytest

from onboard.core.samples import ImuSample
from onboard.estimators.tilt import TiltEstimator


class _Sample:
    def __init__(self, **fields):
        self.__dict__.update(fields)


GOOD = dict(time_us=20000, dt_us=10000, dvel_body_mps=(0.0, 0.0, -0.0981), dang_body_rad=(0.01, 0.0, 0.0))


@pytest.mark.parametrize("change", [
    {"time_us": None},
    {"dvel_body_mps": ("a", 0.0, 0.0)},
    {"dvel_body_mps": (0.0, 0.0)},
    {"dang_body_rad": (0.0,)},
    {"dang_body_rad": None},
    {"dt_us": "10000"},
    {"dt_us": None},
])
def test_a_malformed_sample_is_rejected_and_changes_nothing(change):
    t = TiltEstimator()
    assert t.predict(ImuSample(10000, 10000, (0.0, 0.0, -0.0981), (0.0, 0.0, 0.0))) is True
    before = (t.roll_rad, t.pitch_rad, t.time_us, t.initialized, t.counters())
    fields = dict(GOOD, **change)
    if fields["time_us"] is None:
        del fields["time_us"]
    assert t.predict(_Sample(**fields)) is False
    c = t.counters()
    assert c.pop("rejected") == before[4].pop("rejected") + 1
    assert (t.roll_rad, t.pitch_rad, t.time_us, t.initialized, c) == before[:4] + (before[4],)
    assert t.predict(_Sample(**GOOD)) is True and t.predicts == 2
