"""One swarm member (uwb-pocket-drones fig. 1) as an onboard app: a recipe of parts on a :class:`Node`.

Parts (in this order on the node):

- ``inputs`` (:class:`SwarmInputs`): entry points (``node.entry``, each taking one sample of
  ``onboard.core.samples``) ``range`` (``RangeSample``: UWB range to a neighbour, m, with the
  neighbour's reported body velocity, m/s), ``velocity`` (``BodyVelocitySample``: own body-frame
  velocity, m/s, and the heading of the body in the driver's navigation frame, rad) and
  ``goal_range`` (``GoalRangeSample``: range to the goal, m); the member's ``on_range(sample)``,
  ``on_velocity(time_us, vel_body_mps, yaw_rad)`` and ``on_goal_range(time_us, range_m)`` build the
  sample and call them. Queued (bounded: the oldest is dropped and counted); non-finite samples
  are refused at the entry point (counted, never queued, never feed the watchdog). Watched inputs
  ``uwb`` (any neighbour range), ``velocity`` and ``goal``: a silent UWB link, velocity source or
  goal beacon engages the node's failsafe (``stale:uwb`` ...);
- ``decision`` (:class:`SwarmDecision`): rate group ``decide`` at ``step_rate_hz`` (the policy
  period, pocket V-B: 10 Hz). Each run feeds the queued inputs to the
  :class:`onboard.swarm.agent.SwarmAgent` in a fixed order - per neighbour in ``peers`` order
  (neighbours first heard of later come after, in the order heard) every range of the period,
  oldest first, the last one marked as the learned estimator's input, or a dropout (no range,
  no velocity) when none came; then the goal ranges; then ``decide`` - so that members sharing
  one random stream draw from it in the same order as the per-drone loop they replace. Entry
  point ``goal_reset`` (``GoalReset``; the member's ``new_goal(time_us)``): the mission moved the
  goal, its track starts afresh. Outputs ``decision`` each period (the agent's body-frame
  setpoint before the failsafe's override, and its estimate of every tracked object);
- ``command`` (:class:`VelocityCommand`): rate group ``command`` (same rate, after ``decide``):
  the body-frame setpoint turned into the driver's navigation frame with the last heading and
  sent as ``driver.command(VelocitySetpoint(now_us, (v_north, v_east, 0)))``. While the failsafe
  is engaged (or before the first decision) it commands zero velocity (hover) instead, and the
  agent's setpoint is reset so it resumes from hover; after ``failsafe_land_s`` engaged in a row
  it calls ``driver.land(now_us)`` once (when the driver has one). Outputs each command as
  ``velocity``;
- ``draws`` (``onboard.runtime.draws_state.DrawsState``): io group ``random_state`` at the decision's rate
  (so it runs before ``decide`` in the same tick), while the node records: the state of the agent's random
  draws (``draws.get_state()``, when the draws have it) through the entry point ``random_state``
  (``RandomState``, the state as JSON), whose handler sets it (``draws.set_state``; live it is the
  state they are in). The draws are an input of the member: the swarm's members share one
  generator, so what one member draws depends on the others; recorded, a replayed member draws
  the same numbers alone.

``driver`` is any object with ``command(setpoint)`` (``boards.crazyflie.driver.CrazyflieDriver``,
or a simulated world's stand-in). The agent sees times since ``start_us`` (the mission's start,
us), so its filters run on the mission clock whatever clock the node runs on.

:meth:`SwarmMember.record` records the member at its boundary (app ``swarm_member``; see
``onboard.runtime.node``): ``python -m harness replay LOG`` rebuilds it from its recorded settings.

Pure Python (no numpy here); the agent's kernels/draws are whatever is passed in.
"""
import json
import math

from onboard.core.samples import BodyVelocitySample, GoalRangeSample, GoalReset, SampleError, VelocitySetpoint
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, RATE_HZ, ConfigError, checked, int_at_least
from onboard.runtime.draws_state import DrawsState
from onboard.runtime.node import Node
from onboard.swarm.agent import GOAL_ID, SwarmAgent

APP = "swarm_member"             # the recipe's name in a recording (/app/config)
UWB_INPUT = "uwb"
VELOCITY_INPUT = "velocity"
GOAL_INPUT = "goal"

# body-frame (forward, right) and navigation-frame (north, east) slots of 2-vectors
FORWARD = 0
RIGHT = 1
NORTH = 0
EAST = 1

DEFAULTS = {
    "step_rate_hz": 10,              # policy period 0.1 s (pocket V-B)
    "uwb_timeout_us": 1000000,       # no neighbour range for this long: failsafe
    "velocity_timeout_us": 500000,   # no own-velocity sample for this long: failsafe
    "goal_timeout_us": 1000000,      # no goal range for this long: failsafe
    "failsafe_land_s": 2.0,          # failsafe engaged this long in a row: land (0: never)
    "queue_limit": 64,               # per queue; the oldest sample is dropped beyond it
    "latching_failsafe": False,
}
SETTING_RANGES = {"step_rate_hz": RATE_HZ, "uwb_timeout_us": int_at_least(1), "velocity_timeout_us": int_at_least(1),
                  "goal_timeout_us": int_at_least(1), "failsafe_land_s": NON_NEGATIVE, "queue_limit": int_at_least(1),
                  "latching_failsafe": BOOLEAN}

# The agent settings a member flies: the swarm scenarios take their defaults from here
# (harness/scenarios/swarm/flight.py DEFAULTS says why each has its value), so the standalone member
# flies the same agent as the scenarios.
FLIGHT_AGENT_CONFIG = {
    "mode": "pf", "n_particles": 1000, "warmup_steps": 10, "learned_refresh": "sample", "pf_init": "learned",
    "min_confidence": 0.0,
    "pf_config": {"resample_neff_fraction": 0.5, "reinit_after_outliers": 3, "lost_residual_m": 0.4,
                  "refresh_mode": "spread", "refresh_fraction_min": 0.01},
    "goal_pf_config": {"vel_noise_mps": 0.05},
    "guard_distance_m": 0.4, "guard_on_range": True, "guard_horizon_s": 1.0, "guard_residual_m": 0.15,
    "guard_hold_max_s": 2.0, "brake_ttc_s": 1.0, "stuck_window_s": 10.0, "approach_radius_m": 0.5,
    "collapsed_estimate_fraction": 0.5, "collapsed_goal_fraction": 0.5,
}


_INF = float("inf")


def _finite(values):
    """Whether every value is an int or a float and finite."""
    for v in values:
        if type(v) is float:
            if v - v != 0.0:               # inf - inf and nan - nan are nan
                return False
            continue
        if not isinstance(v, (int, float)):
            return False
        v = float(v)
        if v != v or v == _INF or v == -_INF:
            return False
    return True


def body_to_nav(vel_body_mps, yaw_rad):
    """Body-frame (forward, right) velocity (m/s) into the navigation frame (north, east) of a body
    with heading ``yaw_rad`` (rad, from north towards east): ``v_ned = Rz(yaw) v_body``."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    f, r = vel_body_mps[FORWARD], vel_body_mps[RIGHT]
    return (c * f - s * r, s * f + c * r)


def nav_to_body(vel_ne_mps, yaw_rad):
    """Navigation-frame (north, east) velocity (m/s) into the body frame (forward, right) of a body
    with heading ``yaw_rad`` (rad): ``v_body = Rz(yaw)^T v_ned``."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    n, e = vel_ne_mps[NORTH], vel_ne_mps[EAST]
    return (c * n + s * e, -s * n + c * e)


class SwarmInputs:
    """Part: the member's entry points, queues and watched inputs (see the module docstring)."""

    def __init__(self, uwb_timeout_us, velocity_timeout_us, goal_timeout_us, queue_limit=64):
        self.uwb_timeout_us = uwb_timeout_us
        self.velocity_timeout_us = velocity_timeout_us
        self.goal_timeout_us = goal_timeout_us
        self.queue_limit = queue_limit
        self.ranges = []              # RangeSample, in arrival order
        self.goal_ranges = []         # (time_us, range_m), in arrival order
        self.velocity = None          # (time_us, (forward_mps, right_mps), yaw_rad) of the last sample
        self.ranges_received = 0
        self.velocities_received = 0
        self.goal_ranges_received = 0
        self.rejected_samples = 0
        self.dropped_samples = 0
        self._node = None
        # the entry points (node.entry wraps them at attach: recorded while the node records)
        self.range_entry = self._range
        self.velocity_entry = self._velocity
        self.goal_range_entry = self._goal_range

    def attach(self, node):
        self._node = node
        node.watch(UWB_INPUT, self.uwb_timeout_us)
        node.watch(VELOCITY_INPUT, self.velocity_timeout_us)
        node.watch(GOAL_INPUT, self.goal_timeout_us)
        self.range_entry = node.entry("range", self._range)
        self.velocity_entry = node.entry("velocity", self._velocity)
        self.goal_range_entry = node.entry("goal_range", self._goal_range)

    # ------------------------------------------------------------ driver entry points
    def on_range(self, sample):
        """A UWB range to neighbour ``sample.peer_id`` (``onboard.core.samples.RangeSample``: range_m,
        the neighbour's velocity peer_vel_mps in its own body frame, m/s, time_us on the node's clock)
        into the entry point ``range``."""
        self.range_entry(sample)

    def on_velocity(self, time_us, vel_body_mps, yaw_rad):
        """Own velocity (forward, right) in m/s and the body's heading in the driver's navigation
        frame (rad, from north towards east; the frame the command goes out in): a
        ``BodyVelocitySample`` into the entry point ``velocity`` (one that cannot be built is refused)."""
        try:
            sample = BodyVelocitySample(time_us, vel_body_mps, yaw_rad)
        except (SampleError, TypeError, ValueError):
            self.rejected_samples += 1
            return
        self.velocity_entry(sample)

    def on_goal_range(self, time_us, range_m):
        """Range to the goal (m): a UWB beacon at the goal, or the distance from the own position fix;
        a ``GoalRangeSample`` into the entry point ``goal_range``."""
        try:
            sample = GoalRangeSample(time_us, range_m)
        except (SampleError, TypeError, ValueError):
            self.rejected_samples += 1
            return
        self.goal_range_entry(sample)

    def _range(self, sample):
        if not (_finite((sample.range_m,)) and _finite(sample.peer_vel_mps) and len(sample.peer_vel_mps) == 2):
            self.rejected_samples += 1
            return
        self._enqueue(self.ranges, sample)
        self.ranges_received += 1
        self._node.feed(UWB_INPUT, sample.time_us)

    def _velocity(self, sample):
        vel, yaw_rad = sample.vel_body_mps, sample.yaw_rad
        if not (len(vel) == 2 and _finite(vel) and _finite((yaw_rad,))):
            self.rejected_samples += 1
            return
        self.velocity = (sample.time_us, (vel[FORWARD], vel[RIGHT]), yaw_rad)
        self.velocities_received += 1
        self._node.feed(VELOCITY_INPUT, sample.time_us)

    def _goal_range(self, sample):
        if not _finite((sample.range_m,)):
            self.rejected_samples += 1
            return
        self._enqueue(self.goal_ranges, (sample.time_us, sample.range_m))
        self.goal_ranges_received += 1
        self._node.feed(GOAL_INPUT, sample.time_us)

    def _enqueue(self, queue, item):
        if len(queue) >= self.queue_limit:
            queue.pop(0)
            self.dropped_samples += 1
        queue.append(item)

    def take(self):
        """(ranges, goal ranges) queued since the last call, oldest first."""
        ranges, goals = self.ranges, self.goal_ranges
        self.ranges, self.goal_ranges = [], []
        return ranges, goals

    def report(self):
        return {"ranges_received": self.ranges_received, "velocities_received": self.velocities_received,
                "goal_ranges_received": self.goal_ranges_received, "rejected_samples": self.rejected_samples,
                "dropped_samples": self.dropped_samples}


class SwarmDecision:
    """Part: rate group ``decide`` - the queued inputs into the SwarmAgent, then its decision.

    ``setpoint_body_mps``: this period's body-frame (forward, right) velocity setpoint (m/s), None
    before the first decision. ``last_inputs``: what the agent was fed this period, rows
    ``(object, range_m or None, v_own_body_mps, v_object_body_mps or None, time_us)`` with times since
    ``start_us`` (the records an offline estimator replay needs)."""

    def __init__(self, agent, inputs, peers, step_rate_hz, start_us=0):
        self.agent = agent
        self.inputs = inputs
        self.peers = list(peers)
        self.step_rate_hz = step_rate_hz
        self.start_us = int(start_us)
        self.setpoint_body_mps = None
        self.heading_rad = 0.0
        self.last_inputs = []
        self.decisions = 0
        self.dropouts = 0             # (neighbour, period) pairs without a range
        self.ranges_used = 0          # neighbour ranges fed to the agent
        self.waiting_steps = 0        # periods without an own-velocity sample yet (nothing decided)
        self.failsafe_steps = 0       # periods decided while the failsafe was engaged (hover commanded)
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("decide", self.step_rate_hz, self._decide)
        self.goal_reset_entry = node.entry("goal_reset", self._goal_reset)

    def new_goal(self, time_us):
        """The goal moved at ``time_us`` (the next one of a sequence): its track starts afresh at its
        next range (a ``GoalReset`` into the entry point ``goal_reset``)."""
        self.goal_reset_entry(GoalReset(time_us))

    def _goal_reset(self, sample):
        self.agent.forget(GOAL_ID)
        self.inputs.goal_ranges = []

    def _decide(self, now_us):
        vel = self.inputs.velocity
        if vel is None:
            self.waiting_steps += 1          # ranges stay queued (bounded) until the own velocity is known
            self.setpoint_body_mps = None
            return
        ranges, goals = self.inputs.take()
        _t, vo, self.heading_rad = vel
        agent = self.agent
        start = self.start_us
        t_now = now_us - start
        by_peer = {}
        for s in ranges:
            if s.peer_id not in by_peer:
                by_peer[s.peer_id] = []
                if s.peer_id not in self.peers:
                    self.peers.append(s.peer_id)     # a neighbour first heard of now
            by_peer[s.peer_id].append(s)
        rows = []
        for peer in self.peers:
            got = by_peer.get(peer)
            if not got:
                self.dropouts += 1
                agent.observe(t_now, peer, None, vo, None, estimator_input=True)
                rows.append((peer, None, vo, None, t_now))
                continue
            last = len(got) - 1
            for n, s in enumerate(got):
                # the filter steps to when the range was measured (never ahead of now)
                t_r = min(s.time_us, now_us) - start
                agent.observe(t_r, peer, s.range_m, vo, s.peer_vel_mps, estimator_input=n == last)
                rows.append((peer, s.range_m, vo, s.peer_vel_mps, t_r))
                self.ranges_used += 1
        last = len(goals) - 1
        for n, (t_g, r_g) in enumerate(goals):
            t_g = min(t_g, now_us) - start
            agent.observe(t_g, GOAL_ID, r_g, vo, (0.0, 0.0), estimator_input=n == last)
            rows.append((GOAL_ID, r_g, vo, (0.0, 0.0), t_g))
        self.last_inputs = rows
        setpoint = agent.decide(t_now, vo)
        self.decisions += 1
        node = self._node
        if node.recording:
            node.output("decision", now_us, self._decision_output(setpoint))
        if node.failsafe.engaged:
            # hover on stale inputs; the agent resumes from the speed the drone holds
            self.failsafe_steps += 1
            agent.setpoint_body_mps = (0.0, 0.0)
            setpoint = (0.0, 0.0)
        self.setpoint_body_mps = setpoint

    def _decision_output(self, setpoint):
        """The agent's setpoint (body frame, m/s; before the failsafe's override) and its estimate
        (x_m, y_m, yaw_rad in the own body frame) of every tracked object, in the order of their names."""
        names, ests = [], []
        tracks = self.agent.tracks
        for name in sorted(tracks, key=str):
            est = tracks[name].est
            if est is not None:
                names.append(str(name))
                ests.append([float(v) for v in est])
        return {"setpoint_body_mps": [float(setpoint[FORWARD]), float(setpoint[RIGHT])],
                "action": self.agent.last_action, "objects": names, "estimates": ests}

    def report(self):
        a = self.agent
        return {"decisions": self.decisions, "dropouts": self.dropouts, "ranges_used": self.ranges_used,
                "waiting_steps": self.waiting_steps, "failsafe_steps": self.failsafe_steps,
                "guard_overrides": a.guard_overrides, "brakes": a.brakes, "detours": a.detours,
                "stale_neighbour_steps": a.stale_neighbour_steps,
                "tracks": sorted(str(k) for k in a.tracks)}


class VelocityCommand:
    """Part: rate group ``command`` - the decision's setpoint to the driver (see the module docstring)."""

    def __init__(self, decision, driver, rate_hz, failsafe_land_s=2.0):
        self.decision = decision
        self.driver = driver
        self.rate_hz = rate_hz
        self.failsafe_land_us = int(round(failsafe_land_s * 1e6))
        self.commands = 0
        self.hover_commands = 0
        self.refused_commands = 0     # the driver refused the command (returned False)
        self.landings = 0
        self.last_cmd = None
        self._engaged_since_us = None
        self._landed = False
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("command", self.rate_hz, self._command)

    def _command(self, now_us):
        engaged = self._node.failsafe.engaged
        sp = self.decision.setpoint_body_mps
        if engaged:
            if self._engaged_since_us is None:
                self._engaged_since_us = now_us
            held_us = now_us - self._engaged_since_us
            if (self.failsafe_land_us > 0 and not self._landed and held_us >= self.failsafe_land_us
                    and hasattr(self.driver, "land")):
                self._landed = True
                self.landings += 1
                self.driver.land(now_us)
        else:
            self._engaged_since_us = None
        if engaged or sp is None:
            self.hover_commands += 1
            vel_ne = (0.0, 0.0)
        else:
            vel_ne = body_to_nav(sp, self.decision.heading_rad)
        cmd = VelocitySetpoint(now_us, (vel_ne[NORTH], vel_ne[EAST], 0.0))
        self.last_cmd = cmd
        self._node.output("velocity", now_us, cmd)
        if self.driver.command(cmd) is False:
            self.refused_commands += 1
        self.commands += 1

    def report(self):
        return {"commands": self.commands, "hover_commands": self.hover_commands,
                "refused_commands": self.refused_commands, "landings": self.landings}


class SwarmMember:
    """The recipe: ``inputs``, ``decision`` and ``command`` parts on a Node (new, or ``node`` given).

    policy, net, draws, agent_config, kernels: the :class:`SwarmAgent`'s (DQN runner, bearing
    estimator, random draws, its settings, particle-filter kernels). peers: neighbour ids known in
    advance (their dropouts are fed from the first period). driver: ``command(VelocitySetpoint)``
    (and optionally ``land(now_us)``). start_us: the mission's start on the node's clock (us).
    models: what loaded ``policy`` and ``net`` (e.g. ``{"policy": "int8", "estimator": "int8", "dir":
    "models/swarm"}``), written with a recording so that replay loads the same."""

    APP = APP

    def __init__(self, policy, net, draws, peers, driver, config=None, agent_config=None, kernels=None,
                 start_us=0, node=None, name="swarm_member", log=None, models=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "SwarmMember")
        rate = cfg["step_rate_hz"]
        peers = list(peers)
        for n, p in enumerate(peers):
            if not isinstance(p, int) or isinstance(p, bool):
                raise ConfigError("SwarmMember peer ids must be whole numbers, got %r" % (p,))
            if p in peers[:n]:
                # listed twice, its ranges would be fed to the agent twice each period
                raise ConfigError("SwarmMember peer id %r is listed twice" % (p,))
        self.cfg = cfg
        if node is None:
            node = Node(name, latching_failsafe=cfg["latching_failsafe"], start_us=start_us, log=log)
        self.node = node
        self.agent = SwarmAgent(policy, net, draws, agent_config, kernels=kernels)
        self.inputs = node.add("inputs", SwarmInputs(cfg["uwb_timeout_us"], cfg["velocity_timeout_us"],
                                                     cfg["goal_timeout_us"], cfg["queue_limit"]))
        self.decision = node.add("decision", SwarmDecision(self.agent, self.inputs, peers, rate, start_us))
        self.command = node.add("command", VelocityCommand(self.decision, driver, rate, cfg["failsafe_land_s"]))
        self.draws_state = node.add("draws", DrawsState(draws, rate))
        self.start_us = int(start_us)
        self.kernels_impl = getattr(kernels, "name", None) if kernels is not None else "pure"
        self.models = dict(models) if models is not None else None
        # entry points and commands, as drivers and missions call them
        self.on_range = self.inputs.on_range
        self.on_velocity = self.inputs.on_velocity
        self.on_goal_range = self.inputs.on_goal_range
        self.new_goal = self.decision.new_goal
        self.step = node.step
        self.run = node.run

    @property
    def failsafe(self):
        return self.node.failsafe

    def recipe_config(self):
        """What rebuilds this member (before its first input): member and agent settings, neighbours,
        mission start, particle-filter kernels (``onboard.impl`` name) and the models it flies."""
        return {"member": dict(self.cfg), "agent": json.loads(json.dumps(self.agent.cfg)),
                "peers": list(self.decision.peers), "start_us": self.start_us, "impl": self.kernels_impl,
                "models": self.models, "name": self.node.name}

    def record(self, sink, code_version="", time_us=0):
        """Record the member at its boundary into ``sink(topic, time_us, msg)`` (app ``swarm_member``;
        ``onboard.runtime.node.Node.record``); call it before the first input."""
        self.node.record(sink, APP, self.recipe_config(), code_version, time_us)

    def report(self):
        return self.node.report()
