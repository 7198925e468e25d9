"""Faults of a sweep (harness.sweep_runner, harness.sweep_cli): a worker process that dies, settings that
JSON cannot hold, and the sweep folder's files written whole."""
import json
import os
import signal

import pytest

from harness import sweep_cli
from harness.sweep_cli import split_values
from harness.sweep_runner import Job, Runner

PARENT_PID = os.getpid()


def dies_on_two(seed):
    """Kills its own worker process for seed 2 (as the OOM killer would); never the test's process."""
    if seed == 2 and os.getpid() != PARENT_PID:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"seed": seed, "cube": seed ** 3}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", [2, 3])
def test_a_killed_worker_fails_only_its_own_job_and_the_others_complete(workers, tmp_path):
    jobs = [Job(dies_on_two, (seed,), info={"seed": seed}) for seed in range(8)]
    with Runner(workers=workers) as runner:
        result = runner.run(jobs, out_dir=str(tmp_path))
    assert result.results == [None if s == 2 else {"seed": s, "cube": s ** 3} for s in range(8)]
    assert [f["index"] for f in result.failures] == [2]
    assert result.failures[0]["error"] == "BrokenProcessPool"
    assert [j["status"] for j in result.timing["per_job"]] == ["failed" if s == 2 else "ok" for s in range(8)]


@pytest.mark.timeout(120)
def test_the_strict_map_raises_for_a_killed_worker_after_the_earlier_results():
    got = []
    with pytest.raises(Exception, match="BrokenProcessPool"):
        with Runner(workers=2) as runner:
            for value in runner.map(dies_on_two, [(s,) for s in range(6)]):
                got.append(value["seed"])
    assert got == [0, 1]


def test_non_finite_sweep_values_stay_text_so_every_report_file_is_json():
    assert split_values("0.1,NaN,Infinity,-Infinity") == [0.1, "NaN", "Infinity", "-Infinity"]


def test_a_report_file_that_cannot_be_written_leaves_no_half_file(tmp_path):
    sweep_cli._write_json(str(tmp_path), "run.json", {"a": 1})
    before = (tmp_path / "run.json").read_text()
    with pytest.raises(ValueError):
        sweep_cli._write_json(str(tmp_path), "run.json", {"a": 2, "b": [1.0, float("nan")]})
    assert (tmp_path / "run.json").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["run.json"]


def test_a_table_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path):
    from harness.sweep_table import write_table
    stat = {"kind": "number", "n": 2, "mean": 1.5, "ci95": [1.0, 2.0], "sd": 0.5, "min": 1.0, "max": 2.0}
    table = {"scenario": "waypoints", "reduced": True, "seeds": [1, 2], "axes": ["a"], "failures": [],
             "cells": [{"settings": {"a": 1}, "label": "a=1", "metrics": {"m": stat}, "failed": 0, "jobs": 2}]}
    write_table(str(tmp_path), table)
    before = {name: (tmp_path / name).read_bytes() for name in ("table.json", "table.csv", "table.md")}
    assert before["table.csv"].count(b"\r\n") == 2                # csv's own line ends, as written before
    table["cells"][0]["metrics"]["m"] = dict(stat, mean=float("nan"))
    with pytest.raises(ValueError):
        write_table(str(tmp_path), table)
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert sorted(os.listdir(tmp_path)) == sorted(before)


@pytest.mark.timeout(300)
def test_a_sweep_with_a_nan_cell_reports_it_as_a_failed_cell(tmp_path, capsys):
    from harness.cli import main
    out = tmp_path / "s"
    code = main(["sweep", "waypoints", "--reduced", "--seeds", "1", "--set", "aiding.pos_sigma_m=0.1,NaN",
                 "--out", str(out), "--quiet"])
    assert code == 3
    rows = json.loads((out / "results.json").read_text())
    assert [("metrics" in r, r["settings"]) for r in rows] == [(True, {"aiding.pos_sigma_m": 0.1}),
                                                                (False, {"aiding.pos_sigma_m": "NaN"})]
    json.loads((out / "sweep.json").read_text())


def interrupts_on_one(seed):
    if seed == 1:
        raise KeyboardInterrupt
    return {"success": True, "seed": seed}


@pytest.mark.timeout(300)
def test_an_interrupted_sweep_leaves_no_table_of_an_earlier_sweep_in_its_folder(tmp_path, monkeypatch):
    out = tmp_path / "s"
    assert sweep_cli.run_sweep("waypoints", [3], out_dir=str(out), reduced=True)[2].ok
    assert (out / "table.json").exists() and (out / "results.json").exists()
    monkeypatch.setattr(sweep_cli, "scenario_job",
                        lambda name, overrides, seed, reduced: Job(interrupts_on_one, (seed,), info={"seed": seed}))
    with pytest.raises(KeyboardInterrupt):
        sweep_cli.run_sweep("waypoints", [1, 2], out_dir=str(out), reduced=True)
    run = json.loads((out / "run.json").read_text())
    assert run["ended"] != "finished" and run["jobs_stored"] == 0          # seed 3's result is not this sweep's
    assert not any((out / name).exists() for name in ("table.json", "table.csv", "table.md", "results.json"))
