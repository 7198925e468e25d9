"""harness.config: a number of more than 4300 digits or lists nested thousands deep, in a settings file or a
--set value, is one ConfigError line (the parsers' int() raised a plain ValueError, and the recursion a
RecursionError, past the JSON/TOML error handling: a traceback); a 400-digit integer reaches the magnitude check
and is refused naming the setting."""
import pytest

from harness.config import ConfigError, load_file, merge, parse_set

LONG = "1" * 5000
DEEP = "[" * 100000


@pytest.mark.parametrize("name,text", [
    ("long.json", '{"gain": %s}' % LONG),
    ("long.toml", "gain = %s\n" % LONG),
    ("deep.json", '{"gain": %s}' % DEEP),
    ("deep.toml", "gain = %s\n" % DEEP),
])
def test_a_settings_file_with_a_huge_integer_or_deep_lists_is_one_line(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_file(str(path))
    line = str(exc.value)
    assert line.startswith("%s: not valid %s: " % (path, name.rsplit(".", 1)[1].upper())), line
    assert "\n" not in line and len(line) < 300, line


@pytest.mark.parametrize("value", [LONG, DEEP])
def test_a_set_value_with_a_huge_integer_or_deep_lists_is_one_line(value):
    with pytest.raises(ConfigError) as exc:
        parse_set(["gain=" + value])
    line = str(exc.value)
    assert line.startswith("--set gain: value not usable: "), line
    assert "\n" not in line and len(line) < 300, line


def test_a_400_digit_integer_is_refused_by_magnitude_from_a_file_and_from_set(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"gain": %s}' % ("9" * 400))
    for overrides in (load_file(str(path)), parse_set(["gain=" + "9" * 400])):
        with pytest.raises(ConfigError, match="^scenario setting gain is an integer of magnitude beyond 1e308: "
                                              "no setting takes a magnitude above 1e"):
            merge({"gain": 1.0}, overrides, "scenario")
