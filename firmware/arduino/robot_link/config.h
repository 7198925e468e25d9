/*
 * config.h - compile-time constants of the robot link firmware (units in the names).
 * The host side keeps the same numbers in boards/arduino/constants.py.
 */
#ifndef ROBOT_LINK_CONFIG_H
#define ROBOT_LINK_CONFIG_H

#define LINK_BAUD 115200UL

/* Failsafe: motors off when no valid motor command arrived for this long. */
#define LINK_TIMEOUT_US 250000UL

/* Fixed-rate tasks: IMU read + telemetry, and the wheel speed loop, both at 100 Hz. */
#define TICK_PERIOD_US 10000UL

/* Encoders: Dagu Rover 5, 1000 counts per 3 wheel revolutions (thesis 4.3.1), i.e.
 * 333.33 counts/rev with all four edges of A and B counted. */
#define ENC_COUNTS_PER_3_REV 1000L
/* mrad/s -> counts/s:  counts/s = mrad/s * COUNTS_PER_3_REV / (3 * 2 pi * 1000)
 *                               = mrad/s * 1000 / MRAD_PER_3_REV  (6 pi * 1000 = 18849.6) */
#define MRAD_PER_3_REV 18850L

/* Wheel speed limit accepted from the host (mrad/s); larger commands are clamped and flagged. */
#define MAX_WHEEL_MRADPS 25000L
/* Duty commands are in 1/PWM_TOP of full PWM, +-PWM_TOP. */
/* Feed-forward: wheel speed (mrad/s) the motor reaches at full duty with no load. */
#define MOTOR_NO_LOAD_MRADPS 25000L
#define MOTOR_NO_LOAD_CPS (MOTOR_NO_LOAD_MRADPS * ENC_COUNTS_PER_3_REV / MRAD_PER_3_REV)
/* Integral gain on the wheel position error, in duty per count (as a ratio). */
#define KI_DUTY_PER_COUNT_NUM 3L
#define KI_DUTY_PER_COUNT_DEN 2L
/* Anti-windup: the position error is held within +-this many counts. */
#define MAX_POS_ERR_COUNTS 40L

/* IMU: InvenSense MPU-6050 on TWI at 400 kHz, +-4 g (8192 LSB/g), +-500 dps (65.5 LSB/dps). */
#define IMU_I2C_ADDR 0x68
#define IMU_WHOAMI_VALUE 0x68
#define IMU_I2C_TIMEOUT_US 3000UL

/* Hardware watchdog: the main loop must run at least this often (it runs every <= 1 ms). */
#define WDT_TIMEOUT WDTO_120MS

#endif
