"""What every board app run as a Linux service shares: its settings file, its MCAP log, the real-time loop
that SIGTERM/SIGINT end cleanly, the exit statuses, the systemd unit and the command line.

A board's ``service`` module (``boards.rpi.service``, ``boards.wamv.service``) keeps what is its own: its
settings and their ranges, how it opens its devices and builds its app, and what "safe" means when it stops
(motors or outboards released). It calls :func:`service_main` for its command line, reads its file with
:func:`read_settings`, opens its log with :func:`open_log` and runs its app with :func:`run_until_stopped`
inside a :class:`StopSignals` block.

Exit statuses (the same for every board): 0 stopped after ``--duration-s``, 130 / 143 stopped by SIGINT /
SIGTERM (128 + the signal's number, as a shell reports it; the unit counts both as a clean stop), 2 a malformed
config (one line naming the setting), 3 a device, port or the log cannot be opened.
"""
import copy
import json
import os
import signal
import sys
import time
import tomllib

from onboard.cli import OneLineParser
from onboard.core.settings import POSITIVE, ConfigError, argument, object_without_repeats

EXIT_CONFIG = 2
EXIT_START = 3
CHUNK_US = 50000           # the loop looks at the stop flag (and the duration) at least this often [us]


class ServiceStartError(RuntimeError):
    """A device or file the service needs cannot be opened (exit status 3; nothing was commanded, whatever
    had opened is closed again)."""


def read_settings(path):
    """The table in a ``.toml`` (else JSON) settings file; ConfigError (one line) when it cannot be read or
    parsed. The caller merges it over its defaults and checks the values."""
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as fh:
                return tomllib.load(fh)
        with open(path) as fh:
            data = json.load(fh, object_pairs_hook=object_without_repeats)
    except (OSError, ValueError) as exc:
        raise ConfigError("cannot read config %s: %s" % (path, exc))
    if not isinstance(data, dict):
        raise ConfigError("config %s must be a table of settings, got %.60s" % (path, json.dumps(data)))
    return data


def load_config(path, default_config, merged_config):
    """A copy of ``default_config`` when ``path`` is None, else ``merged_config(read_settings(path))``."""
    if path is None:
        return copy.deepcopy(default_config)
    return merged_config(read_settings(path))


def open_log(log_file, log_dir, stem, library):
    """(McapLog, its path): ``log_file``, or ``<log_dir>/<stem>-<local time>.mcap`` when it is None (the folder
    is made). ServiceStartError when it cannot be opened."""
    from onboard.runtime.mcap_log import McapLog
    try:
        if log_file is None:
            os.makedirs(log_dir, exist_ok=True)
            log_file = os.path.join(log_dir, time.strftime(stem + "-%Y%m%d-%H%M%S.mcap"))
        return McapLog(log_file, library=library), log_file
    except OSError as exc:
        raise ServiceStartError("cannot open the log %s: %s" % (log_file or log_dir, exc.strerror or exc))


class StopSignals:
    """Within the block SIGTERM (systemd stop) and SIGINT (Ctrl-C) only set ``signum``, so the loop leaves at
    its next chunk and the service stops safely; the previous handlers come back on exit."""

    def __init__(self):
        self.signum = None
        self._old = {}

    def _on_signal(self, signum, _frame):
        self.signum = signum

    def __enter__(self):
        self._old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        return self

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        self._old = {}
        return False

    @property
    def reason(self):
        """The signal's name ("SIGTERM"), or "duration" when none came."""
        return signal.Signals(self.signum).name if self.signum is not None else "duration"

    def exit_status(self):
        """128 + the signal's number (130 SIGINT, 143 SIGTERM), or 0 when none came."""
        return 128 + self.signum if self.signum is not None else 0


def run_until_stopped(app, clock, stop, duration_s=None, chunk_us=CHUNK_US):
    """Run ``app`` (``app.run(clock, until_us)``) on ``clock`` in chunks of ``chunk_us`` until ``stop`` (a
    StopSignals) has a signal or ``duration_s`` [s] from now has passed (None or 0: no end); the last chunk
    ends at that time."""
    end_us = None if not duration_s else clock.now_us() + int(duration_s * 1e6)
    while stop.signum is None:
        now = clock.now_us()
        if end_us is not None and now >= end_us:
            break
        app.run(clock, now + chunk_us if end_us is None else min(now + chunk_us, end_us))


def run_all(steps):
    """Call each of ``steps`` (callables taking no argument) in order, the later ones also when an earlier one
    raises (a service's shutdown: motors released, log closed, ports closed, whichever of them fails); then
    raise the first exception, if any."""
    first = None
    for step in steps:
        try:
            step()
        except BaseException as exc:     # noqa: B036 - re-raised below once every step has run
            if first is None:
                first = exc
    if first is not None:
        raise first


UNIT_TEMPLATE = """[Unit]
Description=Onboard runtime: {description}
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User={user}
SupplementaryGroups={groups}
WorkingDirectory={workdir}
Environment=PYTHONUNBUFFERED=1
ExecStart={python} -m {package} run --config {config}
# SIGTERM: the runtime {on_stop} and closes its MCAP log
KillSignal=SIGTERM
SuccessExitStatus=130 143
KillMode=mixed
TimeoutStopSec=5
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


def unit_text(description, package, groups, on_stop, python, workdir, config, user):
    """The board's systemd unit: ``description`` (what runs), ``package`` (``boards.NAME``, run with
    ``-m``), ``groups`` (its supplementary groups, space-separated), ``on_stop`` (what SIGTERM makes safe);
    ConfigError when a path is not absolute (systemd needs absolute paths) or holds a character the unit
    cannot carry. systemd expands ``%`` specifiers in every value and ``$`` variables in ExecStart's arguments:
    the unit writes them as ``%%`` and ``$$``, so the service gets the paths as given."""
    # a control character (a newline: another directive) or, in ExecStart, a space, a quote or a backslash
    # (systemd's quoting and escapes) would break the unit; systemd strips whitespace at either end of a value;
    # an empty User= runs the service as root
    for name, value, spaces in (("python", python, False), ("workdir", workdir, True), ("config", config, False)):
        if not os.path.isabs(value) or _breaks_unit(value, spaces):
            raise ConfigError("%s must be an absolute path without %scontrol characters, got %r"
                              % (name, "" if spaces else "spaces or ", value))
        if value != value.strip():
            raise ConfigError("%s must not end in whitespace (systemd strips it), got %r" % (name, value))
        if not spaces and any(c in "\"'\\" for c in value):
            raise ConfigError("%s must be a path without quotes or backslashes (systemd's quoting in ExecStart), "
                              "got %r" % (name, value))
    if not user or _breaks_unit(user, False):
        raise ConfigError("user must be a user name (no spaces or control characters), got %r" % (user,))
    return UNIT_TEMPLATE.format(description=_specifiers(description), package=package, groups=groups,
                                on_stop=on_stop, python=_specifiers(python), workdir=_specifiers(workdir),
                                config=_specifiers(config).replace("$", "$$"), user=_specifiers(user))


def _specifiers(value):
    """``value`` with systemd's specifier character ``%`` written as ``%%`` (a literal percent sign)."""
    return value.replace("%", "%%")


def _breaks_unit(value, spaces_allowed):
    """Whether ``value`` holds a control character (or, unless ``spaces_allowed``, whitespace)."""
    return any(ord(c) < 32 or ord(c) == 127 or (c.isspace() and not spaces_allowed) for c in value)


def _write_unit(text, output):
    if not output:
        sys.stdout.write(text)
        return
    try:
        with open(output, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise ConfigError("cannot write the unit file %s: %s" % (output, exc.strerror or exc))


def service_main(argv, prog, description, name, default_config, load, run, unit, default_user, devices_line):
    """The command line every board service has: ``run`` (until SIGTERM/SIGINT or ``--duration-s``),
    ``service-unit`` (the systemd unit) and ``default-config`` (the settings as JSON).

    ``name``: the service's short name ("rpi", "wamv": log file stem ``<name>-<time>.mcap``, unit
    ``/etc/systemd/system/onboard-<name>.service``, config ``/etc/onboard/<name>.toml``);
    ``load(path) -> cfg``; ``run(cfg, log_file, duration_s) -> exit status``; ``unit(python, workdir, config,
    user) -> text``; ``devices_line``: what exit status 3 covers. Returns the exit status.
    """
    parser = OneLineParser(prog=prog, description=description,
                           epilog="exit status: 0 stopped after --duration-s, 130/143 stopped by "
                                  "SIGINT/SIGTERM (stopped safely, log closed), 2 malformed config "
                                  "(one line naming the setting), 3 %s." % devices_line)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the runtime until SIGTERM/SIGINT")
    p.add_argument("--config", help=".toml or .json settings (see `default-config`)")
    p.add_argument("--log-file", help="MCAP file (default: <log.dir>/%s-<time>.mcap)" % name)
    p.add_argument("--duration-s", type=argument(POSITIVE), default=None,
                   help="stop after this many seconds (default: run until SIGTERM/SIGINT)")
    p = sub.add_parser("service-unit", help="print the systemd unit file")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--workdir", default=os.getcwd())
    p.add_argument("--config", default="/etc/onboard/%s.toml" % name)
    p.add_argument("--user", default=default_user)
    p.add_argument("--output", help="write the unit to this file instead of stdout (e.g. "
                                    "/etc/systemd/system/onboard-%s.service)" % name)
    sub.add_parser("default-config", help="print the default settings (JSON)")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return run(load(args.config), args.log_file, args.duration_s)
        if args.command == "service-unit":
            _write_unit(unit(args.python, args.workdir, args.config, args.user), args.output)
            return 0
        print(json.dumps(default_config, indent=2))
        return 0
    except ConfigError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_CONFIG
    except ServiceStartError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_START
