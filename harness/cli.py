"""Command line of the harness: ``python -m harness {run,list,...} --help``."""
import argparse
import importlib
import json
import os
import sys

from harness import scenarios
from harness.config import ConfigError, load_file, merge, parse_set
from onboard.deploy.build import DeployError

EXIT_BAD_INPUT = 2
EXIT_DEPLOY = 4

# Modules adding their own subcommands: each defines add_parser(subparsers), whose
# parser sets ``func`` (args -> exit code). One line per tool, listed explicitly.
COMMAND_MODULES = [
    "harness.sim.crazyflie.serve_cmd",
    "harness.scenarios.grading.sweep",
    "harness.replay",
    "harness.conformance",
    "harness.training.policy_cli",
]


def _resolve_scenario(arg):
    """A registered name, or a .toml/.json scenario file naming one (key ``scenario``)."""
    if arg.endswith((".toml", ".json")) or os.sep in arg:
        data = load_file(arg)
        name = data.pop("scenario", None)
        if not isinstance(name, str):
            raise ConfigError("%s: missing `scenario = \"<name>\"`" % arg)
        overrides = data.pop("config", {})
        if data:
            raise ConfigError("%s: unknown top-level keys %s (expected scenario, config)"
                              % (arg, ", ".join(sorted(data))))
        return name, overrides
    return arg, {}


def cmd_run(args):
    from harness.report import RunReport
    from harness.scenarios.context import RunContext

    name, overrides = _resolve_scenario(args.scenario)
    module = scenarios.load(name)
    config = merge(module.DEFAULTS, overrides)
    if args.config:
        config = merge(config, load_file(args.config))
    if args.set:
        config = merge(config, parse_set(args.set))
    out_dir = args.out or os.path.join("reports", "%s-seed%d" % (name, args.seed))
    report = RunReport(out_dir, name, args.seed, config)
    ctx = RunContext(args.seed, report=report, show_progress=not args.quiet)
    metrics = module.run(config, ctx)
    path = report.finish(metrics)
    if not args.quiet:
        print(json.dumps(metrics, indent=2, sort_keys=True))
    print("report: %s (metrics.json, %s, log.mcap)" % (out_dir, ", ".join(report.plots) or "no plots"))
    del path
    return 0 if metrics.get("success", True) else 3


def cmd_list(args):
    for name in sorted(scenarios.SCENARIOS):
        try:
            desc = scenarios.load(name).DESCRIPTION
        except ImportError as exc:
            desc = "(unavailable: %s)" % exc
        print("%-16s %s" % (name, desc))
    return 0


def setting_leaves(tree, prefix=""):
    """(dotted path, value) of every setting of a nested settings dict, in its order."""
    for key, value in tree.items():
        path = prefix + key
        if isinstance(value, dict) and value:
            yield from setting_leaves(value, path + ".")
        else:
            yield path, value


def cmd_settings(args):
    """Every setting of a scenario with its default and the values it takes (the scenario's SETTING_RANGES:
    the rules its run checks first; "-" where only the default's type is checked)."""
    module = scenarios.load(args.scenario)
    rules = getattr(module, "SETTING_RANGES", {})
    rows = [(path, value, rules[path][0] if path in rules else "-") for path, value in setting_leaves(module.DEFAULTS)]
    if args.json:
        print(json.dumps({path: {"default": value, "allowed": allowed} for path, value, allowed in rows}, indent=2))
        return 0
    width = max(len(path) for path, _v, _a in rows)
    for path, value, allowed in rows:
        default = json.dumps(value)
        if len(default) > 40:
            default = default[:37] + "..."
        print("%-*s  %-40s  %s" % (width, path, default, allowed))
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m harness",
                                     description="Simulation harness of the onboard runtime.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a scenario and write its report folder",
                       description="Run a scenario; writes DIR/metrics.json, PNG plots and DIR/log.mcap. "
                                   "Exit 0 on mission success, 3 on mission failure, 2 on bad input, "
                                   "4 when deploying to a real board fails (mp-board's port: no board there, "
                                   "not responding, wrong MicroPython, copy failed).")
    p.add_argument("scenario", help="scenario name (see `list`) or a .toml/.json scenario file")
    p.add_argument("--seed", type=int, default=1, help="run seed; identical seeds give identical metrics "
                                                       "(default: 1)")
    p.add_argument("--out", metavar="DIR", help="report folder (default: reports/<scenario>-seed<N>)")
    p.add_argument("--config", metavar="FILE", help="settings overrides (.toml or .json)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one setting, e.g. --set vehicle.max_speed_mps=0.5 (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no metrics echo")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="list scenarios")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("settings", help="a scenario's settings: defaults and allowed values",
                       description="Print every setting of a scenario (the KEY of --set KEY=VALUE) with its "
                                   "default and the values it takes; a run checks them before anything starts.")
    p.add_argument("scenario", help="scenario name (see `list`)")
    p.add_argument("--json", action="store_true", help="as JSON: {setting: {default, allowed}}")
    p.set_defaults(func=cmd_settings)

    for mod_name in COMMAND_MODULES:
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, scenarios.UnknownScenario) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    except DeployError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_DEPLOY
