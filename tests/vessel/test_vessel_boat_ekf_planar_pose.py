"""The boat EKF takes an aiding pose from a planar source: the down, roll and pitch variances it does not fuse
may be 0 (as the planar EKF takes them); the fused ones must still be > 0 and no variance may be negative."""
import pytest

from onboard.core.samples import PoseSample
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import EAST, NORTH, YAW, BoatEkf
from onboard.estimators.planar_ekf import PlanarEkf


def _filter():
    f = BoatEkf()
    f.initialize(0, [0.2, 0.0, 10.0, -5.0, 1.0, 0.0])
    return f


def test_zero_variances_of_unfused_axes_are_taken():
    pose = PoseSample(10000, (10.2, -4.9, 0.0), (0.0, 0.0, 0.25), (0.04, 0.04, 0.0), (0.0, 0.0, 1e-3))
    f = _filter()
    assert f.update_pose(pose) is True
    assert f.rejected == 0 and f.updates == 1
    # the same numbers as with any positive variance in the unused slots (they are not fused)
    g = _filter()
    assert g.update_pose(PoseSample(10000, (10.2, -4.9, 0.0), (0.0, 0.0, 0.25), (0.04, 0.04, 5.0),
                                    (7.0, 7.0, 1e-3))) is True
    assert f.x == g.x and f.P == g.P
    # the planar EKF (the same contract) takes the same pose
    p = PlanarEkf()
    assert p.update_pose(pose) is True


def test_a_pose_with_zero_variances_starts_the_filter():
    f = BoatEkf()
    assert f.update_pose(PoseSample(0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.3), (0.25, 0.25, 0.0), (0.0, 0.0, 0.01)))
    assert f.initialized and f.x[NORTH] == 1.0 and f.x[EAST] == 2.0 and f.x[YAW] == pytest.approx(0.3)


@pytest.mark.parametrize("cov_pos, cov_att", [
    ((0.0, 0.04, 0.0), (0.0, 0.0, 1e-3)),        # a fused variance 0
    ((0.04, 0.04, 0.0), (0.0, 0.0, 0.0)),
    ((0.04, 0.04, -1.0), (0.0, 0.0, 1e-3)),      # an unused one negative: malformed
    ((0.04, 0.04, 0.0), (-0.1, 0.0, 1e-3)),
])
def test_bad_variances_are_still_refused(cov_pos, cov_att):
    f = _filter()
    x, P = list(f.x), list(f.P)
    with pytest.raises(EstimatorInputError):
        f.update_pose(PoseSample(10000, (10.2, -4.9, 0.0), (0.0, 0.0, 0.25), cov_pos, cov_att))
    assert f.x == x and f.P == P and f.rejected == 1 and f.time_us == 0
