"""A ground robot's two track motors as simulated VESCs on pseudo-terminals, driven by the
Raspberry Pi application's VESC UART driver (boards.rpi.vesc_motors.VescDiffDrive).

Topologies: ``two_uarts`` (one pty per VESC) or ``can_forward`` (the right VESC behind the
left one, COMM_FORWARD_CAN on one UART). ``driver`` opens the ptys with pyserial (the real
serial path); ``service(now_us)`` lets the simulated VESCs answer their UART, ``step(dt_s,
now_us)`` advances their motors and returns the wheel speeds they turn: the motors path of a
:class:`harness.sim.ground_world.GroundWorld` (:meth:`SimVescTracks.attach`). Used by the
``vesc-waypoints`` scenario and the grading dozer (``motors = vesc``).
"""
import collections
import math
import os
import shutil
import tempfile

from boards.rpi import board as RPI
from boards.rpi.vesc_motors import VescDiffDrive
from harness.metrics import rms
from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.vesc import DEFAULTS as SIM_VESC_DEFAULTS, SimVesc, SimVescPort
from onboard.comms.transport import SerialTransport
from onboard.core.units import hz_to_period_us

TOPOLOGIES = ("two_uarts", "can_forward")
SIDES = ("left", "right")

# The tracks' motor model (simulated VESC settings, without the controller id each side gets).
TRACK_VESC = dict(SIM_VESC_DEFAULTS)
TRACK_VESC.update(accel_erpm_per_s_per_a=15000.0, current_limit_a=20.0, speed_time_constant_s=0.08)
TRACK_VESC.pop("controller_id")


class SimVescTracks:
    """Left and right simulated VESCs, their ptys and the Pi's VESC driver on them.

    sim_config: SimVesc settings (``TRACK_VESC``); ``max_erpm`` is capped at the wheels' top speed.
    erpm_per_radps: motor eRPM per wheel rad/s. log: passed to the driver.
    ``port_of`` maps "left" / "right" to the pty serving that motor (one shared pty with
    ``can_forward``); ``ports`` lists each pty once. ``tracking``: an :class:`RpmTracking` once
    :meth:`track_rpm` was called. Call :meth:`close` to release the ptys.
    """

    def __init__(self, sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a,
                 log=None, tmp_prefix="vesc-ptys-"):
        if topology not in TOPOLOGIES:
            raise ValueError("topology must be two_uarts or can_forward, got %r" % (topology,))
        self.tmpdir = tempfile.mkdtemp(prefix=tmp_prefix)
        self.ports = []
        self.tracking = None
        try:
            self._build(sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a, log)
        except BaseException:               # Ctrl-C during the set-up too: the ptys opened so far are closed
            self.close()
            raise

    def _build(self, sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a, log):
        self.erpm_per_radps = erpm_per_radps
        self.sim_config = sim_cfg = dict(sim_config)
        sim_cfg["max_erpm"] = min(sim_cfg["max_erpm"], max_wheel_radps * erpm_per_radps)
        self.left = SimVesc(dict(sim_cfg, controller_id=RPI.VESC_LEFT_CONTROLLER_ID))
        self.right = SimVesc(dict(sim_cfg, controller_id=RPI.VESC_RIGHT_CAN_ID))
        self.sims = {"left": self.left, "right": self.right}
        self.directions = {"left": RPI.LEFT_DIRECTION, "right": RPI.RIGHT_DIRECTION}
        motors = [{"name": "left", "link": "left", "controller_id": self.left.controller_id,
                   "direction": self.directions["left"]}]
        if topology == "two_uarts":
            self.port_of = {}
            for name, sim in (("left", self.left), ("right", self.right)):
                # listed as each opens: a failure opening the second still closes the first (close())
                self.port_of[name] = SimVescPort(sim, link_path=os.path.join(self.tmpdir, "vesc-" + name))
                self.ports.append(self.port_of[name])
            motors.append({"name": "right", "link": "right", "controller_id": self.right.controller_id,
                           "direction": self.directions["right"]})
        else:
            uart = SimVescPort(self.left, can_bus=[self.right], link_path=os.path.join(self.tmpdir, "vesc-uart"))
            self.port_of = {"left": uart, "right": uart}
            self.ports = [uart]
            motors.append({"name": "right", "link": "left", "can_id": self.right.controller_id,
                           "controller_id": self.right.controller_id, "direction": self.directions["right"]})
        links = {}
        for m in motors:
            path = self.port_of[m["name"]].path
            links.setdefault(m["link"], (lambda path=path: SerialTransport(path, RPI.VESC_UART_BAUD).open()))
        self.driver = VescDiffDrive(links, motors, {"erpm_per_radps": erpm_per_radps,
                                                    "max_wheel_radps": max_wheel_radps,
                                                    "stop_brake_current_a": stop_brake_current_a},
                                    on_telemetry=self._on_telemetry, log=log)

    def attach(self, world, uart_service_hz):
        """Serve the VESCs' UARTs on ``world``'s clock at ``uart_service_hz`` (Hz), each time before the
        physics of the same time; the motors then turn the robot through ``world.drive(..., tracks=self)``."""
        period_us = hz_to_period_us(uart_service_hz)
        world.clock.call_every(period_us, self.service, start_us=period_us, priority=PRIORITY_PHYSICS - 1)

    def track_rpm(self, dt_s, telemetry_rate_hz):
        """Check the motors' rpm tracking from now on (:class:`RpmTracking`, physics step ``dt_s``)."""
        self.tracking = RpmTracking(self.sims, dt_s, self.sim_config["speed_time_constant_s"], telemetry_rate_hz)
        return self.tracking

    def _on_telemetry(self, sample):
        if self.tracking is not None:
            self.tracking.on_telemetry(sample)

    def service(self, now_us):
        for port in self.ports:
            port.service(now_us)

    def wheel_radps(self):
        """(left, right) wheel speeds in rad/s (+ forward) that the motors turn now."""
        return (self.directions["left"] * self.left.erpm / self.erpm_per_radps,
                self.directions["right"] * self.right.erpm / self.erpm_per_radps)

    def step(self, dt_s, now_us):
        """Advance both motors; (left, right) wheel speeds in rad/s."""
        self.left.step(dt_s, now_us)
        self.right.step(dt_s, now_us)
        if self.tracking is not None:
            self.tracking.step(now_us)
        return self.wheel_radps()

    def report(self):
        return {"driver": self.driver.report(), "sim_ports": [p.report() for p in self.ports],
                "sim_vesc_timeouts": {"left": self.left.timeouts, "right": self.right.timeouts}}

    def close(self):
        for port in self.ports:
            port.close()
        self.ports = []
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class RpmTracking:
    """How well each motor's eRPM follows its SetRPM, against an independent reference.

    The reference is a first-order response (time constant ``speed_time_constant_s``) to the SetRPM the
    simulated VESC received, stepped with the physics (``dt_s``); out of rpm mode it is the motor's eRPM.
    Each telemetry sample's eRPM is compared with the reference within one polling period (+ 5 ms) before
    it (the smallest difference); samples with no SetRPM in that window are not tracking samples.
    """

    def __init__(self, sims, dt_s, speed_time_constant_s, telemetry_rate_hz):
        self.sims = sims
        self.a = 1.0 - math.exp(-dt_s / speed_time_constant_s)
        self.window_us = hz_to_period_us(telemetry_rate_hz) + 5000
        self.ref = {name: 0.0 for name in SIDES}
        # (time_us, reference eRPM after the physics step at that time, under SetRPM?)
        self.history = {name: collections.deque([(0, 0.0, False)], maxlen=64) for name in SIDES}
        self.telemetry = collections.defaultdict(list)          # motor -> [(time_us, erpm)]
        self.errors = {name: [] for name in SIDES}               # eRPM, None: not a tracking sample

    def on_telemetry(self, sample):
        self.telemetry[sample.motor].append((sample.time_us, sample.erpm))

    def step(self, now_us):
        for name, sim in self.sims.items():
            if sim.mode == "rpm":
                self.ref[name] += self.a * (sim.setpoint - self.ref[name])
            else:
                self.ref[name] = sim.erpm
            self.history[name].append((now_us, self.ref[name], sim.mode == "rpm"))

    def check(self, now_us=None):
        """Score the telemetry samples that arrived since the last check (call often: the reference
        history spans 64 physics steps)."""
        for name in SIDES:
            for t_s, erpm in self.telemetry[name][len(self.errors[name]):]:
                window = [(r, in_rpm) for (t_r, r, in_rpm) in self.history[name]
                          if t_s - self.window_us <= t_r <= t_s]
                if any(in_rpm for _r, in_rpm in window):
                    self.errors[name].append(min(abs(erpm - r) for r, _in_rpm in window))
                else:
                    self.errors[name].append(None)

    def metrics(self):
        """Telemetry samples per motor, and the tracking error (eRPM: rms, max) over the tracking samples."""
        errs = {n: [e for e in self.errors[n] if e is not None] for n in self.errors}
        return {"telemetry_samples": {n: len(self.telemetry[n]) for n in self.telemetry},
                "rpm_tracking_rms_erpm": {n: rms(errs[n]) for n in errs},
                "rpm_tracking_max_erpm": {n: (max(errs[n]) if errs[n] else None) for n in errs},
                "rpm_tracking_samples": {n: len(errs[n]) for n in errs}}
