"""The sweep runner (harness.sweep_runner) and ``python -m harness sweep`` on the local engine.

- results in job order, identical in this process and in a pool of worker processes;
- a job that raises is reported with its seed and settings and the others' results are kept; the strict
  ``map`` (and ``harness.parallel.ordered_map``) raises the job's own exception;
- finished jobs' results are stored as they arrive and ``resume`` does not run them again, also after the
  sweep's process was killed midway (a subprocess, killed once some results exist);
- the sweep's table: every metric with its mean and 95 % interval per cell, as JSON, CSV and Markdown.
The Ray engine: tests/unit/test_sweep_ray.py.
"""
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.parallel import ordered_map
from harness.sweep_cli import grid, seed_list, split_values, sweep_axes
from harness.scenario_jobs import scenario_job
from harness.sweep_runner import EngineError, Job, Runner, job_key, map_ordered
from harness.sweep_table import fraction_summary, metric_leaves, number_summary, summarise, t975

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def noisy_sum(seed, n):
    """A seeded job: the same numbers wherever it runs."""
    return float(np.random.default_rng(seed).normal(size=n).sum())


def fails_on_three(seed):
    if seed == 3:
        raise ValueError("seed three is bad")
    return {"seed": seed, "square": seed * seed}


class Unpicklable(Exception):
    def __init__(self, handle):
        super().__init__("cannot travel")
        self.handle = handle

    def __reduce__(self):
        raise TypeError("not picklable")


def raises_unpicklable(seed):
    raise Unpicklable(lambda: seed)


def test_results_come_in_job_order_and_do_not_depend_on_the_worker_count():
    args = [(seed, 2000) for seed in range(9)]
    serial = list(map_ordered(noisy_sum, args, workers=1))
    pooled = list(map_ordered(noisy_sum, args, workers=2))
    assert serial == pooled == [noisy_sum(*a) for a in args]
    assert list(ordered_map(abs, [-3, 2, -1], workers=2)) == [3, 2, 1]       # the old entry point, same path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_job_is_reported_with_its_seed_and_the_others_complete(workers):
    jobs = [Job(fails_on_three, (seed,), info={"seed": seed, "settings": {"k": seed % 2}}) for seed in range(1, 6)]
    with Runner(workers=workers) as runner:
        result = runner.run(jobs)
    assert result.results == [{"seed": s, "square": s * s} if s != 3 else None for s in range(1, 6)]
    assert not result.ok and len(result.failures) == 1
    failure = result.failures[0]
    assert failure["index"] == 2 and failure["info"] == {"seed": 3, "settings": {"k": 1}}
    assert failure["error"] == "ValueError" and failure["message"] == "seed three is bad"
    assert "fails_on_three" in failure["traceback"]
    timing = result.timing
    assert timing["jobs"] == timing["ran"] == 5 and timing["failed"] == 1 and timing["workers"] == workers
    assert [j["status"] for j in timing["per_job"]] == ["ok", "ok", "failed", "ok", "ok"]
    assert all(j["wall_s"] >= 0.0 and j["overhead_s"] >= 0.0 for j in timing["per_job"])


@pytest.mark.parametrize("workers", [1, 2])
def test_the_strict_map_raises_the_jobs_own_exception_after_the_earlier_results(workers):
    got = []
    with pytest.raises(ValueError, match="seed three is bad"):
        for value in map_ordered(fails_on_three, [(s,) for s in range(1, 6)], workers=workers):
            got.append(value["seed"])
    assert got == [1, 2]


def test_an_exception_that_cannot_travel_back_is_still_reported():
    with pytest.raises(Exception, match="Unpicklable"):
        list(map_ordered(raises_unpicklable, [(1,), (2,)], workers=2))
    result = Runner(workers=2).run([Job(raises_unpicklable, (1,)), Job(noisy_sum, (1, 3))])
    assert result.failures[0]["error"] == "Unpicklable" and result.results[1] == noisy_sum(1, 3)


def test_results_are_stored_as_they_arrive_and_resume_runs_only_the_missing_jobs(tmp_path):
    jobs = [Job(noisy_sum, (seed, 100), info={"seed": seed}) for seed in range(6)]
    first = Runner(workers=2).run(jobs[:4], out_dir=str(tmp_path))
    assert sorted(os.listdir(tmp_path / "jobs")) == sorted(j.key + ".json" for j in jobs[:4])
    again = Runner(workers=2).run(jobs, out_dir=str(tmp_path), resume=True)
    assert again.results[:4] == first.results and again.results == [noisy_sum(s, 100) for s in range(6)]
    assert again.timing["resumed"] == 4 and again.timing["ran"] == 2
    assert [j["status"] for j in again.timing["per_job"]] == ["resumed"] * 4 + ["ok"] * 2
    fresh = Runner().run(jobs, out_dir=str(tmp_path / "fresh"))
    assert fresh.results == again.results


def test_job_keys_name_the_job_and_nothing_else():
    a = scenario_job("waypoints", {"imu": {"rate_hz": 100}}, seed=3)
    assert a.key == scenario_job("waypoints", {"imu": {"rate_hz": 100}}, seed=3).key
    assert a.key != scenario_job("waypoints", {"imu": {"rate_hz": 100}}, seed=4).key
    assert a.key != scenario_job("waypoints", {"imu": {"rate_hz": 200}}, seed=3).key
    assert a.info == {"scenario": "waypoints", "settings": {"imu": {"rate_hz": 100}}, "seed": 3}
    assert job_key(noisy_sum, (np.arange(3),)) == job_key(noisy_sum, (np.arange(3),))      # pickled arguments
    with pytest.raises(ValueError, match="same key"):
        Runner().run([Job(noisy_sum, (1, 2)), Job(noisy_sum, (1, 2))])


def test_engine_choices_are_checked_in_one_line():
    with pytest.raises(EngineError, match="unknown engine"):
        Runner("dask")
    with pytest.raises(EngineError, match="--engine ray"):
        Runner("local", address="10.0.0.5:6379")


# ------------------------------------------------------------------------------------------ the table

def test_intervals_of_numbers_and_of_yes_no_metrics():
    s = number_summary([1.0, 2.0, 3.0, 4.0])
    half = t975(3) * math.sqrt(5.0 / 3.0) / 2.0
    assert s["n"] == 4 and s["mean"] == 2.5 and s["ci95"] == pytest.approx([2.5 - half, 2.5 + half])
    one = number_summary([7.0])                 # one run: no interval (and no sample sd), not [7, 7]
    assert one["n"] == 1 and one["mean"] == 7.0 and one["ci95"] == [None, None] and one["sd"] is None
    assert t975(1) == 12.706 and t975(200) == pytest.approx(1.9719, abs=1e-3)
    f = fraction_summary([True] * 8 + [False] * 2)                      # Wilson: 0.8 of 10 -> [0.490, 0.943]
    assert f["mean"] == 0.8 and f["ci95"] == pytest.approx([0.4902, 0.9433], abs=1e-4)
    assert fraction_summary([True, True])["ci95"][1] == 1.0


def test_one_seed_shows_the_mean_alone_and_a_null_interval(tmp_path):
    from harness.sweep_table import build_table, write_table
    rows = [{"cell": 0, "seed": 1, "metrics": {"err_m": 7.0, "ok": True}},
            {"cell": 1, "seed": 1, "metrics": {"err_m": 2.0, "ok": True}},
            {"cell": 1, "seed": 2, "metrics": {"err_m": 4.0, "ok": False}}]
    table = build_table("demo", [1, 2], ["k"], [{"k": 1}, {"k": 2}], rows)
    write_table(str(tmp_path), table)
    saved = json.loads((tmp_path / "table.json").read_text())
    one, two = saved["cells"][0]["metrics"]["err_m"], saved["cells"][1]["metrics"]["err_m"]
    assert one["n"] == 1 and one["ci95"] == [None, None] and one["sd"] is None and one["mean"] == 7.0
    assert two["n"] == 2 and two["ci95"][0] < 3.0 < two["ci95"][1]
    md = (tmp_path / "table.md").read_text()
    row = [line for line in md.splitlines() if line.startswith("| err_m |")][0]
    assert "| 7 (n 1) |" in row and "[7, 7]" not in row and "| 3 [" in row
    csv_row = [line for line in (tmp_path / "table.csv").read_text().splitlines() if line.startswith("1,err_m,")][0]
    assert csv_row == "1,err_m,number,1,7.0,,,,7.0,7.0"


def test_every_numeric_metric_is_summarised_under_its_dotted_name():
    runs = [{"success": True, "err_m": 0.1, "est": {"updates": 3, "mode": "x"}, "track": [1, 2], "gap_m": None},
            {"success": False, "err_m": 0.3, "est": {"updates": 5, "mode": "y"}, "track": [3], "gap_m": 2.0}]
    assert [p for p, _ in metric_leaves(runs[0])] == ["success", "err_m", "est.updates", "gap_m"]
    table = summarise(runs)
    assert list(table) == ["success", "err_m", "est.updates", "gap_m"]
    assert table["success"]["kind"] == "fraction" and table["success"]["mean"] == 0.5
    assert table["err_m"]["mean"] == pytest.approx(0.2) and table["est.updates"]["mean"] == 4.0
    assert table["gap_m"]["n"] == 1


def test_seeds_values_and_grids_parse():
    assert seed_list("1-5") == [1, 2, 3, 4, 5] and seed_list("0,4,10-12") == [0, 4, 10, 11, 12]
    for bad in ("5-1", "a", "1,1", "-3", ""):
        with pytest.raises(Exception):
            seed_list(bad)
    assert split_values('0.1,0.2,"a,b",[1,2],{"x":[3,4]},walk') == [0.1, 0.2, "a,b", [1, 2], {"x": [3, 4]}, "walk"]
    axes = sweep_axes(["a.b=1,2", "c=x,y,z"])
    assert axes == {"a.b": [1, 2], "c": ["x", "y", "z"]}
    assert grid(axes)[:2] == [{"a.b": 1, "c": "x"}, {"a.b": 1, "c": "y"}] and len(grid(axes)) == 6
    with pytest.raises(ConfigError, match="given twice"):
        sweep_axes(["a=1", "a=2"])


# ------------------------------------------------------------------------------------ the sweep command

def _sweep(tmp_path, name, *extra):
    out = tmp_path / name
    code = main(["sweep", "waypoints", "--reduced", "--quiet", "--out", str(out)] + list(extra))
    return code, out


def test_sweep_writes_one_table_and_the_same_per_seed_metrics_for_any_worker_count(tmp_path, capsys):
    code, one = _sweep(tmp_path, "one", "--seeds", "1-3", "--set", "aiding.pos_sigma_m=0.02,0.2")
    assert code == 0, capsys.readouterr().err
    code, two = _sweep(tmp_path, "two", "--seeds", "1-3", "--set", "aiding.pos_sigma_m=0.02,0.2", "--workers", "2")
    assert code == 0
    for name in ("results.json", "table.json", "table.csv", "table.md"):
        assert (one / name).read_text() == (two / name).read_text(), name
    table = json.loads((one / "table.json").read_text())
    assert [c["settings"] for c in table["cells"]] == [{"aiding.pos_sigma_m": 0.02}, {"aiding.pos_sigma_m": 0.2}]
    cell = table["cells"][1]["metrics"]
    assert cell["success"]["kind"] == "fraction" and cell["path_error_rms_m"]["n"] == 3
    low, high = cell["path_error_rms_m"]["ci95"]
    assert low <= cell["path_error_rms_m"]["mean"] <= high
    rows = list(csv.DictReader((one / "table.csv").open()))
    assert {r["metric"] for r in rows} >= {"success", "path_error_rms_m", "estimator.updates"}
    assert "| path_error_rms_m |" in (one / "table.md").read_text()
    per_seed = json.loads((one / "results.json").read_text())
    assert [(r["cell"], r["seed"]) for r in per_seed] == [(c, s) for c in (0, 1) for s in (1, 2, 3)]
    run = json.loads((two / "run.json").read_text())["timing"]
    assert run["engine"] == "local" and run["workers"] == 2 and len(run["per_job"]) == 6
    assert all(j["wall_s"] > 0 for j in run["per_job"]) and run["overhead_s"]["mean"] is not None


def test_an_invalid_cell_is_reported_and_the_other_cells_complete(tmp_path, capsys):
    code, out = _sweep(tmp_path, "bad", "--seeds", "1-2", "--set", "imu.rate_hz=100,300", "--workers", "2")
    assert code == 3
    err = capsys.readouterr().err
    assert "failed: cell imu.rate_hz=300, seed 2: ConfigError:" in err and "imu.rate_hz" in err
    table = json.loads((out / "table.json").read_text())
    assert [(c["jobs"], c["failed"]) for c in table["cells"]] == [(2, 0), (2, 2)]
    assert table["cells"][0]["metrics"]["success"]["n"] == 2
    assert [(f["seed"], f["error"]) for f in table["failures"]] == [(1, "ConfigError"), (2, "ConfigError")]
    failures = json.loads((out / "run.json").read_text())["failures"]
    assert failures[0]["info"]["seed"] == 1 and failures[0]["info"]["settings"] == {"imu": {"rate_hz": 300}}


@pytest.mark.parametrize("args,needle", [
    (["sweep", "waypointz", "--seeds", "1"], "unknown scenario 'waypointz'"),
    (["sweep", "waypoints", "--seeds", "1", "--reduced", "--set", "imu.rate_hz=300"], "imu.rate_hz"),
    (["sweep", "waypoints", "--seeds", "1", "--set", "imu.ratez=100"], "imu.ratez"),
    (["sweep", "waypoints", "--seeds", "1", "--address", "10.0.0.5:6379"], "--engine ray"),
    (["sweep", "waypoints", "--seeds", "1", "--resume", "/nonexistent/sweep"], "nothing to resume"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(tmp_path, capsys, args, needle):
    assert main(args + ["--out", str(tmp_path / "x")] if "--resume" not in args else args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "x" / "table.json").exists()


def test_bad_seeds_are_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "waypoints", "--seeds", "9-2"])
    assert exc.value.code == 2 and "expected seeds like 1-50" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_sweep_resumes_without_rerunning_its_finished_jobs(tmp_path):
    """The sweep runs in a subprocess that is killed (SIGKILL: no clean-up at all) once two results are
    stored; ``--resume`` completes it, running only the missing jobs, and the results equal an
    uninterrupted sweep's."""
    config = tmp_path / "long.json"          # ~1 s per run, so the kill lands midway
    config.write_text(json.dumps({"max_duration_s": 60.0, "waypoints_ne_m": [[3.0, 0.0], [3.0, 3.0], [0.0, 3.0]]}))
    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "harness", "sweep", "waypoints", "--reduced", "--config", str(config),
            "--seeds", "1-8", "--quiet"]
    proc = subprocess.Popen(argv + ["--out", str(out)], cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    jobs_dir = out / "jobs"
    deadline = time.monotonic() + 300                 # hang guard only: the poll ends on the files
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if jobs_dir.is_dir() and len([n for n in os.listdir(jobs_dir) if n.endswith(".json")]) >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep ended before it could be killed: %s" % proc.stderr.read()
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    done = {n: (jobs_dir / n).stat().st_mtime_ns for n in os.listdir(jobs_dir) if n.endswith(".json")}
    assert 2 <= len(done) < 8
    assert not (out / "table.json").exists()
    resumed = subprocess.run(argv + ["--resume", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    timing = json.loads((out / "run.json").read_text())["timing"]
    assert timing["resumed"] == len(done) and timing["ran"] == 8 - len(done)
    assert {n: (jobs_dir / n).stat().st_mtime_ns for n in done} == done          # not rewritten
    whole = subprocess.run(argv + ["--out", str(tmp_path / "whole")], cwd=REPO, capture_output=True, text=True,
                           timeout=300)
    assert whole.returncode == 0, whole.stderr
    assert (out / "results.json").read_text() == (tmp_path / "whole" / "results.json").read_text()
    assert (out / "table.json").read_text() == (tmp_path / "whole" / "table.json").read_text()
