"""The ESKF covariance stays symmetric positive-definite under random predict/update sequences.

Volume (10^4 random sequences, random dt from 1 us to 0.5 s, random increments,
random measurement values with innovations up to hundreds of metres and any
attitude, gating on and off) runs on the Cython build; hypothesis drives the pure
path with fewer, shrinkable examples. Positive-definite is checked with a Cholesky
factorisation after every step, symmetry exactly (P is mirrored by construction).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import N_STATE, make_eskf

G = 9.80665
N_SEQUENCES = 10000


def _assert_spd(f):
    P = np.array(f.covariance()).reshape(N_STATE, N_STATE)
    assert np.array_equal(P, P.T), "covariance not symmetric"
    assert np.all(np.isfinite(P))
    np.linalg.cholesky(P)          # raises LinAlgError when not positive definite


def _random_sequence(f, rng, n_ops):
    t = 0
    for _ in range(n_ops):
        if rng.random() < 0.75:
            dt_us = int(rng.choice([1, 100, 2500, 10000, 50000, 500000])) if rng.random() < 0.5 \
                else int(rng.integers(1, 500001))
            dt = dt_us * 1e-6
            dvel = rng.normal(0.0, 3.0 * dt + 1e-3, 3)
            dvel[2] -= G * dt
            dang = rng.normal(0.0, 2.0 * dt + 1e-4, 3)
            t += dt_us
            f.predict(ImuSample(t, dt_us, dvel.tolist(), dang.tolist()))
        else:
            scale = 10.0 ** rng.uniform(-3, 2.5)           # innovations from mm to ~300 m
            pos = rng.normal(0.0, scale, 3)
            euler = [rng.uniform(-math.pi, math.pi), rng.uniform(-1.5, 1.5), rng.uniform(-math.pi, math.pi)]
            cov = None if rng.random() < 0.5 else [float(10.0 ** rng.uniform(-6, 1))] * 3
            cova = None if cov is None else [float(10.0 ** rng.uniform(-8, 0))] * 3
            f.update_pose(PoseSample(t, pos.tolist(), euler, cov, cova))
        _assert_spd(f)


@pytest.mark.slow
def test_spd_over_ten_thousand_random_sequences_cython():
    rng = np.random.default_rng(20240503)
    fused = gated = 0
    for seq in range(N_SEQUENCES):
        f = make_eskf({"gate_nis": 0.0 if seq % 2 else 22.46}, impl="cython")
        f.initialize(0, rng.normal(0.0, 5.0, 3).tolist(), rng.normal(0.0, 1.0, 3).tolist(),
                     [rng.uniform(-3, 3), rng.uniform(-1.4, 1.4), rng.uniform(-3, 3)])
        _random_sequence(f, rng, int(rng.integers(1, 16)))
        fused += f.updates
        gated += f.gated
    # both branches were exercised: large innovations were fused (gate off) and gated (gate on)
    assert fused > 5000 and gated > 2000


imu_op = st.tuples(st.just("imu"), st.integers(1, 500000),
                   st.tuples(*[st.floats(-3.0, 3.0)] * 3), st.tuples(*[st.floats(-0.5, 0.5)] * 3))
pose_op = st.tuples(st.just("pose"), st.floats(-3.0, 2.5),
                    st.tuples(*[st.floats(-1.0, 1.0)] * 3),
                    st.tuples(st.floats(-math.pi, math.pi), st.floats(-1.5, 1.5), st.floats(-math.pi, math.pi)))


@settings(max_examples=120)
@given(st.lists(st.one_of(imu_op, pose_op), min_size=1, max_size=25), st.booleans())
def test_spd_under_hypothesis_sequences_pure(ops, gate_on):
    f = make_eskf({"gate_nis": 22.46 if gate_on else 0.0}, impl="pure")
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    t = 0
    for op in ops:
        if op[0] == "imu":
            dt_us = op[1]
            dt = dt_us * 1e-6
            t += dt_us
            f.predict(ImuSample(t, dt_us, (op[2][0] * dt, op[2][1] * dt, (op[2][2] - G) * dt),
                                (op[3][0] * dt, op[3][1] * dt, op[3][2] * dt)))
        else:
            scale = 10.0 ** op[1]
            f.update_pose(PoseSample(t, [v * scale for v in op[2]], op[3]))
        _assert_spd(f)
