"""grading-sweep writes each report file whole or not at all: a write cut short (here: a value that cannot
be written, half-way through the file, as an interrupt would) leaves the earlier file as it was, not half
of a new one, and no temporary file."""
import json
import os

import pytest

from harness.scenarios.grading import sweep


def test_a_write_cut_short_leaves_the_earlier_table(tmp_path):
    sweep._write(str(tmp_path), "table1.json", {"extreme": {"agent1": 0.5}})
    before = (tmp_path / "table1.json").read_text()
    with pytest.raises(TypeError):
        sweep._write(str(tmp_path), "table1.json", {"a_first": [0.25] * 100, "z_unwritable": object()})
    assert (tmp_path / "table1.json").read_text() == before
    assert json.loads(before) == {"extreme": {"agent1": 0.5}}
    assert sorted(os.listdir(tmp_path)) == ["table1.json"]


def test_written_file_is_sorted_indented_json_with_a_final_newline(tmp_path):
    sweep._write(str(tmp_path), "t.json", {"b": 1, "a": [1.5]})
    assert (tmp_path / "t.json").read_text() == '{\n  "a": [\n    1.5\n  ],\n  "b": 1\n}\n'
