"""The compiled particle filter draws its standard normals in C, bit for bit as NumPy's Generator does.

cython_ext/pf_kernels.pyx (``draw_normals``, ``PfKernel._normals``): for NumpyDraws over a PCG64 Generator
the filter runs NumPy's ziggurat over an inline PCG64 step on the generator's own state; any other draws
object (or generator) goes through ``draws.normals``. These tests hold the C draws to
``Generator.standard_normal`` and the generator's state after them to the state NumPy leaves, and the filter
on either path to the same particles.
"""
import copy
import pickle

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws


def _cython():
    if "cython" not in impl_switch.available(pf.KERNEL_MODULES):
        pytest.fail("cython_ext.pf_kernels missing (run `make setup` to build cython_ext)")
    return pf.kernels_for("cython")


class PythonDraws(NumpyDraws):
    """The same draws through Python (a NumpyDraws subclass: the kernel leaves it to ``normals``)."""


def test_c_normals_are_on_for_this_numpy():
    k = _cython()
    assert k.fast_normals, "the C normals' self-check against numpy failed: every draw goes through Python"


@pytest.mark.parametrize("seed", [0, 1, 7, 2026])
def test_c_normals_equal_numpy_and_leave_the_same_state(seed):
    k = _cython()
    ours = NumpyDraws(np.random.default_rng(seed))
    ref = np.random.default_rng(seed)
    for size in (3000, 0, 1, 2, 7, 300, 100000, 3):
        got = k.draw_normals(ours, size)
        assert got.dtype == np.float64 and got.shape == (size,)
        assert np.array_equal(got, ref.standard_normal(size)), size
        # the generator goes on where numpy's would: uniforms (resampling) and the full state agree
        assert np.array_equal(ours.uniforms(2), ref.random(2))
    assert ours.get_state() == ref.bit_generator.state


def test_c_normals_follow_a_restored_state():
    """DrawsState (member recordings) sets the generator's state between decisions: the C draws read it."""
    k = _cython()
    d = NumpyDraws(np.random.default_rng(5))
    saved = d.get_state()
    first = k.draw_normals(d, 500).copy()
    d.set_state(saved)
    assert np.array_equal(k.draw_normals(d, 500), first)
    d.set_state(saved)
    assert np.array_equal(d.normals(500), first)


def test_other_generators_go_through_draws():
    """Another bit generator (Philox) or draws class is answered by its own normals: same numbers as asked."""
    k = _cython()
    d = NumpyDraws(np.random.Generator(np.random.Philox(3)))
    ref = np.random.Generator(np.random.Philox(3))
    assert np.array_equal(k.draw_normals(d, 1000), ref.standard_normal(1000))
    p = PythonDraws(np.random.default_rng(4))
    assert np.array_equal(k.draw_normals(p, 1000), np.random.default_rng(4).standard_normal(1000))


@pytest.mark.parametrize("use_learned", [False, True])
def test_filter_on_c_normals_equals_the_filter_on_python_draws(use_learned):
    """The flights' filter settings (adaptive resampling, restarts, spread refresh), a range dropout now and
    then: the same estimates, particles and generator state whichever way the normals are drawn."""
    k = _cython()
    cfg = {"n_particles": 400, "resample_neff_fraction": 0.5, "reinit_after_outliers": 3, "lost_residual_m": 0.4,
           "refresh_mode": "spread", "refresh_fraction_min": 0.01}
    scenario = np.random.default_rng(9)
    ranges = [None if scenario.random() < 0.1 else float(1.5 + scenario.random()) for _ in range(120)]
    runs = []
    for draws_cls in (NumpyDraws, PythonDraws):
        d = draws_cls(np.random.default_rng(12))
        f = pf.make_filter(cfg, kernels=k)
        f.initialize(0, 2.0, d, learned=(0.3, -0.2) if use_learned else None)
        ests = [f.step(100000 * (i + 1), (0.2, -0.1), (0.0, 0.3), r, d,
                       learned=(0.4, 0.1) if use_learned and i % 3 == 0 else None)
                for i, r in enumerate(ranges)]
        runs.append((ests, np.array(f.xs).tolist(), np.array(f.yaws).tolist(), f.resamples,
                     f.reinitializations, d.get_state()))
    assert runs[0] == runs[1]
    assert runs[0][3] > 0          # resampling drew uniforms between the normals


def test_the_state_layout_check_accepts_only_numpys_pcg64_and_never_raises():
    """pcg_layout reads a generator's state words only inside the object and holds them to its ``state``
    dict: a PCG64 gives its word order, anything else None (no exception, no read elsewhere)."""
    k = _cython()

    class SubPCG64(np.random.PCG64):
        pass

    assert k.pcg_layout(np.random.PCG64(11)) in (0, 1)
    for other in (np.random.Philox(1), np.random.SFC64(1), np.random.MT19937(1), np.random.PCG64DXSM(1),
                  SubPCG64(1), np.random.default_rng(1), object(), None, "PCG64"):
        assert k.pcg_layout(other) is None, other


def test_a_failing_import_time_check_turns_the_c_normals_off(monkeypatch):
    """Any exception inside the check means the Python path (no import error); the draws are then
    ``draws.normals``' own, and the check run again turns the C path back on."""
    k = _cython()
    calls = []
    plain_normals = NumpyDraws.normals

    def counted(self, n):
        calls.append(n)
        return plain_normals(self, n)

    def broken():
        raise RuntimeError("numpy changed")

    monkeypatch.setattr(NumpyDraws, "normals", counted)
    try:
        monkeypatch.setattr(k, "_verify_fast_normals", broken)
        assert k._check_fast_normals() is False
        got = k.draw_normals(NumpyDraws(np.random.default_rng(3)), 50)
        assert calls == [50] and np.array_equal(got, np.random.default_rng(3).standard_normal(50))
    finally:
        monkeypatch.undo()
        assert k._check_fast_normals() is True
    calls.clear()
    monkeypatch.setattr(NumpyDraws, "normals", counted)
    k.draw_normals(NumpyDraws(np.random.default_rng(3)), 50)
    assert calls == []                     # on again: drawn in C


def _copies(f):
    return {"deepcopy": copy.deepcopy(f), "pickle": pickle.loads(pickle.dumps(f)),
            "pickle protocol 0": pickle.loads(pickle.dumps(f, protocol=0))}


def test_a_compiled_filter_copies_and_pickles_and_steps_as_the_original():
    """copy.deepcopy and a pickle round trip of a running compiled filter (C normals on, the cos / sin of
    the yaws kept, resampled) give filters that step as the original does on the same draws, with buffers
    of their own; copy.copy gives the same state too. The copies' generators are new objects: the cached
    pointers into the original's generator are not carried over."""
    k = _cython()
    cfg = {"n_particles": 300, "resample_neff_fraction": 0.5, "reinit_after_outliers": 3, "lost_residual_m": 0.4,
           "refresh_mode": "spread", "refresh_fraction_min": 0.01}
    d = NumpyDraws(np.random.default_rng(21))
    f = pf.make_filter(cfg, kernels=k)
    f.initialize(0, 2.0, d, learned=(0.3, -0.2))
    for i in range(20):
        f.step(100000 * (i + 1), (0.2, -0.1), (0.0, 0.3), 1.8 + 0.01 * i, d, learned=(0.4, 0.1))
    assert f.resamples > 0
    saved = d.get_state()
    shallow = copy.copy(f)
    assert (shallow.est, shallow.steps, shallow.time_us, shallow.k) == (f.est, f.steps, f.time_us, f.k)
    copies = _copies(f)
    xs_before = np.array(f.xs).copy()

    def run(filt, draws):
        ests = [filt.step(100000 * (i + 21), (0.2, -0.1), (0.0, 0.3), None if i % 7 == 3 else 1.9 - 0.01 * i,
                          draws, learned=(0.4, 0.1) if i % 2 else None) for i in range(40)]
        return (ests, np.array(filt.xs).tolist(), np.array(filt.yaws).tolist(), filt.steps, filt.resamples,
                filt.reinitializations, filt.lost_restarts, filt.time_us, draws.get_state())

    got = {}
    for name, g in copies.items():
        assert type(g) is type(f) and g.k is k and g.cfg == f.cfg
        dg = NumpyDraws(np.random.default_rng(0))
        dg.set_state(saved)
        got[name] = run(g, dg)
        assert np.array_equal(np.array(f.xs), xs_before), name          # the original's buffers are its own
    want = run(f, d)
    for name, result in got.items():
        assert result == want, name
    assert want[0] != [want[0][0]] * len(want[0])                         # it moved


def test_a_corrupt_filter_state_is_refused():
    """A state whose buffers are too short for its particle count never reaches the kernels."""
    k = _cython()
    f = pf.make_filter({"n_particles": 20}, kernels=k)
    rebuild, args, (fields, inst, kernels_name) = f.__reduce__()
    fields = list(fields)
    fields[1] = 10 ** 6                                                    # n
    g = rebuild(*args)
    with pytest.raises(ValueError, match="particle filter state"):
        g.__setstate__((tuple(fields), inst, kernels_name))
