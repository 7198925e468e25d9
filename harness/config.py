"""Scenario configuration: defaults merged with overrides from a file or the command line.

Unknown keys and wrong types are errors with one clear line, never silently ignored.
"""
import argparse
import json
import math
import os
import tomllib


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


def positive_int(text):
    """argparse type: an integer >= 1 (``--rollouts 0`` is an error, not an empty run)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer >= 1, got %r" % text)
    if value < 1:
        raise argparse.ArgumentTypeError("expected an integer >= 1, got %d" % value)
    return value


# -- value ranges -------------------------------------------------------------------------------------
# A rule is (text, predicate): ``predicate(value)`` is True for a valid value, ``text`` completes
# "setting <path> must be <text>". Predicates that raise TypeError count as False; NaN fails every
# numeric rule (each comparison with NaN is False).


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


POSITIVE = ("a number > 0", lambda v: _number(v) and v > 0)
NON_NEGATIVE = ("a number >= 0", lambda v: _number(v) and v >= 0)


def int_at_least(lo):
    return ("an integer >= %d" % lo, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo)


def within(lo, hi):
    """lo <= value <= hi."""
    return ("a number in [%g, %g]" % (lo, hi), lambda v: _number(v) and lo <= v <= hi)


def one_of(*choices):
    return ("one of %s" % ", ".join(repr(c) for c in choices), lambda v: v in choices)


ANY_NUMBER = ("a number", _number)
BOOLEAN = ("true or false", lambda v: isinstance(v, bool))


def vector(count, rule, ordered=False):
    """A list of ``count`` elements that each follow ``rule`` (and, when ordered, ascend)."""
    text, ok = rule

    def check(v):
        return (isinstance(v, list) and len(v) == count and all(ok(x) for x in v)
                and (not ordered or all(a <= b for a, b in zip(v, v[1:]))))
    notes = ([text.replace("a number ", "each ")] if text != ANY_NUMBER[0] else []) + (["low first"] if ordered else [])
    return ("a list of %d numbers%s" % (count, " (%s)" % ", ".join(notes) if notes else ""), check)


def pair(rule, ordered=False):
    """A two-element list whose elements follow ``rule`` (and, when ordered, first <= second)."""
    return vector(2, rule, ordered)


def under(prefix, rules):
    """``rules`` for a settings block mounted at ``prefix`` (e.g. the vehicle block at "vehicle")."""
    return {"%s.%s" % (prefix, path): rule for path, rule in rules.items()}


def range_problem(config, rules):
    """The first setting of ``config`` outside its rule, as "<path> must be <text>, got <value>"; None when
    every one is valid. ``rules``: {dotted path: rule}; a path missing from ``config`` is skipped."""
    for path, (text, ok) in rules.items():
        node = config
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                node = _MISSING
                break
            node = node[part]
        if node is _MISSING:
            continue
        try:
            good = ok(node)
        except TypeError:
            good = False
        if not good:
            return "%s must be %s, got %r" % (path, text, node)
    return None


def check_ranges(config, rules, where="config"):
    """Raise ConfigError for the first setting outside its rule (see range_problem)."""
    problem = range_problem(config, rules)
    if problem:
        raise ConfigError("setting %s.%s" % (where, problem))


_MISSING = object()
