/*
 * link_protocol.h - the robot link's framing, shared by the sketch and host tests.
 *
 * Wire format (mirrored in boards/arduino/protocol.py; every message's byte layout, the rates and the
 * failsafe are specified in firmware/arduino/PROTOCOL.md, which tests check against this header):
 *
 *   frame   = COBS(type | seq | body | crc_hi | crc_lo) 0x00
 *   crc     = CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over type|seq|body, big-endian
 *   body    = fixed-length little-endian fields, one layout per message type
 *
 * COBS (consistent overhead byte stuffing) removes every 0x00 from the frame so 0x00
 * marks frame ends; a receiver that joins mid-stream resyncs at the next 0x00.
 * Anything that is not a whole valid frame is dropped and counted: over-long frames
 * (more than LINK_MAX_ENCODED bytes before a 0x00), COBS structure errors, CRC errors,
 * unknown types and wrong body lengths.
 *
 * Host -> firmware commands that move the robot or change its state (WHEEL_SPEED, DUTY, STOP, RESET,
 * SET_PHASE) carry a signature trailer after their body (key id, 48-bit counter, SipHash-2-4 tag:
 * link_sign.h); the body lengths below are without it. Queries (PING, GET_STATUS, GET_HELLO) and all
 * firmware -> host messages (telemetry) are not signed.
 *
 * Plain C99, no AVR headers: it also compiles for the host (tests load it with ctypes).
 */
#ifndef ROBOT_LINK_PROTOCOL_H
#define ROBOT_LINK_PROTOCOL_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LINK_PROTOCOL_VERSION 2

/* Sizes (bytes). A decoded frame is type + seq + body + 2 CRC bytes. */
#define LINK_MAX_BODY 40
#define LINK_HEADER_LEN 2
#define LINK_CRC_LEN 2
#define LINK_MAX_DECODED (LINK_HEADER_LEN + LINK_MAX_BODY + LINK_CRC_LEN)
/* COBS adds one byte per 254 (and one at the start): worst case for our sizes. */
#define LINK_MAX_ENCODED (LINK_MAX_DECODED + 1 + LINK_MAX_DECODED / 254)

/* Host -> firmware message types and their body lengths. */
#define MSG_WHEEL_SPEED 0x01   /* int16 left_mradps, int16 right_mradps */
#define MSG_WHEEL_SPEED_LEN 4
#define MSG_DUTY 0x02          /* int16 left, int16 right, in 1/400 of full PWM (+-400) */
#define MSG_DUTY_LEN 4
#define MSG_STOP 0x03          /* (empty) motors off now */
#define MSG_STOP_LEN 0
#define MSG_PING 0x04          /* uint32 token -> PONG */
#define MSG_PING_LEN 4
#define MSG_GET_STATUS 0x05    /* (empty) -> STATUS */
#define MSG_GET_STATUS_LEN 0
#define MSG_RESET 0x06         /* 'W' 'D' 'T' '!' -> stop feeding the watchdog (hardware reset) */
#define MSG_RESET_LEN 4
#define MSG_SET_PHASE 0x07     /* u8 phase: the host behaviour's state, echoed in LEVEL_STATE (leveler build) */
#define MSG_SET_PHASE_LEN 1
#define MSG_GET_HELLO 0x08     /* (empty) -> HELLO again (and IMU_ID in the leveler build), as sent at boot */
#define MSG_GET_HELLO_LEN 0

/* Firmware -> host message types and their body lengths. */
#define MSG_HELLO 0x80         /* u8 version, u8 board_id, u8 reset_flags (MCUSR), u8 imu_whoami,
                                  u8 signing (0 off, 1 SipHash-2-4 signed commands), u8 key_id */
#define MSG_HELLO_LEN 6
#define MSG_TELEMETRY 0x81     /* PROTOCOL.md; robot_link.ino: send_telemetry() */
#define MSG_TELEMETRY_LEN 31
#define MSG_STATUS 0x82        /* PROTOCOL.md; robot_link.ino: send_status() */
#define MSG_STATUS_LEN 40
#define MSG_PONG 0x83          /* u32 token, u32 firmware time (us) */
#define MSG_PONG_LEN 8
#define MSG_LEVEL_STATE 0x84   /* leveler build: algorithm state, see below */
#define MSG_LEVEL_STATE_LEN 29
#define MSG_IMU_ID 0x85        /* leveler build, at boot after HELLO: u8 WHO_AM_I of LSM303D, L3GD20H,
                                  LPS25H (0 = no answer), u8 mask of those that matched (bit 0, 1, 2) */
#define MSG_IMU_ID_LEN 4

/* LEVEL_STATE (leveler build; the thesis's X-Bee "state of the algorithm each cycle", 4.3):
 *   u32 t_us, i32 enc_left, i32 enc_right (counts), i16 pitch_mrad, i16 roll_mrad (Z-Y-X Euler angles of
 *   R_body_to_ned from the complementary tilt filter), i16 yaw_rate_mradps (body z, FRD), i16 accel_fwd_mmps2
 *   (specific force along body x), i16 duty_left, i16 duty_right (1/400), u16 faults, u8 last_cmd_seq,
 *   u8 phase (last SET_PHASE), u8 tx_dropped (frames the UART could not take, saturating).
 * Link budget at 9600 baud, 8N1 (10 bits a byte): 960 B/s each way. A LEVEL_STATE frame is
 *   type + seq + 29 + CRC 2 = 33 bytes, COBS + 1 = 34, + the 0x00 delimiter = 35 bytes = 36.5 ms on the wire,
 *   so at most 27.4 Hz fit. The 100 Hz tick is decimated by 5: 20 Hz x 35 B = 700 B/s (73 % of the link),
 *   leaving 260 B/s for replies (PONG 14 B, STATUS 46 B, HELLO 12 B, IMU_ID 10 B). The 100 Hz TELEMETRY
 *   (37 B -> 3700 B/s) would not fit: the leveler build does not send it. Downlink: a signed WHEEL_SPEED
 *   is 10 + 15 = 25 B (26.0 ms at 9600 baud, 2.2 ms at 115200), so 10 Hz commands use 250 B/s of the
 *   960 B/s downlink; the firmware checks its tag in 0.66 ms (10622 cycles, PROTOCOL.md section 10). A frame that does not fit in the UART's transmit buffer is dropped and
 *   counted (tx_dropped), never waited for. */

/* Fault flags (telemetry and status). */
#define FAULT_FAILSAFE   0x0001  /* no valid command for LINK_TIMEOUT_US: motors off */
#define FAULT_CLAMPED    0x0002  /* the last command was out of range and was clamped */
#define FAULT_IMU        0x0004  /* the last IMU read failed (NACK, timeout, wrong id) */
#define FAULT_ENC_LEFT   0x0008  /* left encoder: both channels changed at once since last report */
#define FAULT_ENC_RIGHT  0x0010
#define FAULT_RX_ERROR   0x0020  /* a bad frame was dropped since the last report */
#define FAULT_WDT_RESET  0x0040  /* the last reset was a watchdog reset (sticky) */
#define FAULT_NO_COMMAND 0x0080  /* no valid motor command since boot */

/* Receive counters of a decoder (all saturate at 0xFFFF). */
typedef struct link_counters_t {
    uint16_t frames_ok;
    uint16_t crc_errors;
    uint16_t cobs_errors;     /* bad COBS structure, or a frame too short to hold header + CRC */
    uint16_t oversize;        /* more than LINK_MAX_ENCODED bytes before a 0x00 */
    uint16_t empty;           /* 0x00 0x00: an empty frame (harmless, counted apart) */
} link_counters_t;

/* Incremental decoder: feed bytes one by one; a complete valid frame is left in
 * `frame[0 .. frame_len)` (type, seq, body; CRC stripped). */
typedef struct link_decoder_t {
    uint8_t buf[LINK_MAX_ENCODED];
    uint8_t frame[LINK_MAX_DECODED];
    uint8_t len;            /* bytes buffered in buf */
    uint8_t overflow;       /* discarding until the next 0x00 */
    uint8_t frame_len;
    link_counters_t counters;
} link_decoder_t;

uint16_t link_crc16(const uint8_t *data, size_t len);
uint16_t link_crc16_update(uint16_t crc, uint8_t byte);

/* COBS-encode `len` bytes into `out` (room for len + len/254 + 1); returns the encoded length. */
size_t link_cobs_encode(const uint8_t *in, size_t len, uint8_t *out);
/* COBS-decode `len` bytes (no trailing 0x00) into `out` (room for len); returns the decoded
 * length, or -1 when the input is not valid COBS (a 0x00 inside, a code past the end). */
int link_cobs_decode(const uint8_t *in, size_t len, uint8_t *out);

/* Build a whole frame (COBS + trailing 0x00) into `out` (LINK_MAX_ENCODED + 1 bytes).
 * Returns its length, or 0 when the body is too long. */
size_t link_encode_frame(uint8_t type, uint8_t seq, const uint8_t *body, size_t body_len,
                         uint8_t *out);

void link_decoder_init(link_decoder_t *d);
/* Feed one byte; returns 1 when a CRC-valid frame is ready in d->frame / d->frame_len, -1 when this byte made
 * the decoder drop a frame (oversize, bad COBS or too short, bad CRC: counted, and reported even once the
 * counter has saturated), 0 otherwise (a byte buffered or skipped, an empty frame). */
int link_decoder_feed(link_decoder_t *d, uint8_t byte);

/* Little-endian field helpers. */
static inline void link_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void link_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint16_t link_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | ((uint16_t)p[1] << 8)); }
static inline uint32_t link_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#ifdef __cplusplus
}
#endif
#endif
