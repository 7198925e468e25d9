"""Simulated I2C bus with a register-level MPU-6050, for the board's real IMU driver.

``SimI2cBus`` has the ``machine.I2C`` memory API the drivers use; devices register
at an address; a missing address raises OSError (ENODEV/NACK), as on Linux.
``SimMpu6050`` keeps the chip's register file: configuration writes land in it, and
``set_motion(specific_force_body_mps2, rate_body_radps)`` sets the motion the chip is in; like the
chip, which samples continuously, the data registers hold that motion at the full scale configured
*now* (re-sampled on every register write: sensor axes = board x forward, y left, z up; big-endian
int16, saturating), with optional constant biases. Power-on state as the register map (rev 4.2) gives
it: every register 0 except WHO_AM_I and PWR_MGMT_1 = 0x40 (SLEEP); a sleeping chip does not sample,
so its data registers keep their last values (0 after power-on); DEVICE_RESET (PWR_MGMT_1 bit 7)
restores the power-on values and clears itself. WHO_AM_I and the data registers are read-only; a burst read
or write runs through the 128 registers and wraps from 0x7F to 0x00 (as the simavr bridge's MPU-6050);
a register address outside 0..255 raises ValueError.
``sim_mpu6050_bus(address)`` builds a bus with one chip at rest (desk runs of the Pi service).
"""
import errno
import math
import struct

from boards.rpi.imu_mpu6050 import RATE_HZ_RULE
from onboard.core.settings import NON_NEGATIVE
from onboard.core.units import G_MPS2

REG_WHO_AM_I = 0x75
REG_GYRO_CONFIG = 0x1B
REG_ACCEL_CONFIG = 0x1C
REG_ACCEL_XOUT_H = 0x3B
REG_PWR_MGMT_1 = 0x6B
PWR_MGMT_1_DEVICE_RESET = 0x80
REG_MASK = 0x7F                     # 128 registers; a burst's register pointer wraps from 0x7F to 0x00
DATA_REGS = 14                      # ACCEL_XOUT_H .. GYRO_ZOUT_L: accel x/y/z, temperature, gyro x/y/z (read-only)
PWR_MGMT_1_SLEEP = 0x40

# the settings block of a simulated MPU-6050 in a scenario: how often its data registers refresh (and the
# driver reads them) and its errors
MPU6050_DEFAULTS = {
    "rate_hz": 100,                 # data register refreshes per s (the sample clock divided by a whole number)
    "gyro_bias_sigma_dps": 0.3,     # 1-sigma of the chip's constant gyro bias, drawn once per run
    "gyro_noise_dps": 0.05,         # 1-sigma white noise per gyro reading
    "accel_noise_mps2": 0.02,       # 1-sigma white noise per accelerometer reading
}
MPU6050_SETTING_RANGES = {"rate_hz": RATE_HZ_RULE, "gyro_bias_sigma_dps": NON_NEGATIVE, "gyro_noise_dps": NON_NEGATIVE,
                          "accel_noise_mps2": NON_NEGATIVE}


class SimI2cBus:
    def __init__(self):
        self.devices = {}
        self.transfers = 0
        self.fail_next = 0                # inject bus errors (count of failing transfers)

    def attach(self, address, device):
        self.devices[address] = device
        return device

    def _dev(self, addr):
        self.transfers += 1
        if self.fail_next > 0:
            self.fail_next -= 1
            raise OSError(errno.EIO, "simulated I2C bus error")
        dev = self.devices.get(addr)
        if dev is None:
            raise OSError(errno.ENXIO, "no device at 0x%02x" % addr)
        return dev

    def readfrom_mem(self, addr, reg, nbytes):
        _check_reg(reg)
        if not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError("nbytes must be a whole number >= 0, got %r" % (nbytes,))
        return self._dev(addr).read(reg, nbytes)

    def writeto_mem(self, addr, reg, data):
        _check_reg(reg)
        self._dev(addr).write(reg, bytes(data))


def _check_reg(reg):
    """A register (memory) address is one byte: ValueError for anything else."""
    if isinstance(reg, bool) or not isinstance(reg, int) or not 0 <= reg <= 0xFF:
        raise ValueError("I2C register address must be 0..255, got %r" % (reg,))


class SimMpu6050:
    def __init__(self, who_am_i=0x68, temp_degc=25.0):
        self.who_am_i = who_am_i
        self.temp_degc = temp_degc
        self.accel_bias_mps2 = (0.0, 0.0, 0.0)
        self.gyro_bias_radps = (0.0, 0.0, 0.0)
        self._motion = ((0.0, 0.0, -G_MPS2), (0.0, 0.0, 0.0))
        self._power_on()

    def _power_on(self):
        """Power-on / DEVICE_RESET register values: all 0 but WHO_AM_I, and SLEEP set in PWR_MGMT_1."""
        self.regs = bytearray(128)
        self.regs[REG_WHO_AM_I] = self.who_am_i
        self.regs[REG_PWR_MGMT_1] = PWR_MGMT_1_SLEEP

    def read(self, reg, nbytes):
        """``nbytes`` registers from ``reg`` on (a burst: the register pointer wraps from 0x7F to 0x00)."""
        return bytes(self.regs[(reg + k) & REG_MASK] for k in range(nbytes))

    def write(self, reg, data):
        """A burst write from ``reg`` on (wrapping as ``read``); WHO_AM_I and the data registers are
        read-only and keep their values."""
        for k, b in enumerate(data):
            r = (reg + k) & REG_MASK
            if r == REG_PWR_MGMT_1 and b & PWR_MGMT_1_DEVICE_RESET:
                self._power_on()            # the reset bit clears itself once the registers are reset
                continue
            if r == REG_WHO_AM_I or REG_ACCEL_XOUT_H <= r < REG_ACCEL_XOUT_H + DATA_REGS:
                continue                    # read-only
            self.regs[r] = b
        self._sample()                      # a range change or a wake-up shows in the next sample

    @property
    def awake(self):
        return not (self.regs[REG_PWR_MGMT_1] & PWR_MGMT_1_SLEEP)

    def set_motion(self, specific_force_body_mps2, rate_body_radps):
        """Body-FRD specific force (m/s^2) and rate (rad/s) from now on; sampled into the data registers
        while the chip is awake."""
        self._motion = (tuple(specific_force_body_mps2), tuple(rate_body_radps))
        self._sample()

    def _sample(self):
        """Write the data registers from the current motion at the current full scales (awake only)."""
        if not self.awake:
            return
        afs = (self.regs[REG_ACCEL_CONFIG] >> 3) & 3
        fs = (self.regs[REG_GYRO_CONFIG] >> 3) & 3
        lsb_per_mps2 = 16384.0 / (1 << afs) / G_MPS2
        lsb_per_radps = 131.0 / (1 << fs) / math.radians(1.0)
        f, w = self._motion
        # body FRD -> sensor (x fwd, y left, z up): (x, -y, -z)
        f_s = (f[0] + self.accel_bias_mps2[0], -f[1] + self.accel_bias_mps2[1], -f[2] + self.accel_bias_mps2[2])
        w_s = (w[0] + self.gyro_bias_radps[0], -w[1] + self.gyro_bias_radps[1], -w[2] + self.gyro_bias_radps[2])

        def q(v, scale):
            return max(-32768, min(32767, int(round(v * scale))))

        temp_raw = q(self.temp_degc - 36.53, 340.0)
        data = struct.pack(">hhhhhhh", q(f_s[0], lsb_per_mps2), q(f_s[1], lsb_per_mps2),
                           q(f_s[2], lsb_per_mps2), temp_raw, q(w_s[0], lsb_per_radps),
                           q(w_s[1], lsb_per_radps), q(w_s[2], lsb_per_radps))
        self.regs[REG_ACCEL_XOUT_H:REG_ACCEL_XOUT_H + DATA_REGS] = data


def sim_mpu6050_bus(address=0x68):
    """A SimI2cBus with one SimMpu6050 (at rest) at ``address``: the bus factory the Pi service
    takes for ``imu.bus = "bench-sim"`` (see ``harness.sim.rpi_bench``)."""
    bus = SimI2cBus()
    bus.attach(address, SimMpu6050())
    return bus


class PlanarMotionSource:
    """Specific force and rate (body FRD) of a planar vehicle (north_m, east_m, yaw_rad,
    vel_ned_mps()), by finite differences between calls, for SimMpu6050.set_motion. The yaw change
    between two calls is taken in [-pi, pi] (a vehicle may keep its yaw wrapped)."""

    def __init__(self, vehicle):
        self.vehicle = vehicle
        self._last = None

    def sample(self, now_us):
        v = self.vehicle
        state = (now_us, v.yaw_rad, v.vel_ned_mps())
        last = self._last
        self._last = state
        if last is None or now_us <= last[0]:
            return (0.0, 0.0, -G_MPS2), (0.0, 0.0, 0.0)
        dt = (now_us - last[0]) * 1e-6
        dyaw = state[1] - last[1]
        if dyaw > math.pi:                  # across a +-pi wrap of the vehicle's yaw
            dyaw -= 2.0 * math.pi
        elif dyaw < -math.pi:
            dyaw += 2.0 * math.pi
        mid = last[1] + 0.5 * dyaw
        a_n = (state[2][0] - last[2][0]) / dt
        a_e = (state[2][1] - last[2][1]) / dt
        c, s = math.cos(mid), math.sin(mid)
        f_body = (c * a_n + s * a_e, -s * a_n + c * a_e, -G_MPS2)
        return f_body, (0.0, 0.0, dyaw / dt)
