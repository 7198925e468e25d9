"""Command line of the harness: ``python -m harness {run,list,settings,...} --help`` (also the ``harness``
console script of the installed project)."""
import argparse
import importlib
import json
import os
import sys

from harness import scenarios
from harness.config import ConfigError, load_file, non_negative_int, parse_set
from harness.interrupts import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, how_it_ended, signals_raise
from harness.progress import close_all
from onboard.cli import EXIT_BAD_INPUT, OneLineParser
from onboard.deploy.build import DeployError
EXIT_DEPLOY = 4
EXIT_SYSTEM = 1                 # the system refused (a disk full, a file that cannot be written): one line
EXIT_BROKEN_PIPE = 141          # stdout's reader went away (128 + SIGPIPE), as a shell reports it

# Modules adding their own subcommands: each defines add_parser(subparsers), whose
# parser sets ``func`` (args -> exit code). One line per tool, listed explicitly.
COMMAND_MODULES = [
    "harness.sim.crazyflie.serve_cmd",
    "harness.sim.virtual_board_cmd",
    "harness.sim.vesc_cmd",
    "harness.sim.avr_cmd",
    "harness.scenarios.grading.sweep",
    "harness.replay",
    "harness.conformance",
    "harness.training.policy_cli",
    "harness.training.boat_fit.fit_cli",
    "harness.pinger_cli",
    "harness.sweep_cli",
    "harness.scenarios.leveling.level_sweep",
]

RUN_EXAMPLES = """examples:
  python -m harness run waypoints --reduced                   # a quick run: a few seconds
  python -m harness run waypoints --seed 3 --out reports/wp3
  python -m harness run waypoints --set aiding.pos_sigma_m=0.2
  python -m harness run uwb-ranging --set "n_nodes=[2, 4]"
  python -m harness settings waypoints                        # every KEY of --set: default, range
"""


HARNESS_EXAMPLES = """examples:
  python -m harness list                                # the scenarios, one line each
  python -m harness run waypoints                       # the default run: within a minute
  python -m harness run waypoints --reduced             # a quick run: a few seconds
  python -m harness settings waypoints                  # its settings: defaults and ranges
  python -m harness run --help                          # seeds, settings, the report folder
"""


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


def open_report(out_dir, name, seed, config):
    """The run's report folder (created with its parents); ConfigError (one line) when it cannot be."""
    from harness.report import RunReport
    try:
        return RunReport(out_dir, name, seed, config)
    except OSError as exc:
        raise ConfigError("cannot write the report folder %s: %s" % (out_dir, exc.strerror or exc))


def cmd_run(args):
    from harness.scenarios.context import RunContext

    name, file_overrides = _resolve_scenario(args.scenario)
    layers = [file_overrides]
    if args.config:
        layers.append(load_file(args.config))
    if args.set:
        layers.append(parse_set(args.set))
    module, config = scenarios.prepare(name, *layers, reduced=args.reduced)
    out_dir = args.out or os.path.join("reports", "%s-seed%d" % (name, args.seed))
    report = open_report(out_dir, name, args.seed, config)
    ctx = RunContext(args.seed, report=report, show_progress=not args.quiet)
    try:
        metrics = module.run(config, ctx)
        scenarios.check_metrics(name, metrics)
        report.finish(metrics)          # cut short inside (Ctrl-C while the log is finished): abandoned too
    except BaseException as exc:
        report.abandon(how_it_ended(exc))
        raise
    if not args.quiet:
        print(json.dumps(metrics, indent=2, sort_keys=True))
    print("report: %s (metrics.json, %s, log.mcap)" % (out_dir, ", ".join(report.plots) or "no plots"))
    return 0 if metrics["success"] else 3


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
    # rules keyed by a tuple of paths relate settings to each other (onboard.core.settings.checked)
    related = [(list(paths), rule[0]) for paths, rule in rules.items() if isinstance(paths, tuple)]
    if args.json:
        print(json.dumps({"settings": {path: {"default": value, "allowed": allowed} for path, value, allowed in rows},
                          "related": [{"settings": paths, "rule": text} for paths, text in related]}, indent=2))
        return 0
    width = max(len(path) for path, _v, _a in rows)
    for path, value, allowed in rows:
        default = json.dumps(value)
        if len(default) > 40:
            default = default[:37] + "..."
        print("%-*s  %-40s  %s" % (width, path, default, allowed))
    if related:
        print("\nrelated settings (checked together):")
        for paths, text in related:
            print("  %s: %s" % (", ".join(paths), text))
    return 0


def build_parser():
    parser = OneLineParser(prog="python -m harness", description="Simulation harness of the onboard runtime.",
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=HARNESS_EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a scenario and write its report folder",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=RUN_EXAMPLES,
                       description="Run a scenario; writes DIR/metrics.json (outcomes), DIR/run.json (settings,\n"
                                   "timing), PNG plots and DIR/log.mcap. Settings: the scenario's defaults, then\n"
                                   "--reduced, the scenario file, --config and --set, all checked before it starts.\n"
                                   "Exit 0 on mission success, 3 on mission failure, 2 on bad input, 4 when\n"
                                   "deploying to a real board fails (mp-board's port: no board there, not\n"
                                   "responding, wrong MicroPython, copy failed), 1 when the system refuses\n"
                                   "(a disk full, a file that cannot be written).")
    p.add_argument("scenario", help="scenario name (see `list`) or a .toml/.json scenario file")
    p.add_argument("--seed", type=non_negative_int, default=1,
                   help="run seed, an integer >= 0; identical seeds give identical metrics.json (default: 1)")
    p.add_argument("--out", metavar="DIR", help="report folder (default: reports/<scenario>-seed<N>)")
    p.add_argument("--config", metavar="FILE", help="settings overrides (.toml or .json)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one setting (repeatable; VALUE is JSON, else a string); `settings SCENARIO` "
                        "lists every KEY")
    p.add_argument("--reduced", action="store_true",
                   help="a quick run of a few seconds: the scenario's REDUCED settings under --config and --set")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no metrics echo")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="list scenarios")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("settings", help="a scenario's settings: defaults and allowed values",
                       description="Print every setting of a scenario (the KEY of --set KEY=VALUE) with its "
                                   "default and the values it takes; a run checks them before anything starts.")
    p.add_argument("scenario", help="scenario name (see `list`)")
    p.add_argument("--json", action="store_true", help="as JSON: {settings: {KEY: {default, allowed}}, related: "
                                                            "[{settings: [KEY, ...], rule}]}")
    p.set_defaults(func=cmd_settings)

    for mod_name in COMMAND_MODULES:
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with signals_raise():
            code = _run_command(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # stdout's reader (`| head`) went away: exit quietly; point stdout at devnull so that the
        # interpreter's final flush does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run_command(args):
    try:
        return args.func(args)
    except Terminated:
        close_all()
        print("terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except (ConfigError, scenarios.UnknownScenario) as exc:
        close_all()                   # a bar of a run cut short by the error: the line starts clean
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    except scenarios.ContractError as exc:
        close_all()
        print("error (in the scenario, not your input): %s" % exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    except DeployError as exc:
        close_all()
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_DEPLOY
    except KeyboardInterrupt:
        close_all()
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise                         # stdout's reader went away: main() exits quietly
    except OSError as exc:
        close_all()
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_SYSTEM
