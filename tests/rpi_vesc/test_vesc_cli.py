"""``python -m harness vescs`` driven by an independent VESC client.

The client below is written from the public VESC UART protocol (vedderb/bldc ``comm/packet.c`` framing,
``datatypes.h`` command ids, ``comm/commands.c`` reply layouts) and deliberately imports nothing from
``onboard.comms`` or ``harness``: frame = 0x02, length byte, payload, CRC-16/XMODEM (poly 0x1021, init
0) of the payload big-endian, 0x03.
"""
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import tty

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# command ids (datatypes.h COMM_PACKET_ID)
FW_VERSION, GET_VALUES, SET_RPM, GET_MCCONF, FORWARD_CAN, PING_CAN = 0, 4, 8, 14, 34, 62
UNDER_VOLTAGE = 2                        # mc_fault_code


# ------------------------------------------------------------------ the held-out client
def crc16_xmodem(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame(payload):
    assert 1 <= len(payload) <= 255
    return bytes((2, len(payload))) + payload + struct.pack(">H", crc16_xmodem(payload)) + b"\x03"


class Client:
    """Opens the pty raw, writes frames, reads the next well-formed reply (deadline, never hangs)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd)
        attrs = termios.tcgetattr(self.fd)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        self.buf = b""

    def close(self):
        os.close(self.fd)

    def send(self, payload):
        os.write(self.fd, frame(payload))

    def reply(self, timeout_s=10.0):
        deadline = time.monotonic() + timeout_s
        while True:
            while len(self.buf) >= 2 and self.buf[0] != 2:
                self.buf = self.buf[1:]
            if len(self.buf) >= 2 and len(self.buf) >= self.buf[1] + 5:
                n = self.buf[1]
                payload, tail = self.buf[2:2 + n], self.buf[2 + n:5 + n]
                self.buf = self.buf[5 + n:]
                assert tail[2] == 3 and struct.unpack(">H", tail[:2])[0] == crc16_xmodem(payload)
                return payload
            left = deadline - time.monotonic()
            assert left > 0, "no reply within %.0f s" % timeout_s
            ready, _w, _x = select.select([self.fd], [], [], left)
            if ready:
                self.buf += os.read(self.fd, 4096)

    def ask(self, payload, can_id=None):
        self.send(payload if can_id is None else bytes((FORWARD_CAN, can_id)) + payload)
        return self.reply()


def c_string(data, pos):
    end = data.index(b"\0", pos)
    return data[pos:end].decode("ascii"), end + 1


def parse_fw_version(p):
    """commands.c COMM_FW_VERSION: major, minor, HW_NAME\\0, 12-byte UUID, pairing done, test version,
    hw type, custom config count, phase filters, QML hw, QML app, NRF flags, FW_NAME\\0, hw config CRC."""
    assert p[0] == FW_VERSION
    out = {"major": p[1], "minor": p[2]}
    out["hw_name"], pos = c_string(p, 3)
    out["uuid"] = p[pos:pos + 12]
    pos += 12
    (out["paired"], out["test_version"], out["hw_type"], out["custom_configs"], out["phase_filters"],
     out["qml_hw"], out["qml_app"], out["nrf_flags"]) = p[pos:pos + 8]
    out["fw_name"], pos = c_string(p, pos + 8)
    out["hw_crc"] = struct.unpack(">I", p[pos:pos + 4])[0]
    assert pos + 4 == len(p), "bytes after the hardware CRC"
    return out


def parse_values(p):
    """commands.c COMM_GET_VALUES: the fields this client needs, by their offsets in the reply."""
    assert p[0] == GET_VALUES
    fields = struct.unpack(">hhiiiihihiiiiiiBiBhhhiiB", p[1:])
    return {"temp_fet_degc": fields[0] / 10.0, "erpm": fields[7], "v_in_v": fields[8] / 10.0,
            "fault_code": fields[15], "controller_id": fields[17]}


# ------------------------------------------------------------------ the command as a subprocess
def _read_lines(proc, n, timeout_s):
    lines, buf = [], b""
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    while len(lines) < n and time.monotonic() < deadline:
        ready, _w, _x = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        lines += [d.decode() for d in done]
    return lines


@pytest.mark.fil
@pytest.mark.timeout(60)
def test_vescs_command_answers_an_independent_client_and_stops_on_sigint():
    proc = subprocess.Popen([sys.executable, "-m", "harness", "vescs", "--count", "2", "--can-ids", "1,2,7",
                             "--fault", "7:under_voltage"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    clients = []
    try:
        paths = _read_lines(proc, 2, 30.0)
        assert len(paths) == 2 and all(p.startswith("/dev/pts/") for p in paths), paths
        clients = [Client(p) for p in paths]
        first, second = clients

        fw = parse_fw_version(first.ask(bytes((FW_VERSION,))))
        assert (fw["major"], fw["minor"], fw["hw_name"], fw["hw_type"], fw["test_version"]) == (6, 5, "SIM", 0, 0)
        assert len(fw["uuid"]) == 12
        fw2 = parse_fw_version(second.ask(bytes((FW_VERSION,))))
        fw7 = parse_fw_version(first.ask(bytes((FW_VERSION,)), can_id=7))     # behind VESC 1 on the CAN bus
        assert len({fw["uuid"], fw2["uuid"], fw7["uuid"]}) == 3              # each controller its own UUID

        values = parse_values(first.ask(bytes((GET_VALUES,))))
        assert values == {"temp_fet_degc": 30.0, "erpm": 0, "v_in_v": 24.0, "fault_code": 0, "controller_id": 1}
        assert parse_values(second.ask(bytes((GET_VALUES,))))["controller_id"] == 2
        behind = parse_values(first.ask(bytes((GET_VALUES,)), can_id=7))
        assert (behind["controller_id"], behind["fault_code"]) == (7, UNDER_VOLTAGE)

        assert first.ask(bytes((PING_CAN,))) == bytes((PING_CAN, 2, 7))      # the others on the bus
        # a request the simulator does not honour gets no reply: the next reply is the next request's
        first.send(bytes((GET_MCCONF,)))
        assert first.ask(bytes((FW_VERSION,)))[0] == FW_VERSION
        first.send(bytes((SET_RPM,)) + struct.pack(">i", 3000))
        assert first.ask(bytes((FW_VERSION,)))[0] == FW_VERSION             # SET_RPM was read before this
    finally:
        for c in clients:
            c.close()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err.decode()
    stats = json.loads(err.decode().strip().splitlines()[-1])
    one = stats["vescs"]["1"]
    assert one["commands"]["FW_VERSION"] == 3 and one["commands"]["GET_VALUES"] == 1
    assert one["commands"]["SET_RPM"] == 1 and one["unanswered"] == 1
    assert stats["vescs"]["7"]["fault_code"] == UNDER_VOLTAGE and "uart" not in stats["vescs"]["7"]
    assert one["uart"]["frames"] == 9 and one["uart"]["crc_errors"] == 0   # 7 own + 2 forwarded


@pytest.mark.parametrize("argv,needle", [
    (["--count", "0"], "--count must be a whole number 1..32, got 0"),
    (["--can-ids", "1,1"], "--can-ids: each VESC needs its own id, got 1,1"),
    (["--can-ids", "255"], "--can-ids: 255 is not a CAN id 0..254"),
    (["--count", "2", "--can-ids", "3"], "--can-ids names 1 VESCs but --count asks for 2"),
    (["--fault", "melted"], "--fault 'melted': unknown fault 'melted'"),
    (["--fault", "9:drv"], "--fault '9:drv': no VESC with id 9"),
    (["--fault", "drv@-1"], "START_S must be >= 0"),
    (["--drop-replies", "1.5"], "--drop-replies must be a probability in [0, 1], got 1.5"),
    (["--set", "v_in_v=-3"], "SimVesc setting v_in_v must be a number > 0, got -3"),
])
def test_vescs_command_refuses_bad_arguments_in_one_line(capsys, argv, needle):
    from harness.cli import main
    assert main(["vescs"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1, err


def test_requests_not_honoured_get_no_reply():
    from harness.sim.vesc import NOT_HONOURED, SimVesc

    vesc = SimVesc()
    assert all(vesc.handle(bytes((cmd, 0, 0, 0, 0)), 0) is None for cmd in NOT_HONOURED + (200,))
    assert vesc.unanswered == len(NOT_HONOURED) + 1
    assert vesc.handle(bytes((FW_VERSION,)), 0)[0] == FW_VERSION and vesc.unanswered == len(NOT_HONOURED) + 1


def test_fw_version_and_ping_in_process_with_dropped_replies():
    """The same client's parsers on SimVescPort directly; a reply-loss probability of 1 loses them all."""
    from harness.sim.rng import RunRandom
    from harness.sim.vesc import SimVesc, SimVescPort

    a, b = SimVesc({"controller_id": 3, "fw_minor": 6, "hw_name": "75_300",
                    "uuid_hex": "00112233445566778899aabb"}), SimVesc({"controller_id": 4})
    port = SimVescPort(a, can_bus=[a, b])
    lossy = SimVescPort(SimVesc(), drop_reply_prob=1.0, rng=RunRandom(1).stream("t"))
    try:
        client, mute = Client(port.slave_path), Client(lossy.slave_path)
        client.send(bytes((FW_VERSION,)))
        client.send(bytes((PING_CAN,)))
        mute.send(bytes((GET_VALUES,)))
        port.service(0)
        lossy.service(0)
        fw = parse_fw_version(client.reply())
        assert (fw["minor"], fw["hw_name"], fw["uuid"].hex()) == (6, "75_300", "00112233445566778899aabb")
        assert client.reply() == bytes((PING_CAN, 4))
        assert lossy.report()["replies_dropped"] == 1 and lossy.tx_bytes == 0
        # GetValuesSetup (commands.c COMM_GET_VALUES_SETUP): temperatures, currents, duty, eRPM, ..., id
        client.send(bytes((47,)))
        port.service(1000)
        setup = client.reply()
        assert setup[0] == 47 and len(setup) == 1 + 2 * 2 + 4 * 2 + 2 + 4 * 2 + 2 * 2 + 4 * 6 + 4 + 1 * 3 + 4 * 3
        assert struct.unpack(">h", setup[23:25])[0] == 240 and setup[56] == 3       # v_in 24.0 V, controller id
        client.close()
        mute.close()
    finally:
        port.close()
        lossy.close()
