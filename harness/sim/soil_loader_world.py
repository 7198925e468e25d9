"""The simulated soil-mapping world: a soil world with hidden property fields, the track loader cutting
its lanes, and the loader's onboard app on one clock (the soil scenarios).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader", section 3 (the simulated CTL, 60 Hz observations).

:class:`LoaderWorld` is a :class:`harness.sim.world.SimWorld` holding the truth: the property fields
(``harness.sim.soil_world``), the terrain (``harness.sim.soil_terrain``) and the machine with its operator
(``harness.sim.track_loader``). The machine steps at 60 Hz on the world's clock (physics priority), at the
times ``track_loader.time_of_step_us(k)`` (60 Hz has no whole-microsecond period, so each step is scheduled
at its own time); each step senses the machine at its time and then advances it by one step.
:class:`MachineSensor` (a ``SimSensor``) hands each step's measured sample, as the onboard
``onboard.soil.loader_app.MachineSample``, to the app's entry point ``on_machine``. Log topics (the run's
MCAP): ``/loader/machine`` (every sample), ``/loader/cmd`` (the operator's commands and phase, and the track
speed loop's commanded tractive effort ``drive_cmd_n`` [N] (``LoaderSample.drive_command_n``), every step),
``/loader/truth`` (the truth force, carried pile, depth and speed, every ``truth_every`` steps).

The truth the scores need is kept per step in ``truth_theta`` ({time_us: the five properties averaged over
the blade strips in contact, ``onboard.soil.fee`` slots}, the soil the blade fails) and ``truth_pile``
({time_us: carried pile [m^3]}).
"""
import numpy as np

from harness.sim import soil_world
from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.sensors.sim_sensor import SimSensor
from harness.sim.soil_terrain import SoilTerrain
from harness.sim.track_loader import RATE_HZ, TrackLoader, time_of_step_us
from harness.sim.world import SimWorld
from onboard.soil.loader_app import MachineSample

MACHINE_TOPIC = "/loader/machine"
COMMAND_TOPIC = "/loader/cmd"
TRUTH_TOPIC = "/loader/truth"


def machine_sample(s):
    """The onboard MachineSample of a ``track_loader.LoaderSample`` (its measured fields, no truth)."""
    return MachineSample(s.time_us, s.blade_pose, s.blade_force_n, s.drive_torque_nm, s.lift_pressure_pa, s.lift_m,
                         s.speed_mps, s.chassis_euler_rad[1], s.phase, s.lane)


def _every_step(clock, fn, priority):
    """``fn(now_us)`` at every 60 Hz step time ``time_of_step_us(k)`` from the clock's now on."""
    state = {"k": 0}
    while time_of_step_us(state["k"]) < clock.now_us():
        state["k"] += 1

    def tick(now_us):
        fn(now_us)
        state["k"] += 1
        clock.call_at(time_of_step_us(state["k"]), tick, priority)
    clock.call_at(time_of_step_us(state["k"]), tick, priority)


class MachineSensor(SimSensor):
    """The loader's sensors at 60 Hz: the measured sample of the step at the same time, to ``entry``."""

    def __init__(self, world, entry, topic=MACHINE_TOPIC, log=None):
        SimSensor.__init__(self, RATE_HZ, entry, topic, log)
        self.world = world

    def attach(self, clock):
        _every_step(clock, self.tick, self.priority)
        return self

    def sample(self, now_us):
        s = self.world.last_sample
        if s is None or s.time_us != now_us:
            return None
        return machine_sample(s)


class LoaderWorld(SimWorld):
    """The truth world of ``config`` (blocks ``world``: soil_world settings, ``terrain``: soil_terrain's,
    ``loader``: track_loader's) drawn from ``random`` (a ``harness.sim.rng.RunRandom``: streams
    "soil_fields", "soil_terrain", the loader's); ``log``: the run's log or None. The machine starts
    stepping at once; :meth:`run_lanes` runs it with the app through every lane."""

    def __init__(self, config, random, log=None, truth_every=6):
        SimWorld.__init__(self, log)
        self.fields = soil_world.build_fields(config["world"], random.stream("soil_fields"))
        self.terrain = SoilTerrain(self.fields, config["terrain"], random.stream("soil_terrain"))
        self.loader = TrackLoader(self.terrain, config["loader"], random)
        self.initial_height_m = self.terrain.height_m.copy()
        self.initial_loose_m = self.terrain.loose_m.copy()
        self.truth_every = truth_every
        self.last_sample = None
        self.finished = False
        self.steps = 0
        self.truth_theta = {}
        self.truth_pile = {}
        self._lanes = self.loader.lanes()
        _every_step(self.clock, self._step, PRIORITY_PHYSICS)

    def add_machine_sensor(self, entry):
        """The :class:`MachineSensor` calling ``entry(MachineSample)`` (the app's ``on_machine``)."""
        return self.add_sensor(MachineSensor(self, entry, MACHINE_TOPIC, self.log))

    def _step(self, now_us):
        if self.finished:
            return
        try:
            s = next(self._lanes)
        except StopIteration:
            self.finished = True
            self.last_sample = None
            return
        self.last_sample = s
        self.steps += 1
        t = s.truth
        force = t["force"]
        touching = force.depth_m > 0.0
        if t["failing"] and np.any(touching):
            self.truth_theta[s.time_us] = [float(np.mean(np.broadcast_to(v, touching.shape)[touching]))
                                           for v in force.theta_u]
        self.truth_pile[s.time_us] = t["pile_m3"]
        self.log(COMMAND_TOPIC, s.time_us, dict(s.commands, time_us=s.time_us, phase=s.phase, lane=list(s.lane),
                                                drive_cmd_n=s.drive_command_n))
        if self.steps % self.truth_every == 1:
            p = t["blade_pose"]
            self.log(TRUTH_TOPIC, s.time_us, {
                "time_us": s.time_us, "fx_n": t["fx_n"], "fz_n": t["fz_n"], "failing": t["failing"],
                "pile_m3": t["pile_m3"], "depth_m": t["depth_m"], "speed_mps": t["speed_mps"],
                "slipping": t["slipping"], "blade_ned_m": [p.north_m, p.east_m, p.down_m]})

    def run_lanes(self, app, finish=None, step_s=1.0, tail_s=1.0):
        """Run ``app`` (started with :meth:`start` or given here) until the operator's last lane is done,
        then ``finish()`` (the end of the mission for the app, e.g. its last sweep) and ``tail_s`` more
        simulated seconds for the app's slower groups. Returns the simulated time [s]."""
        if self.app is None:
            self.start(app)
        step_us = int(step_s * 1e6)
        self.run(2 ** 62, step_us, done=lambda: self.finished)
        if finish is not None:
            finish()
        now = self.clock.now_us()
        self.run(now + int(tail_s * 1e6), step_us)
        return self.sim_time_s

    def final_surface_m(self):
        """The truth surface [m, up] now, the carried pile rendered ahead of the blade (an array)."""
        pose = self.terrain._last_pose
        if pose is None or self.terrain.pile_m3 <= 0.0:
            return self.terrain.height_m.copy()
        return self.terrain.surface_with_pile(pose, self.loader.config["blade"]["width_m"])
