"""The particle filter's yaw wrap in the NumPy and Cython kernels returns [-pi, pi) radians, as
onboard.core.angles.wrap_pi does: an angle just below -pi (fmod leaves a remainder of about -4e-16, which plus
2 pi rounds to 2 pi) wraps to -pi, not to +pi; every other angle keeps the bits of the fmod arithmetic."""
import math

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.core.angles import wrap_pi
from onboard.estimators import particle_filter as pf
from onboard.estimators import particle_filter_numpy as pn

JUST_BELOW = [math.nextafter(-math.pi, -4.0), -3.0 * math.pi]     # both wrap to -pi


def _angles():
    rng = np.random.default_rng(52)
    near = [k * 2.0 * math.pi + d for k in range(-3, 4) for d in (-math.pi, math.pi)]
    edges = [math.nextafter(a, s) for a in near for s in (-math.inf, math.inf)] + near
    return JUST_BELOW + edges + [0.0, -0.0, 1e-300, -1e-300, 1e6, -1e6] + list(rng.uniform(-20.0, 20.0, 200))


def _old_wrap(a):
    """The fmod arithmetic every path shares (the reference for angles whose remainder does not round)."""
    a = math.fmod(a + pf.PI, pf.TWO_PI)
    if a < 0.0:
        a += pf.TWO_PI
    return a - pf.PI


def _check(got, angles):
    for a, g in zip(angles, got):
        want = wrap_pi(a)
        assert -math.pi <= g < math.pi, (a, g)
        assert g == want and math.copysign(1.0, g) == math.copysign(1.0, want), (a, g, want)
        if _old_wrap(a) < math.pi:
            assert g == _old_wrap(a)


def test_numpy_wrap_is_the_core_wrap():
    angles = _angles()
    assert [float(v) for v in pn._wrap_pi(np.array(JUST_BELOW))] == [-math.pi, -math.pi]
    _check([float(v) for v in pn._wrap_pi(np.array(angles))], angles)


def test_numpy_refresh_yaw_just_below_minus_pi():
    xs, ys, yaws = np.zeros(1), np.zeros(1), np.zeros(1)
    pn.refresh(xs, ys, yaws, 0, 1, 1.0, 0.0, JUST_BELOW[0], 0.0, 0.0, 0.0, np.zeros(3))
    assert yaws[0] == -math.pi


@pytest.mark.skipif("cython" not in impl_switch.available(pf.KERNEL_MODULES),
                    reason="cython_ext.pf_kernels not built (make setup)")
def test_cython_wrap_is_the_core_wrap():
    from cython_ext import pf_kernels as k
    angles = _angles()
    n = len(angles)
    xs, ys, yaws = np.zeros(n), np.zeros(n), np.zeros(n)
    # refresh with zero spreads writes wrap(yaw_rad + 0.0) into each slot: one call per angle
    for i, a in enumerate(angles):
        k.refresh(xs, ys, yaws, i, 1, 1.0, 0.0, a, 0.0, 0.0, 0.0, np.zeros(3))
    _check([float(v) for v in yaws], [a + 0.0 for a in angles])
    assert yaws[0] == yaws[1] == -math.pi
    # the motion kernel wraps its yaws the same way
    xs, ys, yaws, ws, lws, est = np.zeros(2), np.zeros(2), np.array(JUST_BELOW), np.zeros(2), np.zeros(2), np.zeros(7)
    k.predict_weight(xs, ys, yaws, ws, lws, 2, 0.1, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.5, np.zeros(6), 0.0, 0.0, est)
    assert list(yaws) == [-math.pi, -math.pi]


def test_pure_wrap_is_the_core_wrap():
    below = math.nextafter(-math.pi, -4.0)
    assert pf.wrap_pi(below) == wrap_pi(below) and -math.pi <= pf.wrap_pi(below) < math.pi
