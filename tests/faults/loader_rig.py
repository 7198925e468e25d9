"""The soil loader's app (onboard.soil.loader_app.loader_app) on the simulated loader world
(harness.sim.soil_loader_world.LoaderWorld), for the fault matrix.

The app maps the blade-swept soil and estimates the soil of each cut from the machine's sensor samples
(``MachineSample`` at 60 Hz into its entry point ``on_machine``, the watched input ``machine``); it commands
nothing: the machine's drive and blade are the operator's (``harness.sim.track_loader``). So its cells
measure what applies: the time from the fault to the failsafe engaging (a stale input detected), bad
samples refused and counted, the app mapping again once the samples are good (state recovered), and its
recording complete. Lockstep on the world's clock: the machine and its sensors at 60 Hz, the app's node at
its base rate (the map group's 20 Hz); the rig advances in 10 ms steps. Seeded; one long lane, so the
blade cuts through every cell. The app's map starts from the world's surface, as in the soil episode.
"""
from harness.scenarios.soil import soil_episode as se
from harness.sim.rng import RunRandom
from harness.sim.soil_loader_world import LoaderWorld
from harness.sim.track_loader import RATE_HZ
from onboard.soil import blind_map_numpy, loader_app
from onboard.soil.blind_map import BladePose
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap
from onboard.soil.grid_map_numpy import load
from onboard.soil.loader_app import MachineSample

SEED = 51
STEP_US = 10000
SAMPLE_PERIOD_US = 1000000 // RATE_HZ + 1       # 60 Hz (16 667 us), rounded up: the bound's sample period
CLOCK_JUMP_US = 5000000
CONFIG = se.episode_defaults(world={"size_m": [16.0, 6.0]}, loader={"operator": {"lanes": {
    "count": 1, "start_ne_m": [1.0, 2.0], "length_m": 13.0}}})


class LoaderRig:
    def __init__(self, tmp_path):
        self.w = LoaderWorld(CONFIG, RunRandom(SEED))
        self.t_us = 0
        self.mode = "good"
        self.stamp_offset_us = 0        # the machine's sample clock minus the world's
        self.garbage = 0
        self.sessions = []              # (node, records, delivered samples) per boot
        self.reasons = set()
        self.sensor = self.w.add_machine_sensor(self._deliver)
        self._boot()

    # ------------------------------------------------------------ the app
    def _boot(self):
        w = self.w
        grid = GridMap({"size_m": list(CONFIG["world"]["size_m"]), "cell_m": CONFIG["world"]["cell_m"]})
        load(grid, ELEVATION, w.initial_height_m)
        load(grid, LOOSE, w.initial_loose_m)
        lcfg = w.loader.config
        cfg = se.merge_blocks(CONFIG["app"], {"blind_map": {
            "blade_width_m": lcfg["blade"]["width_m"], "blade_height_m": lcfg["blade"]["height_m"],
            "swell": w.terrain.swell, "loose_unit_weight_npm3": w.terrain.loose_unit_weight_npm3}})
        node = loader_app.loader_app(grid, cfg, se.machine_constants(lcfg), blind_map_numpy.erode)
        records = []
        delivered = [0]
        w.start(node, record=None)
        node.record(lambda topic, t, msg: records.append(topic), "soil_loader", cfg, "faults", w.clock.now_us())
        self.node = node
        self.mapping = node.part("mapping")
        self.delivered = delivered
        self.sessions.append((node, records, delivered))

    def _deliver(self, s):
        """The machine's sample on its way to the app's entry point: silenced, corrupted or re-stamped by
        the fault."""
        if self.node is None or self.mode == "off":
            return
        if self.stamp_offset_us:
            p = s.blade_pose
            off = self.stamp_offset_us
            s = MachineSample(s.time_us + off, BladePose(p.time_us + off, p.north_m, p.east_m, p.down_m, p.roll_rad,
                                                         p.pitch_rad, p.yaw_rad),
                              s.blade_force_n, s.drive_torque_nm, s.lift_pressure_pa, s.lift_m, s.speed_mps,
                              s.pitch_rad, s.phase, s.lane)
        if self.mode == "garbage":
            # in turn: a NaN blade force, an infinite ground speed, a NaN lift pressure (the sensors' garbage)
            self.garbage += 1
            nan, inf = float("nan"), float("inf")
            k = self.garbage % 3
            s = MachineSample(s.time_us, s.blade_pose, (nan, s.blade_force_n[1]) if k == 0 else s.blade_force_n,
                              s.drive_torque_nm, nan if k == 2 else s.lift_pressure_pa, s.lift_m,
                              inf if k == 1 else s.speed_mps, s.pitch_rad, s.phase, s.lane)
        self.delivered[0] += 1
        self.mapping.on_machine(s)

    def _crash(self):
        """The computer running the app loses power: the app stops (its map is in memory only)."""
        from tests.faults.boat_rig import _DeadComputer
        self.w.app = _DeadComputer()
        self.node = None

    def close(self):
        pass

    # ------------------------------------------------------------ running
    def advance(self, until_us, watch=None):
        while self.t_us < until_us:
            self.t_us += STEP_US
            self.w.run(self.t_us, STEP_US)
            if self.node is not None:
                self.reasons.update(self.node.failsafe.reasons)
            if watch is not None:
                watch(self.t_us)

    def feeds(self):
        return self.node.watchdog.report()["machine"]["feeds"] if self.node is not None else 0

    def healthy(self):
        """The app runs, takes the machine's samples and its failsafe is not engaged."""
        return self.node is not None and not self.node.failsafe.engaged and self.feeds() > 0

    def detected(self):
        return self.node is not None and self.node.failsafe.engaged

    def progress(self):
        """Sweeps mapped by the running app (grows while it maps)."""
        if self.node is None:
            return -1
        return self.mapping.mapper.sweeps

    # ------------------------------------------------------------ faults
    def bound_us(self, fault):
        """(bound in us or None, its source): the failsafe's detection of the stale input."""
        cfg = loader_app.DEFAULTS
        tick_us = 1000000 // cfg["map_rate_hz"]          # the node's base tick: its fastest group, "map"
        what = "machine_timeout_us + 1 base tick (map group): the stale input detected"
        if fault in ("sensor stale", "NaN/garbage input"):
            return cfg["machine_timeout_us"] + tick_us, what
        if fault == "clock jump":
            return cfg["machine_timeout_us"] + tick_us + SAMPLE_PERIOD_US, what + ", + 1 sample period"
        if fault == "power cycle/reboot":
            return None, "nothing to bound: the app commands nothing and is down"
        raise KeyError(fault)

    def inject(self, fault, t_us):
        self.reasons = set()
        if fault == "sensor stale":
            self.mode = "off"
        elif fault == "NaN/garbage input":
            self.mode = "garbage"
        elif fault == "power cycle/reboot":
            self._crash()
        elif fault == "clock jump":
            # the machine's sample clock steps 5 s ahead (and stays so), then its samples are lost
            self.stamp_offset_us += CLOCK_JUMP_US
            self.advance(t_us + SAMPLE_PERIOD_US)
            self.mode = "off"
        else:
            raise KeyError(fault)

    def clear(self, fault, t_us):
        self.mode = "good"
        if fault == "power cycle/reboot":
            self._boot()

    def log_complete(self):
        """Every boot's recording holds a /app/step per tick run, every sample delivered to the entry point
        on /app/in/machine (refused ones included) and a /app/out/cut_estimate per estimate."""
        for node, records, delivered in self.sessions:
            ticks = node.scheduler.ticks_run if node.scheduler is not None else 0
            if records.count("/app/step") != ticks:
                return False, "ticks"
            if records.count("/app/in/machine") != delivered[0]:
                return False, "samples"
            est = node.part("estimation")
            if records.count("/app/out/cut_estimate") != len(est.estimates):
                return False, "estimates"
        return True, "ticks, samples, estimates"

    def extra(self, fault):
        rep = self.mapping.report()
        out = "samples refused %d, sweeps %d; failsafe engagements %s (%s)" % (
            rep["rejected"], rep["sweeps"], "/".join(str(n.failsafe.engage_count) for n, _r, _d in self.sessions),
            ", ".join(sorted(self.reasons)) or "none")
        if fault == "power cycle/reboot":
            out += ("; boots %d (counts: the new boot's; engagements per boot): the new node counts its input "
                    "from time 0, so it is stale until the first sample; the new boot maps from the surface it "
                    "was given (the first boot's map is kept in memory only and lost)" % len(self.sessions))
        if fault == "clock jump":
            out += "; the watchdog counts a feed stamped ahead of the node's clock as fed at its now_us"
        return out
