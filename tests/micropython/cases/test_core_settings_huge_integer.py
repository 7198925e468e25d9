"""onboard.core.settings.checked: an integer beyond the floats (a JSON file or --set may carry 400 digits) is
refused with the magnitude line naming the setting, on CPython (where %g raised OverflowError) and on
MicroPython (where it printed inf)."""
from onboard.core.settings import ConfigError, checked

DEFAULTS = {"gain": 1.0, "count": 3, "block": {"table": [1.0, 2.0]}}


def _message(overrides):
    try:
        checked(DEFAULTS, {}, overrides, "Thing")
    except ConfigError as exc:
        return str(exc)
    raise AssertionError("accepted %r" % (overrides,))


def test_an_integer_beyond_the_floats_is_refused_naming_the_setting():
    huge = 10 ** 400
    assert _message({"gain": huge}) == ("Thing setting gain is an integer of magnitude beyond 1e308: no setting "
                                        "takes a magnitude above 1e+12 (a unit or typing error?)")
    assert _message({"count": -huge}).startswith("Thing setting count is an integer of magnitude beyond 1e308:")
    assert _message({"block": {"table": [1.0, huge]}}).startswith(
        "Thing setting block.table is an integer of magnitude beyond 1e308:")


def test_a_large_number_within_the_floats_keeps_its_value_in_the_line():
    assert _message({"count": 2 * 10 ** 13}).startswith("Thing setting count is 2e+13: no setting takes")
    assert _message({"gain": -1e300}).startswith("Thing setting gain is -1e+300: no setting takes")
