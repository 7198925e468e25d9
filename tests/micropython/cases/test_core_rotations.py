"""Rotations and angles: run under CPython (pytest) and inside MicroPython (tier test)."""
import math

from onboard.core import rotations as rot
from onboard.core.angles import angle_diff, wrap_2pi, wrap_pi

ANGLE_SETS = [(0.1, -0.2, 0.3), (-1.0, 0.5, 3.0), (0.0, 0.0, -3.1), (2.5, -1.2, 1.7),
              (0.3, 1.4, -2.0)]


def _close(a, b, tol=1e-12):
    for i in range(len(a)):
        assert abs(a[i] - b[i]) <= tol, (a, b)


def test_euler_dcm_round_trip():
    for e in ANGLE_SETS:
        back = rot.dcm_to_euler(rot.euler_to_dcm(e[0], e[1], e[2]))
        _close([wrap_pi(x) for x in back], [wrap_pi(x) for x in e])


def test_e2d_is_transpose_of_body_to_ned_and_d2e_inverts_it():
    for e in ANGLE_SETS:
        D = rot.e2d(e)
        R = rot.euler_to_dcm(e[0], e[1], e[2])
        _close(D, rot.dcm_transpose(R))
        _close(rot.d2e(D), e)


def test_dcm_is_orthonormal():
    for e in ANGLE_SETS:
        R = rot.euler_to_dcm(e[0], e[1], e[2])
        _close(rot.dcm_mul(R, rot.dcm_transpose(R)), [1, 0, 0, 0, 1, 0, 0, 0, 1])


def test_quaternion_matches_dcm():
    for e in ANGLE_SETS:
        q = rot.quat_from_euler(e[0], e[1], e[2])
        assert abs(rot.quat_norm(q) - 1.0) < 1e-12
        _close(rot.quat_to_dcm(q), rot.euler_to_dcm(e[0], e[1], e[2]))
        _close(rot.dcm_to_quat(rot.quat_to_dcm(q)), rot.quat_normalize(q))


def test_quat_mul_composes_rotations():
    a = rot.quat_from_euler(0.2, 0.1, -0.4)
    b = rot.quat_from_euler(-0.3, 0.5, 1.1)
    _close(rot.quat_to_dcm(rot.quat_mul(a, b)),
           rot.dcm_mul(rot.quat_to_dcm(a), rot.quat_to_dcm(b)))


def test_rotvec_round_trip():
    for v in ([0.1, -0.2, 0.3], [1e-14, 0.0, 0.0], [0.0, 3.0, 0.0]):
        _close(rot.quat_to_rotvec(rot.quat_from_rotvec(v)), v, 1e-12)


def test_slerp_end_points_and_constant_speed():
    q0 = rot.quat_from_euler(0.0, 0.0, 0.0)
    q1 = rot.quat_from_euler(0.0, 0.0, 1.2)
    _close(rot.quat_slerp(q0, q1, 0.0), q0)
    _close(rot.quat_slerp(q0, q1, 1.0), q1)
    for t in (0.25, 0.5, 0.75):
        assert abs(rot.quat_angle_between(q0, rot.quat_slerp(q0, q1, t)) - 1.2 * t) < 1e-12


def test_slerp_takes_short_arc():
    q0 = rot.quat_from_euler(0.0, 0.0, 3.0)
    q1 = rot.quat_from_euler(0.0, 0.0, -3.0)
    mid = rot.quat_slerp(q0, q1, 0.5)
    assert abs(abs(wrap_pi(rot.quat_to_euler(mid)[2])) - math.pi) < 1e-9


def test_wrap():
    assert abs(wrap_pi(3 * math.pi) - (-math.pi)) < 1e-12
    assert abs(wrap_pi(-0.5) + 0.5) < 1e-15
    assert abs(wrap_2pi(-0.5) - (2 * math.pi - 0.5)) < 1e-12
    assert abs(angle_diff(math.pi - 0.1, -math.pi + 0.1) + 0.2) < 1e-12


def golden_rotations():
    out = []
    for e in ANGLE_SETS:
        R = rot.euler_to_dcm(e[0], e[1], e[2])
        q = rot.quat_from_euler(e[0], e[1], e[2])
        out.append(R)
        out.append(q)
        out.append(rot.dcm_to_euler(R))
        out.append(rot.quat_to_rotvec(q))
        out.append(rot.quat_slerp(q, rot.quat_from_euler(0.3, -0.1, 0.9), 0.37))
    return out
