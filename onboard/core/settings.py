"""Component settings (MicroPython-compatible): defaults overridden by a user dict with unknown keys
rejected, and value-range rules checked before anything runs.

A rule is (text, predicate): ``predicate(value)`` is True for a valid value and ``text`` completes
"<setting> must be <text>". Predicates that raise TypeError count as False; NaN and infinities fail
every numeric rule. The harness (scenario settings) and the boards (service configs) share these.
"""


class ConfigError(ValueError):
    """A setting is unknown, of the wrong type or outside its range, or a config/data file is malformed;
    the message is one line for the user."""


def _distance(a, b):
    """Levenshtein edit distance of two strings (difflib is not on MicroPython)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a):
        prev, row[0] = row[0], i + 1
        for j, cb in enumerate(b):
            prev, row[j + 1] = row[j + 1], min(row[j + 1] + 1, row[j] + 1, prev + (ca != cb))
    return row[-1]


def closest(name, known):
    """The entry of ``known`` nearest to ``name`` by edit distance, or None when none is near (more than
    a third of the name's letters, at least 2, would have to change)."""
    best, best_d = None, max(2, len(name) // 3) + 1
    for key in sorted(known):
        d = _distance(name, key)
        if d < best_d:
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


def _finite(value):
    """False for a NaN or infinite float, also inside lists (e.g. way-points)."""
    if isinstance(value, float):
        return value - value == 0
    if isinstance(value, (list, tuple)):
        for v in value:
            if not _finite(v):
                return False
    return True


def _merged(defaults, overrides, owner, prefix):
    out = {}
    for key in defaults:
        value = defaults[key]
        out[key] = _merged(value, {}, owner, prefix + key + ".") if isinstance(value, dict) else value
    for key in overrides:
        path = prefix + key
        value = overrides[key]
        if key not in defaults:
            near = closest(key, defaults)
            raise ConfigError("unknown %s setting %r%s" % (
                owner, path, " (did you mean %r?)" % (prefix + near) if near else
                " (known: %s)" % ", ".join(sorted(prefix + k for k in defaults))))
        default = defaults[key]
        if isinstance(default, dict) and default:
            if not isinstance(value, dict):
                raise ConfigError("%s setting %s must be a table of settings, got %r" % (owner, path, value))
            out[key] = _merged(default, value, owner, path + ".")
            continue
        if not _type_ok(default, value):
            raise ConfigError("%s setting %s must be %s, got %r" % (owner, path, type(default).__name__, value))
        if not _finite(value):
            raise ConfigError("%s setting %s must be finite, got %r" % (owner, path, value))
        out[key] = float(value) if isinstance(default, float) else value
    return out


def checked(defaults, rules, overrides, owner):
    """The one way a component takes its settings: a copy of ``defaults`` (nested dicts are merged key by
    key) updated from ``overrides`` (a dict or None), then every ``rules`` entry ({dotted path: rule})
    checked. Raises :class:`ConfigError` with one line naming ``owner`` and the setting: an unknown key
    (with the closest known one), a wrong type, a NaN/infinity, or a value outside its rule."""
    cfg = _merged(defaults, overrides or {}, owner, "")
    problem = range_problem(cfg, rules)
    if problem:
        raise ConfigError("%s setting %s" % (owner, problem))
    return cfg


def with_defaults(defaults, overrides, owner):
    """A copy of ``defaults`` updated from ``overrides``; a key not in ``defaults`` raises
    ValueError naming ``owner`` and the key, so a typo in a config never passes silently."""
    cfg = dict(defaults)
    if overrides:
        for key in overrides:
            if key not in defaults:
                raise ValueError("unknown %s setting %r (known: %s)"
                                 % (owner, key, ", ".join(sorted(defaults))))
            cfg[key] = overrides[key]
    return cfg


def is_number(v):
    """A finite int or float, not a bool (``v - v`` is NaN for NaN and the infinities)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v - v == 0


ANY_NUMBER = ("a number", is_number)
POSITIVE = ("a number > 0", lambda v: is_number(v) and v > 0)
NON_NEGATIVE = ("a number >= 0", lambda v: is_number(v) and v >= 0)
BOOLEAN = ("true or false", lambda v: isinstance(v, bool))
TEXT = ("a non-empty string", lambda v: isinstance(v, str) and len(v) > 0)
UNIT_OPEN = ("a number in (0, 1]", lambda v: is_number(v) and 0 < v <= 1)


def int_at_least(lo):
    return ("an integer >= %d" % lo, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo)


def int_within(lo, hi):
    return ("an integer in %d..%d" % (lo, hi),
            lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi)


def within(lo, hi):
    """lo <= value <= hi."""
    return ("a number in [%g, %g]" % (lo, hi), lambda v: is_number(v) and lo <= v <= hi)


def one_of(*choices):
    """One of ``choices`` (None is written as null, as in the JSON and TOML configs)."""
    return ("one of %s" % ", ".join("null" if c is None else repr(c) for c in choices), lambda v: v in choices)


def vector(count, rule, ordered=False):
    """A list of ``count`` elements that each follow ``rule`` (and, when ordered, ascend)."""
    text, ok = rule

    def check(v):
        return (isinstance(v, list) and len(v) == count and all(ok(x) for x in v)
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


def non_empty_list(rule, text=None):
    """A non-empty list whose elements each follow ``rule``; ``text`` replaces the generated description."""
    each_text, ok = rule
    return (text or "a non-empty list, each %s" % each_text,
            lambda v: isinstance(v, list) and len(v) > 0 and all(ok(x) for x in v))


WAYPOINTS_NE_M = non_empty_list(pair(ANY_NUMBER), "a non-empty list of [north_m, east_m] pairs")


def under(prefix, rules, block=None):
    """``rules`` for a settings block mounted at ``prefix`` (e.g. the vehicle block at "vehicle"); with
    ``block`` (that block's defaults) only the rules of the settings it has."""
    return {"%s.%s" % (prefix, path): rule for path, rule in rules.items() if block is None or path in block}


_MISSING = object()


def range_problem(config, rules):
    """The first setting of ``config`` outside its rule, as "<path> must be <text>, got <value>"; None when
    every one is valid. ``rules``: {dotted path: rule}; a path missing from ``config`` is skipped."""
    for path, rule in rules.items():
        text, ok = rule
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
