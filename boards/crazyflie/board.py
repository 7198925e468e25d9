"""Board configuration of the Crazyflie driver: defaults, validation, loading from TOML/JSON.

Everything has its unit in the name. ``params`` are written to the drone after the
connection (names and values as the firmware's parameter TOC has them), and each is
read back to check it took. ``log_blocks`` name the firmware log variables the driver
streams; the driver knows what to make of stateEstimate.*, pm.*, ranging.*.
"""
import json
import os

from onboard.core.settings import (BOOLEAN, NON_NEGATIVE, POSITIVE, ConfigError, checked, int_at_least, is_number,
                                   one_of)

try:
    import tomllib
except ImportError:          # pragma: no cover - Python < 3.11
    tomllib = None


# A board config value is unknown, of the wrong type or out of range, or the drone refuses it: the settings
# error of every component (onboard.core.settings.ConfigError), one line for the user.
CrazyflieConfigError = ConfigError


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


def _params_ok(params):
    return isinstance(params, dict) and all(isinstance(name, str) and name.count(".") == 1 and is_number(value)
                                            for name, value in params.items())


def _log_block_ok(block):
    if not (isinstance(block, dict) and sorted(block) == ["period_ms", "variables"]):
        return False
    period, names = block["period_ms"], block["variables"]
    return (isinstance(period, int) and not isinstance(period, bool) and 10 <= period <= 2540 and period % 10 == 0
            and isinstance(names, list) and len(names) > 0
            and all(isinstance(v, str) and v.count(".") == 1 for v in names)
            and all(_whole_group(names, group) for group in _STATE_GROUPS))


# variables the driver reads together from one log packet (a position needs x, y and z; a velocity vx and vy)
_STATE_GROUPS = (("stateEstimate.x", "stateEstimate.y", "stateEstimate.z"), ("stateEstimate.vx", "stateEstimate.vy"))


def _whole_group(names, group):
    n = sum(1 for v in group if v in names)
    return n == 0 or n == len(group)


# every setting's value range (onboard.core.settings rules); params and log_blocks are tables replaced whole
SETTING_RANGES = {
    "setpoint_rate_hz": ("a number >= 2 (the firmware levels out after 500 ms without a setpoint)",
                         lambda v: is_number(v) and v >= 2),
    "setpoint_mode": one_of(*_MODES),
    "link_timeout_s": POSITIVE, "command_timeout_s": POSITIVE, "connect_timeout_s": POSITIVE,
    "param_timeout_s": POSITIVE, "max_speed_mps": POSITIVE, "max_climb_mps": POSITIVE,
    "flight_height_m": POSITIVE, "height_gain_1ps": POSITIVE, "takeoff_time_s": POSITIVE, "land_time_s": POSITIVE,
    "landed_height_m": POSITIVE, "land_via_high_level": BOOLEAN, "notify_stop_remain_ms": NON_NEGATIVE,
    "arm": BOOLEAN, "toc_cache_dir": ("a string", lambda v: isinstance(v, str)),
    "range_peer_ids": ("a list of integers >= 0", lambda v: isinstance(v, list) and all(int_at_least(0)[1](i) for i in v)),
    "params": ("a table of group.name = number", _params_ok),
    "log_blocks": ("a non-empty table of blocks {period_ms: a multiple of 10 in 10..2540, variables: group.name "
                   "strings; a block with one of stateEstimate.x, stateEstimate.y, stateEstimate.z has all three, one "
                   "with stateEstimate.vx or stateEstimate.vy has both}",
                   lambda v: isinstance(v, dict) and len(v) > 0 and all(_log_block_ok(b) for b in v.values())),
    ("land_via_high_level", "params"): ("false, or params with \"commander.enHighLevel\" = 1",
                                        lambda high_level, params: not high_level
                                        or params.get("commander.enHighLevel") == 1),
}


def validate(overrides=None):
    """DEFAULTS merged with ``overrides`` and checked (params and log_blocks replace the defaults' tables)."""
    return checked(DEFAULTS, SETTING_RANGES, overrides, "crazyflie")


def load(path):
    """Read a board config file (.toml or .json, table ``[crazyflie]`` or top level) and validate it."""
    return validate(_read(path))


def load_overrides(path):
    """The settings a board config file sets (checked like :func:`load`), without the defaults of the ones it
    leaves out: what goes over another component's driver settings (the swarm member's log blocks)."""
    data = _read(path)
    cfg = validate(data)
    return {k: cfg[k] for k in data}


def _read(path):
    """The ``crazyflie`` table (or top level) of a board config file, unchecked."""
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
    data = data.get("crazyflie", data)
    if not isinstance(data, dict):
        raise CrazyflieConfigError("%s: table crazyflie must be a table" % path)
    return data
