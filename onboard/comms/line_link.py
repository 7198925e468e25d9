"""Line protocol between a host and a board's runtime over a serial link (pure, MicroPython-compatible).

One message per line, ASCII::

    <TAG>,<field>,<field>,...*<crc>\\n

``crc`` is CRC-16/CCITT-FALSE (4 upper-case hex digits) of everything before ``*``.
Integers are decimal; floats travel as 16 hex digits of their IEEE-754 double
(little-endian ``struct`` '<d'), so a value crosses the link bit-exactly in both
directions (a decimal repr would depend on each interpreter's float formatting).

Messages used by the board runtime (``onboard.runtime.link_runtime``):

host -> board
  ``H,<mode>``                         hello; mode ``lockstep`` = host drives time
  ``I,time_us,dt_us,dvx,dvy,dvz,dax,day,daz``   ImuSample (dvel_body_mps, dang_body_rad)
  ``P,time_us,n,e,d,roll,pitch,yaw``    PoseSample (pos_ned_m, euler_rad)
  ``T,now_us``                         run the scheduler tick at now_us
  ``Q``                                 ask for the report
Signed lines (host -> board, on a board with a link key; :mod:`onboard.comms.signed_frame`)::

    ~<hex digits of a signed frame whose payload is the line above without its newline>

The board opens the frame (key, tag, fresh counter) before it decodes the line inside; an
unsigned, forged, replayed or reordered line is answered ``X,<reason>`` and changes nothing.
Replies (board -> host) stay unsigned: they are telemetry.

board -> host
  ``READY,<board>,<version>,<mem_free>``  after boot
  ``S,now_us,north,east,yaw,speed,var_n,var_e,var_yaw,left,right``  state after a tick
  ``R,<key>,<int>,<key>,<int>,...``     counters
  ``X,<reason>``                         a rejected line (counted; state untouched)
"""
import binascii
import struct

from onboard.comms.crc import crc16_ccitt_false


SIGNED_MARK = b"~"


class LinkError(ValueError):
    """A line that is not a valid frame (bad CRC, bad field, unknown tag)."""


def sign_line(signer, line, stamp=None):
    """``line`` (an encoded frame, with or without its newline) as a signed line (bytes, ends with \\n);
    ``signer`` is a :class:`onboard.comms.signed_frame.FrameSigner` (``stamp``: see its ``frame``)."""
    if isinstance(line, str):
        line = line.encode()
    return SIGNED_MARK + binascii.hexlify(signer.frame(line.strip(), stamp)) + b"\n"


def open_signed_line(verifier, line):
    """The line inside a signed line, or raise LinkError saying why it was dropped (unsigned, not hex, or
    refused by ``verifier``, an :class:`onboard.comms.signed_frame.FrameVerifier`, which counts it)."""
    if isinstance(line, str):
        line = line.encode()
    line = line.strip()
    if line[:1] != SIGNED_MARK:
        raise LinkError("unsigned line")
    try:
        frame = binascii.unhexlify(line[1:])
    except ValueError:
        raise LinkError("signed line is not hex")
    inner = verifier.open(frame)
    if inner is None:
        raise LinkError("signed line refused (forged; replayed or unknown key)")
    return inner


def f64_hex(x):
    """Float -> 16 hex digits of its IEEE-754 double (little-endian)."""
    return binascii.hexlify(struct.pack("<d", x)).decode()


def hex_f64(s):
    """16 hex digits -> float; LinkError when malformed."""
    if len(s) != 16:
        raise LinkError("float field must be 16 hex digits, got %r" % (s,))
    try:
        return struct.unpack("<d", binascii.unhexlify(s))[0]
    except ValueError:
        raise LinkError("float field is not hex: %r" % (s,))


def encode(tag, fields):
    """Frame ``tag`` and its already-formatted string ``fields`` into one line (bytes, ends with \\n)."""
    body = tag
    for f in fields:
        body += "," + f
    raw = body.encode()
    return raw + ("*%04X\n" % crc16_ccitt_false(raw)).encode()


def decode(line):
    """bytes/str line -> (tag, [fields]); raises LinkError on a bad frame."""
    if isinstance(line, str):
        line = line.encode()
    line = line.strip()
    star = line.rfind(b"*")
    if star < 1 or len(line) - star != 5:
        raise LinkError("missing *CRC trailer")
    body = line[:star]
    trailer = line[star + 1:]
    for ch in trailer:          # hex digits only: int(x, 16) also takes a sign, "_", spaces and "0x"
        if not (48 <= ch <= 57 or 65 <= ch <= 70 or 97 <= ch <= 102):
            raise LinkError("CRC is not hex")
    crc = int(trailer, 16)
    if crc != crc16_ccitt_false(body):
        raise LinkError("CRC mismatch")
    try:
        parts = body.decode().split(",")
    except UnicodeError:
        raise LinkError("frame is not ASCII")
    return parts[0], parts[1:]


def parse_int(s):
    """An integer field: an optional ``-`` and ASCII digits (what both interpreters read alike: CPython's
    ``int()`` also takes underscores, spaces, ``+`` and non-ASCII digits); LinkError otherwise."""
    digits = s[1:] if s[:1] == "-" else s
    if not digits:
        raise LinkError("integer field is not decimal: %r" % (s,))
    for ch in digits:
        if ch < "0" or ch > "9":
            raise LinkError("integer field is not decimal: %r" % (s,))
    return int(s)


def imu_fields(sample):
    """ImuSample -> I-frame fields."""
    out = [str(sample.time_us), str(sample.dt_us)]
    for v in sample.dvel_body_mps:
        out.append(f64_hex(v))
    for v in sample.dang_body_rad:
        out.append(f64_hex(v))
    return out


def pose_fields(sample):
    """PoseSample -> P-frame fields (covariances are not sent: the estimator's defaults apply)."""
    out = [str(sample.time_us)]
    for v in sample.pos_ned_m:
        out.append(f64_hex(v))
    for v in sample.euler_rad:
        out.append(f64_hex(v))
    return out


# field layout of the I and P frames (named, no magic indexes); ranges are (start, stop)
# because this MicroPython build cannot construct slice objects
IMU_TIME, IMU_DT, IMU_DVEL, IMU_DANG, IMU_N = 0, 1, (2, 5), (5, 8), 8
POSE_TIME, POSE_POS, POSE_EULER, POSE_N = 0, (1, 4), (4, 7), 7


def _floats(fields, rng):
    return [hex_f64(s) for s in fields[rng[0]:rng[1]]]


def imu_from_fields(fields, sample_cls):
    if len(fields) != IMU_N:
        raise LinkError("I frame needs %d fields, got %d" % (IMU_N, len(fields)))
    return sample_cls(parse_int(fields[IMU_TIME]), parse_int(fields[IMU_DT]),
                      _floats(fields, IMU_DVEL), _floats(fields, IMU_DANG))


def pose_from_fields(fields, sample_cls):
    if len(fields) != POSE_N:
        raise LinkError("P frame needs %d fields, got %d" % (POSE_N, len(fields)))
    return sample_cls(parse_int(fields[POSE_TIME]), _floats(fields, POSE_POS),
                      _floats(fields, POSE_EULER))
