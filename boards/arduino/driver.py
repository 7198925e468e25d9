"""Host driver of the AVR robot board: speaks the robot link protocol over any transport.

The runtime on the Raspberry Pi uses it as its ``motors`` object (``command(WheelCmd)``,
``stop(now_us)``) and as a sensor driver: ``poll(now_us)`` reads the link, decodes
frames and turns telemetry into the shared sample types at this boundary:

- ``ImuSample``: increments over the interval between two IMU reads of the firmware,
  ``dvel = f_body * dt``, ``dang = w_body * dt`` (ag2u eqs. 2a-2b), with ``dt`` from the
  firmware's own timestamps and the raw MPU-6050 values converted to SI;
- ``EncoderSample`` (cumulative counts) and ``WheelSpeedSample`` (count deltas / dt).

The leveler build's LEVEL_STATE (algorithm state at 20 Hz over a 9600-baud link: tilt, odometry
counts, duty, the behaviour's phase) is kept in ``level_state`` and handed to ``on_level_state(msg, now_us)``;
its IMU_ID (the AltIMU-10 v4 WHO_AM_I handshake) in ``imu_id``. ``set_phase`` sends the phase the
firmware echoes.

HELLO comes at boot (``boots`` counts them: each restarts the firmware's clock, so the driver's unwrapping and
offset restart too) and as the answer to ``get_hello`` (GET_HELLO, PROTOCOL.md section 8; counted in
``hello_replies``, the board's clock runs on).

Sample times are on the host clock: the firmware's microsecond timestamps (unwrapped)
plus an offset that is the smallest host-minus-firmware time seen (the link latency's
lower envelope), so times are monotonic and never later than ``now_us``.

Signed commands: with a ``signer`` (:class:`boards.arduino.link_key.CommandSigner`: the link key, its id
and a counter that follows the host's wall clock) every command that moves the robot or changes its
state (``protocol.SIGNED_TYPES``) carries the SipHash-2-4 signature trailer the firmware checks; queries
(PING, GET_STATUS, GET_HELLO) go unsigned. Without one, commands go bare: only a firmware built with
SIGNING=off obeys them (``signing_mismatch()`` says when HELLO and the driver disagree).

Bad input never escapes as an exception from ``poll``/``command``/``stop``: corrupt
frames and bad messages are dropped and counted, a non-finite wheel command is refused
(counted) and a STOP sent instead, and a vanished port (``TransportClosed``) marks the
link down, counted; the caller reconnects (``reconnect(transport)``). Nothing here reads
a clock: time is passed in.
"""
import collections
import math

from boards.arduino import board as C
from boards.arduino import protocol as P
from onboard.comms.transport import TransportClosed, TransportError
from onboard.core.samples import EncoderSample, ImuSample, WheelSpeedSample

_U32 = 1 << 32
_MAX_IMU_DT_US = 100000           # a longer gap between IMU reads is not integrated
_CMD_HISTORY = 256
_LATENCY_HISTORY = 1000             # recent command latencies kept (all are in the stats)
_I16_LIM = 32767                    # WHEEL_SPEED's int16 mrad/s, symmetric
_MAX_HELLO_REQUESTS = 16            # GET_HELLOs awaiting their HELLO that are remembered
_MAX_REPLY_SEQ_STEP = 16            # a HELLO answer may follow the previous board frame by up to this many seqs


def _mradps_i16(radps):
    """A finite wheel speed (rad/s) as WHEEL_SPEED's int16 mrad/s, rounded, clamped to +-32767 (a speed whose
    mrad/s overflow a float clamps as well)."""
    mradps = radps * C.WHEEL_CMD_MRADPS_PER_RADPS
    if mradps > _I16_LIM:
        return _I16_LIM
    if mradps < -_I16_LIM:
        return -_I16_LIM
    return int(round(mradps))


class AvrRobotLink:
    """Driver for firmware/arduino/robot_link over ``transport`` (open()ed already).

    ``on_imu(ImuSample)``, ``on_encoders(EncoderSample)``, ``on_wheel_speed(WheelSpeedSample)``
    and ``log(topic, time_us, msg)`` are optional callables (attributes, may be set later).
    """

    def __init__(self, transport, on_imu=None, on_encoders=None, on_wheel_speed=None, log=None,
                 on_level_state=None, signer=None):
        self.transport = transport
        self.signer = signer
        self.on_imu = on_imu
        self.on_encoders = on_encoders
        self.on_wheel_speed = on_wheel_speed
        self.log = log
        self.on_level_state = on_level_state
        self.level_state = None
        self.level_state_frames = 0
        self.imu_id = None
        self.decoder = P.FrameDecoder()
        self.link_up = True
        self.tx_seq = 0
        self.tx_frames = 0
        self.tx_bytes = 0
        # what the board told us
        self.hello = None
        self.status = None
        self.telemetry = None
        self.pong = None
        self.boots = 0
        self.hello_replies = 0          # HELLOs that answered a GET_HELLO (not a reboot)
        self._hello_requests = 0        # GET_HELLOs sent and not answered yet
        # counters (host side)
        self.protocol_errors = 0        # CRC-valid frames with an unknown type / wrong length
        self.rx_seq_gaps = 0            # frames lost from the board (its seq skipped)
        self.transport_errors = 0
        self.rejected_commands = 0      # non-finite wheel commands refused
        self.imu_gaps = 0               # IMU intervals not integrated (too long, or a reset)
        self.telemetry_frames = 0
        # state for conversions
        self._rx_seq = None
        self._last_fw_raw = None
        self._fw_high = 0
        self._offset_us = None
        self._last_tel = None           # (fw_t_us, enc_l, enc_r) of the previous telemetry
        self._sent_us = {}              # seq -> host time the command was sent
        self.ping_rtt_us = None
        self.cmd_latency_us = None      # command sent -> telemetry echoes its seq
        self.cmd_latencies_us = collections.deque(maxlen=_LATENCY_HISTORY)
        self.cmd_latency_stats = {"n": 0, "sum_us": 0, "max_us": 0}

    # ------------------------------------------------------------ sending
    def _send(self, msg_type, body, now_us, motor=False):
        if not self.link_up:
            return None
        seq = self.tx_seq
        if self.signer is not None and msg_type in P.SIGNED_TYPES:
            body = bytes(body) + self.signer.trailer(msg_type, seq, body, now_us)
        frame = P.encode_frame(msg_type, seq, body)
        try:
            self.transport.write(frame)
        except (TransportClosed, TransportError, OSError):
            self._link_lost()
            return None
        self.tx_seq = (seq + 1) & 0xFF
        self.tx_frames += 1
        self.tx_bytes += len(frame)
        if motor and now_us is not None:
            self._sent_us[seq] = now_us
            if len(self._sent_us) > _CMD_HISTORY:
                self._sent_us.pop(next(iter(self._sent_us)))
        return seq

    def command(self, wheel_cmd):
        """Motors interface: wheel speeds (rad/s) -> WHEEL_SPEED (mrad/s). The firmware clamps
        to +-MAX_WHEEL_RADPS and flags it; values beyond int16 are clamped here first."""
        left, right = wheel_cmd.left_radps, wheel_cmd.right_radps
        if not (math.isfinite(left) and math.isfinite(right)):
            self.rejected_commands += 1
            return self.stop(wheel_cmd.time_us)
        left_m = _mradps_i16(left)
        right_m = _mradps_i16(right)
        return self._send(P.MSG_WHEEL_SPEED, P.wheel_speed_body(left_m, right_m), wheel_cmd.time_us, True)

    def stop(self, now_us):
        """Motors interface: motors off now."""
        return self._send(P.MSG_STOP, b"", now_us, True)

    def duty(self, left, right, now_us=None):
        """Open-loop PWM duty in 1/400 (+-400; larger values are clamped by the firmware, values outside int16
        or not finite raise ProtocolError)."""
        return self._send(P.MSG_DUTY, P.duty_body(left, right), now_us, True)

    def set_phase(self, phase, now_us=None):
        """Leveler build: the host behaviour's phase (0..255, else ProtocolError), echoed in LEVEL_STATE."""
        return self._send(P.MSG_SET_PHASE, P.phase_body(phase), now_us)

    def signing_mismatch(self):
        """None when the board's HELLO and this driver agree on signing (or no HELLO yet), else one line."""
        if self.hello is None:
            return None
        board_signs = bool(self.hello.signing)
        if board_signs and self.signer is None:
            return "the board checks signed commands (key id %d) but the host has no link key" % self.hello.key_id
        if board_signs and self.hello.key_id != self.signer.key_id:
            return "the board's key id is %d, the host signs with key id %d" % (self.hello.key_id, self.signer.key_id)
        if not board_signs and self.signer is not None:
            return "the board was built with SIGNING=off: its commands are not authenticated"
        return None

    def ping(self, now_us):
        return self._send(P.MSG_PING, P.ping_body(now_us & 0xFFFFFFFF), now_us)

    def request_status(self, now_us=None):
        return self._send(P.MSG_GET_STATUS, b"", now_us)

    def get_hello(self, now_us=None):
        """Ask for HELLO again (GET_HELLO, PROTOCOL.md section 8), e.g. after opening the port past the boot
        HELLO. Its answer updates ``hello`` (and, leveler, ``imu_id``) and counts in ``hello_replies``, not
        as a reboot: see ``_is_hello_reply``. Returns the seq sent, or None when the link is down."""
        seq = self._send(P.MSG_GET_HELLO, b"", now_us)
        if seq is not None and self._hello_requests < _MAX_HELLO_REQUESTS:
            self._hello_requests += 1
        return seq

    def reset_board(self, now_us=None):
        """Ask the firmware to stop feeding its watchdog: a hardware reset follows."""
        return self._send(P.MSG_RESET, P.RESET_MAGIC, now_us)

    def send_raw(self, data):
        """Write arbitrary bytes (tests: garbage, truncated frames). Returns False if the port is gone."""
        if not self.link_up:
            return False
        try:
            self.transport.write(bytes(data))
        except (TransportClosed, TransportError, OSError):
            self._link_lost()
            return False
        self.tx_bytes += len(data)
        return True

    # ------------------------------------------------------------ receiving
    def poll(self, now_us, max_bytes=4096):
        """Read what arrived, decode it, deliver samples. Returns the decoded messages."""
        if not self.link_up:
            return []
        messages = []
        while True:
            try:
                data = self.transport.read(max_bytes, 0.0)
            except (TransportClosed, TransportError, OSError):
                self._link_lost()
                break
            if not data:
                break
            for frame in self.decoder.feed(data):
                msg = self._handle_frame(frame, now_us)
                if msg is not None:
                    messages.append(msg)
            if len(data) < max_bytes:
                break
        return messages

    def _handle_frame(self, frame, now_us):
        try:
            msg = P.decode_message(frame)
        except P.ProtocolError:
            self.protocol_errors += 1
            return None
        if msg.msg_type < 0x80:         # a host message echoed back: not from the board
            self.protocol_errors += 1
            return None
        hello_reply = msg.msg_type == P.MSG_HELLO and self._is_hello_reply(msg)
        if msg.msg_type == P.MSG_HELLO and not hello_reply:
            self._on_hello(msg)
        elif self._rx_seq is not None and msg.seq != ((self._rx_seq + 1) & 0xFF):
            self.rx_seq_gaps += (msg.seq - self._rx_seq - 1) & 0xFF
        self._rx_seq = msg.seq
        if hello_reply:                     # the answer to a GET_HELLO: the board did not restart
            self._hello_requests -= 1
            self.hello_replies += 1
            self.hello = msg
        elif msg.msg_type == P.MSG_TELEMETRY:
            self._on_telemetry(msg, now_us)
        elif msg.msg_type == P.MSG_STATUS:
            self.status = msg
        elif msg.msg_type == P.MSG_LEVEL_STATE:
            self._on_level_state(msg, now_us)
        elif msg.msg_type == P.MSG_IMU_ID:
            self.imu_id = msg
        elif msg.msg_type == P.MSG_PONG:
            self.pong = msg
            self.ping_rtt_us = (now_us - msg.token) & 0xFFFFFFFF
        if self.log is not None:
            self.log("/avr/" + msg.name.lower(), now_us, msg.fields)
        return msg

    def _is_hello_reply(self, msg):
        """Whether a HELLO answers a GET_HELLO rather than announcing a restart. The two carry the same body;
        the firmware numbers its frames from 0 at boot, so the boot HELLO is its frame seq 0, while an answer
        continues the board's numbering: a GET_HELLO is outstanding, the seq is not 0, and it follows the
        previous frame's seq (by 1, or a few more when frames were lost or, leveler, dropped). As the first frame
        of a connection it is an answer only while no firmware clock is held (after ``reconnect`` the board may
        have restarted unseen: a restart is assumed)."""
        if self._hello_requests <= 0 or msg.seq == 0:
            return False
        if self._rx_seq is None:
            return self._last_fw_raw is None
        return 0 < ((msg.seq - self._rx_seq) & 0xFF) <= _MAX_REPLY_SEQ_STEP

    def _on_hello(self, msg):
        """The board (re)booted: its clock and counters restarted."""
        self.hello = msg
        self.boots += 1
        self._last_fw_raw = None
        self._fw_high = 0
        self._offset_us = None
        if self._last_tel is not None:
            self.imu_gaps += 1
        self._last_tel = None

    def _fw_time_us(self, raw):
        """Unwrap the firmware's 32-bit microsecond clock."""
        if self._last_fw_raw is not None and raw < self._last_fw_raw:
            self._fw_high += _U32
        self._last_fw_raw = raw
        return self._fw_high + raw

    def _on_telemetry(self, msg, now_us):
        self.telemetry = msg
        self.telemetry_frames += 1
        fw_t = self._fw_time_us(msg.t_us)
        lag = now_us - fw_t
        if self._offset_us is None or lag < self._offset_us:
            self._offset_us = lag
        t_us = fw_t + self._offset_us
        self._note_cmd_echo(msg.last_cmd_seq, msg.faults, now_us)
        if self.on_encoders is not None:
            self.on_encoders(EncoderSample(t_us, msg.enc_left_ticks, msg.enc_right_ticks))
        last = self._last_tel
        self._last_tel = (fw_t, msg.enc_left_ticks, msg.enc_right_ticks)
        if last is None:
            return
        dt_us = fw_t - last[0]
        if dt_us <= 0 or dt_us > _MAX_IMU_DT_US:
            self.imu_gaps += 1
            return
        dt_s = dt_us * 1e-6
        if self.on_wheel_speed is not None:
            self.on_wheel_speed(WheelSpeedSample(
                t_us, (msg.enc_left_ticks - last[1]) * C.ENC_RAD_PER_TICK / dt_s,
                (msg.enc_right_ticks - last[2]) * C.ENC_RAD_PER_TICK / dt_s))
        if self.on_imu is not None and not (msg.faults & P.FAULT_IMU):
            f = C.accel_raw_to_body_mps2(msg.accel_raw)
            w = C.gyro_raw_to_body_radps(msg.gyro_raw)
            self.on_imu(ImuSample(t_us, dt_us, [v * dt_s for v in f], [v * dt_s for v in w]))

    def _on_level_state(self, msg, now_us):
        self.level_state = msg
        self.level_state_frames += 1
        self._note_cmd_echo(msg.last_cmd_seq, msg.faults, now_us)
        if self.on_level_state is not None:
            self.on_level_state(msg, now_us)

    def _note_cmd_echo(self, seq, faults, now_us):
        """A TELEMETRY/LEVEL_STATE's ``last_cmd_seq``: the latency of the command it echoes. Before the firmware
        accepted any command (``FAULT_NO_COMMAND``) the field holds its boot value, not an echo."""
        if faults & P.FAULT_NO_COMMAND:
            return
        if seq in self._sent_us:
            lat = now_us - self._sent_us.pop(seq)
            self.cmd_latency_us = lat
            self.cmd_latencies_us.append(lat)
            st = self.cmd_latency_stats
            st["n"] += 1
            st["sum_us"] += lat
            st["max_us"] = max(st["max_us"], lat)

    def _link_lost(self):
        self.link_up = False
        self.transport_errors += 1

    def reconnect(self, transport):
        """Continue on a new transport (the board keeps its state; we resync at the next 0x00)."""
        self.transport = transport
        self.link_up = True
        self.decoder = P.FrameDecoder()
        self._rx_seq = None

    # ------------------------------------------------------------ reporting
    def faults(self):
        """Names of the fault flags in the last telemetry."""
        return P.faults_text(self.telemetry.faults) if self.telemetry is not None else []

    def counters(self):
        out = {"link_up": self.link_up, "tx_frames": self.tx_frames, "tx_bytes": self.tx_bytes,
               "telemetry_frames": self.telemetry_frames, "level_state_frames": self.level_state_frames,
               "boots": self.boots, "hello_replies": self.hello_replies,
               "protocol_errors": self.protocol_errors, "rx_seq_gaps": self.rx_seq_gaps,
               "transport_errors": self.transport_errors, "rejected_commands": self.rejected_commands,
               "imu_gaps": self.imu_gaps, "signed_commands": self.signer.signed if self.signer else 0,
               "signing": self.signer is not None}
        out.update({"rx_" + k: v for k, v in self.decoder.counters().items()})
        return out
