"""A ground robot's two track motors as simulated VESCs on pseudo-terminals, driven by the
Raspberry Pi application's VESC UART driver (boards.rpi.vesc_motors.VescDiffDrive).

Topologies: ``two_uarts`` (one pty per VESC) or ``can_forward`` (the right VESC behind the
left one, COMM_FORWARD_CAN on one UART). ``driver`` opens the ptys with pyserial (the real
serial path); ``service(now_us)`` lets the simulated VESCs answer their UART, ``step(dt_s,
now_us)`` advances their motors and returns the wheel speeds they turn. Used by the
``vesc-waypoints`` scenario and the grading dozer (``motors = vesc``).
"""
import os
import shutil
import tempfile

from boards.rpi import board as RPI
from boards.rpi.vesc_motors import VescDiffDrive
from harness.sim.vesc import DEFAULTS as SIM_VESC_DEFAULTS, SimVesc, SimVescPort
from onboard.comms.transport import SerialTransport

TOPOLOGIES = ("two_uarts", "can_forward")

# The tracks' motor model (simulated VESC settings, without the controller id each side gets).
TRACK_VESC = dict(SIM_VESC_DEFAULTS)
TRACK_VESC.update(accel_erpm_per_s_per_a=15000.0, current_limit_a=20.0, speed_time_constant_s=0.08)
TRACK_VESC.pop("controller_id")


class SimVescTracks:
    """Left and right simulated VESCs, their ptys and the Pi's VESC driver on them.

    sim_config: SimVesc settings (``TRACK_VESC``); ``max_erpm`` is capped at the wheels' top speed.
    erpm_per_radps: motor eRPM per wheel rad/s. on_telemetry, log: passed to the driver.
    ``port_of`` maps "left" / "right" to the pty serving that motor (one shared pty with
    ``can_forward``); ``ports`` lists each pty once. Call :meth:`close` to release the ptys.
    """

    def __init__(self, sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a,
                 on_telemetry=None, log=None, tmp_prefix="vesc-ptys-"):
        if topology not in TOPOLOGIES:
            raise ValueError("topology must be two_uarts or can_forward, got %r" % (topology,))
        self.tmpdir = tempfile.mkdtemp(prefix=tmp_prefix)
        self.ports = []
        try:
            self._build(sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a,
                        on_telemetry, log)
        except Exception:
            self.close()
            raise

    def _build(self, sim_config, topology, erpm_per_radps, max_wheel_radps, stop_brake_current_a,
               on_telemetry, log):
        self.erpm_per_radps = erpm_per_radps
        sim_cfg = dict(sim_config)
        sim_cfg["max_erpm"] = min(sim_cfg["max_erpm"], max_wheel_radps * erpm_per_radps)
        self.left = SimVesc(dict(sim_cfg, controller_id=RPI.VESC_LEFT_CONTROLLER_ID))
        self.right = SimVesc(dict(sim_cfg, controller_id=RPI.VESC_RIGHT_CAN_ID))
        self.sims = {"left": self.left, "right": self.right}
        self.directions = {"left": RPI.LEFT_DIRECTION, "right": RPI.RIGHT_DIRECTION}
        motors = [{"name": "left", "link": "left", "controller_id": self.left.controller_id,
                   "direction": self.directions["left"]}]
        if topology == "two_uarts":
            self.port_of = {"left": SimVescPort(self.left, link_path=os.path.join(self.tmpdir, "vesc-left")),
                            "right": SimVescPort(self.right, link_path=os.path.join(self.tmpdir, "vesc-right"))}
            self.ports = [self.port_of["left"], self.port_of["right"]]
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
                                    on_telemetry=on_telemetry, log=log)

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
        return self.wheel_radps()

    def report(self):
        return {"driver": self.driver.report(), "sim_ports": [p.report() for p in self.ports],
                "sim_vesc_timeouts": {"left": self.left.timeouts, "right": self.right.timeouts}}

    def close(self):
        for port in self.ports:
            port.close()
        self.ports = []
        shutil.rmtree(self.tmpdir, ignore_errors=True)
