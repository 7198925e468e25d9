/*
 * robot_link.ino - low-level firmware of an Arduino-class differential-drive robot
 * (thesis 4.3: A-Star 32U4 class board with two motors, quadrature encoders, an I2C IMU
 * and a serial link to a Raspberry Pi). Builds for the ATmega328P (Uno, link on Serial)
 * and the ATmega32U4 (Leonardo / A-Star 32U4, link on Serial1).
 *
 * Host link: COBS frames with CRC-16/CCITT-FALSE and sequence numbers (link_protocol.h).
 *   host -> robot  WHEEL_SPEED (mrad/s), DUTY, STOP, PING, GET_STATUS, RESET, GET_HELLO
 *   robot -> host  HELLO at boot and on GET_HELLO, TELEMETRY at 100 Hz (IMU raw + time, encoder counts,
 *                  applied duty, fault flags, last command seq), STATUS, PONG
 * Safety:
 *   - no valid motor command for LINK_TIMEOUT_US -> motors off (FAULT_FAILSAFE) until the
 *     next valid command;
 *   - out-of-range commands are clamped and flagged (FAULT_CLAMPED, counter);
 *   - bad frames are dropped and counted; the decoder resyncs on the next 0x00;
 *   - the hardware watchdog resets the MCU when the loop stalls (and on RESET), the reset
 *     cause is reported in HELLO/STATUS.
 * Between events the MCU sleeps (idle mode); every interrupt wakes it.
 *
 * Leveler build (-DROBOT_LINK_LEVELER, `make leveler`, 32U4 only): the thesis's robot (4.3). The IMU is an
 * AltIMU-10 v4 (LSM303D + L3GD20H + LPS25H, WHO_AM_I of each checked at boot and reported in IMU_ID), the
 * speed limits are the Dagu Rover 5's (config.h), the link runs at 9600 baud (an XBee-class radio) and
 * carries LEVEL_STATE at 20 Hz (tilt from a complementary filter of accelerometer and gyro, odometry
 * counts, applied duty, the host behaviour's phase) instead of the 100 Hz TELEMETRY; frames the UART
 * cannot take are dropped and counted, never waited for. Failsafe and watchdog are unchanged.
 */
#include <Arduino.h>
#include <avr/sleep.h>
#include <avr/wdt.h>
#include "config.h"
#include "hw.h"
#include "link_protocol.h"

#if defined(__AVR_ATmega32U4__)
#define LINK_SERIAL Serial1
#else
#define LINK_SERIAL Serial
#endif

/* ------------------------------------------------------------------ state */
static link_decoder_t rx;
static uint8_t tx_seq;

static uint8_t have_host_seq;
static uint8_t last_host_seq;
static uint8_t last_cmd_seq;          /* seq of the last accepted motor command */

/* counters reported in STATUS (saturating) */
static uint16_t n_bad_body, n_unknown_type, n_seq_gaps, n_failsafe_trips, n_clamped;
static uint16_t n_enc_err_left, n_enc_err_right, n_imu_errors;

static uint16_t faults = FAULT_NO_COMMAND;
static uint16_t faults_since_report;  /* transient faults, cleared after each telemetry */

enum { MODE_OFF = 0, MODE_SPEED, MODE_DUTY };
static uint8_t mode = MODE_OFF;
static uint8_t reset_requested;
static uint32_t last_cmd_us;
static uint8_t link_lost;             /* failsafe engaged: no valid command for LINK_TIMEOUT_US */

static int32_t set_left_mradps, set_right_mradps;
static int32_t set_left_cps, set_right_cps;         /* counts/s */
static int32_t target_left_mc, target_right_mc;     /* target wheel position, 1/1000 count */
static int16_t duty_left, duty_right;               /* applied */

static uint8_t imu_whoami;
static int16_t imu_accel[3], imu_gyro[3];
static uint32_t next_tick_us;

#ifdef ROBOT_LINK_LEVELER
static uint8_t altimu_whoami[ALTIMU_DEVICES];
static uint8_t imu_ok_mask;
static int16_t imu_mag[3];
static int32_t imu_pressure_raw;
static uint8_t slow_count, level_count;
static uint8_t level_phase;
static uint8_t tx_dropped;            /* frames the UART could not take (saturating) */
static float pitch_rad, roll_rad;     /* complementary tilt filter (Z-Y-X Euler angles) */
static uint8_t tilt_started;
/* LSM303D at +-4 g: 0.122 mg/LSB; L3GD20H at +-500 dps: 17.5 mdps/LSB */
#define ACCEL_MMPS2_PER_LSB 1.19641f
#define GYRO_RADPS_PER_LSB 3.05433e-4f
#endif

static void inc(uint16_t *c)
{
    if (*c != 0xFFFF)
        (*c)++;
}

static void add_sat(uint16_t *c, uint8_t n)
{
    *c = (uint16_t)(*c > 0xFFFF - n ? 0xFFFF : *c + n);
}

/* ------------------------------------------------------------------ sending */
static void send_frame(uint8_t type, const uint8_t *body, uint8_t len)
{
    uint8_t out[LINK_MAX_ENCODED + 1];
    size_t n = link_encode_frame(type, tx_seq++, body, len, out);
#ifdef ROBOT_LINK_LEVELER
    /* a slow radio: drop (the host sees a seq gap) rather than stall the loop */
    if ((size_t)LINK_SERIAL.availableForWrite() < n) {
        if (tx_dropped != 0xFF)
            tx_dropped++;
        return;
    }
#endif
    LINK_SERIAL.write(out, n);
}

static void send_hello(void)
{
    uint8_t b[MSG_HELLO_LEN] = {LINK_PROTOCOL_VERSION, hw_board_id(), hw_reset_flags, imu_whoami};
    send_frame(MSG_HELLO, b, sizeof b);
}

#ifndef ROBOT_LINK_LEVELER
static void send_telemetry(uint32_t t_us, int32_t enc_l, int32_t enc_r)
{
    uint8_t b[MSG_TELEMETRY_LEN];
    link_put_u32(b + 0, t_us);
    link_put_u32(b + 4, (uint32_t)enc_l);
    link_put_u32(b + 8, (uint32_t)enc_r);
    for (uint8_t i = 0; i < 3; i++) {
        link_put_u16(b + 12 + 2 * i, (uint16_t)imu_accel[i]);
        link_put_u16(b + 18 + 2 * i, (uint16_t)imu_gyro[i]);
    }
    link_put_u16(b + 24, (uint16_t)duty_left);
    link_put_u16(b + 26, (uint16_t)duty_right);
    link_put_u16(b + 28, faults | faults_since_report);
    b[30] = last_cmd_seq;
    faults_since_report = 0;
    send_frame(MSG_TELEMETRY, b, sizeof b);
}
#endif

#ifdef ROBOT_LINK_LEVELER
static void send_imu_id(void)
{
    uint8_t b[MSG_IMU_ID_LEN] = {altimu_whoami[0], altimu_whoami[1], altimu_whoami[2], imu_ok_mask};
    send_frame(MSG_IMU_ID, b, sizeof b);
}

static int16_t clamp16f(float v)
{
    if (v > 32767.0f) return 32767;
    if (v < -32768.0f) return -32768;
    return (int16_t)lroundf(v);
}

/* Complementary tilt filter, every tick: Z-Y-X Euler rates from the body rates, blended with the
 * accelerometer's tilt (gravity direction). Chip axes x forward, y left, z up: body FRD = (x, -y, -z). */
static void tilt_update(void)
{
    float cx = imu_accel[0], cy = imu_accel[1], cz = imu_accel[2];
    float acc_pitch = atan2f(cx, sqrtf(cy * cy + cz * cz));
    float acc_roll = atan2f(cy, cz);
    if (!tilt_started) {
        pitch_rad = acc_pitch;
        roll_rad = acc_roll;
        tilt_started = 1;
        return;
    }
    float p = imu_gyro[0] * GYRO_RADPS_PER_LSB;
    float q = -imu_gyro[1] * GYRO_RADPS_PER_LSB;
    float r = -imu_gyro[2] * GYRO_RADPS_PER_LSB;
    float dt = TICK_PERIOD_US * 1e-6f;
    float sr = sinf(roll_rad), cr = cosf(roll_rad);
    float roll_dot = p + (q * sr + r * cr) * tanf(pitch_rad);
    float pitch_dot = q * cr - r * sr;
    pitch_rad = TILT_GYRO_WEIGHT * (pitch_rad + pitch_dot * dt) + (1.0f - TILT_GYRO_WEIGHT) * acc_pitch;
    roll_rad = TILT_GYRO_WEIGHT * (roll_rad + roll_dot * dt) + (1.0f - TILT_GYRO_WEIGHT) * acc_roll;
}

static void send_level_state(uint32_t t_us, int32_t enc_l, int32_t enc_r)
{
    uint8_t b[MSG_LEVEL_STATE_LEN];
    link_put_u32(b + 0, t_us);
    link_put_u32(b + 4, (uint32_t)enc_l);
    link_put_u32(b + 8, (uint32_t)enc_r);
    link_put_u16(b + 12, (uint16_t)clamp16f(pitch_rad * 1000.0f));
    link_put_u16(b + 14, (uint16_t)clamp16f(roll_rad * 1000.0f));
    link_put_u16(b + 16, (uint16_t)clamp16f(-imu_gyro[2] * GYRO_RADPS_PER_LSB * 1000.0f));
    link_put_u16(b + 18, (uint16_t)clamp16f(imu_accel[0] * ACCEL_MMPS2_PER_LSB));
    link_put_u16(b + 20, (uint16_t)duty_left);
    link_put_u16(b + 22, (uint16_t)duty_right);
    link_put_u16(b + 24, faults | faults_since_report);
    b[26] = last_cmd_seq;
    b[27] = level_phase;
    b[28] = tx_dropped;
    faults_since_report = 0;
    send_frame(MSG_LEVEL_STATE, b, sizeof b);
}
#endif

static void send_status(void)
{
    uint8_t b[MSG_STATUS_LEN];
    const link_counters_t *c = &rx.counters;
    uint16_t counters[12] = {
        c->frames_ok, c->crc_errors, c->cobs_errors, c->oversize, n_bad_body, n_unknown_type,
        n_seq_gaps, n_failsafe_trips, n_clamped, n_enc_err_left, n_enc_err_right, n_imu_errors,
    };
    link_put_u32(b, micros());
    for (uint8_t i = 0; i < 12; i++)
        link_put_u16(b + 4 + 2 * i, counters[i]);
    link_put_u16(b + 28, faults | faults_since_report);
    b[30] = hw_reset_flags;
    b[31] = hw_board_id();
    send_frame(MSG_STATUS, b, sizeof b);
}

/* ------------------------------------------------------------------ motors */
static void motors_off(void)
{
    mode = MODE_OFF;
    duty_left = duty_right = 0;
    motors_set(0, 0);
}

static int32_t clamp32(int32_t v, int32_t lim, uint8_t *clamped)
{
    if (v > lim) { *clamped = 1; return lim; }
    if (v < -lim) { *clamped = 1; return -lim; }
    return v;
}

static void reset_speed_loop(void)
{
    int32_t l, r;
    encoders_read(&l, &r);
    target_left_mc = l * 1000L;
    target_right_mc = r * 1000L;
}

/* Wheel speed loop (every TICK_PERIOD_US): feed-forward from the set speed plus an integral
 * term on the wheel position error (target position integrates the set speed). */
static int16_t speed_step(int32_t set_cps, int32_t *target_mc, int32_t count)
{
    *target_mc += set_cps * (int32_t)(TICK_PERIOD_US / 1000UL);   /* cps * dt, in 1/1000 count */
    int32_t err_mc = *target_mc - count * 1000L;
    const int32_t lim = MAX_POS_ERR_COUNTS * 1000L;
    if (err_mc > lim) { *target_mc -= err_mc - lim; err_mc = lim; }
    if (err_mc < -lim) { *target_mc -= err_mc + lim; err_mc = -lim; }
    int32_t ff = set_cps * PINMAP_PWM_TOP / MOTOR_NO_LOAD_CPS;
    int32_t duty = ff + err_mc * KI_DUTY_PER_COUNT_NUM / (KI_DUTY_PER_COUNT_DEN * 1000L);
    uint8_t ignored = 0;
    return (int16_t)clamp32(duty, PINMAP_PWM_TOP, &ignored);
}

/* ------------------------------------------------------------------ receiving */
static void accept_motor_command(uint8_t seq, uint8_t clamped)
{
    last_cmd_seq = seq;
    last_cmd_us = micros();
    link_lost = 0;
    faults &= (uint16_t)~(FAULT_FAILSAFE | FAULT_NO_COMMAND);
    if (clamped) {
        faults |= FAULT_CLAMPED;
        inc(&n_clamped);
    } else {
        faults &= (uint16_t)~FAULT_CLAMPED;
    }
}

static void handle_frame(const uint8_t *f, uint8_t len)
{
    uint8_t type = f[0], seq = f[1];
    const uint8_t *body = f + LINK_HEADER_LEN;
    uint8_t body_len = (uint8_t)(len - LINK_HEADER_LEN);

    if (have_host_seq && seq != (uint8_t)(last_host_seq + 1))
        inc(&n_seq_gaps);
    have_host_seq = 1;
    last_host_seq = seq;

    uint8_t expected;
    switch (type) {
    case MSG_WHEEL_SPEED: expected = MSG_WHEEL_SPEED_LEN; break;
    case MSG_DUTY: expected = MSG_DUTY_LEN; break;
    case MSG_STOP: expected = MSG_STOP_LEN; break;
    case MSG_PING: expected = MSG_PING_LEN; break;
    case MSG_GET_STATUS: expected = MSG_GET_STATUS_LEN; break;
    case MSG_RESET: expected = MSG_RESET_LEN; break;
    case MSG_GET_HELLO: expected = MSG_GET_HELLO_LEN; break;
#ifdef ROBOT_LINK_LEVELER
    case MSG_SET_PHASE: expected = MSG_SET_PHASE_LEN; break;
#endif
    default:
        inc(&n_unknown_type);
        faults_since_report |= FAULT_RX_ERROR;
        return;
    }
    if (body_len != expected) {
        inc(&n_bad_body);
        faults_since_report |= FAULT_RX_ERROR;
        return;
    }

    uint8_t clamped = 0;
    switch (type) {
    case MSG_WHEEL_SPEED: {
        int32_t l = clamp32((int16_t)link_get_u16(body), MAX_WHEEL_MRADPS, &clamped);
        int32_t r = clamp32((int16_t)link_get_u16(body + 2), MAX_WHEEL_MRADPS, &clamped);
        if (mode != MODE_SPEED)
            reset_speed_loop();
        mode = MODE_SPEED;
        set_left_mradps = l;
        set_right_mradps = r;
        set_left_cps = l * 1000L / MRAD_PER_3_REV;
        set_right_cps = r * 1000L / MRAD_PER_3_REV;
        accept_motor_command(seq, clamped);
        break;
    }
    case MSG_DUTY: {
        int32_t l = clamp32((int16_t)link_get_u16(body), PINMAP_PWM_TOP, &clamped);
        int32_t r = clamp32((int16_t)link_get_u16(body + 2), PINMAP_PWM_TOP, &clamped);
        mode = MODE_DUTY;
        duty_left = (int16_t)l;
        duty_right = (int16_t)r;
        motors_set(duty_left, duty_right);
        accept_motor_command(seq, clamped);
        break;
    }
    case MSG_STOP:
        motors_off();
        accept_motor_command(seq, 0);
        break;
    case MSG_PING: {
        uint8_t b[MSG_PONG_LEN];
        for (uint8_t i = 0; i < 4; i++)
            b[i] = body[i];
        link_put_u32(b + 4, micros());
        send_frame(MSG_PONG, b, sizeof b);
        break;
    }
    case MSG_GET_STATUS:
        send_status();
        break;
    case MSG_GET_HELLO:             /* a host that opened the port after boot missed the boot HELLO */
        send_hello();
#ifdef ROBOT_LINK_LEVELER
        send_imu_id();
#endif
        break;
    case MSG_RESET:
        if (body[0] == 'W' && body[1] == 'D' && body[2] == 'T' && body[3] == '!') {
            motors_off();
            reset_requested = 1;     /* stop feeding the watchdog: hardware reset follows */
        } else {
            inc(&n_bad_body);
            faults_since_report |= FAULT_RX_ERROR;
        }
        break;
#ifdef ROBOT_LINK_LEVELER
    case MSG_SET_PHASE:
        level_phase = body[0];
        break;
#endif
    }
}

static void poll_link(void)
{
    while (LINK_SERIAL.available() > 0) {
        uint16_t before = rx.counters.crc_errors + rx.counters.cobs_errors + rx.counters.oversize;
        if (link_decoder_feed(&rx, (uint8_t)LINK_SERIAL.read()))
            handle_frame(rx.frame, rx.frame_len);
        else if ((uint16_t)(rx.counters.crc_errors + rx.counters.cobs_errors + rx.counters.oversize) != before)
            faults_since_report |= FAULT_RX_ERROR;
    }
}

/* ------------------------------------------------------------------ periodic work */
/* Link failsafe, checked on every pass of the loop (at least every 1.024 ms: timer0 wakes
 * the MCU): motors off once no valid command arrived for LINK_TIMEOUT_US. */
static void check_link(uint32_t now_us)
{
    if (!link_lost && !(faults & FAULT_NO_COMMAND) &&
        (uint32_t)(now_us - last_cmd_us) >= LINK_TIMEOUT_US) {
        link_lost = 1;
        motors_off();
        faults |= FAULT_FAILSAFE;
        inc(&n_failsafe_trips);
    }
}

static void tick(uint32_t t_us)
{
    /* encoder counts at t_us, then the IMU (its burst read takes ~0.4 ms of TWI traffic) */
    int32_t enc_l, enc_r;
    encoders_read(&enc_l, &enc_r);
#ifdef ROBOT_LINK_LEVELER
    if (altimu_read(imu_accel, imu_gyro)) {
        if (imu_ok_mask == ALTIMU_ALL_OK)
            faults &= (uint16_t)~FAULT_IMU;
        tilt_update();
    } else {
        faults |= FAULT_IMU;
        inc(&n_imu_errors);
    }
    if (++slow_count >= 10) {           /* magnetometer and barometer at 10 Hz */
        slow_count = 0;
        if ((imu_ok_mask & 5) == 5 && !altimu_read_slow(imu_mag, &imu_pressure_raw)) {
            faults |= FAULT_IMU;
            inc(&n_imu_errors);
        }
    }
#else
    if (imu_read(imu_accel, imu_gyro)) {
        faults &= (uint16_t)~FAULT_IMU;
    } else {
        faults |= FAULT_IMU;
        inc(&n_imu_errors);
    }
#endif
    uint8_t el, er;
    encoders_take_errors(&el, &er);
    if (el) { faults_since_report |= FAULT_ENC_LEFT; add_sat(&n_enc_err_left, el); }
    if (er) { faults_since_report |= FAULT_ENC_RIGHT; add_sat(&n_enc_err_right, er); }

    if (mode == MODE_SPEED) {
        duty_left = speed_step(set_left_cps, &target_left_mc, enc_l);
        duty_right = speed_step(set_right_cps, &target_right_mc, enc_r);
        motors_set(duty_left, duty_right);
    }
#ifdef ROBOT_LINK_LEVELER
    if (++level_count >= LEVEL_STATE_DECIMATION) {
        level_count = 0;
        send_level_state(t_us, enc_l, enc_r);
    }
#else
    send_telemetry(t_us, enc_l, enc_r);
#endif
}

/* ------------------------------------------------------------------ Arduino entry points */
void setup(void)
{
    motors_init();
    motors_off();
    encoders_init();
    link_decoder_init(&rx);
    LINK_SERIAL.begin(LINK_BAUD);
#ifdef ROBOT_LINK_LEVELER
    imu_ok_mask = altimu_init(altimu_whoami);
    imu_whoami = altimu_whoami[0];
    if (imu_ok_mask != ALTIMU_ALL_OK)
        faults |= FAULT_IMU;
#else
    imu_whoami = imu_init();
    if (imu_whoami != IMU_WHOAMI_VALUE)
        faults |= FAULT_IMU;
#endif
    if (hw_reset_flags & RESET_FLAG_WATCHDOG)
        faults |= FAULT_WDT_RESET;
    send_hello();
#ifdef ROBOT_LINK_LEVELER
    send_imu_id();
#endif
    next_tick_us = micros() + TICK_PERIOD_US;
    set_sleep_mode(SLEEP_MODE_IDLE);
    wdt_enable(WDT_TIMEOUT);
}

void loop(void)
{
    if (!reset_requested)
        wdt_reset();
    poll_link();
    uint32_t now = micros();
    check_link(now);
    if ((int32_t)(now - next_tick_us) >= 0) {
        next_tick_us += TICK_PERIOD_US;
        if ((int32_t)(now - next_tick_us) >= 0)      /* fell behind: skip, do not burst */
            next_tick_us = now + TICK_PERIOD_US;
        tick(now);
    }
    /* Sleep until the next interrupt (timer0 every 1.024 ms, UART, encoders, TWI).
     * sei immediately followed by sleep: a wake-up interrupt cannot slip in between. */
    cli();
    if (LINK_SERIAL.available() == 0) {
        sleep_enable();
        sei();
        sleep_cpu();
        sleep_disable();
    }
    sei();
}
