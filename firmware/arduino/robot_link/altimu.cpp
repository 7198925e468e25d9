/*
 * altimu.cpp - Pololu AltIMU-10 v4 on TWI (leveler build): LSM303D accelerometer/magnetometer, L3GD20H
 * gyroscope, LPS25H barometer. Register numbers from the ST datasheets; on all three a sub-address with
 * its top bit set reads several registers in one burst (auto-increment).
 */
#include "config.h"
#ifdef ROBOT_LINK_IMU_ALTIMU10
#include <Arduino.h>
#include <Wire.h>
#include "hw.h"

enum {
    ST_WHO_AM_I = 0x0F,
    ST_AUTO_INC = 0x80,
    /* LSM303D */
    LSM_OUT_X_L_M = 0x08,
    LSM_CTRL1 = 0x20, LSM_CTRL2 = 0x21, LSM_CTRL5 = 0x24, LSM_CTRL6 = 0x25, LSM_CTRL7 = 0x26,
    LSM_OUT_X_L_A = 0x28,
    /* L3GD20H */
    L3G_CTRL1 = 0x20, L3G_CTRL4 = 0x23, L3G_OUT_X_L = 0x28, L3G_LOW_ODR = 0x39,
    /* LPS25H */
    LPS_CTRL_REG1 = 0x20, LPS_PRESS_OUT_XL = 0x28,
};

static const uint8_t ADDR[ALTIMU_DEVICES] = {ALTIMU_LSM303D_ADDR, ALTIMU_L3GD20H_ADDR, ALTIMU_LPS25H_ADDR};
static const uint8_t WHOAMI[ALTIMU_DEVICES] = {ALTIMU_LSM303D_WHOAMI, ALTIMU_L3GD20H_WHOAMI, ALTIMU_LPS25H_WHOAMI};

static uint8_t st_write(uint8_t addr, uint8_t reg, uint8_t value)
{
    Wire.beginTransmission(addr);
    Wire.write(reg);
    Wire.write(value);
    return Wire.endTransmission() == 0;
}

static uint8_t st_read(uint8_t addr, uint8_t reg, uint8_t *out, uint8_t n)
{
    Wire.beginTransmission(addr);
    Wire.write((uint8_t)(n > 1 ? reg | ST_AUTO_INC : reg));
    if (Wire.endTransmission(false) != 0)
        return 0;
    if (Wire.requestFrom(addr, n) != n)
        return 0;
    for (uint8_t i = 0; i < n; i++)
        out[i] = (uint8_t)Wire.read();
    return 1;
}

static void le16x3(const uint8_t *raw, int16_t v[3])
{
    for (uint8_t i = 0; i < 3; i++)
        v[i] = (int16_t)(raw[2 * i] | (raw[2 * i + 1] << 8));
}

uint8_t altimu_init(uint8_t whoami[ALTIMU_DEVICES])
{
    Wire.begin();
    Wire.setClock(400000);
    Wire.setWireTimeout(IMU_I2C_TIMEOUT_US, true);
    uint8_t ok = 0;
    for (uint8_t i = 0; i < ALTIMU_DEVICES; i++) {
        whoami[i] = 0;
        if (st_read(ADDR[i], ST_WHO_AM_I, &whoami[i], 1) && whoami[i] == WHOAMI[i])
            ok |= (uint8_t)(1 << i);
    }
    if (ok & 1) {
        st_write(ALTIMU_LSM303D_ADDR, LSM_CTRL2, 0x08);   /* accel +-4 g: 0.122 mg/LSB */
        st_write(ALTIMU_LSM303D_ADDR, LSM_CTRL1, 0x67);   /* accel 100 Hz, x/y/z on */
        st_write(ALTIMU_LSM303D_ADDR, LSM_CTRL5, 0x64);   /* mag high resolution, 6.25 Hz */
        st_write(ALTIMU_LSM303D_ADDR, LSM_CTRL6, 0x20);   /* mag +-4 gauss */
        st_write(ALTIMU_LSM303D_ADDR, LSM_CTRL7, 0x00);   /* mag continuous conversion */
    }
    if (ok & 2) {
        st_write(ALTIMU_L3GD20H_ADDR, L3G_LOW_ODR, 0x00);
        st_write(ALTIMU_L3GD20H_ADDR, L3G_CTRL4, 0x10);   /* +-500 dps: 17.5 mdps/LSB */
        st_write(ALTIMU_L3GD20H_ADDR, L3G_CTRL1, 0x6F);   /* 200 Hz, powered, x/y/z on */
    }
    if (ok & 4)
        st_write(ALTIMU_LPS25H_ADDR, LPS_CTRL_REG1, 0xB0); /* powered, 12.5 Hz */
    return ok;
}

uint8_t altimu_read(int16_t accel[3], int16_t gyro[3])
{
    uint8_t raw[6];
    if (!st_read(ALTIMU_LSM303D_ADDR, LSM_OUT_X_L_A, raw, 6))
        return 0;
    le16x3(raw, accel);
    if (!st_read(ALTIMU_L3GD20H_ADDR, L3G_OUT_X_L, raw, 6))
        return 0;
    le16x3(raw, gyro);
    return 1;
}

uint8_t altimu_read_slow(int16_t mag[3], int32_t *pressure_raw)
{
    uint8_t raw[6];
    if (!st_read(ALTIMU_LSM303D_ADDR, LSM_OUT_X_L_M, raw, 6))
        return 0;
    le16x3(raw, mag);
    if (!st_read(ALTIMU_LPS25H_ADDR, LPS_PRESS_OUT_XL, raw, 3))
        return 0;
    *pressure_raw = (int32_t)((uint32_t)raw[0] | ((uint32_t)raw[1] << 8) | ((uint32_t)raw[2] << 16));
    if (raw[2] & 0x80)
        *pressure_raw -= 1L << 24;
    return 1;
}
#endif
