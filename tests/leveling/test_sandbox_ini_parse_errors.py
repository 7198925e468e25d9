"""A user's Sandbox experiment INI that the INI parser cannot read is one line naming the line of the user's file
(the reader puts one line of its own before the file, whose count used to shift every reported line by one, and
a ParsingError named no line at all); a UTF-8 byte-order mark (Windows editors) is not part of the first key."""
import pytest

from harness.sim.sandbox.config import load_experiment, read_ini
from onboard.core.settings import ConfigError

from tests.leveling.test_sandbox_config import _copy_example


def _line_of(path, text):
    lines = open(path, encoding="utf-8").read().splitlines()
    return [i for i, line in enumerate(lines, 1) if line.strip() == text][-1]


@pytest.mark.parametrize("replace,culprit,needle", [
    ({"h = 30.0": "h = 30.0\nh = 31"}, "h = 31", "key 'h' appears twice in [vehicle]"),
    ({"chrono_data_path = .": "chrono_data_path = .\nchrono_data_path = .."}, "chrono_data_path = ..",
     "key 'chrono_data_path' appears twice at the top level"),
    ({"[experiment]": "[map]\n[experiment]"}, "[map]", "section [map] appears twice"),
    ({"h = 30.0": "h = 30.0\nthis is not a key"}, "this is not a key", "cannot read 'this is not a key'"),
])
def test_a_parse_error_names_the_users_line(tmp_path, replace, culprit, needle):
    path = _copy_example(tmp_path, replace)
    with pytest.raises(ConfigError) as err:
        read_ini(path)
    msg = str(err.value)
    assert "not a valid INI (line %d: %s" % (_line_of(path, culprit), needle) in msg, msg
    assert "\n" not in msg and "__top__" not in msg


def test_a_byte_order_mark_is_not_part_of_the_first_key(tmp_path):
    path = _copy_example(tmp_path)
    text = open(path, encoding="utf-8").read()
    for body in (text, text[text.index("output_directory_prefix"):], text[text.index("[vehicle]"):]):
        with open(path, "w", encoding="utf-8-sig") as fh:
            fh.write(body)
        exp = load_experiment(path)
        assert exp.heights_m.shape == (128, 128)
    assert read_ini(path)["vehicle"]["h"] == 30.0
