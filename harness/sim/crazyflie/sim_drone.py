"""One simulated Crazyflie: the firmware's CRTP services (protocol version 10) around a Drone2D.

``SimCrazyflie.handle(datagram, now_us, client)`` answers one incoming CRTP packet (a list of reply
datagrams for ``client``); ``advance(now_us)`` integrates the vehicle up to ``now_us`` and returns the
periodic log packets that fell due, as ``(client, datagram)``. Time is passed in (us): the UDP server
(``server``) gives it the host's monotonic clock for the ``crazyflies`` command and the scenario's
SimClock in lockstep use. Nothing here touches a socket or a clock.

The services are those of crazyflie-firmware, one module each; this class routes CRTP ports to them:

====  ===========================  ====================================================
port  service                      module
====  ===========================  ====================================================
15    link control, packet counts  ``link_service.LinkService``
13    platform (version, arming)   ``supervisor.Supervisor``
9     supervisor                   ``supervisor.Supervisor``
6     localization                 ``supervisor.Supervisor``
5     log                          ``log_service.LogService``
4     memory (none)                ``mem_service.MemService``
2     param                        ``param_service.ParamService``
3, 7  commander, generic commander ``commander.Commander``
8     high-level commander         ``commander.Commander``
====  ===========================  ====================================================

``vehicle.SimVehicle`` is the Drone2D as the estimator, sensors and power management see it (frames,
state estimate, UWB ranges, the log variables' sources); ``sensor_noise.SensorNoise`` adds the seeded
sensor noise and biases of a real one to what is logged (settings ``sensor_noise``). ``advance`` is the
firmware's stabilizer loop: the commander's step, then a physics step of ``physics_dt_s`` (shortened to
land on a log instant), then the log packets due. ``stats`` counts packets and events per service (``*.COUNTERS``);
``internal_errors`` must stay 0. Malformed or unknown packets are counted and answered the way the
firmware answers them (an errno reply where the protocol has one, else nothing).
"""
import threading

from harness.sim.crazyflie import (commander, crtp, link_service, log_service, mem_service, param_service,
                                   sensor_noise, supervisor)
from harness.sim.crazyflie.vehicle import SimVehicle
from harness.sim.rng import RunRandom
from harness.sim.vehicles.drone2d import Drone2D
from onboard.core.settings import BOOLEAN, checked, int_within, under, within

DEFAULTS = {
    "physics_dt_s": 0.005,              # longest Drone2D step (s); shortened to land on log instants
    "arming_required": False,           # False: auto-arm like a Crazyflie 2.x; True: wait for an arming request
    "rssi": 40,                         # radio.rssi: received power as the firmware logs it (-dBm)
    "vehicle": {},                      # Drone2D settings (harness.sim.vehicles.drone2d.DEFAULTS), checked there
    "sensor_noise": dict(sensor_noise.DEFAULTS),   # noise + biases of the logged estimates (sensor_noise.py)
}
SETTING_RANGES = dict({
    "physics_dt_s": within(1e-6, 0.1),
    "arming_required": BOOLEAN,
    "rssi": int_within(0, 255),
}, **under("sensor_noise", sensor_noise.SETTING_RANGES))


class SimCrazyflie:
    """A simulated Crazyflie ``name`` flying ``vehicle`` (a Drone2D; built from ``config["vehicle"]``
    when None). ``ranging(time_us)``: up to 8 UWB distances (m, None: no measurement) for the ranging
    log group; ``start_us``: the vehicle's time at start; ``random``: the numpy Generator of its sensor
    noise (the fleet passes its seed's ``crazyflie.sensors.<i>`` stream; None: seed 1's stream of
    ``name``)."""

    def __init__(self, name="cf0", config=None, vehicle=None, ranging=None, start_us=0, random=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, owner="crazyflie sim")
        self.cfg = cfg
        self.name = name
        self.lock = threading.RLock()
        self.vehicle = vehicle if vehicle is not None else Drone2D(cfg["vehicle"])
        self.stats = {key: 0 for module in (link_service, log_service, commander, param_service, supervisor)
                      for key in module.COUNTERS}
        self.params = param_service.ParamService(self.stats)
        if random is None:
            random = RunRandom(1).stream("crazyflie.sensors." + name)
        self.noise = sensor_noise.SensorNoise(cfg["sensor_noise"], random)
        self.sim_vehicle = SimVehicle(self.vehicle, self.params, ranging, start_us, cfg["physics_dt_s"],
                                      noise=self.noise)
        self.supervisor = supervisor.Supervisor(self.vehicle, self.params, self.stats, cfg["arming_required"])
        self.commander = commander.Commander(self.sim_vehicle, self.params, self.supervisor, self.stats)
        self.supervisor.commander = self.commander
        self.link = link_service.LinkService(self.stats, cfg["rssi"])
        self.log = log_service.LogService(self.stats, dict(
            self.sim_vehicle.log_sources(), **self.commander.log_sources(), **self.supervisor.log_sources(),
            **self.link.log_sources()))
        self.mem = mem_service.MemService(self.stats)
        self.link.on_connect = self.log.open_session
        self.link.on_disconnect = self.log.close_session
        self._ports = {
            crtp.PORT_LINKCTRL: self.link.handle,
            crtp.PORT_PLATFORM: self.supervisor.handle_platform,
            crtp.PORT_LOG: self.log.handle,
            crtp.PORT_PARAM: self.params.handle,
            crtp.PORT_MEM: self.mem.handle,
            crtp.PORT_COMMANDER: self.commander.handle_rpyt,
            crtp.PORT_COMMANDER_GENERIC: self.commander.handle_generic,
            crtp.PORT_SETPOINT_HL: self.commander.handle_high_level,
            crtp.PORT_SUPERVISOR: self.supervisor.handle_supervisor,
            crtp.PORT_LOCALIZATION: self.supervisor.handle_localization,
        }
        self._handled = 0                # datagrams handled so far
        self._controlled = None          # (time_us, _handled) of the last commander step advance() ended with

    # ---------------------------------------------------------------- what tests and scenarios read
    @property
    def time_us(self):
        """The vehicle's time (us): advance() has integrated it up to here."""
        return self.sim_vehicle.time_us

    @time_us.setter
    def time_us(self, value):
        self.sim_vehicle.time_us = int(value)

    @property
    def silent(self):
        """True cuts the link: nothing is answered and nothing logged (fault injection); the log blocks keep
        their periods, their packets lost (``stats["log_lost_packets"]``)."""
        return self.link.silent

    @silent.setter
    def silent(self, value):
        self.link.silent = bool(value)

    @property
    def armed(self):
        return self.supervisor.armed

    @property
    def ll(self):
        """The low-level setpoint in force ({"kind", "values", "time_us"}) or None."""
        return self.commander.ll

    def param(self, group, name):
        """The parameter ``group.name`` (``.value``, ``.default``)."""
        return self.params.get(group, name)

    def estimate_xyz_yaw(self):
        """Estimated position (m, CF world frame) and yaw (deg, CCW) as the firmware logs them."""
        return self.sim_vehicle.estimate_xyz_yaw()

    def session_log_packets(self):
        """Log packets sent to the clients whose session is still open (the lockstep's downlink count: a
        log reset, which cflib sends on every connect, closes the other clients' sessions, so packets sent to
        a client that has since reconnected from another address are not in it)."""
        with self.lock:
            return self.log.session_packets()

    def session_received_packets(self):
        """Datagrams received from the clients whose session is still open (the lockstep's uplink count;
        every datagram opens its client's session); ``stats["rx_packets"]`` counts them all."""
        with self.lock:
            return self.log.session_received()

    def next_log_due_us(self):
        """Earliest time (us) a running log block is due (None when nothing is logging)."""
        return self.log.next_due_us()

    # ---------------------------------------------------------------- packets in
    def handle(self, datagram, now_us, client=None):
        """Answer one datagram from ``client`` at ``now_us``; returns the reply datagrams (bytes)."""
        with self.lock:
            self._handled += 1
            self.log.count_received(client)
            return self.link.receive(datagram, self._route, now_us, client)

    def _route(self, port, channel, data, now_us, client):
        now_us = int(now_us)
        service = self._ports.get(port)
        if service is None:
            self.stats["unknown"] += 1
            return []
        return service(channel, data, now_us, client)

    # ---------------------------------------------------------------- time
    def advance(self, now_us):
        """Integrate the vehicle up to ``now_us`` and return the due log packets as [(client, datagram)]."""
        with self.lock:
            now_us = int(now_us)
            body = self.sim_vehicle
            # the earliest due time changes only where blocks are skipped or logged (below)
            due = self.log.next_due_us()
            if due is not None and due <= now_us:
                self.log.skip_backlog(now_us)
                due = self.log.next_due_us()
            out = []
            # the last advance() ended with a commander step at this very time: unless a datagram was
            # handled since (the commander's state changes only there), the first step would repeat it
            control = self._controlled != (body.time_us, self._handled)
            while body.time_us < now_us:
                dt_us = min(body.physics_dt_us, now_us - body.time_us)
                if due is not None and body.time_us < due < body.time_us + dt_us:
                    dt_us = due - body.time_us       # land on the log time: packets carry the state then
                if control:
                    self.commander.control(body.time_us)
                control = True
                body.step(dt_us)
                if due is not None and due <= body.time_us:     # else no block is due (none changes here)
                    out += self._due_logs(body.time_us)
                    due = self.log.next_due_us()
            self.commander.control(now_us)
            self._controlled = (now_us, self._handled)
            if due is not None and due <= now_us:
                out += self._due_logs(now_us)
            return out

    def _due_logs(self, now_us):
        if self.link.silent:
            self.log.drop_due(now_us)
            return []
        self.sim_vehicle.new_log_instant()
        out = self.log.due_packets(now_us)
        self.stats["tx_packets"] += len(out)
        return out
