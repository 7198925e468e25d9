"""MicroPython tier: the pure modules' tests run inside real MicroPython 1.27.

Every ``tests/micropython/cases/test_*.py`` runs twice: under CPython as ordinary
pytest tests (collected from that folder), and here inside MicroPython (WebAssembly
build under node). Here each ``test_*`` function must pass inside MicroPython and
each ``golden_*`` function must return the same numbers as under CPython (1e-9).
"""
import glob
import importlib
import json
import math
import os
import sys

import pytest

from harness.sim.micropython import available, collect_files, onboard_files, run_micropython

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
CASE_MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(CASES_DIR, "test_*.py")))
TOLERANCE = 1e-9

pytestmark = pytest.mark.micropython


def _cpython_module(name):
    if CASES_DIR not in sys.path:
        sys.path.insert(0, CASES_DIR)
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def mp_results():
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    files = onboard_files()
    for name in CASE_MODULES:
        with open(os.path.join(CASES_DIR, name + ".py")) as fh:
            files["/cases/%s.py" % name] = fh.read()
    with open(os.path.join(HERE, "mp_driver.py")) as fh:
        driver = fh.read()
    code = "CASE_MODULES = %r\n%s" % (CASE_MODULES, driver)
    out = run_micropython(code, files)
    results = {}
    for line in out.splitlines():
        if line.startswith("MPRESULT "):
            r = json.loads(line[len("MPRESULT "):])
            results[r["module"]] = r
    return results


def _case_functions(prefix):
    pairs = []
    for name in CASE_MODULES:
        mod = _cpython_module(name)
        for attr in sorted(dir(mod)):
            if attr.startswith(prefix) and callable(getattr(mod, attr)):
                pairs.append((name, attr))
    return pairs


def test_cases_exist():
    assert CASE_MODULES, "no MicroPython case modules found"


@pytest.mark.parametrize("module,func", _case_functions("test_"))
def test_passes_in_micropython(mp_results, module, func):
    r = mp_results.get(module)
    assert r is not None, "MicroPython produced no result for %s" % module
    assert r["import_error"] is None, r["import_error"]
    assert r["tests"].get(func) == "ok", r["tests"].get(func)


def _flatten(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    else:
        out.append(float(value))
    return out


@pytest.mark.parametrize("module,func", _case_functions("golden_"))
def test_same_numbers_as_cpython(mp_results, module, func):
    r = mp_results[module]
    assert r["import_error"] is None, r["import_error"]
    mp_values = r["golden"][func]
    assert not isinstance(mp_values, str), mp_values
    cpy_values = _flatten(getattr(_cpython_module(module), func)(), [])
    assert len(mp_values) == len(cpy_values)
    for i, (mp_text, cpy) in enumerate(zip(mp_values, cpy_values)):
        mp = float(mp_text)
        if math.isnan(cpy):
            assert math.isnan(mp), "%s[%d]" % (func, i)
            continue
        assert abs(mp - cpy) <= TOLERANCE * max(1.0, abs(cpy)), \
            "%s[%d]: MicroPython %r vs CPython %r" % (func, i, mp, cpy)
