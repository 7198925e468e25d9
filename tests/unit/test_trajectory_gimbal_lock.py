"""harness.sim.trajectory.dcm_to_euler_array near gimbal lock: the branch of onboard.core.rotations.dcm_to_euler,
vectorised.

Within 1e-4 rad of pitch = +-pi/2 only roll - yaw (roll + yaw at -pi/2) is fixed by R; the generic formulas
(asin of -R[2, 0], roll and yaw from the last row and first column, entries ~ cos(pitch)) lost 2e-8 rad of
pitch to asin and read roll and yaw from rounding noise, so the angles did not rebuild R (errors up to 1).
Away from the band the generic formulas are kept bit for bit.
"""
import math

import numpy as np

from harness.sim.trajectory import dcm_to_euler_array, generate, quat_to_dcm_array
from onboard.core import rotations as rot

HALF_PI = 0.5 * math.pi
LOCK_PITCHES = (HALF_PI, -HALF_PI, HALF_PI - 1e-9, -HALF_PI + 1e-7, HALF_PI - 5e-5, -HALF_PI + 9.9e-5)
ROLL_YAWS = ((0.0, 0.3), (0.7, 0.3), (0.0, -2.0), (0.7, -2.0), (-2.9, 3.1))


def _euler_to_dcm_array(e):
    return np.array([rot.euler_to_dcm(*row) for row in e]).reshape(-1, 3, 3)


def test_euler_of_gimbal_locked_attitudes_rebuilds_their_rotations():
    cases = [(roll, pitch, yaw) for pitch in LOCK_PITCHES for roll, yaw in ROLL_YAWS]
    q = np.array([rot.quat_from_euler(*c) for c in cases])
    R = quat_to_dcm_array(q)
    e = dcm_to_euler_array(R)
    back = _euler_to_dcm_array(e)
    err = np.abs(back - R).reshape(len(cases), 9).max(axis=1)
    assert err.max() < 1e-12, [(cases[i], e[i].tolist(), err[i]) for i in np.nonzero(err >= 1e-12)[0]]
    pitch_err = np.abs(e[:, 1] - np.array([c[1] for c in cases]))
    assert pitch_err.max() < 1e-12, pitch_err.max()
    # and the angles are rotations.dcm_to_euler's (same branch; NumPy's atan2 may differ in the last ulp)
    for i in range(len(cases)):
        ref = rot.dcm_to_euler(R[i].reshape(9).tolist())
        assert np.abs(e[i] - np.array(ref)).max() < 1e-12, (cases[i], e[i].tolist(), ref)


def test_exact_gimbal_lock_reads_roll_zero_and_the_combined_angle_as_yaw():
    R = _euler_to_dcm_array([(0.7, HALF_PI, 0.3), (0.7, -HALF_PI, 0.3)])
    e = dcm_to_euler_array(R)
    assert e[0, 0] == 0.0 and abs(e[0, 1] - HALF_PI) < 1e-15 and abs(e[0, 2] - (0.3 - 0.7)) < 1e-12, e[0]
    assert e[1, 0] == 0.0 and abs(e[1, 1] + HALF_PI) < 1e-15 and abs(e[1, 2] - (0.3 + 0.7)) < 1e-12, e[1]


def test_away_from_the_lock_the_generic_formulas_are_kept_bit_for_bit():
    """Seeded random rotations (uniform, and pitches from 1.3e-4 rad of the lock outwards) mixed with locked
    rows in one call: the unlocked rows are exactly asin / atan2 of the entries as before."""
    rng = np.random.default_rng(20261127)
    q = rng.normal(size=(5000, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    n = 2000
    sign = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    near = np.stack([rng.uniform(-3.1, 3.1, n), sign * (HALF_PI - 10.0 ** rng.uniform(-3.9, 0.0, n)),
                     rng.uniform(-3.1, 3.1, n)], axis=1)
    locked = _euler_to_dcm_array([(0.7, p, 0.3) for p in LOCK_PITCHES])
    R = np.concatenate([quat_to_dcm_array(q), _euler_to_dcm_array(near), locked])
    e = dcm_to_euler_array(R)
    generic = np.stack([np.arctan2(R[:, 2, 1], R[:, 2, 2]), np.arcsin(np.clip(-R[:, 2, 0], -1.0, 1.0)),
                        np.arctan2(R[:, 1, 0], R[:, 0, 0])], axis=1)
    away = np.sqrt(R[:, 2, 1] * R[:, 2, 1] + R[:, 2, 2] * R[:, 2, 2]) >= rot.GIMBAL_COS
    assert away.sum() == len(R) - len(LOCK_PITCHES)
    assert (e[away].view(np.int64) == generic[away].view(np.int64)).all()
    back = _euler_to_dcm_array(e[~away])
    assert np.abs(back - R[~away]).max() < 1e-12


def test_a_trajectory_through_vertical_pitch_has_euler_angles_that_rebuild_it():
    """A leg that pitches the vehicle up to 90 degrees (roll 40, yaw 30): the recorded truth Euler angles rebuild
    the truth attitude at every sample, the vertical one included."""
    traj = generate([[0.0, 0.0, 0.0, 40.0, 0.0, 30.0, 0.0], [1.0, 0.0, 0.0, 40.0, 90.0, 30.0, 1.0]], 100, "linear")
    back = _euler_to_dcm_array(traj.euler_rad)
    assert np.abs(back - traj.R_body_to_ned).max() < 1e-12
    assert abs(traj.euler_rad[-1, 1] - HALF_PI) < 1e-12
