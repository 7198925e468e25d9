"""ESKF edges on every implementation: ``set_state`` with a 3-vector of the wrong length or non-finite entries is
refused before anything changes (the Cython build read past the end of a short list and crashed the interpreter;
the pure and NumPy builds stored the short vector and failed later), and the contract adapter keeps the ESKF's
configured default variance for the half of a pose sample that carries no covariance (it put the 1e-3 m floor
there, making the position 2500 times more trusted than the configured 0.05 m when only the attitude covariance was
given); ``initialize`` given a time with a fraction, text or a boolean, or a vector that is no sequence, holds text
or an int too large for a float, raises EskfInputError with the filter unchanged (the time was truncated, 1.5 us to
1 us, and the others escaped as TypeError / OverflowError)."""
import pytest

from onboard import impl as impl_switch
from onboard.core.samples import PoseSample
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, make_eskf
from onboard.estimators.eskf_pose import EskfPoseEstimator

IMPLS = impl_switch.available(IMPL_MODULES)
NAN = float("nan")
INF = float("inf")


def _fresh(impl):
    f = make_eskf(impl=impl)
    f.initialize(0, (1.0, 2.0, 3.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1))
    return f


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("key,value", [("pos_ned_m", [1.0, 2.0]), ("vel_ned_mps", []),
                                       ("gyro_bias_radps", [0.0, 0.0, 0.0, 0.0]),
                                       ("accel_bias_mps2", [0.0, NAN, 0.0]), ("vel_ned_mps", [INF, 0.0, 0.0]),
                                       ("D_ned_to_body", [NAN] * 9), ("P", [NAN] * 225)])
def test_set_state_refuses_a_wrong_or_non_finite_vector_before_changing_anything(impl, key, value):
    f = _fresh(impl)
    before = f.get_state()
    state = dict(before)
    state[key] = value
    with pytest.raises(EskfInputError):
        f.set_state(state)
    assert f.get_state() == before
    f.set_state(before)                          # the valid state is still taken
    assert f.get_state() == before


def _pose_estimator(impl):
    est = EskfPoseEstimator(impl=impl)
    est.update_pose(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    return est


@pytest.mark.parametrize("impl", IMPLS)
def test_pose_with_only_an_attitude_covariance_keeps_the_default_position_variance(impl):
    """The position half is fused with pose_pos_sigma_m (as a pose without any covariance), not the floor."""
    plain = _pose_estimator(impl)
    half = _pose_estimator(impl)
    plain.update_pose(PoseSample(1000, (0.1, 0.0, 0.0), (0.0, 0.0, 0.0)))
    half.update_pose(PoseSample(1000, (0.1, 0.0, 0.0), (0.0, 0.0, 0.0), cov_att_rad2=(1e-4, 1e-4, 1e-4)))
    # north: P = 0.05^2 (init) against R = 0.05^2 (default): the fused position is halfway
    assert plain.nav_state().pos_ned_m[0] == pytest.approx(0.05, rel=1e-9)
    assert half.nav_state().pos_ned_m[0] == pytest.approx(0.05, rel=1e-9)
    assert half.pose_covariance()[0] == pytest.approx(plain.pose_covariance()[0], rel=1e-9)


@pytest.mark.parametrize("impl", IMPLS)
def test_pose_with_only_a_position_covariance_keeps_the_default_attitude_variance(impl):
    plain = _pose_estimator(impl)
    half = _pose_estimator(impl)
    plain.update_pose(PoseSample(1000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.05)))
    half.update_pose(PoseSample(1000, (0.0, 0.0, 0.0), (0.0, 0.0, 0.05), cov_pos_m2=(0.0025, 0.0025, 0.0025)))
    assert half.nav_state().euler_rad[2] == pytest.approx(plain.nav_state().euler_rad[2], rel=1e-9)
    assert half.pose_covariance()[8] == pytest.approx(plain.pose_covariance()[8], rel=1e-9)


@pytest.mark.parametrize("impl", IMPLS)
def test_pose_covariances_given_are_still_floored(impl):
    """A zero variance given is floored (MIN_POS_SIGMA_M, MIN_ANGLE_SIGMA_RAD), as before."""
    est = _pose_estimator(impl)
    assert est.update_pose(PoseSample(1000, (0.01, 0.0, 0.0), (0.0, 0.0, 0.0), cov_pos_m2=(0.0, 0.0, 0.0),
                                      cov_att_rad2=(0.0, 0.0, 0.0)))
    assert est.nav_state().pos_ned_m[0] == pytest.approx(0.01 * 0.0025 / (0.0025 + 1e-6), rel=1e-9)


ZERO3 = (0.0, 0.0, 0.0)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("args", [(1.5, ZERO3, ZERO3, ZERO3), ("5", ZERO3, ZERO3, ZERO3), (True, ZERO3, ZERO3, ZERO3),
                                  (None, ZERO3, ZERO3, ZERO3), (0, 5, ZERO3, ZERO3), (0, ZERO3, None, ZERO3),
                                  (0, ZERO3, ZERO3, ("a", 0.0, 0.0)), (0, (10 ** 400, 0.0, 0.0), ZERO3, ZERO3)],
                         ids=["fraction", "text", "bool", "none", "int-vector", "none-vector", "text-entry", "huge-int"])
def test_initialize_refuses_malformed_conditions_with_the_filter_unchanged(impl, args):
    f = _fresh(impl)
    before = f.get_state()
    with pytest.raises(EskfInputError):
        f.initialize(*args)
    assert f.get_state() == before
    f.initialize(2000.0, [1, 2, 3], ZERO3, ZERO3)       # a whole float time and ints are taken
    assert f.time_us == 2000 and type(f.time_us) is int and f.nav_state().pos_ned_m == (1.0, 2.0, 3.0)
