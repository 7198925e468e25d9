/*
 * link_protocol.c - COBS framing + CRC-16/CCITT-FALSE for the robot link.
 * Mirrors onboard/comms/crc.py (crc16_ccitt_false) and boards/arduino/protocol.py.
 */
#include "link_protocol.h"

static void counter_inc(uint16_t *c)
{
    if (*c != 0xFFFF)
        (*c)++;
}

uint16_t link_crc16_update(uint16_t crc, uint8_t byte)
{
    /* Bitwise CRC-16, poly 0x1021, MSB first (no table: saves 512 bytes of flash). */
    crc ^= (uint16_t)byte << 8;
    for (uint8_t i = 0; i < 8; i++)
        crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    return crc;
}

uint16_t link_crc16(const uint8_t *data, size_t len)
{
    uint16_t crc = 0xFFFF;
    for (size_t i = 0; i < len; i++)
        crc = link_crc16_update(crc, data[i]);
    return crc;
}

size_t link_cobs_encode(const uint8_t *in, size_t len, uint8_t *out)
{
    size_t code_pos = 0, o = 1;
    uint8_t code = 1;
    for (size_t i = 0; i < len; i++) {
        if (in[i] == 0) {
            out[code_pos] = code;
            code_pos = o++;
            code = 1;
        } else {
            out[o++] = in[i];
            code++;
            if (code == 0xFF) {
                out[code_pos] = code;
                code_pos = o++;
                code = 1;
            }
        }
    }
    out[code_pos] = code;
    return o;
}

int link_cobs_decode(const uint8_t *in, size_t len, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < len) {
        uint8_t code = in[i++];
        if (code == 0)
            return -1;
        for (uint8_t k = 1; k < code; k++) {
            if (i >= len || in[i] == 0)
                return -1;
            out[o++] = in[i++];
        }
        if (code != 0xFF && i < len)
            out[o++] = 0;
    }
    return (int)o;
}

size_t link_encode_frame(uint8_t type, uint8_t seq, const uint8_t *body, size_t body_len,
                         uint8_t *out)
{
    uint8_t raw[LINK_MAX_DECODED];
    if (body_len > LINK_MAX_BODY)
        return 0;
    raw[0] = type;
    raw[1] = seq;
    for (size_t i = 0; i < body_len; i++)
        raw[LINK_HEADER_LEN + i] = body[i];
    size_t n = LINK_HEADER_LEN + body_len;
    uint16_t crc = link_crc16(raw, n);
    raw[n++] = (uint8_t)(crc >> 8);
    raw[n++] = (uint8_t)crc;
    size_t m = link_cobs_encode(raw, n, out);
    out[m++] = 0;
    return m;
}

void link_decoder_init(link_decoder_t *d)
{
    d->len = 0;
    d->overflow = 0;
    d->frame_len = 0;
    d->counters.frames_ok = 0;
    d->counters.crc_errors = 0;
    d->counters.cobs_errors = 0;
    d->counters.oversize = 0;
    d->counters.empty = 0;
}

int link_decoder_feed(link_decoder_t *d, uint8_t byte)
{
    if (byte != 0) {
        if (d->overflow)
            return 0;
        if (d->len >= LINK_MAX_ENCODED) {
            d->overflow = 1;          /* too long for any valid frame: drop to the next 0x00 */
            counter_inc(&d->counters.oversize);
            return -1;
        }
        d->buf[d->len++] = byte;
        return 0;
    }
    /* 0x00: end of a frame */
    uint8_t n = d->len;
    d->len = 0;
    if (d->overflow) {
        d->overflow = 0;
        return 0;
    }
    if (n == 0) {
        counter_inc(&d->counters.empty);
        return 0;
    }
    int m = link_cobs_decode(d->buf, n, d->frame);
    if (m < LINK_HEADER_LEN + LINK_CRC_LEN) {
        counter_inc(&d->counters.cobs_errors);
        return -1;
    }
    uint16_t got = (uint16_t)((d->frame[m - 2] << 8) | d->frame[m - 1]);
    if (link_crc16(d->frame, (size_t)(m - LINK_CRC_LEN)) != got) {
        counter_inc(&d->counters.crc_errors);
        return -1;
    }
    d->frame_len = (uint8_t)(m - LINK_CRC_LEN);
    counter_inc(&d->counters.frames_ok);
    return 1;
}
