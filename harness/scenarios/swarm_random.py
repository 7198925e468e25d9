"""Scenario `swarm-random`: pocket drones fly to random goals on UWB ranges, PF + learned estimator + DQN (uwb-pocket-drones VI-B).

See harness/swarm/scenario.py (shared body) and harness/swarm/README.md.
"""
from harness.swarm import scenario as _swarm

DESCRIPTION = "pocket-drone swarm, random goals: UWB ranges -> learned bearing + particle filter -> DQN"
DEFAULTS = _swarm.DEFAULTS
SETTING_RANGES = _swarm.SETTING_RANGES


def run(config, ctx):
    return _swarm.run("random", config, ctx)
