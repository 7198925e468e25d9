"""The simulated aiding pose sensor's two readings of ag2u eq. 13: fresh white noise per
sample, or the paper's error vector held for the whole episode. Seeded."""
import math

import numpy as np
import pytest

from harness.sim.sensors.pose import AidingPoseSensor

TRUE_POS_NED_M = (1.0, -2.0, 0.0)
TRUE_EULER_RAD = (0.0, 0.0, 0.7)
CFG = {"pos_sigma_m": 0.05, "att_sigma_deg": [1.0, 1.0, 5.0]}


def _errors(model, seed, n=40):
    sensor = AidingPoseSensor(lambda: (TRUE_POS_NED_M, TRUE_EULER_RAD), np.random.default_rng(seed),
                              dict(CFG, error_model=model))
    out = []
    for k in range(n):
        s = sensor.sample(k * 100000)
        dpos = [s.pos_ned_m[i] - TRUE_POS_NED_M[i] for i in range(3)]
        dyaw_deg = math.degrees(math.remainder(s.euler_rad[2] - TRUE_EULER_RAD[2], 2 * math.pi))
        out.append(dpos + [dyaw_deg])
    return np.array(out)


def test_white_error_is_fresh_per_sample_and_zero_mean():
    err = _errors("white", seed=3, n=400)
    assert len({tuple(np.round(row, 9)) for row in err}) == len(err)
    assert abs(err[:, 0].mean()) < 0.01 and abs(err[:, 3].mean()) < 1.0
    assert 0.04 < err[:, 0].std() < 0.06 and 4.0 < err[:, 3].std() < 6.0


def test_constant_error_is_the_papers_vector_held_for_the_episode():
    signs = set()
    for seed in range(8):
        err = _errors("constant", seed)
        assert np.allclose(err, err[0], atol=1e-12), "the error must not change between samples"
        assert np.allclose(np.abs(err[0, :3]), CFG["pos_sigma_m"], atol=1e-12)
        assert abs(abs(err[0, 3]) - CFG["att_sigma_deg"][2]) < 0.05     # yaw composed with 1 deg roll/pitch
        signs.add(tuple(np.sign(err[0])))
    assert len(signs) > 1, "the signs are drawn per episode"


def test_constant_error_carries_the_same_covariance_as_white():
    sensor = AidingPoseSensor(lambda: (TRUE_POS_NED_M, TRUE_EULER_RAD), np.random.default_rng(0),
                              dict(CFG, error_model="constant"))
    s = sensor.sample(0)
    assert list(s.cov_pos_m2) == [0.05 ** 2] * 3
    assert s.cov_att_rad2[2] == pytest.approx(math.radians(5.0) ** 2)


def test_unknown_error_model_is_refused():
    with pytest.raises(ValueError, match="error_model"):
        AidingPoseSensor(lambda: (TRUE_POS_NED_M, TRUE_EULER_RAD), np.random.default_rng(0),
                         dict(CFG, error_model="pink"))
