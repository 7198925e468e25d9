"""VESC UART protocol codec (pure Python; runs unchanged on MicroPython).

Why our own codec: the PyPI ``pyvesc`` 1.0.5 (the only release on PyPI, checked with
``pip index versions pyvesc`` / ``pip download --no-deps pyvesc==1.0.5``) depends on
``PyCRC``, a name that now belongs to an unrelated package, so it does not import on
Python 3.11, and its ``GetValues`` decodes the pre-3.33 telemetry layout (six MOSFET
temperatures, no id/iq). No maintained fork is published on PyPI. This module is a
small, dependency-free codec of the current firmware's layout instead.

Wire format (vedderb/bldc ``comm/packet.c``, ``packet_send_packet`` / ``try_decode_packet``)::

    2, len(1 byte), payload, crc16 hi, crc16 lo, 3        payload of 1..255 bytes
    3, len hi, len lo, payload, crc16 hi, crc16 lo, 3     payload of 256..PACKET_MAX_PL_LEN

The encoder picks the short header up to 255 bytes; the decoder, like the firmware's,
also accepts the long header with a length of exactly 255 (refused below 255).

CRC-16/XMODEM (poly 0x1021, init 0) over the payload only. The first payload byte is
the command id (``COMM_PACKET_ID`` in vedderb/bldc ``datatypes.h``). Multi-byte
integers are big-endian. ``float16``/``float32`` fields are *scaled integers*
(``buffer_append_float16(buf, x, scale)`` writes ``int16(x * scale)``, truncated).

Commands (vedderb/bldc ``comm/commands.c``, ``commands_process_packet``):
SetDuty ``int32(duty * 1e5)``, SetCurrent / SetCurrentBrake ``int32(amps * 1e3)``,
SetRPM ``int32(erpm)``, Alive (no body), ForwardCan ``can_id`` + inner payload
(``comm_can_send_buffer``: the VESC on the CAN bus with that id runs the inner
command and its reply comes back on the same UART).

GetValues reply, FW 5.x/6.x (``case COMM_GET_VALUES`` in vedderb/bldc ``comm/commands.c``,
same in the 2021 and 2023 trees): see ``GET_VALUES_LAYOUT`` below; each row is
``(mask bit, field, struct code, scale)``. ``COMM_GET_VALUES_SELECTIVE`` sends
only the rows whose mask bit is set, after echoing the 32-bit mask.
"""
import struct

from onboard.comms.crc import crc16_xmodem

# ---------------------------------------------------------------- command ids (datatypes.h)
COMM_FW_VERSION = 0
COMM_GET_VALUES = 4
COMM_SET_DUTY = 5
COMM_SET_CURRENT = 6
COMM_SET_CURRENT_BRAKE = 7
COMM_SET_RPM = 8
COMM_ALIVE = 30
COMM_FORWARD_CAN = 34
COMM_GET_VALUES_SELECTIVE = 50

# ---------------------------------------------------------------- framing (packet.c)
START_SHORT = 2          # 1-byte length
START_LONG = 3           # 2-byte length
END_BYTE = 3
MAX_PAYLOAD = 512        # PACKET_MAX_PL_LEN of the STM32 firmware

# scales of the set commands (commands.c)
DUTY_SCALE = 100000.0    # SetDuty: int32(duty * 1e5)
CURRENT_SCALE = 1000.0   # SetCurrent / SetCurrentBrake: int32(A * 1e3)

INT32_MIN = -2147483648
INT32_MAX = 2147483647

# ---------------------------------------------------------------- fault codes (datatypes.h mc_fault_code)
FAULT_NAMES = (
    "NONE", "OVER_VOLTAGE", "UNDER_VOLTAGE", "DRV", "ABS_OVER_CURRENT", "OVER_TEMP_FET",
    "OVER_TEMP_MOTOR", "GATE_DRIVER_OVER_VOLTAGE", "GATE_DRIVER_UNDER_VOLTAGE",
    "MCU_UNDER_VOLTAGE", "BOOTING_FROM_WATCHDOG_RESET", "ENCODER_SPI",
    "ENCODER_SINCOS_BELOW_MIN_AMPLITUDE", "ENCODER_SINCOS_ABOVE_MAX_AMPLITUDE",
    "FLASH_CORRUPTION", "HIGH_OFFSET_CURRENT_SENSOR_1", "HIGH_OFFSET_CURRENT_SENSOR_2",
    "HIGH_OFFSET_CURRENT_SENSOR_3", "UNBALANCED_CURRENTS", "BRK", "RESOLVER_LOT",
    "RESOLVER_DOS", "RESOLVER_LOS", "FLASH_CORRUPTION_APP_CFG", "FLASH_CORRUPTION_MC_CFG",
    "ENCODER_NO_MAGNET", "ENCODER_MAGNET_TOO_STRONG", "PHASE_FILTER", "ENCODER_FAULT",
    "LV_OUTPUT_FAULT",
)
FAULT_NONE = 0
FAULT_OVER_VOLTAGE = 1
FAULT_UNDER_VOLTAGE = 2
FAULT_DRV = 3
FAULT_ABS_OVER_CURRENT = 4
FAULT_OVER_TEMP_FET = 5
FAULT_OVER_TEMP_MOTOR = 6


def fault_name(code):
    if 0 <= code < len(FAULT_NAMES):
        return FAULT_NAMES[code]
    return "UNKNOWN_%d" % code


# ---------------------------------------------------------------- GetValues layout (commands.c)
# (mask bit, field name, struct code, scale or None for raw integers)
# Units: _degc degrees Celsius, _a amperes, _v volts, _ah amp-hours, _wh watt-hours,
# duty is a fraction of the input voltage (-1..1), rpm_erpm is *electrical* RPM,
# tachometer_ticks counts 6 per electrical revolution, pid_pos_deg is the encoder
# position. status bit 0: the firmware's command timeout fired; bit 1: kill switch.
GET_VALUES_LAYOUT = (
    (0, "temp_fet_degc", "h", 10.0),
    (1, "temp_motor_degc", "h", 10.0),
    (2, "avg_motor_current_a", "i", 100.0),
    (3, "avg_input_current_a", "i", 100.0),
    (4, "avg_id_a", "i", 100.0),
    (5, "avg_iq_a", "i", 100.0),
    (6, "duty", "h", 1000.0),
    (7, "rpm_erpm", "i", 1.0),
    (8, "v_in_v", "h", 10.0),
    (9, "amp_hours_ah", "i", 10000.0),
    (10, "amp_hours_charged_ah", "i", 10000.0),
    (11, "watt_hours_wh", "i", 10000.0),
    (12, "watt_hours_charged_wh", "i", 10000.0),
    (13, "tachometer_ticks", "i", None),
    (14, "tachometer_abs_ticks", "i", None),
    (15, "fault_code", "B", None),
    (16, "pid_pos_deg", "i", 1000000.0),
    (17, "controller_id", "B", None),
    (18, "temp_mos1_degc", "h", 10.0),
    (18, "temp_mos2_degc", "h", 10.0),
    (18, "temp_mos3_degc", "h", 10.0),
    (19, "avg_vd_v", "i", 1000.0),
    (20, "avg_vq_v", "i", 1000.0),
    (21, "status", "B", None),
)
GET_VALUES_FIELDS = tuple(row[1] for row in GET_VALUES_LAYOUT)
# A full GetValues reply must reach at least the fault code (older firmware stops there;
# later fields are optional and decoded when present).
REQUIRED_FIELDS = 16
STATUS_TIMEOUT = 1
STATUS_KILL_SWITCH = 2

_SIZES = {"h": 2, "i": 4, "B": 1, "H": 2, "I": 4}
_LIMITS = {"h": (-32768, 32767), "i": (INT32_MIN, INT32_MAX), "B": (0, 255)}


class VescError(ValueError):
    """Base class of codec errors (bad values to encode, malformed payloads)."""


class VescEncodeError(VescError):
    pass


class VescDecodeError(VescError):
    pass


def _finite(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise VescEncodeError("%s must be a number, got %r" % (name, value))
    if v != v or v in (float("inf"), float("-inf")):
        raise VescEncodeError("%s must be finite, got %r" % (name, value))
    return v


def _int32(name, value):
    if value < INT32_MIN or value > INT32_MAX:
        raise VescEncodeError("%s=%r does not fit in int32" % (name, value))
    return struct.pack(">i", value)


# ---------------------------------------------------------------- frames
def encode_frame(payload):
    """One UART frame around ``payload`` (bytes, 1..MAX_PAYLOAD long)."""
    n = len(payload)
    if n < 1 or n > MAX_PAYLOAD:
        raise VescEncodeError("payload length %d outside 1..%d" % (n, MAX_PAYLOAD))
    if n <= 255:
        head = bytes((START_SHORT, n))
    else:
        head = bytes((START_LONG, n >> 8, n & 0xFF))
    crc = crc16_xmodem(payload)
    return head + bytes(payload) + bytes((crc >> 8, crc & 0xFF, END_BYTE))


class FrameDecoder:
    """Stream parser: bytes in, payloads out; resynchronises like the firmware.

    Bytes that cannot start a valid frame, frames with a bad CRC or end byte, and
    frames cut short (a later complete frame arrived before they were complete) are
    skipped and counted, never returned. Counters: ``frames`` (good), ``crc_errors``,
    ``framing_errors`` (bad end byte or length), ``truncated`` (incomplete frames
    given up on), ``skipped_bytes`` (every byte discarded).
    """

    def __init__(self, max_payload=MAX_PAYLOAD):
        self.max_payload = max_payload
        self._buf = bytearray()
        self.frames = 0
        self.crc_errors = 0
        self.framing_errors = 0
        self.truncated = 0
        self.skipped_bytes = 0

    @property
    def pending(self):
        """Bytes held while waiting for the rest of a frame."""
        return len(self._buf)

    def counters(self):
        return {"frames": self.frames, "crc_errors": self.crc_errors,
                "framing_errors": self.framing_errors, "truncated": self.truncated,
                "skipped_bytes": self.skipped_bytes}

    def discard_pending(self):
        """Give up on a partial frame (port reset, receive timeout); counted as truncated."""
        if self._buf:
            self.truncated += 1
            self.skipped_bytes += len(self._buf)
            self._buf = bytearray()

    def _check(self, buf, i):
        """Frame at ``i``: (status, total_len, payload). status 'ok', 'more', 'bad_len',
        'bad_end', 'bad_crc' or 'no_start'."""
        n = len(buf)
        start = buf[i]
        if start == START_SHORT:
            if n - i < 2:
                return "more", 0, None
            length = buf[i + 1]
            head = 2
            if length < 1:
                return "bad_len", 0, None
        elif start == START_LONG:
            if n - i < 3:
                return "more", 0, None
            length = (buf[i + 1] << 8) | buf[i + 2]
            head = 3
            # vedderb/bldc comm/packet.c try_decode_packet: a 16-bit length below 255 is
            # refused ("if (len < 255) return -1;"); 255 itself is accepted, although
            # packet_send_packet only emits this header from 256 bytes on.
            if length < 255:
                return "bad_len", 0, None
        else:
            return "no_start", 0, None
        if length > self.max_payload:
            return "bad_len", 0, None
        total = head + length + 3
        if n - i < total:
            return "more", total, None
        if buf[i + total - 1] != END_BYTE:
            return "bad_end", total, None
        payload = bytes(buf[i + head:i + head + length])
        crc_rx = (buf[i + head + length] << 8) | buf[i + head + length + 1]
        if crc16_xmodem(payload) != crc_rx:
            return "bad_crc", total, None
        return "ok", total, payload

    def _complete_frame_after(self, buf, i, end=None):
        """Index of the first complete valid frame starting after ``i`` (before ``end``), or -1."""
        n = len(buf) if end is None else min(end, len(buf))
        j = i + 1
        while j < n:
            if buf[j] == START_SHORT or buf[j] == START_LONG:
                status, _total, _p = self._check(buf, j)
                if status == "ok":
                    return j
            j += 1
        return -1

    def feed(self, data):
        """Add received bytes; returns the list of complete, valid payloads (bytes)."""
        buf = self._buf
        buf.extend(data)
        out = []
        i = 0
        while i < len(buf):
            status, total, payload = self._check(buf, i)
            if status == "ok":
                out.append(payload)
                self.frames += 1
                i += total
            elif status == "more":
                j = self._complete_frame_after(buf, i)
                if j < 0:
                    break                     # wait for more bytes
                self.truncated += 1          # a later frame is complete: this one was cut short
                self.skipped_bytes += j - i
                i = j
            else:
                j = self._complete_frame_after(buf, i, i + total) if total else -1
                if j > 0:
                    # a complete frame starts inside this one: it was cut short
                    self.truncated += 1
                    self.skipped_bytes += j - i
                    i = j
                    continue
                if status == "bad_crc":
                    self.crc_errors += 1
                elif status in ("bad_end", "bad_len"):
                    self.framing_errors += 1
                self.skipped_bytes += 1
                i += 1
        if i:
            self._buf = buf[i:]
        return out


# ---------------------------------------------------------------- commands (host -> VESC)
def set_duty(duty):
    """SetDuty payload; ``duty`` fraction of the input voltage, -1..1."""
    d = _finite("duty", duty)
    if d < -1.0 or d > 1.0:
        raise VescEncodeError("duty %r outside -1..1" % (duty,))
    return bytes((COMM_SET_DUTY,)) + _int32("duty", int(d * DUTY_SCALE))


def set_current(current_a):
    """SetCurrent payload (motor current in A; 0 releases the motor)."""
    a = _finite("current_a", current_a)
    return bytes((COMM_SET_CURRENT,)) + _int32("current_a", int(a * CURRENT_SCALE))


def set_current_brake(current_a):
    """SetCurrentBrake payload (braking current in A, >= 0)."""
    a = _finite("current_a", current_a)
    if a < 0.0:
        raise VescEncodeError("brake current must be >= 0 A, got %r" % (current_a,))
    return bytes((COMM_SET_CURRENT_BRAKE,)) + _int32("current_a", int(a * CURRENT_SCALE))


def set_rpm(erpm):
    """SetRPM payload; ``erpm`` electrical RPM (mechanical RPM x pole pairs), rounded."""
    e = _finite("erpm", erpm)
    return bytes((COMM_SET_RPM,)) + _int32("erpm", int(round(e)))


def alive():
    """COMM_ALIVE payload: resets the firmware's command timeout without a new setpoint."""
    return bytes((COMM_ALIVE,))


def get_values():
    """GetValues request payload."""
    return bytes((COMM_GET_VALUES,))


def get_values_selective(mask):
    """GetValuesSelective request: only the layout rows whose bit is set in ``mask``."""
    return bytes((COMM_GET_VALUES_SELECTIVE,)) + struct.pack(">I", mask & 0xFFFFFFFF)


def forward_can(can_id, payload):
    """Wrap ``payload`` for the VESC with ``can_id`` on the CAN bus behind this UART."""
    if not (0 <= can_id <= 254):
        raise VescEncodeError("CAN id must be 0..254, got %r" % (can_id,))
    if len(payload) < 1 or len(payload) + 2 > MAX_PAYLOAD:
        raise VescEncodeError("forwarded payload length %d invalid" % len(payload))
    return bytes((COMM_FORWARD_CAN, can_id)) + bytes(payload)


def unwrap_forward_can(payload):
    """(can_id, inner payload) of a ForwardCan payload."""
    if len(payload) < 3 or payload[0] != COMM_FORWARD_CAN:
        raise VescDecodeError("not a ForwardCan payload with a body")
    return payload[1], bytes(payload[2:])


def decode_command(payload):
    """(command id, value) of a host command: duty fraction, current A, erpm, or None.

    Used by simulators; raises VescDecodeError on a malformed body."""
    if not payload:
        raise VescDecodeError("empty payload")
    cmd = payload[0]
    if cmd in (COMM_SET_DUTY, COMM_SET_CURRENT, COMM_SET_CURRENT_BRAKE, COMM_SET_RPM):
        if len(payload) != 5:
            raise VescDecodeError("command %d needs a 4-byte body, got %d" % (cmd, len(payload) - 1))
        raw = struct.unpack(">i", bytes(payload[1:5]))[0]
        if cmd == COMM_SET_DUTY:
            return cmd, raw / DUTY_SCALE
        if cmd == COMM_SET_RPM:
            return cmd, float(raw)
        return cmd, raw / CURRENT_SCALE
    if cmd == COMM_GET_VALUES_SELECTIVE:
        if len(payload) != 5:
            raise VescDecodeError("GetValuesSelective needs a 4-byte mask")
        return cmd, struct.unpack(">I", bytes(payload[1:5]))[0]
    return cmd, None


# ---------------------------------------------------------------- telemetry (VESC -> host)
class VescValues:
    """Decoded GetValues reply; fields named in ``GET_VALUES_FIELDS`` (None when absent).

    ``extra_bytes``: bytes after the last known field (newer firmware), ignored."""

    def __init__(self, **fields):
        for name in GET_VALUES_FIELDS:
            setattr(self, name, fields.get(name))
        for name in fields:
            if name not in GET_VALUES_FIELDS:
                raise VescEncodeError("unknown GetValues field %r" % (name,))
        self.extra_bytes = 0

    def as_dict(self):
        out = {}
        for name in GET_VALUES_FIELDS:
            out[name] = getattr(self, name)
        return out

    def __repr__(self):
        return "VescValues(%s)" % ", ".join("%s=%r" % (n, getattr(self, n)) for n in GET_VALUES_FIELDS)


def _pack_field(code, scale, value, name):
    if value is None:
        value = 0
    if scale is None:
        raw = int(_finite(name, value)) if isinstance(value, float) else int(value)
    else:
        # rounded to the nearest step (the firmware truncates toward zero: <= 1 step apart)
        raw = int(round(_finite(name, value) * scale))
    lo, hi = _LIMITS[code]
    if raw < lo:
        raw = lo
    elif raw > hi:
        raw = hi
    return struct.pack(">" + code, raw)


def encode_values(values, mask=None):
    """GetValues reply payload from a VescValues (simulators); ``mask`` makes the selective reply."""
    if mask is None:
        parts = [bytes((COMM_GET_VALUES,))]
        rows = GET_VALUES_LAYOUT
    else:
        parts = [bytes((COMM_GET_VALUES_SELECTIVE,)), struct.pack(">I", mask & 0xFFFFFFFF)]
        rows = [row for row in GET_VALUES_LAYOUT if mask & (1 << row[0])]
    for _bit, name, code, scale in rows:
        parts.append(_pack_field(code, scale, getattr(values, name), name))
    return b"".join(parts)


def decode_values(payload):
    """VescValues from a GetValues (or GetValuesSelective) reply payload.

    Raises VescDecodeError when the payload is not a GetValues reply, stops inside a
    field, or (full reply) ends before the fault code."""
    if not payload:
        raise VescDecodeError("empty payload")
    cmd = payload[0]
    pos = 1
    if cmd == COMM_GET_VALUES:
        rows = GET_VALUES_LAYOUT
        required = REQUIRED_FIELDS
    elif cmd == COMM_GET_VALUES_SELECTIVE:
        if len(payload) < 5:
            raise VescDecodeError("GetValuesSelective reply without its mask")
        mask = struct.unpack(">I", bytes(payload[1:5]))[0]
        pos = 5
        rows = [row for row in GET_VALUES_LAYOUT if mask & (1 << row[0])]
        required = len(rows)
    else:
        raise VescDecodeError("payload id %d is not a GetValues reply" % cmd)
    out = VescValues()
    n = len(payload)
    count = 0
    for _bit, name, code, scale in rows:
        size = _SIZES[code]
        if pos == n:
            break
        if pos + size > n:
            raise VescDecodeError("GetValues reply ends inside field %s" % name)
        raw = struct.unpack(">" + code, bytes(payload[pos:pos + size]))[0]
        pos += size
        setattr(out, name, raw if scale is None else raw / scale)
        count += 1
    if count < required:
        raise VescDecodeError("GetValues reply too short: %d of %d required fields" % (count, required))
    out.extra_bytes = n - pos
    return out
