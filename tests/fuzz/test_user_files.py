"""Every reader of a file a user brings, called in-process on seeded mutations of a valid file: it returns a
result or raises its documented error (a ValueError subclass) with a one-line message; nothing else escapes
(no TypeError, KeyError, RecursionError, MemoryError from a tiny file claiming a huge array, struct.error,
tokenize.TokenError, ...). Formats: docs/formats/*.md, soil fields (harness/sim/soil_world.py), MCAP
recordings (harness/replay.py), ring logs (onboard/runtime/ring_log.py), policy model folders (onboard/policy).

``FUZZ_USER_FILES`` mutations per reader (default 120: the file runs in a few seconds)."""
import io
import json
import math
import os
import re
import shutil
import struct
import zipfile

import numpy as np
import pytest

from harness.config import ConfigError

N = int(os.environ.get("FUZZ_USER_FILES", "120"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.timeout(300), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

# what a hostile or broken file may hold in place of a value
TOKENS = [b"nan", b"NaN", b"inf", b"-inf", b"-1", b"0", b"-0", b"1e999", b"1e308", b"99999999999999999999999",
          b"", b'""', b'"x"', b"true", b"[]", b"{}", b"[" * 3000, b'{"a":' * 3000, b"a" * 70000,
          b"\xff\xfe\x80", b"\x00", b"\n", b",", b"=", b"[[", b"1" * 5000, b"-99999999999", b"4294967296",
          b"[1, 2]", b"[[1.0, 2.0], [3.0]]", b"{a = 1}", b"1.5", b"0x10", b"\xef\xbb\xbf"]
_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def mutate(data, rng):
    """One seeded mutation of ``data``: truncation, bit flips, random bytes inserted, bytes deleted, a number
    replaced by (or a token inserted from) TOKENS, a line duplicated or dropped."""
    n = len(data)
    kind = int(rng.integers(0, 8))
    if kind == 0:
        return data[:int(rng.integers(0, n + 1))]
    if kind == 1:
        out = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            if out:
                out[int(rng.integers(0, len(out)))] ^= 1 << int(rng.integers(0, 8))
        return bytes(out)
    if kind == 2:
        cut = int(rng.integers(0, n + 1))
        return data[:cut] + bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8)) + data[cut:]
    if kind == 3:
        a = int(rng.integers(0, n + 1))
        return data[:a] + data[min(n, a + int(rng.integers(1, 20))):]
    token = TOKENS[int(rng.integers(0, len(TOKENS)))]
    if kind in (4, 5):
        numbers = list(_NUMBER.finditer(data))
        if numbers:
            m = numbers[int(rng.integers(0, len(numbers)))]
            return data[:m.start()] + token + data[m.end():]
    if kind in (4, 5, 6):
        cut = int(rng.integers(0, n + 1))
        return data[:cut] + token + data[cut:]
    lines = data.split(b"\n")
    i, j = int(rng.integers(0, len(lines))), int(rng.integers(0, len(lines)))
    if rng.random() < 0.5:
        lines.insert(j, lines[i])
    else:
        del lines[i]
    return b"\n".join(lines)


def _variants(good, seed, extra=()):
    """``extra`` first, then N seeded mutations of ``good`` (every third one mutated twice)."""
    yield from extra
    rng = np.random.default_rng(seed)
    for k in range(N):
        bad = mutate(good, rng)
        yield mutate(bad, rng) if k % 3 == 2 else bad


def _fuzz(path, good, read, errors, seed, extra=()):
    """Write each variant to ``path`` and read it: a result, or one of ``errors`` with a one-line message."""
    results = 0
    for bad in _variants(good, seed, extra):
        with open(path, "wb") as fh:
            fh.write(bad)
        try:
            read(str(path))
        except errors as exc:
            assert "\n" not in str(exc), (bad[:80], str(exc))
            continue
        results += 1
    return results


def _toml_hazards(good):
    """Valid TOML around a value of >4300 digits (int's conversion limit) or nested thousands deep."""
    return [good + b"\nzz = " + b"1" * 5000 + b"\n", b"zz = " + b"[" * 5000 + b"]" * 5000 + b"\n" + good,
            b"zz = " + b"{a = " * 3000 + b"1" + b"}" * 3000 + b"\n" + good, good + b"\n\xff\xfe\n"]


# ---------------------------------------------------------------------------------------------- text files
def test_boat_course_toml(tmp_path):
    from harness.sim.boat_course import CourseFileError, load_course
    with open(os.path.join(REPO, "harness/scenarios/boat/courses/example.toml"), "rb") as fh:
        good = fh.read()
    load_course(os.path.join(REPO, "harness/scenarios/boat/courses/example.toml"))
    _fuzz(tmp_path / "course.toml", good, load_course, CourseFileError, 21, _toml_hazards(good))


PINGS = (b"time_s,boat_north_m,boat_east_m,boat_yaw_rad,tdoa_1_0_s,tdoa_2_0_s\n"
         b"12.0,0.0,0.0,0.0,-3.1e-4,2.2e-4\n14.0,5.0,1.0,0.35,-2.7e-4,2.9e-4\n")


def test_pinger_pings_csv(tmp_path):
    from harness.pinger_cli import read_pings
    extra = [b"\xef\xbb\xbf" + PINGS, PINGS + b"1" * 200000 + b"\n", PINGS.replace(b"12.0", b'"' + b"x" * 200000)]
    assert _fuzz(tmp_path / "p.csv", PINGS, lambda p: read_pings(p, 3), ConfigError, 22, extra) > 0


def test_sandbox_experiment_ini(tmp_path):
    from harness.sim.sandbox.config import load_experiment
    folder = os.path.join(REPO, "harness/scenarios/leveling/sandbox")
    shutil.copy(os.path.join(folder, "terrain_a.png"), tmp_path)
    with open(os.path.join(folder, "experiment.ini"), "rb") as fh:
        good = fh.read()
    extra = [good.replace(b"terrain_a.png", b"terrain_a.png\x00"), good.replace(b"terrain_a.png", b"."),
             good + b"\n[vehicle]\n", b"\xff" + good]
    assert _fuzz(tmp_path / "e.ini", good, load_experiment, ConfigError, 23, extra) > 0


REGIONS = b'''soil = "sand"
relative_density_pct = 50.0
[[regions]]
shape = "rectangle"
north_m = [0.0, 1.0]
east_m = [0.5, 2.0]
c_pa = 200.0
[[regions]]
shape = "circle"
centre_ne_m = [1.0, 1.0]
radius_m = 0.7
phi_deg = 35.0
[[regions]]
shape = "polygon"
vertices_ne_m = [[0.0, 0.0], [2.0, 0.0], [1.0, 2.0]]
soil = "clay"
'''


def test_soil_regions_toml(tmp_path):
    from harness.sim.soil_world import load_regions
    assert _fuzz(tmp_path / "soil.toml", REGIONS, lambda p: load_regions(p, (8, 10), 0.25, "sand", 50.0),
                 ConfigError, 24, _toml_hazards(REGIONS)) > 0


def test_boat_fit_csv_log():
    from harness.training.boat_fit.boat_log import read_csv_bytes
    from harness.training.boat_fit.fit_windows import LOG_COLUMNS
    rows = [",".join(LOG_COLUMNS)] + [",".join("%.3f" % (0.1 * k if c == "time_s" else 0.5) for c in LOG_COLUMNS)
                                      for k in range(10)]
    good = ("\n".join(rows) + "\n").encode()
    for bad in _variants(good, 25, [b"\xff\xfe" + good, good + b"x" * 200000]):
        try:
            read_csv_bytes(bad, "fuzz.csv")
        except ConfigError as exc:
            assert "\n" not in str(exc)


# ---------------------------------------------------------------------------------------------- arrays
def _npy(arr):
    out = io.BytesIO()
    np.save(out, arr)
    return out.getvalue()


def _npy_claiming(shape, descr="<f8"):
    """A .npy of a few bytes whose header claims ``shape`` of ``descr``."""
    head = ("{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, shape)).ljust(117) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + bytes(16)


# arrays a user's file may hold instead of the expected one
ODD_ARRAYS = [_npy(np.array(3.0)), _npy(np.zeros((0, 5))), _npy(np.array([["a"]])), _npy(np.ones((4, 5), bool)),
              _npy(np.ones((4, 5), complex)), _npy(np.ones((4, 5, 1))), _npy(np.full((4, 5), np.nan)),
              _npy(np.full((4, 5), -np.inf)), _npy(np.full((4, 5), -1.0)), _npy(np.full((4, 5), 1e308)),
              _npy(np.zeros((4, 5), dtype=[("a", "<f8")])), _npy(np.zeros((4, 5), "M8[s]")),
              _npy(np.full((4, 5), 2 ** 62, np.int64)), _npy(np.ones((4, 5), ">f8")),
              _npy_claiming((10 ** 6, 10 ** 6)), _npy_claiming((4, 5 * 10 ** 10)), _npy_claiming((10 ** 10, 8)),
              _npy_claiming((4, 5)), _npy_claiming((4, 5), "|O"), _npy_claiming((4, 5), "<U999999999"),
              b"\x93NUMPY\x01\x00\x10\x00{'descr': [[[[]}\n"]


def _npz(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name + ".npy", data)
    return out.getvalue()


def test_soil_npy_and_npz_fields(tmp_path):
    from harness.sim.soil_world import load_npy, load_npz
    good = _npy(np.full((4, 5), 30.0))
    _fuzz(tmp_path / "phi.npy", good, lambda p: load_npy(p, "phi_deg", (4, 5)), ConfigError, 26, ODD_ARRAYS)
    archive = _npz({"phi_deg": good, "c_pa": _npy(np.full((4, 5), 100.0))})
    _fuzz(tmp_path / "soil.npz", archive, lambda p: load_npz(p, (4, 5), "sand", 50.0), ConfigError, 27,
          [_npz({"phi_deg": a}) for a in ODD_ARRAYS])


def test_terrain_heightmap_npy(tmp_path):
    from harness.sim.voxel_terrain import load_heights
    good = _npy(np.arange(20).reshape(4, 5) % 7)
    _fuzz(tmp_path / "h.npy", good, load_heights, ConfigError, 28, ODD_ARRAYS)


@pytest.fixture(scope="module")
def session_file(tmp_path_factory):
    from harness.scenarios.leveling.sandbox_datagen import EXAMPLE_INI
    from harness.sim.rng import RunRandom
    from harness.sim.sandbox import session as sess
    from harness.sim.sandbox.config import load_experiment
    from harness.sim.sandbox.world import SandboxWorld
    exp = load_experiment(EXAMPLE_INI)
    north, east, yaw = exp.start
    world = SandboxWorld(exp.terrain(), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us, exp.substeps,
                         exp.erosion_iterations)
    arrays = sess.run_session(world, 8, 4, 0.25, math.pi / 2, RunRandom(1).stream("a").uniform, (0.25, 1.0), 0)
    path = tmp_path_factory.mktemp("session") / "sandbox_A.npz"
    sess.save_npz(str(path), arrays, sess.meta("A", world, 1, "a"))
    return str(path)


def test_sandbox_session_npz(tmp_path, session_file):
    """Byte mutations of the archive, and each of a few arrays replaced by an odd one (a header that does not
    parse, a tiny member claiming terabytes, ...)."""
    from harness.sim.sandbox.session import SessionError, load_npz
    arrays, _ = load_npz(session_file)
    with open(session_file, "rb") as fh:
        good = fh.read()
    with zipfile.ZipFile(session_file) as z:
        members = {name[:-4]: z.read(name) for name in z.namelist()}
    extra = []
    for key in ("time_us", "north_m", "teleport", "terrain_start_m", "meta_json"):
        for odd in ODD_ARRAYS:
            extra.append(_npz(dict(members, **{key: odd})))
        extra.append(_npz({k: v for k, v in members.items() if k != key}))
    extra.append(_npz(dict(members, meta_json=_npy(np.array('{"a": ' * 3000)))))
    extra.append(_npz(dict(members, meta_json=_npy(np.array("[1, 2]")))))
    _fuzz(tmp_path / "s.npz", good, load_npz, SessionError, 29, extra)
    assert load_npz(session_file)[0].keys() == arrays.keys()


# ---------------------------------------------------------------------------------------------- logs
def test_replayed_mcap_recording(tmp_path):
    from harness.replay import ReplayError, read_recording
    from onboard.runtime.mcap_log import McapLog
    path = tmp_path / "good.mcap"
    log = McapLog(str(path))
    log.log("/app/config", 0, {"app": "x", "config": {}})
    for k in range(20):
        log.log("/app/step", k * 1000, {"time_us": k * 1000, "v": 1.5})
    log.close()
    good = path.read_bytes()
    events, damage = read_recording(str(path))
    assert len(events) == 21 and damage is None
    _fuzz(tmp_path / "f.mcap", good, read_recording, ReplayError, 30)


def _ring_log(path):
    from onboard.core.samples import WheelCmd
    from onboard.runtime.ring_log import RingLogSink
    sink = RingLogSink(str(path), 8 * 1024, meta_bytes=1024)
    sink("/app/config", 0, {"app": "x", "config": {"a": [1, 2]}})
    for k in range(10):
        sink("/app/step", k * 1000, {"time_us": k * 1000, "v": 1.5, "s": "txt", "t": (1.0, 2.0), "n": None})
        sink("/app/out/wheels", k * 1000, WheelCmd(k * 1000, 1.0, -2.0))
    sink.close()
    return path.read_bytes()


def test_pulled_ring_log(tmp_path):
    """Byte mutations (caught by the CRCs), and records whose content is mutated but whose CRC is made to hold
    (a buggy writer, or a forged file): read_log returns contents, counting what does not decode."""
    from onboard.runtime import ring_log as rl
    good = _ring_log(tmp_path / "ring.bin")
    clean = rl.read_log(good)
    assert not clean.damaged and len(clean.records) == 20 and clean.undecodable == 0
    for bad in _variants(good, 31):
        rl.read_log(bad)
    records = rl._scan(good, rl.HEADER_BYTES, len(good))
    rng = np.random.default_rng(32)
    step = None
    for rec in records:
        if rec[1] == rl.ID_TOPIC and b"/app/step\n" in bytes(rec[4]):
            step = rl._parse_topic(rec[4])
    forged = []
    for k in range(3 * N):
        pos, rid, session, seq, payload, length = records[int(rng.integers(0, 3)) if k % 2 else
                                                          int(rng.integers(0, len(records)))]
        if rng.random() < 0.1:
            rid = int(rng.integers(0, 256))
        forged.append(good[:pos] + rl._frame(rid, session, seq, mutate(bytes(payload), rng)[:65535])
                      + good[pos + length:])
    # a config, a topic definition and a JSON field nested 30000 deep (the header made to cover the longer file)
    session_no, _, meta_bytes = rl.parse_header(good)
    for pos, rid, session, seq, payload, length in records:
        if rid == rl.ID_CONFIG:
            payload = bytes(payload[:rl.TIME_BYTES]) + b"[" * 30000 + b"]" * 30000
        elif rid == rl.ID_TOPIC:
            payload = bytes(payload[:2]) + b"\xff" * 40
        elif rid & rl.MAX_TOPIC_ID == step.rid:
            deep = b"[" * 30000 + b"]" * 30000
            payload = bytes(payload[:step.fmt_bytes]) + struct.pack("<H", len(deep)) + deep
        else:
            continue
        body = good[rl.HEADER_BYTES:pos] + rl._frame(rid, session, seq, payload) + good[pos + length:]
        forged.append(rl._header(session_no, rl.HEADER_BYTES + len(body), meta_bytes) + body)
    for bad in forged:
        log = rl.read_log(bad)
        assert log.config is None or isinstance(log.config, dict)
    assert rl.read_log(forged[-1]).undecodable == 1 and len(rl.read_log(forged[-1]).records) == 19
    assert rl.read_log(good).summary() == clean.summary()


# ---------------------------------------------------------------------------------------------- policy folders
def test_policy_model_folder(tmp_path):
    """card.json mutated (bytes, and each field given a value of the wrong kind), model.tflite mutated under a
    card without size and digest: load_policy returns a policy or raises the loader's errors."""
    from onboard.policy import load_policy
    from onboard.policy.card import CardMismatchError
    from onboard.policy.int8_pure import InputError, UnsupportedModelError
    from onboard.policy.tflite_pure import ModelFormatError
    errors = (CardMismatchError, ModelFormatError, UnsupportedModelError, InputError)
    source = os.path.join(REPO, "models", "pocket-dqn")
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(os.path.join(source, "model.tflite"), folder)
    with open(os.path.join(source, "card.json"), "rb") as fh:
        good = fh.read()
    card = json.loads(good)

    def read_card(path):
        shutil.copy(path, folder / "card.json")
        load_policy(str(folder))

    odd = [None, True, -1, 1.5, float("nan"), "x", "5", "a\x00b", [], {}, [1], 10 ** 30]
    extra = [b"[" * 100000, b'{"a": ' * 100000, b"\xff\xfe" + good]
    for key, value in (("file", None), ("file", 5), ("file", "a\x00b"), ("sha256", None), ("sha256", 7),
                       ("size_bytes", None), ("size_bytes", float("nan")), ("size_bytes", "12")):
        extra.append(json.dumps(dict(card, **{key: value})).encode())
    for side in ("inputs", "outputs"):
        for value in odd:
            spec = dict(card[side][0], quantization=value)
            extra.append(json.dumps(dict(card, **{side: [spec] + card[side][1:]})).encode())
            for q_key in ("scale", "zero_point"):
                q = dict(card[side][0]["quantization"], **{q_key: value})
                spec = dict(card[side][0], quantization=q)
                extra.append(json.dumps(dict(card, **{side: [spec] + card[side][1:]})).encode())
    _fuzz(tmp_path / "card.json", good, read_card, errors, 33, extra)

    bare = {k: v for k, v in card.items() if k not in ("size_bytes", "sha256")}
    (folder / "card.json").write_text(json.dumps(bare))
    with open(os.path.join(source, "model.tflite"), "rb") as fh:
        model = fh.read()

    def read_model(path):
        shutil.copy(path, folder / "model.tflite")
        load_policy(str(folder))

    assert _fuzz(tmp_path / "m.tflite", model, read_model, errors, 34) > 0
