"""Desk runs of the WAM-V boat service against the simulated boat: the same service, simulated devices on ptys.

``python -m harness.sim.wamv_bench run --config wamv.json`` is ``python -m boards.wamv run --config
wamv.json`` (same subcommands, options, output and exit status) with four more port names, served by a
simulated WAM-V running in real time in a thread of this process:

- ``bench-sim:gnss``: the truth vessel's GNSS fixes (``harness.sim.sensors.wamv_sensors.Gnss``, 4 Hz, no
  dropouts or outliers) as NMEA GGA about the config's ``app.origin_deg``;
- ``bench-sim:heading``: its heading and yaw rate (``wamv_sensors.Heading`` / ``YawGyro`` at
  ``HEADING_RATE_HZ``) as NMEA HDT and ROT (``boards.wamv.heading_nmea``);
- ``bench-sim:left`` / ``bench-sim:right``: the two outboards as simulated VESCs
  (``harness.sim.wamv_thrusters.SimOutboards``; their own command timeout set out of reach, so only a
  command of the service releases a motor).

The world steps the truth vessel (``harness.sim.wamv.Wamv``) at its 100 Hz on the wall clock (the
service's clock runs on the host's monotonic time, so the simulation does too). It prints
``wamv_bench: thrusters driven`` once both simulated outboards turn forward above ``DRIVEN_THROTTLE`` and
the service has read their telemetry (on each side, two requests came in steps after the one that answered
the first: the driver reads replies before it sends the next request, so by then a reply was read, however
loaded the host), and, after the service stops (the world kept running up to ``GRACE_S`` for its last commands), one line
``wamv_bench: {...}`` (JSON) read at the simulated outboards: ``released`` per side (no torque: SetCurrent 0
or never commanded), ``last_command`` per side ([VESC command id, value] the motor last took), ``throttle``
(shaft speed / full), ``max_throttle``, ``sim_time_s``, the vessel's ``state``. Seeded (``SEED``); the
wall-clock pacing makes runs alike, not identical.
"""
import json
import sys
import threading
import time

from boards.wamv import board as B
from boards.wamv import service
from boards.wamv.heading_nmea import hdt, rot
from harness.sim.ptys import PtyPair
from harness.sim.rng import RunRandom
from harness.sim.sensors import wamv_sensors as ws
from harness.sim.wamv import Wamv
from harness.sim.wamv_thrusters import SIDES, SimOutboards
from onboard.comms import nmea

SEED = 7
HEADING_RATE_HZ = 20.0
DRIVEN_THROTTLE = 0.1
GRACE_S = 2.0
MAX_CATCH_UP_STEPS = 50          # steps per wake-up at most (the world falls behind instead of spinning)


class BenchWorld:
    """The simulated WAM-V on ptys, stepped in real time by a thread (:meth:`start` / :meth:`stop`)."""

    def __init__(self, origin_deg=(B.ORIGIN_LAT_DEG, B.ORIGIN_LON_DEG), seed=SEED, out=sys.stdout):
        rnd = RunRandom(seed)
        self.out = out
        self.vessel = Wamv(None, rnd.stream("wamv"))
        self.frame = nmea.LocalFrame(*origin_deg)
        self.gnss_model = ws.Gnss(self.vessel, rnd.stream("gnss"), {"dropout_prob": 0.0, "outlier_prob": 0.0})
        self.heading_model = ws.Heading(self.vessel, rnd.stream("heading"), {"rate_hz": HEADING_RATE_HZ})
        self.gyro_model = ws.YawGyro(self.vessel, rnd.stream("gyro"), {"rate_hz": HEADING_RATE_HZ})
        self.gnss_pty = self.heading_pty = None
        self.outboards = SimOutboards({"timeout_ms": 3600 * 1000}, self.vessel.cfg["thrusters"],
                                      tmp_prefix="wamv-bench-")
        try:
            self.gnss_pty, self.heading_pty = PtyPair(), PtyPair()
        except Exception:
            self.close()
            raise
        self.paths = {"bench-sim:gnss": self.gnss_pty.slave_path, "bench-sim:heading": self.heading_pty.slave_path,
                      "bench-sim:left": self.outboards.paths["left"], "bench-sim:right": self.outboards.paths["right"]}
        self.now_us = 0
        self.max_throttle = {side: 0.0 for side in SIDES}
        self.driven = False
        # telemetry: requests answered per side, the step that answered the first, requests in later steps
        self.steps = 0
        self._requests = {side: 0 for side in SIDES}
        self._first_reply_step = {side: None for side in SIDES}
        self._later_requests = {side: 0 for side in SIDES}
        self._stop = threading.Event()
        self._thread = None
        self.error = None                  # why the simulated boat stopped, when a step raised
        self._lock = threading.Lock()

    def step(self):
        """One physics step (100 Hz): outboards service their UARTs and move, the vessel moves, sensors write."""
        v, sim = self.vessel, self.outboards
        now = self.now_us
        sim.service(now)
        v.step_thrust(*sim.step(v.dt_s, now))
        for side in SIDES:
            self.max_throttle[side] = max(self.max_throttle[side], sim.throttle(side))
        for side in SIDES:
            count = sim.sims[side].telemetry_requests
            if count != self._requests[side]:
                self._requests[side] = count
                if self._first_reply_step[side] is None:
                    self._first_reply_step[side] = self.steps
                elif self.steps > self._first_reply_step[side]:
                    self._later_requests[side] += 1
        self.steps += 1
        if not self.driven and all(sim.throttle(side) > DRIVEN_THROTTLE and self._later_requests[side] >= 2
                                   for side in SIDES):
            self.driven = True
            print("wamv_bench: thrusters driven", file=self.out, flush=True)
        self.now_us = now = now + v.dt_us
        fix = self.gnss_model.poll(now)
        if fix is not None:
            lat, lon = self.frame.to_latlon(*fix.pos_ne_m)
            self.gnss_pty.write(nmea.gga(now * 1e-6, lat, lon).encode("ascii"))
        if self.heading_model.due(now):
            h = self.heading_model.sample(now)
            r = self.gyro_model.sample(now)
            self.heading_pty.write((hdt(h.yaw_rad) + rot(r.yaw_rate_radps)).encode("ascii"))

    def _loop(self):
        t0_ns = time.monotonic_ns()
        dt_us = self.vessel.dt_us
        try:
            while not self._stop.is_set():
                target_us = (time.monotonic_ns() - t0_ns) // 1000
                n = 0
                with self._lock:
                    while self.now_us + dt_us <= target_us and n < MAX_CATCH_UP_STEPS:
                        self.step()
                        n += 1
                time.sleep(0.002)
        except Exception as exc:    # noqa: BLE001 - said, not lost with the thread (the service then sees stale inputs)
            self.error = "%s: %s" % (type(exc).__name__, exc)
            print("wamv_bench: the simulated boat stopped: %s" % self.error, file=self.out, flush=True)

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="wamv-bench-world", daemon=True)
        self._thread.start()

    def released(self, side):
        return self.outboards.released(side)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def summary(self):
        with self._lock:
            return {"released": {side: self.released(side) for side in SIDES},
                    "throttle": {side: self.outboards.throttle(side) for side in SIDES},
                    "max_throttle": dict(self.max_throttle), "sim_time_s": self.now_us * 1e-6,
                    "last_command": {side: list(self.outboards.sims[side].applied[-1][1:])
                                     if self.outboards.sims[side].applied else None for side in SIDES},
                    "state": [float(x) for x in self.vessel.state()]}

    def close(self):
        self.stop()
        for pty in (self.gnss_pty, self.heading_pty):
            if pty is not None:
                pty.close()
        self.outboards.close()


def _origin(argv):
    """The config's ``app.origin_deg`` when ``run --config`` names a readable, valid config (else the board's)."""
    if "--config" in argv[:-1]:
        try:
            return tuple(service.load_config(argv[argv.index("--config") + 1])["app"]["origin_deg"])
        except Exception:       # noqa: BLE001 - the service reports a bad config itself (one line, exit 2)
            pass
    return (B.ORIGIN_LAT_DEG, B.ORIGIN_LON_DEG)


def main(argv=None):
    """``boards.wamv.service.main`` with the simulated boat's ports; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "python -m harness.sim.wamv_bench"
    if not argv or argv[0] != "run":
        return service.main(argv, prog=prog)
    world = BenchWorld(_origin(argv))
    try:
        world.start()
        rc = service.main(argv, port_paths=world.paths, prog=prog)
        deadline = time.monotonic() + GRACE_S           # the service's last commands reach the motors
        while time.monotonic() < deadline and not all(world.released(side) for side in SIDES):
            time.sleep(0.01)
        world.stop()
        print("wamv_bench: %s" % json.dumps(world.summary()), flush=True)
        return rc if world.error is None else (rc or 1)
    finally:
        world.close()


if __name__ == "__main__":
    sys.exit(main())
