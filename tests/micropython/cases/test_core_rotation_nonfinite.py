"""onboard.core.rotations: quat_from_rotvec given a NaN, infinite or overflowing rotation vector, and
dcm_orthonormalize given a matrix whose first two rows hold a NaN or infinity (or whose squares overflow), raise
RotationError (a ValueError). Before: quat_from_rotvec gave a NaN quaternion silently for NaN, a bare "math domain
error" for infinity and an OverflowError (not a ValueError) for 1e200 on CPython; dcm_orthonormalize returned a
matrix of NaN (or zeros) as "the nearest rotation". Runs under CPython (pytest) and inside MicroPython."""
from onboard.core.rotations import RotationError, dcm_orthonormalize, euler_to_dcm, quat_from_rotvec

NAN = float("nan")
INF = float("inf")


def test_a_non_finite_or_overflowing_rotation_vector_is_refused():
    for v in ((NAN, 0.0, 0.0), (0.0, INF, 0.0), (0.0, 0.0, -INF), (1e200, 0.0, 0.0), (0.0, -1e300, 1.0)):
        try:
            quat_from_rotvec(v)
            raised = False
        except RotationError as exc:
            raised = "rotation vector" in str(exc)
        assert raised, v


def test_finite_rotation_vectors_keep_their_quaternions():
    assert quat_from_rotvec((0.0, 0.0, 0.0)) == (1.0, 0.0, 0.0, 0.0)
    q = quat_from_rotvec((0.0, 0.0, 1e-13))
    assert q[0] == 1.0 and abs(q[3] - 5e-14) < 1e-27
    q = quat_from_rotvec((3.0, 0.0, 0.0))
    assert abs(q[0] * q[0] + q[1] * q[1] - 1.0) < 1e-15 and q[1] > 0.0


def test_orthonormalising_a_non_finite_matrix_is_refused():
    for R in ([NAN, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, INF, 0.0, 0.0, 0.0, 1.0],
              [1.0, 0.0, 0.0, -INF, 1.0, 0.0, 0.0, 0.0, 1.0], [1e200, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]):
        try:
            dcm_orthonormalize(R)
            raised = False
        except RotationError:
            raised = True
        assert raised, R
    R = euler_to_dcm(0.1, -0.2, 3.0)
    out = dcm_orthonormalize(R)
    assert max(abs(out[i] - R[i]) for i in range(9)) < 1e-15
