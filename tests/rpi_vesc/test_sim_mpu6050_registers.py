"""The simulated MPU-6050 behaves like the chip's register file (InvenSense MPU-6000/6050 register map
rev 4.2): the data registers are sampled continuously at the *current* full-scale settings, a sleeping chip
(PWR_MGMT_1 bit 6, its power-on state) does not update them, and DEVICE_RESET (bit 7) restores the
power-on register values and clears itself."""
import pytest

from boards.rpi.imu_mpu6050 import Mpu6050
from harness.sim.i2c import REG_ACCEL_XOUT_H, SimI2cBus, SimMpu6050, sim_mpu6050_bus
from onboard.core.units import G_MPS2

REG_PWR_MGMT_1 = 0x6B


def test_desk_bus_at_rest_reads_one_g_after_the_driver_sets_its_ranges():
    # the chip was put at rest before the driver chose +-4 g: a real chip samples at the range now set
    bus = sim_mpu6050_bus()
    imu = Mpu6050(bus, 0x68, accel_range_g=4, gyro_range_dps=500)
    imu.init()
    f, w = imu.read_rates()
    assert f[2] == pytest.approx(-G_MPS2, abs=0.01)
    assert w == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)


def test_motion_set_before_a_range_change_is_read_at_the_new_range():
    bus = SimI2cBus()
    chip = bus.attach(0x68, SimMpu6050())
    chip.write(REG_PWR_MGMT_1, bytes((0x01,)))            # awake at +-2 g
    chip.set_motion((3.0, 0.0, -G_MPS2), (0.0, 0.0, 0.0))
    imu = Mpu6050(bus, 0x68, accel_range_g=16, gyro_range_dps=2000)
    imu.init()                                             # now +-16 g
    f, _w = imu.read_rates()
    assert f[0] == pytest.approx(3.0, abs=0.01) and f[2] == pytest.approx(-G_MPS2, abs=0.01)


def test_a_sleeping_chip_does_not_update_its_data_registers():
    chip = SimMpu6050()                                    # power-on: asleep
    chip.set_motion((1.0, 2.0, -G_MPS2), (0.1, 0.2, 0.3))
    assert chip.read(REG_ACCEL_XOUT_H, 14) == bytes(14)    # power-on value, never sampled
    chip.write(REG_PWR_MGMT_1, bytes((0x01,)))            # wake: it samples the motion it is in
    assert chip.read(REG_ACCEL_XOUT_H, 14) != bytes(14)


def test_device_reset_clears_itself_and_restores_power_on_values():
    chip = SimMpu6050()
    chip.write(0x1C, bytes((3 << 3,)))
    chip.write(REG_PWR_MGMT_1, bytes((0x01,)))
    chip.write(REG_PWR_MGMT_1, bytes((0x80,)))            # DEVICE_RESET: a driver polls until bit 7 clears
    assert chip.read(REG_PWR_MGMT_1, 1)[0] == 0x40         # reset value: asleep, reset bit cleared
    assert chip.read(0x1C, 1)[0] == 0 and not chip.awake
    assert chip.read(0x75, 1)[0] == 0x68
