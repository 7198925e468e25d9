"""``python -m harness avr`` driven by an independent serial client.

The client below is written from firmware/arduino/PROTOCOL.md alone and deliberately imports nothing from
``boards`` or ``harness``: frame = COBS(type | seq | body | CRC-16/CCITT-FALSE big-endian) + 0x00, bodies
little-endian (HELLO 0x80 <BBBBBB, TELEMETRY 0x81 <Iii3h3hhhHB, LEVEL_STATE 0x84 <IiihhhhhhHBBB, IMU_ID 0x85
<BBBB; GET_HELLO 0x08 and WHEEL_SPEED 0x01 <hh from the host). It opens the port after the firmware booted,
so it asks for HELLO with GET_HELLO. Its commands (WHEEL_SPEED, STOP) carry the signature trailer of
PROTOCOL.md section 10 (key id, u48 counter from its wall clock in 10 us units, SipHash-2-4 tag; the MAC
from ``onboard.comms.siphash``) under the simulator's test key file named there. Correctness never waits on the wall clock: every wait polls with a
generous hang guard.
"""
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

import pytest
import serial

from onboard.comms.siphash import siphash24

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HANG_GUARD_S = 60.0

GET_HELLO, WHEEL_SPEED, STOP = 0x08, 0x01, 0x03
HELLO, TELEMETRY, LEVEL_STATE, IMU_ID = 0x80, 0x81, 0x84, 0x85
SIM_KEY_FILE = os.path.join(REPO_ROOT, "firmware", "arduino", "build", "sim_link.key")
ACCEL_LSB_PER_G = 8192                     # MPU-6050 at +-4 g
LSM303D_LSB_PER_G = 1.0 / 0.122e-3         # leveler: LSM303D at 0.122 mg/LSB


# ------------------------------------------------------------------ the client, from PROTOCOL.md
def crc16_ccitt_false(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def cobs_encode(data):
    out, block = bytearray(), bytearray()
    for b in data:
        if b == 0:
            out += bytes((len(block) + 1,)) + block
            block = bytearray()
        else:
            block.append(b)
    return bytes(out + bytes((len(block) + 1,)) + block)


def cobs_decode(data):
    out, i = bytearray(), 0
    while i < len(data):
        code = data[i]
        if code == 0 or i + code > len(data):
            return None
        out += data[i + 1:i + code]
        i += code
        if i < len(data):
            out.append(0)
    return bytes(out)


class Client:
    def __init__(self, path, baud):
        self.port = serial.Serial(path, baud, timeout=0)
        self.port.reset_input_buffer()
        self.buf = b""
        self.seq = 0
        self.frames = []                   # (type, seq, body) of every valid frame received
        self.seen = 0                      # frames[:seen] were looked at by wait_for

    def send(self, msg_type, body=b"", signed=False):
        raw = bytes((msg_type, self.seq)) + body
        if signed:                         # PROTOCOL.md section 10: key_id | counter (u48 LE) | tag
            with open(SIM_KEY_FILE) as f:
                key = bytes.fromhex(f.read().strip())
            self.counter = max(getattr(self, "counter", 0) + 1, time.time_ns() // 10000)
            raw += bytes((self.key_id,)) + self.counter.to_bytes(6, "little")
            raw += siphash24(key, raw)
        crc = crc16_ccitt_false(raw)
        self.port.write(cobs_encode(raw + bytes((crc >> 8, crc & 0xFF))) + b"\x00")
        self.seq = (self.seq + 1) & 0xFF

    def poll(self, wait_s=0.05):
        """Frames completed by what arrives within ``wait_s`` (select: returns as soon as bytes come)."""
        select.select([self.port.fileno()], [], [], wait_s)
        self.buf += self.port.read(4096)
        *parts, self.buf = self.buf.split(b"\x00")
        out = []
        for part in parts:
            raw = cobs_decode(part) if part else None
            if raw is None or len(raw) < 4 or crc16_ccitt_false(raw[:-2]) != (raw[-2] << 8 | raw[-1]):
                continue                   # the first partial frame after opening, or damage
            out.append((raw[0], raw[1], raw[2:-2]))
        self.frames.extend(out)
        return out

    def wait_for(self, predicate, what, each=None):
        """The next frame (after the one the last call returned) for which ``predicate(frame)`` holds,
        polling until it comes (hang guard)."""
        deadline = time.monotonic() + HANG_GUARD_S
        while time.monotonic() < deadline:
            while self.seen < len(self.frames):
                f = self.frames[self.seen]
                self.seen += 1
                if predicate(f):
                    return f
            if each is not None:
                each()
            self.poll()
        pytest.fail("no %s within %.0f s" % (what, HANG_GUARD_S))

    def close(self):
        self.port.close()


def telemetry(body):
    v = struct.unpack("<Iii3h3hhhHB", body)
    return {"t_us": v[0], "enc_left": v[1], "enc_right": v[2], "accel": v[3:6], "gyro": v[6:9],
            "duty_left": v[9], "duty_right": v[10], "faults": v[11], "last_cmd_seq": v[12]}


def level_state(body):
    v = struct.unpack("<IiihhhhhhHBBB", body)
    return {"t_us": v[0], "enc_left": v[1], "enc_right": v[2], "pitch_mrad": v[3], "roll_mrad": v[4],
            "faults": v[9], "last_cmd_seq": v[10]}


# ------------------------------------------------------------------ the command
class AvrCommand:
    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "harness", "avr"] + list(args), cwd=REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _w, _x = select.select([self.proc.stdout], [], [], HANG_GUARD_S)
        assert ready, "no pty printed within %.0f s" % HANG_GUARD_S
        self.pty = self.proc.stdout.readline().strip()
        assert self.pty.startswith("/dev/"), (self.pty, self.proc.poll())

    def interrupt(self):
        """SIGINT; returns (exit status, counters)."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=HANG_GUARD_S)
        assert out == "", out
        return self.proc.returncode, json.loads(err.strip().splitlines()[-1])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def uno_ground(fil_built):
    cmd = AvrCommand("--board", "uno", "--plant", "ground", "--realtime")
    yield cmd
    cmd.kill()


def test_uno_client_from_the_document_gets_hello_moves_wheels_reads_1g(uno_ground):
    client = Client(uno_ground.pty, 115200)
    try:
        # at rest, before any command: motors off, encoders still, about +1 g on the chip's z
        _t, _s, body = client.wait_for(lambda f: f[0] == TELEMETRY, "TELEMETRY")
        rest = telemetry(body)
        assert rest["faults"] & 0x0080             # FAULT_NO_COMMAND
        assert (rest["enc_left"], rest["enc_right"]) == (0, 0)
        ax, ay, az = rest["accel"]
        assert abs(az - ACCEL_LSB_PER_G) < 0.05 * ACCEL_LSB_PER_G, rest
        assert abs(ax) < 0.05 * ACCEL_LSB_PER_G and abs(ay) < 0.05 * ACCEL_LSB_PER_G, rest

        # telemetry flows, so the boot HELLO is past: a HELLO now is the answer to GET_HELLO
        client.send(GET_HELLO)
        _t, _s, body = client.wait_for(lambda f: f[0] == HELLO, "HELLO after GET_HELLO")
        version, board_id, reset_flags, whoami, signing, key_id = struct.unpack("<BBBBBB", body)
        assert (version, board_id, whoami, signing) == (2, 1, 0x68, 1)
        client.key_id = key_id
        assert reset_flags & 0x01                  # power-on

        # 4 rad/s forward on both wheels, repeated (failsafe 250 ms) until both encoders passed 150 counts
        sent = []

        def command():
            if not sent or time.monotonic() - sent[-1] > 0.05:
                client.send(WHEEL_SPEED, struct.pack("<hh", 4000, 4000), signed=True)
                sent.append(time.monotonic())

        _t, _s, body = client.wait_for(
            lambda f: f[0] == TELEMETRY and min(telemetry(f[2])["enc_left"], telemetry(f[2])["enc_right"]) > 150,
            "encoder counts moving", each=command)
        moving = telemetry(body)
        assert moving["duty_left"] > 0 and moving["duty_right"] > 0
        assert not moving["faults"] & 0x0080
        client.send(STOP, signed=True)
        client.poll()
    finally:
        client.close()
    rc, counters = uno_ground.interrupt()
    assert rc == 0
    assert counters["board"] == "uno" and counters["plant"] == "ground"
    assert counters["rx_bytes"] >= 5 * len(sent)            # every frame the client wrote reached the UART
    assert counters["enc_left_ticks"] > 150 and counters["distance_m"] > 0.0     # on the ground: it drove
    assert counters["sim_s"] > 0 and counters["resets"] == 0


def test_leveler_on_blocks_answers_get_hello_with_imu_id_and_wheels_turn_in_place(fil_built):
    cmd = AvrCommand("--board", "leveler", "--plant", "blocks", "--speed", "2")
    try:
        client = Client(cmd.pty, 9600)
        try:
            _t, _s, body = client.wait_for(lambda f: f[0] == LEVEL_STATE, "LEVEL_STATE")
            rest = level_state(body)
            assert abs(rest["pitch_mrad"]) < 30 and abs(rest["roll_mrad"]) < 30      # level: gravity on z
            client.send(GET_HELLO)                 # frames after a LEVEL_STATE: the boot HELLO is past
            _t, _s, hello = client.wait_for(lambda f: f[0] == HELLO, "HELLO after GET_HELLO")
            assert struct.unpack("<BBBBBB", hello)[:2] == (2, 2) and hello[4] == 1
            client.key_id = hello[5]
            _t, _s, imu_id = client.wait_for(lambda f: f[0] == IMU_ID, "IMU_ID after HELLO")
            assert struct.unpack("<BBBB", imu_id) == (0x49, 0xD7, 0xBD, 7)
            sent = []

            def command():
                if not sent or time.monotonic() - sent[-1] > 0.05:
                    client.send(WHEEL_SPEED, struct.pack("<hh", 3000, -3000), signed=True)
                    sent.append(time.monotonic())

            _t, _s, body = client.wait_for(
                lambda f: f[0] == LEVEL_STATE and level_state(f[2])["enc_left"] > 100
                and level_state(f[2])["enc_right"] < -100, "encoders turning", each=command)
        finally:
            client.close()
        rc, counters = cmd.interrupt()
    finally:
        cmd.kill()
    assert rc == 0 and counters["board"] == "leveler" and counters["plant"] == "blocks"
    assert counters["distance_m"] == 0.0 and counters["enc_left_ticks"] > 100    # on blocks: it stayed


@pytest.mark.parametrize("argv, message", [
    (["--speed", "nan"], "--speed must be a finite number"),
    (["--speed", "0"], "--speed must be a finite number"),
    (["--speed", "fast"], "--speed 'fast' is not a number"),
    (["--board", "mega"], "--board 'mega': one of uno, leonardo, leveler"),
    (["--plant", "water"], "--plant 'water': one of ground, blocks"),
    (["--seed", "-1"], "--seed must be >= 0"),
])
def test_bad_arguments_one_line_exit_2(argv, message, capsys):
    from harness import cli
    assert cli.main(["avr"] + argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_help_has_examples(capsys):
    from harness import cli
    with pytest.raises(SystemExit) as exc:
        cli.main(["avr", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "python -m harness avr --plant blocks" in out and "GET_HELLO" in out
