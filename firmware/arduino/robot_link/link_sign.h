/*
 * link_sign.h - signed command frames of the robot link (host -> firmware), shared by the sketch and
 * host tests (plain C99; the EEPROM is the AVR's on the board, a RAM array in a host build).
 *
 * A command frame (WHEEL_SPEED, DUTY, STOP, RESET, SET_PHASE) carries a signature trailer after its body:
 *
 *   type | seq | body | key_id | counter (u48, little-endian) | tag (8 bytes) | crc   (COBS-framed as usual)
 *   tag = SipHash-2-4(key, type | seq | body | key_id | counter)       (siphash.h; 64-bit tag, 128-bit key)
 *
 * The firmware accepts such a frame only when the trailer is whole (LINK_SIG_LEN bytes), the key id is
 * its own, the tag verifies (compared in constant time) and the counter is above the last one accepted.
 * The counter's mark survives reboots in EEPROM: before accepting a counter at or above the saved mark it
 * saves counter + LINK_MARK_RESERVE (one 8-byte slot of a ring of LINK_MARK_SLOTS, so the writes wear
 * the cells evenly and a write cut by a power loss leaves the previous slot valid), and after a boot it
 * accepts only counters above the highest saved mark. So a reboot never accepts an old counter, and the
 * EEPROM is written once per LINK_MARK_RESERVE counter values (2 s of the host's 10 us stamps).
 * The verifier's state changes only on an accepted frame: a forged frame cannot move the counter.
 */
#ifndef ROBOT_LINK_SIGN_H
#define ROBOT_LINK_SIGN_H

#include <stdint.h>
#include "siphash.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LINK_SIG_KEY_ID_LEN 1
#define LINK_SIG_COUNTER_LEN 6
#define LINK_SIG_TAG_LEN 8
#define LINK_SIG_LEN (LINK_SIG_KEY_ID_LEN + LINK_SIG_COUNTER_LEN + LINK_SIG_TAG_LEN)
#define LINK_SIG_COUNTER_MAX 0xFFFFFFFFFFFFULL
/* counter values saved ahead of the last accepted one (host stamps are 10 us: 2 s) */
#define LINK_MARK_RESERVE 200000UL
/* EEPROM ring of marks: LINK_MARK_SLOTS slots of u48 mark + CRC-16 (big-endian) from LINK_MARK_EEPROM_ADDR */
#define LINK_MARK_SLOTS 32
#define LINK_MARK_SLOT_LEN 8
#define LINK_MARK_EEPROM_ADDR 0

/* link_sig_check results */
#define LINK_SIG_OK 0
#define LINK_SIG_UNSIGNED 1      /* the bare body, no trailer */
#define LINK_SIG_BAD_LEN 2       /* a trailer of the wrong length (truncated or padded) */
#define LINK_SIG_BAD_TAG 3       /* unknown key id or a tag that does not verify: forged */
#define LINK_SIG_REPLAYED 4      /* authentic but its counter is not above the last accepted: replayed/reordered */

typedef struct link_verifier_t {
    uint8_t key[SIPHASH_KEY_LEN];
    uint8_t key_id;
    uint8_t next_slot;           /* EEPROM slot the next mark goes to */
    uint64_t last;               /* last accepted counter (after boot: the saved mark) */
    uint64_t mark;               /* saved mark: counters >= it need a new mark saved first */
    uint16_t n_unsigned, n_bad_len, n_bad_tag, n_replayed;   /* saturating */
    uint16_t n_mark_writes;
} link_verifier_t;

/* Key, key id, then the saved mark from EEPROM (the highest valid slot; none: 0). */
void link_verifier_init(link_verifier_t *v, const uint8_t key[SIPHASH_KEY_LEN], uint8_t key_id);

/* Check a decoded frame (type | seq | body | trailer, CRC stripped) of `len` bytes whose message type has
 * a `body_len`-byte body. Returns LINK_SIG_OK (the counter is taken) or why it was dropped (counted). */
uint8_t link_sig_check(link_verifier_t *v, const uint8_t *frame, uint8_t len, uint8_t body_len);

/* Append the trailer to `frame` (type | seq | body, `len` bytes; room for LINK_SIG_LEN more): the host's
 * side, used by host tests. Returns the new length. */
uint8_t link_sig_sign(const uint8_t key[SIPHASH_KEY_LEN], uint8_t key_id, uint64_t counter,
                      uint8_t *frame, uint8_t len);

#ifndef __AVR__
/* host build: the EEPROM (erased = 0xFF) */
extern uint8_t link_sign_host_eeprom[LINK_MARK_SLOTS * LINK_MARK_SLOT_LEN];
void link_sign_host_eeprom_erase(void);
#endif

#ifdef __cplusplus
}
#endif
#endif
