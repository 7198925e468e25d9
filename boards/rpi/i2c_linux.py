"""Linux i2c-dev bus (``/dev/i2c-N``) with the ``machine.I2C`` memory API, no extra package.

``readfrom_mem(addr, reg, n)``: select the slave (ioctl I2C_SLAVE), write the register
address, read ``n`` bytes. ``writeto_mem(addr, reg, data)``: one write of reg + data.
Errors surface as OSError (the IMU driver counts them).
"""
import fcntl
import os

I2C_SLAVE = 0x0703          # linux/i2c-dev.h


class LinuxI2cBus:
    def __init__(self, device="/dev/i2c-1"):
        self.device = device
        self._fd = os.open(device, os.O_RDWR)
        self._addr = None

    def _select(self, addr):
        if addr != self._addr:
            fcntl.ioctl(self._fd, I2C_SLAVE, addr)
            self._addr = addr

    def readfrom_mem(self, addr, reg, nbytes):
        self._select(addr)
        os.write(self._fd, bytes([reg]))
        return os.read(self._fd, nbytes)

    def writeto_mem(self, addr, reg, data):
        self._select(addr)
        os.write(self._fd, bytes([reg]) + bytes(data))

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
