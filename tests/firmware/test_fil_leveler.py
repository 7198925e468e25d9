"""The thesis's leveling robot in the loop: the leveler build of robot_link (32U4, AltIMU-10 v4, Dagu Rover 5,
9600-baud LEVEL_STATE) in simavr on a deformable mound, and the `fil-leveler` scenario.

Times are simulated microseconds.
"""
import copy
import os
import re

import numpy as np
import pytest

from boards.arduino import board as C
from boards.arduino import protocol as P
from harness.sim.avr_bridge import size_report
from harness.sim.fil_leveler_world import LevelerRig, MoundTerrain, leveler_size_report
from onboard.core.samples import WheelCmd

pytestmark = pytest.mark.fil
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKETCH = os.path.join(ROOT, "firmware", "arduino", "robot_link")
BYTE_US_9600 = 10 * 1e6 / 9600          # 8N1: 10 bits a byte


def every(period_us, fn):
    def cb(r):
        if r.t_us % period_us == 0:
            fn(r)
    return cb


def _define(path, name):
    with open(os.path.join(SKETCH, path)) as f:
        m = re.search(r"#define %s (\w+)" % name, f.read())
    return int(m.group(1).rstrip("UL"), 0)


# ------------------------------------------------------------------ protocol and budget (no simavr)
def test_level_state_layout_and_budget_match_the_firmware():
    assert P.BODY_LEN[P.MSG_LEVEL_STATE] == _define("link_protocol.h", "MSG_LEVEL_STATE_LEN")
    assert P.BODY_LEN[P.MSG_IMU_ID] == _define("link_protocol.h", "MSG_IMU_ID_LEN")
    assert P.MSG_LEVEL_STATE == _define("link_protocol.h", "MSG_LEVEL_STATE")
    assert P.MSG_SET_PHASE == _define("link_protocol.h", "MSG_SET_PHASE")
    assert P.LEVEL_STATE_DECIMATION == _define("config.h", "LEVEL_STATE_DECIMATION")
    assert P.LEVEL_STATE_HZ * P.LEVEL_STATE_DECIMATION * C.TELEMETRY_PERIOD_US == 1000000
    capacity, needed, max_hz = P.link_budget(C.LEVELER_LINK_BAUD, P.BODY_LEN[P.MSG_LEVEL_STATE], P.LEVEL_STATE_HZ)
    assert P.wire_bytes(P.BODY_LEN[P.MSG_LEVEL_STATE]) == 35
    assert (capacity, needed) == (960.0, 700) and P.LEVEL_STATE_HZ < max_hz < P.LEVEL_STATE_HZ * 1.5
    # the 100 Hz TELEMETRY of the default build would not fit the radio
    assert P.link_budget(9600, P.BODY_LEN[P.MSG_TELEMETRY], 100)[1] > capacity
    # a frame survives the codec; the encoded layout is the one the firmware writes
    body = bytes(range(1, 30))
    msg = P.decode_message(P.FrameDecoder().feed(P.encode_frame(P.MSG_LEVEL_STATE, 3, body))[0])
    assert msg.name == "LevelState" and msg.t_us == 0x04030201 and msg.tx_dropped == 29 and msg.phase == 28


def test_terrain_actions_conserve_volume_and_need_motion():
    t = MoundTerrain()
    v0, rms0 = t.volume_m3(), t.rms_m()
    t.track_action(0.6, 0.6, 0.7, 0.0, 0.0, 0.15)    # standing still on a slope: nothing moves
    for _ in range(20):
        t.erode()                                     # the mound is below the angle of repose
    assert t.rms_m() == rms0 and t.eroded_m3 == 0.0
    rng = np.random.default_rng(4)
    for _ in range(300):
        n, e, yaw = rng.uniform(0, 1.5, 2).tolist() + [rng.uniform(-3.2, 3.2)]
        t.track_action(n, e, yaw, rng.uniform(-0.02, 0.03), rng.uniform(0, 0.03), rng.uniform(-0.3, 0.3))
        t.erode()
    assert t.volume_m3() == pytest.approx(v0, rel=1e-12, abs=1e-15)
    assert t.cut_m3 > 0 and t.rms_m() < rms0
    # a robot climbing the mound's flank at 10 deg throws soil back downhill: the mound gets lower
    t = MoundTerrain()
    peak = t.height_m.max()
    for k in range(40):
        t.track_action(0.45 + 0.0025 * k, 0.75, 0.0, 0.0025, 0.0025, 0.17)
    assert t.rms_m() < rms0 and t.height_m.max() <= peak


# ------------------------------------------------------------------ firmware in simavr
@pytest.fixture
def rig(fil_built):
    r = LevelerRig(seed=2)
    yield r
    r.close()


def test_leveler_build_fits_the_32u4_and_defaults_keep_their_builds(fil_built):
    rep = leveler_size_report()
    assert rep["board"] == "leveler" and rep["mcu"] == C.LEVELER_MCU
    assert 0 < rep["flash_bytes"] < rep["flash_max_bytes"]
    assert 0 < rep["ram_bytes"] < 0.5 * rep["ram_max_bytes"]
    # the option adds the AltIMU drivers, the tilt filter and LEVEL_STATE on top of the leonardo build
    assert rep["flash_bytes"] > size_report("leonardo")["flash_bytes"]


def test_altimu_whoami_handshake_passes_in_simavr(rig):
    rig.run_for(300000)
    (hello,) = rig.of_type("Hello")
    (imu,) = rig.of_type("ImuId")
    assert hello.board_id == C.LEVELER_BOARD_ID and hello.imu_whoami == C.ALTIMU["lsm303d"][1]
    assert (imu.lsm303d_whoami, imu.l3gd20h_whoami, imu.lps25h_whoami) == tuple(
        C.ALTIMU[d][1] for d in C.ALTIMU_DEVICES)
    assert imu.ok_mask == C.ALTIMU_ALL_OK and rig.link.imu_id is imu
    st = rig.bridge.stats()
    # the firmware set the ranges the host converts with, and reads all three devices
    assert st["lsm303d_ctrl1"] == C.ALTIMU_LSM303D_CTRL1 and st["lsm303d_ctrl2"] == C.ALTIMU_LSM303D_CTRL2
    assert st["l3gd20h_ctrl1"] == C.ALTIMU_L3GD20H_CTRL1 and st["l3gd20h_ctrl4"] == C.ALTIMU_L3GD20H_CTRL4
    assert st["lps25h_ctrl1"] == C.ALTIMU_LPS25H_CTRL1 and st["lsm303d_ctrl7"] == 0
    assert st["lsm303d_burst_reads"] >= 25 and st["l3gd20h_burst_reads"] >= 25 and st["lps25h_burst_reads"] >= 2
    assert st["imu_burst_reads"] == 0                 # the MPU-6050 is not used by this build
    assert not rig.link.level_state.faults & P.FAULT_IMU


def test_missing_altimu_device_fails_the_handshake(fil_built):
    with LevelerRig(seed=2) as r:
        r.bridge.set_device_present("lps25h", False)      # before the first simulated cycle
        r.run_for(300000)
        (imu,) = r.of_type("ImuId")
        assert imu.lps25h_whoami == 0 and imu.ok_mask == 0x03
        assert r.link.level_state.faults & P.FAULT_IMU


def test_level_state_at_9600_baud_arrives_at_the_budget_rate_without_overrun(rig):
    drive = every(50000, lambda r: r.link.command(WheelCmd(r.t_us, 6.0, 6.0)))
    rig.run_for(3000000, drive)
    states = rig.of_type("LevelState")
    # 20 Hz on the firmware clock (every 5th 10 ms tick; a tick starts up to one 1.024 ms wake-up late)
    dts = [b.t_us - a.t_us for a, b in zip(states, states[1:])]
    assert 58 <= len(states) <= 60
    assert min(dts) >= 50000 - 1100 and max(dts) <= 50000 + 1100
    assert (states[-1].t_us - states[0].t_us) / (len(states) - 1) == pytest.approx(50000, abs=30)
    assert not rig.of_type("Telemetry")
    # no overrun: nothing dropped by the firmware, no gap, no broken frame, nothing lost in the bridge
    assert all(s.tx_dropped == 0 for s in states)
    c = rig.link.counters()
    assert c["rx_seq_gaps"] == 0 and rig.link.decoder.errors() == 0 and c["protocol_errors"] == 0
    assert rig.bridge.stats()["tx_dropped"] == 0
    # the uplink carries 700 B/s of the 960 B/s; the commands (10 B each) arrive and are echoed
    assert c["rx_bytes_in"] / 3.0 == pytest.approx(700, abs=20)
    # (the last command may still be on the wire: 10.4 ms)
    assert states[-1].last_cmd_seq in ((rig.link.tx_seq - 1) & 0xFF, (rig.link.tx_seq - 2) & 0xFF)
    assert states[-1].duty_left > 0
    # the bytes really take 9600-baud wire time: PING (10 B) + PONG (14 B)
    sent = rig.t_us
    rig.link.ping(sent)
    assert rig.run_until(lambda r: r.link.pong is not None, 200000, drive)
    assert rig.link.ping_rtt_us >= 24 * BYTE_US_9600
    # the board's tilt estimate follows the terrain under it
    pitch_err = [s.pitch_mrad * 1e-3 for s in states]
    assert max(abs(p) for p in pitch_err) > 0.03          # it drove onto the mound's flank


def test_replies_beyond_the_budget_are_dropped_and_counted_not_waited_for(rig):
    rig.run_for(200000)
    # STATUS requests at 50 Hz: 50 x 38 B + 700 B/s of LEVEL_STATE is twice what 9600 baud carries
    rig.run_for(2000000, every(20000, lambda r: r.link.request_status(r.t_us)))
    assert rig.link.level_state.tx_dropped > 0
    assert rig.link.counters()["rx_seq_gaps"] > 0
    # the loop did not wait for the UART: every LEVEL_STATE that got through is still on the 50 ms grid of
    # the firmware's tick (a blocked write would have pushed the ticks off it), no watchdog reset
    states = rig.of_type("LevelState")
    t0 = states[0].t_us
    assert all(min((s.t_us - t0) % 50000, 50000 - (s.t_us - t0) % 50000) <= 1100 for s in states)
    assert len(states) >= 5 and rig.bridge.stats()["resets"] == 0


def test_link_loss_stops_the_motors_within_250ms(fil_built):
    with LevelerRig(seed=2, plant={"bridge_window_us": 1000}) as r:
        r.run_for(500000, every(50000, lambda q: q.link.command(WheelCmd(q.t_us, 6.0, 6.0))))
        last_send = (r.t_us - 1) // 50000 * 50000
        assert r.plant.duty_left > 0.2
        off = []

        def watch(q):
            if not off and q.bridge.last.ocr_left == 0 and q.bridge.last.ocr_right == 0:
                off.append(q.t_us)

        r.run_for(400000, watch)
        assert off, "motors never stopped"
        # the signed 25-byte command takes 26 ms at 9600 baud and its MAC 0.7 ms (after the loop's tick, whose
        # AltIMU burst reads and tilt filter take up to 2 ms, when the frame completes during it); the firmware
        # stops 250 ms after it took it, checking at least every 1.024 ms; 1 ms lockstep windows
        n = P.wire_bytes(P.BODY_LEN[P.MSG_WHEEL_SPEED] + P.SIG_LEN)
        arrived = 250000 + n * BYTE_US_9600
        assert arrived <= off[0] - last_send <= arrived + 700 + 2000 + 1000 + 1100 + 1000
        r.run_for(120000)
        s = r.link.level_state
        assert s.faults & P.FAULT_FAILSAFE and s.duty_left == 0 and s.duty_right == 0


# ------------------------------------------------------------------ scenario
@pytest.mark.scenario
def test_fil_leveler_reduced_run_lowers_the_mound(fil_built, tmp_path):
    from harness.replay import read_recording, replay_events
    from harness.report import RunReport
    from harness.scenarios import check_metrics, prepare
    from harness.scenarios.context import RunContext
    mod, cfg = prepare("fil-leveler", reduced=True)
    report = RunReport(str(tmp_path / "run"), "fil-leveler", 1, cfg)
    m = mod.run(copy.deepcopy(cfg), RunContext(1, report))
    report.finish(m)
    check_metrics("fil-leveler", m)
    # the host app was recorded at its boundary (the board's pitches, the random walk's draws): its replay
    # commands the same wheels and phases, bit for bit
    events, damage = read_recording(str(tmp_path / "run" / "log.mcap"))
    replayed = replay_events(events)
    assert damage is None and replayed["app"] == "avr_leveler" and replayed["identical"], replayed["topics"]
    assert replayed["topics"]["wheel_cmd"]["replayed"] > 100 and replayed["topics"]["phase"]["replayed"] >= 2
    assert m["success"], m
    assert m["imu_handshake"]["ok"]
    assert m["rms_final_m"] < m["rms_initial_m"]
    # the tracks did it: nothing eroded (the mound is below the angle of repose), volume kept
    assert m["eroded_m3"] == 0.0 and m["tracks_cut_m3"] > 0 and abs(m["volume_error_m3"]) < 1e-12
    assert m["behaviour"]["climbs"] >= 1 and m["behaviour"]["bad_inputs"] == 0
    ls = m["level_state"]
    assert ls["rate_hz"] == pytest.approx(20.0, abs=0.05) and not ls["overrun"] and ls["tx_dropped"] == 0
    # the behaviour's mode went to the board (SET_PHASE) and came back in LEVEL_STATE
    assert m["level_state"]["phase_echoed"] == ("wander", "climb", "crest", "spin").index(m["behaviour"]["mode"]) + 1
    assert m["pitch_error_rms_rad"] < 0.03
    assert m["firmware"]["failsafe_trips"] == 0 and m["firmware"]["crc_errors"] == 0
    assert 0 < m["firmware_flash_bytes"] < m["firmware_flash_max_bytes"]
