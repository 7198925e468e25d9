"""ESKF predict_many, pure path: the same state, bit for bit, as one predict call per sample.

Runs under CPython (pytest) and inside MicroPython; kept to a few dozen predicts (MicroPython
under node runs one in ~2 ms).
"""
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import Eskf, EskfInputError

G = 9.80665
DT_US = 10000


def _samples(n, t0, bad_at):
    """n IMU samples 10 ms apart with a turning, accelerating motion; ``bad_at``: indexes replaced by a
    sample the filter must refuse (a NaN increment)."""
    out = []
    t = t0
    for k in range(n):
        t += DT_US
        dvel = (0.01 * (k % 5), -0.002 * k, -G * 0.01 + 0.001 * (k % 3))
        dang = (0.0005 * (k % 4), -0.0003, 0.002)
        if k in bad_at:
            dvel = (float("nan"), 0.0, 0.0)
        out.append(ImuSample(t, DT_US, dvel, dang))
    return out


def _pair():
    fs = []
    for _ in range(2):
        f = Eskf()
        f.update_pose(PoseSample(0, (1.0, 2.0, -0.5), (0.01, -0.02, 0.3)))    # first pose initialises
        fs.append(f)
    return fs


def _one_by_one(f, samples):
    refused = 0
    for s in samples:
        try:
            f.predict(s)
        except EskfInputError:
            refused += 1
    return refused


def test_predict_many_equals_one_call_per_sample():
    one, many = _pair()
    t = 0
    for cycle in range(3):
        batch = _samples(10, t, (3, 7) if cycle == 1 else ())
        t = batch[-1].time_us
        assert _one_by_one(one, batch) == many.predict_many(batch)
        pose = PoseSample(t, (1.0 + 0.01 * cycle, 2.0, -0.5), (0.01, -0.02, 0.3 + 0.01 * cycle))
        assert one.update_pose(pose) == many.update_pose(pose)
    assert one.get_state() == many.get_state()
    assert many.counters()["rejected"] == 2
    assert many.counters()["predicts"] == 28


def test_predict_many_before_initialisation_counts_skipped():
    f = Eskf()
    assert f.predict_many(_samples(4, 0, ())) == 0
    assert f.counters()["skipped"] == 4 and f.counters()["predicts"] == 0


def golden_predict_many():
    _, f = _pair()
    f.predict_many(_samples(20, 0, (5,)))
    s = f.get_state()
    return s["pos_ned_m"] + s["vel_ned_mps"] + s["P"][:30]
