"""harness.sweep_cli.split_values: an escaped quote inside a JSON string does not end it, an apostrophe inside a
word opens no quote, and a stray closing bracket does not stop the commas after it from splitting (each of these
made the rest of the list one value); the documented splits stay as they are."""
import pytest

from harness.sweep_cli import split_values, sweep_axes


@pytest.mark.parametrize("text, values", [
    (r'"a\"b","c"', ['a"b', "c"]),
    (r'"a\\",b', ["a\\", "b"]),
    ("it's,b", ["it's", "b"]),
    ("o'brien,smith,jones", ["o'brien", "smith", "jones"]),
    ("1],2", ["1]", 2]),
    ('[1,"x\\",y"],3', [[1, 'x",y'], 3]),
])
def test_escapes_apostrophes_and_stray_brackets_split_where_the_commas_are(text, values):
    assert split_values(text) == values


@pytest.mark.parametrize("text, values", [
    ('0.1,0.2,"a,b",[1,2],{"x":[3,4]},walk', [0.1, 0.2, "a,b", [1, 2], {"x": [3, 4]}, "walk"]),
    ("'a,b',c", ["'a,b'", "c"]),
    ('[1,"x,y"],{"k":"]"},3', [[1, "x,y"], {"k": "]"}, 3]),
    (" 1 , 2 ", [1, 2]),
    ("NaN,Infinity,1", ["NaN", "Infinity", 1]),
])
def test_the_documented_splits_are_unchanged(text, values):
    assert split_values(text) == values


def test_an_axis_with_an_escaped_quote_has_its_two_values():
    assert sweep_axes([r'vehicle.name="a\"b","c"']) == {"vehicle.name": ['a"b', "c"]}
