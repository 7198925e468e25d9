"""MPU-6050 IMU driver over I2C, written against a bus object (micropython-lib style).

The bus has ``readfrom_mem(addr, reg, nbytes) -> bytes`` and
``writeto_mem(addr, reg, data)`` (the ``machine.I2C`` API): on the Pi that is
:class:`boards.rpi.i2c_linux.LinuxI2cBus` (``/dev/i2c-1``), in the harness
``harness.sim.i2c.SimI2cBus`` with a register-level simulated MPU-6050.

Register map and scales from the InvenSense MPU-6000/6050 register map (rev 4.2):
WHO_AM_I 0x75 = 0x68, PWR_MGMT_1 0x6B, SMPLRT_DIV 0x19, CONFIG 0x1A (DLPF),
GYRO_CONFIG 0x1B / ACCEL_CONFIG 0x1C (full-scale select in bits 4:3),
ACCEL_XOUT_H 0x3B: 14 big-endian int16 bytes ax, ay, az, temp, gx, gy, gz.
Accelerometer LSB/g = 16384 / 2^AFS_SEL; gyro LSB/(deg/s) = 131 / 2^FS_SEL;
temperature degC = raw / 340 + 36.53.

Output: ``ImuSample(time_us, dt_us, dvel_body_mps, dang_body_rad)`` in body FRD:
the accelerometer's specific force and the gyro rate held over the interval since
the previous read (dvel = f * dt, dang = w * dt; q_v, q_t of ag2u eqs. 2a-2b).
``mount`` maps sensor axes to FRD; the default is a board lying flat with the chip's
x forward, y left, z up: FRD = (x, -y, -z). A level IMU at rest reads dvel_z = -g dt.
"""
import math
import struct

from onboard.core.samples import ImuSample
from onboard.core.units import G_MPS2

REG_SMPLRT_DIV = 0x19
REG_CONFIG = 0x1A
REG_GYRO_CONFIG = 0x1B
REG_ACCEL_CONFIG = 0x1C
REG_ACCEL_XOUT_H = 0x3B
REG_PWR_MGMT_1 = 0x6B
REG_WHO_AM_I = 0x75
WHO_AM_I_VALUES = (0x68, 0x72)          # MPU-6050 and a common clone
DATA_BYTES = 14

ACCEL_RANGES_G = (2, 4, 8, 16)
GYRO_RANGES_DPS = (250, 500, 1000, 2000)
ACCEL_LSB_PER_G_2G = 16384.0
GYRO_LSB_PER_DPS_250 = 131.0
INTERNAL_RATE_HZ = 1000                 # sample clock with the DLPF enabled
DLPF_CFGS = (1, 2, 3, 4, 5, 6)          # CONFIG DLPF_CFG values that enable the DLPF (1 kHz sample clock)
# settings rule (onboard.core.settings) of the output rate: the sample clock divided by a whole number
RATE_HZ_RULE = ("a divisor of %d Hz (the MPU-6050's sample clock)" % INTERNAL_RATE_HZ,
                lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0 and INTERNAL_RATE_HZ % v == 0)

AXES = {"x": 0, "y": 1, "z": 2}


class ImuError(IOError):
    """The IMU is missing, answered with the wrong identity, or the bus failed."""


def _parse_mount(mount):
    out = []
    for spec in mount:
        if not isinstance(spec, str) or spec.lstrip("+-") not in AXES or len(spec) > 2:
            raise ValueError("bad mount axis %r (use x, -y, ...)" % (spec,))
        sign = -1.0 if spec.startswith("-") else 1.0
        axis = spec[-1]
        out.append((AXES[axis], sign))
    if sorted(a for a, _s in out) != [0, 1, 2]:
        raise ValueError("mount %r must use each sensor axis once" % (mount,))
    return out


class Mpu6050:
    def __init__(self, bus, address=0x68, rate_hz=100, accel_range_g=4, gyro_range_dps=500,
                 dlpf_cfg=3, mount=("x", "-y", "-z")):
        if accel_range_g not in ACCEL_RANGES_G:
            raise ValueError("accel range must be one of %s g" % (ACCEL_RANGES_G,))
        if gyro_range_dps not in GYRO_RANGES_DPS:
            raise ValueError("gyro range must be one of %s deg/s" % (GYRO_RANGES_DPS,))
        if not RATE_HZ_RULE[1](rate_hz):
            raise ValueError("rate must be %s, got %r" % (RATE_HZ_RULE[0], rate_hz))
        if type(dlpf_cfg) is not int or dlpf_cfg not in DLPF_CFGS:
            # DLPF_CFG 0 and 7 switch the sample clock to 8 kHz: SMPLRT_DIV would give 8 times the rate
            raise ValueError("dlpf_cfg must be one of %s (the DLPF on, a %d Hz sample clock), got %r"
                             % (DLPF_CFGS, INTERNAL_RATE_HZ, dlpf_cfg))
        self.bus = bus
        self.address = address
        self.rate_hz = rate_hz
        self.afs_sel = ACCEL_RANGES_G.index(accel_range_g)
        self.fs_sel = GYRO_RANGES_DPS.index(gyro_range_dps)
        self.dlpf_cfg = dlpf_cfg
        self.mount = _parse_mount(mount)
        self.mps2_per_lsb = G_MPS2 / (ACCEL_LSB_PER_G_2G / (1 << self.afs_sel))
        self.radps_per_lsb = math.radians(1.0) / (GYRO_LSB_PER_DPS_250 / (1 << self.fs_sel))
        self.period_us = 1000000 // rate_hz
        self._last_us = None
        self.reads = 0
        self.read_errors = 0
        self.temperature_degc = None
        self.initialized = False

    def init(self):
        """Check identity, wake up, set rate, DLPF and ranges. Raises ImuError."""
        try:
            who = self.bus.readfrom_mem(self.address, REG_WHO_AM_I, 1)[0]
        except OSError as exc:
            raise ImuError("no MPU-6050 at 0x%02x: %s" % (self.address, exc))
        if who not in WHO_AM_I_VALUES:
            raise ImuError("device at 0x%02x is not an MPU-6050 (WHO_AM_I=0x%02x)" % (self.address, who))
        try:
            self.bus.writeto_mem(self.address, REG_PWR_MGMT_1, bytes([0x01]))   # wake, PLL on gyro X
            self.bus.writeto_mem(self.address, REG_SMPLRT_DIV,
                                 bytes([INTERNAL_RATE_HZ // self.rate_hz - 1]))
            self.bus.writeto_mem(self.address, REG_CONFIG, bytes([self.dlpf_cfg & 0x07]))
            self.bus.writeto_mem(self.address, REG_GYRO_CONFIG, bytes([self.fs_sel << 3]))
            self.bus.writeto_mem(self.address, REG_ACCEL_CONFIG, bytes([self.afs_sel << 3]))
        except OSError as exc:
            raise ImuError("MPU-6050 configuration failed: %s" % exc)
        self.initialized = True

    def _to_body(self, v):
        return [sign * v[axis] for axis, sign in self.mount]

    def read_rates(self):
        """(specific force body FRD m/s^2, angular rate body FRD rad/s); raises OSError."""
        raw = self.bus.readfrom_mem(self.address, REG_ACCEL_XOUT_H, DATA_BYTES)
        if len(raw) != DATA_BYTES:
            raise OSError("short MPU-6050 read: %d bytes" % len(raw))
        ax, ay, az, t, gx, gy, gz = struct.unpack(">hhhhhhh", bytes(raw))
        self.temperature_degc = t / 340.0 + 36.53
        f = self._to_body([ax * self.mps2_per_lsb, ay * self.mps2_per_lsb, az * self.mps2_per_lsb])
        w = self._to_body([gx * self.radps_per_lsb, gy * self.radps_per_lsb, gz * self.radps_per_lsb])
        return f, w

    def read(self, now_us):
        """ImuSample for the interval since the previous read, or None on a bus error (counted)."""
        try:
            f, w = self.read_rates()
        except OSError:
            self.read_errors += 1
            return None
        dt_us = self.period_us if self._last_us is None else now_us - self._last_us
        self._last_us = now_us
        if dt_us <= 0:
            self.read_errors += 1
            return None
        dt = dt_us * 1e-6
        self.reads += 1
        return ImuSample(now_us, dt_us, [v * dt for v in f], [v * dt for v in w])
