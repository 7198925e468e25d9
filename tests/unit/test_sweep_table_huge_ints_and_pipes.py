"""harness.sweep_table: an integer metric beyond the floats' range is left out of the summary like any non-finite
number (not an OverflowError after every job ran), and a ``|`` in a cell's label or a metric's name stays inside
its Markdown cell; in table.csv a yes/no setting is JSON (true, false) like the other non-numbers."""
from harness.sweep_table import build_table, summarise, write_table


def test_an_integer_metric_beyond_the_floats_is_left_out_of_the_summary():
    out = summarise([{"a": 10 ** 400, "b": 2, "c": -(2 ** 1100)}, {"a": 1, "b": 4, "c": 3}])
    assert out["a"]["n"] == 1 and out["a"]["mean"] == 1.0
    assert out["b"]["n"] == 2 and out["b"]["mean"] == 3.0
    assert out["c"]["n"] == 1 and out["c"]["mean"] == 3.0


def test_integers_within_the_floats_are_summarised_as_before():
    out = summarise([{"a": 10 ** 300}, {"a": 10 ** 300}])
    assert out["a"]["n"] == 2 and out["a"]["mean"] == 1e300


def test_a_sweep_with_an_integer_metric_beyond_the_floats_writes_its_table(tmp_path):
    rows = [{"cell": 0, "seed": 1, "metrics": {"success": True, "count": 10 ** 400}},
            {"cell": 0, "seed": 2, "metrics": {"success": True, "count": 7}}]
    table = build_table("s", [1, 2], {}, [{}], rows)
    assert write_table(str(tmp_path), table) == ["table.json", "table.csv", "table.md"]
    assert "| count | 7 (n 1) |" in (tmp_path / "table.md").read_text()


def test_a_pipe_in_a_label_or_a_metric_name_does_not_split_its_markdown_cell(tmp_path):
    cells = [{"mode": "a|b"}, {"mode": "c"}]
    rows = [{"cell": 0, "seed": 1, "metrics": {"x|y": 1.0}}, {"cell": 1, "seed": 1, "metrics": {"x|y": 2.0}}]
    write_table(str(tmp_path), build_table("s", [1], {"mode": ["a|b", "c"]}, cells, rows))
    lines = (tmp_path / "table.md").read_text().splitlines()
    head = next(line for line in lines if line.startswith("| metric |"))
    row = next(line for line in lines if line.startswith("| x"))
    assert head == '| metric | mode="a\\|b" | mode="c" |'
    assert row == "| x\\|y | 1 (n 1) | 2 (n 1) |"
    # every row of the table has as many cells as its head (a Markdown reader splits on unescaped pipes)
    def cells_of(line):
        return len(line.replace("\\|", "").strip("|").split("|"))
    assert {cells_of(line) for line in lines if line.startswith("|")} == {3}


def test_a_yes_no_setting_is_json_in_the_csv_like_every_other_non_number(tmp_path):
    import csv
    cells = [{"flag": True, "mode": None, "w": [1, 2], "r": 0.5, "name": "x"},
             {"flag": False, "mode": None, "w": [1, 2], "r": 0.5, "name": "x"}]
    rows = [{"cell": 0, "seed": 1, "metrics": {"m": 1.0}}, {"cell": 1, "seed": 1, "metrics": {"m": 2.0}}]
    axes = {"flag": [True, False], "mode": [None], "w": [[1, 2]], "r": [0.5], "name": ["x"]}
    write_table(str(tmp_path), build_table("s", [1], axes, cells, rows))
    with open(tmp_path / "table.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [(r["flag"], r["mode"], r["w"], r["r"], r["name"]) for r in table] == [
        ("true", "null", "[1, 2]", "0.5", "x"), ("false", "null", "[1, 2]", "0.5", "x")]
