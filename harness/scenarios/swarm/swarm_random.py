"""Scenario `swarm-random`: pocket drones fly to random goals on UWB ranges, PF + learned estimator + DQN (uwb-pocket-drones VI-B).

See harness/scenarios/swarm/study.py (shared body) and harness/scenarios/swarm/README.md.
"""
from harness.scenarios.swarm import study as _swarm

DESCRIPTION = "pocket-drone swarm, random goals: UWB ranges -> learned bearing + particle filter -> DQN"
DEFAULTS = _swarm.DEFAULTS
SETTING_RANGES = _swarm.SETTING_RANGES
REDUCED = _swarm.REDUCED


def check_settings(config):
    """What relates settings: the flights as flown, each replayed estimator configuration."""
    _swarm.check_config(config, "random")


def run(config, ctx):
    return _swarm.run("random", config, ctx)
