"""A fleet of simulated Crazyflies with peer-to-peer UWB ranging, served over UDP in-process.

    fleet = SimCrazyflieFleet(4, seed=1)                  # realtime: host monotonic clock
    fleet = SimCrazyflieFleet(4, seed=1, clock=sim_clock) # lockstep on a harness SimClock
    with fleet:
        fleet.uris            # ["udp://127.0.0.1:<port>", ...] for cflib / boards.crazyflie
        fleet.vehicles[i]     # the Drone2D ground truth of drone i
        fleet.drones[i]       # the SimCrazyflie (protocol state, stats, .silent to cut the link)

Drone i logs ``ranging.distance<j>`` = distance to drone j (m) plus the pocket-drone
paper's UWB ranging noise N(mu = 0.0085569 m, sigma^2 = 0.061295 m^2) (uwb-pocket-drones
sec. III), ``ranging.state`` bit j set when that distance is valid; its own slot and
peers beyond ``max_range_m`` stay invalid. Noise comes from ``RunRandom(seed).stream(
"crazyflie.range.<i>")``. Drones start on a line along north, ``spacing_m`` apart.
Drone i's logged estimates carry sensor noise and biases (``sensor_noise.py``; settings
``drone.sensor_noise``) drawn from ``RunRandom(seed).stream("crazyflie.sensors.<i>")``.
"""
import math

from harness.sim.crazyflie.server import SimCrazyflieServer
from harness.sim.crazyflie.sim_drone import DEFAULTS as DRONE_DEFAULTS, SETTING_RANGES as DRONE_RANGES, SimCrazyflie
from harness.sim.crazyflie.vehicle import N_RANGES
from harness.sim.rng import RunRandom
from harness.sim.vehicles.drone2d import DEFAULTS as VEHICLE_DEFAULTS, Drone2D
from onboard.core.settings import ANY_NUMBER, BOOLEAN, POSITIVE, TEXT, ConfigError, checked, under, within

RANGE_NOISE_MEAN_M = 0.0085569       # uwb-pocket-drones sec. III
RANGE_NOISE_VAR_M2 = 0.061295

DEFAULTS = {
    "host": "127.0.0.1",             # loopback address the UDP ports bind to
    "base_port": 0,                  # drone i serves on base_port + i; 0: free ports; 19850 is where cflib scans
    "spacing_m": 1.0,                # start positions: drone i at (i * spacing_m, 0) north/east (m)
    "tick_s": 0.01,                  # lockstep: physics/log tick on the SimClock (s)
    "range_noise": True,             # add the UWB ranging noise to ranging.distance<j>
    "max_range_m": 30.0,             # peers farther than this give no range (m)
    "drone": {k: v for k, v in DRONE_DEFAULTS.items() if k != "vehicle"},       # every SimCrazyflie
    "vehicle": {k: v for k, v in VEHICLE_DEFAULTS.items() if k not in ("start_ne_m",)},   # every Drone2D
}
# base_port and host are checked by the server (port range, loopback only)
SETTING_RANGES = dict({"host": TEXT, "spacing_m": ANY_NUMBER, "tick_s": within(1e-6, 1.0), "range_noise": BOOLEAN,
                       "max_range_m": POSITIVE}, **under("drone", DRONE_RANGES))


class SimCrazyflieFleet:
    def __init__(self, count, seed=1, clock=None, config=None, start_ne_m=None):
        if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 64):
            raise ValueError("fleet size must be a whole number 1..64, got %r" % (count,))
        self.cfg = checked(DEFAULTS, SETTING_RANGES, config, owner="crazyflie fleet")
        if start_ne_m is not None and len(start_ne_m) != count:
            raise ConfigError("crazyflie fleet: start_ne_m has %d start positions for %d drones"
                              % (len(start_ne_m), count))
        self.count = count
        self.random = RunRandom(seed)
        self.lockstep = clock is not None
        self.vehicles = []
        self.drones = []
        for i in range(count):
            vcfg = dict(self.cfg["vehicle"])
            vcfg["start_ne_m"] = list(start_ne_m[i]) if start_ne_m is not None else [i * self.cfg["spacing_m"], 0.0]
            veh = Drone2D(vcfg)
            dcfg = dict(self.cfg["drone"])
            drone = SimCrazyflie("cf%d" % i, dcfg, vehicle=veh, ranging=self._ranging_for(i),
                                 start_us=clock.now_us() if clock is not None else 0,
                                 random=self.random.stream("crazyflie.sensors.%d" % i))
            self.vehicles.append(veh)
            self.drones.append(drone)
        self.server = SimCrazyflieServer(self.drones, host=self.cfg["host"], base_port=self.cfg["base_port"],
                                         realtime=not self.lockstep, clock=clock)
        if clock is None:
            # realtime: align the drones' time with the server's monotonic clock
            now = self.server.clock.now_us()
            for d in self.drones:
                d.time_us = now
        self._clock = clock
        self._attached = False

    def _ranging_for(self, i):
        rng = self.random.stream("crazyflie.range.%d" % i)
        sigma = math.sqrt(RANGE_NOISE_VAR_M2)

        def ranging(_now_us):
            me = self.vehicles[i]
            out = []
            for j in range(min(self.count, N_RANGES)):
                if j == i:
                    out.append(None)
                    continue
                other = self.vehicles[j]
                d = math.sqrt((other.north_m - me.north_m) ** 2 + (other.east_m - me.east_m) ** 2
                              + (other.height_m - me.height_m) ** 2)
                if d > self.cfg["max_range_m"]:
                    out.append(None)
                    continue
                if self.cfg["range_noise"]:
                    d = max(0.0, d + rng.normal(RANGE_NOISE_MEAN_M, sigma))
                out.append(d)
            return out
        return ranging

    @property
    def uris(self):
        return self.server.uris

    def start(self):
        """Serve the drones (a started fleet is left as it is; lockstep: ticks on the clock from the first
        start on)."""
        if self.server.started:
            return self
        self.server.start()
        if self.lockstep and not self._attached:
            self.server.attach(self._clock, int(round(self.cfg["tick_s"] * 1e6)))
            self._attached = True
        return self

    def release_links(self):
        """The clients are closing their links: keep them answered until :meth:`close` (see
        ``SimCrazyflieServer.release_links``)."""
        self.server.release_links()

    def close(self):
        self.server.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def stats(self):
        return {d.name: dict(d.stats) for d in self.drones}

    def wait_until(self, predicate, timeout_s=2.0):
        return self.server.wait_until(predicate, timeout_s)
