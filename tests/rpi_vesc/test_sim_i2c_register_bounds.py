"""The simulated MPU-6050's register file at its edges (harness/sim/i2c.py), as the chip and the simavr
bridge's emulation of it (firmware/simavr_bridge/avr_bridge.c) behave: WHO_AM_I and the sensor data
registers are read-only, a burst read always returns the bytes asked for (the register pointer wraps
within the 7-bit register space), and a burst write past the last register wraps the same way."""
import pytest

from harness.sim.i2c import REG_ACCEL_XOUT_H, REG_WHO_AM_I, SimI2cBus, SimMpu6050

ADDR = 0x68


def _bus():
    bus = SimI2cBus()
    chip = bus.attach(ADDR, SimMpu6050())
    return bus, chip


def test_who_am_i_is_read_only():
    bus, _chip = _bus()
    bus.writeto_mem(ADDR, REG_WHO_AM_I, b"\x00")
    assert bus.readfrom_mem(ADDR, REG_WHO_AM_I, 1) == b"\x68"


def test_data_registers_are_read_only_while_asleep():
    bus, chip = _bus()                                   # power-on: asleep, data registers 0
    bus.writeto_mem(ADDR, REG_ACCEL_XOUT_H, bytes(range(1, 15)))
    assert bus.readfrom_mem(ADDR, REG_ACCEL_XOUT_H, 14) == bytes(14)
    assert not chip.awake


@pytest.mark.parametrize("reg,n", [(0x7E, 4), (0x7F, 1), (0x75, 20), (0x00, 200)])
def test_burst_read_returns_every_byte_asked_for(reg, n):
    bus, _chip = _bus()
    data = bus.readfrom_mem(ADDR, reg, n)
    assert len(data) == n
    want = bytes((0x68 if (reg + k) % 128 == REG_WHO_AM_I else 0x40 if (reg + k) % 128 == 0x6B else 0)
                 for k in range(n))
    assert data == want


def test_burst_write_past_the_last_register_wraps_to_the_first():
    bus, _chip = _bus()
    bus.writeto_mem(ADDR, 0x7F, b"\x11\x22")              # raised IndexError at register 0x80
    assert bus.readfrom_mem(ADDR, 0x7F, 2) == b"\x11\x22"


@pytest.mark.parametrize("reg", [-1, 0x100, 1.5, None])
def test_register_address_outside_a_byte_raises_value_error(reg):
    bus, _chip = _bus()
    with pytest.raises(ValueError):
        bus.readfrom_mem(ADDR, reg, 1)
    with pytest.raises(ValueError):
        bus.writeto_mem(ADDR, reg, b"\x00")
