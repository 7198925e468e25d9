"""The WAM-V boat app as a service on the boat's Linux computer: config, real-time loop, MCAP log, clean
SIGTERM shutdown (what every board service shares is ``boards.linux_service``).

``python -m boards.wamv run --config /etc/onboard/wamv.toml`` builds the boat app (``boards.wamv.app``:
boat EKF, heading/speed controller, watchdog) from the config and the devices it names, runs it on the
computer's monotonic clock, logs to MCAP, and on SIGTERM/SIGINT (systemd stop, Ctrl-C) leaves the loop,
releases both outboards (SetCurrent 0 to each VESC), logs ``/shutdown`` and closes the MCAP file.

Devices (serial ports, opened with pyserial):

- ``gnss.port``: a GNSS receiver sending NMEA 0183 GGA (``onboard.comms.nmea``, the app's ``gnss`` io part);
- ``heading.port``: a GNSS compass or INS sending NMEA HDT (or THS) and ROT (``boards.wamv.heading_nmea``):
  HDT/THS feed the app's ``heading`` entry, ROT its ``yaw_rate`` entry (the watched ``imu`` input, with
  ``app.imu_timeout_us`` sized for the ROT rate). This is the heading / yaw-rate source the service supports
  on Linux; a separate I2C/SPI gyro is not wired here;
- ``outboards.left_port`` / ``right_port``: the two outboards' VESC controllers (VESC UART protocol,
  ``onboard.vessel.outboards.VescOutboards``). A link that drops later is reconnected by the driver.

Every port must exist when the service starts (else exit 3, one line, nothing commanded). A GNSS or heading
port that vanishes later (the device unplugged: its read raises) does not end the service: its input goes
stale, so the app's failsafe stops both outboards (SetCurrent 0) while it is missing, and the port is reopened
every ``gnss.reconnect_period_us`` / ``heading.reconnect_period_us`` until it is back; then the boat goes on
(``boards.wamv.serial_input``, the outboards' reconnect mechanism). Each loss and each reconnection is printed
(``onboard-wamv: gnss port lost: ...``), logged on ``/wamv/port`` and counted in the app's report (parts
``gnss_port``, ``heading_port``: ``disconnects``, ``reconnects``, ``open_failures``). The mission is
``mission.plan``: heading/speed legs ``[[duration_s, heading_deg, speed_mps], ...]``, repeated (what the app
supports). With ``log.record = true`` (the default) the app records itself at its boundary into the same log
(``/app/...``: settings, every GNSS fix, heading and yaw-rate sample, outboard telemetry, tick, thrust and
command; ``boards.wamv.app.WamvApp.record``), the topics ``python -m harness boat-fit LOG.mcap`` reads.

Desk runs against the simulated WAM-V: port names ``bench-sim:gnss``, ``bench-sim:heading``,
``bench-sim:left``, ``bench-sim:right`` are the harness's ptys, resolved through ``port_paths``, which only
``python -m harness.sim.wamv_bench run --config ...`` passes (boards never import harness).

``python -m boards.wamv service-unit`` prints the systemd unit; ``default-config`` the default settings.
"""
import json
import math
import os
import sys

from boards.linux_service import (ServiceStartError, StopSignals, open_log, run_all, run_until_stopped,
                                  service_main, unit_text)
from boards.linux_service import load_config as _load_config
from boards.wamv import board as B
from boards.wamv.app import DEFAULTS as APP_DEFAULTS
from onboard.core.settings import (BOOLEAN, POSITIVE, TEXT, ConfigError, checked, int_at_least, is_number, one_of,
                                   within)

BENCH_SIM_PREFIX = "bench-sim:"

DEFAULT_CONFIG = {
    "gnss": {"port": B.GNSS_PORT, "baud": B.GNSS_BAUD, "reconnect_period_us": B.INPUT_RECONNECT_PERIOD_US},
    "heading": {"port": B.HEADING_PORT, "baud": B.HEADING_BAUD, "poll_hz": B.HEADING_POLL_HZ,
                "reconnect_period_us": B.INPUT_RECONNECT_PERIOD_US,
                "heading_sigma_deg": B.HEADING_SIGMA_DEG, "rot_sigma_dps": B.ROT_SIGMA_DPS},
    "outboards": {"left_port": B.OUTBOARD_PORTS["left"], "right_port": B.OUTBOARD_PORTS["right"],
                  "baud": B.OUTBOARD_BAUD, "max_erpm": B.MAX_ERPM, "direction_left": 1, "direction_right": 1},
    "mission": {"plan": [list(leg) for leg in APP_DEFAULTS["plan"]]},
    "app": {"origin_deg": [B.ORIGIN_LAT_DEG, B.ORIGIN_LON_DEG], "gnss_sigma_m": B.GNSS_SIGMA_M,
            "gnss_timeout_us": B.GNSS_TIMEOUT_US, "imu_timeout_us": B.ROT_TIMEOUT_US,
            "heading_timeout_us": B.HEADING_TIMEOUT_US, "outboard_timeout_us": B.OUTBOARD_TIMEOUT_US},
    "log": {"dir": "/var/log/onboard-wamv", "record": True},
}


def _is_plan(v):
    """A non-empty list of [duration_s, heading_deg, speed_mps] legs, each at least 1 us long (the app counts
    the plan in whole microseconds: a shorter leg would round to none) and speed_mps in [0, 5]."""
    return (isinstance(v, list) and len(v) > 0
            and all(isinstance(leg, list) and len(leg) == 3 and all(is_number(x) for x in leg)
                    and leg[0] >= 1e-6 and 0 <= leg[2] <= 5.0 for leg in v))


TIMEOUT_US = int_at_least(10000)
# every setting's value range (onboard.core.settings rules), checked before a port or the log opens
SETTING_RANGES = {
    "gnss.port": TEXT, "gnss.baud": int_at_least(1), "gnss.reconnect_period_us": TIMEOUT_US,
    "heading.port": TEXT, "heading.baud": int_at_least(1), "heading.reconnect_period_us": TIMEOUT_US,
    # a rate the app's 100 Hz base tick divides into (the node's rate groups)
    "heading.poll_hz": one_of(10, 20, 25, 50, 100),
    "heading.heading_sigma_deg": POSITIVE, "heading.rot_sigma_dps": POSITIVE,
    "outboards.left_port": TEXT, "outboards.right_port": TEXT, "outboards.baud": int_at_least(1),
    "outboards.max_erpm": POSITIVE, "outboards.direction_left": one_of(1, -1),
    "outboards.direction_right": one_of(1, -1),
    "mission.plan": ("a non-empty list of [duration_s >= 1e-06, heading_deg, speed_mps in [0, 5]] legs",
                     _is_plan),
    "app.origin_deg": ("[latitude_deg in [-90, 90], longitude_deg in [-180, 180]]",
                       lambda v: isinstance(v, list) and len(v) == 2 and within(-90, 90)[1](v[0])
                       and within(-180, 180)[1](v[1])),
    "app.gnss_sigma_m": POSITIVE, "app.gnss_timeout_us": TIMEOUT_US, "app.imu_timeout_us": TIMEOUT_US,
    "app.heading_timeout_us": TIMEOUT_US, "app.outboard_timeout_us": TIMEOUT_US,
    "log.dir": TEXT, "log.record": BOOLEAN,
}
PORT_SETTINGS = (("gnss", "port"), ("heading", "port"), ("outboards", "left_port"), ("outboards", "right_port"))


def merged_config(overrides):
    """DEFAULT_CONFIG updated from ``overrides`` (tables merged key by key; unknown keys, wrong types and
    values outside SETTING_RANGES raise ConfigError with one line)."""
    return checked(DEFAULT_CONFIG, SETTING_RANGES, overrides, "wamv")


def load_config(path):
    """The settings in ``path`` (.toml or .json) over DEFAULT_CONFIG, checked; the defaults when None."""
    return _load_config(path, DEFAULT_CONFIG, merged_config)


def resolved_ports(cfg, port_paths=None):
    """{setting name: path} of the four serial ports; ``bench-sim:...`` names through ``port_paths`` (the
    harness's ptys), ConfigError when a bench name has none (``python -m boards.wamv`` runs real ports)."""
    out = {}
    for block, key in PORT_SETTINGS:
        name = cfg[block][key]
        if name.startswith(BENCH_SIM_PREFIX):
            if name not in (port_paths or {}):
                raise ConfigError("wamv setting %s.%s %r is the harness's simulated boat: run "
                                  "`python -m harness.sim.wamv_bench run` for desk runs" % (block, key, name))
            name = port_paths[name]
        out["%s.%s" % (block, key)] = name
    return out


def check_ports_exist(ports):
    """ServiceStartError naming the first port that is not there (USB adapter unplugged, wrong name)."""
    for setting, path in ports.items():
        if not os.path.exists(path):
            raise ServiceStartError("serial port %s (%s) does not exist" % (path, setting))


def build_app(cfg, ports, log=None, start_us=0, on_port_change=None):
    """(app, outboards, closers) from a config dict and the resolved ports; the GNSS and heading ports are
    opened here (ServiceStartError when one cannot be), the outboards' links at the app's first control tick.
    The GNSS and heading ports are ``boards.wamv.serial_input.SerialInput`` s (parts ``gnss_port``,
    ``heading_port``): reopened when they vanish, each loss and reconnection handed to
    ``on_port_change(now_us, name, event, error)`` (None: counted only)."""
    from boards.wamv.app import WamvApp
    from boards.wamv.heading_nmea import HeadingNmea
    from boards.wamv.serial_input import SerialInput
    from onboard.comms.transport import SerialTransport
    from onboard.vessel.outboards import VescOutboards

    closers = []
    opened = {}
    rates = {"gnss": B.GNSS_POLL_HZ, "heading": cfg["heading"]["poll_hz"]}
    try:
        for block in ("gnss", "heading"):
            port = SerialInput(block, lambda path=ports[block + ".port"], baud=cfg[block]["baud"]:
                               SerialTransport(path, baud).open(), rates[block], cfg[block]["reconnect_period_us"],
                               on_port_change)
            if not port.connect(start_us):
                raise ServiceStartError("cannot open the %s port: %s" % (block, port.last_error))
            opened[block] = port
            closers.append(port.close)
    except BaseException:
        for close in closers:
            close()
        raise
    ocfg = cfg["outboards"]
    links = {side: (lambda path=ports["outboards.%s_port" % side]: SerialTransport(path, ocfg["baud"]).open())
             for side in ("left", "right")}
    outboards = VescOutboards(links, {"max_erpm": ocfg["max_erpm"], "direction_left": ocfg["direction_left"],
                                      "direction_right": ocfg["direction_right"]})
    app_cfg = dict(cfg["app"], plan=cfg["mission"]["plan"])
    app = WamvApp(outboards, opened["gnss"], app_cfg, log=log, start_us=start_us)
    hcfg = cfg["heading"]
    app.node.add("heading", HeadingNmea(opened["heading"], app.on_heading, app.on_yaw_rate, hcfg["poll_hz"],
                                        math.radians(hcfg["heading_sigma_deg"]),
                                        math.radians(hcfg["rot_sigma_dps"])))
    for block in ("gnss", "heading"):
        app.node.add(block + "_port", opened[block])
    closers.append(outboards.close)
    return app, outboards, closers


def run_service(cfg, log_file=None, duration_s=None, out=sys.stdout, port_paths=None):
    """Run until SIGTERM/SIGINT (or ``duration_s``); returns the exit code (0 at the end of ``duration_s``,
    130 / 143 when SIGINT / SIGTERM stopped it: both outboards released, log closed either way).
    ``port_paths``: {``bench-sim:...`` name: path} for the harness's simulated ports."""
    from onboard.runtime.clock import MonotonicClock
    from onboard.runtime.mcap_log import code_version

    ports = resolved_ports(cfg, port_paths)
    check_ports_exist(ports)            # before the log opens
    mcap, log_file = open_log(log_file, cfg["log"]["dir"], "wamv", "onboard-wamv")
    clock = MonotonicClock()            # zero now: the watched inputs count from the service's start

    def port_change(now_us, name, event, error):
        mcap.log("/wamv/port", now_us, {"time_us": now_us, "port": name, "event": event, "error": error or ""})
        why = ": %s; the failsafe stops the outboards while it is missing" % error if event == "lost" else ""
        print("onboard-wamv: %s port %s%s" % (name, event, why), file=out, flush=True)

    try:
        app, outboards, closers = build_app(cfg, ports, log=mcap.log, start_us=0, on_port_change=port_change)
    except BaseException:
        mcap.close()
        raise
    stop = StopSignals()
    reason = "duration"
    released = False
    try:                 # from here on, whatever happens: outboards released, log and ports closed
        if cfg["log"]["record"]:
            app.record(mcap.log, code_version(), clock.now_us())
        with stop:
            print("onboard-wamv: running; log %s; gnss %s; heading %s; outboards %s, %s"
                  % (log_file, ports["gnss.port"], ports["heading.port"], ports["outboards.left_port"],
                     ports["outboards.right_port"]), file=out, flush=True)
            run_until_stopped(app, clock, stop, duration_s)
            reason = stop.reason
    finally:
        now = clock.now_us()

        def release():
            nonlocal released
            for link in outboards.links.values():   # a link that is down (or never came up) gets one more try
                if not link.up:
                    link.connect(now)
            released = outboards.stop(now)          # SetCurrent 0 to both VESCs

        def log_shutdown():
            mcap.log("/shutdown", now, {"time_us": now, "reason": reason, "outboards_released": released,
                                        "report": json.dumps(app.report(), default=str)})

        run_all([release, log_shutdown, mcap.close] + list(closers))
    print("onboard-wamv: stopped (%s); outboards %s; log closed: %s (%d messages)"
          % (reason, "released" if released else "NOT reached (link down)", log_file, mcap.messages),
          file=out, flush=True)
    return stop.exit_status()


def service_unit(python, workdir, config, user="wamv"):
    """Text of the systemd unit (``/etc/systemd/system/onboard-wamv.service``)."""
    return unit_text("WAM-V boat (GNSS NMEA, heading HDT/ROT, two VESC outboards, MCAP log)",
                     "boards.wamv", "dialout", "releases both outboards (SetCurrent 0)", python, workdir, config, user)


def main(argv=None, port_paths=None, prog="python -m boards.wamv"):
    """The command line (``boards.linux_service.service_main``); ``port_paths`` (see run_service) and ``prog``
    let the harness run it on its ptys."""
    return service_main(
        argv, prog, "WAM-V boat runtime (GNSS, heading, two VESC outboards).", "wamv", DEFAULT_CONFIG, load_config,
        lambda cfg, log_file, duration_s: run_service(cfg, log_file, duration_s, port_paths=port_paths),
        service_unit, "wamv", "a serial port or the log cannot be opened")
