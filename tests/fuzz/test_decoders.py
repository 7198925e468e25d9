"""Every decoder of the runtime against random and mutated input (seeded): no exception but the decoder's own
error escapes, nothing corrupted is accepted, and the receiving state is what the valid input left.

``FUZZ_N`` inputs per wire decoder (default 100000) and ``FUZZ_FILES`` per file reader (default 300 in the
suite; ``FUZZ_FILES=10000 pytest tests/fuzz`` for the full study, docs/results/fuzz.md). The signed-frame
layer has its own 1e5 forged / 1e5 replayed test (tests/unit/test_signed_frame_fuzz.py).

"Nothing corrupted is accepted" is checked where the frame's check guarantees it: CRC-16 (the line link, the
VESC frames, UWB frames) detects every error of up to 3 flipped bits and every burst of up to 16 bits, and
the NMEA XOR checksum every single changed byte; those mutations must never be accepted with content that
differs from the original. Truncations, insertions and random bytes are checked for clean rejection only (a
16-bit check passes 1 in 65536 random inputs by chance)."""
import math
import os

import numpy as np
import pytest

from onboard.comms import line_link as ll
from onboard.comms import nmea
from onboard.comms.uwb import frames as uwb
from onboard.comms.vesc import codec as vesc

N = int(os.environ.get("FUZZ_N", "100000"))
N_FILES = int(os.environ.get("FUZZ_FILES", "300"))
pytestmark = pytest.mark.timeout(900)


def _detectable(data, rng):
    """A mutation every 16-bit CRC detects: 1-3 flipped bits, or a burst of at most 16 bits."""
    out = bytearray(data)
    if rng.random() < 0.6:
        for bit in rng.choice(len(out) * 8, int(rng.integers(1, 4)), replace=False):
            out[int(bit) // 8] ^= 1 << (int(bit) % 8)
    else:
        start = int(rng.integers(0, len(out) * 8 - 16))
        burst = int(rng.integers(1, 1 << 16)) | 1 | (1 << 15)       # a burst of exactly 16 bits
        for k in range(16):
            if burst >> k & 1:
                bit = start + k
                out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def _rough(data, rng):
    """Truncated, extended, spliced or random input: must be rejected cleanly or decode to something valid."""
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return data[:int(rng.integers(0, len(data)))]
    if kind == 1:
        cut = int(rng.integers(0, len(data) + 1))
        return data[:cut] + bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8)) + data[cut:]
    if kind == 2:
        cut = int(rng.integers(0, len(data)))
        return data[:cut] + data[cut + 1:]
    return bytes(rng.integers(0, 256, int(rng.integers(0, 2 * len(data) + 2)), dtype=np.uint8))


def _line_link_lines(rng, n):
    lines = []
    for k in range(n):
        tag = ("I", "P", "T")[k % 3]
        if tag == "I":
            fields = [str(k * 10000), "10000"] + [ll.f64_hex(float(x)) for x in rng.normal(0, 1, 6)]
        elif tag == "P":
            fields = [str(k * 10000)] + [ll.f64_hex(float(x)) for x in rng.normal(0, 1, 6)]
        else:
            fields = [str(k * 10000)]
        lines.append(ll.encode(tag, fields))
    return lines


def test_line_link_decoder():
    rng = np.random.default_rng(1)
    valid = _line_link_lines(rng, 300)
    false_accepts = 0
    for k in range(N):
        line = valid[k % len(valid)]
        bad = _detectable(line.rstrip(b"\n"), rng) + b"\n" if k % 2 else _rough(line, rng)
        try:
            got = ll.decode(bad)
        except ll.LinkError:
            continue
        if k % 2 and got != ll.decode(line):
            false_accepts += 1
    assert false_accepts == 0


def test_line_link_runtime_state_survives_garbage():
    """The board runtime fed valid lines interleaved with corrupted ones ends in the same state as the one fed
    the valid lines only: every corrupted line is answered X and counted, none changes the estimate."""
    from harness.scenarios import load
    from onboard.runtime.ground_robot import GroundRobotRuntime
    from onboard.runtime.link_runtime import LinkRuntime, runtime_config
    mod = load("mp-board")
    board = mod._Board("pico_rp2040")
    from harness.config import merge
    from harness.scenarios.context import RunContext
    ticks = mod.make_lines(merge(mod.DEFAULTS, {"duration_s": 1.0}), RunContext(1).random.stream("imu"),
                           RunContext(1).random.stream("aiding"), board)
    lines = [line for tick in ticks for line in tick]

    def runtime():
        return LinkRuntime(GroundRobotRuntime(board.WAYPOINTS_NE_M, mod._RecordingMotors(),
                                              config=runtime_config(board)))
    clean, fuzzed = runtime(), runtime()
    rng = np.random.default_rng(2)
    per_line = max(1, N // len(lines) // 4)         # a quarter of N: the runtime is slower than the decoder
    bad_sent = 0
    for line in lines:
        clean.handle_line(line)
        for _ in range(per_line):
            bad = _detectable(line.rstrip(b"\n"), rng) + b"\n"
            if _safe_decode(bad) == ll.decode(line):
                continue                  # the same message (a hex digit's case flipped): not a corruption
            replies = fuzzed.handle_line(bad)
            bad_sent += 1
            assert len(replies) == 1 and replies[0].startswith(b"X,")
        fuzzed.handle_line(line)
    assert fuzzed.bad_lines == bad_sent > 0
    assert fuzzed.runtime.estimator.x == clean.runtime.estimator.x
    assert fuzzed.runtime.estimator.P == clean.runtime.estimator.P


def _safe_decode(line):
    try:
        return ll.decode(line)
    except ll.LinkError:
        return None


def test_vesc_stream_decoder():
    rng = np.random.default_rng(3)
    payloads = [bytes(rng.integers(0, 256, int(rng.integers(1, 80)), dtype=np.uint8)) for _ in range(200)]
    frames = [vesc.encode_frame(p) for p in payloads]
    dec = vesc.FrameDecoder()
    false_accepts = 0
    for k in range(N):
        i = k % len(frames)
        bad = _detectable(frames[i], rng) if k % 2 else _rough(frames[i], rng)
        out = dec.feed(bad)
        if k % 2 and any(p != payloads[i] for p in out):
            false_accepts += 1
        dec.discard_pending()
    assert false_accepts == 0
    # the decoder still works: a valid frame after all of it comes out whole
    assert dec.feed(frames[0]) == [payloads[0]]


def test_uwb_frame_decoder():
    rng = np.random.default_rng(4)
    valid = []
    for k in range(200):
        ftype = (uwb.POLL, uwb.RESPONSE, uwb.FINAL, uwb.REPORT, uwb.TOKEN)[k % 5]
        fields = {}
        if ftype in (uwb.RESPONSE, uwb.FINAL, uwb.REPORT):
            n_ts = max(uwb.FIXED_PAYLOAD_LEN[ftype]) // uwb.TS_LEN
            fields["ts"] = tuple(int(t) for t in rng.integers(0, 1 << 40, n_ts))
        elif ftype == uwb.TOKEN:
            fields = {"pass_no": k, "members": 0b1011}
        valid.append(uwb.make(ftype, k % 8, (k + 1) % 8, k % 256, vel_mps=(0.1 * (k % 5), -0.2), **fields).encode())
    false_accepts = 0
    for k in range(N):
        frame = valid[k % len(valid)]
        bad = bytes(_detectable(frame, rng)) if k % 2 else bytes(_rough(frame, rng))
        try:
            got = uwb.decode(bad)
        except uwb.FrameError:
            continue
        if k % 2 and bad != frame:
            false_accepts += 1
        assert got is not None
    assert false_accepts == 0


def test_nmea_parser():
    rng = np.random.default_rng(5)
    bodies = []
    for k in range(200):
        lat, lon = rng.uniform(0, 89), rng.uniform(0, 179)
        body = "GPGGA,%02d%02d%05.2f,%02d%07.4f,N,%03d%07.4f,E,1,%02d,0.9,%.1f,M,,M,," % (
            k % 24, k % 60, rng.uniform(0, 59.99), int(lat), (lat % 1) * 60, int(lon), (lon % 1) * 60,
            k % 12 + 4, rng.uniform(0, 50))
        bodies.append(body)
    sentences = ["$%s*%02X" % (b, nmea.checksum(b)) for b in bodies]
    false_accepts = 0
    for k in range(N):
        s = sentences[k % len(sentences)]
        if k % 2:                                   # one changed character: the XOR checksum catches it
            i = int(rng.integers(1, len(s)))
            c = chr(int(rng.integers(32, 127)))
            bad = s[:i] + c + s[i + 1:]
        else:
            raw = _rough(s.encode(), rng)
            bad = raw.decode("latin-1")
        try:
            fix = nmea.parse(bad)
        except nmea.NmeaError:
            continue
        if fix is not None:
            for v in (fix.utc_s, fix.lat_deg, fix.lon_deg, fix.hdop, fix.alt_m):
                assert v is None or math.isfinite(v)
        if k % 2 and fix is not None and vars(fix) != vars(nmea.parse(s)):
            false_accepts += 1
    assert false_accepts == 0


def test_avr_link_host_decoder_and_signed_commands():
    """The AVR link's host decoder (COBS frames, CRC-16) on mutated signed commands: nothing escapes, the decoder
    keeps working, and no mutated command that decodes carries a tag that verifies (SipHash-2-4, 64 bits)
    unless it is the original command."""
    import struct

    from boards.arduino import protocol as avr
    key = bytes(range(16))
    rng = np.random.default_rng(8)
    commands = []
    for k in range(200):
        body = struct.pack("<hh", int(rng.integers(-3000, 3000)), int(rng.integers(-3000, 3000)))
        frame = avr.encode_signed_frame(key, 1, 1000 + k, avr.MSG_WHEEL_SPEED, k % 256, body)
        commands.append((frame, (avr.MSG_WHEEL_SPEED, k % 256, body)))
    dec = avr.FrameDecoder()
    false_accepts = 0
    for k in range(N):
        frame, original = commands[k % len(commands)]
        bad = _detectable(frame[:-1], rng) + b"\x00" if k % 2 else _rough(frame, rng)
        for got in dec.feed(bad):
            parts = avr.split_signature(got)
            if parts is not None and avr.verify_signature(key, got) and (got.msg_type, got.seq, parts[0]) != original:
                false_accepts += 1
        dec.feed(b"\x00")                            # end whatever the mutation left open
    assert false_accepts == 0
    (got,) = dec.feed(commands[0][0])
    assert avr.verify_signature(key, got)


def test_crtp_server_of_the_simulated_crazyflie():
    """The simulated Crazyflie's CRTP server on random datagrams and on garbage addressed to every port: every
    datagram answered or counted, no internal error, the vehicle's state finite, replies within CRTP's size."""
    from harness.sim.crazyflie import crtp
    from harness.sim.crazyflie.sim_drone import SimCrazyflie
    drone = SimCrazyflie()
    client = ("127.0.0.1", 40000)
    ports = (crtp.PORT_PARAM, crtp.PORT_LOG, crtp.PORT_COMMANDER, crtp.PORT_COMMANDER_GENERIC, crtp.PORT_SETPOINT_HL,
             crtp.PORT_MEM, crtp.PORT_PLATFORM, crtp.PORT_SUPERVISOR, crtp.PORT_LOCALIZATION, crtp.PORT_LINKCTRL)
    rng = np.random.default_rng(9)
    for k in range(N):
        data = bytes(rng.integers(0, 256, int(rng.integers(0, 31)), dtype=np.uint8))
        datagram = data if k % 2 else crtp.packet(ports[k % len(ports)], int(rng.integers(0, 4)), data)
        replies = drone.handle(datagram, drone.time_us, client)
        assert all(1 <= len(r) <= 1 + crtp.MAX_DATA for r in replies)
        if k % 100 == 0:
            drone.advance(drone.time_us + 10000)
    assert drone.stats["rx_packets"] == N and drone.stats["internal_errors"] == 0
    v = drone.vehicle
    assert all(math.isfinite(x) for x in (v.north_m, v.east_m, v.height_m, v.vel_north_mps, v.vel_east_mps))


@pytest.mark.parametrize("ext", ["toml", "json"])
def test_config_file_reader(tmp_path, ext):
    from harness.config import ConfigError, load_file
    good = (b'scenario = "waypoints"\n[config]\nduration_s = 5.0\nwaypoints_ne_m = [[1.0, 0.0], [1.0, 1.0]]\n'
            if ext == "toml" else b'{"scenario": "waypoints", "config": {"duration_s": 5.0}}')
    rng = np.random.default_rng(6)
    path = tmp_path / ("f." + ext)
    for k in range(N_FILES):
        path.write_bytes(_rough(good, rng) if k % 2 else _detectable(good, rng))
        try:
            data = load_file(str(path))
        except ConfigError as exc:
            assert "\n" not in str(exc)
            continue
        assert isinstance(data, dict)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("ext", ["npy", "png"])
def test_terrain_file_reader(tmp_path, ext):
    from harness.config import ConfigError
    from harness.sim.voxel_terrain import load_heights
    source = tmp_path / ("good." + ext)
    heights = np.arange(64, dtype=np.int64).reshape(8, 8) % 7
    if ext == "npy":
        np.save(source, heights)
    else:
        from PIL import Image
        Image.fromarray((heights * 30).astype(np.uint8)).save(source)
    good = source.read_bytes()
    rng = np.random.default_rng(7)
    path = tmp_path / ("f." + ext)
    for k in range(N_FILES):
        path.write_bytes(_rough(good, rng) if k % 2 else _detectable(good, rng))
        try:
            h = load_heights(str(path))
        except ConfigError as exc:
            assert "\n" not in str(exc)
            continue
        assert h.ndim == 2 and h.size > 0 and (h >= 0).all()


def test_boat_log_readers_csv_and_mcap(tmp_path):
    """The boat-fit log readers (a user's CSV, or an MCAP recording) on mutated logs: a ConfigError of one line,
    or a log whose numbers are finite."""
    from harness.config import ConfigError
    from harness.training.boat_fit.boat_log import read_csv_bytes, read_mcap_bytes
    from harness.training.boat_fit.fit_windows import LOG_COLUMNS
    from onboard.runtime.mcap_log import McapLog
    rng = np.random.default_rng(10)
    rows = [",".join(LOG_COLUMNS)]
    for k in range(40):
        rows.append(",".join("%.3f" % (0.1 * k if c == "time_s" else rng.normal()) for c in LOG_COLUMNS))
    csv_good = ("\n".join(rows) + "\n").encode()
    for k in range(N_FILES * 10):
        bad = _rough(csv_good, rng) if k % 2 else _detectable(csv_good, rng)
        try:
            log = read_csv_bytes(bad, "fuzz.csv")
        except ConfigError as exc:
            assert "\n" not in str(exc)
            continue
        assert isinstance(log, dict)
    path = tmp_path / "good.mcap"
    mcap = McapLog(str(path))
    for k in range(40):
        mcap.log("/boat/log", k * 100000, {"time_s": 0.1 * k, "thrust_left_n": 10.0, "thrust_right_n": 12.0})
    mcap.close()
    mcap_good = path.read_bytes()
    for k in range(N_FILES):
        bad = _rough(mcap_good, rng) if k % 2 else _detectable(mcap_good, rng)
        try:
            read_mcap_bytes(bad, "fuzz.mcap")
        except ConfigError as exc:
            assert "\n" not in str(exc)
