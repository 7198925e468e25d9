"""Particle filter: a finite but absurd range or velocity (1e160 m, 1e300 m/s) is refused with PfInputError,
counted in ``rejected``, with the particles, counters and draws untouched, on every kernel path (the compiled
step's fast path included). Before: every squared range residual overflowed, every log-weight was -inf, and the
step returned a NaN estimate and resampled the whole set onto its first particle; ``initialize`` with such a
range spawned a ring the next ranges could not weight either. A time with a fraction (2500.5 us, truncated to
2500) or a boolean is refused the same way."""
import math

import numpy as np
import pytest

from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

from tests.unit.test_pf_edge_inputs import IMPLS, LEARNED, _filter, _snapshot


BAD_STEPS = [
    ("range 1e160", (3000, (0.1, 0.0), (0.2, 0.1), 1e160, None)),
    ("range 1e160 learned", (3000, (0.1, 0.0), (0.2, 0.1), 1e160, LEARNED)),
    ("range just above the limit", (3000, (0.1, 0.0), (0.2, 0.1), math.nextafter(pf.MAX_RANGE_M, math.inf), None)),
    ("own velocity 1e300", (3000, (1e300, 0.0), (0.2, 0.1), 3.0, None)),
    ("peer velocity -1e300", (3000, (0.1, 0.0), (0.2, -1e300), None, LEARNED)),
    ("time with a fraction", (2500.5, (0.1, 0.0), (0.2, 0.1), 3.0, None)),
    ("time True", (True, (0.1, 0.0), (0.2, 0.1), 3.0, None)),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("what,args", BAD_STEPS, ids=[b[0] for b in BAD_STEPS])
def test_an_absurd_range_or_velocity_is_refused_and_changes_nothing(impl, what, args):
    f, draws = _filter(impl)
    before = _snapshot(f, draws)
    now_us, v_own, v_peer, range_m, learned = args
    with pytest.raises(pf.PfInputError):
        f.step(now_us, v_own, v_peer, range_m, draws, learned)
    after = _snapshot(f, draws)
    assert after == before.replace("'rejected': 0", "'rejected': 1")
    est = f.step(3000, (0.1, 0.0), (0.2, 0.1), 3.2, draws, LEARNED)
    assert all(math.isfinite(v) for v in est)


@pytest.mark.parametrize("impl", IMPLS)
def test_initialize_with_an_absurd_range_is_refused(impl):
    f = pf.make_filter({"n_particles": 8}, kernels=pf.kernels_for(impl))
    draws = NumpyDraws(np.random.default_rng(5))
    with pytest.raises(pf.PfInputError):
        f.initialize(1000, 1e160, draws)
    assert not f.initialized and f.rejected == 1


@pytest.mark.parametrize("impl", IMPLS)
def test_ranges_and_speeds_at_the_limits_are_taken(impl):
    f, draws = _filter(impl)
    est = f.step(3000, (pf.MAX_SPEED_MPS, 0.0), (0.0, -pf.MAX_SPEED_MPS), 3.0, draws, LEARNED)
    assert all(math.isfinite(v) for v in est)
    f.initialize(4000, pf.MAX_RANGE_M, draws)
    assert all(math.isfinite(v) for v in f.step(5000, (0.0, 0.0), (0.0, 0.0), pf.MAX_RANGE_M, draws))


@pytest.mark.parametrize("impl", IMPLS)
def test_a_whole_float_time_is_taken(impl):
    f, draws = _filter(impl)
    f.step(3000.0, (0.1, 0.0), (0.2, 0.1), 3.2, draws, LEARNED)
    assert f.time_us == 3000 and type(f.time_us) is int
