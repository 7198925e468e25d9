"""Constants of the AVR robot board (firmware/arduino/robot_link/config.h, pinmap.h), in SI.

The firmware works in raw units (encoder counts, IMU LSBs, duty in 1/400, mrad/s); the
driver converts at this boundary and nowhere else (CONVENTIONS.md).
"""
import math

from onboard.core.units import G_MPS2

# Boards: build name -> MCU (simavr -m), board id in HELLO/STATUS, UART of the host link.
BOARDS = {
    "uno": {"mcu": "atmega328p", "board_id": 1, "uart": 0, "serial": "Serial"},
    "leonardo": {"mcu": "atmega32u4", "board_id": 2, "uart": 1, "serial": "Serial1"},
}
BOARD_NAMES = {v["board_id"]: k for k, v in BOARDS.items()}

LINK_BAUD = 115200
LINK_TIMEOUT_US = 250000          # firmware failsafe: motors off without a valid command
TELEMETRY_PERIOD_US = 10000       # IMU read + telemetry + wheel speed loop at 100 Hz

# Encoders: Dagu Rover 5, 1000 counts per 3 wheel revolutions (thesis 4.3.1).
ENC_TICKS_PER_REV = 1000.0 / 3.0
ENC_RAD_PER_TICK = 2.0 * math.pi / ENC_TICKS_PER_REV

# Wheel speed commands: mrad/s on the wire; the firmware clamps to +-MAX_WHEEL_RADPS.
WHEEL_CMD_MRADPS_PER_RADPS = 1000.0
MAX_WHEEL_RADPS = 25.0
MOTOR_NO_LOAD_RADPS = 25.0        # firmware feed-forward: speed at full duty
PWM_TOP = 400                     # duty units: +-400 = full PWM

# IMU: MPU-6050 configured by the firmware for +-4 g and +-500 deg/s.
IMU_I2C_ADDR = 0x68
IMU_WHOAMI = 0x68
ACCEL_LSB_PER_G = 8192.0
GYRO_LSB_PER_DPS = 65.5
ACCEL_MPS2_PER_LSB = G_MPS2 / ACCEL_LSB_PER_G
GYRO_RADPS_PER_LSB = math.radians(1.0 / GYRO_LSB_PER_DPS)
IMU_GYRO_CONFIG = 0x08
IMU_ACCEL_CONFIG = 0x08
# Mounting: chip x forward, y left, z up -> body FRD = (x, -y, -z) (a level chip at rest
# reads +1 g on z; the body frame's specific force at rest is -g on z).
CHIP_TO_BODY_SIGN = (1.0, -1.0, -1.0)

RESET_FLAG_POWER_ON = 0x01
RESET_FLAG_EXTERNAL = 0x02
RESET_FLAG_BROWN_OUT = 0x04
RESET_FLAG_WATCHDOG = 0x08


def accel_raw_to_body_mps2(raw):
    """MPU-6050 accelerometer LSBs (chip axes) -> specific force in body FRD (m/s^2)."""
    return tuple(CHIP_TO_BODY_SIGN[i] * raw[i] * ACCEL_MPS2_PER_LSB for i in range(3))


def gyro_raw_to_body_radps(raw):
    """MPU-6050 gyro LSBs (chip axes) -> angular rate in body FRD (rad/s)."""
    return tuple(CHIP_TO_BODY_SIGN[i] * raw[i] * GYRO_RADPS_PER_LSB for i in range(3))


# ---------------------------------------------------------------- leveler build (firmware/arduino `make leveler`)
# The thesis's robot (4.3, Table 4.1): the 32U4 board (same pins as "leonardo") with the AltIMU-10 v4, the Dagu
# Rover 5 profile and a 9600-baud XBee-class link carrying LEVEL_STATE (protocol.py) instead of TELEMETRY.
LEVELER_BUILD = "leveler"
LEVELER_MCU = "atmega32u4"
LEVELER_BOARD_ID = 2
LEVELER_LINK_BAUD = 9600
# Dagu Rover 5: 1000 counts per 3 wheel revolutions (ENC_TICKS_PER_REV above), gearbox 86.8:1, 0.25 m/s.
# The sprocket radius is not in the thesis: an assumption, the same as ROVER5_SPROCKET_RADIUS_MM in config.h.
ROVER5 = {
    "gear_ratio": 86.8,
    "max_speed_mps": 0.25,
    "sprocket_radius_m": 0.030,
    "track_gauge_m": 0.19,            # track centre to track centre (assumption)
    "max_wheel_radps": 8.333,         # config.h MAX_WHEEL_MRADPS: 0.25 m/s / 0.030 m
    "motor_no_load_radps": 9.3,       # config.h MOTOR_NO_LOAD_MRADPS: 0.28 m/s (1 km/h) / 0.030 m
}
# AltIMU-10 v4 (7-bit addresses, WHO_AM_I values) and the ranges the leveler firmware sets.
ALTIMU = {"lsm303d": (0x1D, 0x49), "l3gd20h": (0x6B, 0xD7), "lps25h": (0x5D, 0xBD)}
ALTIMU_DEVICES = ("lsm303d", "l3gd20h", "lps25h")      # bit order of IMU_ID's ok_mask
ALTIMU_ALL_OK = 0x07
ALTIMU_ACCEL_MPS2_PER_LSB = 0.122e-3 * G_MPS2            # LSM303D at +-4 g (CTRL2 = 0x08)
ALTIMU_GYRO_RADPS_PER_LSB = math.radians(17.5e-3)       # L3GD20H at +-500 dps (CTRL4 = 0x10)
ALTIMU_MAG_GAUSS_PER_LSB = 0.160e-3                     # LSM303D at +-4 gauss (CTRL6 = 0x20)
ALTIMU_PRESSURE_LSB_PER_HPA = 4096.0                    # LPS25H
ALTIMU_LSM303D_CTRL1 = 0x67
ALTIMU_LSM303D_CTRL2 = 0x08
ALTIMU_L3GD20H_CTRL1 = 0x6F
ALTIMU_L3GD20H_CTRL4 = 0x10
ALTIMU_LPS25H_CTRL1 = 0xB0
