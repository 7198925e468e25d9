"""ESKF kernels: the Cython build's hand-expanded predict / update give the pure path's bits.

The Cython kernels (``cython_ext/eskf.pyx``) evaluate each covariance entry with the pure
``_propagate`` / ``_fuse``'s operations in the pure order, with the loops arranged for speed; these
tests compare every float of the filter state as its exact bit pattern (``float.hex``, so even the
sign of a zero counts) after long runs that touch every block: bias random walks on, IMU gaps of
different lengths, large rotations, pose covariances given and defaulted, gated poses and
lost-filter restarts, and batches through ``predict_many``. Every build of the kernels this CPU can
run is checked (``cython_ext.eskf.KERNEL_VARIANTS``: the AVX2 build, no FMA, and the baseline one).
"""
import math
import random

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, EskfNumericError, make_eskf

from tests.unit.state_bits import state_bits

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665
pytestmark = pytest.mark.skipif("cython" not in IMPLS, reason="cython_ext not built")
VARIANTS = impl_switch.load(IMPL_MODULES, "cython").KERNEL_VARIANTS if "cython" in IMPLS else ()


@pytest.fixture(params=VARIANTS)
def kernel_variant(request):
    """Runs the test on one build of the Cython kernels, then restores the one chosen at import."""
    module = impl_switch.load(IMPL_MODULES, "cython")
    before = module.kernel_variant()
    module.use_kernel_variant(request.param)
    assert module.kernel_variant() == request.param
    yield request.param
    module.use_kernel_variant(before)


def _ops(seed, n_cycles, big_rotations):
    """Chunks of IMU samples and one pose per chunk: a turning, accelerating vehicle, noisy poses."""
    rnd = random.Random(seed)
    t = 0
    ops = []
    for c in range(n_cycles):
        chunk = []
        for k in range(rnd.choice((1, 5, 10))):
            dt_us = rnd.choice((2500, 10000, 10000, 40000))
            t += dt_us
            dt = dt_us * 1e-6
            rate = 3.0 if big_rotations else 0.3
            dvel = (rnd.gauss(0.5, 1.0) * dt, rnd.gauss(0.0, 1.0) * dt, (-G + rnd.gauss(0.0, 0.5)) * dt)
            dang = (rnd.gauss(0.0, rate) * dt, rnd.gauss(0.0, rate) * dt, rnd.gauss(0.2, rate) * dt)
            chunk.append(ImuSample(t, dt_us, dvel, dang))
        cov = None if rnd.random() < 0.5 else ((rnd.uniform(1e-4, 1e-2),) * 3, (rnd.uniform(1e-5, 1e-3),) * 3)
        jump = 30.0 if rnd.random() < 0.1 else 0.0          # an outlier: gated (or a restart)
        pose = PoseSample(t, (0.1 * c + rnd.gauss(0.0, 0.05) + jump, rnd.gauss(0.0, 0.05), -0.5),
                          (rnd.gauss(0.0, 0.02), rnd.gauss(0.0, 0.02), math.remainder(0.3 * c, 2 * math.pi)),
                          *(cov if cov else (None, None)))
        ops.append((chunk, pose))
    return ops


def _run(impl, ops, config, batched):
    f = make_eskf(config, impl=impl)
    f.initialize(0, (0.0, 0.0, -0.5), (0.5, 0.0, 0.0), (0.01, -0.02, 0.0), (0.01, -0.02, 0.03), (1e-3, -2e-3, 5e-4))
    trace = []
    for chunk, pose in ops:
        if batched:
            trace.append(f.predict_many(chunk))
        else:
            for s in chunk:
                trace.append(f.predict(s))
        try:
            trace.append(f.update_pose(pose))
        except (EskfInputError, EskfNumericError) as exc:
            trace.append(type(exc).__name__)
        trace.append(f.last_nis.hex())
        trace.append([v.hex() for v in f.last_innovation])
    return trace, state_bits(f.get_state())


@pytest.mark.parametrize("seed,config,big_rotations", [
    (1, {"gate_nis": 0.0}, False),
    (2, {"accel_bias_walk_mps2_per_sqrt_s": 1e-3, "gyro_bias_walk_radps_per_sqrt_s": 1e-4, "gate_nis": 0.0}, True),
    (3, {"gate_reset_s": 0.2, "accel_noise_mps_per_sqrt_s": 0.05}, True),
])
@pytest.mark.parametrize("batched", [False, True])
def test_cython_kernels_give_the_pure_bits(seed, config, big_rotations, batched, kernel_variant):
    ops = _ops(seed, 40, big_rotations)
    pure = _run("pure", ops, config, batched)
    cy = _run("cython", ops, config, batched)
    assert cy[0] == pure[0]
    assert cy[1] == pure[1]


def test_the_runs_reach_every_branch():
    """The workloads above are not trivial: they fuse, gate and restart, and P stays symmetric."""
    counts = {}
    for seed, config in ((2, {"gate_nis": 0.0, "accel_bias_walk_mps2_per_sqrt_s": 1e-3}),
                         (3, {"gate_reset_s": 0.2, "accel_noise_mps_per_sqrt_s": 0.05})):
        f = make_eskf(config, impl="cython")
        f.initialize(0, (0.0, 0.0, -0.5), (0.5, 0.0, 0.0), (0.01, -0.02, 0.0))
        for chunk, pose in _ops(seed, 40, True):
            f.predict_many(chunk)
            f.update_pose(pose)
        counts[seed] = f.counters()
        P = f.covariance()
        assert all(P[i * 15 + j] == P[j * 15 + i] for i in range(15) for j in range(15))
        assert all(P[i * 15 + i] > 0.0 for i in range(15))
    assert counts[2]["updates"] == 40 and counts[2]["predicts"] > 150
    assert counts[3]["updates"] > 0 and counts[3]["gated"] > 0 and counts[3]["resets"] > 0


def test_the_fastest_kernel_build_is_chosen_at_import_and_others_are_refused():
    module = impl_switch.load(IMPL_MODULES, "cython")
    assert module.KERNEL_VARIANTS[-1] == "default"
    assert module.kernel_variant() == module.KERNEL_VARIANTS[0]     # "avx2" where the CPU has it
    with pytest.raises(ValueError, match="not available"):
        module.use_kernel_variant("sse9")
    assert module.kernel_variant() == module.KERNEL_VARIANTS[0]
