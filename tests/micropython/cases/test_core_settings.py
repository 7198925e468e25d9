"""onboard.core.settings (checked, the value-range rules): the same verdicts and messages on CPython and MicroPython."""
from onboard.core.settings import (ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, RATE_HZ, TEXT, UNIT_OPEN,
                                   WAYPOINTS_NE_M, ConfigError, checked, closest, int_at_least, int_within,
                                   non_empty_list, one_of, or_null, pair, range_problem, under, vector, within)

RULES = {"rate_hz": int_at_least(1), "gain": POSITIVE, "margin_m": NON_NEGATIVE, "share": within(0.0, 1.0),
         "mode": one_of("a", "b"), "on": BOOLEAN, "name": TEXT, "offset": ANY_NUMBER, "id": int_within(0, 255),
         "box.size_m": pair(POSITIVE), "box.span_m": vector(3, ANY_NUMBER, True), "alpha": UNIT_OPEN,
         "port": or_null(int_within(0, 9)), "nodes": non_empty_list(int_at_least(2)), "route": WAYPOINTS_NE_M}
GOOD = {"rate_hz": 10, "gain": 0.5, "margin_m": 0.0, "share": 1.0, "mode": "b", "on": False, "name": "x",
        "offset": -3.0, "id": 255, "box": {"size_m": [1.0, 2.0], "span_m": [-1.0, 0.0, 0.0]}, "alpha": 1.0,
        "port": None, "nodes": [2, 3], "route": [[0.0, 1.0]]}


def _with(path, value):
    cfg = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    node = cfg
    parts = path.split(".")
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value
    return cfg


def test_good_settings_pass_and_missing_ones_are_skipped():
    assert range_problem(GOOD, RULES) is None
    assert range_problem({"gain": 2}, RULES) is None


def test_each_bad_value_is_named_with_its_rule():
    nan = float("nan")
    inf = float("inf")
    cases = [
        ("rate_hz", 0, "rate_hz must be an integer >= 1, got 0"),
        ("rate_hz", 2.0, "rate_hz must be an integer >= 1, got 2.0"),
        ("rate_hz", True, "rate_hz must be an integer >= 1, got True"),
        ("gain", nan, "gain must be a number > 0, got nan"),
        ("gain", inf, "gain must be a number > 0, got inf"),
        ("gain", "fast", "gain must be a number > 0, got 'fast'"),
        ("margin_m", -0.5, "margin_m must be a number >= 0, got -0.5"),
        ("share", 1.5, "share must be a number in [0, 1], got 1.5"),
        ("mode", "c", "mode must be one of 'a', 'b', got 'c'"),
        ("on", 1, "on must be true or false, got 1"),
        ("name", "", "name must be a non-empty string, got ''"),
        ("offset", -inf, "offset must be a number, got -inf"),
        ("id", 256, "id must be an integer in 0..255, got 256"),
        ("box.size_m", [1.0], "box.size_m must be a list of 2 numbers (each > 0), got [1.0]"),
        ("box.size_m", [1.0, 0.0], "box.size_m must be a list of 2 numbers (each > 0), got [1.0, 0.0]"),
        ("box.span_m", [0.0, -1.0, 2.0], "box.span_m must be a list of 3 numbers (low first), got [0.0, -1.0, 2.0]"),
        ("alpha", 0.0, "alpha must be a number in (0, 1], got 0.0"),
        ("alpha", True, "alpha must be a number in (0, 1], got True"),
        ("port", 10, "port must be null or an integer in 0..9, got 10"),
        ("nodes", [], "nodes must be a non-empty list, each an integer >= 2, got []"),
        ("nodes", [2, 1], "nodes must be a non-empty list, each an integer >= 2, got [2, 1]"),
        ("route", [[0.0, 1.0], [2.0]], "route must be a non-empty list of [north_m, east_m] pairs, got [[0.0, 1.0], [2.0]]"),
    ]
    for path, value, message in cases:
        assert range_problem(_with(path, value), RULES) == message, (path, value)


def test_rules_mount_under_a_prefix():
    rules = under("vehicle", {"mass_kg": POSITIVE})
    assert range_problem({"vehicle": {"mass_kg": 0}}, rules) == "vehicle.mass_kg must be a number > 0, got 0"


def _refused(defaults, rules, overrides):
    try:
        checked(defaults, rules, overrides, "Thing")
    except ConfigError as exc:
        return str(exc)
    raise AssertionError("accepted %r" % (overrides,))


def test_checked_merges_refuses_and_relates_settings():
    defaults = {"gain": 1.0, "on": True, "block": {"rate_hz": 10, "sigma_m": 0.5}, "table": {"a.b": 1}}
    rules = {"gain": POSITIVE, "block.rate_hz": RATE_HZ, "block.sigma_m": NON_NEGATIVE,
             "table": ("a table", lambda v: isinstance(v, dict)),
             ("gain", "block.rate_hz"): ("a gain below the rate", lambda g, r: g < r)}
    cfg = checked(defaults, rules, {"gain": 2, "block": {"sigma_m": 0.25}, "table": {"c.d": 2}}, "Thing")
    assert cfg == {"gain": 2.0, "on": True, "block": {"rate_hz": 10, "sigma_m": 0.25}, "table": {"c.d": 2}}
    assert isinstance(cfg["gain"], float) and defaults["block"]["sigma_m"] == 0.5
    assert checked(defaults, rules, None, "Thing") == defaults
    assert _refused(defaults, rules, {"gian": 2.0}) == "unknown Thing setting 'gian' (did you mean 'gain'?)"
    assert _refused(defaults, rules, {"block": {"rate_h": 5}}) == \
        "unknown Thing setting 'block.rate_h' (did you mean 'block.rate_hz'?)"
    assert _refused(defaults, rules, {"on": 1}) == "Thing setting on must be bool, got 1"
    assert _refused(defaults, rules, {"gain": float("nan")}) == "Thing setting gain must be finite, got nan"
    assert _refused(defaults, rules, {"gain": 1e308}) == \
        "Thing setting gain is 1e+308: no setting takes a magnitude above 1e+12 (a unit or typing error?)"
    assert _refused(defaults, rules, {"table": {"c": [1.0, -2 * 10 ** 13]}}) == \
        "Thing setting table is -2e+13: no setting takes a magnitude above 1e+12 (a unit or typing error?)"
    assert _refused(defaults, rules, {"gain": 0}) == "Thing setting gain must be a number > 0, got 0.0"
    assert _refused(defaults, rules, {"block": {"rate_hz": 3}}) == \
        "Thing setting block.rate_hz must be a whole number of Hz dividing 1000000 (a whole-microsecond period), got 3"
    assert _refused(defaults, rules, {"gain": 20.0}) == \
        "Thing settings gain, block.rate_hz must be a gain below the rate, got 20.0, 10"
    assert closest("wheelbse_m", ["wheelbase_m", "wheel_radius_m"]) == "wheelbase_m"
    assert closest("zzzz", ["wheelbase_m"]) is None


def test_a_key_that_is_not_text_is_an_unknown_setting_with_one_line():
    """A table built in code (or a JSON/TOML loader's output gone wrong) with a number for a key: the one-line
    ConfigError of an unknown setting, not a TypeError from joining the key to its block's path."""
    defaults = {"gain": 1.0, "block": {"rate_hz": 10}}
    assert _refused(defaults, {}, {1: 2.0}) == "unknown Thing setting '1' (known: block, gain)"
    assert _refused(defaults, {}, {"block": {None: 5}}) == "unknown Thing setting 'block.None' (known: block.rate_hz)"


def test_one_of_numbers_refuses_a_boolean_and_one_of_booleans_refuses_a_number():
    """``True == 1`` in Python: ``one_of(1, -1)`` must still refuse true, and ``one_of(True, False)`` refuse 0/1
    (a setting with a rule is checked by its rule alone, so no type check catches it)."""
    text, ok = one_of(1, -1)
    assert ok(1) and ok(-1) and not ok(True) and not ok(0)
    text, ok = one_of(True, False)
    assert ok(True) and ok(False) and not ok(1) and not ok(0)
    text, ok = one_of(None, "a")
    assert ok(None) and ok("a") and not ok(False) and not ok(0)
    assert _refused({"sign": 1}, {"sign": one_of(1, -1)}, {"sign": True}) == \
        "Thing setting sign must be one of 1, -1, got True"
