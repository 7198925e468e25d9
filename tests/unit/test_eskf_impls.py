"""The ESKF's three implementations (pure, Cython, NumPy) behind one switch give the same numbers.

Pure vs Cython: 1e-12 (relative, per entry of the whole filter state) on
hypothesis-generated predict/update sequences; in practice they are bit-identical
because the Cython build evaluates the same expressions in the same order.
NumPy sums matrix products in another order, so it is compared to 1e-8.
"""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import (IMPL_MODULES, EskfInputError, EskfNumericError, make_eskf)

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665


def test_all_three_implementations_are_built():
    assert IMPLS == ["pure", "cython", "numpy"], "run `make setup` to build cython_ext"


def _state_close(a, b, tol):
    assert a.keys() == b.keys()
    for key in a:
        va, vb = a[key], b[key]
        if isinstance(va, list):
            assert len(va) == len(vb), key
            for i, (x, y) in enumerate(zip(va, vb)):
                assert abs(x - y) <= tol * max(1.0, abs(x)), "%s[%d]: %r vs %r" % (key, i, x, y)
        elif isinstance(va, float):
            assert abs(va - vb) <= tol * max(1.0, abs(va)), "%s: %r vs %r" % (key, va, vb)
        else:
            assert va == vb, "%s: %r vs %r" % (key, va, vb)


def _apply(f, op):
    """Run one op; returns its result or the exception type it raised."""
    try:
        if op[0] == "p":
            return f.predict(ImuSample(op[1], op[2], op[3], op[4]))
        return f.update_pose(PoseSample(op[1], op[2], op[3], op[4], op[5]))
    except (EskfInputError, EskfNumericError) as exc:
        return type(exc)


def _ops_from(draws):
    """Turn drawn (kind, dt_us, a, b, cov) tuples into timed ops (IMU times strictly increasing)."""
    ops = []
    t = 0
    for kind, dt_us, a, b, cov in draws:
        if kind == "p":
            t += dt_us
            ops.append(("p", t, dt_us, a, b))
        else:
            cp = None if cov is None else (cov, cov, cov)
            ca = None if cov is None else (cov * 1e-2, cov * 1e-2, cov * 1e-2)
            ops.append(("u", t, a, b, cp, ca))
    return ops


small = st.floats(-1.0, 1.0, allow_nan=False)
vec3 = st.tuples(small, small, small)
op_strategy = st.tuples(
    st.sampled_from(["p", "p", "p", "u"]),
    st.integers(1, 200000),
    vec3, vec3,
    st.one_of(st.none(), st.floats(1e-6, 1.0)),
)


def _scaled(draws):
    """Map unit draws to physical ranges: dvel up to 2 m/s (+ gravity), dang up to 0.3 rad,
    positions up to 50 m (large innovations), attitudes over the whole range."""
    out = []
    for kind, dt_us, a, b, cov in draws:
        if kind == "p":
            dt = dt_us * 1e-6
            out.append((kind, dt_us, (2.0 * a[0], 2.0 * a[1], 2.0 * a[2] - G * dt),
                        (0.3 * b[0], 0.3 * b[1], 0.3 * b[2]), cov))
        else:
            out.append((kind, dt_us, (50.0 * a[0], 50.0 * a[1], 50.0 * a[2]),
                        (math.pi * b[0], 0.5 * math.pi * b[1], math.pi * b[2]), cov))
    return out


def _fresh(impl, gate, reset_s=3.0):
    f = make_eskf({"gate_nis": gate, "gate_reset_s": reset_s}, impl=impl)
    f.initialize(0, (1.0, -2.0, 0.5), (0.2, 0.0, -0.1), (0.1, -0.05, 2.9), (0.01, 0.0, -0.02), (0.001, 0.0, 0.0))
    return f


@settings(max_examples=150)
@given(st.lists(op_strategy, min_size=1, max_size=30), st.sampled_from([0.0, 22.46]),
       st.sampled_from([0.0, 0.1, 3.0]))
def test_pure_and_cython_agree_to_1e12(draws, gate, reset_s):
    # reset_s 0.1: gated poses (50 m position draws) often restart the filter (gate_reset_s)
    ops = _ops_from(_scaled(draws))
    pure = _fresh("pure", gate, reset_s)
    cy = _fresh("cython", gate, reset_s)
    for op in ops:
        assert _apply(pure, op) == _apply(cy, op)
        _state_close(pure.get_state(), cy.get_state(), 1e-12)
    assert pure.last_innovation == pytest.approx(cy.last_innovation, rel=1e-12, abs=1e-12)


moderate = st.tuples(
    st.sampled_from(["p", "p", "p", "u"]),
    st.integers(1000, 20000),
    st.tuples(*[st.floats(-0.2, 0.2)] * 3), st.tuples(*[st.floats(-0.05, 0.05)] * 3),
    st.one_of(st.none(), st.floats(1e-3, 0.1)),
)


@settings(max_examples=60)
@given(st.lists(moderate, min_size=1, max_size=30), st.sampled_from([0.0, 0.02]))
def test_numpy_agrees_with_pure(draws, reset_s):
    ops = []
    t = 0
    for kind, dt_us, a, b, cov in draws:
        if kind == "p":
            t += dt_us
            ops.append(("p", t, dt_us, (a[0] * 0.1, a[1] * 0.1, a[2] * 0.1 - G * dt_us * 1e-6), b))
        else:
            cp = None if cov is None else (cov, cov, cov)
            ops.append(("u", t, (1.0 + a[0], -2.0 + a[1], 0.5 + a[2]), (0.1 + b[0], -0.05 + b[1], 2.9 + b[2]),
                        cp, cp))
    pure = _fresh("pure", 22.46, reset_s)
    npy = _fresh("numpy", 22.46, reset_s)
    for op in ops:
        assert _apply(pure, op) == _apply(npy, op)
        _state_close(pure.get_state(), npy.get_state(), 1e-8)


@pytest.mark.parametrize("impl", IMPLS)
def test_switch_picks_the_implementation(impl, monkeypatch):
    monkeypatch.setenv("ONBOARD_IMPL", impl)
    assert make_eskf().impl == impl
    assert make_eskf(impl="pure").impl == "pure"


def test_unknown_implementation_is_an_error():
    with pytest.raises(ValueError):
        make_eskf(impl="fortran")


class _Fake:
    def __init__(self, **fields):
        self.__dict__.update(fields)


@pytest.mark.parametrize("impl", IMPLS)
def test_bad_input_raises_same_error_and_keeps_state(impl):
    f = _fresh(impl, 22.46)
    f.predict(ImuSample(10000, 10000, (0.0, 0.0, -G * 0.01), (0.0, 0.0, 0.0)))
    before = f.get_state()
    nan = float("nan")
    bad = [
        ("p", ImuSample(20000, 10000, (nan, 0.0, 0.0), (0.0, 0.0, 0.0))),
        ("p", ImuSample(20000, 10000, (0.0, 0.0, 0.0), (0.0, 0.0, float("-inf")))),
        ("p", _Fake(time_us=20000, dt_us=10000, dvel_body_mps=[0.0, 0.0], dang_body_rad=[0.0, 0.0, 0.0])),
        ("p", _Fake(time_us=20000, dt_us=10000, dvel_body_mps=(0.0, 0.0, 0.0, 0.0), dang_body_rad=(0.0,) * 3)),
        ("p", _Fake(time_us=None, dt_us=10000, dvel_body_mps=(0.0,) * 3, dang_body_rad=(0.0,) * 3)),
        ("p", _Fake(time_us=20000, dt_us=10000, dvel_body_mps=("a", 0.0, 0.0), dang_body_rad=(0.0,) * 3)),
        ("p", _Fake(time_us=20000, dt_us=10000, dvel_body_mps=(0.0,) * 3)),
        ("p", _Fake(time_us=10000, dt_us=10000, dvel_body_mps=(0.0,) * 3, dang_body_rad=(0.0,) * 3)),
        ("p", _Fake(time_us=20000, dt_us=-5, dvel_body_mps=(0.0,) * 3, dang_body_rad=(0.0,) * 3)),
        ("u", PoseSample(20000, (0.0, nan, 0.0), (0.0, 0.0, 0.0))),
        ("u", _Fake(time_us=20000, pos_ned_m=(0.0, 0.0, 0.0, 0.0), euler_rad=(0.0, 0.0, 0.0))),
        ("u", _Fake(time_us=20000, pos_ned_m=[0.0, 0.0, 0.0], euler_rad=[0.0, 0.0])),
        ("u", PoseSample(20000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), cov_pos_m2=(0.0, 1.0, 1.0))),
        ("u", PoseSample(20000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), cov_att_rad2=(1.0, float("inf"), 1.0))),
        ("u", _Fake(time_us=20000, pos_ned_m=(0.0, 0.0, 0.0), euler_rad=(0.0, 0.0, 0.0),
                    cov_pos_m2=(1.0, 1.0), cov_att_rad2=None)),
    ]
    for kind, sample in bad:
        with pytest.raises(EskfInputError):
            if kind == "p":
                f.predict(sample)
            else:
                f.update_pose(sample)
    after = f.get_state()
    assert after.pop("rejected") == before.pop("rejected") + len(bad)
    assert after == before


@pytest.mark.parametrize("impl", IMPLS)
def test_lists_go_through_the_slow_path_with_the_same_result(impl):
    a = _fresh(impl, 22.46)
    b = _fresh(impl, 22.46)
    a.predict(ImuSample(10000, 10000, (0.01, 0.0, -G * 0.01), (0.0, 0.001, 0.0)))
    b.predict(_Fake(time_us=10000, dt_us=10000, dvel_body_mps=[0.01, 0.0, -G * 0.01], dang_body_rad=[0.0, 0.001, 0.0]))
    a.update_pose(PoseSample(10000, (1.0, -2.0, 0.5), (0.1, -0.05, 2.9)))
    b.update_pose(_Fake(time_us=10000, pos_ned_m=[1.0, -2.0, 0.5], euler_rad=[0.1, -0.05, 2.9],
                        cov_pos_m2=None, cov_att_rad2=None))
    assert a.get_state() == b.get_state()


def test_state_moves_between_implementations():
    src = _fresh("pure", 22.46)
    src.predict(ImuSample(10000, 10000, (0.01, 0.0, -G * 0.01), (0.0, 0.001, 0.0)))
    src.update_pose(PoseSample(10000, (1.1, -2.0, 0.5), (0.1, -0.05, 2.95)))
    for impl in IMPLS:
        f = make_eskf(impl=impl)
        f.set_state(src.get_state())
        _state_close(src.get_state(), f.get_state(), 0.0)
        assert f.nav_state(10000) == src.nav_state(10000)
        assert f.covariance() == src.covariance()
        assert f.pose_covariance() == src.pose_covariance()
        assert f.counters() == src.counters()


@pytest.mark.parametrize("impl", IMPLS)
def test_lost_filter_restart_is_the_same_in_every_implementation(impl):
    """Poses 3 m off after a fused one are gated until gate_reset_s (0.1 s), then restart the filter."""
    ref = _fresh("pure", 22.46, 0.1)
    f = _fresh(impl, 22.46, 0.1)
    ops = [("p", 10000 * k, 10000, (0.002, 0.0, -G * 0.01), (0.0, 0.0, 0.001)) for k in range(1, 6)]
    ops.append(("u", 50000, (1.0, -2.0, 0.5), (0.1, -0.05, 2.9), None, None))
    for k in range(6, 31):
        ops.append(("p", 10000 * k, 10000, (0.002, 0.0, -G * 0.01), (0.0, 0.0, 0.001)))
        if k % 5 == 0:
            ops.append(("u", 10000 * k, (4.0, -2.0, 0.5), (0.1, -0.05, 2.9), None, None))
    results = []
    for op in ops:
        r = _apply(f, op)
        assert r == _apply(ref, op)
        if op[0] == "u":
            results.append(r)
        _state_close(ref.get_state(), f.get_state(), 1e-8 if impl == "numpy" else 0.0)
    assert results == [True, False, True, True, True, True]     # gated at 100 ms, restarted at 150 ms
    assert f.counters()["resets"] == 1 and f.counters()["gated"] == 2
