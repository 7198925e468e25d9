"""pack_imu (pure and Cython) refuses a whole-number time_us or dt_us beyond 2**53 us that a double cannot hold
(ValueError, the buffer unchanged) instead of writing a rounded time: 2**53 + 1 was written as 2**53, so the
packed queue fed the filter another time than the sample's (and two samples 1 us apart could come out in the
wrong order or equal). Times a double holds exactly, beyond 2**53 too, are written as before."""
import math

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample
from onboard.estimators.eskf import IMPL_MODULES
from onboard.estimators.eskf_packed import IMU_STRIDE, pack_imu, packed_buffer

PACKERS = [pack_imu]
if "cython" in impl_switch.available(IMPL_MODULES):
    from cython_ext import eskf as _cy
    PACKERS.append(_cy.pack_imu)

ROUNDED = [2 ** 53 + 1, 2 ** 53 + 3, -(2 ** 53) - 1, 2 ** 62 + 1, 2 ** 63 + 1]
EXACT = [2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 2 ** 62 + 4096, 2 ** 63, 1, 0]


class _Loose:
    def __init__(self, time_us, dt_us):
        self.time_us = time_us
        self.dt_us = dt_us
        self.dvel_body_mps = (0.1, 0.2, 0.3)
        self.dang_body_rad = (0.0, 0.0, 0.001)


@pytest.mark.parametrize("packer", PACKERS)
@pytest.mark.parametrize("t", ROUNDED)
def test_a_time_a_double_rounds_is_refused(packer, t):
    buf = packed_buffer(2)
    buf[IMU_STRIDE] = 7.0
    before = list(buf)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        packer(buf, 0, ImuSample(t, 1000, (0.1, 0.2, 0.3), (0.0, 0.0, 0.001)))
    with pytest.raises(ValueError, match="2\\*\\*53"):
        packer(buf, 1, _Loose(1000, t))           # dt_us likewise
    assert list(buf) == before


@pytest.mark.parametrize("packer", PACKERS)
@pytest.mark.parametrize("t", EXACT)
def test_a_time_a_double_holds_is_written_exactly(packer, t):
    buf = packed_buffer(1)
    assert packer(buf, 0, ImuSample(t, 1000, (0.1, 0.2, 0.3), (0.0, 0.0, 0.001))) is True
    assert int(buf[0]) == t and buf[1] == 1000.0
    assert list(buf[2:]) == [0.1, 0.2, 0.3, 0.0, 0.0, 0.001]


@pytest.mark.parametrize("packer", PACKERS)
def test_float_and_non_finite_times_are_written_as_before(packer):
    buf = packed_buffer(1)
    assert packer(buf, 0, _Loose(float(2 ** 60), 1000.5)) is True
    assert buf[0] == float(2 ** 60) and buf[1] == 1000.5
    assert packer(buf, 0, _Loose(math.nan, 1000)) is False
    assert math.isnan(buf[0])
