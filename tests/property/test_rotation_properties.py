"""Property tests of onboard.core rotations (hypothesis, derandomised)."""
import math

from hypothesis import given, strategies as st

from onboard.core import rotations as rot
from onboard.core.angles import wrap_pi

angle = st.floats(min_value=-math.pi, max_value=math.pi, allow_nan=False)
pitch = st.floats(min_value=-1.5, max_value=1.5, allow_nan=False)
quat = st.tuples(*[st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)] * 4).filter(
    lambda q: sum(c * c for c in q) > 1e-3)


@given(angle, pitch, angle)
def test_euler_round_trip(roll, p, yaw):
    back = rot.dcm_to_euler(rot.euler_to_dcm(roll, p, yaw))
    for a, b in zip(back, (roll, p, yaw)):
        assert abs(wrap_pi(a - b)) < 1e-9


@given(angle, pitch, angle)
def test_e2d_d2e_inverse(roll, p, yaw):
    back = rot.d2e(rot.e2d((roll, p, yaw)))
    for a, b in zip(back, (roll, p, yaw)):
        assert abs(wrap_pi(a - b)) < 1e-9


@given(quat, quat)
def test_quaternion_product_keeps_unit_norm(a, b):
    qa = rot.quat_normalize(a)
    qb = rot.quat_normalize(b)
    assert abs(rot.quat_norm(rot.quat_mul(qa, qb)) - 1.0) < 1e-12


@given(quat)
def test_dcm_quaternion_round_trip(q):
    qn = rot.quat_normalize(q)
    back = rot.dcm_to_quat(rot.quat_to_dcm(qn))
    assert rot.quat_angle_between(qn, back) < 1e-6


@given(quat, quat, st.floats(min_value=0.0, max_value=1.0))
def test_slerp_is_unit_and_on_the_geodesic(a, b, t):
    qa = rot.quat_normalize(a)
    qb = rot.quat_normalize(b)
    q = rot.quat_slerp(qa, qb, t)
    assert abs(rot.quat_norm(q) - 1.0) < 1e-12
    total = rot.quat_angle_between(qa, qb)
    assert abs(rot.quat_angle_between(qa, q) + rot.quat_angle_between(q, qb) - total) < 1e-6


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_wrap_pi_range(a):
    w = wrap_pi(a)
    assert -math.pi <= w < math.pi
    assert abs(math.sin(w) - math.sin(a)) < 1e-6 and abs(math.cos(w) - math.cos(a)) < 1e-6
