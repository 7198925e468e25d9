/*
 * link_sign.c - verifier of signed command frames and its EEPROM counter mark (link_sign.h).
 * Mirrors boards/arduino/protocol.py (sign_trailer) and onboard/comms/signed_frame.py's reserve scheme.
 */
#include "link_sign.h"
#include "link_protocol.h"

#ifdef __AVR__
#include <avr/eeprom.h>
static void mark_read(uint16_t addr, uint8_t *p, uint8_t n)
{
    eeprom_read_block(p, (const void *)addr, n);
}
static void mark_write(uint16_t addr, const uint8_t *p, uint8_t n)
{
    eeprom_update_block(p, (void *)addr, n);    /* blocks ~3.4 ms a changed byte */
}
#else
uint8_t link_sign_host_eeprom[LINK_MARK_SLOTS * LINK_MARK_SLOT_LEN];
void link_sign_host_eeprom_erase(void)
{
    for (uint16_t i = 0; i < sizeof link_sign_host_eeprom; i++)
        link_sign_host_eeprom[i] = 0xFF;
}
static void mark_read(uint16_t addr, uint8_t *p, uint8_t n)
{
    for (uint8_t i = 0; i < n; i++)
        p[i] = link_sign_host_eeprom[addr - LINK_MARK_EEPROM_ADDR + i];
}
static void mark_write(uint16_t addr, const uint8_t *p, uint8_t n)
{
    for (uint8_t i = 0; i < n; i++)
        link_sign_host_eeprom[addr - LINK_MARK_EEPROM_ADDR + i] = p[i];
}
#endif

static void inc(uint16_t *c)
{
    if (*c != 0xFFFF)
        (*c)++;
}

static uint64_t get_u48(const uint8_t *p)
{
    uint64_t x = 0;
    for (int8_t k = 5; k >= 0; k--)
        x = (x << 8) | p[k];
    return x;
}

static void put_u48(uint8_t *p, uint64_t x)
{
    for (uint8_t k = 0; k < 6; k++)
        p[k] = (uint8_t)(x >> (8 * k));
}

void link_verifier_init(link_verifier_t *v, const uint8_t key[SIPHASH_KEY_LEN], uint8_t key_id)
{
    for (uint8_t i = 0; i < SIPHASH_KEY_LEN; i++)
        v->key[i] = key[i];
    v->key_id = key_id;
    v->n_unsigned = v->n_bad_len = v->n_bad_tag = v->n_replayed = v->n_mark_writes = 0;
    v->mark = 0;
    v->next_slot = 0;
    for (uint8_t s = 0; s < LINK_MARK_SLOTS; s++) {
        uint8_t b[LINK_MARK_SLOT_LEN];
        mark_read((uint16_t)(LINK_MARK_EEPROM_ADDR + s * LINK_MARK_SLOT_LEN), b, LINK_MARK_SLOT_LEN);
        uint16_t crc = link_crc16(b, 6);
        if (b[6] != (uint8_t)(crc >> 8) || b[7] != (uint8_t)crc)
            continue;                                   /* erased, or a write cut short */
        uint64_t m = get_u48(b);
        if (m >= v->mark) {
            v->mark = m;
            v->next_slot = (uint8_t)((s + 1) % LINK_MARK_SLOTS);
        }
    }
    v->last = v->mark;
}

static void save_mark(link_verifier_t *v, uint64_t mark)
{
    uint8_t b[LINK_MARK_SLOT_LEN];
    put_u48(b, mark);
    uint16_t crc = link_crc16(b, 6);
    b[6] = (uint8_t)(crc >> 8);
    b[7] = (uint8_t)crc;
    mark_write((uint16_t)(LINK_MARK_EEPROM_ADDR + v->next_slot * LINK_MARK_SLOT_LEN), b, LINK_MARK_SLOT_LEN);
    v->next_slot = (uint8_t)((v->next_slot + 1) % LINK_MARK_SLOTS);
    v->mark = mark;
    inc(&v->n_mark_writes);
}

uint8_t link_sig_check(link_verifier_t *v, const uint8_t *frame, uint8_t len, uint8_t body_len)
{
    uint8_t n = (uint8_t)(LINK_HEADER_LEN + body_len);
    if (len == n) {
        inc(&v->n_unsigned);
        return LINK_SIG_UNSIGNED;
    }
    if (len != n + LINK_SIG_LEN) {
        inc(&v->n_bad_len);
        return LINK_SIG_BAD_LEN;
    }
    const uint8_t *sig = frame + n;
    uint8_t tag[SIPHASH_TAG_LEN];
    siphash24(v->key, frame, (size_t)(n + LINK_SIG_KEY_ID_LEN + LINK_SIG_COUNTER_LEN), tag);
    uint8_t diff = (uint8_t)(sig[0] ^ v->key_id);        /* constant time: no early exit on a mismatch */
    for (uint8_t i = 0; i < SIPHASH_TAG_LEN; i++)
        diff |= (uint8_t)(tag[i] ^ sig[LINK_SIG_KEY_ID_LEN + LINK_SIG_COUNTER_LEN + i]);
    if (diff) {
        inc(&v->n_bad_tag);
        return LINK_SIG_BAD_TAG;
    }
    uint64_t counter = get_u48(sig + LINK_SIG_KEY_ID_LEN);
    if (counter <= v->last) {
        inc(&v->n_replayed);
        return LINK_SIG_REPLAYED;
    }
    if (counter >= v->mark) {                            /* saved before it is taken */
        uint64_t mark = counter + LINK_MARK_RESERVE;
        save_mark(v, mark > LINK_SIG_COUNTER_MAX ? LINK_SIG_COUNTER_MAX : mark);
    }
    v->last = counter;
    return LINK_SIG_OK;
}

uint8_t link_sig_sign(const uint8_t key[SIPHASH_KEY_LEN], uint8_t key_id, uint64_t counter,
                      uint8_t *frame, uint8_t len)
{
    frame[len] = key_id;
    put_u48(frame + len + LINK_SIG_KEY_ID_LEN, counter);
    uint8_t n = (uint8_t)(len + LINK_SIG_KEY_ID_LEN + LINK_SIG_COUNTER_LEN);
    siphash24(key, frame, n, frame + n);
    return (uint8_t)(n + SIPHASH_TAG_LEN);
}
