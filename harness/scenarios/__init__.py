"""Scenario registry (name -> module, explicit on purpose) and the contract every scenario follows.

A scenario module defines:

- ``DESCRIPTION``: one line (``python -m harness list``);
- ``DEFAULTS``: nested dict of settings, units in the key names;
- ``SETTING_RANGES``: ``{dotted setting: rule}``, the onboard.core.settings rules every setting follows
  (``python -m harness settings NAME`` lists them);
- ``REDUCED``: overrides of ``DEFAULTS`` for a run of a few seconds (``run --reduced``; the
  identical-seed test runs every scenario this way);
- optionally ``check_settings(config)``: raises :class:`harness.config.ConfigError` (one line) for
  settings that are only wrong together (a warm-up longer than the run, rates that do not divide);
- ``run(config, ctx) -> metrics``: ``config`` as :func:`prepare` returns it (merged and checked: ``run``
  checks nothing itself), ``ctx`` a :class:`harness.scenarios.context.RunContext`.

``metrics`` (``metrics.json``) are outcomes only: JSON numbers, strings, booleans, lists and tables, with a
boolean ``success`` (the CLI exits 0 or 3 on it) and no wall-clock figure (identical seeds give identical
files); wall-clock figures go to ``run.json`` through ``ctx.timing(name=value, ...)``.
:func:`check_metrics` enforces this. Modules are imported only when their scenario is used.
"""
import importlib
import json
import re

from harness.config import ConfigError, check_ranges, merge

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
    "level-grid": "harness.scenarios.leveling.level_grid",
    "fil-leveler": "harness.scenarios.leveling.fil_leveler",
    "level-hill": "harness.scenarios.leveling.level_hill",
    "sandbox-datagen": "harness.scenarios.leveling.sandbox_datagen",
    "alexi-eval": "harness.scenarios.leveling.alexi_eval",
    "alexi-sim": "harness.scenarios.leveling.alexi_sim",
    "boat-hil-lag": "harness.scenarios.boat.hil_lag",
    "boat-ekf": "harness.scenarios.boat.boat_ekf",
    "boat-arbiters": "harness.scenarios.boat.boat_arbiters",
    "boat-model-fit": "harness.scenarios.boat.model_fit",
    "boat-pinger": "harness.scenarios.boat.boat_pinger",
    "robotx-course": "harness.scenarios.boat.robotx_course",
    "boat-sim-gap": "harness.scenarios.boat.boat_sim_gap",
    "soil-blind-map": "harness.scenarios.soil.soil_blind_map",
    "soil-homogeneous": "harness.scenarios.soil.soil_homogeneous",
    "soil-sweep": "harness.scenarios.soil.soil_sweep",
    "soil-strip": "harness.scenarios.soil.soil_strip",
    "soil-ood": "harness.scenarios.soil.soil_ood",
}

# metric names that are wall-clock (or CPU-clock) figures: wall_time_s, setup_wall_s, link_wall_s_per_tick,
# sim_to_wall, sim_seconds_per_wall_second, elapsed_s, sim_seconds_per_cpu_second ... (not wall_height_m)
WALL_CLOCK_KEY = re.compile(r"(^|_)(wall|cpu)(_time|_clock|_s|_ms|_us|_per|$)|(per|to)_(wall|cpu)|(^|_)elapsed")


class UnknownScenario(KeyError):
    def __str__(self):
        return "unknown scenario %r (known: %s; see `python -m harness list`)" % (
            self.args[0], ", ".join(sorted(SCENARIOS)))


class ContractError(Exception):
    """A scenario broke the contract above (a bug in the scenario, not in the user's input); one line."""


def load(name):
    """The module of scenario ``name`` (:class:`UnknownScenario` for a name not registered)."""
    if name not in SCENARIOS:
        raise UnknownScenario(name)
    return importlib.import_module(SCENARIOS[name])


def prepare(name, *layers, reduced=False):
    """``(module, config)`` of scenario ``name``: its ``DEFAULTS``, then its ``REDUCED`` overrides when
    ``reduced``, then each of ``layers`` (dicts of overrides: a scenario file, a settings file, ``--set``)
    merged in order, and every rule of ``SETTING_RANGES`` and ``check_settings`` checked. Raises
    :class:`harness.config.ConfigError` (one line naming the setting) before anything runs."""
    module = load(name)
    config = module.DEFAULTS
    if reduced:
        if not isinstance(getattr(module, "REDUCED", None), dict):
            raise ContractError("scenario %s defines no REDUCED settings (a run of a few seconds)" % name)
        layers = (module.REDUCED,) + layers
    for layer in layers:
        config = merge(config, layer or {}, name)
    if config is module.DEFAULTS:
        config = merge(config, {})          # a copy: a run never changes the module's DEFAULTS
    check_ranges(config, module.SETTING_RANGES)
    check = getattr(module, "check_settings", None)
    if check is not None:
        check(config)
    return module, config


def wall_clock_keys(metrics, prefix=""):
    """Dotted paths of every key in ``metrics`` (tables inside tables and lists too) that names a
    wall-clock or CPU-clock figure (``WALL_CLOCK_KEY``)."""
    found = []
    if isinstance(metrics, dict):
        for key, value in metrics.items():
            path = prefix + str(key)
            if WALL_CLOCK_KEY.search(str(key)):
                found.append(path)
            found.extend(wall_clock_keys(value, path + "."))
    elif isinstance(metrics, (list, tuple)):
        for i, value in enumerate(metrics):
            found.extend(wall_clock_keys(value, "%s%d." % (prefix, i) if prefix else "%d." % i))
    return found


def check_metrics(name, metrics):
    """Raise :class:`ContractError` unless ``metrics`` is a table with a boolean ``success``, no
    wall-clock figure and only finite JSON values."""
    where = "scenario %s returned metrics" % name
    if not isinstance(metrics, dict):
        raise ContractError("%s of type %s, not a table" % (where, type(metrics).__name__))
    if not isinstance(metrics.get("success"), bool):
        raise ContractError("%s without a boolean 'success' (got %r)" % (where, metrics.get("success")))
    clock = wall_clock_keys(metrics)
    if clock:
        raise ContractError("%s with wall-clock figures %s: report them with ctx.timing(...) (run.json)"
                            % (where, ", ".join(clock)))
    try:
        json.dumps(metrics, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ContractError("%s that are not finite JSON: %s" % (where, exc))
