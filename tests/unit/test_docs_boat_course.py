"""docs/formats/boat-course.md: the example course it links loads, and every error line it shows is what
``load_course`` says for such a file."""
import os
import re

import pytest

from harness.sim import boat_course as bc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "formats", "boat-course.md")
START = "[start]\nnorth_m = 0.0\neast_m = 0.0\nyaw_deg = 0.0\n"
GOAL = "[goal]\nnorth_m = 50.0\neast_m = 0.0\n"


def _buoys(n, last):
    plain = "[[buoys]]\nnorth_m = 10.0\neast_m = 1.0\nradius_m = 0.4\nheight_m = 1.0\n"
    return plain * n + "[[buoys]]\nnorth_m = 10.0\neast_m = 1.0\n" + last


# (a file the page's error line describes, the start of that line: the page abbreviates lists with "...")
CASES = [
    (START + GOAL + _buoys(3, "radius_m = -0.4\nheight_m = 1.0\n"), "buoys[3].radius_m"),
    (START + GOAL + _buoys(0, "radius_m = 0.4\nheight_m = 1.0\ncolour = \"red\"\n"), "buoys[0].colour"),
    (START + GOAL + _buoys(2, "radius_m = 0.4\nheight_m = 1.0\nrole = \"red\"\n"), "buoys[2].role"),
    ("[start]\nnorth_m = 0.0\neast_m = 0.0\n" + GOAL, "start.yaw_deg"),
    (START + "[goal]\nnorth_m = nan\neast_m = 0.0\n", "goal.north_m"),
    (START, "goal/tasks"),
    ("[start\n", "not valid TOML"),
]


def _doc_lines():
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("## Errors"):]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("course file my.toml: ")]


def test_linked_example_loads():
    course = bc.load_course(os.path.join(REPO, "harness", "scenarios", "boat", "courses", "example.toml"))
    assert course.tasks and course.goal is None and course.shore


@pytest.mark.parametrize("text, key", CASES)
def test_shown_error_lines_are_the_readers(tmp_path, monkeypatch, text, key):
    shown = [line for line in _doc_lines() if line.startswith("course file my.toml: %s" % key)]
    assert len(shown) == 1, key
    expected = shown[0].split("...")[0]
    path = tmp_path / "my.toml"
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(bc.CourseFileError) as info:
        bc.load_course("my.toml")
    assert str(info.value).startswith(expected), (str(info.value), expected)


def test_every_shown_error_line_is_checked():
    assert len(_doc_lines()) == len(CASES)
