"""Firmware-in-the-loop: the real robot_link ELF (Uno and 32U4 builds) in simavr, driven by the
host driver through a pseudo-terminal, with simulated motors, encoders and IMU, in lockstep.

Every test runs for both boards. Times are simulated microseconds.
"""
import math
import random

import pytest

from boards.arduino import board as C
from boards.arduino import protocol as P
from harness.sim.avr_bridge import SIM_KEY_ID, AvrBridge, FilRig, LockstepSerial, sim_key, size_report
from onboard.comms.transport import TransportClosed
from onboard.core.samples import WheelCmd

pytestmark = pytest.mark.fil
BOARDS = ["uno", "leonardo"]


@pytest.fixture(params=BOARDS)
def board(request, fil_built):
    return request.param


@pytest.fixture
def rig(board):
    r = FilRig(board, plant={"imu_model": "truth"})
    yield r
    r.close()


def every(period_us, fn):
    """each_step callback running fn(rig) every period_us of simulated time."""
    def cb(r):
        if r.t_us % period_us == 0:
            fn(r)
    return cb


def wheels(left_radps, right_radps, period_us=20000):
    return every(period_us, lambda r: r.link.command(WheelCmd(r.t_us, left_radps, right_radps)))


def status(rig):
    """Ask for STATUS and return it (bounded wait)."""
    rig.link.status = None
    rig.link.request_status(rig.t_us)
    assert rig.run_until(lambda r: r.link.status is not None, 20000)
    return rig.link.status


# ------------------------------------------------------------------ build
def test_firmware_fits_the_board(board):
    rep = size_report(board)
    assert rep["mcu"] == C.BOARDS[board]["mcu"]
    assert 0 < rep["flash_bytes"] < rep["flash_max_bytes"]
    assert 0 < rep["ram_bytes"] < 0.5 * rep["ram_max_bytes"]       # leave room for the stack


# ------------------------------------------------------------------ boot, IMU, telemetry
def test_boot_hello_and_imu_setup(rig, board):
    rig.run_for(1000000)
    (hello,) = rig.of_type("Hello")
    assert hello.version == P.PROTOCOL_VERSION
    assert hello.board_id == C.BOARDS[board]["board_id"]
    assert hello.reset_flags & C.RESET_FLAG_POWER_ON
    assert hello.imu_whoami == C.IMU_WHOAMI
    st = rig.bridge.stats()
    # the firmware woke the MPU-6050 and set the ranges the driver converts with
    assert st["imu_pwr_mgmt_1"] & 0x40 == 0
    assert st["imu_gyro_config"] == C.IMU_GYRO_CONFIG and st["imu_accel_config"] == C.IMU_ACCEL_CONFIG
    tel = rig.of_type("Telemetry")
    # fixed rate: 100 Hz telemetry, one IMU burst read each, 10 ms apart on the firmware clock
    assert 98 <= len(tel) <= 100
    # (the last telemetry may still be on the wire at the end of the run)
    assert len(tel) <= st["imu_burst_reads"] <= len(tel) + 1
    # the loop sleeps between interrupts; timer0 wakes it every 1.024 ms, so a read starts
    # up to one wake-up late, but the rate has no drift
    dts = [b.t_us - a.t_us for a, b in zip(tel, tel[1:])]
    assert min(dts) >= 10000 - 1024 and max(dts) <= 10000 + 1024
    assert (tel[-1].t_us - tel[0].t_us) / (len(tel) - 1) == pytest.approx(10000, abs=15)
    assert tel[-1].faults == P.FAULT_NO_COMMAND
    assert rig.link.counters()["rx_seq_gaps"] == 0 and rig.link.decoder.errors() == 0


def test_ping_round_trip_and_status(rig):
    rig.run_for(50000)
    sent = rig.t_us
    rig.link.ping(sent)
    assert rig.run_until(lambda r: r.link.pong is not None, 20000)
    rtt = rig.link.ping_rtt_us
    # 10-byte PING + 14-byte PONG at 115200 baud ~ 2.2 ms on the wire, plus 1 ms steps
    assert 2000 <= rtt <= 5000
    assert sent < rig.link.pong.fw_t_us <= rig.t_us
    st = status(rig)
    assert st.board_id == rig.link.hello.board_id
    assert st.frames_ok == 2 and st.crc_errors == 0 and st.seq_gaps == 0


# ------------------------------------------------------------------ motion and sensors vs truth
def test_wheel_commands_move_robot_and_telemetry_matches_truth(rig):
    truth = {}

    def record(r):
        truth[r.t_us] = (r.plant.enc_ticks(), r.robot.yaw_rate_radps, r.robot.left_radps, r.robot.right_radps)

    cmd = wheels(12.0, 6.0)

    def each(r):
        cmd(r)
        record(r)

    rig.run_for(100000)
    rig.run_for(3000000, each)
    r = rig.robot
    # the firmware's speed loop holds the commanded wheel speeds (motors 4 % faster than its model)
    assert r.left_radps == pytest.approx(12.0, abs=0.25)
    assert r.right_radps == pytest.approx(6.0, abs=0.25)
    # (12 + 6) / 2 rad/s * 0.05 m = 0.45 m/s for ~3 s, turning right (east) from north
    assert r.distance_m == pytest.approx(0.45 * 3.0, rel=0.05)
    # turning right at (12 - 6) rad/s * 0.05 m / 0.30 m * 0.9 (skid-steer efficiency)
    assert r.yaw_rate_radps == pytest.approx(0.9, abs=0.03)
    tel = [m for m in rig.of_type("Telemetry") if m.t_us > 1500000]
    assert len(tel) > 100
    for m in tel:
        # encoder counts read at m.t_us (firmware clock = simulated time) vs truth at that step
        step = (m.t_us // 1000) * 1000
        (enc_l, enc_r), yaw_rate, _, _ = truth[step]
        assert abs(m.enc_left_ticks - enc_l) <= 2
        assert abs(m.enc_right_ticks - enc_r) <= 2
        # IMU: gyro z (body, converted by the driver's constants) vs the truth yaw rate
        w = C.gyro_raw_to_body_radps(m.gyro_raw)
        assert w[2] == pytest.approx(yaw_rate, abs=0.01)
        f = C.accel_raw_to_body_mps2(m.accel_raw)
        assert f[2] == pytest.approx(-9.80665, abs=0.01)
        assert m.faults == 0
    # wheel speed from encoders as the driver reports it
    assert rig.link.telemetry.duty_left > rig.link.telemetry.duty_right > 0


def test_imu_samples_reach_the_runtime_interface(board):
    got = []
    with FilRig(board, plant={"imu_model": "truth"}) as rig:
        rig.link.on_imu = got.append
        rig.run_for(1500000, wheels(10.0, 4.0))
    assert len(got) > 100
    late = [s for s in got if s.time_us > 1000000]
    # yaw increments over 10 ms match the steady turn: dang_z = yaw_rate * dt
    yaw_rate = rig.robot.yaw_rate_radps
    for s in late:
        assert s.dt_us == pytest.approx(10000, abs=1024)
        assert s.dang_body_rad[2] / (s.dt_us * 1e-6) == pytest.approx(yaw_rate, abs=0.01)
        assert s.dvel_body_mps[2] / (s.dt_us * 1e-6) == pytest.approx(-9.80665, abs=0.01)


# ------------------------------------------------------------------ failsafe
def test_link_loss_stops_motors_within_250ms_then_resumes(rig):
    rig.run_for(500000, wheels(10.0, 10.0))
    # the last command sent in run_for was at the last multiple of 20 ms
    last_send = (rig.t_us - 1) // 20000 * 20000
    assert rig.plant.duty_left > 0.2
    off = []

    def watch(r):
        if not off and r.bridge.last.ocr_left == 0 and r.bridge.last.ocr_right == 0:
            off.append(r.t_us)

    rig.run_for(400000, watch)
    assert off, "motors never stopped"
    # the signed command reaches the firmware ~2.2 ms after it is sent (25 bytes at 115200 baud) and its
    # MAC takes 0.7 ms; the firmware stops at 250 ms after that, checking at least every 1.024 ms
    assert 250000 <= off[0] - last_send <= 250000 + 2200 + 700 + 1100 + 1000
    tel = rig.link.telemetry
    assert tel.faults & P.FAULT_FAILSAFE and tel.duty_left == 0 and tel.duty_right == 0
    assert status(rig).failsafe_trips == 1
    # a motionless robot after the stop: the speed loop is not running on
    rig.run_for(300000)
    assert abs(rig.robot.left_radps) < 0.05
    # next valid command: running again, flag cleared
    rig.link.command(WheelCmd(rig.t_us, 8.0, 8.0))
    assert rig.run_until(lambda r: r.plant.duty_left > 0.1, 20000)
    rig.run_for(30000)
    assert not rig.link.telemetry.faults & P.FAULT_FAILSAFE
    assert status(rig).failsafe_trips == 1


def test_out_of_range_commands_clamped_and_flagged(rig):
    rig.run_for(20000)
    rig.run_for(1500000, every(20000, lambda r: r.link.command(WheelCmd(r.t_us, 30.0, -40.0))))
    assert rig.robot.left_radps == pytest.approx(C.MAX_WHEEL_RADPS, abs=0.5)
    assert rig.robot.right_radps == pytest.approx(-C.MAX_WHEEL_RADPS, abs=0.5)
    assert rig.link.telemetry.faults & P.FAULT_CLAMPED
    st = status(rig)
    assert st.clamped == 75 and st.faults & P.FAULT_CLAMPED
    rig.link.duty(1000, -50, rig.t_us)
    rig.run_for(20000)
    assert rig.plant.duty_left == pytest.approx(1.0) and rig.plant.duty_right == pytest.approx(-50 / 400)
    assert rig.link.telemetry.duty_left == C.PWM_TOP and rig.link.telemetry.faults & P.FAULT_CLAMPED
    rig.link.duty(100, 100, rig.t_us)
    rig.run_for(20000)
    assert not rig.link.telemetry.faults & P.FAULT_CLAMPED     # in range again: flag cleared
    assert rig.link.hello is not None and rig.link.boots == 1


# ------------------------------------------------------------------ bad frames from the host
def test_bad_frames_dropped_counted_and_resynced(rig):
    rig.run_for(30000)
    rng = random.Random(6)
    good = P.encode_frame(P.MSG_WHEEL_SPEED, 0, P.wheel_speed_body(5000, 5000))
    raw = bytearray(P.cobs_decode(good[:-1]))
    raw[-1] ^= 0x01
    bad_crc = P.cobs_encode(bytes(raw)) + b"\x00"
    garbage = bytes(rng.randrange(1, 256) for _ in range(30)) + b"\x00"
    cases = [
        ("garbage", garbage),
        ("truncated", good[:-4] + b"\x00"),
        ("bad crc", bad_crc),
        ("oversize", b"\x55" * 80 + b"\x00"),
        ("unknown type", P.encode_frame(0x42, 1, b"")),
        ("bad length", P.encode_frame(P.MSG_WHEEL_SPEED, 2, b"\x01\x02\x03")),
        ("bad reset magic", signed(rig, P.MSG_RESET, 3, b"WDT?")),
        ("junk without end", bytes(rng.randrange(1, 256) for _ in range(20))),
    ]
    expected = P.FrameDecoder()
    for _name, data in cases:
        assert rig.link.send_raw(data)
        expected.feed(data)
        rig.run_for(5000)
    # nothing moved the motors, and the firmware flagged the bad input
    assert rig.plant.duty_left == 0 and rig.plant.duty_right == 0
    assert any(m.faults & P.FAULT_RX_ERROR for m in rig.of_type("Telemetry"))
    # the next valid frame is accepted (the 0x00 after the junk resyncs): host seq 4
    rig.link.tx_seq = 4
    assert rig.link.send_raw(b"\x00")
    expected.feed(b"\x00")
    seq = rig.link.command(WheelCmd(rig.t_us, 5.0, 5.0))
    assert rig.run_until(lambda r: r.link.telemetry.last_cmd_seq == seq and r.plant.duty_left > 0, 30000)
    st = status(rig)
    # the firmware's counters equal the host decoder's on the same bytes (same rules)
    assert st.crc_errors == expected.crc_errors >= 1
    assert st.cobs_errors == expected.cobs_errors >= 1
    assert st.oversize == expected.oversize == 1
    # the unsigned bad-length WHEEL_SPEED is dropped by the signature check (a trailer of the wrong length)
    # before its seq is looked at: the host seq goes 1, 3, 4 at the firmware (one gap)
    assert st.unknown_type == 1 and st.bad_body == 1 and st.sig_bad_len == 1
    assert st.frames_ok == expected.frames_ok + 2          # + the command and GET_STATUS
    assert st.seq_gaps == 1


def signed(rig, msg_type, seq, body):
    """A command signed with the simulation key and the driver's next counter (used up)."""
    counter = rig.link.signer.next_counter(rig.t_us)
    rig.link.signer.counter = counter
    return P.encode_signed_frame(sim_key(), SIM_KEY_ID, counter, msg_type, seq, body)


def test_sequence_gap_counted(rig):
    rig.run_for(20000)
    rig.link.command(WheelCmd(rig.t_us, 1.0, 1.0))
    rig.link.tx_seq = (rig.link.tx_seq + 3) & 0xFF              # three frames 'lost'
    rig.link.command(WheelCmd(rig.t_us, 1.0, 1.0))
    rig.run_for(10000)
    assert status(rig).seq_gaps == 1


# ------------------------------------------------------------------ watchdog
def test_watchdog_reset_path(rig):
    rig.run_for(200000, wheels(10.0, 10.0))
    assert rig.plant.duty_left > 0.2
    rig.link.reset_board(rig.t_us)
    assert rig.run_until(lambda r: r.link.boots == 2, 300000)
    hello = rig.of_type("Hello")[-1]
    assert hello.reset_flags & C.RESET_FLAG_WATCHDOG
    assert rig.bridge.last.resets == 1
    assert rig.plant.duty_left == 0 and rig.plant.duty_right == 0
    rig.run_for(30000)
    assert rig.link.telemetry.faults & P.FAULT_WDT_RESET
    assert rig.link.telemetry.faults & P.FAULT_NO_COMMAND
    # the firmware kept its counter mark (2 s of stamps ahead) in EEPROM: the host's stamps are below it
    # until simulated time passes it (test_avr_signing.py); here the host jumps past it
    rig.link.signer.counter += 200000
    rig.link.command(WheelCmd(rig.t_us, 6.0, 6.0))
    assert rig.run_until(lambda r: r.plant.duty_left > 0.1, 30000)


def test_imu_failure_flagged_without_watchdog_reset(rig):
    rig.run_for(100000)
    rig.bridge.set_imu_present(False)
    rig.run_for(200000)
    assert rig.link.telemetry.faults & P.FAULT_IMU
    n_err = status(rig).imu_errors
    assert n_err >= 15
    assert rig.bridge.last.resets == 0                      # the TWI timeout kept the loop alive
    rig.bridge.set_imu_present(True)
    rig.run_for(50000)
    assert not rig.link.telemetry.faults & P.FAULT_IMU


def test_encoder_edges_too_fast_are_flagged(board, fil_built):
    """A jump of many counts within 1 ms: edges come faster than the encoder interrupt can
    run, the XOR decoding sees both channels change at once and counts the error."""
    with AvrBridge(board) as bridge:
        ser = LockstepSerial(bridge.pty_path).open()
        from boards.arduino.driver import AvrRobotLink
        link = AvrRobotLink(ser)
        t = 0
        flags = 0
        for target in [0] * 20 + [3002] * 30:       # left wheel only: 3002 edges in 1 ms
            t += 1000
            st = bridge.run(t, ser.tx_bytes, target, 0)
            ser.sync_rx(st.tx_bytes)
            for m in link.poll(t):
                flags |= m.faults if m.name == "Telemetry" else 0
        tel = link.telemetry
        assert flags & P.FAULT_ENC_LEFT and not flags & P.FAULT_ENC_RIGHT
        link.request_status(t)
        st = bridge.run(t + 10000, ser.tx_bytes, 3002, 0)
        ser.sync_rx(st.tx_bytes)
        link.poll(t + 10000)
        s = link.status
        assert s.enc_errors_left > 0 and s.enc_errors_right == 0
        assert tel.enc_left_ticks != 3002 and tel.enc_right_ticks == 0
        ser.close()


def test_slow_edges_counted_exactly_both_directions(board, fil_built):
    with AvrBridge(board) as bridge:
        ser = LockstepSerial(bridge.pty_path).open()
        from boards.arduino.driver import AvrRobotLink
        link = AvrRobotLink(ser)
        t, pos = 0, 0
        path = [pos] * 50                            # the firmware boots first
        for k in range(400):
            pos += 3 if k < 300 else -5             # forward, then backward (edges 333/200 us apart)
            path.append(pos)
        for p in path:
            t += 1000
            st = bridge.run(t, ser.tx_bytes, p, -2 * p)
            ser.sync_rx(st.tx_bytes)
            link.poll(t)
        for _ in range(20):
            t += 1000
            st = bridge.run(t, ser.tx_bytes, pos, -2 * pos)
            ser.sync_rx(st.tx_bytes)
            link.poll(t)
        assert link.telemetry.enc_left_ticks == pos == 300 * 3 - 100 * 5
        assert link.telemetry.enc_right_ticks == -2 * pos
        link.request_status(t)
        st = bridge.run(t + 10000, ser.tx_bytes, pos, -2 * pos)
        ser.sync_rx(st.tx_bytes)
        link.poll(t + 10000)
        assert link.status.enc_errors_left == 0 and link.status.enc_errors_right == 0
        ser.close()


# ------------------------------------------------------------------ the port vanishes
def test_vanished_port_is_reported_not_raised(rig):
    rig.run_for(50000, wheels(5.0, 5.0))
    rig.bridge.kill()
    rig.link.poll(rig.t_us)
    rig.link.command(WheelCmd(rig.t_us, 5.0, 5.0))
    rig.link.poll(rig.t_us)
    assert not rig.link.link_up
    assert rig.link.transport_errors == 1


def test_longer_lockstep_windows_keep_the_wheel_loop(board, fil_built):
    """5 ms windows (faster, coarser): host bytes cross every 5 ms, the speed loop still holds."""
    with FilRig(board, plant={"imu_model": "truth", "bridge_window_us": 5000}) as rig:
        rig.run_for(1500000, wheels(9.0, 9.0))
        assert rig.robot.left_radps == pytest.approx(9.0, abs=0.25)
        assert rig.bridge.steps == 1500000 // 5000
        assert 140 <= len(rig.of_type("Telemetry")) <= 150


def test_free_running_bridge_serves_a_plain_serial_client(board, fil_built):
    """--free-run: no harness, the firmware runs paced to the wall clock (x50) and any serial
    client (here the driver on a plain pyserial transport) talks to it."""
    import subprocess
    import time as _time
    from boards.arduino.driver import AvrRobotLink
    from harness.sim.avr_bridge import BRIDGE_BIN, elf_path
    from onboard.comms.transport import open_transport
    proc = subprocess.Popen([BRIDGE_BIN, "-m", C.BOARDS[board]["mcu"], "--free-run", "50", elf_path(board)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        pty = proc.stdout.readline().split()[1]
        link = AvrRobotLink(open_transport("serial://%s?baud=115200" % pty))
        deadline = _time.monotonic() + 20.0
        n = 0
        while link.telemetry_frames < 20 and _time.monotonic() < deadline:
            n += 1
            link.poll(n)
            _time.sleep(0.01)
        # a client joining mid-stream may see the tail of one frame first: dropped, then resync
        assert link.telemetry_frames >= 20 and link.decoder.errors() <= 1
        link.transport.close()
    finally:
        proc.kill()
        proc.wait()


def _unread_output_run(board, unread_s):
    """60 s of simulated telemetry (~220 kB, far more than the pty and a 512-byte bridge buffer hold) with
    nobody reading the pty for the first ``unread_s`` seconds of wall time, then everything read; -> (bytes
    read, frames, the bridge's byte count, its stats). The bridge waits for a reader up to 10 minutes
    (BRIDGE_TX_BLOCK_MS), far beyond any ``unread_s`` here, so a slow host cannot make it drop."""
    import select
    from onboard.comms.transport import SerialTransport
    with AvrBridge(board, env={"BRIDGE_OUT_CAP": "512", "BRIDGE_TX_BLOCK_MS": "600000"}) as bridge:
        ser = SerialTransport(bridge.pty_path).open()
        bridge.proc.stdin.write(b"run 60000000 -1 0 0\n")
        out_fd = bridge.proc.stdout.fileno()
        ready, _, _ = select.select([out_fd], [], [], unread_s)
        assert not ready, "the bridge finished 60 s of output with nobody reading"
        dec = P.FrameDecoder()
        frames = []
        total = 0
        while not select.select([out_fd], [], [], 0)[0]:
            data = ser.read(65536, 0.05)
            total += len(data)
            frames += dec.feed(data)
        answer = bridge._readline().split()
        assert answer[0] == "ok"
        tx_bytes = int(answer[2])
        for _ in range(200):                       # the tail still in the pty (bounded)
            if total >= tx_bytes:
                break
            data = ser.read(65536, 0.05)
            total += len(data)
            frames += dec.feed(data)
        assert dec.errors() == 0
        stats = bridge.stats()
        ser.close()
    return total, frames, tx_bytes, stats


@pytest.mark.slow
def test_uart_output_back_pressure_loses_nothing(board, fil_built):
    """Nobody reads the pty while the firmware talks: the simulation waits for the reader instead of
    dropping bytes, and every frame arrives, in order. Whether the pty filled up before the reader came
    depends on the host's speed, so an unread time that was too short to make the bridge wait is tried
    again longer (the waiting must have happened: ``backpressure_waits`` > 0)."""
    for unread_s in (3.0, 12.0, 48.0):
        total, frames, tx_bytes, st = _unread_output_run(board, unread_s)
        assert total == tx_bytes > 200000
        seqs = [f.seq for f in frames]
        assert all((b - a) & 0xFF == 1 for a, b in zip(seqs, seqs[1:]))
        assert len(frames) >= 5990 and st["tx_dropped"] == 0
        if st["backpressure_waits"] > 0:
            break
    assert st["backpressure_waits"] > 0, "the pty never filled: the bridge never had to wait for the reader"


def test_host_burst_larger_than_uart_fifo_is_delivered(rig):
    """30 signed wheel commands written at once (750 bytes; the simulated UART's receive FIFO holds
    64): the bridge feeds them as the UART's XON/XOFF allows and the firmware takes them all."""
    rig.run_for(30000)
    first = rig.link.tx_seq
    burst = b"".join(signed(rig, P.MSG_WHEEL_SPEED, (first + k) & 0xFF, P.wheel_speed_body(100 * k, 0))
                     for k in range(30))
    rig.link.tx_seq = (first + 30) & 0xFF
    assert rig.link.send_raw(burst)                 # 750 bytes: 65 ms at 115200 baud
    rig.run_for(100000)
    st = status(rig)
    assert st.frames_ok == 31 and st.seq_gaps == 0 and st.crc_errors == 0 and st.cobs_errors == 0
    assert rig.link.telemetry.last_cmd_seq == (first + 29) & 0xFF
    assert rig.bridge.stats()["uart_fed"] == rig.serial.tx_bytes
