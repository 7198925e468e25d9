"""Simulated VESC motor controllers speaking the real UART protocol on a pseudo-terminal.

``SimVesc`` is one controller: a first-order speed loop with a current limit, its own
command timeout (the firmware's ``timeout_msec``: when commands stop, the motor is
released, or braked with ``timeout_brake_current_a``; 0 disables it; GetValues status bit 0 is the
firmware's ``has_timeout``: no command for longer than the timeout), injectable fault codes (the
motor is released while a fault is active, like ``mc_interface`` does), and
GetValues telemetry in the FW 5.x/6.x layout. ``SimVescPort`` is the UART: it owns
a :class:`harness.sim.ptys.PtyPair` whose slave path (also reachable through a stable
symlink, like a udev name) the runtime opens with pyserial; frames are parsed by
the same resynchronising decoder (garbage, bad CRC and cut frames are skipped and
counted); ``COMM_FORWARD_CAN`` reaches the other ``SimVesc`` on its CAN bus.

Lockstep: nothing here runs on its own. The harness calls ``SimVescPort.service(now_us)``
and ``SimVesc.step(dt_s, now_us)`` from SimClock events. A non-blocking read of a
pty that returns nothing first flushes the kernel's pending pty buffer work, so
"read until empty" sees exactly the bytes written before the call: the results do
not depend on wall time.

Motor model (per controller, in electrical RPM e, motor current i):
    de/dt = k_a * i - e / tau_coast                         (k_a: erpm/s per A)
    speed mode: i = clamp(a (e_ref - e) / (k_a dt) + e / (tau_coast k_a), +-i_max),
                a = 1 - exp(-dt / tau_speed)
    current mode: i = clamp(i_ref); brake: i = -sign(e) * min(i_brake, |e| / (k_a dt))
so an unsaturated SetRPM step settles as 1 - exp(-t / tau_speed).

Requests VESC Tool and the common VESC libraries send on connect (ids of vedderb/bldc ``datatypes.h``
``COMM_PACKET_ID``, replies as in ``comm/commands.c``) and what the simulator does with them:

* answered: ``COMM_FW_VERSION`` (:func:`encode_fw_version`), ``COMM_GET_VALUES``,
  ``COMM_GET_VALUES_SELECTIVE``, ``COMM_GET_VALUES_SETUP`` and ``..._SETUP_SELECTIVE``
  (:func:`encode_values_setup`), ``COMM_PING_CAN`` (the other controller ids on the CAN bus, answered
  by the port), ``COMM_FORWARD_CAN`` (the addressed VESC answers on the same UART);
* obeyed without a reply, as the firmware does: the set commands, ``COMM_ALIVE``;
* not honoured (``NOT_HONOURED``, counted under ``"unanswered"``): no reply at all, the way a firmware
  without that command treats it; a client times out as it would there. Among them the configuration
  reads VESC Tool sends after the version (``COMM_GET_MCCONF``, ``COMM_GET_APPCONF``, their defaults,
  the custom config and QML UI reads: the simulator has no serialised configuration), the terminal,
  IMU, decoded PPM/ADC/nunchuk inputs, motor detection, reboot and firmware upload commands.
"""
import math
import os
import struct
import zlib

from harness.sim.ptys import PtyPair
from onboard.comms.vesc import codec
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, int_at_least, int_within
from onboard.core.units import s_to_us

# ---------------------------------------------------------------- command ids the codec does not name
# (vedderb/bldc datatypes.h COMM_PACKET_ID)
COMM_GET_MCCONF = 14
COMM_GET_APPCONF = 17
COMM_TERMINAL_CMD = 20
COMM_REBOOT = 29
COMM_GET_VALUES_SETUP = 47
COMM_GET_VALUES_SETUP_SELECTIVE = 51
COMM_PING_CAN = 62
COMM_GET_IMU_DATA = 65
COMM_GET_CUSTOM_CONFIG_XML = 92
COMMAND_NAMES = {
    codec.COMM_FW_VERSION: "FW_VERSION", codec.COMM_GET_VALUES: "GET_VALUES", codec.COMM_SET_DUTY: "SET_DUTY",
    codec.COMM_SET_CURRENT: "SET_CURRENT", codec.COMM_SET_CURRENT_BRAKE: "SET_CURRENT_BRAKE",
    codec.COMM_SET_RPM: "SET_RPM", COMM_GET_MCCONF: "GET_MCCONF", COMM_GET_APPCONF: "GET_APPCONF",
    COMM_TERMINAL_CMD: "TERMINAL_CMD", COMM_REBOOT: "REBOOT", codec.COMM_ALIVE: "ALIVE",
    codec.COMM_FORWARD_CAN: "FORWARD_CAN", COMM_GET_VALUES_SETUP: "GET_VALUES_SETUP",
    codec.COMM_GET_VALUES_SELECTIVE: "GET_VALUES_SELECTIVE", COMM_GET_VALUES_SETUP_SELECTIVE:
    "GET_VALUES_SETUP_SELECTIVE", COMM_PING_CAN: "PING_CAN", COMM_GET_IMU_DATA: "GET_IMU_DATA",
    COMM_GET_CUSTOM_CONFIG_XML: "GET_CUSTOM_CONFIG_XML",
}
# Requests VESC Tool sends on or after connecting that get no reply here (see the module docstring).
NOT_HONOURED = (1, 2, 3, 11, 13, COMM_GET_MCCONF, 15, 16, COMM_GET_APPCONF, 18, COMM_TERMINAL_CMD, 24, 25, 26,
                27, 28, COMM_REBOOT, 31, 32, 33, COMM_GET_IMU_DATA, 90, COMM_GET_CUSTOM_CONFIG_XML, 93, 94, 95,
                117, 118, 119)

HISTORY_MAX = 100000                     # SimVesc.history keeps at least the latest this many commands
HW_TYPE_VESC = 0                         # datatypes.h HW_TYPE: a motor controller (not a BMS or custom module)
UUID_BYTES = 12                          # the STM32's 96-bit unique id

DEFAULTS = {
    "controller_id": 1,
    "speed_time_constant_s": 0.08,
    "coast_time_constant_s": 1.5,
    "accel_erpm_per_s_per_a": 4000.0,
    "current_limit_a": 20.0,
    "max_erpm": 60000.0,
    "timeout_ms": 1000,
    "timeout_brake_current_a": 0.0,
    "v_in_v": 24.0,
    "kv_erpm_per_v": 1000.0,            # duty mode target: duty * v_in * kv
    "temp_fet_degc": 30.0,
    "temp_motor_degc": 35.0,
    "motor_resistance_ohm": 0.05,
    # COMM_FW_VERSION reply: the firmware release reported, the hardware name (HW_NAME) and the 12-byte
    # UUID as 24 hex digits ("": derived from the controller id, so each simulated VESC has its own)
    "fw_major": 6,
    "fw_minor": 5,
    "hw_name": "SIM",
    "uuid_hex": "",
    "m_per_electrical_rev": 0.0,        # GetValuesSetup speed and distance: metres travelled per electrical turn
}
SETTING_RANGES = {"controller_id": int_within(0, 255), "speed_time_constant_s": POSITIVE,
                  "coast_time_constant_s": POSITIVE, "accel_erpm_per_s_per_a": POSITIVE, "current_limit_a": POSITIVE,
                  "max_erpm": POSITIVE, "timeout_ms": int_at_least(0), "timeout_brake_current_a": NON_NEGATIVE,
                  "v_in_v": POSITIVE, "kv_erpm_per_v": POSITIVE, "temp_fet_degc": ANY_NUMBER,
                  "temp_motor_degc": ANY_NUMBER, "motor_resistance_ohm": POSITIVE,
                  "fw_major": int_within(0, 255), "fw_minor": int_within(0, 255),
                  "hw_name": ("a string of 1..30 ASCII characters without NUL",
                              lambda v: isinstance(v, str) and 0 < len(v) <= 30 and v.isascii() and "\0" not in v),
                  "uuid_hex": ("24 hex digits or \"\"", lambda v: isinstance(v, str) and (
                      v == "" or (len(v) == 2 * UUID_BYTES and all(c in "0123456789abcdefABCDEF" for c in v)))),
                  "m_per_electrical_rev": NON_NEGATIVE}

MODE_NONE = "released"
MODE_DUTY = "duty"
MODE_RPM = "rpm"
MODE_CURRENT = "current"
MODE_BRAKE = "brake"


class SimVesc:
    """One simulated controller and its motor."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "SimVesc")
        self.cfg = cfg
        self.controller_id = int(cfg["controller_id"])
        self.erpm = 0.0
        self.current_a = 0.0
        self.mode = MODE_NONE
        self.setpoint = 0.0
        self.last_cmd_us = None
        self.timed_out = False
        self.timeouts = 0
        self.fault_code = codec.FAULT_NONE
        self._fault_until_us = None
        self.tacho_ticks = 0.0
        self.tacho_abs_ticks = 0.0
        self.amp_hours = 0.0
        self.watt_hours = 0.0
        self.commands = {}
        self.history = []               # (time_us, command id, value) of the commands received: the latest
        self.history_max = HISTORY_MAX  # history_max at least (older ones are let go, in batches)
        self._sum_i = 0.0
        self._sum_iin = 0.0
        self._n_avg = 0
        self.unanswered = 0             # requests not honoured (NOT_HONOURED and unknown ids): no reply
        self.now_us = 0                 # the latest time a command or a step was run at (us)
        self.uuid = uuid_bytes(cfg["uuid_hex"], self.controller_id)

    # ------------------------------------------------------------ faults
    def inject_fault(self, code, now_us, duration_s=None):
        """Raise fault ``code`` (mc_fault_code); held for ``duration_s`` or until cleared."""
        self.fault_code = int(code)
        self._fault_until_us = None if duration_s is None else now_us + s_to_us(duration_s)
        self._release()

    def clear_fault(self):
        self.fault_code = codec.FAULT_NONE
        self._fault_until_us = None

    def _release(self):
        self.mode = MODE_NONE
        self.setpoint = 0.0

    # ------------------------------------------------------------ protocol
    def handle(self, payload, now_us):
        """Run one command payload; returns the reply payload or None."""
        try:
            cmd, value = codec.decode_command(payload)
        except codec.VescDecodeError:
            self.commands["malformed"] = self.commands.get("malformed", 0) + 1
            return None
        self.commands[cmd] = self.commands.get(cmd, 0) + 1
        history = self.history
        history.append((now_us, cmd, value))
        if len(history) >= 2 * self.history_max:
            del history[:-self.history_max]     # bounded: a simulator serving for hours keeps the latest ones
        self.now_us = max(self.now_us, now_us)
        if cmd == codec.COMM_FW_VERSION:
            return encode_fw_version(self.cfg["fw_major"], self.cfg["fw_minor"], self.cfg["hw_name"], self.uuid)
        if cmd == codec.COMM_GET_VALUES:
            return codec.encode_values(self.values())
        if cmd == codec.COMM_GET_VALUES_SELECTIVE:
            return codec.encode_values(self.values(), mask=value)
        if cmd in (COMM_GET_VALUES_SETUP, COMM_GET_VALUES_SETUP_SELECTIVE):
            if cmd == COMM_GET_VALUES_SETUP:
                return encode_values_setup(self.setup_values())
            if len(payload) != 5:
                self.commands["malformed"] = self.commands.get("malformed", 0) + 1
                return None
            return encode_values_setup(self.setup_values(), mask=struct.unpack(">I", bytes(payload[1:5]))[0])
        if cmd == codec.COMM_ALIVE:
            self._feed(now_us)
            return None
        if cmd in (codec.COMM_SET_DUTY, codec.COMM_SET_RPM, codec.COMM_SET_CURRENT,
                   codec.COMM_SET_CURRENT_BRAKE):
            self._feed(now_us)
            if self.fault_code != codec.FAULT_NONE:
                return None             # commands are ignored while a fault is active
            if cmd == codec.COMM_SET_DUTY:
                self.mode, self.setpoint = MODE_DUTY, max(-0.95, min(0.95, value))
            elif cmd == codec.COMM_SET_RPM:
                lim = self.cfg["max_erpm"]
                self.mode, self.setpoint = MODE_RPM, max(-lim, min(lim, value))
            elif cmd == codec.COMM_SET_CURRENT:
                if value == 0.0:
                    self._release()     # the firmware releases the motor on zero current
                else:
                    self.mode, self.setpoint = MODE_CURRENT, value
            else:
                self.mode, self.setpoint = MODE_BRAKE, abs(value)
            return None
        self.unanswered += 1            # NOT_HONOURED or unknown here: no reply, like a firmware without it
        return None

    def _feed(self, now_us):
        self.last_cmd_us = now_us
        self.timed_out = False

    def values(self):
        avg_i = self._sum_i / self._n_avg if self._n_avg else self.current_a
        avg_iin = self._sum_iin / self._n_avg if self._n_avg else 0.0
        self._sum_i = self._sum_iin = 0.0       # read_reset_avg_* in the firmware
        self._n_avg = 0
        v_in = self.cfg["v_in_v"]
        duty = self.erpm / (v_in * self.cfg["kv_erpm_per_v"]) if v_in > 0 else 0.0
        return codec.VescValues(
            temp_fet_degc=self.cfg["temp_fet_degc"], temp_motor_degc=self.cfg["temp_motor_degc"],
            avg_motor_current_a=avg_i, avg_input_current_a=avg_iin, avg_id_a=0.0, avg_iq_a=avg_i,
            duty=max(-1.0, min(1.0, duty)), rpm_erpm=self.erpm, v_in_v=v_in,
            amp_hours_ah=self.amp_hours, amp_hours_charged_ah=0.0, watt_hours_wh=self.watt_hours,
            watt_hours_charged_wh=0.0, tachometer_ticks=int(self.tacho_ticks),
            tachometer_abs_ticks=int(self.tacho_abs_ticks), fault_code=self.fault_code,
            pid_pos_deg=0.0, controller_id=self.controller_id, temp_mos1_degc=self.cfg["temp_fet_degc"],
            temp_mos2_degc=self.cfg["temp_fet_degc"], temp_mos3_degc=self.cfg["temp_fet_degc"],
            avg_vd_v=0.0, avg_vq_v=duty * v_in, status=codec.STATUS_TIMEOUT if self.has_timeout() else 0)

    def has_timeout(self):
        """The firmware's ``timeout_has_timeout()`` (GetValues status bit 0): no command for longer than
        ``timeout_ms`` since the last one (or since boot, time 0), whatever the motor does; never with
        ``timeout_ms`` 0 (vedderb/bldc timeout.c)."""
        timeout_us = self.cfg["timeout_ms"] * 1000
        last_us = self.last_cmd_us if self.last_cmd_us is not None else 0
        return timeout_us != 0 and self.now_us - last_us > timeout_us

    def setup_values(self):
        """{field: value} of the GetValuesSetup reply (one VESC: this controller's own figures)."""
        v_in = self.cfg["v_in_v"]
        m_per_rev = self.cfg["m_per_electrical_rev"]
        return {"temp_fet_degc": self.cfg["temp_fet_degc"], "temp_motor_degc": self.cfg["temp_motor_degc"],
                "current_tot_a": self.current_a, "current_in_tot_a": 0.0,
                "duty": max(-1.0, min(1.0, self.erpm / (v_in * self.cfg["kv_erpm_per_v"]))) if v_in > 0 else 0.0,
                "rpm_erpm": self.erpm, "speed_mps": self.erpm / 60.0 * m_per_rev, "v_in_v": v_in,
                "battery_level": 1.0, "amp_hours_ah": self.amp_hours, "amp_hours_charged_ah": 0.0,
                "watt_hours_wh": self.watt_hours, "watt_hours_charged_wh": 0.0,
                "distance_m": self.tacho_ticks / 6.0 * m_per_rev,
                "distance_abs_m": self.tacho_abs_ticks / 6.0 * m_per_rev,
                "pid_pos_deg": 0.0, "fault_code": self.fault_code, "controller_id": self.controller_id,
                "num_vescs": 1, "wh_batt_left": 0.0, "odometer_m": int(self.tacho_abs_ticks / 6.0 * m_per_rev),
                "uptime_ms": self.now_us // 1000}

    # ------------------------------------------------------------ physics
    def step(self, dt_s, now_us):
        """Advance the motor by ``dt_s`` seconds (called from the physics event); ValueError for a negative,
        NaN or infinite ``dt_s``, the state unchanged."""
        if not 0.0 <= dt_s < math.inf:
            raise ValueError("SimVesc.step: dt_s must be a finite number of seconds >= 0, got %r" % (dt_s,))
        cfg = self.cfg
        self.now_us = max(self.now_us, now_us)
        if self._fault_until_us is not None and now_us >= self._fault_until_us:
            self.clear_fault()
        if (self.mode != MODE_NONE and self.last_cmd_us is not None and not self.timed_out
                and cfg["timeout_ms"] != 0 and now_us - self.last_cmd_us > cfg["timeout_ms"] * 1000):
            self.timed_out = True
            self.timeouts += 1
            if cfg["timeout_brake_current_a"] > 0.0:
                self.mode, self.setpoint = MODE_BRAKE, cfg["timeout_brake_current_a"]
            else:
                self._release()
        k_a = cfg["accel_erpm_per_s_per_a"]
        tau_c = cfg["coast_time_constant_s"]
        i_max = cfg["current_limit_a"]
        e = self.erpm
        if self.mode in (MODE_RPM, MODE_DUTY):
            ref = self.setpoint if self.mode == MODE_RPM else \
                self.setpoint * cfg["v_in_v"] * cfg["kv_erpm_per_v"]
            # current that makes the step exactly the first-order (zero-order-hold) response
            a = 1.0 - math.exp(-dt_s / cfg["speed_time_constant_s"]) if dt_s > 0 else 0.0
            i = (a * (ref - e) / dt_s if dt_s > 0 else 0.0) / k_a + e / (tau_c * k_a)
            i = max(-i_max, min(i_max, i))
        elif self.mode == MODE_CURRENT:
            i = max(-i_max, min(i_max, self.setpoint))
        elif self.mode == MODE_BRAKE:
            stop_i = abs(e) / (k_a * dt_s) if dt_s > 0 else 0.0
            mag = min(min(self.setpoint, i_max), stop_i)
            i = -mag if e > 0 else (mag if e < 0 else 0.0)
        else:
            i = 0.0
        # exact-enough explicit step of de/dt = k_a i - e / tau_c
        e_new = e + (k_a * i - e / tau_c) * dt_s
        if self.mode == MODE_BRAKE and e != 0.0 and (e_new > 0) != (e > 0):
            e_new = 0.0                           # braking never reverses the motor
        self.erpm = max(-cfg["max_erpm"], min(cfg["max_erpm"], e_new))
        self.current_a = i
        v_in = cfg["v_in_v"]
        p_mech_w = i * (self.erpm / max(1.0, cfg["kv_erpm_per_v"]))  # i * back-emf (V)
        p_w = p_mech_w + i * i * cfg["motor_resistance_ohm"]
        i_in = p_w / v_in if v_in > 0 else 0.0
        self._sum_i += i
        self._sum_iin += i_in
        self._n_avg += 1
        self.amp_hours += abs(i_in) * dt_s / 3600.0
        self.watt_hours += abs(p_w) * dt_s / 3600.0
        ticks = self.erpm / 60.0 * 6.0 * dt_s
        self.tacho_ticks += ticks
        self.tacho_abs_ticks += abs(ticks)


class SimVescPort:
    """The UART of one SimVesc (``local``) with more SimVescs on its CAN bus (``can_bus``).

    ``link_path``: a symlink kept pointing at the current pty (None: use ``slave_path``).
    ``drop_reply_prob``: fault injection, the probability that a reply frame is lost on the wire
    (drawn from ``rng``, a numpy Generator; counted in ``replies_dropped``).
    """

    def __init__(self, local, can_bus=None, link_path=None, drop_reply_prob=0.0, rng=None):
        self.local = local
        self.can_bus = {}
        for vesc in (can_bus or []):
            if vesc is not local:
                self.can_bus[vesc.controller_id] = vesc
        if not (0.0 <= drop_reply_prob <= 1.0):
            raise ValueError("drop_reply_prob must be in [0, 1], got %r" % (drop_reply_prob,))
        if drop_reply_prob > 0.0 and rng is None:
            raise ValueError("drop_reply_prob needs an rng (a seeded numpy Generator)")
        self.drop_reply_prob = float(drop_reply_prob)
        self.rng = rng
        self.replies_dropped = 0
        self.link_path = link_path
        self.decoder = codec.FrameDecoder()
        self.pty = None
        self.rx_bytes = 0
        self.tx_bytes = 0
        self.can_dropped = 0
        self.tx_dropped = 0
        self.plugged = False
        self.plug()

    @property
    def slave_path(self):
        return self.pty.slave_path if self.pty is not None else None

    @property
    def path(self):
        """The path the runtime opens (the symlink when there is one)."""
        return self.link_path or self.slave_path

    def vescs(self):
        return [self.local] + [self.can_bus[k] for k in sorted(self.can_bus)]

    def plug(self):
        """(Re)create the pty, like plugging the USB cable back in."""
        if self.plugged:
            return
        self.pty = PtyPair()
        if self.link_path is not None:
            tmp = self.link_path + ".tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(self.pty.slave_path, tmp)
            os.replace(tmp, self.link_path)
        self.decoder = codec.FrameDecoder()
        self.plugged = True

    def unplug(self):
        """Close the pty (the runtime's reads/writes fail) and remove the symlink."""
        if not self.plugged:
            return
        if self.link_path is not None and os.path.lexists(self.link_path):
            os.unlink(self.link_path)
        self.pty.close()
        self.pty = None
        self.plugged = False

    def close(self):
        self.unplug()

    def _read_all(self):
        out = bytearray()
        for _ in range(256):                 # bounded: 1 MiB per service call at most
            data = self.pty.read(4096)
            if not data:
                break
            out.extend(data)
        return bytes(out)

    def service(self, now_us):
        """Read everything the runtime wrote, run the commands, write the replies."""
        if not self.plugged:
            return 0
        data = self._read_all()
        if not data:
            return 0
        self.rx_bytes += len(data)
        n = 0
        for payload in self.decoder.feed(data):
            n += 1
            target = self.local
            if payload[0] == codec.COMM_FORWARD_CAN:
                try:
                    can_id, payload = codec.unwrap_forward_can(payload)
                except codec.VescDecodeError:
                    # no inner command: nothing reaches the bus; counted as the local VESC's malformed request
                    self.local.commands["malformed"] = self.local.commands.get("malformed", 0) + 1
                    continue
                target = self.can_bus.get(can_id)
                if target is None:
                    self.can_dropped += 1     # nobody on the bus with that id
                    continue
            if payload[0] == COMM_PING_CAN:
                reply = self._ping_can(target)
            else:
                reply = target.handle(payload, now_us)
            if reply is None:
                continue
            if self.drop_reply_prob > 0.0 and self.rng.random() < self.drop_reply_prob:
                self.replies_dropped += 1
                continue
            self._write(codec.encode_frame(reply))
        return n

    def _ping_can(self, target):
        """COMM_PING_CAN at ``target``: the ids of the other VESCs on its CAN bus that answer a ping."""
        target.commands[COMM_PING_CAN] = target.commands.get(COMM_PING_CAN, 0) + 1
        ids = sorted(v.controller_id for v in self.vescs() if v is not target)
        return bytes((COMM_PING_CAN,)) + bytes(ids)

    def _write(self, frame):
        """Write a reply; when the pty buffer is full (nobody reading) the bytes are lost,
        like on a UART, and counted, instead of blocking the simulation."""
        try:
            n = os.write(self.pty.master_fd, frame)
        except (BlockingIOError, OSError):
            n = 0
        self.tx_bytes += n
        if n < len(frame):
            self.tx_dropped += len(frame) - n

    def report(self):
        out = {"rx_bytes": self.rx_bytes, "tx_bytes": self.tx_bytes, "can_dropped": self.can_dropped,
               "tx_dropped": self.tx_dropped}
        if self.drop_reply_prob > 0.0:
            out["replies_dropped"] = self.replies_dropped
        out.update(self.decoder.counters())
        return out


def uuid_bytes(uuid_hex, controller_id):
    """The 12-byte UUID: ``uuid_hex`` decoded, or (``""``) one derived from the controller id."""
    if uuid_hex:
        return bytes.fromhex(uuid_hex)
    seed = b"harness.sim.vesc %d" % controller_id
    return (zlib.crc32(seed).to_bytes(4, "big") + zlib.crc32(seed + b"/1").to_bytes(4, "big")
            + zlib.crc32(seed + b"/2").to_bytes(4, "big"))


def encode_fw_version(major, minor, hw_name, uuid, fw_name="", hw_conf_crc=None):
    """COMM_FW_VERSION reply payload, in the field order of vedderb/bldc ``comm/commands.c``:
    id, major, minor, HW_NAME (NUL-terminated), 12-byte UUID, pairing done, test version number (0: a
    release), HW_TYPE_VESC, custom config count, phase filters, QML UI in the hardware / the app
    (0: none), NRF flags, FW_NAME (NUL-terminated), hardware config CRC (uint32, big-endian)."""
    if len(uuid) != UUID_BYTES:
        raise codec.VescEncodeError("UUID must be %d bytes, got %d" % (UUID_BYTES, len(uuid)))
    name = hw_name.encode("ascii")
    if hw_conf_crc is None:
        hw_conf_crc = zlib.crc32(name)
    return (bytes((codec.COMM_FW_VERSION, major, minor)) + name + b"\0" + bytes(uuid)
            + bytes((0, 0, HW_TYPE_VESC, 0, 0, 0, 0, 0)) + fw_name.encode("ascii") + b"\0"
            + struct.pack(">I", hw_conf_crc & 0xFFFFFFFF))


# GetValuesSetup rows (vedderb/bldc comm/commands.c, COMM_GET_VALUES_SETUP): (mask bit, field, struct
# code, scale or None for raw integers); bit 18 is the number of VESCs, bit 21 the uptime in ms.
GET_VALUES_SETUP_LAYOUT = (
    (0, "temp_fet_degc", "h", 10.0), (1, "temp_motor_degc", "h", 10.0), (2, "current_tot_a", "i", 100.0),
    (3, "current_in_tot_a", "i", 100.0), (4, "duty", "h", 1000.0), (5, "rpm_erpm", "i", 1.0),
    (6, "speed_mps", "i", 1000.0), (7, "v_in_v", "h", 10.0), (8, "battery_level", "h", 1000.0),
    (9, "amp_hours_ah", "i", 10000.0), (10, "amp_hours_charged_ah", "i", 10000.0),
    (11, "watt_hours_wh", "i", 10000.0), (12, "watt_hours_charged_wh", "i", 10000.0),
    (13, "distance_m", "i", 1000.0), (14, "distance_abs_m", "i", 1000.0), (15, "pid_pos_deg", "i", 1000000.0),
    (16, "fault_code", "B", None), (17, "controller_id", "B", None), (18, "num_vescs", "B", None),
    (19, "wh_batt_left", "i", 1000.0), (20, "odometer_m", "I", None), (21, "uptime_ms", "I", None),
)
_STRUCT_LIMITS = {"h": (-32768, 32767), "i": (-2147483648, 2147483647), "B": (0, 255), "I": (0, 4294967295)}


def encode_values_setup(values, mask=None):
    """GetValuesSetup reply payload from {field: value}; with ``mask`` the selective reply (mask echoed)."""
    if mask is None:
        parts = [bytes((COMM_GET_VALUES_SETUP,))]
    else:
        parts = [bytes((COMM_GET_VALUES_SETUP_SELECTIVE,)), struct.pack(">I", mask & 0xFFFFFFFF)]
    for bit, name, code, scale in GET_VALUES_SETUP_LAYOUT:
        if mask is not None and not mask & (1 << bit):
            continue
        raw = int(values[name]) if scale is None else int(round(values[name] * scale))
        lo, hi = _STRUCT_LIMITS[code]
        parts.append(struct.pack(">" + code, max(lo, min(hi, raw))))
    return b"".join(parts)


def speed_step_response(t_s, erpm_ref, tau_s):
    """Unsaturated SetRPM step response from rest: erpm_ref * (1 - exp(-t / tau))."""
    return erpm_ref * (1.0 - math.exp(-t_s / tau_s))
