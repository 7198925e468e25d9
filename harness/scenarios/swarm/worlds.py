"""Where a swarm flight's drones live: the fast 2-D simulator, or simulated Crazyflies over cflib + UWB.

Both worlds give each drone, once per policy period (pocket V-B frame skipping), what its
onboard swarm member (onboard.swarm.member) gets on hardware, and one driver per drone
(``drivers[i]``, the ``boards.crazyflie.driver.CrazyflieDriver`` interface: ``command(VelocitySetpoint)``)
that the member commands; ``act()`` then flies one period on the drivers' last commands:

* own body velocity (m/s), measured (flow deck / mocap stand-in: truth + white noise
  ``vel_noise_mps``);
* per neighbour j: every UWB range (m) that arrived this period, oldest first, each with j's
  velocity as j reported it in that ranging frame (its own body frame, pocket IV-A) and when
  the range was measured (us, mission time); an empty list when none arrived;
* the range to its goal (a goal beacon: truth + the pocket III-A noise, harness side);
* ``heading(i)``: the drone's heading (rad) in its driver's navigation frame, which the member turns
  its body-frame setpoint with.

Times: ``t0_us`` is when the mission starts on the drivers' clock (after the take-off); ``sense``
stamps ranges and ``act`` returns times since then (mission time, us).

``DirectWorld``: harness/sim/swarm_arena.py is the truth, ranges from its pocket III-A noise model. The
simulator tracks body-frame setpoints, so its drivers (:class:`BodyFrameDriver`) are commanded in the
drone's own body frame: their heading is 0 rad.

``CflibWorld`` (the deployment path): one SimClock drives
``harness.sim.crazyflie.SimCrazyflieFleet`` (simulated Crazyflies behind real UDP sockets) and
``harness.sim.radio.uwb_channel.UwbNetwork`` (DW1000 channel simulator). Each drone's runtime
talks to its Crazyflie through ``boards.crazyflie.driver`` on the official cflib (take-off,
log blocks -> NavState, velocity setpoints), and gets its ranges from the onboard UWB protocol
code (``onboard.comms.uwb``: token ring, or the scalable broadcast mode) running on the
simulated radios; its own body velocity goes into its ranging frames (``set_velocity``).
``harness.sim.crazyflie.lockstep.Lockstep`` keeps cflib's threads and simulated time in step, so
runs are deterministic.
"""
import math
import shutil
import tempfile
import time

import numpy as np

from harness.sim.swarm_arena import SwarmBatch, to_body

FLOW_NOISE_TICKS = 500             # physics ticks of flow noise drawn at once (5 s)

WORLD_DEFAULTS = {
    "vel_noise_mps": 0.05,          # own-velocity measurement noise (flow / mocap), per axis
    "period_s": 0.1,                # policy / filter period (pocket V-B)
    "uwb_mode": "token_ring",       # cflib world: "token_ring" (paper III-A) or "broadcast" (scalable)
    "uwb_loss_prob": 0.0,
    "flight_height_m": 0.5,
    # Protocol timing (onboard.comms.uwb settings). The free-running defaults range every pair at
    # ~70 Hz with 3-4 drones; the policy uses one range per pair per 0.1 s, so the exchanges are
    # spaced out to ~10-20 Hz per pair (DS-TWR is drift-robust for any reply delay; the broadcast
    # round is (drones + 1) slots).
    "uwb_protocol": {"token_ring": {"reply_delay_us": 4000, "silence_timeout_us": 40000},
                     "broadcast": {"slot_us": 8000, "neighbour_timeout_us": 400000}},
}


class BodyFrameDriver:
    """The 2-D simulator's stand-in for a drone's driver: ``command(VelocitySetpoint)`` keeps the last
    finite command; its frame is the drone's body frame (north = forward, east = right, m/s)."""

    def __init__(self):
        self.cmd = None
        self.rejected_commands = 0

    def command(self, setpoint):
        if not setpoint.is_finite():
            self.rejected_commands += 1
            return False
        self.cmd = setpoint
        return True

    def setpoint_body_mps(self):
        """(forward, right) m/s of the last command; zero before the first."""
        if self.cmd is None:
            return [0.0, 0.0]
        return [self.cmd.vel_ned_mps[0], self.cmd.vel_ned_mps[1]]


class DirectWorld:
    """The vectorised 2-D simulator with one arena (harness/sim/swarm_arena.py)."""

    name = "direct"

    def __init__(self, m, starts, goals, yaws, rng, arena_m, config=None):
        self.cfg = dict(WORLD_DEFAULTS, **(config or {}))
        self.m = m
        self.rng = rng
        frame_skip = int(round(self.cfg["period_s"] / 0.02))
        self.sim = SwarmBatch(1, m, rng, {"arena_m": arena_m, "frame_skip": frame_skip})
        self.sim.pos[0] = starts
        self.sim.goal[0] = goals
        self.sim.yaw[0] = yaws
        self.sim.min_sep[:] = np.inf
        self.period_us = int(round(self.sim.dt_s * 1e6))
        self.now_us = 0
        self.t0_us = 0
        self.drivers = [BodyFrameDriver() for _ in range(m)]

    def heading(self, i):
        """0 rad: the drivers are commanded in the drone's body frame."""
        return 0.0

    def truth(self):
        """(pos [m, 2] north/east m, yaw [m] rad) of every drone."""
        return self.sim.pos[0].copy(), self.sim.yaw[0].copy()

    def min_separation_m(self):
        return float(self.sim.min_sep[0])

    def sense(self):
        """(v_meas_body [m, 2], ranges {i: {j: [(range_m, peer_vel_body, time_us), ...]}}): one range
        per pair and period."""
        vb = self.sim.vel_body()[0]
        v_meas = vb + self.rng.normal(0.0, self.cfg["vel_noise_mps"], vb.shape)
        r = self.sim.ranges()[0]
        ranges = {i: {j: [(float(r[i, j]), (float(v_meas[j, 0]), float(v_meas[j, 1])), self.now_us)]
                      for j in range(self.m) if j != i} for i in range(self.m)}
        return v_meas, ranges

    def act(self):
        """One policy period on the drivers' last (body-frame) commands; returns the mission time (us)."""
        self.sim.step_setpoints(np.array([d.setpoint_body_mps() for d in self.drivers], dtype=float)[None])
        self.now_us += self.period_us
        return self.now_us

    def report(self):
        return {"world": self.name, "setup_wall_s": 0.0, "takeoff_sim_s": 0.0}

    def close(self):
        pass


class CflibWorld:
    """Simulated Crazyflies flown through boards.crazyflie + cflib over UDP, ranges over onboard.comms.uwb."""

    name = "cflib"

    def __init__(self, m, starts, goals, yaws, rng, arena_m, config=None, seed=1):
        from boards.crazyflie.driver import FLYING, CrazyflieSwarm
        from harness.sim.clock import SimClock
        from harness.sim.crazyflie.fleet import SimCrazyflieFleet
        from harness.sim.crazyflie.lockstep import Lockstep
        from harness.sim.radio.uwb_channel import UwbNetwork
        from harness.sim.rng import RunRandom

        t_setup = time.perf_counter()
        self.cfg = dict(WORLD_DEFAULTS, **(config or {}))
        self.m = m
        self.rng = rng
        self.period_us = int(round(self.cfg["period_s"] * 1e6))
        self.clock = SimClock()
        self.fleet = None
        self.swarm = None
        self._min_sep = math.inf
        self._latest = {i: {} for i in range(m)}
        self.reported_vel = {i: (0.0, 0.0) for i in range(m)}
        self._vel_ticks = 0              # _physics_tick calls so far (the reported velocities' version)
        self._uwb_key = None             # (drone 0's physics time, _vel_ticks) the UWB states were built at
        self._uwb_states = None
        # cflib's TOC cache: one folder per world (the simulated Crazyflies share one TOC, so drones after
        # the first connect from the cache; without a folder cflib prints a warning per connection)
        self._toc_cache_dir = tempfile.mkdtemp(prefix="swarm-cf-toc-")
        try:
            self.fleet = SimCrazyflieFleet(m, seed=seed, clock=self.clock, start_ne_m=[list(map(float, s)) for s in starts],
                                           config={"range_noise": False})
            for veh, yaw in zip(self.fleet.vehicles, yaws):
                veh.yaw_rad = float(yaw)               # each drone flies with its own, unknown-to-others heading
            self.fleet.start()
            period_ms = int(round(self.cfg["period_s"] * 1000))
            drv_cfg = {
                "toc_cache_dir": self._toc_cache_dir,
                "setpoint_rate_hz": 1.0 / self.cfg["period_s"],
                "flight_height_m": self.cfg["flight_height_m"],
                # one 24-byte packet per period with what a level 2-D flight reads (position, horizontal
                # velocity, yaw of the same instant); the battery once a second. Fewer packets per drone
                # on the shared radio than the driver's default blocks.
                "log_blocks": {
                    "state": {"period_ms": period_ms,
                              "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
                                            "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.yaw"]},
                    "power": {"period_ms": 1000, "variables": ["pm.vbat", "pm.state"]},
                },
            }
            self.swarm = CrazyflieSwarm(self.fleet.uris, drv_cfg).connect()
            # this thread drives the lockstep and answers the uplink itself (no server-thread wake-ups)
            self.lockstep = Lockstep(self.clock, self.fleet, self.swarm.drivers, serve_in_caller=True)
            self.net = UwbNetwork(self.clock, list(range(m)), RunRandom(seed),
                                  protocol=dict(self.cfg["uwb_protocol"].get(self.cfg["uwb_mode"], {}),
                                                mode=self.cfg["uwb_mode"]),
                                  radio={"loss_prob": self.cfg["uwb_loss_prob"]}, state_fn=self._uwb_state)
            self.net.keep_samples = False
            self.net.on_range.append(self._on_range)
            self.rng_flow = np.random.default_rng(seed + 7919)
            self._flow_noise = []            # drawn FLOW_NOISE_TICKS ticks at a time, popped from the end
            self.t0_us = 0
            self.clock.call_every(10000, self._physics_tick)
            # take off together, then the mission starts
            self.swarm.take_off(self.clock.now_us())
            for _ in range(int(5.0 / self.cfg["period_s"])):
                now = self._advance()
                if all(d.state == FLYING for d in self.swarm.drivers):
                    break
            else:
                raise RuntimeError("swarm did not reach flight height: %s" % [d.state for d in self.swarm.drivers])
            self.net.start()
            self._latest = {i: {} for i in range(m)}
            self.t0_us = now
            self.now_us = 0
            self.setup_wall_s = time.perf_counter() - t_setup
        except BaseException:
            self.close()
            raise

    # -- simulated world ----------------------------------------------------------
    def _uwb_state(self, _now_us):
        # positions move only in the fleet's physics steps (every drone at once, to the same time: drone 0's
        # time stands for the fleet's), reported velocities only in _physics_tick: rebuilt when either did
        key = (self.fleet.drones[0].time_us, self._vel_ticks)
        if key != self._uwb_key:
            self._uwb_states = {i: ((v.north_m, v.east_m), self.reported_vel[i])
                                for i, v in enumerate(self.fleet.vehicles)}
            self._uwb_key = key
        return self._uwb_states

    def _on_range(self, node_id, sample, true_us):
        # the drone's runtime stamps a range when its UWB driver delivers it (its clock = mission time);
        # every range of the period is kept (a 2-drone token ring ranges the pair ~7 times per period)
        self._latest[node_id].setdefault(sample.peer_id, []).append(
            (sample.range_m, sample.peer_vel_mps, true_us - self.t0_us))

    def _physics_tick(self, _now_us):
        """Every 10 ms: the velocity each drone's UWB deck puts into its ranging frames (its onboard
        estimate: body-frame velocity + flow noise) and the minimum separation (truth)."""
        vs = self.fleet.vehicles
        # the fleet's draws for FLOW_NOISE_TICKS ticks at once: the same numbers, in the same order, as a
        # draw of 2 per drone and tick (rng_flow feeds nothing else)
        if not self._flow_noise:
            self._flow_noise = self.rng_flow.normal(0.0, self.cfg["vel_noise_mps"],
                                                    (FLOW_NOISE_TICKS, self.m, 2)).tolist()[::-1]
        noise = self._flow_noise.pop()
        for i, v in enumerate(vs):
            vn, ve = v.vel_north_mps, v.vel_east_mps
            c, s_ = math.cos(v.yaw_rad), math.sin(v.yaw_rad)
            nz = noise[i]
            self.reported_vel[i] = (c * vn + s_ * ve + nz[0], -s_ * vn + c * ve + nz[1])
        self._vel_ticks += 1
        for a in range(self.m):
            for b in range(a + 1, self.m):
                d = math.hypot(vs[a].north_m - vs[b].north_m, vs[a].east_m - vs[b].east_m)
                if d < self._min_sep:
                    self._min_sep = d

    def _advance(self):
        now = self.lockstep.advance(self.period_us)
        self.swarm.poll(now)
        self.swarm.step(now)
        return now

    def truth(self):
        vs = self.fleet.vehicles
        return np.array([[v.north_m, v.east_m] for v in vs]), np.array([v.yaw_rad for v in vs])

    def min_separation_m(self):
        return self._min_sep

    @property
    def drivers(self):
        """The drones' CrazyflieDrivers (cflib), which the members command."""
        return self.swarm.drivers

    def heading(self, i):
        """Drone i's heading (rad, NED) from its Crazyflie's stateEstimate.yaw as last polled."""
        return self.swarm.drivers[i].nav.euler_rad[2]

    # -- what each drone's runtime sees -----------------------------------------------
    def sense(self):
        """Own body velocity from the Crazyflie's stateEstimate (cflib log) + flow noise; the UWB ranges
        that arrived since the last call ({i: {j: [(range_m, peer_vel_body, time_us), ...]}})."""
        navs = [d.nav for d in self.swarm.drivers]
        yaw = np.array([nav.euler_rad[2] for nav in navs])
        v_ned = np.array([nav.vel_ned_mps[:2] for nav in navs], dtype=float)
        # one draw for the fleet: the same numbers, in the same order, as a draw of 2 per drone
        v_meas = to_body(yaw, v_ned) + self.rng.normal(0.0, self.cfg["vel_noise_mps"], (self.m, 2))
        ranges = self._latest
        self._latest = {i: {} for i in range(self.m)}
        return v_meas, ranges

    def act(self):
        """Send each driver's last command (the members commanded them this period at ``t0_us`` + the
        mission time), fly one policy period in lockstep; returns the mission time (us)."""
        now_sim = self.clock.now_us()
        self.swarm.step(now_sim)
        now = self.lockstep.advance(self.period_us)
        self.swarm.poll(now)
        self.now_us = now - self.t0_us
        return self.now_us

    def report(self):
        faults = [f.as_dict() for d in self.swarm.drivers for f in d.faults]
        uwb = {"frames": self.net.stats["frames"],
               "ranges": sum(self.net.protocol_node(i).stats["ranges"] for i in range(self.m))}
        return {"world": self.name, "uwb_mode": self.cfg["uwb_mode"], "uwb": uwb, "driver_faults": faults,
                "setup_wall_s": self.setup_wall_s, "takeoff_sim_s": self.t0_us * 1e-6,
                "setpoints_sent": sum(d.stats["setpoints_sent"] for d in self.swarm.drivers),
                "log_packets_received": sum(d.log_packets_received for d in self.swarm.drivers),
                "sim_internal_errors": sum(dr.stats.get("internal_errors", 0) for dr in self.fleet.drones)}

    def close(self):
        if self.swarm is not None:
            if self.fleet is not None:
                self.fleet.release_links()
            self.swarm.close()
            self.swarm = None
        if self.fleet is not None:
            self.fleet.close()
            self.fleet = None
        if getattr(self, "_toc_cache_dir", None):
            shutil.rmtree(self._toc_cache_dir, ignore_errors=True)
            self._toc_cache_dir = None


WORLDS = {"direct": DirectWorld, "cflib": CflibWorld}
