"""Flat-list linear algebra: run under CPython (pytest) and inside MicroPython."""
from onboard.core import linalg as la

A = [4.0, 1.0, 0.5,
     1.0, 3.0, 0.2,
     0.5, 0.2, 2.0]


def test_inverse_times_matrix_is_identity():
    inv = la.inverse(A, 3)
    prod = la.mat_mul(A, inv, 3, 3, 3)
    ident = la.identity(3)
    for i in range(9):
        assert abs(prod[i] - ident[i]) < 1e-12


def test_cholesky_reconstructs():
    low = la.cholesky(A, 3)
    back = la.mat_mul(low, la.transpose(low, 3, 3), 3, 3, 3)
    for i in range(9):
        assert abs(back[i] - A[i]) < 1e-12


def test_cholesky_rejects_indefinite():
    try:
        la.cholesky([1.0, 2.0, 2.0, 1.0], 2)
    except la.LinAlgError:
        return
    raise AssertionError("indefinite matrix accepted")


def test_singular_inverse_raises():
    try:
        la.inverse([1.0, 2.0, 2.0, 4.0], 2)
    except la.LinAlgError:
        return
    raise AssertionError("singular matrix inverted")


def test_cross_and_skew_agree():
    v = [0.3, -1.2, 2.0]
    w = [1.5, 0.1, -0.7]
    assert la.cross(v, w) == la.mat_vec(la.skew(v), w, 3, 3)


def test_is_finite():
    assert la.is_finite([1.0, 2.0])
    assert not la.is_finite([1.0, float("nan")])
    assert not la.is_finite([float("inf")])


def golden_linalg():
    B = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    return [la.inverse(A, 3), la.cholesky(A, 3), la.mat_mul(B, A, 2, 3, 3), la.symmetrize([1.0, 2.0, 4.0, 3.0], 2),
            la.norm([3.0, 4.0, 12.0])]
