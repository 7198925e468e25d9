"""Board drivers in the micropython-lib style: the bus/pin objects are passed in,
buffers are allocated once, register addresses are const().

- DiffDrivePwm: two DC motors through PWM + direction pins (H-bridge such as a
  DRV8833/TB6612), driven by the runtime's ``motors`` interface
  (``command(WheelCmd)``, ``stop(now_us)``).
- Lsm6dsox: ST LSM6DSOX IMU on I2C (the IMU of the Arduino Nano RP2040 Connect),
  accelerometer (m/s^2) and gyro (rad/s) converted to SI at this boundary and
  remapped to the body FRD frame by the board's axis table.
"""
from micropython import const

_WHO_AM_I = const(0x0F)
_CTRL1_XL = const(0x10)
_CTRL2_G = const(0x11)
_OUTX_L_G = const(0x22)          # gyro x,y,z then accel x,y,z: 12 bytes
_LSM6DSOX_ID = const(0x6C)
_ODR_104HZ_4G = const(0x48)      # CTRL1_XL: 104 Hz, +-4 g
_ODR_104HZ_500DPS = const(0x44)  # CTRL2_G: 104 Hz, 500 dps
_ACCEL_MPS2_PER_LSB = 0.122e-3 * 9.80665      # 4 g full scale: 0.122 mg/LSB
_GYRO_RADPS_PER_LSB = 17.5e-3 * 0.017453292519943295   # 500 dps: 17.5 mdps/LSB
_DUTY_FULL = const(65535)


class ImuNotFound(OSError):
    pass


class Lsm6dsox:
    def __init__(self, i2c, addr=0x6A, axes_frd=((0, 1), (1, -1), (2, -1))):
        """axes_frd: for body F, R, D: (sensor axis index, sign)."""
        self.i2c = i2c
        self.addr = addr
        self.axes_frd = axes_frd
        self._buf1 = bytearray(1)
        self._buf12 = bytearray(12)
        self.accel_frd_mps2 = [0.0, 0.0, 0.0]
        self.gyro_frd_radps = [0.0, 0.0, 0.0]
        try:
            self.i2c.readfrom_mem_into(addr, _WHO_AM_I, self._buf1)
        except OSError:
            raise ImuNotFound("no IMU answering at I2C address 0x%02x" % addr)
        if self._buf1[0] != _LSM6DSOX_ID:
            raise ImuNotFound("device at 0x%02x is not an LSM6DSOX (WHO_AM_I=0x%02x)" % (addr, self._buf1[0]))
        self._write(_CTRL1_XL, _ODR_104HZ_4G)
        self._write(_CTRL2_G, _ODR_104HZ_500DPS)

    def _write(self, reg, value):
        self._buf1[0] = value
        self.i2c.writeto_mem(self.addr, reg, self._buf1)

    def read(self):
        """Read one gyro+accel sample into accel_frd_mps2 / gyro_frd_radps (no allocation)."""
        b = self._buf12
        self.i2c.readfrom_mem_into(self.addr, _OUTX_L_G, b)
        for i in range(3):
            axis, sign = self.axes_frd[i]
            g = b[2 * axis] | (b[2 * axis + 1] << 8)
            a = b[6 + 2 * axis] | (b[6 + 2 * axis + 1] << 8)
            if g & 0x8000:
                g -= 0x10000
            if a & 0x8000:
                a -= 0x10000
            self.gyro_frd_radps[i] = sign * g * _GYRO_RADPS_PER_LSB
            self.accel_frd_mps2[i] = sign * a * _ACCEL_MPS2_PER_LSB


class DiffDrivePwm:
    """Wheel speed commands (rad/s) -> PWM duty and direction (open loop, duty ~ speed).

    A command that is not finite (NaN, inf) is refused, counted in ``rejected_commands``, and both motors
    are stopped instead; no pin is touched before the whole command has been checked."""

    def __init__(self, pwm_left, pwm_right, dir_left, dir_right, max_wheel_radps):
        self.pwm_left = pwm_left
        self.pwm_right = pwm_right
        self.dir_left = dir_left
        self.dir_right = dir_right
        self.max_wheel_radps = max_wheel_radps
        self.commands = 0
        self.stops = 0
        self.rejected_commands = 0

    def _set(self, pwm, pin, radps):
        frac = abs(radps) / self.max_wheel_radps
        if frac > 1.0:
            frac = 1.0
        pin.value(1 if radps >= 0 else 0)
        pwm.duty_u16(int(frac * _DUTY_FULL))

    def command(self, wheel_cmd):
        left = wheel_cmd.left_radps
        right = wheel_cmd.right_radps
        if not (left - left == 0.0 and right - right == 0.0):     # NaN or inf
            self.rejected_commands += 1
            self.stop(wheel_cmd.time_us)
            return
        self._set(self.pwm_left, self.dir_left, wheel_cmd.left_radps)
        self._set(self.pwm_right, self.dir_right, wheel_cmd.right_radps)
        self.commands += 1

    def stop(self, now_us):
        self.pwm_left.duty_u16(0)
        self.pwm_right.duty_u16(0)
        self.stops += 1
