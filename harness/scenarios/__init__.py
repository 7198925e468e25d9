"""Scenario registry: name -> module. Explicit on purpose (no import-time discovery).

A scenario module defines ``DESCRIPTION`` (one line), ``DEFAULTS`` (nested dict of
settings, units in the key names), ``SETTING_RANGES`` ({dotted setting: rule}, the
onboard.core.settings rules every setting follows; ``run`` checks them before anything
starts, ``python -m harness settings NAME`` lists them) and ``run(config, ctx) -> metrics
dict``, where ``ctx`` is a :class:`harness.scenarios.context.RunContext` (seed, random
streams, report folder, progress). Modules are imported only when their scenario runs.
"""
import importlib

SCENARIOS = {
    "waypoints": "harness.scenarios.waypoints",
    "grading": "harness.scenarios.grading.mission",
    "ins-eskf": "harness.scenarios.ins_eskf",
    "vesc-waypoints": "harness.scenarios.vesc_waypoints",
    "swarm-fixed": "harness.scenarios.swarm.swarm_fixed",
    "swarm-random": "harness.scenarios.swarm.swarm_random",
    "fil-avr": "harness.scenarios.fil_avr",
    "mp-board": "harness.scenarios.mp_board",
    "uwb-ranging": "harness.scenarios.uwb_ranging",
}


class UnknownScenario(KeyError):
    def __str__(self):
        return "unknown scenario %r (known: %s; see `python -m harness list`)" % (
            self.args[0], ", ".join(sorted(SCENARIOS)))


def load(name):
    if name not in SCENARIOS:
        raise UnknownScenario(name)
    return importlib.import_module(SCENARIOS[name])
