"""Board configuration of the Crazyflie driver: defaults, validation, loading from TOML/JSON.

Everything has its unit in the name. ``params`` are written to the drone after the
connection (names and values as the firmware's parameter TOC has them), and each is
read back to check it took. ``log_blocks`` name the firmware log variables the driver
streams; the driver knows what to make of stateEstimate.*, pm.*, ranging.*.
"""
import json
import os

from onboard.core.settings import is_number

try:
    import tomllib
except ImportError:          # pragma: no cover - Python < 3.11
    tomllib = None


class CrazyflieConfigError(ValueError):
    """A board config value is missing, unknown or of the wrong type; one line for the user."""


DEFAULTS = {
    "setpoint_rate_hz": 50,          # the runtime calls step() at this rate; firmware wants > 2 Hz
    "setpoint_mode": "velocity_world",   # or "hover" (body-frame velocity + height)
    "link_timeout_s": 0.3,           # no log packet for this long = link lost
    "command_timeout_s": 0.5,        # runtime command older than this: hold position (zero velocity)
    "connect_timeout_s": 10.0,
    "param_timeout_s": 2.0,
    "max_speed_mps": 1.0,            # pocket-drone speed cap, enforced at the boundary
    "max_climb_mps": 0.5,
    "flight_height_m": 0.5,
    "height_gain_1ps": 1.5,          # velocity_world: vz = gain * (height - z) (altitude hold)
    "takeoff_time_s": 1.5,
    "land_time_s": 1.5,
    "landed_height_m": 0.05,
    "land_via_high_level": True,     # needs commander.enHighLevel = 1 in params
    "notify_stop_remain_ms": 100,
    "arm": True,                     # send an arming request before take-off
    "toc_cache_dir": "",             # "" = no TOC cache (cflib caches TOCs by CRC otherwise)
    "range_peer_ids": [0, 1, 2, 3, 4, 5, 6, 7],   # ranging.distance<j> -> peer id
    "params": {
        "commander.enHighLevel": 1,
        "stabilizer.estimator": 2,   # Kalman
        "stabilizer.controller": 1,  # PID
    },
    "log_blocks": {
        "state": {"period_ms": 10, "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
                                                  "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz"]},
        "attitude": {"period_ms": 20, "variables": ["stateEstimate.roll", "stateEstimate.pitch",
                                                     "stateEstimate.yaw", "pm.vbat", "pm.state"]},
        "ranging": {"period_ms": 50, "variables": ["ranging.state"] + ["ranging.distance%d" % i for i in range(6)]},
    },
}

_MODES = ("velocity_world", "hover")


def _check_number(path, value, positive=True):
    if not is_number(value):
        raise CrazyflieConfigError("%s must be a finite number, got %r" % (path, value))
    if positive and not value > 0:
        raise CrazyflieConfigError("%s must be positive, got %r" % (path, value))


def validate(overrides=None):
    """Defaults merged with ``overrides`` (params and log_blocks replace, others merge); checked."""
    cfg = json.loads(json.dumps(DEFAULTS))
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise CrazyflieConfigError("unknown crazyflie setting %r (known: %s)" % (key, ", ".join(sorted(DEFAULTS))))
        cfg[key] = value
    for key in ("setpoint_rate_hz", "link_timeout_s", "command_timeout_s", "connect_timeout_s", "param_timeout_s",
                "max_speed_mps", "max_climb_mps", "flight_height_m", "height_gain_1ps", "takeoff_time_s",
                "land_time_s", "landed_height_m"):
        _check_number("crazyflie." + key, cfg[key])
    _check_number("crazyflie.notify_stop_remain_ms", cfg["notify_stop_remain_ms"], positive=False)
    if cfg["setpoint_rate_hz"] < 2:
        raise CrazyflieConfigError("crazyflie.setpoint_rate_hz must be >= 2 (firmware levels out after 500 ms)")
    if cfg["setpoint_mode"] not in _MODES:
        raise CrazyflieConfigError("crazyflie.setpoint_mode must be one of %s, got %r" % (_MODES, cfg["setpoint_mode"]))
    for key in ("land_via_high_level", "arm"):
        if not isinstance(cfg[key], bool):
            raise CrazyflieConfigError("crazyflie.%s must be true or false" % key)
    if not isinstance(cfg["params"], dict):
        raise CrazyflieConfigError("crazyflie.params must be a table of name = value")
    for name, value in cfg["params"].items():
        if name.count(".") != 1:
            raise CrazyflieConfigError("crazyflie.params: %r is not a group.name parameter" % name)
        _check_number("crazyflie.params.%s" % name, value, positive=False)
    if not isinstance(cfg["log_blocks"], dict) or not cfg["log_blocks"]:
        raise CrazyflieConfigError("crazyflie.log_blocks must be a non-empty table")
    for bname, block in cfg["log_blocks"].items():
        if not isinstance(block, dict) or set(block) != {"period_ms", "variables"}:
            raise CrazyflieConfigError("crazyflie.log_blocks.%s needs exactly period_ms and variables" % bname)
        _check_number("crazyflie.log_blocks.%s.period_ms" % bname, block["period_ms"])
        if block["period_ms"] < 10 or block["period_ms"] > 2540 or block["period_ms"] % 10:
            raise CrazyflieConfigError("crazyflie.log_blocks.%s.period_ms must be a multiple of 10 in 10..2540"
                                       % bname)
        if not block["variables"] or not all(isinstance(v, str) and v.count(".") == 1 for v in block["variables"]):
            raise CrazyflieConfigError("crazyflie.log_blocks.%s.variables must be group.name strings" % bname)
    if cfg["land_via_high_level"] and cfg["params"].get("commander.enHighLevel") != 1:
        raise CrazyflieConfigError("crazyflie.land_via_high_level needs params.\"commander.enHighLevel\" = 1")
    if not (isinstance(cfg["range_peer_ids"], list) and all(isinstance(i, int) for i in cfg["range_peer_ids"])):
        raise CrazyflieConfigError("crazyflie.range_peer_ids must be a list of integers")
    return cfg


def load(path):
    """Read a board config file (.toml or .json, table ``[crazyflie]`` or top level) and validate it."""
    if not os.path.isfile(path):
        raise CrazyflieConfigError("board config not found: %s" % path)
    try:
        if path.endswith(".toml") and tomllib is not None:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        elif path.endswith(".json"):
            with open(path) as fh:
                data = json.load(fh)
        else:
            raise CrazyflieConfigError("%s: board config must be .toml or .json" % path)
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, CrazyflieConfigError):
            raise
        raise CrazyflieConfigError("%s: %s" % (path, str(exc).splitlines()[0]))
    if not isinstance(data, dict):
        raise CrazyflieConfigError("%s: top level must be a table" % path)
    return validate(data.get("crazyflie", data))
