"""A swarm member on a Crazyflie: the recipe (parts on a Node).

The member (:class:`onboard.swarm.member.SwarmMember`: entry points, the SwarmAgent's decision at
10 Hz, the velocity command) gets two Crazyflie parts around it on the same node:

- ``cf_inputs`` (io group at the driver's ``setpoint_rate_hz``): ``driver.poll(now_us)`` and the
  samples into the member's entry points:

  * ``NavState`` (log ``stateEstimate.*``) -> own body-frame velocity (forward, right; m/s) and
    heading (rad) -> ``on_velocity``; with a goal (north, east; m, the Crazyflie's position frame)
    the distance from the estimated position to it -> ``on_goal_range`` (standing in for the
    paper's goal beacon: on the Crazyflie the goal range needs a position fix, e.g. flow deck +
    take-off point, Lighthouse or LPS);
  * ``RangeSample`` (log ``ranging.state`` + ``ranging.distance<j>``: the UWB deck's ranges, slot
    j = peer ``range_peer_ids[j]``) of the listed neighbours -> ``on_range``. These log variables
    carry no velocity: the neighbour's velocity is taken as 0 m/s (right for neighbours that
    hover or stand; a moving neighbour's motion then shows up as filter noise). The swarm
    scenarios (harness/scenarios/swarm) fly the same member with the velocities the onboard UWB protocol
    puts in its ranging frames.

- ``cf_setpoints`` (rate group at ``setpoint_rate_hz``, after the member's ``command``):
  ``driver.step(now_us)`` (sends the last command, or holds; lands on the driver's own failsafe).

A stale input of the member (``uwb``, ``velocity``, ``goal``) engages the node's failsafe: the
member commands hover and, after ``failsafe_land_s`` (2 s), lands the drone.

The command line that flies one member from a host with the official cflib is
:mod:`boards.crazyflie.cli` (``python -m boards.crazyflie member --help``).
"""
import math

from boards.crazyflie.board import CrazyflieConfigError, validate
from onboard.core.samples import NavState, RangeSample
from onboard.runtime.node import Node
from onboard.swarm.member import EAST, NORTH, SwarmMember, nav_to_body

RANGES_PER_BLOCK = 6            # ranging.state (2 bytes) + 6 floats: the 26-byte log packet
NAV_DOWN = 2                    # NED slot of pos_ned_m (height = -down)


def member_driver_config(peer_slots, member_rate_hz=10, overrides=None):
    """CrazyflieDriver settings of a member: one 24-byte state block (position, horizontal velocity,
    yaw) at the member's rate, the ranging slots ``peer_slots`` in blocks of six at the same rate,
    the battery once a second; ``overrides`` (a board config's values) on top."""
    period_ms = int(round(1000 / member_rate_hz))
    blocks = {"state": {"period_ms": period_ms,
                        "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
                                      "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.yaw"]},
              "power": {"period_ms": 1000, "variables": ["pm.vbat", "pm.state"]}}
    slots = sorted(set(peer_slots))
    for n in range(0, len(slots), RANGES_PER_BLOCK):
        blocks["ranging%d" % (n // RANGES_PER_BLOCK)] = {
            "period_ms": period_ms,
            "variables": ["ranging.state"] + ["ranging.distance%d" % j for j in slots[n:n + RANGES_PER_BLOCK]]}
    cfg = {"log_blocks": blocks}
    cfg.update(overrides or {})
    return validate(cfg)


class CrazyflieInputs:
    """Part: io group ``cf_inputs`` - the driver's samples into the member's entry points."""

    def __init__(self, driver, member, rate_hz, own_id, goal_ne_m=None):
        self.driver = driver
        self.member = member
        self.rate_hz = rate_hz
        self.own_id = own_id
        self.goal_ne_m = goal_ne_m
        self.nav_samples = 0
        self.range_samples = 0
        self.ignored_ranges = 0       # own slot, or a peer not listed
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("cf_inputs", self.rate_hz, self._poll, io=True)

    def _poll(self, now_us):
        m = self.member
        for s in self.driver.poll(now_us):
            if isinstance(s, NavState):
                self.nav_samples += 1
                yaw_rad = s.euler_rad[2]
                m.on_velocity(s.time_us, nav_to_body((s.vel_ned_mps[NORTH], s.vel_ned_mps[EAST]), yaw_rad), yaw_rad)
                if self.goal_ne_m is not None:
                    m.on_goal_range(s.time_us, math.hypot(self.goal_ne_m[NORTH] - s.pos_ned_m[NORTH],
                                                          self.goal_ne_m[EAST] - s.pos_ned_m[EAST]))
            elif isinstance(s, RangeSample):
                if s.peer_id == self.own_id or s.peer_id not in m.decision.peers:
                    self.ignored_ranges += 1
                    continue
                self.range_samples += 1
                m.on_range(s)
            if self._node.logging:
                self._node.log("/cf/sample", now_us, s)

    def report(self):
        return {"nav_samples": self.nav_samples, "range_samples": self.range_samples,
                "ignored_ranges": self.ignored_ranges}


class CrazyflieSetpoints:
    """Part: rate group ``cf_setpoints`` - ``driver.step(now_us)``; keeps the faults it reports."""

    def __init__(self, driver, rate_hz):
        self.driver = driver
        self.rate_hz = rate_hz
        self.faults = []

    def attach(self, node):
        node.every("cf_setpoints", self.rate_hz, self._step)

    def _step(self, now_us):
        self.faults.extend(self.driver.step(now_us))

    def report(self):
        return {"state": self.driver.state, "setpoints_sent": self.driver.stats["setpoints_sent"],
                "faults": [f.reason for f in self.faults]}


class CrazyflieMember:
    """The recipe: ``cf_inputs``, the member's ``inputs``/``decision``/``command``, ``cf_setpoints``."""

    def __init__(self, driver, policy, net, draws, own_id, peers, goal_ne_m=None, member_config=None,
                 agent_config=None, kernels=None, start_us=0, log=None):
        self.driver = driver
        self.node = Node("crazyflie_member_%d" % own_id, start_us=start_us, log=log)
        rate = int(round(driver.cfg["setpoint_rate_hz"]))
        self.member = SwarmMember(policy, net, draws, peers, driver, member_config, agent_config,
                                  kernels=kernels, start_us=start_us, node=self.node)
        step = self.member.cfg["step_rate_hz"]
        if rate != driver.cfg["setpoint_rate_hz"] or rate % step:
            raise CrazyflieConfigError("crazyflie.setpoint_rate_hz must be a whole multiple of the member's "
                                       "%d Hz, got %r" % (step, driver.cfg["setpoint_rate_hz"]))
        # cf_inputs is an io group (runs first each tick); cf_setpoints is declared after the member's
        # command, so the command of a tick goes out in the same tick
        self.inputs = self.node.add("cf_inputs", CrazyflieInputs(driver, self.member, rate, own_id, goal_ne_m))
        self.setpoints = self.node.add("cf_setpoints", CrazyflieSetpoints(driver, rate))

    def report(self):
        return self.node.report()
