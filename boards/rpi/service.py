"""The Pi runtime as a service: config, real-time loop, MCAP log, clean SIGTERM shutdown.

``python -m boards.rpi run --config /etc/onboard/rpi.toml`` builds the board app from
the config (VESC ports and ids, IMU bus, pose source, way-points), runs it on the
Pi's monotonic clock, logs every sample and command to MCAP, and on SIGTERM/SIGINT
(systemd stop, Ctrl-C) leaves the loop, releases the motors (SetCurrent 0 to every
VESC), logs ``/shutdown`` and closes the MCAP file so it is complete and readable.

With ``log.record = true`` (the default) the app also records itself at its boundary into the
same log (``/app/...``: settings, every input, tick and command; ``boards.rpi.app.RpiGroundRobot.record``):
``python -m harness replay LOG.mcap`` re-runs it on a desktop and compares its commands.

``python -m boards.rpi service-unit`` prints the systemd unit that runs it.

The service opens real devices only. A simulated I2C bus comes from the caller:
``main``/``run_service``/``build_app`` take ``i2c_buses``, a mapping from an ``imu.bus`` name
to a factory ``factory(address) -> bus`` (the ``machine.I2C`` memory API). Desk runs without
the IMU wired (``imu.bus = "bench-sim"``) start from the harness, which passes its simulated
MPU-6050 in: ``python -m harness.sim.rpi_bench run --config ...`` (boards never import harness).
"""
import os
import sys

from boards.linux_service import (ServiceStartError, StopSignals, open_log, run_all, run_until_stopped,
                                  service_main, unit_text)
from boards.linux_service import load_config as _load_config
from boards.rpi import board as C
from boards.rpi.imu_mpu6050 import RATE_HZ_RULE as IMU_RATE_HZ
from boards.rpi.vesc_motors import DRIVE_SETTING_RANGES
from onboard.core.settings import (BOOLEAN, POSITIVE, RATE_HZ, TEXT, WAYPOINTS_NE_M, ConfigError, checked, int_at_least, int_within, one_of, or_null, range_problem,
                                   setting_problem, under)
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS
from onboard.runtime.scheduler import GROUP_RATES

DEFAULT_CONFIG = {
    "vesc": {
        "baud": C.VESC_UART_BAUD,
        "motors": [
            {"name": "left", "port": C.VESC_UART_PORT, "controller_id": C.VESC_LEFT_CONTROLLER_ID,
             "direction": C.LEFT_DIRECTION},
            {"name": "right", "port": C.VESC_UART_PORT, "can_id": C.VESC_RIGHT_CAN_ID,
             "controller_id": C.VESC_RIGHT_CAN_ID, "direction": C.RIGHT_DIRECTION},
        ],
        "gear_ratio": C.GEAR_RATIO,
        "pole_pairs": C.MOTOR_POLE_PAIRS,
        "stop_brake_current_a": C.STOP_BRAKE_CURRENT_A,
        "telemetry_rate_hz": C.TELEMETRY_RATE_HZ,
    },
    "imu": {"bus": C.I2C_BUS_DEVICE, "address": C.MPU6050_I2C_ADDR, "rate_hz": C.IMU_RATE_HZ},
    # the external pose input: signed frames (onboard.comms.signed_frame) with the key in key_file (hex digits);
    # signing "off" (explicit) takes unsigned JSON, on a loopback host only
    "pose": {"udp_port": C.POSE_UDP_PORT, "poll_hz": 50, "host": "127.0.0.1", "key_file": None,
             "signing": "required"},
    "mission": {"waypoints_ne_m": [[2.0, 0.0]]},
    "runtime": {"control_rate_hz": C.CONTROL_RATE_HZ, "wheelbase_m": C.WHEELBASE_M,
                "wheel_radius_m": C.WHEEL_RADIUS_M, "max_wheel_radps": C.MAX_WHEEL_RADPS},
    "log": {"dir": "/var/log/onboard-rpi", "record": True},
}


CAN_ID = int_within(0, 254)                      # VESC CAN ids (255 is broadcast)
MOTOR_KEYS = ("name", "port", "controller_id", "can_id", "direction")
MOTOR_RANGES = {"name": one_of("left", "right"), "port": TEXT, "controller_id": CAN_ID, "can_id": or_null(CAN_ID),
                "direction": one_of(1, -1)}
# every setting's value range (onboard.core.settings rules), checked before a port or the log opens;
# imu.bus: an i2c-dev path, "bench-sim" (the simulated MPU-6050, at rest; only under python -m harness.sim.rpi_bench,
# see BENCH_SIM_BUS) or "none";
# pose.udp_port: -1 or null for no external pose source, 0 for a free port
_AIDING_RATE_HZ = RUNTIME_DEFAULTS["aiding_rate_hz"]
SETTING_RANGES = {
    "vesc.baud": int_at_least(1), **under("vesc", DRIVE_SETTING_RANGES),
    "vesc.motors": ("a list of two motor tables", lambda v: isinstance(v, list) and all(isinstance(m, dict) for m in v)),
    "imu.bus": TEXT, "imu.address": one_of(0x68, 0x69), "imu.rate_hz": IMU_RATE_HZ,
    "pose.udp_port": or_null(int_within(-1, 65535)), "pose.poll_hz": RATE_HZ, "pose.host": TEXT,
    "pose.key_file": or_null(TEXT), "pose.signing": one_of("required", "off"),
    ("pose.host", "pose.signing"): ("signed on a non-loopback host (pose.signing=off is for 127.0.0.1 only)",
                                    lambda host, signing: signing == "required" or _is_loopback(host)),
    "mission.waypoints_ne_m": WAYPOINTS_NE_M,
    "runtime.control_rate_hz": RATE_HZ, "runtime.wheelbase_m": POSITIVE,
    "runtime.wheel_radius_m": POSITIVE, "runtime.max_wheel_radps": POSITIVE,
    "log.dir": TEXT, "log.record": BOOLEAN,
    # the node's rate groups (with the runtime's aiding group at its default rate)
    ("imu.rate_hz", "runtime.control_rate_hz", "vesc.telemetry_rate_hz", "pose.poll_hz"):
        ("%s (with the aiding group at %d Hz)" % (GROUP_RATES[0], _AIDING_RATE_HZ),
         lambda *rates: GROUP_RATES[1](_AIDING_RATE_HZ, *rates)),
}


# The simulated MPU-6050's bus name: the harness provides it (harness.sim.rpi_bench passes its factory in i2c_buses).
BENCH_SIM_BUS = "bench-sim"


def check_i2c_bus(cfg, i2c_buses=None):
    """Raise ConfigError when ``imu.bus`` names the simulated bus but the caller provides none
    (``python -m boards.rpi`` runs real devices only; ``python -m harness.sim.rpi_bench`` runs the simulated one)."""
    name = cfg["imu"]["bus"]
    if name == BENCH_SIM_BUS and name not in (i2c_buses or {}):
        raise ConfigError("rpi setting imu.bus %r is the harness's simulated MPU-6050: run "
                          "`python -m harness.sim.rpi_bench run` for desk runs without the IMU" % name)


def check_config(cfg):
    """Raise ConfigError naming the first setting outside its range (SETTING_RANGES, and for each of the
    two motors MOTOR_RANGES, the names left and right once each, distinct controller_ids on a shared port), or a
    signed pose input's key file that is missing or malformed."""
    line = setting_problem(cfg, SETTING_RANGES, "rpi")
    if line:
        raise ConfigError(line)
    motors = cfg["vesc"]["motors"]
    for i, motor in enumerate(motors):
        where = "vesc.motors[%d]" % i
        unknown = sorted(k for k in motor if k not in MOTOR_KEYS)
        missing = [k for k in MOTOR_KEYS if k != "can_id" and k not in motor]
        if unknown or missing:
            raise ConfigError("rpi setting %s: %s (keys: %s)" % (
                where, "unknown key %r" % unknown[0] if unknown else "missing key %r" % missing[0],
                ", ".join(MOTOR_KEYS)))
        problem = range_problem(motor, MOTOR_RANGES, where + ".")
        if problem:
            raise ConfigError("rpi setting %s" % problem)
    names = sorted(m["name"] for m in motors)
    if names != ["left", "right"]:
        raise ConfigError("rpi setting vesc.motors must name one motor left and one right, got %s"
                          % ", ".join(names))
    if motors[0]["port"] == motors[1]["port"] and motors[0]["controller_id"] == motors[1]["controller_id"]:
        # GetValues replies on one UART are routed by the controller_id they carry: one VESC's telemetry would
        # be taken for the other's (its wheel speed with the other side's sign)
        raise ConfigError("rpi setting vesc.motors: left and right share port %s and controller_id %d; the VESCs "
                          "on one port need distinct controller_ids (VESC Tool, App settings > General)"
                          % (motors[0]["port"], motors[0]["controller_id"]))
    if uses_pose_input(cfg):
        pose_verifier(cfg["pose"])          # the key file: readable, a key (checked again where the input opens)


def uses_pose_input(cfg):
    return cfg["pose"]["udp_port"] is not None and cfg["pose"]["udp_port"] >= 0


def merged_config(overrides):
    """DEFAULT_CONFIG updated from ``overrides`` (tables merged key by key; unknown keys, wrong types and
    values outside SETTING_RANGES raise ConfigError), then the motors checked (:func:`check_config`)."""
    cfg = checked(DEFAULT_CONFIG, SETTING_RANGES, overrides, "rpi")
    check_config(cfg)
    return cfg


def load_config(path):
    """The settings in ``path`` (.toml or .json) over DEFAULT_CONFIG, checked; the defaults when None."""
    return _load_config(path, DEFAULT_CONFIG, merged_config)


def build_app(cfg, log=None, i2c_buses=None):
    """(app, closers) from a config dict; ports that are missing now are retried later.

    ``i2c_buses``: {``imu.bus`` name: ``factory(address) -> bus``} for buses the caller provides
    (e.g. the harness's simulated MPU-6050 as ``BENCH_SIM_BUS``); any other name except "none" is
    an i2c-dev path opened here.
    """
    check_i2c_bus(cfg, i2c_buses)
    use_pose = uses_pose_input(cfg)
    verifier = pose_verifier(cfg["pose"]) if use_pose else None       # before anything opens: a bad key file
    from boards.rpi.app import RpiGroundRobot, UdpPoseSource
    from boards.rpi.vesc_motors import VescDiffDrive
    from onboard.comms.transport import SerialTransport

    vcfg = cfg["vesc"]
    links = {}
    motors = []
    for m in vcfg["motors"]:
        m = dict(m)
        port = m.pop("port")
        links.setdefault(port, (lambda port=port: SerialTransport(port, vcfg["baud"]).open()))
        m["link"] = port
        motors.append(m)
    driver = VescDiffDrive(links, motors, {
        "erpm_per_radps": C.erpm_per_radps(vcfg["gear_ratio"], vcfg["pole_pairs"]),
        "max_wheel_radps": cfg["runtime"]["max_wheel_radps"],
        "stop_brake_current_a": vcfg["stop_brake_current_a"]}, log=log)
    closers = []
    imu = None
    icfg = cfg["imu"]
    if icfg["bus"] != "none":
        from boards.rpi.imu_mpu6050 import Mpu6050
        if icfg["bus"] in (i2c_buses or {}):
            # a bus the caller provides (desk runs: the harness's register-level MPU-6050, at rest)
            bus = i2c_buses[icfg["bus"]](icfg["address"])
        else:
            from boards.rpi.i2c_linux import LinuxI2cBus
            try:
                bus = LinuxI2cBus(icfg["bus"])
            except OSError as exc:
                raise ServiceStartError("cannot open the IMU's I2C bus %s: %s" % (icfg["bus"], exc.strerror or exc))
            closers.append(bus.close)
        imu = Mpu6050(bus, icfg["address"], rate_hz=icfg["rate_hz"])
    pose = None
    if use_pose:
        try:
            pose = UdpPoseSource(cfg["pose"]["udp_port"], host=cfg["pose"]["host"], verifier=verifier)
        except OSError as exc:
            for close in closers:
                close()
            raise ServiceStartError("cannot bind the pose UDP port %d: %s"
                                    % (cfg["pose"]["udp_port"], exc.strerror or exc))
        closers.append(pose.close)
    runtime_cfg = dict(cfg["runtime"])
    runtime_cfg["imu_rate_hz"] = icfg["rate_hz"]
    app = RpiGroundRobot(cfg["mission"]["waypoints_ne_m"], driver, imu=imu, pose_source=pose,
                         runtime_config=runtime_cfg, log=log,
                         telemetry_rate_hz=vcfg["telemetry_rate_hz"], pose_poll_hz=cfg["pose"]["poll_hz"])
    return app, closers


def _is_loopback(host):
    from boards.rpi.app import is_loopback
    return is_loopback(host)


def pose_verifier(pose_cfg):
    """The pose input's FrameVerifier (key from ``key_file``; the last accepted counter's mark kept in
    ``key_file + ".counter"`` across restarts), or None when ``signing`` is "off". ConfigError (one line, exit 2)
    for a missing or malformed key file: the key itself is never printed or logged."""
    from onboard.comms.signed_frame import FrameVerifier, SigningError, key_from_hex
    if pose_cfg["signing"] == "off":
        return None
    path = pose_cfg["key_file"]
    if not path:
        raise ConfigError("rpi setting pose.key_file: the pose input is signed (pose.signing=required); give it a "
                          "file of hex key digits (e.g. python3 -c 'import secrets; print(secrets.token_hex(16))' "
                          "> pose.key), or set pose.signing=off for an unsigned input on 127.0.0.1")
    try:
        with open(path, encoding="ascii") as fh:
            key = key_from_hex(fh.read())
    except OSError as exc:
        raise ConfigError("rpi setting pose.key_file: cannot read %s: %s" % (path, exc.strerror or exc))
    except UnicodeDecodeError:          # a raw binary key: the decoder's own message would show a key byte
        raise ConfigError("rpi setting pose.key_file: %s: a link key must be hex digits, the file holds bytes that "
                          "are not ASCII text" % path)
    except SigningError as exc:
        raise ConfigError("rpi setting pose.key_file: %s: %s" % (path, exc))
    mark_file = path + ".counter"
    floor = 0
    try:
        with open(mark_file) as fh:
            floor = int(fh.read().strip() or 0)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        raise ConfigError("rpi setting pose.key_file: the counter file %s is unreadable (%s); delete it only if "
                          "the key is new" % (mark_file, exc))

    def persist(mark):
        tmp = mark_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write("%d\n" % mark)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, mark_file)
    return FrameVerifier({0: key}, floor=floor, persist=persist)


def pose_input_line(pose_source):
    """What the service says of its pose input when it starts (port, signed or not, the key's fingerprint)."""
    if pose_source is None:
        return "no pose input"
    if pose_source.verifier is None:
        return "pose udp port %d (UNSIGNED: pose.signing=off, loopback only)" % pose_source.port
    return "pose udp port %d (signed, key %s)" % (pose_source.port, pose_source.verifier.report()["keys"][0])


def run_service(cfg, log_file=None, duration_s=None, out=sys.stdout, i2c_buses=None):
    """Run until SIGTERM/SIGINT (or ``duration_s``); returns the exit code (0 at the end of ``duration_s``, 130 /
    143 when SIGINT / SIGTERM stopped it: motors released, log closed either way). ``i2c_buses``: see build_app."""
    from boards.rpi.imu_mpu6050 import ImuError
    from onboard.runtime.clock import MonotonicClock
    from onboard.runtime.mcap_log import code_version

    check_i2c_bus(cfg, i2c_buses)           # before the log opens
    mcap, log_file = open_log(log_file, cfg["log"]["dir"], "rpi", "onboard-rpi")
    try:
        app, closers = build_app(cfg, log=mcap.log, i2c_buses=i2c_buses)
    except BaseException:
        mcap.close()
        raise
    clock = MonotonicClock()
    stop = StopSignals()
    reason = "duration"
    try:                       # from here on, whatever happens: motors released, log and devices closed
        try:
            app.start(clock.now_us())
        except (ImuError, OSError) as exc:      # e.g. no MPU-6050 answering on the bus
            reason = "start failed"
            raise ServiceStartError("cannot start: %s (imu.bus %s, imu.address 0x%02x)"
                                    % (exc, cfg["imu"]["bus"], cfg["imu"]["address"]))
        if cfg["log"]["record"]:
            # the app at its boundary into the same log, from before its first tick:
            # `python -m harness replay LOG.mcap`
            app.record(mcap.log, code_version(), clock.now_us())
        with stop:
            print("onboard-rpi: running; log %s; %s" % (log_file, pose_input_line(app.pose_source)), file=out,
                  flush=True)
            run_until_stopped(app, clock, stop, duration_s)
            reason = stop.reason
    finally:
        run_all([lambda: app.shutdown(clock.now_us(), reason=reason), mcap.close] + list(closers))
    print("onboard-rpi: stopped (%s); motors released; log closed: %s (%d messages)"
          % (reason, log_file, mcap.messages), file=out, flush=True)
    return stop.exit_status()


def service_unit(python, workdir, config, user="pi"):
    """Text of the systemd unit (``/etc/systemd/system/onboard-rpi.service``)."""
    return unit_text("Raspberry Pi ground robot (VESC motors, MPU-6050, MCAP log)",
                     "boards.rpi", "dialout i2c", "releases the motors (SetCurrent 0)", python, workdir, config, user)


def main(argv=None, i2c_buses=None, prog="python -m boards.rpi"):
    """The command line (``boards.linux_service.service_main``); ``i2c_buses`` (see build_app) and ``prog`` let
    the harness run it with simulated buses."""
    return service_main(
        argv, prog, "Raspberry Pi ground-robot runtime (VESC motors over UART).", "rpi", DEFAULT_CONFIG, load_config,
        lambda cfg, log_file, duration_s: run_service(cfg, log_file, duration_s, i2c_buses=i2c_buses),
        service_unit, "pi", "the IMU bus, the pose UDP port or the log cannot be opened, or the IMU does not answer")
