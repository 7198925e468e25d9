"""firmware/arduino/PROTOCOL.md against the host codec (boards/arduino/protocol.py) and the firmware's
link_protocol.h: the document's machine-readable blocks (``layout``, ``flags``, ``constants``, ``example``)
are parsed and every message's type, length, field offsets, types and names compared, so the three cannot
drift apart."""
import os
import re
import struct

import pytest

from boards.arduino import board as B
from boards.arduino import protocol as P

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO_ROOT, "firmware", "arduino", "PROTOCOL.md")
HEADER = os.path.join(REPO_ROOT, "firmware", "arduino", "robot_link", "link_protocol.h")

TYPE_CODES = {"u8": "B", "i8": "b", "u16": "H", "i16": "h", "u32": "I", "i32": "i"}


def _blocks(kind):
    with open(DOC) as f:
        text = f.read()
    return [m.group(1) for m in re.finditer(r"^```%s\n(.*?)^```" % kind, text, re.M | re.S)]


class Field:
    def __init__(self, offset, type_text, name):
        self.offset = offset
        self.name = name
        m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", type_text)
        assert m, "bad field type %r" % type_text
        base, count = m.group(1), m.group(2)
        self.count = int(count) if count else None
        if base == "char":
            assert self.count, "char needs a length: %r" % type_text
            self.codes = "%ds" % self.count
            self.size = self.count
        else:
            code = TYPE_CODES[base]
            self.codes = code * (self.count or 1)
            self.size = struct.calcsize("<" + self.codes)


def parse_layouts():
    """{name: (type, direction, body_len, [Field])} of every ``layout`` block."""
    out = {}
    for block in _blocks("layout"):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        head = re.fullmatch(r"message (\w+) (0x[0-9a-fA-F]{2}) (host->robot|robot->host) body=(\d+)", lines[0])
        assert head, "bad layout header %r" % lines[0]
        fields = []
        for ln in lines[1:]:
            parts = ln.split(None, 3)
            fields.append(Field(int(parts[0]), parts[1], parts[2]))
        name = head.group(1)
        assert name not in out, "two layouts for %s" % name
        out[name] = (int(head.group(2), 16), head.group(3), int(head.group(4)), fields)
    return out


def header_defines():
    """Integer #defines of link_protocol.h (simple expressions of earlier ones evaluated)."""
    defs = {}
    with open(HEADER) as f:
        for m in re.finditer(r"^#define (\w+) (.+?)(?:\s*/\*.*)?$", f.read(), re.M):
            expr = m.group(2).strip()
            for k in sorted(defs, key=len, reverse=True):
                expr = re.sub(r"\b%s\b" % k, str(defs[k]), expr)
            expr = expr.replace("/", "//")
            if re.fullmatch(r"[0-9xXa-fA-F+\-*/() ]+", expr):
                defs[m.group(1)] = eval(expr)       # digits and operators only (checked above)
    return defs


def _expand(fmt):
    """'<I3hB' -> 'Ihhh B' without counts (strings kept as '4s')."""
    out = []
    for count, code in re.findall(r"(\d*)([a-zA-Z])", fmt.lstrip("<")):
        if code == "s":
            out.append(count + code)
        else:
            out.extend(code * int(count or 1))
    return "".join(out)


LAYOUTS = parse_layouts()


def test_every_message_of_the_codec_is_documented_once_and_nothing_else():
    assert sorted(LAYOUTS) == sorted(P.MESSAGE_NAMES.values())
    assert len(LAYOUTS) == len(P.BODY_LEN)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_matches_codec_and_firmware_header(name):
    msg_type, direction, body_len, fields = LAYOUTS[name]
    defs = header_defines()
    assert msg_type == getattr(P, "MSG_" + name) == defs["MSG_" + name]
    assert P.MESSAGE_NAMES[msg_type] == name
    assert direction == ("robot->host" if msg_type & 0x80 else "host->robot")
    assert body_len == P.BODY_LEN[msg_type] == defs["MSG_%s_LEN" % name]
    offset = 0
    for f in fields:                     # contiguous, no gaps or overlaps, fills the body
        assert f.offset == offset, "%s.%s at %d, expected %d" % (name, f.name, f.offset, offset)
        offset += f.size
    assert offset == body_len
    assert "".join(f.codes for f in fields) == _expand(P.BODY_FMT[msg_type])


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_codec_decodes_each_documented_field_at_its_offset(name):
    """A body built from the document alone (distinct values per field) decodes, field by field, to the
    same names and values with the host codec."""
    msg_type, _d, body_len, fields = LAYOUTS[name]
    body = bytearray()
    want = {}
    for k, f in enumerate(fields):
        if f.codes.endswith("s"):
            v = bytes(65 + k + i for i in range(f.size))
            body += v
        else:
            vals = []
            for i, code in enumerate(f.codes):
                lim = 2 ** (8 * struct.calcsize(code) - (1 if code.islower() else 0)) - 1
                v = (37 * (k + 1) + 11 * i) % lim
                vals.append(-v if code.islower() and (k + i) % 2 else v)
            body += struct.pack("<" + f.codes, *vals)
            v = tuple(vals) if f.count else vals[0]
        want[f.name] = v
    assert len(body) == body_len
    frames = P.FrameDecoder().feed(P.encode_frame(msg_type, 7, bytes(body)))
    msg = P.decode_message(frames[0])
    assert msg.msg_type == msg_type and msg.seq == 7
    assert msg.fields == want


def test_flags_match_codec_and_firmware_header():
    (block,) = _blocks("flags")
    defs = header_defines()
    doc = {}
    for ln in block.splitlines():
        if ln.strip():
            value, name = ln.split()[:2]
            doc[name] = int(value, 16)
    assert doc == {"FAULT_" + n.upper(): bit for bit, n in P.FAULT_NAMES}
    for name, bit in doc.items():
        assert getattr(P, name) == bit == defs[name]


def test_constants_match_codec_and_firmware_header():
    (block,) = _blocks("constants")
    doc = {ln.split()[0]: int(ln.split()[1]) for ln in block.splitlines() if ln.strip()}
    defs = header_defines()
    assert doc["PROTOCOL_VERSION"] == P.PROTOCOL_VERSION == defs["LINK_PROTOCOL_VERSION"]
    assert doc["MAX_BODY"] == P.MAX_BODY == defs["LINK_MAX_BODY"]
    assert doc["HEADER_LEN"] == P.HEADER_LEN == defs["LINK_HEADER_LEN"]
    assert doc["CRC_LEN"] == P.CRC_LEN == defs["LINK_CRC_LEN"]
    assert doc["MAX_ENCODED"] == P.MAX_ENCODED == defs["LINK_MAX_ENCODED"]
    assert doc["LINK_BAUD"] == B.LINK_BAUD
    assert doc["LEVELER_BAUD"] == P.LEVELER_BAUD == B.LEVELER_LINK_BAUD
    with open(os.path.join(os.path.dirname(HEADER), "link_sign.h")) as f:
        sign_h = f.read()
    parts = [int(re.search(r"^#define LINK_SIG_%s_LEN (\d+)" % k, sign_h, re.M).group(1))
             for k in ("KEY_ID", "COUNTER", "TAG")]
    assert doc["SIG_LEN"] == P.SIG_LEN == sum(parts)


def test_worked_examples_are_what_codec_and_firmware_encode(clink):
    (block,) = _blocks("example")
    n = 0
    for ln in block.splitlines():
        if not ln.strip():
            continue
        m = re.fullmatch(r"(\w+) seq=(\d+) body=([0-9a-f]*)\s+-> ([0-9a-f ]+)", ln.strip())
        assert m, ln
        msg_type = LAYOUTS[m.group(1)][0]
        seq, body, wire = int(m.group(2)), bytes.fromhex(m.group(3)), bytes.fromhex(m.group(4))
        assert P.encode_frame(msg_type, seq, body) == wire
        assert clink.encode_frame(msg_type, seq, body) == wire
        n += 1
    assert n >= 3


def test_message_table_agrees_with_layouts():
    with open(DOC) as f:
        rows = re.findall(r"^\| (0x[0-9a-f]{2}) +\| (\w+) +\| (host|robot) -> (?:host|robot) +\| (\d+) +\|",
                          f.read(), re.M)
    table = {name: (int(t, 16), src, int(n)) for t, name, src, n in rows}
    assert table == {name: (t, d.split("->")[0], n) for name, (t, d, n, _f) in LAYOUTS.items()}


@pytest.mark.parametrize("board", ["uno", "leonardo", "leveler"])
def test_get_hello_is_answered_with_the_boot_hello(board, fil_built):
    """GET_HELLO as the document specifies it, on the real firmware in lockstep (simulated time only): the
    same HELLO as at boot (and IMU_ID in the leveler build)."""
    if board == "leveler":
        from harness.sim.fil_leveler_world import LevelerRig
        rig = LevelerRig(seed=1)
        wanted = ("Hello", "ImuId")
    else:
        from harness.sim.avr_bridge import FilRig
        rig = FilRig(board, seed=1)
        wanted = ("Hello",)
    with rig:
        rig.run_for(60000)
        boot = {name: rig.of_type(name) for name in wanted}
        assert all(len(v) == 1 for v in boot.values()), boot
        n = len(rig.messages)
        rig.serial.write(P.encode_frame(P.MSG_GET_HELLO, 200))

        def answered(r):
            return all(any(m.name == name for m in r.messages[n:]) for name in wanted)

        assert rig.run_until(answered, 200000)       # 9600 baud (leveler): ~60 ms behind a LEVEL_STATE
        for name in wanted:
            (again,) = [m for m in rig.messages[n:] if m.name == name]
            assert again.fields == boot[name][0].fields
