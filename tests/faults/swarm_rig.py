"""The swarm member app (onboard.swarm.member.SwarmMember) for the fault matrix.

The member decides onboard (its agent: particle filter + the bearing net + a policy that always
accelerates forward, so it keeps flying until a fault stops it) from its inputs: UWB ranges to one
neighbour and the goal (10 Hz), its own body velocity (50 Hz). Its output is a velocity set-point to the
Crazyflie driver; "driven" = the last set-point asks for a horizontal speed (hover = zero velocity is
the member's failsafe, followed by a landing). The driver here keeps what it is sent (as in
tests/swarm/test_swarm_member.py): the Crazyflie's own set-point timeouts are not part of this row.
"""
import os

import numpy as np

from onboard.core.samples import RangeSample
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm.bearing_net import BearingNet
from onboard.swarm.member import DEFAULTS, SwarmMember

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEARING = os.path.join(REPO, "models", "swarm", "bearing", "weights.npz")
TICK_US = 20000                  # velocity samples (50 Hz); the member's node ticks at its own rates
RANGE_PERIOD_US = 100000
CLOCK_JUMP_US = 5000000
_NET = []


class _Forward:
    """A policy that always picks action 0 (accelerate forward)."""

    def act(self, obs):
        return 0


class _Driver:
    def __init__(self):
        self.last = None
        self.cmds = 0
        self.landed_at = []

    def command(self, sp):
        self.last = sp
        self.cmds += 1
        return True

    def land(self, now_us):
        self.landed_at.append(now_us)
        return True


class SwarmRig:
    def __init__(self, tmp_path=None):
        if not _NET:
            _NET.append(BearingNet.load(BEARING))
        self.driver = _Driver()
        self.member = SwarmMember(_Forward(), _NET[0], NumpyDraws(np.random.default_rng(5)), [1], self.driver,
                                  None, {"mode": "pf", "n_particles": 50})
        self.records = []
        self.member.record(lambda topic, t, msg: self.records.append(topic))
        self.t_us = 0
        self.next_us = 0
        self.ticks = 0
        self.ranges_on = True
        self.velocity_on = True
        self.nan = False
        self.offset_us = 0
        self.refused = 0

    def close(self):
        pass

    def advance(self, until_us, watch=None):
        m = self.member
        while self.t_us < until_us:
            self.t_us += TICK_US
            t = self.t_us
            stamp = t + self.offset_us
            if self.velocity_on:
                m.on_velocity(stamp, (0.3, 0.0), 0.0)
            if t % RANGE_PERIOD_US == 0 and self.ranges_on:
                r = float("nan") if self.nan else 1.5
                m.on_range(RangeSample(stamp, 1, r, (0.0, 0.0)))
                m.on_goal_range(stamp, float("nan") if self.nan else 3.0)
            while self.next_us <= t:
                self.next_us = m.step(self.next_us)
                self.ticks += 1
            if watch is not None:
                watch(t)

    def driven(self):
        sp = self.driver.last
        if sp is None:
            return False
        v = sp.vel_ned_mps
        return abs(v[0]) > 0.0 or abs(v[1]) > 0.0

    def bound_us(self, fault):
        period = 1000000 // DEFAULTS["step_rate_hz"]
        if fault == "link loss":
            return DEFAULTS["uwb_timeout_us"] + period, "uwb_timeout_us + 1 decision period"
        if fault == "sensor stale":
            return DEFAULTS["velocity_timeout_us"] + period, "velocity_timeout_us + 1 decision period"
        if fault == "NaN/garbage input":
            return DEFAULTS["uwb_timeout_us"] + period, "uwb_timeout_us + 1 decision period"
        if fault == "clock jump":
            return (DEFAULTS["uwb_timeout_us"] + period + RANGE_PERIOD_US,
                    "uwb_timeout_us + 1 decision period + 1 range period")
        raise KeyError(fault)

    def inject(self, fault, t_us):
        if fault == "link loss":
            self.ranges_on = False
        elif fault == "sensor stale":
            self.velocity_on = False
        elif fault == "NaN/garbage input":
            self.nan = True
        elif fault == "clock jump":
            # the clock that stamps the samples steps 5 s ahead of the member's node, then the UWB link is lost
            self.offset_us += CLOCK_JUMP_US
            self.advance(t_us + RANGE_PERIOD_US)
            self.ranges_on = False

    def clear(self, fault, t_us):
        self.ranges_on = True
        self.velocity_on = True
        self.nan = False

    def log_complete(self):
        """The recording holds a /app/step per tick run and a /app/out/velocity per command sent."""
        if self.records.count("/app/step") != self.ticks:
            return False, "ticks"
        if self.records.count("/app/out/velocity") != self.driver.cmds:
            return False, "commands"
        return True, "ticks, commands"

    def extra(self, fault):
        rep = self.member.report()
        return "failsafe %d, landings %d, samples refused %d" % (
            rep["failsafe_engagements"], len(self.driver.landed_at), rep["inputs"]["rejected_samples"])
