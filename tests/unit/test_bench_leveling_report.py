"""bench/leveling.py prints its fig. 4.2 sweep line when the sweep has no end ratios (``end_ratios`` None: the
smallest mean is 0 cycles, a terrain that starts level) or a ratio that is None: "n/a", not a crash. The timed
parts are replaced by fakes; nothing is timed or compiled here."""
import importlib.util
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")


def _bench_leveling():
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)              # the script imports bench/results_file.py as a top-level module
    spec = importlib.util.spec_from_file_location("bench_leveling", os.path.join(BENCH, "leveling.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Grid:
    cycles = 10
    agents = [0, 1]

    class terrain:
        h = [1, 2]

    def metrics(self):
        return {"cycles": 10}


@pytest.mark.parametrize("ends,expected", [(None, "ends/min n/a"), ([2.5, None], "ends/min 2.50, n/a"),
                                           ([2.5, 1.25], "ends/min 2.50, 1.25")])
def test_sweep_line_prints_na_for_missing_end_ratios(monkeypatch, capsys, ends, expected):
    bench = _bench_leveling()
    written = {}
    monkeypatch.setattr(bench, "SEEDS", (0,))
    monkeypatch.setattr(bench, "ROUNDS", 1)
    monkeypatch.setattr(bench, "build_c", lambda tmp: "exe")
    monkeypatch.setattr(bench, "run_c", lambda exe, seed, tmp, repeats: (0.5, None))
    monkeypatch.setattr(bench, "timed_run", lambda impl, seed: (1.0 if impl == "pure" else 0.6, _Grid()))
    monkeypatch.setattr(bench, "same_as_c", lambda grid, res: True)
    monkeypatch.setattr(bench, "fig42_sweep", lambda workers: {
        "workers": workers, "wall_s": 3.0, "cpu_s": 6.0, "agent_steps": 1000, "argmin": 0.1, "end_ratios": ends})
    monkeypatch.setattr(bench, "write_results", lambda name, results: written.update({name: results}))
    bench.main(["--workers", "2"])
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.startswith("fig. 4.2 sweep")][0]
    assert expected in line, line
    assert written["leveling"]["fig42_sweep"]["end_ratios"] == ends      # the JSON keeps the nulls


def test_ends_text():
    bench = _bench_leveling()
    assert bench.ends_text([1.0, 3.456]) == "1.00, 3.46"
    assert bench.ends_text(None).startswith("n/a")
