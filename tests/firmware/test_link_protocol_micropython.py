"""The host link codec (boards/arduino/protocol.py) is pure: it runs unchanged inside real
MicroPython 1.27 (a MicroPython board could drive the AVR board) with the same bytes."""
import json
import random

import pytest

from boards.arduino import protocol as P
from harness.sim.micropython import MP_LIB_DIR, available, collect_files, run_micropython

pytestmark = pytest.mark.micropython

CODE = r"""
import json
from boards.arduino import protocol as P
frames = [P.encode_frame(t, s, bytes(b)) for t, s, b in CASES]
dec = P.FrameDecoder()
got = dec.feed(STREAM)
msgs = []
for f in got:
    try:
        m = P.decode_message(f)
        msgs.append([m.name, m.seq, sorted([k, list(v) if isinstance(v, tuple) else v] for k, v in m.fields.items())])
    except P.ProtocolError:
        msgs.append(["invalid", f.msg_type, f.seq])
print("MPOUT " + json.dumps({"frames": [list(f) for f in frames], "msgs": msgs,
                              "counters": dec.counters()}))
"""


def _reference(cases, stream):
    frames = [P.encode_frame(t, s, bytes(b)) for t, s, b in cases]
    dec = P.FrameDecoder()
    msgs = []
    for f in dec.feed(stream):
        try:
            m = P.decode_message(f)
            msgs.append([m.name, m.seq, sorted([k, list(v) if isinstance(v, tuple) else v]
                                               for k, v in m.fields.items())])
        except P.ProtocolError:
            msgs.append(["invalid", f.msg_type, f.seq])
    return {"frames": [list(f) for f in frames], "msgs": msgs, "counters": dec.counters()}


def test_codec_identical_in_micropython():
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    rng = random.Random(11)
    cases = [(rng.randrange(256), rng.randrange(256), [rng.randrange(256) for _ in range(rng.randrange(41))])
             for _ in range(40)]
    parts = [P.encode_frame(P.MSG_TELEMETRY, 5, bytes(rng.randrange(256) for _ in range(31))),
             P.encode_frame(P.MSG_STATUS, 6, bytes(range(32))), rng.randbytes(50), b"\x00",
             P.encode_frame(P.MSG_HELLO, 7, b"\x01\x02\x08\x68"), P.encode_frame(0x55, 8, b"?"),
             b"\x55" * 60 + b"\x00", P.encode_frame(P.MSG_PONG, 9, bytes(8))]
    stream = b"".join(parts)
    files = collect_files(["onboard", "boards/arduino"])
    files[MP_LIB_DIR + "/boards/__init__.py"] = ""
    code = "CASES = %r\nSTREAM = %r\n%s" % (cases, stream, CODE)
    out = run_micropython(code, files)
    line = [ln for ln in out.splitlines() if ln.startswith("MPOUT ")][-1]
    mp = json.loads(line[len("MPOUT "):])
    ref = json.loads(json.dumps(_reference(cases, stream)))
    assert mp == ref
    assert len(ref["msgs"]) >= 4
