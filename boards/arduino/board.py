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
