"""onboard.soil.learned_estimator without torch: a window with no sample where the FEE is valid for the
estimate is refused (CutEstimateError), not estimated with a NaN force error."""
import math

import numpy as np
import pytest

from onboard.soil import learned_estimator as le
from onboard.soil.cut_estimator import CutEstimateError, CutWindow

N = 40
KIN = np.tile([1.0, 0.17, 0.0, 0.0, 0.3], (N, 1))          # speed, blade pitch, roll, chassis pitch, lift
ACT = np.tile([1.0, 0.3, 0.0, 0.0, 0.1], (N, 1))           # speed, lift, tilt, roll, depth commands


def _window(alpha_rad):
    return CutWindow(np.full(N, alpha_rad), np.full(N, 1.4), np.full(N, 0.1), np.full(N, 1.85), np.full(N, 2000.0),
                     np.full(N, 9000.0), np.full(N, 3000.0), time_us=np.arange(N) * 16667)


@pytest.mark.parametrize("model", [le.KINEMATIC_MODEL, le.DEFAULT_MODEL], ids=["kinematic", "force"])
def test_a_window_outside_the_fee_domain_is_refused_not_given_a_nan_force_error(model):
    est = le.LearnedEstimator(model)
    ok = est.estimate(_window(0.0), KIN, ACT)
    assert math.isfinite(ok.force_mae_n) and ok.success
    # every sample's surface at 57 deg, beyond the FEE's |alpha| clipping limit (45 deg): no sample is valid.
    # The estimate came back with force_mae NaN (a row the soil layers fused, and a metrics.json that cannot
    # be written: NaN is refused there)
    with pytest.raises(CutEstimateError, match="FEE's domain"):
        est.estimate(_window(1.0), KIN, ACT)
