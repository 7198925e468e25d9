"""Scenario configuration: defaults merged with overrides from a file or the command line.

Unknown keys, wrong types and values outside their range are errors with one clear line, never
silently ignored. Also the argparse types of the harness's commands (``positive_int`` and kin).
"""
import json
import math
import os
import tomllib

from onboard.core.settings import (ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, TEXT,  # noqa: F401 (re-exported)
                                   UNIT_OPEN, WAYPOINTS_NE_M, argument, int_at_least, int_within, non_empty_list,
                                   one_of, or_null, pair, range_problem, under, vector, within)


class ConfigError(ValueError):
    """A scenario file or option is malformed; the message is one line for the user."""


def load_file(path):
    """Read a .toml or .json scenario file into a dict."""
    if not os.path.isfile(path):
        raise ConfigError("scenario file not found: %s" % path)
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as fh:
                return tomllib.load(fh)
        if path.endswith(".json"):
            with open(path) as fh:
                data = json.load(fh)
            if not isinstance(data, dict):
                raise ConfigError("%s: top level must be an object" % path)
            return data
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("%s: not valid %s: %s" % (path, path.rsplit(".", 1)[-1].upper(),
                                                    str(exc).splitlines()[0]))
    raise ConfigError("%s: scenario files must end in .toml or .json" % path)


def _type_ok(default, value):
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list):
        return isinstance(value, list)
    if default is None:
        return True
    return isinstance(value, type(default))


def _finite(value):
    """False for a NaN or infinite float, also inside lists (e.g. way-points)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def merge(defaults, overrides, where="config"):
    """Deep-merge ``overrides`` into a copy of ``defaults``; unknown keys / wrong types raise ConfigError."""
    out = json.loads(json.dumps(defaults))
    for key, value in overrides.items():
        path = "%s.%s" % (where, key)
        if key not in out:
            raise ConfigError("unknown setting %s (known: %s)" % (path, ", ".join(sorted(out))))
        if isinstance(out[key], dict):
            if not isinstance(value, dict):
                raise ConfigError("setting %s must be a table" % path)
            out[key] = merge(out[key], value, path)
        else:
            if not _type_ok(out[key], value):
                raise ConfigError("setting %s must be %s, got %r" % (path, type(out[key]).__name__, value))
            if not _finite(value):
                raise ConfigError("setting %s must be finite, got %r" % (path, value))
            out[key] = float(value) if isinstance(out[key], float) else value
    return out


def parse_set(items):
    """``["a.b=1.5", "c=true"]`` -> nested dict; values parsed as JSON, else kept as strings."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError("--set expects KEY=VALUE, got %r" % item)
        key, text = item.split("=", 1)
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return out


# argparse types: the text converted and checked, "expected an integer >= 1, got '0'"
positive_int = argument(int_at_least(1), int)        # ``--rollouts 0`` is an error, not an empty run
non_negative_int = argument(int_at_least(0), int)
positive_float = argument(POSITIVE)
non_negative_float = argument(NON_NEGATIVE)


# -- value ranges: the rules and range_problem live in onboard.core.settings (the boards check their
# configs with them too) and are re-exported here for the scenarios.


def check_ranges(config, rules, where="config"):
    """Raise ConfigError for the first setting outside its rule (see range_problem)."""
    problem = range_problem(config, rules)
    if problem:
        raise ConfigError("setting %s.%s" % (where, problem))
