"""Scenario configuration: defaults merged with overrides from a file or the command line.

Unknown keys, wrong types and values outside their range are errors with one clear line, never
silently ignored: the one settings mechanism of :mod:`onboard.core.settings` (``checked``, the rules,
``ConfigError``), re-exported here for the scenarios. Also the argparse types of the harness's commands
(``positive_int`` and kin).
"""
import json
import os
import tomllib

from onboard.core.settings import (ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, RATE_HZ, TEXT,  # noqa: F401 (re-exported)
                                   UNIT_OPEN, WAYPOINTS_NE_M, ConfigError, RepeatedKey, argument, checked, closest,
                                   int_at_least, int_within, mounted, non_empty_list, object_without_repeats, one_of,
                                   or_null, pair, range_problem, setting_problem, under, vector, within)


def load_file(path):
    """Read a .toml or .json scenario file (UTF-8, with or without a byte-order mark, whatever the locale's
    encoding) into a dict."""
    if os.path.isdir(path):
        raise ConfigError("scenario file %s is a directory, not a file" % path)
    if not os.path.isfile(path):
        raise ConfigError("scenario file not found: %s" % path)
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as fh:
                return tomllib.loads(_utf8_text(fh.read()))
        if path.endswith(".json"):
            with open(path, "rb") as fh:
                data = json.loads(_utf8_text(fh.read()), object_pairs_hook=object_without_repeats)
            if not isinstance(data, dict):
                raise ConfigError("%s: top level must be an object" % path)
            return data
    except RepeatedKey as exc:
        raise ConfigError("%s: %s" % (path, exc))
    except ConfigError:
        raise
    except (ValueError, RecursionError) as exc:
        # a TOML or JSON syntax error, bytes that are not UTF-8, an integer of more than 4300 digits (int()
        # refuses it inside both parsers with a plain ValueError) or lists nested thousands deep
        raise ConfigError("%s: not valid %s: %s" % (path, path.rsplit(".", 1)[-1].upper(),
                                                    str(exc).splitlines()[0].split(";")[0]))
    except OSError as exc:
        raise ConfigError("cannot read %s: %s" % (path, exc.strerror or exc))
    raise ConfigError("%s: scenario files must end in .toml or .json" % path)


def _utf8_text(data):
    """The text of a settings file's bytes: UTF-8 (UnicodeDecodeError, a ValueError, for other bytes), a leading
    byte-order mark (which Windows editors write) dropped."""
    return data.decode("utf-8-sig")


def merge(defaults, overrides, where="config", rules=None):
    """A copy of ``defaults`` with ``overrides`` merged in (nested tables key by key) and ``rules`` checked
    (:func:`onboard.core.settings.checked`, ``where`` the owner named in the message, e.g. the scenario's
    name): an unknown key (with the closest known one), a wrong type, a NaN/infinity or a value outside its
    rule raises ConfigError."""
    return checked(defaults, rules or {}, overrides, where)


def nested(settings, labels=None):
    """``{"a.b": 1, "c": 2}`` -> ``{"a": {"b": 1}, "c": 2}`` (dotted setting paths to a settings tree; ``settings``
    a dict or a sequence of (path, value) pairs, taken in order: a later value of a path replaces an earlier one,
    and a table given for a path whose settings were given one by one before is laid over them, table by table,
    as ``{"a": {"b": 1}}`` then ``a.c=2`` is); ConfigError when a path goes on below a setting given a value that
    is no table (``a=3``, then ``a.b=1``), naming the path as ``labels`` (path -> words, e.g. the ``--set`` item)
    gives it."""
    out = {}
    for key, value in (settings.items() if isinstance(settings, dict) else settings):
        node = out
        parts = key.split(".")
        for i, p in enumerate(parts[:-1]):
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError("%s: %s is %s, not a table of settings"
                                  % ((labels or {}).get(key, key), ".".join(parts[:i + 1]), json.dumps(node)))
        leaf = parts[-1]
        value = _tables_copied(value)   # the paths below it set later must not change the caller's tables
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            node[leaf] = overlay(node[leaf], value)
        else:
            node[leaf] = value
    return out


def _tables_copied(value):
    """``value`` with every table reached through tables copied (what :func:`nested` and :func:`overlay` write
    into); lists and other values shared. Iterative: a value nested hundreds deep is no RecursionError."""
    if not isinstance(value, dict):
        return value
    root = dict(value)
    todo = [root]
    while todo:
        table = todo.pop()
        for key, item in table.items():
            if isinstance(item, dict):
                table[key] = dict(item)
                todo.append(table[key])
    return root


def overlay(base, over):
    """A copy of the overrides ``base`` with ``over`` laid on top, table by table (nothing checked: the
    result is checked where it is merged into a scenario's defaults)."""
    out = json.loads(json.dumps(base))
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = overlay(out[key], value)
        else:
            out[key] = value
    return out


def parse_set(items):
    """``["a.b=1.5", "c=true"]`` -> nested dict (:func:`nested`, items in order: a later item for the same path
    wins); values parsed as JSON (an object with a key given twice is refused, as in a settings file), else kept
    as strings."""
    pairs = []
    labels = {}
    for item in items:
        if "=" not in item:
            raise ConfigError("--set expects KEY=VALUE, got %r" % item)
        key, text = item.split("=", 1)
        if "" in key.split("."):
            raise ConfigError("--set expects KEY=VALUE with KEY a setting's dotted path (a.b), got %r" % item)
        try:
            value = json.loads(text, object_pairs_hook=object_without_repeats)
        except RepeatedKey as exc:
            raise ConfigError("--set %s: %s" % (key, exc))
        except json.JSONDecodeError:
            value = text
        except (ValueError, RecursionError) as exc:      # a number of more than 4300 digits, lists thousands deep
            raise ConfigError("--set %s: value not usable: %s" % (key, str(exc).splitlines()[0].split(";")[0]))
        pairs.append((key, value))
        labels[key] = "--set " + item
    try:
        return nested(pairs, labels)
    except RecursionError:                               # tables laid over tables hundreds deep
        raise ConfigError("--set: values nested too deep to lay over each other")


# argparse types: the text converted and checked, "expected an integer >= 1, got '0'"
positive_int = argument(int_at_least(1), int)        # ``--rollouts 0`` is an error, not an empty run
non_negative_int = argument(int_at_least(0), int)
positive_float = argument(POSITIVE)
non_negative_float = argument(NON_NEGATIVE)


def check_ranges(config, rules, where="config"):
    """Raise ConfigError for the first setting outside its rule: "setting <where>.<path> must be ...", or
    "settings <where>.<a>, <where>.<b> must be ..." for a rule relating several (see range_problem)."""
    line = setting_problem(config, rules, prefix=where + ".")
    if line:
        raise ConfigError(line)
