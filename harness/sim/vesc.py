"""Simulated VESC motor controllers speaking the real UART protocol on a pseudo-terminal.

``SimVesc`` is one controller: a first-order speed loop with a current limit, its own
command timeout (the firmware's ``timeout_msec``: when commands stop, the motor is
released, or braked with ``timeout_brake_current_a``), injectable fault codes (the
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
"""
import math
import os

from harness.sim.ptys import PtyPair
from onboard.comms.vesc import codec
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, int_at_least, int_within

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
}
SETTING_RANGES = {"controller_id": int_within(0, 255), "speed_time_constant_s": POSITIVE,
                  "coast_time_constant_s": POSITIVE, "accel_erpm_per_s_per_a": POSITIVE, "current_limit_a": POSITIVE,
                  "max_erpm": POSITIVE, "timeout_ms": int_at_least(0), "timeout_brake_current_a": NON_NEGATIVE,
                  "v_in_v": POSITIVE, "kv_erpm_per_v": POSITIVE, "temp_fet_degc": ANY_NUMBER,
                  "temp_motor_degc": ANY_NUMBER, "motor_resistance_ohm": POSITIVE}

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
        self.history = []               # (time_us, command id, value) of every command received
        self._sum_i = 0.0
        self._sum_iin = 0.0
        self._n_avg = 0

    # ------------------------------------------------------------ faults
    def inject_fault(self, code, now_us, duration_s=None):
        """Raise fault ``code`` (mc_fault_code); held for ``duration_s`` or until cleared."""
        self.fault_code = int(code)
        self._fault_until_us = None if duration_s is None else now_us + int(duration_s * 1e6)
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
        self.history.append((now_us, cmd, value))
        if cmd == codec.COMM_GET_VALUES:
            return codec.encode_values(self.values())
        if cmd == codec.COMM_GET_VALUES_SELECTIVE:
            return codec.encode_values(self.values(), mask=value)
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
        return None                     # other commands: accepted, no effect here

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
            avg_vd_v=0.0, avg_vq_v=duty * v_in, status=codec.STATUS_TIMEOUT if self.timed_out else 0)

    # ------------------------------------------------------------ physics
    def step(self, dt_s, now_us):
        """Advance the motor by ``dt_s`` seconds (called from the physics event)."""
        cfg = self.cfg
        if self._fault_until_us is not None and now_us >= self._fault_until_us:
            self.clear_fault()
        if (self.mode != MODE_NONE and self.last_cmd_us is not None and not self.timed_out
                and now_us - self.last_cmd_us > cfg["timeout_ms"] * 1000):
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
    """

    def __init__(self, local, can_bus=None, link_path=None):
        self.local = local
        self.can_bus = {}
        for vesc in (can_bus or []):
            self.can_bus[vesc.controller_id] = vesc
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
                    continue
                target = self.can_bus.get(can_id)
                if target is None:
                    self.can_dropped += 1     # nobody on the bus with that id
                    continue
            reply = target.handle(payload, now_us)
            if reply is not None:
                self._write(codec.encode_frame(reply))
        return n

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
        out.update(self.decoder.counters())
        return out


def speed_step_response(t_s, erpm_ref, tau_s):
    """Unsaturated SetRPM step response from rest: erpm_ref * (1 - exp(-t / tau))."""
    return erpm_ref * (1.0 - math.exp(-t_s / tau_s))
