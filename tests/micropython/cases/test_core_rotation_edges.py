"""Edges of onboard.core.rotations and angles: gimbal lock of the Euler conversion, quaternions whose squared
norm underflows or overflows, and angle wrapping just below the range's start (CPython and MicroPython)."""
import math

from onboard.core import rotations as rot
from onboard.core.angles import PI, TWO_PI, angle_diff, wrap_2pi, wrap_pi

HALF_PI = 0.5 * math.pi


def _max_diff(a, b):
    return max(abs(a[i] - b[i]) for i in range(len(a)))


def test_euler_of_a_gimbal_locked_attitude_rebuilds_its_rotation():
    """At pitch +-pi/2 (and within 1e-4 rad of it) only roll - yaw (roll + yaw at -pi/2) is fixed: the angles
    read back from R must rebuild R, and pitch must be exact (asin near 1 lost 2e-8 rad; roll and yaw from the
    rounding of cos(pitch) ~ 1e-17 terms rebuilt R with errors up to 1)."""
    for pitch in (HALF_PI, -HALF_PI, HALF_PI - 1e-9, -HALF_PI + 1e-7, HALF_PI - 5e-5):
        for roll, yaw in ((0.0, 0.3), (0.7, 0.3), (0.0, -2.0), (0.7, -2.0), (-2.9, 3.1)):
            q = rot.quat_from_euler(roll, pitch, yaw)
            R = rot.quat_to_dcm(q)
            for e in (rot.dcm_to_euler(R), rot.quat_to_euler(q), rot.d2e(rot.dcm_transpose(R))):
                back = rot.euler_to_dcm(e[0], e[1], e[2])
                assert _max_diff(back, R) < 1e-12, (roll, pitch, yaw, e, _max_diff(back, R))
                assert abs(e[1] - pitch) < 1e-12, (roll, pitch, yaw, e)


def test_exact_gimbal_lock_reads_roll_zero_and_the_combined_angle_as_yaw():
    """R = Rz(yaw) Ry(+pi/2) Rx(roll) depends on yaw - roll only (on yaw + roll at -pi/2): roll 0 carries it."""
    e = rot.dcm_to_euler(rot.euler_to_dcm(0.7, HALF_PI, 0.3))
    assert e[0] == 0.0 and abs(e[1] - HALF_PI) < 1e-15 and abs(e[2] - (0.3 - 0.7)) < 1e-12, e
    e = rot.dcm_to_euler(rot.euler_to_dcm(0.7, -HALF_PI, 0.3))
    assert e[0] == 0.0 and abs(e[1] + HALF_PI) < 1e-15 and abs(e[2] - (0.3 + 0.7)) < 1e-12, e


def test_normalising_a_tiny_or_huge_quaternion_gives_its_unit_quaternion():
    """(1e200, ...) squared overflows (it came back as the zero quaternion), (1e-200, ...) underflows (it was
    refused as zero); both are the identity's direction, and w stays >= 0."""
    for scale in (1e200, 1e-200, -1e-170, 1e155, 1e-155):
        q = rot.quat_normalize((0.5 * scale, -0.5 * scale, 0.5 * scale, 0.5 * scale))
        assert _max_diff(q, (0.5, -0.5, 0.5, 0.5)) < 1e-15, (scale, q)     # -q is q's rotation, w >= 0
    assert rot.quat_normalize((1e-300, 0.0, 0.0, 0.0)) == (1.0, 0.0, 0.0, 0.0)


def test_a_zero_nan_or_infinite_quaternion_is_refused():
    """An infinite entry came back as a NaN quaternion; zero and NaN are refused as before."""
    inf = float("inf")
    for q in ((0.0, 0.0, 0.0, 0.0), (inf, 0.0, 0.0, 0.0), (1.0, -inf, 0.0, 0.0), (float("nan"), 1.0, 0.0, 0.0),
              (1e200, float("nan"), 0.0, 0.0)):
        try:
            out = rot.quat_normalize(q)
        except rot.RotationError:
            continue
        raise AssertionError("normalised %r to %r" % (q, out))


def test_wrapping_just_below_the_start_of_the_range_stays_in_it():
    """A remainder a hair below zero (-1e-17) plus 2*pi rounds to 2*pi: wrap_2pi returned 2*pi and wrap_pi
    returned +pi for an angle just below -pi, outside [0, 2*pi) and [-pi, pi)."""
    below_minus_pi = -PI - 4e-16            # the float just below -pi
    assert below_minus_pi < -PI
    for a in (below_minus_pi, -PI, PI, 3.0 * PI, -3.0 * PI - 4e-16, -1e-17):
        w = wrap_pi(a)
        assert -PI <= w < PI, (a, w)
    for a in (-1e-17, -1e-300, -4e-16, -TWO_PI - 8e-16, 0.0, TWO_PI):
        w = wrap_2pi(a)
        assert 0.0 <= w < TWO_PI, (a, w)
    assert wrap_2pi(-1e-17) == 0.0
    assert wrap_pi(below_minus_pi) == -PI
    d = angle_diff(-PI, 4e-16)
    assert -PI <= d < PI, d


def test_orthonormalizing_a_matrix_with_a_zero_or_dependent_row_is_a_rotation_error():
    """A zero first row, a zero second row or a second row parallel to the first divided by zero
    (ZeroDivisionError); they are RotationError (a ValueError) naming the row."""
    cases = (([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], "first row is zero"),
             ([1e-200, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], "first row is zero"),
             ([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], "second row is zero or parallel"),
             ([0.0, 2.0, 0.0, 0.0, -3.0, 0.0, 0.0, 0.0, 1.0], "second row is zero or parallel"),
             ([0.0] * 9, "first row is zero"))
    for R, words in cases:
        try:
            out = rot.dcm_orthonormalize(R)
        except rot.RotationError as exc:
            assert isinstance(exc, ValueError)
            assert words in str(exc), (R, str(exc))
            continue
        raise AssertionError("orthonormalised %r to %r" % (R, out))


def test_orthonormalizing_keeps_its_results_for_usable_matrices():
    """A zero third row is rebuilt from the first two; drifted rotations come back as before."""
    assert rot.dcm_orthonormalize([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]) == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
                                                                                    0.0, 0.0, 1.0]
    R = rot.euler_to_dcm(0.3, -0.2, 1.1)
    drifted = [R[i] * (1.0 + 1e-6 * (i % 4)) for i in range(9)]
    out = rot.dcm_orthonormalize(drifted)
    assert _max_diff(rot.dcm_mul(out, rot.dcm_transpose(out)), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]) < 1e-15


def golden_orthonormalize():
    R = rot.euler_to_dcm(0.3, -0.2, 1.1)
    return rot.dcm_orthonormalize([R[i] * (1.0 + 1e-6 * (i % 4)) for i in range(9)])
