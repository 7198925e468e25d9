"""VESC motor driver of the differential-drive base: the runtime's ``motors`` object.

``command(WheelCmd)`` maps wheel rad/s to eRPM (``erpm = w * gear * pole_pairs * 60/2pi``,
times the side's direction) and sends SetRPM; ``stop(now_us)`` sends SetCurrentBrake
(or SetCurrent 0 when the brake current is 0); ``shutdown(now_us)`` releases every
motor with SetCurrent 0. ``poll(now_us)`` (telemetry rate) reconnects vanished ports,
reads GetValues replies into :class:`VescTelemetry` samples, requests the next ones,
keeps the VESC's own command timeout alive while commands are fresh, and evaluates
faults. Motors on one UART are told apart by their GetValues ``controller_id``; a
motor behind another VESC is reached by CAN forwarding (``can_id``).

``faults()`` is the set of reasons the base must not drive: ``link_down:<link>``,
``telemetry_stale:<motor>``, ``vesc_fault:<motor>:<FAULT_NAME>`` (latched until
``reset_faults()``). While any is present ``command`` stops instead of driving.
"""
from boards.rpi import board as C
from onboard.comms.vesc import codec
from onboard.comms.vesc.link import VescLink
from onboard.core.samples import WheelSpeedSample, _Sample
from onboard.core.settings import (BOOLEAN, NON_NEGATIVE, POSITIVE, RATE_HZ, TEXT, checked, int_at_least, int_within,
                                   one_of, or_null)

MOTOR_DEFAULTS = {
    "name": "left",
    "link": "uart0",
    "can_id": None,                 # None: the VESC on the UART itself
    "controller_id": C.VESC_LEFT_CONTROLLER_ID,
    "direction": 1,
}
MOTOR_SETTING_RANGES = {"name": one_of("left", "right"), "link": TEXT, "can_id": or_null(int_within(0, 254)),
                        "controller_id": int_within(0, 254), "direction": one_of(1, -1)}

DEFAULTS = {
    "erpm_per_radps": C.ERPM_PER_RADPS,
    "max_wheel_radps": C.MAX_WHEEL_RADPS,
    "stop_brake_current_a": C.STOP_BRAKE_CURRENT_A,
    "keepalive_period_us": C.KEEPALIVE_PERIOD_US,
    "telemetry_timeout_us": C.TELEMETRY_TIMEOUT_US,
    "command_max_age_us": C.COMMAND_MAX_AGE_US,
    "latch_vesc_faults": True,
}
# the drive's settings a board config (and a scenario's drive block) gives: gearing, telemetry, braking
DRIVE_DEFAULTS = {"gear_ratio": C.GEAR_RATIO, "pole_pairs": C.MOTOR_POLE_PAIRS, "telemetry_rate_hz": C.TELEMETRY_RATE_HZ,
                  "stop_brake_current_a": C.STOP_BRAKE_CURRENT_A}
DRIVE_SETTING_RANGES = {"gear_ratio": POSITIVE, "pole_pairs": int_at_least(1), "telemetry_rate_hz": RATE_HZ,
                        "stop_brake_current_a": NON_NEGATIVE}
SETTING_RANGES = {"erpm_per_radps": POSITIVE, "max_wheel_radps": POSITIVE, "stop_brake_current_a": NON_NEGATIVE,
                  "keepalive_period_us": int_at_least(1), "telemetry_timeout_us": int_at_least(1),
                  "command_max_age_us": int_at_least(1), "latch_vesc_faults": BOOLEAN}


class VescTelemetry(_Sample):
    """One GetValues reply of one motor, in SI units at the driver boundary.

    wheel_radps: wheel speed from the electrical RPM (rad/s, + drives forward);
    erpm: electrical RPM as reported; motor/input current (A), duty (fraction), input
    voltage (V), FET/motor temperature (deg C), fault code (mc_fault_code), tachometer
    (6 ticks per electrical revolution), timeout flag (firmware command timeout fired).
    """
    FIELDS = ("time_us", "motor", "controller_id", "wheel_radps", "erpm", "motor_current_a",
              "input_current_a", "duty", "v_in_v", "temp_fet_degc", "temp_motor_degc",
              "fault_code", "tachometer_ticks", "fw_timeout")

    def __init__(self, time_us, motor, controller_id, wheel_radps, erpm, motor_current_a,
                 input_current_a, duty, v_in_v, temp_fet_degc, temp_motor_degc, fault_code,
                 tachometer_ticks, fw_timeout):
        self.time_us = int(time_us)
        self.motor = str(motor)
        self.controller_id = -1 if controller_id is None else int(controller_id)
        self.wheel_radps = float(wheel_radps)
        self.erpm = float(erpm)
        self.motor_current_a = float(motor_current_a)
        self.input_current_a = float(input_current_a)
        self.duty = float(duty)
        self.v_in_v = float(v_in_v)
        self.temp_fet_degc = float(temp_fet_degc)
        self.temp_motor_degc = float(temp_motor_degc)
        self.fault_code = int(fault_code)
        self.tachometer_ticks = int(tachometer_ticks)
        self.fw_timeout = bool(fw_timeout)


# GetValues fields a VescTelemetry is made of (controller_id and status may be absent: older firmware)
_SAMPLE_FIELDS = ("rpm_erpm", "avg_motor_current_a", "avg_input_current_a", "duty", "v_in_v", "temp_fet_degc",
                  "temp_motor_degc", "fault_code", "tachometer_ticks")


class _Motor:
    def __init__(self, cfg):
        self.name = cfg["name"]
        self.link = cfg["link"]
        self.can_id = cfg["can_id"]
        self.controller_id = cfg["controller_id"]
        self.direction = int(cfg["direction"])
        if self.direction not in (1, -1):
            raise ValueError("motor %s direction must be +1 or -1" % self.name)
        self.last_tx_us = None
        self.last_telemetry_us = None
        self.telemetry = None
        self.latched_fault = None
        self.target_erpm = 0.0
        self.telemetry_count = 0
        self.stale = False


class VescDiffDrive:
    """``motors`` object of GroundRobotRuntime over one or more VESC UART links.

    links: dict name -> ``open_fn`` (returns an opened transport) or a ready VescLink.
    motors: list of motor settings (MOTOR_DEFAULTS keys); exactly one named "left"
    and one named "right". on_telemetry(sample): optional callback per VescTelemetry.
    """

    def __init__(self, links, motors, config=None, on_telemetry=None, log=None, link_config=None):
        self.cfg = checked(DEFAULTS, SETTING_RANGES, config, "VescDiffDrive")
        self.links = {}
        for name, spec in links.items():
            self.links[name] = spec if isinstance(spec, VescLink) else VescLink(name, spec, link_config)
        self.motors = {}
        for m in motors:
            mc = checked(MOTOR_DEFAULTS, MOTOR_SETTING_RANGES, m, "VESC motor")
            if mc["link"] not in self.links:
                raise ValueError("motor %s uses unknown link %r" % (mc["name"], mc["link"]))
            self.motors[mc["name"]] = _Motor(mc)
        if set(self.motors) != {"left", "right"}:
            raise ValueError("VescDiffDrive needs motors named 'left' and 'right', got %s"
                             % sorted(self.motors))
        self.on_telemetry = on_telemetry
        self.log = log
        self._last_cmd_us = None
        self._driving = False
        self.commands = 0
        self.stops = 0
        self.refused_commands = 0
        self.unrouted_replies = 0
        self.bad_replies = 0
        self.last_wheel_speed = None
        self._pending = {name: [] for name in self.links}   # FIFO of motors awaiting a reply

    # ------------------------------------------------------------ conversions
    def radps_to_erpm(self, motor, wheel_radps):
        return motor.direction * wheel_radps * self.cfg["erpm_per_radps"]

    def erpm_to_radps(self, motor, erpm):
        return motor.direction * erpm / self.cfg["erpm_per_radps"]

    # ------------------------------------------------------------ runtime interface
    def start(self, now_us):
        """Open every link (a port that is missing now is retried from poll)."""
        for link in self.links.values():
            link.connect(now_us)
        for motor in self.motors.values():
            motor.last_telemetry_us = now_us        # grace period for the first replies

    def _send(self, motor, payload, now_us):
        ok = self.links[motor.link].send(payload, now_us, can_id=motor.can_id)
        if ok:
            motor.last_tx_us = now_us
        return ok

    def command(self, wheel_cmd):
        """Drive the wheels at ``wheel_cmd`` (rad/s); stops instead while faulted or on NaN. A command that
        does not reach every motor (a port vanished while sending) is followed by a stop at once."""
        now_us = wheel_cmd.time_us
        if self.faults() or not wheel_cmd.is_finite():
            self.refused_commands += 1
            self.stop(now_us)
            return
        lim = self.cfg["max_wheel_radps"]
        self.commands += 1
        self._last_cmd_us = now_us
        self._driving = True
        reached = True
        for name, w in (("left", wheel_cmd.left_radps), ("right", wheel_cmd.right_radps)):
            motor = self.motors[name]
            w = max(-lim, min(lim, w))
            motor.target_erpm = self.radps_to_erpm(motor, w)
            if not self._send(motor, codec.set_rpm(motor.target_erpm), now_us):
                reached = False
        if not reached:
            self.stop(now_us)                 # never leave one side driving

    def stop(self, now_us):
        """Safe stop: brake current (or zero current) on every motor."""
        self.stops += 1
        self._driving = False
        brake = self.cfg["stop_brake_current_a"]
        payload = codec.set_current_brake(brake) if brake > 0.0 else codec.set_current(0.0)
        for motor in self.motors.values():
            motor.target_erpm = 0.0
            self._send(motor, payload, now_us)

    def shutdown(self, now_us):
        """Release every motor (SetCurrent 0) and close the links; returns motors reached."""
        self._driving = False
        reached = 0
        for motor in self.motors.values():
            motor.target_erpm = 0.0
            if self._send(motor, codec.set_current(0.0), now_us):
                reached += 1
        for link in self.links.values():
            link.close()
        return reached

    # ------------------------------------------------------------ faults
    def faults(self):
        out = set()
        for name, link in self.links.items():
            if not link.up:
                out.add("link_down:" + name)
        for motor in self.motors.values():
            if motor.latched_fault is not None:
                out.add("vesc_fault:%s:%s" % (motor.name, motor.latched_fault))
            if motor.stale:
                out.add("telemetry_stale:" + motor.name)
        return out

    def reset_faults(self):
        """Operator reset of latched VESC fault codes (a fault still reported latches again)."""
        for motor in self.motors.values():
            motor.latched_fault = None

    # ------------------------------------------------------------ telemetry, keep-alive
    def poll(self, now_us):
        """Reconnect, read replies, request telemetry, keep alive; returns new samples."""
        samples = []
        for name, link in self.links.items():
            was_up = link.up
            if not link.service(now_us):
                self._pending[name] = []
                continue
            if not was_up:
                self._pending[name] = []
                for motor in self.motors.values():
                    if motor.link == name:
                        motor.last_telemetry_us = now_us      # grace period after reconnect
            for payload in link.receive(now_us):
                s = self._on_payload(name, payload, now_us)
                if s is not None:
                    samples.append(s)
        # own watchdog: never keep motors alive on a stale command
        if self._driving and self._last_cmd_us is not None and \
                now_us - self._last_cmd_us > self.cfg["command_max_age_us"]:
            self.stop(now_us)
        for motor in self.motors.values():
            link = self.links[motor.link]
            if not link.up:
                motor.stale = True
                continue
            ref = motor.last_telemetry_us
            motor.stale = ref is not None and now_us - ref > self.cfg["telemetry_timeout_us"]
            if self._driving and motor.last_tx_us is not None and \
                    now_us - motor.last_tx_us >= self.cfg["keepalive_period_us"]:
                self._send(motor, codec.alive(), now_us)
            if link.send(codec.get_values(), now_us, can_id=motor.can_id):
                self._pending[motor.link].append(motor)
                if len(self._pending[motor.link]) > 16:
                    self._pending[motor.link].pop(0)
        left = self.motors["left"].telemetry
        right = self.motors["right"].telemetry
        if left is not None and right is not None and samples:
            self.last_wheel_speed = WheelSpeedSample(now_us, left.wheel_radps, right.wheel_radps)
        return samples

    def _on_payload(self, link_name, payload, now_us):
        if not payload or payload[0] not in (codec.COMM_GET_VALUES, codec.COMM_GET_VALUES_SELECTIVE):
            return None                       # other replies (printf, fw version) are ignored
        try:
            values = codec.decode_values(payload)
        except codec.VescDecodeError:
            self.bad_replies += 1
            return None
        for name in _SAMPLE_FIELDS:
            if getattr(values, name) is None:     # a selective reply without a field the sample needs
                self.bad_replies += 1
                return None
        pending = self._pending[link_name]
        motor = None
        if values.controller_id is not None:
            for m in self.motors.values():
                if m.link == link_name and m.controller_id == values.controller_id:
                    motor = m
                    break
            if motor is not None and motor in pending:
                pending.remove(motor)
        elif pending:
            motor = pending.pop(0)            # firmware without controller_id: replies in order
        if motor is None:
            self.unrouted_replies += 1
            return None
        rpm = values.rpm_erpm
        status = values.status or 0
        sample = VescTelemetry(
            now_us, motor.name, values.controller_id, self.erpm_to_radps(motor, rpm), rpm,
            values.avg_motor_current_a, values.avg_input_current_a, values.duty, values.v_in_v,
            values.temp_fet_degc, values.temp_motor_degc, values.fault_code,
            values.tachometer_ticks, status & codec.STATUS_TIMEOUT)
        if not sample.is_finite():
            self.bad_replies += 1
            return None
        motor.telemetry = sample
        motor.telemetry_count += 1
        motor.last_telemetry_us = now_us
        motor.stale = False
        if sample.fault_code != codec.FAULT_NONE:
            if self.cfg["latch_vesc_faults"] or motor.latched_fault is None:
                motor.latched_fault = codec.fault_name(sample.fault_code)
        elif not self.cfg["latch_vesc_faults"]:
            motor.latched_fault = None
        if self.on_telemetry is not None:
            self.on_telemetry(sample)
        if self.log is not None:
            self.log("/vesc/%s/telemetry" % motor.name, now_us, sample)
        return sample

    def report(self):
        return {
            "commands": self.commands, "stops": self.stops, "refused_commands": self.refused_commands,
            "unrouted_replies": self.unrouted_replies, "bad_replies": self.bad_replies,
            "faults": sorted(self.faults()),
            "links": {name: link.report() for name, link in self.links.items()},
            "telemetry_counts": {m.name: m.telemetry_count for m in self.motors.values()},
        }


def wheel_radps_to_erpm(wheel_radps, erpm_per_radps=C.ERPM_PER_RADPS):
    """Board conversion used by docs and tests: erpm = w * gear * pole_pairs * 60 / (2 pi)."""
    return wheel_radps * erpm_per_radps

