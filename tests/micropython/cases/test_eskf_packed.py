"""ESKF predict_packed, pure path: a packed IMU queue (array('d')) gives bit for bit the state of
predict_many, refusals included; the runtime's packed queue drops the oldest sample when full.

Runs under CPython (pytest) and inside MicroPython; kept to a few dozen predicts.
"""
from array import array

from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import Eskf
from onboard.estimators.eskf_packed import IMU_DT_US, IMU_STRIDE, IMU_TIME_US, pack_imu, packed_buffer
from onboard.runtime.imu_queue import PackedImuQueue

G = 9.80665
DT_US = 10000


def _samples(n, t0, nan_at, late_at):
    """n IMU samples 10 ms apart; ``nan_at``: a NaN increment, ``late_at``: a time before the previous one."""
    out = []
    t = t0
    for k in range(n):
        t += DT_US
        dvel = (0.01 * (k % 5), -0.002 * k, -G * 0.01 + 0.001 * (k % 3))
        dang = (0.0005 * (k % 4), -0.0003, 0.002)
        if k in nan_at:
            dvel = (float("nan"), 0.0, 0.0)
        out.append(ImuSample(t - 3 * DT_US if k in late_at else t, DT_US, dvel, dang))
    return out


def _packed(samples):
    buf = packed_buffer(len(samples))
    for k in range(len(samples)):
        pack_imu(buf, k, samples[k])
    return buf


def _pair():
    fs = []
    for _ in range(2):
        f = Eskf()
        f.update_pose(PoseSample(0, (1.0, 2.0, -0.5), (0.01, -0.02, 0.3)))    # first pose initialises
        fs.append(f)
    return fs


def test_predict_packed_equals_predict_many():
    many, packed = _pair()
    t = 0
    for cycle in range(3):
        batch = _samples(8, t, (2,) if cycle == 1 else (), (5,) if cycle == 2 else ())
        t = batch[-1].time_us
        assert many.predict_many(batch) == packed.predict_packed(_packed(batch), len(batch))
        pose = PoseSample(t, (1.0 + 0.01 * cycle, 2.0, -0.5), (0.01, -0.02, 0.3 + 0.01 * cycle))
        assert many.update_pose(pose) == packed.update_pose(pose)
    assert many.get_state() == packed.get_state()
    assert packed.counters()["rejected"] == 2
    assert packed.counters()["predicts"] == 22


def test_refused_rows_in_a_packed_buffer():
    _, f = _pair()
    buf = _packed(_samples(3, 0, (), ()))
    buf[IMU_STRIDE + IMU_DT_US] = 0.5           # int(dt) == 0
    buf[2 * IMU_STRIDE + IMU_TIME_US] = float("nan")
    assert f.predict_packed(buf, 3) == 2
    assert f.counters()["predicts"] == 1 and f.counters()["rejected"] == 2


def test_packed_queue_drops_the_oldest():
    q = PackedImuQueue(2)
    dropped = [q.push(s) for s in _samples(3, 0, (), ())]
    assert dropped == [False, False, True] and q.count == 2
    assert q.buf[IMU_TIME_US] == 2.0 * DT_US and q.buf[IMU_STRIDE + IMU_TIME_US] == 3.0 * DT_US
    assert isinstance(q.buf, array)


def golden_predict_packed():
    _, f = _pair()
    f.predict_packed(_packed(_samples(12, 0, (4,), ())), 12)
    s = f.get_state()
    return s["pos_ned_m"] + s["vel_ned_mps"] + s["P"][:30]
