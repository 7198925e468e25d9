"""MPU-6050 driver (boards.rpi) against the harness's register-level simulated chip on a simulated bus."""
import math

import pytest

from boards.rpi.imu_mpu6050 import ImuError, Mpu6050
from harness.sim.i2c import SimI2cBus, SimMpu6050
from onboard.core.units import G_MPS2


def _imu(**kw):
    bus = SimI2cBus()
    chip = bus.attach(0x68, SimMpu6050())
    imu = Mpu6050(bus, 0x68, **kw)
    imu.init()
    return bus, chip, imu


def test_init_configures_chip():
    _bus, chip, imu = _imu(rate_hz=100, accel_range_g=8, gyro_range_dps=1000)
    assert chip.awake
    assert chip.regs[0x19] == 9                        # 1 kHz / (1 + 9) = 100 Hz
    assert (chip.regs[0x1C] >> 3) & 3 == 2 and (chip.regs[0x1B] >> 3) & 3 == 2
    assert imu.initialized


def test_wrong_or_missing_device_raises():
    bus = SimI2cBus()
    with pytest.raises(ImuError, match="no MPU-6050"):
        Mpu6050(bus).init()
    bus.attach(0x68, SimMpu6050(who_am_i=0x11))
    with pytest.raises(ImuError, match="WHO_AM_I=0x11"):
        Mpu6050(bus).init()


def test_level_at_rest_reads_minus_g_in_frd():
    _bus, chip, imu = _imu()
    chip.set_motion((0.0, 0.0, -G_MPS2), (0.0, 0.0, 0.0))
    imu.read(0)
    s = imu.read(10000)
    assert s.dt_us == 10000
    assert s.dvel_body_mps[2] == pytest.approx(-G_MPS2 * 0.01, abs=1e-4)
    assert abs(s.dvel_body_mps[0]) < 1e-5 and abs(s.dang_body_rad[2]) < 1e-6
    assert imu.temperature_degc == pytest.approx(25.0, abs=0.01)


@pytest.mark.parametrize("gyro_range", [250, 500, 2000])
def test_turning_and_accelerating_body_axes(gyro_range):
    _bus, chip, imu = _imu(gyro_range_dps=gyro_range)
    chip.set_motion((1.5, -0.7, -G_MPS2), (0.0, 0.0, 0.8))   # forward accel, left lateral, turning right
    imu.read(0)
    s = imu.read(10000)
    lsb_radps = math.radians(1.0) / (131.0 / (gyro_range / 250))
    assert s.dang_body_rad[2] == pytest.approx(0.8 * 0.01, abs=lsb_radps * 0.01)
    assert s.dvel_body_mps[0] == pytest.approx(0.015, abs=1e-4)
    assert s.dvel_body_mps[1] == pytest.approx(-0.007, abs=1e-4)


def test_saturates_at_full_scale():
    _bus, chip, imu = _imu(gyro_range_dps=250)
    chip.set_motion((0.0, 0.0, -G_MPS2), (0.0, 0.0, math.radians(400.0)))
    _f, w = imu.read_rates()
    assert w[2] == pytest.approx(math.radians(250.0), rel=0.01)


def test_bus_error_counted_and_recovers():
    bus, _chip, imu = _imu()
    imu.read(0)
    bus.fail_next = 1
    assert imu.read(10000) is None
    assert imu.read_errors == 1
    s = imu.read(20000)
    assert s is not None and s.dt_us == 20000              # the interval since the last good read


def test_bad_mount_rejected():
    with pytest.raises(ValueError):
        Mpu6050(SimI2cBus(), mount=("x", "x", "z"))
    with pytest.raises(ValueError):
        Mpu6050(SimI2cBus(), rate_hz=300)
