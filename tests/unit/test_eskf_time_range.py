"""ESKF edge inputs driven through every implementation: times beyond a signed 64-bit integer and numbers too
large for a float are refused (EskfInputError, counted in ``rejected``, state unchanged) the same way on the pure,
Cython and NumPy builds. Before, the pure build took a time of 2**63 us while the Cython build (C ``long long``
fields) raised OverflowError after its kernel had already moved the state; an int too large for a float escaped
as OverflowError (not a ValueError, not counted) on every build."""
import array

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, make_eskf, pack_imu

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665
LATE = [1 << 63, (1 << 64) + 5, -(1 << 63) - 1]


class _Fake:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def _fresh(impl):
    f = make_eskf(impl=impl)
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    f.predict(ImuSample(1000, 1000, (0.001, 0.0, -G * 0.001), (0.0, 0.0001, 0.0)))
    return f


def _imu(t):
    return ImuSample(t, 1000, (0.001, 0.0, -G * 0.001), (0.0, 0.0001, 0.0))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("t", LATE)
def test_time_beyond_int64_is_refused_and_changes_nothing(impl, t):
    f = _fresh(impl)
    before = f.get_state()
    with pytest.raises(EskfInputError):
        f.predict(_imu(t))
    with pytest.raises(EskfInputError):
        f.update_pose(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    assert f.predict_many([_imu(t), _imu(t + 1000)]) == 2
    with pytest.raises(EskfInputError):
        f.initialize(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    after = f.get_state()
    assert after.pop("rejected") == before.pop("rejected") + 4
    assert after == before


@pytest.mark.parametrize("impl", IMPLS)
def test_packed_times_beyond_int64_are_refused_like_the_pure_build(impl):
    samples = [_imu(2000), _imu((1 << 62) + 4096), _imu(1 << 63), _imu((1 << 63) + 4096)]
    buf = array.array("d", [0.0] * (8 * len(samples)))
    for k, s in enumerate(samples):
        pack_imu(buf, k, s)
    f = _fresh(impl)
    ref = _fresh("pure")
    assert f.predict_packed(buf, len(samples)) == 2
    assert ref.predict_packed(buf, len(samples)) == 2
    assert f.counters() == ref.counters()
    assert f.get_state()["time_us"] == ref.get_state()["time_us"] == (1 << 62) + 4096


@pytest.mark.parametrize("impl", IMPLS)
def test_largest_int64_time_is_taken(impl):
    f = _fresh(impl)
    assert f.predict(_imu((1 << 63) - 1)) is True
    ref = _fresh("pure")
    ref.predict(_imu((1 << 63) - 1))
    got, want = f.get_state(), ref.get_state()
    assert got["time_us"] == got["last_imu_us"] == (1 << 63) - 1
    if impl == "numpy":          # sums its matrix products in another order (test_eskf_impls: 1e-8)
        assert max(abs(a - b) for a, b in zip(got.pop("P"), want.pop("P"))) < 1e-12
    assert got == want


@pytest.mark.parametrize("impl", IMPLS)
def test_number_too_large_for_a_float_is_refused(impl):
    f = _fresh(impl)
    before = f.get_state()
    with pytest.raises(EskfInputError):
        f.predict(_Fake(time_us=5000, dt_us=1000, dvel_body_mps=(10 ** 400, 0.0, 0.0), dang_body_rad=(0.0,) * 3))
    with pytest.raises(EskfInputError):
        f.update_pose(_Fake(time_us=5000, pos_ned_m=(0.0, -(10 ** 400), 0.0), euler_rad=(0.0,) * 3))
    after = f.get_state()
    assert after.pop("rejected") == before.pop("rejected") + 2
    assert after == before


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("key,value", [("time_us", 1 << 63), ("last_imu_us", 1 << 63), ("last_fused_us", -(1 << 64)),
                                       ("predicts", 1 << 63), ("resets", 1 << 63), ("last_nis", "x"),
                                       ("gated", None)])
def test_set_state_refuses_before_it_changes_anything(impl, key, value):
    """Before: the Cython build set the nominal state and P, then raised OverflowError on a time or counter beyond
    its C fields (the pure build took them); a bad last_nis left every build half restored."""
    donor = _fresh("pure")
    donor.update_pose(PoseSample(1000, (0.5, -0.2, 0.1), (0.01, 0.02, 0.3)))
    state = donor.get_state()
    f = _fresh(impl)
    before = f.get_state()
    state[key] = value
    with pytest.raises(ValueError if key == "last_nis" else (TypeError if value is None else EskfInputError)):
        f.set_state(state)
    assert f.get_state() == before
    state[key] = donor.get_state()[key]
    f.set_state(state)
    assert f.get_state() == state
