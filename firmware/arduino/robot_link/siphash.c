/*
 * siphash.c - SipHash-2-4, written from the paper (Aumasson & Bernstein, "SipHash: a fast short-input
 * PRF", 2012, section 2): c = 2 compression rounds per 64-bit message word, d = 4 finalisation rounds.
 * Checked against the reference's 64 test vectors in tests/firmware/test_avr_signing.py.
 */
#include "siphash.h"

static uint64_t rotl(uint64_t x, uint8_t b)
{
    return (x << b) | (x >> (64 - b));
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t x = 0;
    for (int8_t k = 7; k >= 0; k--)
        x = (x << 8) | p[k];
    return x;
}

/* One SipRound (paper Fig. 2.1) on v[0..3]. */
static void sipround(uint64_t v[4])
{
    v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);
    v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];
    v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];
    v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);
}

static void absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sipround(v);
    sipround(v);
    v[0] ^= m;
}

void siphash24(const uint8_t key[SIPHASH_KEY_LEN], const uint8_t *msg, size_t len,
               uint8_t tag[SIPHASH_TAG_LEN])
{
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t end = len - (len % 8);
    for (size_t i = 0; i < end; i += 8)
        absorb(v, le64(msg + i));
    /* last word: the remaining bytes, zero padding, len mod 256 in the top byte */
    uint64_t last = (uint64_t)(len & 0xFF) << 56;
    for (uint8_t k = 0; k < (uint8_t)(len - end); k++)
        last |= (uint64_t)msg[end + k] << (8 * k);
    absorb(v, last);
    v[2] ^= 0xFF;
    for (uint8_t r = 0; r < 4; r++)
        sipround(v);
    uint64_t t = v[0] ^ v[1] ^ v[2] ^ v[3];
    for (uint8_t k = 0; k < 8; k++)
        tag[k] = (uint8_t)(t >> (8 * k));
}
