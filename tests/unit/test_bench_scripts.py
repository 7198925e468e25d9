"""The benchmark scripts as a user meets them: ``python bench/<name>.py --help`` prints the script's help and
runs nothing (no figure measured, no results file touched), an unknown option is refused with exit 2, and
every script writes its JSON through ``bench/results_file.write_results``, which writes the file whole."""
import glob
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
SCRIPTS = sorted(p for p in glob.glob(os.path.join(BENCH, "*.py")) if not p.endswith("results_file.py"))

# One interpreter runs every script as __main__ with the given argument and prints "<name> <exit code>".
_RUN_ALL = r"""
import contextlib, io, runpy, sys
bench, argument, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, bench)
for path in paths:
    sys.argv = [path, argument]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_path(path, run_name="__main__")
        code = "ran"
    except SystemExit as e:
        code = e.code
    print(path.rsplit("/", 1)[-1], code, repr(out.getvalue()[:2000]))
"""


def _results_state():
    return {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(BENCH, "results", "*"))}


def _run_all(argument):
    before = _results_state()
    proc = subprocess.run([sys.executable, "-c", _RUN_ALL, BENCH, argument] + SCRIPTS, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert _results_state() == before              # nothing measured, nothing written
    rows = [line.split(" ", 2) for line in proc.stdout.splitlines()]
    return {name: (code, text) for name, code, text in rows}


def test_every_bench_script_answers_help_without_running():
    rows = _run_all("--help")
    assert sorted(rows) == sorted(os.path.basename(p) for p in SCRIPTS)
    for name, (code, text) in rows.items():
        assert code == "0" and "usage: " + name in text, (name, code, text)


def test_every_bench_script_refuses_an_unknown_option():
    for name, (code, text) in _run_all("--no-such-option").items():
        assert code == "2" and "unrecognized arguments: --no-such-option" in text, (name, code, text)


def test_every_script_writes_through_results_file():
    for path in SCRIPTS:
        src = open(path).read()
        assert "json.dump(" not in src or os.path.basename(path) == "grading_loop.py", path   # --out: its own path
        if os.path.basename(path) != "grading_loop.py":
            assert "write_results(" in src, path


def _results_file(tmp_path, monkeypatch):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    import results_file
    monkeypatch.setattr(results_file, "RESULTS_DIR", str(tmp_path))
    return results_file


def test_write_results_sorts_keys_when_asked_and_ends_with_a_newline(tmp_path, monkeypatch):
    rf = _results_file(tmp_path, monkeypatch)
    path = rf.write_results("x", {"b": 1, "a": {"d": 2, "c": 3}}, sort_keys=True)
    text = open(path).read()
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"') and text.index('"c"') < text.index('"d"')
    assert json.loads(text) == {"a": {"c": 3, "d": 2}, "b": 1}
    rf.write_results("x", {"b": 1, "a": 2})
    assert open(path).read().index('"b"') < open(path).read().index('"a"')   # insertion order by default
    assert os.listdir(tmp_path) == ["x.json"]                                   # no temporary file left


def test_write_results_that_cannot_serialise_keeps_the_previous_file(tmp_path, monkeypatch):
    rf = _results_file(tmp_path, monkeypatch)
    path = rf.write_results("y", {"value": 1.5})
    with pytest.raises(TypeError):
        rf.write_results("y", {"value": object()})
    assert json.loads(open(path).read()) == {"value": 1.5}
    assert os.listdir(tmp_path) == ["y.json"]
