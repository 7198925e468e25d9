"""UWB channel simulator + protocol: drift, noise calibration, antenna delay, loss, collisions, NLOS."""
import math

import numpy as np
import pytest

from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import (RADIO_DEFAULTS, SimRadio, UwbNetwork, air_time_s,
                                       merged_radio, rx_noise_std_s, shr_s)
from harness.sim.rng import RunRandom
from onboard.comms.uwb import frames as F
from onboard.comms.uwb import timestamps as T
from onboard.comms.uwb.node import PAPER_RANGE_MEAN_M, PAPER_RANGE_VAR_M2
from onboard.core.settings import ConfigError

C = T.SPEED_OF_LIGHT_MPS


def _net(n=2, seed=1, protocol=None, radio=None, positions=None):
    clock = SimClock()
    net = UwbNetwork(clock, range(n), RunRandom(seed), protocol=protocol, radio=radio)
    positions = positions or {0: (0.0, 0.0), 1: (3.0, 0.0), 2: (1.0, 2.0), 3: (2.5, 3.5)}
    for i in range(n):
        net.set_state(i, positions[i], (0.1 * i, -0.2))
    return clock, net


def _errors(net, node=None, after_us=0):
    out = []
    for i, lst in net.samples.items():
        if node is not None and i != node:
            continue
        for t, s in lst:
            if t >= after_us:
                out.append(s.range_m - net.true_range_m(i, s.peer_id, t))
    return np.array(out)


def test_air_time_follows_dw1000_phy():
    r = merged_radio()
    # 6.8 Mb/s, PRF 64, 128 preamble: SHR = (128 + 8) * 1017.63 ns
    assert shr_s(r) == pytest.approx(136 * 1017.63e-9)
    # 20-byte frame: 176 bits + 48 RS parity at 128.21 ns, PHR 21 bits at 1025.64 ns
    assert air_time_s(20, r) == pytest.approx(136 * 1017.63e-9 + 21 * 1025.64e-9 + 224 * 128.21e-9)
    assert air_time_s(200, r) > air_time_s(20, r)
    slow = merged_radio({"data_rate_kbps": 110, "prf_mhz": 16, "preamble_symbols": 2048})
    assert air_time_s(20, slow) > 10 * air_time_s(20, r)
    with pytest.raises(ConfigError, match="radio setting data_rate_kbps must be one of 110, 850, 6800, got 1000"):
        merged_radio({"data_rate_kbps": 1000})
    with pytest.raises(ConfigError, match="unknown radio setting 'no_such_setting'"):
        merged_radio({"no_such_setting": 1})


def test_ds_twr_drift_free_and_ss_twr_shows_half_reply_times_drift():
    drifts = {0: 20.0, 1: -20.0}
    radio = {"noise": False, "clock_drifts_ppm": drifts}
    clock, net = _net(radio=radio)
    for i in (0, 1):   # make the 40-bit counters wrap during the run
        net.nodes[i].clock.offset_ticks = T.WRAP_TICKS - int(0.2 * T.TICK_HZ)
    net.start()
    clock.advance_to(1000000)
    e = _errors(net)
    assert len(e) > 100
    assert np.max(np.abs(e)) < 0.01
    clock, net = _net(protocol={"twr": "ss"}, radio=radio)
    net.start()
    clock.advance_to(1000000)
    reply_s = 1000e-6
    for i, lst in net.samples.items():
        j = 1 - i
        expected = 0.5 * reply_s * (drifts[i] - drifts[j]) * 1e-6 * C     # ~ +-6 m
        errs = [s.range_m - net.true_range_m(i, j, t) for t, s in lst]
        assert len(errs) > 50
        assert abs(np.mean(errs) - expected) < 0.03 * abs(expected)


def test_rx_noise_calibration_formula():
    # DS-TWR with equal replies: range error = c (n_a2/2 + n_b1/4 + n_b3/4) -> var = 3/8 c^2 s^2
    s = rx_noise_std_s(PAPER_RANGE_VAR_M2)
    assert (C * s) ** 2 * 0.375 == pytest.approx(PAPER_RANGE_VAR_M2)


@pytest.mark.slow
def test_measured_range_noise_matches_paper_model_over_1e4_exchanges():
    clock, net = _net(seed=7, positions={0: (0.0, 0.0), 1: (1.5, 1.0)})
    net.start()
    t = 0
    while len(net.samples[0]) < 10000:
        t += 5000000
        clock.advance_to(t)
    e = _errors(net, node=0)[:10000]          # node 0 has one sample per exchange (either role)
    n = len(e)
    assert n == 10000
    se_mean = math.sqrt(PAPER_RANGE_VAR_M2 / n)
    assert abs(e.mean() - PAPER_RANGE_MEAN_M) < 4 * se_mean
    se_var = PAPER_RANGE_VAR_M2 * math.sqrt(2.0 / (n - 1))
    assert abs(e.var(ddof=1) - PAPER_RANGE_VAR_M2) < 4 * se_var
    # both ends of an exchange compute the same range from the same six timestamps
    r0 = sorted(round(s.range_m, 9) for _, s in net.samples[0][:200])
    r1 = set(round(s.range_m, 9) for _, s in net.samples[1])
    assert sum(1 for r in r0 if r in r1) > 190


def test_constant_rx_delay_is_the_range_bias():
    clock, net = _net(radio={"range_var_m2": 0.0})
    net.start()
    clock.advance_to(300000)
    e = _errors(net)
    assert abs(e.mean() - PAPER_RANGE_MEAN_M) < 0.002


def test_antenna_delay_mismatch_biases_and_calibration_removes_it():
    radio = {"noise": False, "antenna_delay_true_ticks": RADIO_DEFAULTS["antenna_delay_true_ticks"] + 100}
    clock, net = _net(radio=radio)
    net.start()
    clock.advance_to(300000)
    # 100 ticks too little on each of TX and RX: tof too long by 200 ticks
    assert _errors(net).mean() == pytest.approx(200 * T.METERS_PER_TICK, abs=0.005)
    clock, net = _net(radio=radio, protocol={"antenna_delay_ticks": radio["antenna_delay_true_ticks"]})
    net.start()
    clock.advance_to(300000)
    assert abs(_errors(net).mean()) < 0.005


def test_nlos_pairs_add_their_bias():
    clock, net = _net(n=3, radio={"noise": False, "nlos_pair_fraction": 1.0, "nlos_bias_m": 0.4})
    net.start()
    clock.advance_to(400000)
    assert _errors(net).mean() == pytest.approx(0.4, abs=0.01)


def test_random_loss_counted_and_total_loss_gives_no_ranges():
    clock, net = _net(n=3, radio={"loss_prob": 0.2})
    net.start()
    clock.advance_to(1500000)
    st = net.stats
    frac = st["lost_random"] / (st["lost_random"] + st["deliveries"])
    assert 0.17 < frac < 0.23
    assert all(len(v) > 10 for v in net.samples.values())
    clock, net = _net(n=3, radio={"loss_prob": 1.0})
    net.start()
    clock.advance_to(300000)
    assert all(len(v) == 0 for v in net.samples.values())
    assert net.stats["deliveries"] == 0


def test_overlapping_frames_collide_at_the_receiver_and_sender_is_deaf():
    clock, net = _net(n=3, protocol={"mode": "broadcast"})
    net.start()                          # broadcast nodes listen >= 30 ms before sending
    clock.advance_to(1000)
    frame = F.make(F.BCAST, 0, 255, 1, tx_prev=F.NO_TIMESTAMP).encode()
    other = F.make(F.BCAST, 1, 255, 1, tx_prev=F.NO_TIMESTAMP).encode()
    SimRadio(net, 0).transmit(frame)
    clock.advance_to(1050)
    SimRadio(net, 1).transmit(other)     # starts 50 us later, overlaps
    clock.advance_to(3000)
    assert net.stats["lost_collision"] == 2      # node 2 loses both
    assert net.stats["lost_deaf"] == 2           # 0 and 1 were transmitting
    assert net.protocol_node(2).stats["rx"] == 0
    clock.advance_to(4000)
    SimRadio(net, 0).transmit(frame)
    clock.advance_to(6000)
    assert net.protocol_node(2).stats["rx"] == 1 and net.protocol_node(1).stats["rx"] == 1


def test_late_delayed_transmission_reports_tx_error():
    clock, net = _net(n=2, protocol={"mode": "broadcast"})
    net.start()
    clock.advance_to(1000)
    n0 = net.nodes[0]
    now_ticks = int(n0.clock.ticks_f(clock.now_us() * 1e-6)) & T.MASK_TICKS
    SimRadio(net, 0).transmit(F.make(F.JOIN, 0, 1, 1).encode(), (now_ticks + T.us_to_ticks(50)) & T.MASK_TICKS)
    clock.advance_to(2000)
    assert net.stats["tx_late"] == 1
    assert net.protocol_node(0).stats["tx_errors"] == 1
    SimRadio(net, 0).transmit(F.make(F.JOIN, 0, 1, 1).encode(), (now_ticks + T.us_to_ticks(2000)) & T.MASK_TICKS)
    clock.advance_to(5000)
    assert net.stats["frames"] == 1


def test_same_seed_same_run_and_seed_changes_noise():
    def run(seed):
        clock, net = _net(n=3, seed=seed, radio={"loss_prob": 0.05})
        net.start()
        clock.advance_to(400000)
        return [(i, t, s.peer_id, s.range_m) for i in net.samples for t, s in net.samples[i]]
    a, b, c = run(3), run(3), run(4)
    assert a == b
    assert a != c


def test_velocity_travels_in_the_frames_and_bad_velocity_is_counted():
    clock, net = _net(n=2)
    net.start()
    clock.advance_to(200000)
    t, s = net.samples[0][-1]
    assert s.peer_vel_mps == pytest.approx((0.1, -0.2))
    assert s.range_std_m == pytest.approx(math.sqrt(PAPER_RANGE_VAR_M2))
    node = net.protocol_node(0)
    assert node.set_velocity(float("nan"), 0.0) is False
    assert node.stats["bad_velocity"] == 1


def test_corrupt_frames_on_air_are_counted_not_fatal():
    clock, net = _net(n=3)
    net.start()
    clock.advance_to(100000)
    before = len(net.samples[0])
    for k in range(20):
        SimRadio(net, 2).transmit(bytes([k] * (k + 1)))
        clock.advance_to(clock.now_us() + 2500)
    clock.advance_to(400000)
    assert net.protocol_node(0).stats["decode_errors"] > 0
    assert len(net.samples[0]) > before + 20
