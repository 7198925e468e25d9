"""Robot link protocol of the AVR firmware: COBS framing + CRC-16/CCITT-FALSE (pure Python).

Mirrors firmware/arduino/robot_link/link_protocol.{h,c} byte for byte (tests compile the C
file for the host and compare). Runs unchanged on MicroPython (no typing/dataclasses).

Wire format::

    frame = COBS(type | seq | body | crc_hi | crc_lo) 0x00
    crc   = CRC-16/CCITT-FALSE over type | seq | body (big-endian on the wire)
    body  = fixed-length little-endian fields, one layout per message type

The byte layout of every message, the rates, the failsafe and GET_HELLO (the boot HELLO again, for a
host that opens the port after boot) are specified in firmware/arduino/PROTOCOL.md; its machine-readable
layout tables are checked against ``BODY_FMT`` / ``BODY_LEN`` here (tests/firmware/test_protocol_doc.py).

COBS removes every 0x00 from the frame, so 0x00 only ever ends a frame and a receiver
that starts mid-stream resyncs at the next one. :class:`FrameDecoder` drops and counts
everything that is not a whole valid frame: oversize (more than ``MAX_ENCODED`` bytes
before a 0x00), COBS structure errors, CRC errors; :func:`decode_message` then rejects
unknown types and wrong body lengths with :class:`ProtocolError`.

The leveler build (firmware/arduino ``make leveler``) adds SET_PHASE (host -> board), LEVEL_STATE and
IMU_ID (board -> host) and runs the link at 9600 baud (an XBee-class radio). Link budget, 8N1 = 10 bits a
byte, so 960 B/s each way: a LEVEL_STATE frame is 2 + 29 + 2 = 33 bytes, COBS + 1 = 34, + the 0x00 = 35
bytes (36.5 ms on the wire), at most 27.4 Hz. The firmware sends it every 5th 100 Hz tick: 20 Hz x 35 B =
700 B/s, 73 % of the link, leaving 260 B/s for replies (PONG 14 B, STATUS 46 B). TELEMETRY at 100 Hz
(37 B -> 3700 B/s) would not fit, so that build does not send it. ``LEVEL_STATE_HZ`` and
``link_budget(...)`` hold the same arithmetic.

Signed commands: the messages that move the robot or change its state (``SIGNED_TYPES``: WHEEL_SPEED,
DUTY, STOP, RESET, SET_PHASE) carry a ``SIG_LEN``-byte trailer after their body (firmware
``link_sign.h``)::

    type | seq | body | key_id | counter (u48 LE) | tag (8 bytes)        then the CRC, COBS as usual
    tag = SipHash-2-4(key, type | seq | body | key_id | counter)     (onboard.comms.siphash)

``sign_trailer`` / ``encode_signed_frame`` build it; ``decode_message`` accepts a command with or without
it (``fields["counter"]`` etc. when present). Telemetry (firmware -> host) is not signed. A firmware built
with signing (HELLO ``signing`` = 1) drops a command without a valid trailer and counts it in STATUS.
"""
import struct

from onboard.comms.cobs import cobs_decode, cobs_encode
from onboard.comms.crc import crc16_ccitt_false
from onboard.comms.siphash import siphash24

PROTOCOL_VERSION = 2

MAX_BODY = 40
HEADER_LEN = 2
CRC_LEN = 2
MAX_DECODED = HEADER_LEN + MAX_BODY + CRC_LEN
MAX_ENCODED = MAX_DECODED + 1 + MAX_DECODED // 254

# host -> firmware
MSG_WHEEL_SPEED = 0x01   # int16 left_mradps, int16 right_mradps
MSG_DUTY = 0x02          # int16 left, int16 right (1/400 of full PWM)
MSG_STOP = 0x03
MSG_PING = 0x04          # uint32 token
MSG_GET_STATUS = 0x05
MSG_RESET = 0x06         # b"WDT!"
MSG_SET_PHASE = 0x07     # u8 phase of the host behaviour, echoed in LEVEL_STATE (leveler build)
MSG_GET_HELLO = 0x08     # (empty) -> HELLO again (+ IMU_ID in the leveler build): for a host that joins after boot
# firmware -> host
MSG_HELLO = 0x80
MSG_TELEMETRY = 0x81
MSG_STATUS = 0x82
MSG_PONG = 0x83
MSG_LEVEL_STATE = 0x84   # leveler build: algorithm state at LEVEL_STATE_HZ
MSG_IMU_ID = 0x85        # leveler build, at boot: WHO_AM_I of LSM303D, L3GD20H, LPS25H + matched mask

RESET_MAGIC = b"WDT!"

# signed commands (firmware link_sign.h)
SIGNED_TYPES = (MSG_WHEEL_SPEED, MSG_DUTY, MSG_STOP, MSG_RESET, MSG_SET_PHASE)
SIG_KEY_ID_LEN = 1
SIG_COUNTER_LEN = 6
SIG_TAG_LEN = 8
SIG_LEN = SIG_KEY_ID_LEN + SIG_COUNTER_LEN + SIG_TAG_LEN
SIG_COUNTER_MAX = (1 << 48) - 1
KEY_LEN = 16

# fault flags
FAULT_FAILSAFE = 0x0001
FAULT_CLAMPED = 0x0002
FAULT_IMU = 0x0004
FAULT_ENC_LEFT = 0x0008
FAULT_ENC_RIGHT = 0x0010
FAULT_RX_ERROR = 0x0020
FAULT_WDT_RESET = 0x0040
FAULT_NO_COMMAND = 0x0080
FAULT_NAMES = (
    (FAULT_FAILSAFE, "failsafe"), (FAULT_CLAMPED, "clamped"), (FAULT_IMU, "imu"),
    (FAULT_ENC_LEFT, "enc_left"), (FAULT_ENC_RIGHT, "enc_right"), (FAULT_RX_ERROR, "rx_error"),
    (FAULT_WDT_RESET, "wdt_reset"), (FAULT_NO_COMMAND, "no_command"),
)

# Body layouts (struct formats, little-endian) and their field names.
HELLO_FMT = "<BBBBBB"
HELLO_FIELDS = ("version", "board_id", "reset_flags", "imu_whoami", "signing", "key_id")
TELEMETRY_FMT = "<Iii3h3hhhHB"
TELEMETRY_FIELDS = ("t_us", "enc_left_ticks", "enc_right_ticks", "accel_raw", "gyro_raw",
                    "duty_left", "duty_right", "faults", "last_cmd_seq")
STATUS_COUNTERS = ("frames_ok", "crc_errors", "cobs_errors", "oversize", "bad_body",
                   "unknown_type", "seq_gaps", "failsafe_trips", "clamped", "enc_errors_left",
                   "enc_errors_right", "imu_errors")
SIG_COUNTERS = ("sig_unsigned", "sig_bad_tag", "sig_replayed", "sig_bad_len")
STATUS_FMT = "<I12HHBB4H"
PONG_FMT = "<II"
LEVEL_STATE_FMT = "<IiihhhhhhHBBB"
LEVEL_STATE_FIELDS = ("t_us", "enc_left_ticks", "enc_right_ticks", "pitch_mrad", "roll_mrad",
                      "yaw_rate_mradps", "accel_fwd_mmps2", "duty_left", "duty_right", "faults",
                      "last_cmd_seq", "phase", "tx_dropped")
IMU_ID_FMT = "<BBBB"
IMU_ID_FIELDS = ("lsm303d_whoami", "l3gd20h_whoami", "lps25h_whoami", "ok_mask")

# link budget of the leveler build (see the module doc)
LEVELER_BAUD = 9600
BITS_PER_BYTE_8N1 = 10
LEVEL_STATE_DECIMATION = 5            # of the firmware's 100 Hz tick
LEVEL_STATE_HZ = 20

BODY_LEN = {
    MSG_WHEEL_SPEED: 4, MSG_DUTY: 4, MSG_STOP: 0, MSG_PING: 4, MSG_GET_STATUS: 0, MSG_RESET: 4,
    MSG_HELLO: 6, MSG_TELEMETRY: 31, MSG_STATUS: 40, MSG_PONG: 8,
    MSG_SET_PHASE: 1, MSG_LEVEL_STATE: 29, MSG_IMU_ID: 4, MSG_GET_HELLO: 0,
}

# Message names (as in firmware/arduino/PROTOCOL.md, whose layout tables tests compare with the formats above).
MESSAGE_NAMES = {
    MSG_WHEEL_SPEED: "WHEEL_SPEED", MSG_DUTY: "DUTY", MSG_STOP: "STOP", MSG_PING: "PING",
    MSG_GET_STATUS: "GET_STATUS", MSG_RESET: "RESET", MSG_SET_PHASE: "SET_PHASE", MSG_GET_HELLO: "GET_HELLO",
    MSG_HELLO: "HELLO", MSG_TELEMETRY: "TELEMETRY", MSG_STATUS: "STATUS", MSG_PONG: "PONG",
    MSG_LEVEL_STATE: "LEVEL_STATE", MSG_IMU_ID: "IMU_ID",
}
# Body struct format (little-endian) of every message type; the decoders below use the same ones.
BODY_FMT = {
    MSG_WHEEL_SPEED: "<hh", MSG_DUTY: "<hh", MSG_STOP: "<", MSG_PING: "<I", MSG_GET_STATUS: "<",
    MSG_RESET: "<4s", MSG_SET_PHASE: "<B", MSG_GET_HELLO: "<",
    MSG_HELLO: HELLO_FMT, MSG_TELEMETRY: TELEMETRY_FMT, MSG_STATUS: STATUS_FMT, MSG_PONG: PONG_FMT,
    MSG_LEVEL_STATE: LEVEL_STATE_FMT, MSG_IMU_ID: IMU_ID_FMT,
}


def wire_bytes(body_len):
    """Bytes a frame with a ``body_len``-byte body takes on the wire: COBS(2 + body + 2) + 0x00 (for a signed
    command pass ``body_len + SIG_LEN``)."""
    n = HEADER_LEN + body_len + CRC_LEN
    return n + 1 + n // 254 + 1


def link_budget(baud, body_len, rate_hz):
    """(bytes per second the link carries at 8N1, bytes per second the message needs, the most messages
    per second that fit)."""
    capacity = baud / BITS_PER_BYTE_8N1
    per = wire_bytes(body_len)
    return capacity, per * rate_hz, capacity / per


class ProtocolError(ValueError):
    """A frame is well formed but its content is not a valid message (type, length, range)."""


def _faults_text(flags):
    return [name for bit, name in FAULT_NAMES if flags & bit]


# ---------------------------------------------------------------- frames
def encode_frame(msg_type, seq, body=b""):
    """Whole frame for the wire: COBS(type|seq|body|crc) + 0x00."""
    body = bytes(body)
    if len(body) > MAX_BODY:
        raise ProtocolError("body of %d bytes exceeds MAX_BODY=%d" % (len(body), MAX_BODY))
    if not (0 <= msg_type <= 0xFF and 0 <= seq <= 0xFF):
        raise ProtocolError("type and seq must be bytes, got %r, %r" % (msg_type, seq))
    raw = bytes((msg_type, seq)) + body
    crc = crc16_ccitt_false(raw)
    return cobs_encode(raw + bytes((crc >> 8, crc & 0xFF))) + b"\x00"


def sign_trailer(key, key_id, counter, msg_type, seq, body):
    """The signature trailer of a command: key_id | counter (u48 LE) | SipHash-2-4 tag over
    type | seq | body | key_id | counter."""
    if not (0 <= key_id <= 0xFF):
        raise ProtocolError("key_id must be 0..255, got %r" % (key_id,))
    if not (0 <= counter <= SIG_COUNTER_MAX):
        raise ProtocolError("counter must be 0..2^48-1, got %r" % (counter,))
    head = bytes((msg_type, seq)) + bytes(body) + bytes((key_id,)) + bytes(
        [(counter >> (8 * k)) & 0xFF for k in range(SIG_COUNTER_LEN)])
    return head[HEADER_LEN + len(body):] + siphash24(key, head)


def encode_signed_frame(key, key_id, counter, msg_type, seq, body=b""):
    """A whole signed command frame for the wire."""
    body = bytes(body)
    return encode_frame(msg_type, seq, body + sign_trailer(key, key_id, counter, msg_type, seq, body))


def split_signature(frame):
    """(body, key_id, counter, tag) of a signed command :class:`Frame`, or None when its body is not a
    signed one (wrong type or length)."""
    t = frame.msg_type
    if t not in SIGNED_TYPES or len(frame.body) != BODY_LEN[t] + SIG_LEN:
        return None
    n = BODY_LEN[t]
    sig = frame.body[n:]
    counter = 0
    for k in range(SIG_COUNTER_LEN - 1, -1, -1):
        counter = (counter << 8) | sig[SIG_KEY_ID_LEN + k]
    return frame.body[:n], sig[0], counter, bytes(sig[SIG_KEY_ID_LEN + SIG_COUNTER_LEN:])


def verify_signature(key, frame):
    """True when ``frame`` is a signed command whose tag verifies under ``key`` (any counter)."""
    parts = split_signature(frame)
    if parts is None:
        return False
    body, key_id, counter, tag = parts
    want = sign_trailer(key, key_id, counter, frame.msg_type, frame.seq, body)[-SIG_TAG_LEN:]
    diff = 0
    for a, b in zip(want, tag):
        diff |= a ^ b
    return diff == 0


class Frame:
    """A CRC-valid frame: ``msg_type``, ``seq``, ``body`` (bytes)."""

    def __init__(self, msg_type, seq, body):
        self.msg_type = msg_type
        self.seq = seq
        self.body = body

    def __repr__(self):
        return "Frame(type=0x%02x, seq=%d, body=%r)" % (self.msg_type, self.seq, self.body)


class FrameDecoder:
    """Stream decoder: ``feed(data)`` returns the CRC-valid frames completed by ``data``.

    Counters (never reset by decoding): frames_ok, crc_errors, cobs_errors, oversize,
    empty (0x00 0x00), bytes_in. Same rules as link_decoder_feed() in the firmware.
    """

    def __init__(self, max_encoded=MAX_ENCODED):
        self.max_encoded = max_encoded
        self._buf = bytearray()
        self._overflow = False
        self.frames_ok = 0
        self.crc_errors = 0
        self.cobs_errors = 0
        self.oversize = 0
        self.empty = 0
        self.bytes_in = 0

    def counters(self):
        return {"frames_ok": self.frames_ok, "crc_errors": self.crc_errors,
                "cobs_errors": self.cobs_errors, "oversize": self.oversize, "empty": self.empty,
                "bytes_in": self.bytes_in}

    def errors(self):
        return self.crc_errors + self.cobs_errors + self.oversize

    def feed(self, data):
        frames = []
        self.bytes_in += len(data)
        parts = bytes(data).split(b"\x00")
        # every part but the last ends at a 0x00
        for k in range(len(parts)):
            part = parts[k]
            if not self._overflow:
                room = self.max_encoded - len(self._buf)
                if len(part) > room:
                    self._overflow = True
                    self.oversize += 1
                    self._buf = bytearray()
                else:
                    self._buf.extend(part)
            if k == len(parts) - 1:
                break                       # no 0x00 yet: keep buffering
            encoded = bytes(self._buf)
            self._buf = bytearray()
            if self._overflow:
                self._overflow = False
                continue
            frame = self._decode(encoded)
            if frame is not None:
                frames.append(frame)
        return frames

    def _decode(self, encoded):
        if not encoded:
            self.empty += 1
            return None
        raw = cobs_decode(encoded)
        if raw is None or len(raw) < HEADER_LEN + CRC_LEN:
            self.cobs_errors += 1
            return None
        payload = raw[:-CRC_LEN]
        if crc16_ccitt_false(payload) != (raw[-2] << 8 | raw[-1]):
            self.crc_errors += 1
            return None
        self.frames_ok += 1
        return Frame(payload[0], payload[1], bytes(payload[HEADER_LEN:]))


# ---------------------------------------------------------------- messages
class Message:
    """A decoded message: ``msg_type``, ``seq``, ``name`` and its fields as attributes."""

    def __init__(self, msg_type, seq, name, fields):
        self.msg_type = msg_type
        self.seq = seq
        self.name = name
        self.fields = fields
        for k in fields:
            setattr(self, k, fields[k])

    def __repr__(self):
        return "%s(seq=%d, %s)" % (self.name, self.seq, ", ".join(
            "%s=%r" % (k, self.fields[k]) for k in self.fields))


def decode_message(frame):
    """Turn a CRC-valid :class:`Frame` into a :class:`Message`; ProtocolError when the type is
    unknown or the body has the wrong length."""
    t = frame.msg_type
    body = frame.body
    if t not in BODY_LEN:
        raise ProtocolError("unknown message type 0x%02x" % t)
    sig = split_signature(frame)
    if sig is not None:
        msg = decode_message(Frame(t, frame.seq, sig[0]))
        msg.fields["key_id"] = sig[1]
        msg.fields["counter"] = sig[2]
        msg.fields["tag"] = sig[3]
        for k in ("key_id", "counter", "tag"):
            setattr(msg, k, msg.fields[k])
        return msg
    if len(body) != BODY_LEN[t]:
        raise ProtocolError("message type 0x%02x needs a %d-byte body, got %d"
                            % (t, BODY_LEN[t], len(body)))
    if t == MSG_TELEMETRY:
        v = struct.unpack(TELEMETRY_FMT, body)
        fields = {"t_us": v[0], "enc_left_ticks": v[1], "enc_right_ticks": v[2],
                  "accel_raw": tuple(v[3:6]), "gyro_raw": tuple(v[6:9]), "duty_left": v[9],
                  "duty_right": v[10], "faults": v[11], "last_cmd_seq": v[12]}
        return Message(t, frame.seq, "Telemetry", fields)
    if t == MSG_STATUS:
        v = struct.unpack(STATUS_FMT, body)
        fields = {"t_us": v[0]}
        for i in range(len(STATUS_COUNTERS)):
            fields[STATUS_COUNTERS[i]] = v[1 + i]
        fields["faults"] = v[13]
        fields["reset_flags"] = v[14]
        fields["board_id"] = v[15]
        for i in range(len(SIG_COUNTERS)):
            fields[SIG_COUNTERS[i]] = v[16 + i]
        return Message(t, frame.seq, "Status", fields)
    if t == MSG_HELLO:
        v = struct.unpack(HELLO_FMT, body)
        return Message(t, frame.seq, "Hello", dict(zip(HELLO_FIELDS, v)))
    if t == MSG_LEVEL_STATE:
        return Message(t, frame.seq, "LevelState", dict(zip(LEVEL_STATE_FIELDS, struct.unpack(LEVEL_STATE_FMT, body))))
    if t == MSG_IMU_ID:
        return Message(t, frame.seq, "ImuId", dict(zip(IMU_ID_FIELDS, struct.unpack(IMU_ID_FMT, body))))
    if t == MSG_SET_PHASE:
        return Message(t, frame.seq, "SetPhase", {"phase": body[0]})
    if t == MSG_PONG:
        v = struct.unpack(PONG_FMT, body)
        return Message(t, frame.seq, "Pong", {"token": v[0], "fw_t_us": v[1]})
    if t == MSG_WHEEL_SPEED or t == MSG_DUTY:
        left, right = struct.unpack("<hh", body)
        name = "WheelSpeed" if t == MSG_WHEEL_SPEED else "Duty"
        return Message(t, frame.seq, name, {"left": left, "right": right})
    if t == MSG_PING:
        return Message(t, frame.seq, "Ping", {"token": struct.unpack("<I", body)[0]})
    if t == MSG_RESET:
        return Message(t, frame.seq, "Reset", {"magic": body})
    return Message(t, frame.seq, {MSG_STOP: "Stop", MSG_GET_STATUS: "GetStatus", MSG_GET_HELLO: "GetHello"}[t], {})


def _int(name, value):
    """int(value), or ProtocolError naming the field for a value with no integer (NaN, inf, not a number)."""
    try:
        return int(value)
    except (ValueError, OverflowError, TypeError):
        raise ProtocolError("%s=%r is not a finite number" % (name, value))


def _i16(name, value):
    v = _int(name, value)
    if not -32768 <= v <= 32767:
        raise ProtocolError("%s=%r does not fit int16" % (name, value))
    return v


def wheel_speed_body(left_mradps, right_mradps):
    return struct.pack("<hh", _i16("left_mradps", left_mradps), _i16("right_mradps", right_mradps))


def duty_body(left, right):
    return struct.pack("<hh", _i16("left", left), _i16("right", right))


def phase_body(phase):
    v = _int("phase", phase)
    if not 0 <= v <= 255:
        raise ProtocolError("phase=%r does not fit a byte" % (phase,))
    return bytes((v,))


def ping_body(token):
    return struct.pack("<I", _int("token", token) & 0xFFFFFFFF)


def faults_text(flags):
    """Names of the fault bits set in ``flags``."""
    return _faults_text(flags)
