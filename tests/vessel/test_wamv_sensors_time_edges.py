"""WAM-V simulated sensors at time edges: BoatImu refuses a sample time not after the previous one (state
and noise stream kept), a poll after a long gap costs one step, and a GNSS dropout lasts its duration
rounded to the microsecond."""
import time

import numpy as np
import pytest

from harness.sim.sensors.wamv_sensors import BoatImu, Gnss, Heading


class _Vessel:
    def __init__(self):
        self.north_m = 0.0
        self.east_m = 0.0
        self.yaw_rad = 0.0
        self.yaw_rate_radps = 0.0
        self.vel = (0.0, 0.0, 0.0)

    def vel_ned_mps(self):
        return self.vel


def _imu_run(bad_times):
    v = _Vessel()
    imu = BoatImu(v, np.random.default_rng(2))
    imu.sample(0)
    out = []
    for k in range(1, 5):
        v.yaw_rad += 0.01
        v.vel = (0.1 * k, 0.0, 0.0)
        if k == 2:
            for t in bad_times:
                with pytest.raises(ValueError, match="not after the previous sample"):
                    imu.sample(t)
        s = imu.sample(k * 10000)
        out.append((s.dt_us, s.dvel_body_mps, s.dang_body_rad))
    return out


def test_boat_imu_refuses_a_time_not_after_the_last_and_keeps_its_state():
    clean = _imu_run([])
    assert _imu_run([10000, 5000]) == clean
    assert [dt for dt, _v, _a in clean] == [10000] * 4


@pytest.mark.timeout(10)
def test_poll_after_a_long_gap_skips_the_missed_periods_at_once():
    h = Heading(_Vessel(), np.random.default_rng(0))          # 10 Hz
    assert h.poll(0) is not None
    t0 = time.perf_counter()
    assert h.poll(10 ** 15 + 3) is not None                  # ~3e8 years of missed periods
    assert time.perf_counter() - t0 < 0.5
    assert h.next_us == 10 ** 15 + 100000                    # the next period boundary after it
    assert h.poll(10 ** 15 + 99999) is None
    # the same boundaries as stepping period by period
    h2 = Heading(_Vessel(), np.random.default_rng(0))
    due = [t for t in range(0, 1000000, 30001) if h2.due(t)]
    expect, nxt = [], 0
    for t in range(0, 1000000, 30001):
        if t >= nxt:
            expect.append(t)
            while nxt <= t:
                nxt += 100000
    assert due == expect


def test_gnss_dropout_lasts_its_duration_rounded_to_the_microsecond():
    g = Gnss(_Vessel(), np.random.default_rng(0), {"dropout_prob": 1.0, "dropout_s": 4.1})
    assert g.sample(0) is None
    assert g.dropout_until_us == 4100000                     # 4.1e6 is 4099999.9999999995 as a float
