/*
 * hw.cpp - motors, encoders, IMU and reset cause of the robot link firmware.
 */
#include <Arduino.h>
#include <Wire.h>
#include <avr/wdt.h>
#include "config.h"
#include "hw.h"

static const pinmap_t PM = BOARD_PINMAP;

#define PORT_REG(letter) _SFR_MEM8(PINMAP_PORT_ADDR(letter))
#define DDR_REG(letter) _SFR_MEM8(PINMAP_PORT_ADDR(letter) - 1)
#define PIN_REG(letter) _SFR_MEM8(PINMAP_PORT_ADDR(letter) - 2)

/* ------------------------------------------------------------------ reset cause */
uint8_t hw_reset_flags __attribute__((section(".noinit")));

/* Runs before main() and before the C runtime clears .bss: keep MCUSR, then clear it and
 * switch the watchdog off (after a watchdog reset it stays on at the shortest period). */
void hw_capture_reset_flags(void) __attribute__((naked, used, section(".init3")));
void hw_capture_reset_flags(void)
{
    hw_reset_flags = MCUSR;
    MCUSR = 0;
    wdt_disable();
}

uint8_t hw_board_id(void) { return (uint8_t)PM.board_id; }

/* ------------------------------------------------------------------ motors */
static void pin_output(char port, int bit)
{
    DDR_REG(port) |= (uint8_t)(1 << bit);
    PORT_REG(port) &= (uint8_t)~(1 << bit);
}

void motors_init(void)
{
    pin_output(PM.left_dir_port, PM.left_dir_bit);
    pin_output(PM.right_dir_port, PM.right_dir_bit);
    /* OC1A is PB1 on the 328P and PB5 on the 32U4; OC1B is PB2 / PB6. */
#if defined(__AVR_ATmega32U4__)
    DDRB |= _BV(PB5) | _BV(PB6);
#else
    DDRB |= _BV(PB1) | _BV(PB2);
#endif
    /* Fast PWM, TOP = ICR1 (mode 14), no prescaler: 16 MHz / 800 = 20 kHz. A duty of d/400
     * is OCR = 2 d. */
    TCCR1A = _BV(COM1A1) | _BV(COM1B1) | _BV(WGM11);
    TCCR1B = _BV(WGM13) | _BV(WGM12) | _BV(CS10);
    ICR1 = PINMAP_ICR1_VALUE;
    OCR1A = 0;
    OCR1B = 0;
}

static void set_dir(char port, int bit, uint8_t reverse)
{
    if (reverse)
        PORT_REG(port) |= (uint8_t)(1 << bit);
    else
        PORT_REG(port) &= (uint8_t)~(1 << bit);
}

static void set_ocr(char unit, uint16_t value)
{
    if (unit == 'A')
        OCR1A = value;
    else
        OCR1B = value;
}

void motors_set(int16_t left, int16_t right)
{
    uint8_t left_rev = left < 0, right_rev = right < 0;
    uint16_t left_mag = (uint16_t)(left_rev ? -left : left);
    uint16_t right_mag = (uint16_t)(right_rev ? -right : right);
    if (left_mag > PINMAP_PWM_TOP)
        left_mag = PINMAP_PWM_TOP;
    if (right_mag > PINMAP_PWM_TOP)
        right_mag = PINMAP_PWM_TOP;
    set_dir(PM.left_dir_port, PM.left_dir_bit, left_rev);
    set_dir(PM.right_dir_port, PM.right_dir_bit, right_rev);
    set_ocr(PM.left_pwm_ocr, (uint16_t)(left_mag * PINMAP_OCR_PER_DUTY));
    set_ocr(PM.right_pwm_ocr, (uint16_t)(right_mag * PINMAP_OCR_PER_DUTY));
}

/* ------------------------------------------------------------------ encoders */
typedef struct enc_state_t {
    int32_t count;
    uint8_t last_a, last_b;
    uint8_t errors;
} enc_state_t;

static volatile enc_state_t enc_left, enc_right;

/* One interrupt of the XOR-ed pin: recover A = (A ^ B) ^ B (thesis 4.3.1), then the
 * quadrature step: +1 when the new A differs from the old B, -1 when the old A differs
 * from the new B (forward sequence AB: 00 -> 10 -> 11 -> 01). */
static inline void enc_step(volatile enc_state_t *e, uint8_t xor_level, uint8_t b)
{
    uint8_t a = xor_level ^ b;
    e->count += (int8_t)(a ^ e->last_b) - (int8_t)(e->last_a ^ b);
    if ((a ^ e->last_a) & (b ^ e->last_b))
        e->errors++;
    e->last_a = a;
    e->last_b = b;
}

static inline uint8_t pin_level(char port, int bit)
{
    return (uint8_t)((PIN_REG(port) >> bit) & 1);
}

static void enc_left_isr(void)
{
    enc_step(&enc_left, pin_level(PM.left_xor_port, PM.left_xor_bit),
             pin_level(PM.left_b_port, PM.left_b_bit));
}

static void enc_right_isr(void)
{
    enc_step(&enc_right, pin_level(PM.right_xor_port, PM.right_xor_bit),
             pin_level(PM.right_b_port, PM.right_b_bit));
}

#if defined(__AVR_ATmega32U4__)
ISR(PCINT0_vect) { enc_left_isr(); }   /* PB4 = PCINT4 */
ISR(INT6_vect) { enc_right_isr(); }    /* PE6 */
#else
ISR(INT0_vect) { enc_left_isr(); }     /* PD2 */
ISR(INT1_vect) { enc_right_isr(); }    /* PD3 */
#endif

static void enc_init_one(volatile enc_state_t *e, char xport, int xbit, char bport, int bbit)
{
    DDR_REG(xport) &= (uint8_t)~(1 << xbit);
    DDR_REG(bport) &= (uint8_t)~(1 << bbit);
    uint8_t b = pin_level(bport, bbit);
    e->last_b = b;
    e->last_a = pin_level(xport, xbit) ^ b;
    e->count = 0;
    e->errors = 0;
}

void encoders_init(void)
{
    enc_init_one(&enc_left, PM.left_xor_port, PM.left_xor_bit, PM.left_b_port, PM.left_b_bit);
    enc_init_one(&enc_right, PM.right_xor_port, PM.right_xor_bit, PM.right_b_port, PM.right_b_bit);
#if defined(__AVR_ATmega32U4__)
    PCMSK0 |= _BV(PCINT4);
    PCIFR = _BV(PCIF0);
    PCICR |= _BV(PCIE0);
    EICRB = (EICRB & ~(_BV(ISC61) | _BV(ISC60))) | _BV(ISC60);   /* INT6 on any edge */
    EIFR = _BV(INTF6);
    EIMSK |= _BV(INT6);
#else
    EICRA = (EICRA & ~0x0F) | _BV(ISC00) | _BV(ISC10);            /* INT0/INT1 on any edge */
    EIFR = _BV(INTF0) | _BV(INTF1);
    EIMSK |= _BV(INT0) | _BV(INT1);
#endif
}

void encoders_read(int32_t *left, int32_t *right)
{
    uint8_t sreg = SREG;
    cli();
    *left = enc_left.count;
    *right = enc_right.count;
    SREG = sreg;
}

void encoders_take_errors(uint8_t *left, uint8_t *right)
{
    uint8_t sreg = SREG;
    cli();
    *left = enc_left.errors;
    *right = enc_right.errors;
    enc_left.errors = 0;
    enc_right.errors = 0;
    SREG = sreg;
}

/* ------------------------------------------------------------------ IMU (MPU-6050) */
enum {
    MPU_SMPLRT_DIV = 0x19,
    MPU_CONFIG = 0x1A,
    MPU_GYRO_CONFIG = 0x1B,
    MPU_ACCEL_CONFIG = 0x1C,
    MPU_ACCEL_XOUT_H = 0x3B,
    MPU_PWR_MGMT_1 = 0x6B,
    MPU_WHO_AM_I = 0x75,
};

static uint8_t imu_write(uint8_t reg, uint8_t value)
{
    Wire.beginTransmission(IMU_I2C_ADDR);
    Wire.write(reg);
    Wire.write(value);
    return Wire.endTransmission() == 0;
}

static uint8_t imu_read_regs(uint8_t reg, uint8_t *out, uint8_t n)
{
    Wire.beginTransmission(IMU_I2C_ADDR);
    Wire.write(reg);
    if (Wire.endTransmission(false) != 0)
        return 0;
    if (Wire.requestFrom((uint8_t)IMU_I2C_ADDR, n) != n)
        return 0;
    for (uint8_t i = 0; i < n; i++)
        out[i] = (uint8_t)Wire.read();
    return 1;
}

uint8_t imu_init(void)
{
    Wire.begin();
    Wire.setClock(400000);
    Wire.setWireTimeout(IMU_I2C_TIMEOUT_US, true);
    uint8_t who = 0;
    if (!imu_read_regs(MPU_WHO_AM_I, &who, 1))
        return 0;
    imu_write(MPU_PWR_MGMT_1, 0x01);     /* wake up, clock from the X gyro PLL */
    imu_write(MPU_SMPLRT_DIV, 0x00);     /* 1 kHz sample rate with the DLPF on */
    imu_write(MPU_CONFIG, 0x03);         /* DLPF 44 Hz */
    imu_write(MPU_GYRO_CONFIG, 0x08);    /* +-500 dps: 65.5 LSB/(deg/s) */
    imu_write(MPU_ACCEL_CONFIG, 0x08);   /* +-4 g: 8192 LSB/g */
    return who;
}

uint8_t imu_read(int16_t accel[3], int16_t gyro[3])
{
    uint8_t raw[14];   /* accel x/y/z, temperature, gyro x/y/z: big-endian int16 */
    if (!imu_read_regs(MPU_ACCEL_XOUT_H, raw, sizeof raw))
        return 0;
    for (uint8_t i = 0; i < 3; i++) {
        accel[i] = (int16_t)((raw[2 * i] << 8) | raw[2 * i + 1]);
        gyro[i] = (int16_t)((raw[8 + 2 * i] << 8) | raw[8 + 2 * i + 1]);
    }
    return 1;
}
