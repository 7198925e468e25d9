"""The compiled particle filter draws its standard normals in C, bit for bit as NumPy's Generator does.

cython_ext/pf_kernels.pyx (``draw_normals``, ``PfKernel._normals``): for NumpyDraws over a PCG64 Generator
the filter runs NumPy's ziggurat over an inline PCG64 step on the generator's own state; any other draws
object (or generator) goes through ``draws.normals``. These tests hold the C draws to
``Generator.standard_normal`` and the generator's state after them to the state NumPy leaves, and the filter
on either path to the same particles.
"""
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
