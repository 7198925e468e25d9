"""Signed command frames on the AVR robot link (firmware/arduino/PROTOCOL.md section 10).

- SipHash-2-4 against the reference implementation's 64 test vectors (key 00..0f, messages 00, 00 01, ...),
  in Python (onboard/comms/siphash.py) and in the firmware's C (siphash.c built for the host);
- the firmware's verifier (link_sign.c built for the host, the same file the AVR runs): 1e5 forged and 1e5
  replayed frames -> 0 accepted, the counter mark in its (host-RAM) EEPROM ring survives a "reboot";
- the real firmware in simavr (lockstep, simulated time only): signed commands drive the motors; 2000
  forged, 2000 replayed (and unsigned, truncated, reordered) frames -> none accepted, the motors never
  move; after a watchdog reset an old frame is refused (the EEPROM mark survived);
- the MAC's cycles per frame on the ATmega328P, counted by Timer1 in simavr, printed and checked against
  the link budget (a signed frame's time on the wire).

The 1e5-frame runs go through the host build of the C code (the AVR would take 1e5 x ~2 ms of simulated
wire time each); the simavr runs use 2000 of each.
"""
import ctypes
import os
import random
import subprocess

import pytest

from boards.arduino import protocol as P
from boards.arduino.link_key import CommandSigner, key_from_hex, read_key_file, stamp_base_10us
from onboard.comms.signed_frame import SigningError
from onboard.comms.siphash import siphash24
from onboard.core.samples import WheelCmd

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(REPO_ROOT, "firmware", "arduino", "robot_link")
FW_DIR = os.path.join(REPO_ROOT, "firmware", "arduino")

# SipHash-2-4 reference vectors (the reference implementation's vectors.h, "vectors_sip64"): key
# 00 01 .. 0f, message i = bytes 00 01 .. (i - 1), the 8-byte tag. The paper's Appendix A example is
# vector 15 (tag 0xa129ca6149be45e5, little-endian on the wire).
VECTORS = """
310e0edd47db6f72 fd67dc93c539f874 5a4fa9d909806c0d 2d7efbd796666785 b7877127e09427cf 8da699cd64557618
cee3fe586e46c9cb 37d1018bf50002ab 6224939a79f5f593 b0e4a90bdf82009e f3b9dd94c5bb5d7a a7ad6b22462fb3f4
fbe50e86bc8f1e75 903d84c02756ea14 eef27a8e90ca23f7 e545be4961ca29a1 db9bc2577fcc2a3f 9447be2cf5e99a69
9cd38d96f0b3c14b bd6179a71dc96dbb 98eea21af25cd6be c7673b2eb0cbf2d0 883ea3e395675393 c8ce5ccd8c030ca8
94af49f6c650adb8 eab8858ade92e1bc f315bb5bb835d817 adcf6b0763612e2f a5c91da7acaa4dde 716595876650a2a6
28ef495c53a387ad 42c341d8fa92d832 ce7cf2722f512771 e37859f94623f3a7 381205bb1ab0e012 ae97a10fd434e015
b4a31508beff4d31 81396229f0907902 4d0cf49ee5d4dcca 5c73336a76d8bf9a d0a704536ba93e0e 925958fcd6420cad
a915c29bc8067318 952b79f3bc0aa6d4 f21df2e41d4535f9 87577519048f53a9 10a56cf5dfcd9adb eb75095ccd986cd0
51a9cb9ecba312e6 96afadfc2ce666c7 72fe52975a4364ee 5a1645b276d592a1 b274cb8ebf87870a 6f9bb4203de7b381
eaecb2a30b22a87f 9924a43cc1315724 bd838d3aafbf8db7 0b1a2a3265d51aea 135079a3231ce660 932b2846e4d70666
e1915f5cb1eca46c f325965ca16d629f 575ff28e60381be5 724506eb4c328a95
""".split()
KEY16 = bytes(range(16))
KEY = bytes.fromhex("5c0ffee15badc0de0123456789abcdef")


# ------------------------------------------------------------------ host builds of the C code
class CSign:
    """link_sign.c + siphash.c + link_protocol.c built for the host (gcc), through ctypes."""

    def __init__(self, so):
        self.lib = ctypes.CDLL(so)
        self.lib.siphash24.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
        self.lib.link_sig_check.restype = ctypes.c_uint8
        self.lib.link_sig_check.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint8, ctypes.c_uint8]
        self.lib.link_verifier_init.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint8]
        self.lib.link_sig_sign.restype = ctypes.c_uint8
        self.lib.link_sig_sign.argtypes = [ctypes.c_char_p, ctypes.c_uint8, ctypes.c_uint64, ctypes.c_char_p,
                                           ctypes.c_uint8]
        self.eeprom = (ctypes.c_uint8 * (32 * 8)).in_dll(self.lib, "link_sign_host_eeprom")
        self.state = ctypes.create_string_buffer(256)       # link_verifier_t (its size is < 64 bytes)

    def siphash(self, key, msg):
        out = ctypes.create_string_buffer(8)
        self.lib.siphash24(key, bytes(msg), len(msg), out)
        return out.raw

    def boot(self, key, key_id):
        """A (re)boot: the verifier reads its mark from the EEPROM, which keeps its content."""
        self.lib.link_verifier_init(self.state, key, key_id)

    def check(self, frame, body_len):
        """frame = type | seq | body | trailer (decoded, CRC stripped)."""
        return self.lib.link_sig_check(self.state, bytes(frame), len(frame), body_len)

    def sign(self, key, key_id, counter, head):
        buf = ctypes.create_string_buffer(bytes(head) + bytes(P.SIG_LEN), len(head) + P.SIG_LEN)
        n = self.lib.link_sig_sign(key, key_id, counter, buf, len(head))
        return buf.raw[:n]


@pytest.fixture(scope="module")
def csign(tmp_path_factory):
    so = str(tmp_path_factory.mktemp("csign") / "liblink_sign.so")
    srcs = [os.path.join(SRC, n) for n in ("link_sign.c", "siphash.c", "link_protocol.c")]
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I", SRC]
                   + srcs + ["-o", so], check=True)
    lib = CSign(so)
    lib.lib.link_sign_host_eeprom_erase()
    return lib


def test_header_constants_match_codec():
    with open(os.path.join(SRC, "link_sign.h")) as f:
        text = f.read()
    for name, value in (("LINK_SIG_KEY_ID_LEN", P.SIG_KEY_ID_LEN), ("LINK_SIG_COUNTER_LEN", P.SIG_COUNTER_LEN),
                        ("LINK_SIG_TAG_LEN", P.SIG_TAG_LEN)):
        assert "#define %s %d\n" % (name, value) in text
    assert P.SIG_LEN == 15


# ------------------------------------------------------------------ SipHash-2-4
def test_siphash_reference_vectors_python_and_c(csign):
    assert len(VECTORS) == 64
    for i, want in enumerate(VECTORS):
        msg = bytes(range(i))
        assert siphash24(KEY16, msg).hex() == want, i
        assert csign.siphash(KEY16, msg).hex() == want, i
    assert int.from_bytes(siphash24(KEY16, bytes(range(15))), "little") == 0xA129CA6149BE45E5


def test_siphash_python_equals_c_on_random_inputs(csign):
    rng = random.Random(51)
    for _ in range(300):
        key = rng.randbytes(16)
        msg = rng.randbytes(rng.randrange(0, 80))
        assert siphash24(key, msg) == csign.siphash(key, msg)
    with pytest.raises(ValueError):
        siphash24(b"short", b"")


@pytest.mark.micropython
def test_siphash_and_signed_frames_identical_in_micropython():
    """onboard/comms/siphash.py and the codec's signing run unchanged in MicroPython, with the same bytes."""
    from harness.sim.micropython import MP_LIB_DIR, available, collect_files, run_micropython
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    code = (
        "from onboard.comms.siphash import siphash24\n"
        "from boards.arduino import protocol as P\n"
        "k = bytes(range(16))\n"
        "print('MPOUT ' + ' '.join(siphash24(k, bytes(range(n))).hex() for n in range(64)))\n"
        "print('MPFRAME ' + P.encode_signed_frame(k, 1, 0x0123456789AB, P.MSG_DUTY, 9, P.duty_body(-400, 17)).hex())\n")
    files = collect_files(["onboard", "boards/arduino"])
    files[MP_LIB_DIR + "/boards/__init__.py"] = ""
    out = run_micropython(code, files)
    tags = [ln for ln in out.splitlines() if ln.startswith("MPOUT ")][-1].split()[1:]
    frame = [ln for ln in out.splitlines() if ln.startswith("MPFRAME ")][-1].split()[1]
    assert tags == VECTORS
    assert frame == P.encode_signed_frame(KEY16, 1, 0x0123456789AB, P.MSG_DUTY, 9, P.duty_body(-400, 17)).hex()


# ------------------------------------------------------------------ codec: trailer layout, C == Python
def test_signed_frame_layout_and_c_signer_agree(csign):
    body = P.wheel_speed_body(3000, -3000)
    trailer = P.sign_trailer(KEY16, 1, 0x0123456789, P.MSG_WHEEL_SPEED, 5, body)
    assert len(trailer) == P.SIG_LEN
    assert trailer[0] == 1 and trailer[1:7] == bytes.fromhex("896745230100")      # u48 little-endian
    head = bytes((P.MSG_WHEEL_SPEED, 5)) + body
    assert trailer[7:] == siphash24(KEY16, head + trailer[:7])
    assert csign.sign(KEY16, 1, 0x0123456789, head) == head + trailer
    frame = P.FrameDecoder().feed(P.encode_signed_frame(KEY16, 1, 0x0123456789, P.MSG_WHEEL_SPEED, 5, body))[0]
    msg = P.decode_message(frame)
    assert (msg.left, msg.right, msg.key_id, msg.counter) == (3000, -3000, 1, 0x0123456789)
    assert P.verify_signature(KEY16, frame) and not P.verify_signature(KEY, frame)


def test_documented_signed_example():
    """PROTOCOL.md's signed example (key 00..0f) is what the codec builds."""
    with open(os.path.join(FW_DIR, "PROTOCOL.md")) as f:
        text = f.read()
    block = text.split("```signed-example\n", 1)[1].split("```", 1)[0]
    rows = dict(ln.split(None, 1) for ln in block.splitlines() if ln.strip())
    key = bytes.fromhex(rows["key"])
    frame = P.encode_signed_frame(key, int(rows["key_id"]), int(rows["counter"], 16), P.MSG_WHEEL_SPEED,
                                  int(rows["seq"]), bytes.fromhex(rows["body"]))
    assert frame == bytes.fromhex(rows["wire"])


# ------------------------------------------------------------------ the firmware's verifier, 1e5 frames
def _head(rng):
    t = rng.choice((P.MSG_WHEEL_SPEED, P.MSG_DUTY, P.MSG_STOP, P.MSG_RESET, P.MSG_SET_PHASE))
    return t, bytes((t, rng.randrange(256))) + rng.randbytes(P.BODY_LEN[t])


def test_verifier_1e5_forged_and_1e5_replayed_none_accepted(csign):
    """1e5 forged frames (random tags, wrong keys, a flipped bit of a real frame, the wrong key id) and
    1e5 replays of accepted frames: 0 accepted, and the verifier's counter never moves on one."""
    rng = random.Random(5101)
    csign.lib.link_sign_host_eeprom_erase()
    csign.boot(KEY, 3)
    signer = CommandSigner(KEY, 3)
    accepted = []
    for _ in range(200):
        t, head = _head(rng)
        frame = head + signer.trailer(t, head[1], head[2:])
        assert csign.check(frame, P.BODY_LEN[t]) == 0
        accepted.append((t, frame))
    forged_ok = 0
    for k in range(100000):
        t, head = _head(rng)
        kind = k % 4
        if kind == 0:                                   # a random tag, a fresh counter
            frame = head + bytes((3,)) + (signer.counter + 1 + k).to_bytes(6, "little") + rng.randbytes(8)
        elif kind == 1:                                 # signed with another key
            frame = head + P.sign_trailer(rng.randbytes(16), 3, signer.counter + 1 + k, t, head[1], head[2:])
        elif kind == 2:                                 # a real frame with one bit flipped
            frame = bytearray(rng.choice(accepted)[1])
            frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
            frame = bytes(frame)
        else:                                           # the right key, another key id
            frame = head + P.sign_trailer(KEY, 4, signer.counter + 1 + k, t, head[1], head[2:])
        t = frame[0] if frame[0] in P.BODY_LEN else t
        forged_ok += csign.check(frame, P.BODY_LEN[t]) == 0
    replay_ok = 0
    for k in range(100000):
        t, frame = accepted[rng.randrange(len(accepted))]
        replay_ok += csign.check(frame, P.BODY_LEN[t]) == 0
    assert forged_ok == 0 and replay_ok == 0
    # the counter did not move: the next fresh frame is accepted, the last accepted one is not
    t, head = _head(rng)
    assert csign.check(head + signer.trailer(t, head[1], head[2:]), P.BODY_LEN[t]) == 0
    assert csign.check(accepted[-1][1], P.BODY_LEN[accepted[-1][0]]) == 4


def test_verifier_drops_unsigned_truncated_and_reordered(csign):
    csign.lib.link_sign_host_eeprom_erase()
    csign.boot(KEY, 0)
    signer = CommandSigner(KEY, 0)
    body = P.wheel_speed_body(100, 100)
    head = bytes((P.MSG_WHEEL_SPEED, 9)) + body
    a = head + signer.trailer(P.MSG_WHEEL_SPEED, 9, body)
    b = head + signer.trailer(P.MSG_WHEEL_SPEED, 9, body)
    assert csign.check(head, 4) == 1                    # unsigned
    assert csign.check(b[:-1], 4) == 2                  # truncated trailer
    assert csign.check(b + b"\x00", 4) == 2             # padded
    assert csign.check(b, 4) == 0
    assert csign.check(a, 4) == 4                       # reordered: older counter after a newer one


def test_eeprom_mark_survives_reboot_and_wears_a_ring(csign):
    """The mark is saved before a counter at or above it is taken; after a reboot every frame accepted
    before is refused, fresh ones above the mark pass; marks rotate through the slots; a slot cut short by
    a power loss is ignored (the previous mark holds)."""
    csign.lib.link_sign_host_eeprom_erase()
    csign.boot(KEY, 0)
    reserve = 200000
    signer = CommandSigner(KEY, 0, stamp_base=0)
    frames = []
    for k in range(40):                                 # 40 frames 2.5 s apart (stamps: 10 us units)
        body = P.duty_body(k, k)
        head = bytes((P.MSG_DUTY, k)) + body
        frames.append(head + signer.trailer(P.MSG_DUTY, k, body, now_us=k * 2500000))
        assert csign.check(frames[-1], 4) == 0
    last = signer.counter
    marks = []
    for s in range(32):
        slot = bytes(csign.eeprom[8 * s:8 * s + 8])
        if slot != b"\xff" * 8:
            marks.append(int.from_bytes(slot[:6], "little"))
    assert max(marks) == last + reserve
    assert len(marks) == 32                             # 40 writes went round the 32-slot ring
    csign.boot(KEY, 0)                                  # reboot
    assert all(csign.check(f, 4) == 4 for f in frames)  # every old frame is refused
    body = P.duty_body(1, 1)
    head = bytes((P.MSG_DUTY, 0)) + body
    assert csign.check(head + P.sign_trailer(KEY, 0, last + reserve, P.MSG_DUTY, 0, body), 4) == 4
    assert csign.check(head + P.sign_trailer(KEY, 0, last + reserve + 1, P.MSG_DUTY, 0, body), 4) == 0
    # a torn write: the newest slot's CRC is broken -> the previous mark (still above every old frame) holds
    newest = max(range(32), key=lambda s: int.from_bytes(bytes(csign.eeprom[8 * s:8 * s + 6]), "little"))
    csign.eeprom[8 * newest + 7] ^= 0xFF
    csign.boot(KEY, 0)
    assert all(csign.check(f, 4) == 4 for f in frames)


# ------------------------------------------------------------------ host signer and key files
def test_command_signer_counter_follows_the_wall_clock(tmp_path):
    base = stamp_base_10us(unix_time_us=1_700_000_000_000_000, now_us=5_000_000)
    s = CommandSigner(KEY, 2, stamp_base=base)
    s.trailer(P.MSG_STOP, 0, b"", now_us=5_000_000)
    assert s.counter == 170_000_000_000_000
    s.trailer(P.MSG_STOP, 1, b"", now_us=5_000_000)        # same instant: still +1
    assert s.counter == 170_000_000_000_001
    # a restarted host (new process, no storage) a second later starts above everything sent before
    s2 = CommandSigner(KEY, 2, stamp_base=stamp_base_10us(1_700_000_001_000_000, 0))
    assert s2.next_counter(0) > s.counter
    assert "5c0ffee1" not in repr(s) and KEY.hex() not in repr(s)
    path = tmp_path / "link.key"
    path.write_text(KEY.hex() + "\n")
    assert read_key_file(str(path)) == KEY
    path.write_text("xyz")
    with pytest.raises(SigningError) as err:
        read_key_file(str(path))
    assert "xyz" not in str(err.value)
    with pytest.raises(SigningError):
        key_from_hex("00" * 15)


def test_driver_signs_commands_and_sends_queries_bare(tmp_path):
    """open_signed_link (the app's key file): WHEEL_SPEED/DUTY/STOP/RESET/SET_PHASE carry a trailer that
    verifies under the key with strictly increasing counters; PING/GET_STATUS go bare; no key file -> one
    line; signing=False only on purpose."""
    from boards.arduino.app import open_signed_link
    from onboard.comms.transport import LoopTransport
    path = tmp_path / "avr.key"
    path.write_text(KEY.hex())
    host, board = LoopTransport.pair()
    link = open_signed_link(host, str(path), 7, unix_time_us=1_700_000_000_000_000, now_us=0)
    link.command(WheelCmd(1000, 2.0, -2.0))
    link.duty(10, 20, 2000)
    link.ping(3000)
    link.stop(3000)
    link.set_phase(4, 4000)
    link.request_status(5000)
    link.reset_board(5000)
    frames = P.FrameDecoder().feed(board.read(100000))
    msgs = [P.decode_message(f) for f in frames]
    signed = [(m.name, getattr(m, "counter", None)) for m in msgs]
    assert [n for n, c in signed if c is None] == ["Ping", "GetStatus"]
    counters = [c for n, c in signed if c is not None]
    assert len(counters) == 5 and counters == sorted(set(counters))
    assert counters[0] == 170_000_000_000_000 + 100                    # wall clock in 10 us + 1 ms
    assert all(P.verify_signature(KEY, f) for f in frames if f.msg_type in P.SIGNED_TYPES)
    assert all(m.key_id == 7 for m in msgs if m.msg_type in P.SIGNED_TYPES)
    assert link.counters()["signed_commands"] == 5
    with pytest.raises(SigningError):
        open_signed_link(host, None, 1, 0, 0)
    with pytest.raises(SigningError):
        open_signed_link(host, str(tmp_path / "missing.key"), 1, 0, 0)
    assert open_signed_link(host, None, 0, 0, 0, signing=False).signer is None


def test_make_refuses_a_build_without_key_and_never_prints_it(tmp_path):
    """`make` with neither KEY nor SIGNING=off stops with one line; a malformed key file is named, its
    content never printed (the generated header goes to a scratch build folder)."""
    out = subprocess.run(["make", "-s", "-C", FW_DIR, "BUILD=%s" % tmp_path, "uno"], capture_output=True, text=True)
    assert out.returncode != 0 and "KEY=" in out.stderr and "SIGNING=off" in out.stderr
    bad = tmp_path / "bad.key"
    bad.write_text("secretsecretsecretsecretsecretse")
    out = subprocess.run(["make", "-s", "-C", FW_DIR, "BUILD=%s" % tmp_path, "KEY=%s" % bad, "uno"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "32 hex digits" in out.stderr
    assert "secret" not in out.stderr.replace(str(bad), "") and "secret" not in out.stdout


# ------------------------------------------------------------------ the real firmware in simavr
def test_simulator_key_file_is_the_harness_key(fil_built):
    """`make sim` (firmware/arduino/Makefile) and harness.sim.avr_bridge.sim_key() derive the same test key."""
    from harness.sim.avr_bridge import SIM_KEY_FILE, SIM_KEY_ID, sim_key
    assert read_key_file(SIM_KEY_FILE) == sim_key() and SIM_KEY_ID == 1
    assert oct(os.stat(SIM_KEY_FILE).st_mode & 0o777) == oct(0o600)


def _wire_s(n_bytes, baud):
    return n_bytes * 10 / baud


def test_mac_cycles_per_frame_in_simavr_within_the_link_budget(fil_built, capsys):
    """SipHash-2-4 on the ATmega328P at 16 MHz, counted by Timer1 (one count a cycle) in simavr: cycles for
    the MAC inputs of STOP (9 bytes), SET_PHASE (10) and WHEEL_SPEED/DUTY/RESET (13). The budget: the MAC of
    a frame must take less time than the frame takes on the wire, so the firmware keeps up with a link
    full of commands (115200 baud: 25 bytes = 2.17 ms; 9600: 26 ms)."""
    from harness.sim.avr_bridge import AvrBridge, LockstepSerial
    subprocess.run(["make", "-s", "-C", FW_DIR, "mac_bench"], check=True, capture_output=True)
    elf = os.path.join(FW_DIR, "build", "mac_bench", "mac_bench.elf")
    with AvrBridge("uno", elf=elf) as bridge:
        ser = LockstepSerial(bridge.pty_path).open()
        try:
            out = b""
            t = 0
            while b"done" not in out and t < 2000000:
                t += 50000
                st = bridge.run(t, 0, 0, 0)
                ser.sync_rx(st.tx_bytes)
                out += ser.read(4096)
        finally:
            ser.close()
    cycles = {}
    for line in out.decode().splitlines():
        if line.startswith("mac "):
            kv = dict(x.split("=") for x in line.split()[1:])
            cycles[int(kv["len"])] = int(kv["cycles"]) / int(kv["n"])
    assert sorted(cycles) == [9, 10, 13]
    wheel_frame = P.wire_bytes(P.BODY_LEN[P.MSG_WHEEL_SPEED] + P.SIG_LEN)
    mac_s = cycles[13] / 16e6
    with capsys.disabled():
        print("\nSipHash-2-4 on ATmega328P @16 MHz: %s cycles per MAC; a signed WHEEL_SPEED is %d bytes on the wire "
              "(%.2f ms at 115200, %.1f ms at 9600), its MAC %.3f ms"
              % (", ".join("%d B: %.0f" % (n, c) for n, c in sorted(cycles.items())), wheel_frame,
                 1e3 * _wire_s(wheel_frame, 115200), 1e3 * _wire_s(wheel_frame, 9600), 1e3 * mac_s))
    assert 1000 < cycles[13] < 16e6 * _wire_s(wheel_frame, 115200)
    assert cycles[9] <= cycles[10] <= cycles[13]


def _status(rig):
    rig.link.status = None
    rig.link.request_status(rig.t_us)
    assert rig.run_until(lambda r: r.link.status is not None, 40000)
    return rig.link.status


@pytest.fixture
def uno_rig(fil_built):
    from harness.sim.avr_bridge import FilRig
    r = FilRig("uno", plant={"imu_model": "truth"})
    yield r
    r.close()


@pytest.mark.fil
def test_firmware_signed_commands_drive_forged_and_replayed_never_do(uno_rig):
    """HELLO says signing is on; signed commands drive the motors. Then 2000 forged and 2000 replayed frames
    (plus unsigned and truncated ones) in bursts, the motors watched at every 1 ms step: never on, none
    accepted (STATUS counts each), and a signed command drives again."""
    from harness.sim.avr_bridge import SIM_KEY_ID, sim_key
    rig = uno_rig
    rig.run_for(30000)
    assert rig.link.hello.signing == 1 and rig.link.hello.key_id == SIM_KEY_ID
    assert rig.link.signing_mismatch() is None
    def drive(r):
        if r.t_us % 20000 == 0:
            r.link.command(WheelCmd(r.t_us, 8.0, 8.0))

    sent = []                                           # the signed frames the driver sent (replayed below)
    orig_write = rig.serial.write

    def tap(data):
        sent.append(bytes(data))
        orig_write(data)
    rig.serial.write = tap
    rig.run_for(300000, drive)
    rig.serial.write = orig_write
    assert rig.plant.duty_left > 0.1 and rig.link.telemetry.faults & P.FAULT_NO_COMMAND == 0
    replays = [f for f in sent if P.decode_message(P.FrameDecoder().feed(f)[0]).msg_type == P.MSG_WHEEL_SPEED]
    assert len(replays) == 15
    rig.link.stop(rig.t_us)
    rig.run_for(30000)
    assert rig.plant.duty_left == 0
    before = _status(rig)
    rng = random.Random(51)
    counter = rig.link.signer.counter
    bad = []
    for k in range(2000):                               # forged: random tags / a wrong key, fresh counters
        body = P.wheel_speed_body(rng.randrange(1000, 20000), rng.randrange(1000, 20000))
        if k % 2:
            trailer = bytes((SIM_KEY_ID,)) + (counter + 1 + k).to_bytes(6, "little") + rng.randbytes(8)
        else:
            trailer = P.sign_trailer(rng.randbytes(16), SIM_KEY_ID, counter + 1 + k, P.MSG_WHEEL_SPEED, k & 0xFF, body)
        bad.append(P.encode_frame(P.MSG_WHEEL_SPEED, k & 0xFF, body + trailer))
    for k in range(2000):                               # replayed: the recorded signed frames again
        bad.append(replays[k % len(replays)])
    for k in range(50):                                 # unsigned and truncated
        bad.append(P.encode_frame(P.MSG_DUTY, k, P.duty_body(400, 400)))
        good = P.encode_signed_frame(sim_key(), SIM_KEY_ID, counter + 5000 + k, P.MSG_DUTY, k, P.duty_body(400, 400))
        raw = P.cobs_decode(good[:-1])
        body = raw[2:-2]
        bad.append(P.encode_frame(P.MSG_DUTY, k, body[:-1 - k % 8]))
    moved = []
    for frame in bad:                                   # one frame (<= 25 bytes) per 3 ms: 115200 baud keeps up
        rig.link.send_raw(frame)
        for _ in range(3):
            rig.step()
            if rig.plant.duty_left != 0 or rig.plant.duty_right != 0:
                moved.append(rig.t_us)
    rig.run_for(20000)
    st = _status(rig)
    assert moved == []
    assert st.sig_bad_tag - before.sig_bad_tag == 2000
    assert st.sig_replayed - before.sig_replayed == 2000
    assert st.sig_unsigned - before.sig_unsigned == 50 and st.sig_bad_len - before.sig_bad_len == 50
    assert st.crc_errors == st.cobs_errors == 0         # every frame arrived whole: the MAC dropped them
    assert all(m.duty_left == 0 for m in rig.of_type("Telemetry")[-200:])
    # signed commands still drive
    rig.run_for(100000, lambda r: r.t_us % 20000 == 0 and r.link.command(WheelCmd(r.t_us, 8.0, 8.0)))
    assert rig.plant.duty_left > 0.1


@pytest.mark.fil
def test_firmware_eeprom_mark_survives_a_reset(uno_rig):
    """A watchdog reset (signed RESET) in simavr: the firmware reads its mark back from EEPROM and refuses
    a frame it accepted before the reset; a fresh one above the mark drives again."""
    from harness.sim.avr_bridge import SIM_KEY_ID, sim_key
    rig = uno_rig
    rig.run_for(30000)
    counter = rig.link.signer.next_counter(rig.t_us)
    old = P.encode_signed_frame(sim_key(), SIM_KEY_ID, counter, P.MSG_DUTY, 0, P.duty_body(200, 200))
    rig.link.signer.counter = counter
    rig.link.send_raw(old)
    rig.run_for(10000)
    assert rig.plant.duty_left == pytest.approx(0.5)
    rig.link.reset_board(rig.t_us)
    assert rig.run_until(lambda r: r.link.boots == 2, 500000)
    assert rig.plant.duty_left == 0
    rig.run_for(20000)
    before = _status(rig)
    rig.link.send_raw(old)                              # the recorded frame after the reset
    rig.run_for(20000)
    st = _status(rig)
    assert rig.plant.duty_left == 0 and st.sig_replayed == before.sig_replayed + 1
    # the driver's next stamp (simulated time in 10 us units) is still below the saved mark (2 s reserve
    # ahead of the old frame): refused too; one above the mark drives
    rig.link.duty(100, 100, rig.t_us)
    rig.run_for(20000)
    assert rig.plant.duty_left == 0 and _status(rig).sig_replayed == before.sig_replayed + 2
    rig.link.signer.counter = counter + 200000
    rig.link.duty(100, 100, rig.t_us)
    rig.run_for(20000)
    assert rig.plant.duty_left == pytest.approx(0.25)
