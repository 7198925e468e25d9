"""``--set KEY=VALUE`` items (harness.config.parse_set, nested): taken in order, a later one for the same setting
wins, a table laid over the settings given one by one before it (as the opposite order does), a JSON value with a
key given twice refused as in a settings file, a key with an empty part refused in one line; the caller's tables
are never changed."""
import pytest

from harness import scenarios
from harness.cli import main
from harness.config import ConfigError, nested, parse_set


def test_a_table_after_a_dotted_setting_is_laid_over_it_not_in_its_place():
    assert parse_set(["a.b=1", 'a={"c": 2}']) == {"a": {"b": 1, "c": 2}}
    assert parse_set(['a={"c": 2}', "a.b=1"]) == {"a": {"b": 1, "c": 2}}


def test_the_last_item_for_a_setting_wins_in_command_line_order():
    assert parse_set(["a.b=1", 'a={"b": 5}', "a.b=2"]) == {"a": {"b": 2}}
    assert parse_set(["a.b=1", "a.b=2"]) == {"a": {"b": 2}}


def test_a_json_value_with_a_key_given_twice_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^--set aiding: key 'rate_hz' appears twice in one object$"):
        parse_set(['aiding={"rate_hz": 5, "rate_hz": 6}'])


@pytest.mark.parametrize("item", ["=3", "a..b=1", "a.=1", ".a=1"])
def test_a_key_with_an_empty_part_is_refused_in_one_line(item):
    with pytest.raises(ConfigError, match="dotted path"):
        parse_set([item])


def test_nested_leaves_the_callers_tables_as_they_were():
    cell = {"a": {"b": 1}, "a.c": 2}
    assert nested(cell) == {"a": {"b": 1, "c": 2}}
    assert cell == {"a": {"b": 1}, "a.c": 2}


def test_a_setting_given_before_a_table_of_its_neighbours_reaches_the_scenario():
    """--set aiding.pos_sigma_m=... then --set aiding={...}: both reach the run's settings (as ``run`` merges)."""
    _module, config = scenarios.prepare("waypoints", parse_set(["aiding.pos_sigma_m=0.07", 'aiding={"rate_hz": 5}']))
    assert config["aiding"]["pos_sigma_m"] == 0.07 and config["aiding"]["rate_hz"] == 5


def test_a_repeated_key_in_a_json_value_exits_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "waypoints", "--quiet", "--out", str(out), "--set",
                 'aiding={"rate_hz": 5, "rate_hz": 6}']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --set aiding: ") and err.count("\n") == 1 and "appears twice" in err, err
    assert not out.exists()


def test_a_table_with_lists_hundreds_deep_is_taken_as_it_is():
    deep = "[" * 900 + "]" * 900
    tree = parse_set(["a.x=1", 'a={"b": %s}' % deep])
    assert tree["a"]["x"] == 1 and isinstance(tree["a"]["b"], list)
