"""The benchmarks' goal judging (bench/*.py): every "met" flag comes from the figures it is handed, the
inequality points the way the goal says, and a row that was not measured is recorded as skipped, never met.
The bench modules are imported for their pure functions only; nothing is timed here."""
import importlib.util
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")


def _bench(name):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)              # the scripts import bench/results_file.py as a top-level module
    spec = importlib.util.spec_from_file_location("bench_" + name, os.path.join(BENCH, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sweep_goals_are_judged_with_met_flags():
    sweep = _bench("sweep")
    out = {"local": {"scaling_1_to_2": 1.9, "1": {}, "2": {"overhead_fraction_of_job": 0.5}},
           "ray": {"scaling_1_to_2": 1.7, "2": {"overhead_fraction_of_job": 0.05}}}
    goals = sweep.judge_goals(out)
    assert goals["local_scaling_1_to_2"] == {"value": 1.9, "goal": ">= 1.8", "met": True}
    assert goals["ray_scaling_1_to_2"]["met"] is False                      # 1.7 < 1.8
    assert goals["ray_overhead_fraction_of_job_2_workers"]["met"] is True   # 5 % <= 10 %
    out["ray"]["2"]["overhead_fraction_of_job"] = 0.15
    assert sweep.judge_goals(out)["ray_overhead_fraction_of_job_2_workers"]["met"] is False


def test_sweep_without_ray_records_its_goals_as_skipped():
    sweep = _bench("sweep")
    goals = sweep.judge_goals({"local": {"scaling_1_to_2": 2.0}, "ray": {}})
    assert goals["local_scaling_1_to_2"]["met"] is True
    for key in ("ray_scaling_1_to_2", "ray_overhead_fraction_of_job_2_workers"):
        assert goals[key]["met"] is False and goals[key]["value"] is None and "skipped" in goals[key]


def test_eskf_goal_direction_and_unmeasured_rows_skipped():
    eskf = _bench("eskf")
    assert eskf._goal(26.0, 25.0, "min")["met"] is True
    assert eskf._goal(24.0, 25.0, "min")["met"] is False
    assert eskf._goal(0.9, 1.0, "max")["met"] is True
    assert eskf._goal(1.1, 1.0, "max")["met"] is False
    g = eskf._goal(None, 25.0, "min", "filterpy not installed")
    assert g["met"] is False and g["skipped"] == "filterpy not installed"


def test_eskf_reports_a_missing_filterpy_instead_of_failing_mid_run(monkeypatch):
    eskf = _bench("eskf")
    monkeypatch.setitem(sys.modules, "filterpy", None)       # import filterpy.kalman now raises ImportError
    monkeypatch.setitem(sys.modules, "filterpy.kalman", None)
    why = eskf.filterpy_available()
    assert why is not None and "filterpy" in why
    assert eskf._over(None, 2.0) is None and eskf._over(6.0, 2.0) == 3.0


def test_pf_goals_judged_on_the_ratios_and_missing_sizes_skipped():
    pf = _bench("pf")
    goals = pf.judge_goals({"100": 1.2, "1000": 1.05}, {100: 1.3, 1000: 1.0})
    assert goals["cython_over_c_100"]["met"] is True
    assert goals["cython_over_c_1000"]["met"] is False
    goals = pf.judge_goals({"100": 1.2}, {100: 1.3, 1000: 1.0})
    assert goals["cython_over_c_1000"]["met"] is False and "skipped" in goals["cython_over_c_1000"]


def test_pf_stops_with_a_clear_line_without_gcc(monkeypatch):
    pf = _bench("pf")
    monkeypatch.setattr(pf.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="gcc not found"):
        pf.main()


def test_boat_fit_goal_is_judged_only_on_a_one_hour_log():
    boat = _bench("boat")
    assert boat.fit_goal(55.0, 50.0, 3599.99) == {"met": True, "met_on_critical_path": True}
    assert boat.fit_goal(65.0, 50.0, 3599.99) == {"met": False, "met_on_critical_path": True}
    short = boat.fit_goal(5.0, 5.0, 600.0)           # --duration 600: fast, but not the goal's workload
    assert short["met"] is None and short["met_on_critical_path"] is None and "goal_not_judged" in short


def test_boat_speed_goal_is_sim_seconds_per_wall_second_at_least_100():
    boat = _bench("boat")
    assert boat.speed_goal(120.0, 1.0)["met"] is True
    assert boat.speed_goal(120.0, 1.3)["met"] is False
    assert boat.speed_goal(100.0, 1.0)["met"] is True
