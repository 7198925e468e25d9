"""ES-EKF near gimbal lock: the pure and Cython builds give the same bits.

The update's attitude residual (ag2u eq. 6, h = d2e of eq. 7) is computed by
``onboard.core.rotations.d2e`` on the pure path and by ``eskf_d2e`` in
``cython_ext/eskf_kernels.h`` on the compiled one. Within 1e-4 rad of pitch = +-pi/2 ``d2e`` takes pitch from
atan2 and solves roll and yaw so that the angles rebuild the rotation; the C twin kept asin and the generic
roll/yaw formulas there, so a residual rotation near gimbal lock gave another innovation, NIS and state on
the compiled path (pitch differed in the 13th digit, roll and yaw by up to the whole angle at the lock).
Every build of the kernels this CPU can run is checked.
"""
import math

import pytest

from onboard import impl as impl_switch
from onboard.core import rotations as rot
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import IMPL_MODULES, make_eskf

from tests.unit.state_bits import state_bits

IMPLS = impl_switch.available(IMPL_MODULES)
pytestmark = pytest.mark.skipif("cython" not in IMPLS, reason="cython_ext not built")
VARIANTS = impl_switch.load(IMPL_MODULES, "cython").KERNEL_VARIANTS if "cython" in IMPLS else ()
HALF_PI = 0.5 * math.pi
G = 9.80665

# pitches at and within 1e-4 rad of the lock, both signs, and just outside the band (the generic formulas)
LOCK_PITCHES = (HALF_PI, -HALF_PI, HALF_PI - 1e-9, -HALF_PI + 1e-7, HALF_PI - 5e-5, -HALF_PI + 9.9e-5)
NEAR_PITCHES = (HALF_PI - 1.01e-4, -HALF_PI + 2e-4, 1.2)


@pytest.fixture(params=VARIANTS)
def kernel_variant(request):
    """Runs the test on one build of the Cython kernels, then restores the one chosen at import."""
    module = impl_switch.load(IMPL_MODULES, "cython")
    before = module.kernel_variant()
    module.use_kernel_variant(request.param)
    yield request.param
    module.use_kernel_variant(before)


def _bits(values):
    return [v.hex() for v in values]


def _run(impl, att0, meas, config):
    """Initialise at attitude ``att0``, take a few IMU samples, fuse one pose with attitude ``meas``."""
    f = make_eskf(config, impl=impl)
    f.initialize(0, (1.0, -2.0, -0.5), (0.2, 0.0, 0.0), att0)
    t = 0
    for _ in range(3):
        t += 10000
        f.predict(ImuSample(t, 10000, (0.002, 0.0, -G * 0.01), (0.0, 0.0, 0.0)))
    before = f.nav_state().euler_rad
    outcome = f.update_pose(PoseSample(t, (1.0, -2.0, -0.5), meas))
    return (outcome, _bits(f.last_innovation), f.last_nis.hex(), _bits(before), _bits(f.nav_state().euler_rad),
            state_bits(f.get_state()))


@pytest.mark.parametrize("pitch", LOCK_PITCHES + NEAR_PITCHES)
@pytest.mark.parametrize("config", [{"gate_nis": 0.0}, {}])
def test_a_residual_near_gimbal_lock_has_the_same_bits_on_both_paths(pitch, config, kernel_variant):
    """INS level, measured attitude at the lock: the residual rotation is gimbal-locked."""
    for roll, yaw in ((0.3, 0.2), (0.0, -2.0), (-2.9, 3.1)):
        pure = _run("pure", (0.0, 0.0, 0.0), (roll, pitch, yaw), config)
        cy = _run("cython", (0.0, 0.0, 0.0), (roll, pitch, yaw), config)
        assert cy == pure, (roll, pitch, yaw)


@pytest.mark.parametrize("pitch", LOCK_PITCHES)
def test_an_attitude_at_gimbal_lock_gives_the_same_euler_angles_on_both_paths(pitch, kernel_variant):
    """INS attitude at the lock: output Euler angles and the residual of a pose at another attitude."""
    for meas in ((0.1, 0.0, 0.4), (0.3, pitch, -1.0), (0.0, 0.0, 0.0)):
        pure = _run("pure", (0.7, pitch, 0.3), meas, {"gate_nis": 0.0})
        cy = _run("cython", (0.7, pitch, 0.3), meas, {"gate_nis": 0.0})
        assert cy == pure, (pitch, meas)


def test_the_compiled_residual_at_the_lock_rebuilds_its_rotation():
    """The innovation's attitude part is h(F(Psi_INS)^T F(Psi_m)): at the lock its angles rebuild that
    rotation (the old C formulas read roll and yaw from rounding noise and missed by up to 1)."""
    for pitch in LOCK_PITCHES:
        for roll, yaw in ((0.3, 0.2), (0.0, -2.0), (-2.9, 3.1)):
            f = make_eskf({"gate_nis": 0.0}, impl="cython")
            f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
            f.update_pose(PoseSample(0, (0.0, 0.0, 0.0), (roll, pitch, yaw)))
            e = f.last_innovation[3:]
            back = rot.e2d(e)
            want = rot.e2d((roll, pitch, yaw))
            assert max(abs(back[i] - want[i]) for i in range(9)) < 1e-12, (roll, pitch, yaw, e)
            assert abs(e[1] - pitch) < 1e-12, (roll, pitch, yaw, e)
