"""Component settings (MicroPython-compatible): one way to take them, ``checked``.

Every component declares ``DEFAULTS`` (its settings with their default values; units in the names) and
``SETTING_RANGES`` (``{dotted path: rule}``) side by side and takes its settings with
``checked(DEFAULTS, SETTING_RANGES, overrides, owner)``: nested blocks merge key by key, an unknown key, a
wrong type, a NaN/infinity, a number of magnitude above ``MAX_MAGNITUDE`` or a value outside its rule raises
:class:`ConfigError` with one line naming the owner and the setting (for an unknown key, the closest known
one).

A rule is (text, predicate): ``predicate(value)`` is True for a valid value and ``text`` completes
"<setting> must be <text>". Predicates that raise TypeError count as False; NaN and infinities fail every
numeric rule. A rule keyed by a tuple of paths relates settings to each other: ``predicate(*values)`` gets
their values in that order, and the message is "<a>, <b> must be <text>, got <value a>, <value b>". A rule on
a path whose default is a table makes that table one value (replaced whole, not merged; its keys are the
rule's to check), e.g. a table of firmware parameters. The scenarios, the boards and the simulated devices
share these.
"""


class ConfigError(ValueError):
    """A setting is unknown, of the wrong type or outside its range, or a config/data file is malformed;
    the message is one line for the user."""


class RepeatedKey(ConfigError):
    """A key given twice in one object of a JSON settings file (see :func:`object_without_repeats`)."""


def object_without_repeats(pairs):
    """``json.load``'s ``object_pairs_hook`` for settings files: the object as a dict; RepeatedKey for a key
    given twice (JSON keeps the last one silently, where TOML refuses it)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKey("key %r appears twice in one object" % (key,))
        out[key] = value
    return out


def _distance(a, b):
    """Levenshtein edit distance of two strings (difflib is not on MicroPython)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a):
        prev, row[0] = row[0], i + 1
        for j, cb in enumerate(b):
            prev, row[j + 1] = row[j + 1], min(row[j + 1] + 1, row[j] + 1, prev + (ca != cb))
    return row[-1]


def closest(name, known):
    """The entry of ``known`` nearest to ``name`` by edit distance, or None when none is near: near is at
    most a third of the name's letters (at least 2) to change, or one of the two beginning the other (at
    least 3 letters, e.g. a unit suffix left out)."""
    limit = max(2, len(name) // 3)
    best, best_d = None, None
    for key in sorted(known):
        d = _distance(name, key)
        near = d <= limit or (min(len(name), len(key)) >= 3 and (key.startswith(name) or name.startswith(key)))
        if near and (best is None or d < best_d):
            best, best_d = key, d
    return best


def _type_ok(default, value):
    """``value`` may replace ``default``: same kind (an int passes for a float; None takes anything)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return isinstance(value, type(default))


def _leaves(value):
    """The values inside ``value``: itself, or the leaves of its lists and tables (e.g. way-points), in order."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for k in value:
            yield from _leaves(value[k])
    else:
        yield value


def _finite(value):
    """False for a NaN or infinite float, also inside lists (e.g. way-points) and tables."""
    for v in _leaves(value):
        if isinstance(v, float) and not v - v == 0:
            return False
    return True


# No setting is a number this large (the largest default is below 1e9; a stress in Pa, a time in us stay below
# it): a larger one is a unit or typing error, and 1e308 overflows the arithmetic that uses it
MAX_MAGNITUDE = 1e12


def _too_large(value):
    """The first number in ``value`` (lists and tables too) whose magnitude exceeds MAX_MAGNITUDE, or None."""
    for v in _leaves(value):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > MAX_MAGNITUDE:
            return v
    return None


def _copy(value):
    """A copy of a default: tables and lists copied all the way down (a component may change its own)."""
    if isinstance(value, dict):
        return {k: _copy(value[k]) for k in value}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _merged(defaults, overrides, owner, prefix, rules):
    out = {}
    for key in defaults:
        out[key] = _copy(defaults[key])
    if not isinstance(overrides, dict):
        raise ConfigError("%s settings%s must be a table of settings, got %r"
                          % (owner, " " + prefix[:-1] if prefix else "", overrides))
    for key in overrides:
        path = prefix + (key if isinstance(key, str) else str(key))
        value = overrides[key]
        if key not in defaults:
            near = closest(key, defaults) if isinstance(key, str) else None
            raise ConfigError("unknown %s setting %r%s" % (
                owner, path, " (did you mean %r?)" % (prefix + near) if near else
                " (known: %s)" % ", ".join(sorted(prefix + k for k in defaults))))
        default = defaults[key]
        ruled = path in rules
        if isinstance(default, dict) and default and not ruled:
            if not isinstance(value, dict):
                raise ConfigError("%s setting %s must be a table of settings, got %r" % (owner, path, value))
            out[key] = _merged(default, value, owner, path + ".", rules)
            continue
        if not ruled and not _type_ok(default, value):
            raise ConfigError("%s setting %s must be %s, got %r" % (owner, path, type(default).__name__, value))
        if not _finite(value):
            raise ConfigError("%s setting %s must be finite, got %r" % (owner, path, value))
        big = _too_large(value)
        if big is not None:
            # an integer beyond the floats (JSON allows 400 digits) has no %g (OverflowError; "inf" on MicroPython)
            text = ("%g" % big if isinstance(big, float) or -1e308 <= big <= 1e308
                    else "an integer of magnitude beyond 1e308")
            raise ConfigError("%s setting %s is %s: no setting takes a magnitude above %g (a unit or typing error?)"
                              % (owner, path, text, MAX_MAGNITUDE))
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out[key] = value
    return out


def checked(defaults, rules, overrides, owner):
    """The one way a component takes its settings: a copy of ``defaults`` (nested tables merged key by key)
    updated from ``overrides`` (a dict or None), then every rule of ``rules`` ({dotted path or tuple of
    paths: rule}) checked. Raises :class:`ConfigError` with one line naming ``owner`` and the setting: an
    unknown key (with the closest known one), a wrong type, a NaN/infinity, or a value outside its rule. A
    setting with a rule is checked by its rule alone (e.g. ``or_null`` lets null replace a number)."""
    cfg = _merged(defaults, {} if overrides is None else overrides, owner, "", rules)
    line = setting_problem(cfg, rules, owner)
    if line:
        raise ConfigError(line)
    return cfg


def is_number(v):
    """A finite int or float, not a bool (``v - v`` is NaN for NaN and the infinities)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v - v == 0


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


ANY_NUMBER = ("a number", is_number)
POSITIVE = ("a number > 0", lambda v: is_number(v) and v > 0)
NON_NEGATIVE = ("a number >= 0", lambda v: is_number(v) and v >= 0)
BOOLEAN = ("true or false", lambda v: isinstance(v, bool))
TEXT = ("a non-empty string", lambda v: isinstance(v, str) and len(v) > 0)
UNIT_OPEN = ("a number in (0, 1]", lambda v: is_number(v) and 0 < v <= 1)
# a rate of anything run on the microsecond clock (scheduler groups, simulated sensors): whole Hz whose
# period is a whole number of microseconds
RATE_HZ = ("a whole number of Hz dividing 1000000 (a whole-microsecond period)",
           lambda v: _is_int(v) and v >= 1 and 1000000 % v == 0)


def int_at_least(lo):
    return ("an integer >= %d" % lo, lambda v: _is_int(v) and v >= lo)


def int_within(lo, hi):
    return ("an integer in %d..%d" % (lo, hi), lambda v: _is_int(v) and lo <= v <= hi)


def within(lo, hi):
    """lo <= value <= hi."""
    return ("a number in [%g, %g]" % (lo, hi), lambda v: is_number(v) and lo <= v <= hi)


def _is_choice(value, choice):
    """``value`` is ``choice``'s value, a boolean only for a boolean (``True == 1`` in Python)."""
    return value == choice and isinstance(value, bool) == isinstance(choice, bool)


def one_of(*choices):
    """One of ``choices`` (None is written as null, as in the JSON and TOML configs); true/false match only
    the choices True/False, and a number only a number."""
    return ("one of %s" % ", ".join("null" if c is None else repr(c) for c in choices),
            lambda v: any(_is_choice(v, c) for c in choices))


def vector(count, rule, ordered=False):
    """A list (or tuple) of ``count`` elements that each follow ``rule`` (and, when ordered, ascend)."""
    text, ok = rule

    def check(v):
        return (isinstance(v, (list, tuple)) and len(v) == count and all(ok(x) for x in v)
                and (not ordered or all(v[i] <= v[i + 1] for i in range(count - 1))))
    notes = ([text.replace("a number ", "each ")] if text != ANY_NUMBER[0] else []) + (["low first"] if ordered else [])
    return ("a list of %d numbers%s" % (count, " (%s)" % ", ".join(notes) if notes else ""), check)


def pair(rule, ordered=False):
    """A two-element list whose elements follow ``rule`` (and, when ordered, first <= second)."""
    return vector(2, rule, ordered)


def or_null(rule):
    """null (None: off / none / pick one) or a value that follows ``rule``."""
    text, ok = rule
    return ("null or %s" % text, lambda v: v is None or ok(v))


def _distinct(values):
    """No value twice (values may be unhashable: lists)."""
    seen = []
    for x in values:
        if x in seen:
            return False
        seen.append(x)
    return True


def non_empty_list(rule, text=None, distinct=False):
    """A non-empty list whose elements each follow ``rule``; ``text`` replaces the generated description.
    ``distinct``: no value twice (a list whose values key the results, where a repeat would overwrite one)."""
    each_text, ok = rule
    if distinct:
        return (text or "a non-empty list of distinct values, each %s" % each_text,
                lambda v: isinstance(v, list) and len(v) > 0 and all(ok(x) for x in v) and _distinct(v))
    return (text or "a non-empty list, each %s" % each_text,
            lambda v: isinstance(v, list) and len(v) > 0 and all(ok(x) for x in v))


WAYPOINTS_NE_M = non_empty_list(pair(ANY_NUMBER), "a non-empty list of [north_m, east_m] pairs")


_MISSING = object()


def _lookup(config, path):
    """The value at dotted ``path`` of nested dicts, or _MISSING."""
    node = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _prefixed(prefix, key):
    if isinstance(key, tuple):
        return tuple(prefix + p for p in key)
    return prefix + key


def under(prefix, rules, block=None):
    """``rules`` for a settings block mounted at ``prefix`` (e.g. the vehicle block at "vehicle"); with
    ``block`` (that block's defaults) only the rules of the settings it has (a rule relating several
    settings: when it has all of them)."""
    out = {}
    for key, rule in rules.items():
        paths = key if isinstance(key, tuple) else (key,)
        if block is None or all(_lookup(block, p) is not _MISSING for p in paths):
            out[_prefixed(prefix + ".", key)] = rule
    return out


def mounted(defaults, *blocks):
    """The rules of component blocks where a scenario's ``defaults`` mount them: ``blocks`` are (prefix,
    rules) pairs, e.g. ("imu", harness.sim.sensors.imu.SETTING_RANGES); each keeps the rules of the
    settings that scenario's block has (:func:`under`)."""
    out = {}
    for prefix, rules in blocks:
        out.update(under(prefix, rules, _lookup(defaults, prefix)))
    return out


def _problem(config, rules, prefix):
    """(number of settings, "<path(s)> must be <text>, got <value(s)>") of the first rule ``config``
    breaks, or None; ``prefix`` is written before every path."""
    for key, rule in rules.items():
        text, ok = rule
        paths = key if isinstance(key, tuple) else (key,)
        values = [_lookup(config, p) for p in paths]
        if any(v is _MISSING for v in values):
            continue
        try:
            good = ok(*values)
        except TypeError:
            good = False
        if not good:
            return len(paths), "%s must be %s, got %s" % (", ".join(prefix + p for p in paths), text,
                                                         ", ".join(repr(v) for v in values))
    return None


def range_problem(config, rules, prefix=""):
    """The first setting of ``config`` outside its rule, as "<path> must be <text>, got <value>" (for a rule
    relating several settings "<a>, <b> must be <text>, got <value a>, <value b>"); None when every one is
    valid. ``rules``: {dotted path or tuple of paths: rule}; a rule whose path is missing from ``config`` is
    skipped. ``prefix`` is written before every path."""
    found = _problem(config, rules, prefix)
    return found[1] if found else None


def setting_problem(config, rules, owner=None, prefix=""):
    """One line for the first setting of ``config`` outside its rule: "[<owner> ]setting <problem>" ("settings"
    when the rule relates several), or None (see :func:`range_problem`)."""
    found = _problem(config, rules, prefix)
    if found is None:
        return None
    return "%s%s %s" % (owner + " " if owner else "", "settings" if found[0] > 1 else "setting", found[1])


def argument(rule, convert=float):
    """A command-line ``type`` (argparse) from a rule: the text converted with ``convert`` and checked, e.g.
    ``argument(POSITIVE)``, ``argument(int_at_least(0), int)``; host tools only (argparse is not on boards)."""
    text, ok = rule

    def parse(arg):
        try:
            value = convert(arg)
        except ValueError:
            value = None
        if value is None or not ok(value):
            from argparse import ArgumentTypeError
            raise ArgumentTypeError("expected %s, got %r" % (text, arg))
        return value
    return parse
