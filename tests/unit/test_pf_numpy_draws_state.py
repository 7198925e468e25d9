"""NumpyDraws.set_state with a malformed state: ValueError with the draws as they were. Before: a state naming
another bit generator swapped in a fresh generator of that kind (seeded from the OS) before its state failed to
load with TypeError / KeyError, so the draws after the refusal were neither the old ones nor reproducible."""
import numpy as np
import pytest

from onboard.estimators.particle_filter_numpy import NumpyDraws


@pytest.mark.parametrize("bad", [{"bit_generator": "Philox", "state": "x"},
                                 {"bit_generator": "PCG64", "state": "x"},
                                 {"bit_generator": "PCG64", "state": {"state": 1, "inc": 1}, "has_uint32": 0},
                                 {"bit_generator": "MT19937"}])
def test_a_malformed_state_is_refused_and_the_draws_go_on_as_before(bad):
    d = NumpyDraws(np.random.default_rng(7))
    ref = NumpyDraws(np.random.default_rng(7))
    d.normals(3)
    ref.normals(3)
    with pytest.raises(ValueError):
        d.set_state(bad)
    assert type(d.gen.bit_generator) is type(ref.gen.bit_generator)
    assert list(d.normals(5)) == list(ref.normals(5))


def test_a_valid_state_of_another_generator_is_taken():
    src = NumpyDraws(np.random.Generator(np.random.Philox(3)))
    saved = src.get_state()
    want = list(src.uniforms(4))
    d = NumpyDraws(np.random.default_rng(1))
    d.set_state(saved)
    assert type(d.gen.bit_generator).__name__ == "Philox" and list(d.uniforms(4)) == want
