"""Particle filter edge inputs through every kernel path (pure, NumPy, Cython): a time outside a signed 64-bit
integer or not a number, and numbers too large for a float, are refused with PfInputError, counted in
``rejected``, with the particles, the counters and the draws untouched, the same on every path.

Before: a time of 2**63 us was taken by the pure filter and overflowed the Cython filter's C time (OverflowError
after the particles had moved); ``initialize`` with a time that is not a number (or a float too large for an int)
spawned new particles before raising ValueError / TypeError / OverflowError; a range of 10**400 passed the range
check and raised OverflowError in the middle of the pure kernel (first particle moved) and before the Cython one.
Draws that answer fewer values than asked are refused with the compiled filter's ValueError on every path before a
particle moves (the pure kernels used to stop part-way with IndexError)."""
import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

IMPLS = impl_switch.available(pf.KERNEL_MODULES)
LEARNED = (0.3, 0.1)


def _snapshot(f, draws):
    fields = {k: getattr(f, k) for k in ("initialized", "time_us", "steps", "rejected", "outliers", "predict_only",
                                          "resamples", "reinitializations", "lost_restarts", "residual_lp_m")}
    for name in ("xs", "ys", "yaws", "lws", "est"):
        fields[name] = [float(v) for v in getattr(f, name)]
    fields["draws"] = draws.gen.bit_generator.state["state"]["state"]
    return repr(fields)          # repr: NaN compares equal to itself


def _filter(impl):
    f = pf.make_filter({"n_particles": 8}, kernels=pf.kernels_for(impl))
    draws = NumpyDraws(np.random.default_rng(5))
    f.initialize(1000, 3.0, draws, learned=LEARNED)
    f.step(2000, (0.1, 0.0), (0.2, 0.1), 3.1, draws, LEARNED)
    return f, draws


BAD_STEPS = [
    ("time 2**63", (1 << 63, (0.1, 0.0), (0.2, 0.1), 3.0, LEARNED)),
    ("time -2**63-1", (-(1 << 63) - 1, (0.1, 0.0), (0.2, 0.1), None, None)),
    ("time inf", (float("inf"), (0.1, 0.0), (0.2, 0.1), 3.0, None)),
    ("time nan", (float("nan"), (0.1, 0.0), (0.2, 0.1), 3.0, None)),
    ("time None", (None, (0.1, 0.0), (0.2, 0.1), 3.0, None)),
    ("time str", ("abc", (0.1, 0.0), (0.2, 0.1), 3.0, None)),
    ("range 10**400", (3000, (0.1, 0.0), (0.2, 0.1), 10 ** 400, LEARNED)),
    ("own velocity 10**400", (3000, (10 ** 400, 0.0), (0.2, 0.1), 3.0, LEARNED)),
    ("peer velocity -10**400", (3000, (0.1, 0.0), (0.2, -(10 ** 400)), 3.0, None)),
    ("learned 10**400", (3000, (0.1, 0.0), (0.2, 0.1), 3.0, (10 ** 400, 0.1))),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("what,args", BAD_STEPS, ids=[b[0] for b in BAD_STEPS])
def test_bad_step_is_refused_and_changes_nothing(impl, what, args):
    f, draws = _filter(impl)
    before = _snapshot(f, draws)
    now_us, v_own, v_peer, range_m, learned = args
    with pytest.raises(pf.PfInputError):
        f.step(now_us, v_own, v_peer, range_m, draws, learned)
    f.rejected -= 1
    assert _snapshot(f, draws) == before


BAD_INITS = [
    ("time 2**63", (1 << 63, 3.0, None)),
    ("time inf", (float("inf"), 3.0, LEARNED)),
    ("time None", (None, 3.0, None)),
    ("time str", ("abc", 3.0, LEARNED)),
    ("range 10**400", (5000, 10 ** 400, None)),
    ("learned -10**400", (5000, 3.0, (0.2, -(10 ** 400)))),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("what,args", BAD_INITS, ids=[b[0] for b in BAD_INITS])
def test_bad_initialize_is_refused_and_changes_nothing(impl, what, args):
    f, draws = _filter(impl)
    before = _snapshot(f, draws)
    now_us, range_m, learned = args
    with pytest.raises(pf.PfInputError):
        f.initialize(now_us, range_m, draws, learned=learned)
    f.rejected -= 1
    assert _snapshot(f, draws) == before


@pytest.mark.parametrize("impl", [i for i in IMPLS if i != "pure"])
def test_time_at_the_int64_edge_gives_the_pure_numbers(impl):
    runs = []
    for path in ("pure", impl):
        f, draws = _filter(path)
        out = [f.step((1 << 62) + 7, (0.1, 0.0), (0.2, 0.1), 3.0, draws, LEARNED),
               f.step((1 << 63) - 1, (0.1, 0.0), (0.2, 0.1), None, draws, None)]
        f.initialize((1 << 63) - 1, 3.0, draws)
        runs.append((out, _snapshot(f, draws)))
    assert runs[0] == runs[1]
    assert "'time_us': %d" % ((1 << 63) - 1) in runs[0][1]


class _ShortDraws(NumpyDraws):
    """Draws that answer one value short for ``which`` ("normals" or "uniforms")."""

    def __init__(self, gen, which):
        NumpyDraws.__init__(self, gen)
        self.which = which

    def normals(self, k):
        out = NumpyDraws.normals(self, k)
        return out[:-1] if self.which == "normals" else out

    def uniforms(self, k):
        out = NumpyDraws.uniforms(self, k)
        return out[:-1] if self.which == "uniforms" else out


SHORT = [("step", "normals", LEARNED), ("step", "normals", None), ("initialize", "normals", None),
         ("initialize", "uniforms", None), ("initialize", "normals", LEARNED)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("call,which,learned", SHORT)
def test_draws_that_answer_short_are_refused_before_any_particle_moves(impl, call, which, learned):
    """Before: the pure kernels ran part-way through the particles and stopped with IndexError; the compiled filter
    refused with ValueError and moved none."""
    f, draws = _filter(impl)
    short = _ShortDraws(draws.gen, which)
    before = _snapshot(f, draws)
    with pytest.raises(ValueError, match=r"^draws returned \d+ values, \d+ asked$"):
        if call == "step":
            f.step(3000, (0.1, 0.0), (0.2, 0.1), 3.0, short, learned)
        else:
            f.initialize(5000, 3.0, short, learned=learned)
    after = _snapshot(f, draws)
    assert after.split("'draws'")[0] == before.split("'draws'")[0]     # the draws themselves were consumed
