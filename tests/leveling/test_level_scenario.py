"""Scenario ``level-grid`` (thesis Alg. 1-4 on the voxel grid) through the CLI, terrain files from a user,
and the ``level-sweep`` study (figs. 4.2-4.5) in its quick mode with its Welch test."""
import json
import math

import numpy as np
import pytest

from harness.cli import main
from harness.scenarios.leveling import level_sweep
from tests.leveling.png_files import png_gray8 as _png_gray8


def _run(tmp_path, capsys, *args):
    out = tmp_path / "out"
    code = main(["run", "level-grid", "--quiet", "--out", str(out)] + list(args))
    err = capsys.readouterr().err
    return code, err, out


def test_reduced_run_levels_with_exact_volume_and_plots(tmp_path, capsys):
    code, err, out = _run(tmp_path, capsys, "--reduced", "--seed", "1")
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["success"] and m["level_reached"] and m["volume_error"] == 0 and m["final_range_units"] <= 1
    assert m["units_moved"] > 0 and m["cycles_to_level"] == m["cycles"]
    assert (out / "roughness.png").exists() and (out / "terrain.png").exists()


@pytest.mark.parametrize("alg", ["ma1", "ma2"])
def test_memetic_variants_run(tmp_path, capsys, alg):
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "algorithm=" + alg,
                          "--set", "terrain.rows=8", "--set", "terrain.cols=8")
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["algorithm"] == alg and m["volume_error"] == 0 and m["level_reached"]


def test_user_files_level(tmp_path, capsys):
    npy = tmp_path / "heap.npy"
    yy, xx = np.mgrid[0:9, 0:11]
    np.save(npy, np.maximum(0.0, 4.0 - np.hypot(yy - 4, xx - 5)))
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "terrain.file=" + str(npy))
    m = json.loads((out / "metrics.json").read_text())
    assert code == 0 and (m["rows"], m["cols"]) == (9, 11) and m["volume_error"] == 0, err
    png = tmp_path / "ridge.png"
    _png_gray8(png, [[min(255, 40 * max(0, 4 - abs(c - 5))) for c in range(10)] for _ in range(8)])
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "terrain.file=" + str(png),
                          "--set", "terrain.height_scale=5")
    m = json.loads((out / "metrics.json").read_text())
    assert code == 0 and (m["rows"], m["cols"]) == (8, 10) and m["success"], err


@pytest.mark.parametrize("content,needle", [(b"", "is empty"), (b"not a png at all", "terrain file"),
                                            (None, "not found")])
def test_bad_terrain_file_is_one_line_and_exit_2(tmp_path, capsys, content, needle):
    path = tmp_path / "bad.png"
    if content is not None:
        path.write_bytes(content)
    code, err, out = _run(tmp_path, capsys, "--set", "terrain.file=" + str(path))
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (out / "metrics.json").exists()


def test_welch_matches_scipy():
    from scipy import stats
    a = [3.0, 4.5, 5.1, 6.2, 7.7, 4.4]
    b = [8.0, 9.5, 7.1, 12.2, 10.0, 9.9, 11.3, 8.8]
    mine = level_sweep.welch(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert math.isclose(mine["t"], ref.statistic, rel_tol=1e-12) and math.isclose(mine["p"], ref.pvalue, rel_tol=1e-9)
    assert level_sweep.welch([1, 1, 1], [1, 1, 1])["p"] == 1.0 and level_sweep.welch([1, 1], [2, 2])["p"] == 0.0
    for x in (0.01, 0.3, 0.77, 0.99):
        assert math.isclose(level_sweep.betainc(2.5, 0.5, x), stats.beta.cdf(x, 2.5, 0.5), rel_tol=1e-9)


def test_level_sweep_quick(tmp_path, capsys):
    out = tmp_path / "sweep"
    code = main(["level-sweep", "--quick", "--runs", "2", "--rho", "0.2,0.8", "--k", "2,8",
                 "--terrains", "mounds", "--out", str(out), "--set", "terrain.rows=8", "--set", "terrain.cols=8"])
    text = capsys.readouterr().out
    assert code == 0 and "Welch" in text
    res = json.loads((out / "level_sweep.json").read_text())
    assert [r["value"] for r in res["rho"]["rows"]] == [0.2, 0.8] and res["rho"]["argmin"] in (0.2, 0.8)
    assert res["k"]["path"] == "probabilistic.k" and min(res["k"]["end_ratios"]) == 1.0
    table = res["memetic"]["table"]["mounds"]
    assert set(table) == {"probabilistic", "ma1", "ma2"}
    assert all(c["volume_errors"] == [0] for c in table.values())
    assert 0.0 <= res["memetic"]["welch"]["ma1"]["pooled"]["units_moved"]["p"] <= 1.0
    for alg in ("ma1", "ma2"):            # units moved = units laid into another cell; pick-ups beside them
        verdict, w = res["memetic"]["thesis_holds"][alg], res["memetic"]["welch"][alg]["pooled"]
        assert verdict["fewer_units"] == (w["units_relocated"]["t"] < 0 and w["units_relocated"]["p"] < 0.05)
        assert verdict["fewer_pickups"] == (w["units_moved"]["t"] < 0 and w["units_moved"]["p"] < 0.05)
    assert "units moved to another cell" in (out / "results.md").read_text()
    for name in ("rho.png", "k.png", "memetic.png", "results.md"):
        assert (out / name).exists()


def test_level_sweep_records_its_level_condition_and_takes_grad(tmp_path, capsys):
    """The sweeps halt at the world's level condition (range <= 1 unit) and record it; ``--set
    level.condition=grad`` halts at the thesis's flatness (4.1: every 4-neighbour |dh| <= 1 unit), which
    range implies, so the same trajectories stop earlier."""
    args = ["level-sweep", "--quick", "--runs", "3", "--studies", "rho", "--rho", "0.3",
            "--set", "terrain.rows=8", "--set", "terrain.cols=8"]
    assert main(args + ["--out", str(tmp_path / "range")]) == 0
    assert main(args + ["--out", str(tmp_path / "grad"), "--set", "level.condition=grad"]) == 0
    text = capsys.readouterr().out
    assert "thesis's |grad f|" in text and "max - min <= 1" in text
    rng = json.loads((tmp_path / "range" / "level_sweep.json").read_text())
    grad = json.loads((tmp_path / "grad" / "level_sweep.json").read_text())
    assert rng["setup"]["level"] == {"condition": "range", "epsilon_units": 1.0}
    assert grad["setup"]["level"]["condition"] == "grad"
    g_runs, r_runs = grad["rho"]["per_run"]["0.3"], rng["rho"]["per_run"]["0.3"]
    assert all(r["level_reached"] and r["final_max_gradient_units"] <= 1 for r in g_runs + r_runs)
    assert all(r["final_range_units"] <= 1 for r in r_runs)
    assert any(r["final_range_units"] > 1 for r in g_runs)          # the grad halt comes first ...
    assert all(g["cycles_to_level"] <= r["cycles_to_level"] for g, r in zip(g_runs, r_runs))
    assert sum(g["cycles_to_level"] for g in g_runs) < sum(r["cycles_to_level"] for r in r_runs)


def test_level_sweep_is_the_same_on_two_workers(tmp_path, capsys):
    args = ["level-sweep", "--quick", "--runs", "2", "--studies", "rho", "--rho", "0.3,0.6",
            "--set", "terrain.rows=6", "--set", "terrain.cols=6"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert main(args + ["--out", str(tmp_path / "b"), "--workers", "2"]) == 0
    capsys.readouterr()
    assert (tmp_path / "a" / "level_sweep.json").read_bytes() == (tmp_path / "b" / "level_sweep.json").read_bytes()


@pytest.mark.parametrize("args,needle", [(["--studies", "rho,nope"], "(unknown: nope)"),
                                         (["--terrains", "hills"], "--terrains"),
                                         (["--set", "agents=0"], "agents")])
def test_level_sweep_bad_arguments_exit_2(tmp_path, capsys, args, needle):
    assert main(["level-sweep", "--quick", "--out", str(tmp_path / "x")] + args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_welch_with_one_run_has_no_test_and_the_sweep_reports_it(tmp_path, capsys):
    """One run per cell: a sample's variance is undefined, so Welch's test is (t, dof, p = None, no verdict),
    not a ZeroDivisionError after every run of the sweep; the report says n/a and the json stays valid."""
    w = level_sweep.welch([3.0], [4.0, 5.0])
    assert (w["t"], w["dof"], w["p"]) == (None, None, None) and w["mean_a"] == 3.0 and w["ratio"] == 3.0 / 4.5
    out = tmp_path / "one"
    code = main(["level-sweep", "--quick", "--runs", "1", "--studies", "memetic", "--terrains", "mounds",
                 "--out", str(out), "--set", "terrain.rows=6", "--set", "terrain.cols=6"])
    text = capsys.readouterr().out
    assert code == 0 and "n/a (< 2 runs)" in text
    res = json.loads((out / "level_sweep.json").read_text())
    assert res["memetic"]["welch"]["ma1"]["pooled"]["cycles"]["p"] is None
    assert not any(v for verdict in res["memetic"]["thesis_holds"].values() for v in verdict.values())


class JobRecorder:
    """A sweep runner (``map(fn, args)``) that runs the jobs here and counts them."""

    def __init__(self):
        self.jobs = 0

    def map(self, fn, args):
        args = list(args)
        self.jobs += len(args)
        return [fn(*a) for a in args]


def test_level_sweep_rejects_a_bad_value_before_running_any_cell(tmp_path):
    """A k (or rho) outside its range is a ConfigError before the first job, not after the cells before it ran."""
    from harness.config import ConfigError
    recorder = JobRecorder()

    with pytest.raises(ConfigError, match="probabilistic.k"):
        level_sweep.level_sweep(str(tmp_path / "k"), ("k",), 1, {"terrain": {"rows": 6, "cols": 6}},
                                k_values=(2, 0), runner=recorder)
    assert recorder.jobs == 0


@pytest.mark.parametrize("sets,needle", [
    (["algorithm=ma1", "agents=1"], "at least 2 agents for ma1"),
    (["probabilistic.rho_sense=0"], "FIFO never fills"),
    (["algorithm=ma2", "memetic.rho_sense=0"], "FIFO never fills"),
    (["probabilistic.random_move=0"], "it never turns"),
    (["probabilistic.rho=0"], "never picks up"),
])
def test_settings_that_can_never_level_are_refused_before_the_run(tmp_path, capsys, sets, needle):
    """MA1 with one agent (its oracle never replaces the fittest agent's chromosome: the lone agent runs its
    first chromosome forever), a FIFO that never fills (rho_sense = 0), an agent that never turns
    (random_move = 0: forward into the edge for good) or never picks up (const rho = 0) can never level:
    refused (one line, exit 2), not run to max_cycles."""
    args = ["--reduced", "--set", "max_cycles=2000", "--set", "terrain.rows=5", "--set", "terrain.cols=5"]
    for s in sets:
        args += ["--set", s]
    code, err, out = _run(tmp_path, capsys, *args)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (out / "metrics.json").exists()


def test_agents_on_every_cell_are_refused_before_the_run(tmp_path, capsys):
    """3x3 cells, 9 agents: no agent can ever move (and none ever finds its own cell above alpha), so the run
    could never level; refused (one line, exit 2). 8 agents on the 9 cells level."""
    args = ["--reduced", "--set", "max_cycles=50000", "--set", "terrain.rows=3", "--set", "terrain.cols=3",
            "--set", "terrain.features=1", "--set", "terrain.max_units=5", "--seed", "1"]
    code, err, out = _run(tmp_path, capsys, *(args + ["--set", "agents=9"]))
    assert code == 2 and err.count("\n") == 1 and "at most 8" in err, err
    code, err, out = _run(tmp_path, capsys, *(args + ["--set", "agents=8"]))
    assert code == 0 and json.loads((out / "metrics.json").read_text())["level_reached"], err


@pytest.mark.parametrize("sets", [["algorithm=ma2", "agents=1"], ["agents=1"], ["probabilistic.rho_mode=k",
                                                                                  "probabilistic.rho=0"]])
def test_one_agent_and_k_mode_with_rho_0_still_run(tmp_path, capsys, sets):
    args = ["--reduced", "--set", "max_cycles=2000", "--set", "terrain.rows=5", "--set", "terrain.cols=5"]
    for s in sets:
        args += ["--set", s]
    code, err, out = _run(tmp_path, capsys, *args)
    assert (out / "metrics.json").exists(), err


def test_level_sweep_refuses_a_never_levelling_cell_before_running_any(tmp_path):
    """The sweep checks every cell before the first job: rho = 0 (never picks up) or MA1 with one agent."""
    from harness.config import ConfigError
    recorder = JobRecorder()

    base = {"terrain": {"rows": 6, "cols": 6}, "max_cycles": 2000}
    with pytest.raises(ConfigError, match="never picks up"):
        level_sweep.level_sweep(str(tmp_path / "r"), ("rho",), 1, base, rho_values=(0.3, 0.0), runner=recorder)
    with pytest.raises(ConfigError, match="at least 2 agents for ma1"):
        level_sweep.level_sweep(str(tmp_path / "m"), ("memetic",), 1, dict(base, agents=1), terrains=("mounds",),
                                runner=recorder)
    assert recorder.jobs == 0


def test_param_sweep_on_a_terrain_that_starts_level_has_no_end_ratios(tmp_path, capsys):
    """max_units = 1: every run starts level (0 cycles), so the smallest mean is 0 and the ends / minimum
    ratios are undefined: None and "n/a" in the report, not a ZeroDivisionError after every run."""
    out = tmp_path / "flat"
    code = main(["level-sweep", "--quick", "--runs", "2", "--studies", "rho", "--rho", "0.3,0.6", "--out", str(out),
                 "--set", "terrain.max_units=1", "--set", "terrain.rows=6", "--set", "terrain.cols=6"])
    text = capsys.readouterr().out
    assert code == 0 and "ends / minimum: n/a" in text
    res = json.loads((out / "level_sweep.json").read_text())
    assert res["rho"]["end_ratios"] is None and res["rho"]["rows"][0]["cycles"]["mean"] == 0


def test_memetic_ratio_over_a_zero_mean_is_reported_as_undefined(tmp_path, capsys):
    """A terrain that starts level: the probabilistic agent moves 0 units, so memetic / probabilistic is
    undefined (None in the json): the table says n/a, not a ratio of 0.000."""
    out = tmp_path / "flat"
    code = main(["level-sweep", "--quick", "--runs", "2", "--studies", "memetic", "--terrains", "mounds",
                 "--out", str(out), "--set", "terrain.max_units=1", "--set", "terrain.rows=6",
                 "--set", "terrain.cols=6"])
    text = capsys.readouterr().out
    res = json.loads((out / "level_sweep.json").read_text())
    assert code == 0 and res["memetic"]["welch"]["ma1"]["pooled"]["units_moved"]["ratio"] is None
    assert "| ma1 | pooled | n/a (/ 0) |" in text and "0.000" not in text
