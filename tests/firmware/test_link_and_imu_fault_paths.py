"""The firmware's link and IMU fault paths (firmware/arduino/robot_link), each a test that failed before its fix:

- a host flooding queries (GET_STATUS, PING) and refused commands kept the main loop inside poll_link (each
  reply waits for the UART): no failsafe check, no tick, no watchdog feed -> a watchdog reset ~120 ms in;
- an MPU-6050 that did not answer at boot (never set up, asleep) and answered later had FAULT_IMU cleared
  by the first successful read: its frozen registers went out as fresh data;
- the leveler build negated int16 gyro readings in 16-bit int arithmetic: -(-32768) overflows, so a gyro
  saturated in the negative direction flipped the sign of the yaw rate and of the tilt filter's rates;
- the decoder's drop signal was read from the sum of its saturating counters: once a counter stopped at
  65535, its drops no longer set FAULT_RX_ERROR. The decoder now returns -1 for a drop.
- leveler: a LEVEL_STATE dropped for lack of UART room cleared the transient flags (RX_ERROR, ENC_*) it
  would have carried, so the host never saw them.

Times are simulated microseconds.
"""
import ctypes
import random

import pytest

from boards.arduino import protocol as P
from harness.sim.avr_bridge import SIM_KEY_ID, AvrBridge, FilRig, open_link, sim_key


# ------------------------------------------------------------------ host build of link_protocol.c
def test_decoder_reports_each_drop_even_with_saturated_counters(clink):
    """link_decoder_feed() returns -1 for the byte that drops a frame (bad CRC, bad COBS, oversize), 1 for a
    valid frame, 0 otherwise, also when the counters stopped at 0xFFFF (the firmware sets FAULT_RX_ERROR
    from it)."""
    d = clink.Decoder()
    clink.lib.link_decoder_init(ctypes.byref(d))
    d.counters.crc_errors = d.counters.cobs_errors = d.counters.oversize = 0xFFFF

    def feed(data):
        return [clink.lib.link_decoder_feed(ctypes.byref(d), b) for b in data]

    good = P.encode_frame(P.MSG_PING, 1, b"\x01\x02\x03\x04")
    raw = bytearray(P.cobs_decode(good[:-1]))
    raw[-1] ^= 0x01
    bad_crc = P.cobs_encode(bytes(raw)) + b"\x00"
    assert feed(bad_crc) == [0] * (len(bad_crc) - 1) + [-1]
    assert feed(b"\x05\x01\x00") == [0, 0, -1]                    # a COBS code past the end
    assert feed(b"\x02\x07\x00") == [0, 0, -1]                    # too short for header + CRC
    r = feed(b"\x55" * 50 + b"\x00")                              # oversize: dropped at byte 46
    assert r[P.MAX_ENCODED] == -1 and r.count(-1) == 1 and r[-1] == 0
    assert feed(b"\x00") == [0]                                   # an empty frame: not an error
    assert feed(good) == [0] * (len(good) - 1) + [1]
    c = d.counters
    assert (c.crc_errors, c.cobs_errors, c.oversize, c.frames_ok) == (0xFFFF, 0xFFFF, 0xFFFF, 1)


# ------------------------------------------------------------------ the firmware in simavr
@pytest.mark.fil
@pytest.mark.parametrize("board", ["uno", "leonardo"])
def test_query_flood_neither_resets_the_board_nor_delays_the_failsafe(board, fil_built):
    """A DUTY command, then 400 ms of back-to-back GET_STATUS, PING and forged (refused) signed commands: the
    replies saturate the uplink, yet the loop keeps running: no watchdog reset, telemetry keeps coming, and the
    failsafe stops the motors 250 ms after the command (not earlier through a reset, not later)."""
    rig = FilRig(board, plant={"imu_model": "truth"})
    try:
        rig.run_for(30000)
        sent = rig.t_us
        rig.link.duty(200, 200, sent)
        rig.run_for(20000)
        assert rig.plant.duty_left == pytest.approx(0.5)
        rng = random.Random(7)
        counter = rig.link.signer.counter
        flood = []
        for k in range(420):
            seq = (100 + k) & 0xFF
            if k % 3 == 0:
                flood.append(P.encode_frame(P.MSG_GET_STATUS, seq, b""))
            elif k % 3 == 1:
                flood.append(P.encode_frame(P.MSG_PING, seq, bytes((1, 2, 3, k & 0xFF))))
            else:
                body = P.wheel_speed_body(5000, 5000)
                trailer = bytes((SIM_KEY_ID,)) + (counter + 1 + k).to_bytes(6, "little") + rng.randbytes(8)
                flood.append(P.encode_frame(P.MSG_WHEEL_SPEED, seq, body + trailer))
        data = b"".join(flood)
        assert len(data) * 10 / 115200 > 0.4                      # longer than the failsafe timeout
        rig.link.send_raw(data)
        n_tel = len(rig.of_type("Telemetry"))
        off = None
        for _ in range(450):
            rig.step()
            if off is None and rig.bridge.last.ocr_left == 0 and rig.bridge.last.ocr_right == 0:
                off = rig.t_us
        assert rig.bridge.last.resets == 0, "the flood stalled the loop into a watchdog reset"
        assert off is not None
        # command on the wire (2.2 ms) + MAC (0.7 ms) + 250 ms + one pass of the loop (a STATUS reply waiting
        # for the UART: 46 bytes = 4 ms, a TELEMETRY 3.2 ms) + 1 ms lockstep window
        assert 250000 <= off - sent <= 250000 + 2200 + 700 + 8000 + 1000
        assert len(rig.of_type("Telemetry")) - n_tel >= 20         # the 100 Hz tick kept running
        rig.run_for(100000)
        tel = rig.link.telemetry
        assert tel.faults & P.FAULT_FAILSAFE and tel.duty_left == 0 and rig.link.boots == 1
    finally:
        rig.close()


@pytest.mark.fil
def test_imu_missing_at_boot_stays_faulted_when_it_answers_later(fil_built):
    """An MPU-6050 that did not answer at boot was never woken or configured: when it answers later its
    registers are frozen (asleep, default ranges), so FAULT_IMU must stay set, not be cleared by the first
    read that succeeds."""
    bridge = AvrBridge("uno")
    try:
        bridge.set_imu_present(False)                             # before the first simulated cycle
        ser, link = open_link(bridge)
        t = 0

        def run(ms):
            nonlocal t
            for _ in range(ms):
                t += 1000
                st = bridge.run(t, ser.tx_bytes, 0, 0)
                ser.sync_rx(st.tx_bytes)
                link.poll(t)
        run(50)
        assert link.hello.imu_whoami == 0 and link.telemetry.faults & P.FAULT_IMU
        bridge.set_imu_present(True)
        bridge.set_imu((100, 200, 8192), (5, 6, 7))
        run(100)
        tel = link.telemetry
        assert tel.faults & P.FAULT_IMU, "frozen registers of an IMU never set up reported as fresh: %r" % (
            tel.accel_raw,)
        ser.close()
    finally:
        bridge.close()


@pytest.mark.fil
def test_leveler_gyro_saturated_negative_keeps_its_sign(fil_built):
    """L3GD20H gyro y and z at -32768 (full scale, -500 deg/s): LEVEL_STATE's yaw rate is +10008 mrad/s (FRD z =
    -chip z) and the tilt filter's pitch grows (pitch rate = -chip y), as at -32767; int16 negation on the
    AVR (16-bit int) turned -(-32768) into -32768."""
    from harness.sim.fil_leveler_world import LevelerBridge
    results = {}
    for g in (-32767, -32768):
        bridge = LevelerBridge()
        try:
            ser, link = open_link(bridge)
            msgs = []
            t = 0
            level = (0, 0, 8197, 0, 0, 0, 0, 0, 0, 4096 * 1013, 0)
            spin = (0, 0, 8197, 0, g, g, 0, 0, 0, 4096 * 1013, 0)
            for k in range(260):
                t += 1000
                st = bridge.run(t, ser.tx_bytes, 0, 0, imu_raw=level if k < 160 else spin)
                ser.sync_rx(st.tx_bytes)
                msgs.extend(m for m in link.poll(t) if m.name == "LevelState")
            results[g] = msgs[-1]
            ser.close()
        finally:
            bridge.close()
    for g, s in results.items():
        assert s.yaw_rate_mradps == pytest.approx(10008, abs=2), g
        assert s.pitch_mrad > 100, g
    assert abs(results[-32768].pitch_mrad - results[-32767].pitch_mrad) <= 2


@pytest.mark.fil
def test_leveler_transient_fault_survives_a_dropped_level_state(fil_built):
    """Leveler: a LEVEL_STATE the UART cannot take is dropped (tx_dropped); the transient flags it would have
    carried (here FAULT_RX_ERROR of one bad frame) must go out in the next LEVEL_STATE that is sent, not be
    cleared with the dropped one."""
    from harness.sim.fil_leveler_world import LevelerRig
    with LevelerRig(seed=2) as rig:
        rig.run_for(200000)
        # 40 GET_STATUS (6 B = 6.25 ms each at 9600 baud): their 46-byte replies fill the 128-byte transmit buffer,
        # so LEVEL_STATEs are dropped; one bad frame (too short) in the middle, after the 8th
        flood = [P.encode_frame(P.MSG_GET_STATUS, k, b"") for k in range(40)]
        rig.link.send_raw(b"".join(flood[:8]) + b"\x01\x00" + b"".join(flood[8:]))
        n0 = len(rig.of_type("LevelState"))
        rig.run_for(1500000)
        states = rig.of_type("LevelState")[n0:]
        assert states[-1].tx_dropped > 0                     # LEVEL_STATEs were dropped meanwhile
        assert any(s.faults & P.FAULT_RX_ERROR for s in states), [(s.t_us, hex(s.faults), s.tx_dropped)
                                                                  for s in states[:6]]
