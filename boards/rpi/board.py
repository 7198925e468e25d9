"""Raspberry Pi ground robot: ports, rates and physical constants (units in the names).

The defaults describe the reference build: a Raspberry Pi 4 on a skid-steer base with
two VESCs (left on the Pi's UART, right behind it on the VESC CAN bus), 14-pole
(7 pole-pair) outrunners through a 10:1 reduction to 0.05 m wheels/sprockets, and an
MPU-6050 IMU on I2C bus 1. Every value can be overridden from the service's config.
"""
import math

# ---------------------------------------------------------------- ports
VESC_UART_PORT = "/dev/serial0"          # Pi UART (GPIO14/15) to the left VESC's COMM port
VESC_UART_BAUD = 115200                  # VESC Tool "UART" app default baud rate
I2C_BUS_DEVICE = "/dev/i2c-1"            # Pi header pins 3/5
MPU6050_I2C_ADDR = 0x68                  # AD0 low
POSE_UDP_PORT = 9870                     # external pose source (mocap / UWB / GNSS bridge)

# ---------------------------------------------------------------- VESC ids (app config "controller_id")
VESC_LEFT_CONTROLLER_ID = 1              # the VESC wired to the UART
VESC_RIGHT_CAN_ID = 2                    # reached through COMM_FORWARD_CAN

# ---------------------------------------------------------------- rates
IMU_RATE_HZ = 100
AIDING_RATE_HZ = 10
CONTROL_RATE_HZ = 50
TELEMETRY_RATE_HZ = 50                   # GetValues polling per VESC
KEEPALIVE_PERIOD_US = 100000             # COMM_ALIVE when no other command went out for this long
VESC_FW_TIMEOUT_US = 1000000             # VESC app config timeout_msec default (firmware side)
TELEMETRY_TIMEOUT_US = 300000            # no GetValues reply for this long -> motor fault
COMMAND_MAX_AGE_US = 250000              # driver stops motors when the runtime's last command is older

# ---------------------------------------------------------------- drivetrain
WHEEL_RADIUS_M = 0.05
WHEELBASE_M = 0.30
MOTOR_POLE_PAIRS = 7
GEAR_RATIO = 10.0                        # motor revolutions per wheel revolution
MAX_WHEEL_RADPS = 25.0
STOP_BRAKE_CURRENT_A = 5.0               # SetCurrentBrake used for a safe stop
MOTOR_CURRENT_LIMIT_A = 20.0             # VESC mcconf l_current_max (informative; set in VESC Tool)
LEFT_DIRECTION = 1                       # +1: positive eRPM drives the wheel forward
RIGHT_DIRECTION = -1                     # mirrored motor on the right side


def erpm_per_radps(gear_ratio=GEAR_RATIO, pole_pairs=MOTOR_POLE_PAIRS):
    """Electrical RPM per wheel rad/s: erpm = w_wheel * gear * pole_pairs * 60 / (2 pi)."""
    return gear_ratio * pole_pairs * 60.0 / (2.0 * math.pi)


ERPM_PER_RADPS = erpm_per_radps()        # ~668.45 erpm per rad/s with the defaults
