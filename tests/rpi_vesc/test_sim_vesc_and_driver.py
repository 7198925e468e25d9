"""Simulated VESC on a pty and the board's VESC driver over the real serial path (pyserial)."""
import math

import pytest

from boards.rpi import board as C
from boards.rpi.vesc_motors import VescDiffDrive
from harness.sim.vesc import SimVesc, SimVescPort, speed_step_response
from onboard.comms.transport import SerialTransport
from onboard.comms.vesc import codec
from onboard.core.samples import WheelCmd


def _rig(tmp_path, can_forward=False, sim_cfg=None, drv_cfg=None):
    cfg = dict(sim_cfg or {})
    left = SimVesc(dict(cfg, controller_id=1))
    right = SimVesc(dict(cfg, controller_id=2))
    if can_forward:
        ports = {"uart": SimVescPort(left, can_bus=[right], link_path=str(tmp_path / "uart"))}
        motors = [{"name": "left", "link": "uart", "controller_id": 1, "direction": 1},
                  {"name": "right", "link": "uart", "can_id": 2, "controller_id": 2, "direction": -1}]
    else:
        ports = {"l": SimVescPort(left, link_path=str(tmp_path / "l")),
                 "r": SimVescPort(right, link_path=str(tmp_path / "r"))}
        motors = [{"name": "left", "link": "l", "controller_id": 1, "direction": 1},
                  {"name": "right", "link": "r", "controller_id": 2, "direction": -1}]
    links = {name: (lambda p=p: SerialTransport(p.path).open()) for name, p in ports.items()}
    drv = VescDiffDrive(links, motors, drv_cfg)
    return left, right, ports, drv


class _World:
    """Lockstep loop: 1 kHz UART service + motor physics; driver poll/command at 50 Hz."""

    def __init__(self, ports, sims, drv):
        self.ports, self.sims, self.drv, self.t = ports, sims, drv, 0
        self.samples = []

    def run(self, until_us, cmd=None, stop=False):
        while self.t < until_us:
            self.t += 1000
            for p in self.ports.values():
                p.service(self.t)
            for s in self.sims:
                s.step(0.001, self.t)
            if self.t % 20000 == 0:
                if cmd is not None:
                    self.drv.command(WheelCmd(self.t, cmd[0], cmd[1]))
                elif stop:
                    self.drv.stop(self.t)
                self.samples.extend(self.drv.poll(self.t))


@pytest.fixture
def close_ports():
    opened = []
    yield opened
    for p in opened:
        p.close()


@pytest.mark.parametrize("can_forward", [False, True])
def test_wheel_command_maps_to_erpm_and_telemetry_follows(tmp_path, close_ports, can_forward):
    left, right, ports, drv = _rig(tmp_path, can_forward)
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(1000000, cmd=(8.0, 8.0))
    erpm = 8.0 * C.ERPM_PER_RADPS
    assert left.setpoint == pytest.approx(round(erpm)) and right.setpoint == pytest.approx(-round(erpm))
    tel = drv.motors["left"].telemetry
    assert tel.erpm == pytest.approx(erpm, rel=1e-3)
    assert tel.wheel_radps == pytest.approx(8.0, rel=1e-3)
    assert drv.motors["right"].telemetry.wheel_radps == pytest.approx(8.0, rel=1e-3)   # mirrored motor
    assert drv.faults() == set()
    assert drv.report()["unrouted_replies"] == 0
    assert {s.motor for s in w.samples} == {"left", "right"}


def test_sim_motor_first_order_step_response():
    v = SimVesc({"accel_erpm_per_s_per_a": 1e5, "current_limit_a": 100.0})
    v.handle(codec.set_rpm(3000), 0)
    t = 0
    errs = []
    for k in range(1, 401):
        t = k * 1000
        v.step(0.001, t)
        errs.append(abs(v.erpm - speed_step_response(k * 0.001, 3000.0, 0.08)))
    assert max(errs) < 3000 * 0.01                  # within 1 % of the first-order model


def test_sim_current_limit_caps_acceleration():
    v = SimVesc({"accel_erpm_per_s_per_a": 1000.0, "current_limit_a": 10.0})
    v.handle(codec.set_rpm(50000), 0)
    for k in range(1, 101):
        v.step(0.001, k * 1000)
    assert v.current_a == pytest.approx(10.0)
    assert v.erpm < 10.0 * 1000.0 * 0.1 * 1.001     # at most k_a * i_max * t


def test_sim_timeout_releases_motor_and_reports_it():
    v = SimVesc({"timeout_ms": 200})
    v.handle(codec.set_rpm(2000), 0)
    for k in range(1, 151):
        v.step(0.001, k * 1000)
    assert v.mode == "rpm"
    v.handle(codec.alive(), 150000)                  # keep-alive resets the timeout
    for k in range(151, 340):
        v.step(0.001, k * 1000)
    assert v.mode == "rpm" and v.timeouts == 0
    for k in range(340, 400):
        v.step(0.001, k * 1000)
    assert v.mode == "released" and v.timeouts == 1
    assert codec.decode_values(v.handle(codec.get_values(), 400000)).status == codec.STATUS_TIMEOUT


def test_sim_fault_ignores_commands_and_reports_code():
    v = SimVesc()
    v.handle(codec.set_rpm(2000), 0)
    v.inject_fault(codec.FAULT_ABS_OVER_CURRENT, 1000, duration_s=0.1)
    assert v.mode == "released"
    v.handle(codec.set_rpm(2000), 2000)
    assert v.mode == "released"
    assert codec.decode_values(v.handle(codec.get_values(), 3000)).fault_code == 4
    v.step(0.001, 101000)
    assert v.fault_code == 0


def test_sim_port_skips_garbage_and_partial_frames(tmp_path, close_ports):
    v = SimVesc()
    port = SimVescPort(v)
    close_ports.append(port)
    t = SerialTransport(port.path).open()
    try:
        frame = codec.encode_frame(codec.set_rpm(1234))
        bad = bytearray(codec.encode_frame(codec.set_rpm(999)))
        bad[4] ^= 1
        t.write(b"\xff\x02\x40garbage" + bytes(bad) + frame[:4])
        port.service(1000)
        assert v.mode == "released"                  # nothing valid complete yet
        t.write(frame[4:] + codec.encode_frame(codec.get_values()))
        port.service(2000)
        assert v.mode == "rpm" and v.setpoint == 1234.0
        reply = b""
        for _ in range(10):
            reply += t.read(4096, 0.0)
        [payload] = codec.FrameDecoder().feed(reply)
        assert codec.decode_values(payload).controller_id == v.controller_id
        rep = port.report()
        assert rep["skipped_bytes"] >= 10 + len(bad) and rep["frames"] == 2
    finally:
        t.close()


def test_sim_port_accepts_long_header_of_length_255(close_ports):
    # the firmware's try_decode_packet (vedderb/bldc comm/packet.c) takes a 16-bit length of 255
    from tests.rpi_vesc.test_vesc_codec import _frame_with_header
    v = SimVesc()
    port = SimVescPort(v)
    close_ports.append(port)
    t = SerialTransport(port.path).open()
    try:
        request = codec.get_values() + bytes(254)       # GetValues ignores bytes after the id
        t.write(_frame_with_header(b"\x03\x00\xff", request))
        assert port.service(1000) == 1
        reply = b""
        for _ in range(10):
            reply += t.read(4096, 0.0)
        [payload] = codec.FrameDecoder().feed(reply)
        assert codec.decode_values(payload).controller_id == v.controller_id
        assert port.report()["skipped_bytes"] == 0
    finally:
        t.close()


def test_can_forward_to_missing_id_is_dropped_and_counted(close_ports):
    port = SimVescPort(SimVesc({"controller_id": 1}), can_bus=[SimVesc({"controller_id": 2})])
    close_ports.append(port)
    t = SerialTransport(port.path).open()
    try:
        t.write(codec.encode_frame(codec.forward_can(9, codec.set_rpm(100))))
        t.write(codec.encode_frame(codec.forward_can(2, codec.set_rpm(100))))
        port.service(1000)
        assert port.can_dropped == 1
        assert port.can_bus[2].mode == "rpm" and port.local.mode == "released"
    finally:
        t.close()


def test_unplug_reports_fault_stops_and_reconnects(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path, drv_cfg={"stop_brake_current_a": 4.0})
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(500000, cmd=(5.0, 5.0))
    assert drv.faults() == set()
    ports["l"].unplug()
    w.run(560000, cmd=(5.0, 5.0))
    faults = drv.faults()
    assert "link_down:l" in faults and "telemetry_stale:left" in faults
    assert drv.refused_commands > 0
    assert right.mode == "brake"                     # the reachable motor is stopped at once
    w.run(2000000, cmd=(5.0, 5.0))
    assert left.mode == "released" and left.timeouts == 1     # the unplugged VESC's own timeout
    assert drv.links["l"].open_failures > 0          # retried while the port is gone
    ports["l"].plug()
    w.run(2700000, cmd=(5.0, 5.0))
    assert drv.faults() == set()
    assert drv.links["l"].connects == 2 and drv.links["l"].disconnects == 1
    assert left.mode == "rpm" and right.mode == "rpm"
    assert drv.motors["left"].telemetry.time_us > 2000000


def test_vesc_fault_code_latches_until_reset(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path)
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(300000, cmd=(5.0, 5.0))
    right.inject_fault(codec.FAULT_OVER_TEMP_MOTOR, w.t, duration_s=0.1)
    w.run(600000, cmd=(5.0, 5.0))
    assert drv.faults() == {"vesc_fault:right:OVER_TEMP_MOTOR"}
    assert left.mode == "brake"                      # commands refused -> stop on every motor
    assert right.fault_code == 0                     # the VESC cleared it; the driver keeps it latched
    drv.reset_faults()
    w.run(800000, cmd=(5.0, 5.0))
    assert drv.faults() == set() and left.mode == "rpm"


def test_stale_commands_are_not_kept_alive(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path, drv_cfg={"command_max_age_us": 100000,
                                                       "stop_brake_current_a": 0.0})
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(200000, cmd=(5.0, 5.0))
    w.run(400000)                                    # runtime went quiet: only polls
    assert left.mode == "released" and right.mode == "released"


def test_keepalive_sent_between_sparse_commands(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path, drv_cfg={"keepalive_period_us": 40000,
                                                       "command_max_age_us": 10 ** 6})
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    drv.command(WheelCmd(0, 3.0, 3.0))
    w.run(300000)
    assert left.commands.get(codec.COMM_ALIVE, 0) >= 3
    assert left.mode == "rpm"


def test_nan_wheel_command_stops(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path)
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(100000, cmd=(float("nan"), 1.0))
    assert drv.refused_commands > 0 and left.mode != "rpm"


def test_erpm_constant():
    assert C.ERPM_PER_RADPS == pytest.approx(C.GEAR_RATIO * C.MOTOR_POLE_PAIRS * 60 / (2 * math.pi))


def test_driver_skips_garbage_and_cut_replies_from_the_vesc(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path)
    close_ports.extend(ports.values())
    drv.start(0)
    w = _World(ports, (left, right), drv)
    w.run(200000, cmd=(4.0, 4.0))
    n_before = drv.motors["left"].telemetry_count
    cut = codec.encode_frame(codec.encode_values(left.values()))[:30]
    ports["l"].pty.write(b"\x00\xfe\x02\x07noise" + cut)     # line noise, then a reply cut short
    w.run(400000, cmd=(4.0, 4.0))
    rep = drv.links["l"].report()
    assert rep["skipped_bytes"] >= 9 + 30 and rep["truncated"] >= 1
    assert drv.motors["left"].telemetry_count >= n_before + 9    # telemetry kept flowing
    assert drv.faults() == set()


def test_partial_frame_dropped_after_rx_timeout(tmp_path, close_ports):
    left, right, ports, drv = _rig(tmp_path)
    close_ports.extend(ports.values())
    drv.start(0)
    link = drv.links["l"]
    ports["l"].pty.write(codec.encode_frame(codec.get_values())[:3])
    assert link.receive(1000) == [] and link.decoder.pending == 3
    assert link.receive(50000) == [] and link.decoder.pending == 3
    link.receive(200000)
    assert link.decoder.pending == 0 and link.decoder.truncated == 1


def test_udp_pose_source_counts_malformed():
    import json
    import socket

    from boards.rpi.app import UdpPoseSource
    src = UdpPoseSource(0, host="127.0.0.1")
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for data in (b"not json", json.dumps({"pos_ned_m": [1, 2]}).encode(),
                     json.dumps({"pos_ned_m": [1, 2, 0], "euler_rad": [0, 0, float("nan")]}).encode(),
                     json.dumps({"pos_ned_m": [1, 2, 0], "euler_rad": [0, 0, 0.5]}).encode()):
            tx.sendto(data, ("127.0.0.1", src.port))
        got = []
        for _ in range(200):                      # bounded: datagrams on loopback arrive at once
            got.extend(src.poll(123))
            if len(got) + src.rejected >= 4:
                break
        assert src.rejected == 3                  # bad JSON, wrong shape, NaN
        assert [(s.time_us, s.pos_ned_m, s.euler_rad[2]) for s in got] == [(123, (1.0, 2.0, 0.0), 0.5)]
    finally:
        tx.close()
        src.close()
