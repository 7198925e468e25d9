/*
 * config.h - compile-time constants of the robot link firmware (units in the names).
 * The host side keeps the same numbers in boards/arduino/constants.py.
 */
#ifndef ROBOT_LINK_CONFIG_H
#define ROBOT_LINK_CONFIG_H

/* Leveler build (make leveler, -DROBOT_LINK_LEVELER): the thesis's robot (4.3): AltIMU-10 v4 sensor set,
 * Dagu Rover 5 profile, and the host link on an XBee-class radio at 9600 baud carrying the algorithm-state
 * message LEVEL_STATE instead of the 100 Hz TELEMETRY. */
#ifdef ROBOT_LINK_LEVELER
#define ROBOT_LINK_IMU_ALTIMU10 1
#define LINK_BAUD 9600UL
/* LEVEL_STATE every LEVEL_STATE_DECIMATION ticks: 35 bytes on the wire each (8N1: 10 bits a byte) ->
 * 20 Hz x 35 B = 700 B/s of the 960 B/s a 9600-baud link carries (budget in link_protocol.h). */
#define LEVEL_STATE_DECIMATION 5
/* Complementary tilt filter: weight of the gyro-propagated angle per 10 ms tick (time constant 0.5 s). */
#define TILT_GYRO_WEIGHT 0.98f
#else
#define LINK_BAUD 115200UL
#endif

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

#ifdef ROBOT_LINK_LEVELER
/* Dagu Rover 5 profile (thesis 4.3.1, Table 4.1): 333.33 counts per wheel revolution (above), gearbox
 * 86.8:1, top speed 0.25 m/s. The sprocket radius is not in the thesis: ROVER5_SPROCKET_RADIUS_MM is an
 * assumption (the host keeps it in boards/arduino/board.py ROVER5). Limit 0.25 m/s / 0.030 m = 8333 mrad/s;
 * no-load wheel speed 0.28 m/s (the chassis's 1 km/h rating) / 0.030 m = 9300 mrad/s. */
#define ROVER5_GEAR_RATIO_X10 868
#define ROVER5_SPROCKET_RADIUS_MM 30
#define MAX_WHEEL_MRADPS 8333L
#define MOTOR_NO_LOAD_MRADPS 9300L
#else
/* Wheel speed limit accepted from the host (mrad/s); larger commands are clamped and flagged. */
#define MAX_WHEEL_MRADPS 25000L
/* Duty commands are in 1/PWM_TOP of full PWM, +-PWM_TOP. */
/* Feed-forward: wheel speed (mrad/s) the motor reaches at full duty with no load. */
#define MOTOR_NO_LOAD_MRADPS 25000L
#endif
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

/* AltIMU-10 v4 (leveler build), 7-bit I2C addresses and WHO_AM_I values (datasheets; the thesis names the
 * board only): LSM303D accel/mag 0x1D -> 0x49, L3GD20H gyro 0x6B -> 0xD7, LPS25H barometer 0x5D -> 0xBD.
 * Ranges set at boot: accel +-4 g (0.122 mg/LSB), gyro +-500 dps (17.5 mdps/LSB), mag +-4 gauss. */
#define ALTIMU_LSM303D_ADDR 0x1D
#define ALTIMU_LSM303D_WHOAMI 0x49
#define ALTIMU_L3GD20H_ADDR 0x6B
#define ALTIMU_L3GD20H_WHOAMI 0xD7
#define ALTIMU_LPS25H_ADDR 0x5D
#define ALTIMU_LPS25H_WHOAMI 0xBD

/* Hardware watchdog: the main loop must run at least this often (it runs every <= 1 ms). */
#define WDT_TIMEOUT WDTO_120MS

#endif
