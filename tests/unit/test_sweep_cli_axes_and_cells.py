"""``python -m harness sweep``'s arguments and cells (harness.sweep_cli) and the runner's stored results
(harness.sweep_runner.ResultStore): a seed range beyond any size is refused in one line, an axis value given twice
or a JSON value with a key given twice is refused, a cell whose settings make no settings tree is reported as a
failed cell (the others run), a cell's settings are reported as given, and a stored result file that holds no
record counts as not stored."""
import argparse
import json

import pytest

from harness.config import ConfigError
from harness.sweep_cli import run_sweep, seed_list, split_values, sweep_axes
from harness.sweep_runner import Job, ResultStore, Runner


@pytest.mark.parametrize("text", ["0-100000000000000000000", "1-99999999999999999999999", "5,0-10000000000000000000"])
def test_a_seed_range_beyond_any_size_is_refused_in_one_line(text):
    with pytest.raises(argparse.ArgumentTypeError, match="at most 100000 seeds in one sweep"):
        seed_list(text)


def test_a_json_value_with_a_key_given_twice_is_refused():
    with pytest.raises(ConfigError, match="appears twice"):
        split_values('{"a": 1, "a": 2},{"a": 3}')
    with pytest.raises(ConfigError, match=r"^--set aiding: .*appears twice"):
        sweep_axes(['aiding={"rate_hz": 5, "rate_hz": 6}'])


@pytest.mark.parametrize("item", ["aiding.pos_sigma_m=0.1,0.1", "aiding.pos_sigma_m=0.1,1e-1", 'a=[1, 2],[1,2]'])
def test_an_axis_value_given_twice_is_refused_in_one_line(item):
    with pytest.raises(ConfigError, match="given twice"):
        sweep_axes([item])


def test_a_key_with_an_empty_part_is_refused():
    with pytest.raises(ConfigError, match="empty part"):
        sweep_axes(["aiding..pos_sigma_m=0.1"])


def test_two_cells_of_the_same_settings_are_refused_before_anything_runs(tmp_path):
    axes = {"aiding": [{"rate_hz": 5}, {"rate_hz": 10}], "aiding.rate_hz": [20]}
    with pytest.raises(ConfigError, match="are the same settings"):
        run_sweep("waypoints", [1], axes, str(tmp_path / "s"), reduced=True)


def test_a_cell_that_makes_no_settings_tree_fails_alone_and_cells_keep_their_settings(tmp_path):
    """Cell 0 sets aiding=3 and aiding.pos_sigma_m (no table to hold it): its job fails; cell 1 runs; each row
    and the table name the cell's settings as given."""
    axes = {"aiding": [3, {"rate_hz": 10}], "aiding.pos_sigma_m": [0.1]}
    with Runner() as runner:
        table, rows, result = run_sweep("waypoints", [1], axes, str(tmp_path / "s"), reduced=True, runner=runner)
    assert rows[0]["error"] == "ConfigError" and "aiding is 3, not a table of settings" in rows[0]["message"]
    assert "metrics" in rows[1]
    assert rows[1]["settings"] == {"aiding": {"rate_hz": 10}, "aiding.pos_sigma_m": 0.1}
    assert table["cells"][1]["settings"] == {"aiding": {"rate_hz": 10}, "aiding.pos_sigma_m": 0.1}
    saved = json.loads((tmp_path / "s" / "results.json").read_text())
    assert saved[1]["settings"] == {"aiding": {"rate_hz": 10}, "aiding.pos_sigma_m": 0.1}


def square(x):
    return x * x


@pytest.mark.parametrize("name,data", [("k.json", b"[1, 2]"), ("k.json", b'"text"'), ("k.json", b"{}"),
                                       ("k.pkl", b"\x80\x04K\x01."), ("k.pkl", b"garbage that is no pickle")])
def test_a_stored_file_that_holds_no_record_counts_as_not_stored(tmp_path, name, data):
    store = ResultStore(str(tmp_path))
    (tmp_path / "jobs" / name).write_bytes(data)
    assert store.load("k") == (False, None, None)
    result = Runner().run([Job(square, (3,), key="k")], out_dir=str(tmp_path), resume=True)
    assert result.results == [9] and result.timing["resumed"] == 0


def test_a_stored_record_with_a_wall_time_that_is_no_number_resumes_with_none(tmp_path):
    store = ResultStore(str(tmp_path))
    (tmp_path / "jobs" / "k.json").write_text(json.dumps({"key": "k", "result": 9, "wall_s": "x"}))
    assert store.load("k") == (True, 9, None)
    result = Runner().run([Job(square, (3,), key="k")], out_dir=str(tmp_path), resume=True)
    assert result.results == [9] and result.timing["resumed"] == 1


def test_a_metric_of_huge_magnitude_has_a_summary_and_a_table(tmp_path):
    """Values near the floats' limit (a diverged estimate) are summarised without overflow; a figure beyond the
    floats is null, so table.json stays standard JSON."""
    from harness.sweep_table import build_table, number_summary, write_table
    s = number_summary([1e200, -1e200, 3e200])
    assert s["mean"] == pytest.approx(1e200) and s["sd"] == pytest.approx(2e200)
    assert number_summary([1.7e308, 1.7e308])["mean"] == 1.7e308
    wide = number_summary([1.7e308, -1.7e308])
    assert wide["mean"] == 0.0 and wide["sd"] is None and wide["ci95"] == [None, None]
    assert number_summary([1.0, 2.0, 4.0])["sd"] == pytest.approx(1.5275252316519468, abs=0)
    rows = [{"cell": 0, "seed": s, "settings": {}, "metrics": {"x": v}} for s, v in ((1, 1.7e308), (2, -1.7e308))]
    table = build_table("waypoints", [1, 2], {}, [{}], rows)
    write_table(str(tmp_path), table)
    assert json.loads((tmp_path / "table.json").read_text())["cells"][0]["metrics"]["x"]["sd"] is None


def exits_on_two(x):
    if x == 2:
        raise SystemExit(5)
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_that_calls_sys_exit_fails_alone_on_every_engine(workers):
    """sys.exit inside a job is that job's failure (as on Ray, whose task fails): the sweep goes on, in this
    process and in a pool of workers alike."""
    result = Runner(workers=workers).run([Job(exits_on_two, (x,)) for x in (1, 2, 3)])
    assert result.results == [1, None, 9]
    assert [f["index"] for f in result.failures] == [1] and result.failures[0]["error"] == "SystemExit"
    assert result.failures[0]["message"] == "5"


def test_the_progress_bar_counts_failed_jobs_after_one_comma():
    from tqdm import tqdm
    shown = []

    def look(index, job, outcome):
        shown.extend(str(bar) for bar in list(getattr(tqdm, "_instances", ())) if "sweep-test" in str(bar))

    Runner().run([Job(exits_on_two, (x,)) for x in (2, 3)], show_progress=True, desc="sweep-test", on_outcome=look)
    assert shown and "jobs done, 1 failed" in shown[-1] and ", ," not in shown[-1], shown


@pytest.mark.parametrize("value", ["[" * 100000, "[" * 100000 + "]" * 100000, "1" * 5000])
def test_a_value_nested_thousands_deep_or_of_thousands_of_digits_is_one_line(value):
    with pytest.raises(ConfigError) as exc:
        sweep_axes(["gain=" + value])
    line = str(exc.value)
    assert line.startswith("--set gain: value not usable: ") and "\n" not in line and len(line) < 300, line


def test_non_json_constants_stay_text():
    assert split_values("NaN,Infinity,-Infinity,1") == ["NaN", "Infinity", "-Infinity", 1]


@pytest.mark.parametrize("address, loopback", [
    ("127.0.0.1:6379", True), ("ray://127.0.0.1:10001", True), ("localhost:6379", True), ("[::1]:6379", True),
    ("127.1.2.3:6379", True), ("auto", False), ("10.0.0.1:6379", False), ("ray://head.example:10001", False),
    ("127.0.0.1.nip.io:6379", False),          # a host name that starts like a loopback address resolves anywhere
])
def test_ray_addresses_are_loopback_only_by_address(address, loopback):
    from harness.sweep_runner import _is_loopback
    assert _is_loopback(address) is loopback
