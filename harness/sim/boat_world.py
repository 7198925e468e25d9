"""The simulated boat world: the truth WAM-V (``harness.sim.wamv``), its GNSS receiver speaking NMEA on a
serial line, heading source and gyro, and its two outboards as simulated motor controllers on ptys
(``harness.sim.wamv_thrusters``), all on one clock with the boat app (``boards.wamv.app``) in lockstep.

:class:`BoatWorld` is a :class:`harness.sim.world.SimWorld`:

- physics at the vessel's ``1 / dt_s`` (100 Hz): the controllers service their UARTs (telemetry answered,
  commands queued behind the injected latency), the motors step, and the truth vessel moves with the
  thrusts they give (``Wamv.step_thrust``);
- sensors (``harness.sim.sensors.wamv_sensors``) as :class:`harness.sim.sensors.sim_sensor.SimSensor` s:
  GNSS fixes written as NMEA GGA sentences on the receiver's line (a ``LoopTransport`` pair: the app reads
  the other end through its ``gnss`` io group, the real parsing path), heading calling the app's
  ``on_heading``, the gyro calling ``on_yaw_rate``;
- :meth:`BoatWorld.cut_outboard` unplugs an outboard's pty (the link cut of ``boat-hil-lag``).

Randomness: ``random.stream("wamv" | "gnss" | "heading" | "gyro")``.
"""
from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.sensors import wamv_sensors as ws
from harness.sim.sensors.sim_sensor import ModelSensor, SimSensor
from harness.sim.wamv import Wamv
from harness.sim.wamv_thrusters import SimOutboards
from harness.sim.world import SimWorld
from onboard.comms import nmea
from onboard.comms.transport import LoopTransport

TRUTH_TOPIC = "/boat/truth"        # {time_us, state [yaw, yaw rate, north, east, surge, sway], thrust_n, ...}


class NmeaGnss(SimSensor):
    """A GNSS receiver: the fixes of ``model`` (``wamv_sensors.Gnss``) as GGA sentences on ``transport``,
    latitude/longitude about ``frame``'s origin; a dropout sends a no-fix GGA."""

    def __init__(self, model, frame, transport, log=None, topic="/boat/gnss"):
        SimSensor.__init__(self, model.cfg["rate_hz"], self._write, topic, log)
        self.model, self.frame, self.transport = model, frame, transport

    def sample(self, now_us):
        return self.model.sample(now_us) or _NoFix(now_us)

    def _write(self, s):
        utc_s = s.time_us * 1e-6
        if isinstance(s, _NoFix):
            self.transport.write(nmea.gga(utc_s, 0.0, 0.0, quality=0).encode("ascii"))
            return
        lat, lon = self.frame.to_latlon(*s.pos_ne_m)
        self.transport.write(nmea.gga(utc_s, lat, lon).encode("ascii"))


class _NoFix:
    def __init__(self, time_us):
        self.time_us = time_us

    def as_dict(self):
        return {"time_us": self.time_us, "fix": False}


class BoatWorld(SimWorld):
    """The truth vessel (``wamv``: ``harness.sim.wamv`` settings), the sensors' settings (``gnss``,
    ``heading``, ``gyro``), the outboards' interface (``interface``: ``wamv_thrusters`` DEFAULTS overrides:
    update rate, latency, lag, controller timeout). ``random``: the run's RunRandom; ``log``: the run's log."""

    def __init__(self, random, wamv=None, gnss=None, heading=None, gyro=None, interface=None, log=None):
        SimWorld.__init__(self, log)
        self.random = random
        self.vessel = Wamv(wamv, random.stream("wamv"))
        self.outboards = SimOutboards(interface, self.vessel.cfg["thrusters"])
        self.gnss_app_end, self._gnss_sim_end = LoopTransport.pair()
        self.gnss_model = ws.Gnss(self.vessel, random.stream("gnss"), gnss)
        self.heading_model = ws.Heading(self.vessel, random.stream("heading"), heading)
        self.gyro_model = ws.YawGyro(self.vessel, random.stream("gyro"), gyro)
        self.cut = {}

    def driver(self, config=None):
        """The app's ``VescOutboards`` on the outboards' ptys."""
        return self.outboards.driver(config)

    def attach_app(self, app, frame):
        """Sensors calling ``app``'s entries (GNSS through NMEA about ``frame``) and the physics; then the
        app runs on this clock (:meth:`SimWorld.start`)."""
        v = self.vessel
        dt_s = v.dt_s
        sim = self.outboards

        def physics(dt, now_us):
            t0 = now_us - v.dt_us
            sim.service(t0)
            v.step_thrust(*sim.step(dt_s, t0))
        self.physics(1.0 / dt_s, physics, PRIORITY_PHYSICS)
        self.add_sensor(NmeaGnss(self.gnss_model, frame, self._gnss_sim_end, self.log))
        self.add_sensor(ModelSensor(self.heading_model, self.heading_model.cfg["rate_hz"], app.on_heading))
        self.add_sensor(ModelSensor(self.gyro_model, self.gyro_model.cfg["rate_hz"], app.on_yaw_rate))

    def cut_outboard(self, side, now_us=None):
        """Unplug one outboard's pty: the driver's link fails, no command reaches that controller."""
        self.outboards.ports[side].unplug()
        self.cut[side] = now_us

    def log_truth(self, now_us, **extra):
        msg = {"time_us": now_us, "state": self.vessel.state(), "thrust_n": list(self.outboards.thrust_n)}
        msg.update(extra)
        self.log(TRUTH_TOPIC, now_us, msg)

    def close(self):
        self.outboards.close()
