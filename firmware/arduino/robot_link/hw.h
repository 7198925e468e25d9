/*
 * hw.h - the board's hardware: motors (Timer1 PWM + direction pins), quadrature encoders
 * with XOR-ed channels (thesis 4.3.1), the I2C IMU, and the reset cause.
 */
#ifndef ROBOT_LINK_HW_H
#define ROBOT_LINK_HW_H

#include <stdint.h>
#include "pinmap.h"

#if defined(__AVR_ATmega32U4__)
#define BOARD_PINMAP PINMAP_32U4
#elif defined(__AVR_ATmega328P__)
#define BOARD_PINMAP PINMAP_UNO
#else
#error "robot_link supports the ATmega328P (Uno) and the ATmega32U4 (Leonardo / A-Star 32U4)"
#endif

/* MCUSR at reset (PORF 0x01, EXTRF 0x02, BORF 0x04, WDRF 0x08), captured in .init3. */
extern uint8_t hw_reset_flags;
#define RESET_FLAG_WATCHDOG 0x08

uint8_t hw_board_id(void);

/* Motors: duty in 1/PINMAP_PWM_TOP of full PWM, sign = direction. */
void motors_init(void);
void motors_set(int16_t left, int16_t right);

/* Encoders: counts since boot (forward positive) and decoding errors
 * (both channels changed between two interrupts: an edge was missed). */
void encoders_init(void);
void encoders_read(int32_t *left, int32_t *right);
void encoders_take_errors(uint8_t *left, uint8_t *right);

/* IMU (MPU-6050): returns 1 on success. Raw values in the chip's axes. */
uint8_t imu_init(void);                 /* returns WHO_AM_I (0 when no answer) */
uint8_t imu_read(int16_t accel[3], int16_t gyro[3]);

#ifdef ROBOT_LINK_IMU_ALTIMU10
/* AltIMU-10 v4 (altimu.cpp): WHO_AM_I handshake of the LSM303D, L3GD20H and LPS25H, then their set-up.
 * whoami[i] is what device i answered (0: no answer); returns the mask of devices that matched (bits 0-2). */
#define ALTIMU_DEVICES 3
#define ALTIMU_ALL_OK 0x07
uint8_t altimu_init(uint8_t whoami[ALTIMU_DEVICES]);
/* Accelerometer and gyro (chip axes, raw LSBs); returns 1 on success. */
uint8_t altimu_read(int16_t accel[3], int16_t gyro[3]);
/* Magnetometer (raw LSBs) and pressure (raw 24-bit, 4096 LSB/hPa); returns 1 on success. */
uint8_t altimu_read_slow(int16_t mag[3], int32_t *pressure_raw);
#endif

#endif
