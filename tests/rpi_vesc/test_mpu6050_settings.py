"""MPU-6050 driver settings (boards/rpi/imu_mpu6050.py ``Mpu6050``) that would configure the chip wrongly or crash
later are refused at construction with a ValueError naming the setting: a rate that is no whole divisor of the
1 kHz sample clock (0, a float, a bool), a DLPF setting that switches the sample clock to 8 kHz (0, 7), and a mount
axis with more than one sign ("+-x" read as +x, "--x" as -x)."""
import pytest

from boards.rpi.imu_mpu6050 import Mpu6050
from harness.sim.i2c import SimI2cBus, SimMpu6050


@pytest.mark.parametrize("rate_hz", [0, -100, 100.0, True, 2000, "100"])
def test_a_rate_that_is_no_divisor_of_the_sample_clock_is_refused(rate_hz):
    with pytest.raises(ValueError, match="rate must be a divisor of 1000 Hz"):
        Mpu6050(SimI2cBus(), rate_hz=rate_hz)


@pytest.mark.parametrize("dlpf_cfg", [0, 7, 8, -1, True, 3.0])
def test_a_dlpf_setting_off_the_1_khz_clock_is_refused(dlpf_cfg):
    with pytest.raises(ValueError, match="dlpf_cfg must be one of"):
        Mpu6050(SimI2cBus(), dlpf_cfg=dlpf_cfg)


@pytest.mark.parametrize("mount", [("+-x", "y", "z"), ("--x", "y", "z"), ("x", "-+y", "z"), ("x", "y", 2)])
def test_a_mount_axis_with_more_than_one_sign_is_refused(mount):
    with pytest.raises(ValueError, match="bad mount axis"):
        Mpu6050(SimI2cBus(), mount=mount)


def test_valid_settings_configure_the_chip():
    bus = SimI2cBus()
    chip = bus.attach(0x68, SimMpu6050())
    imu = Mpu6050(bus, 0x68, rate_hz=200, dlpf_cfg=1, mount=("+x", "-y", "-z"))
    imu.init()
    assert imu.initialized and imu.period_us == 5000
    assert chip.regs[0x19] == 4 and chip.regs[0x1A] == 1
