/*
 * siphash.h - SipHash-2-4 (Aumasson & Bernstein 2012), the MAC of the robot link's signed commands.
 * Plain C99, no AVR headers: the same file builds for the AVR and for host tests.
 * Mirrors onboard/comms/siphash.py (why it is written here: no maintained SipHash package for the AVR
 * or MicroPython; see that module).
 */
#ifndef ROBOT_LINK_SIPHASH_H
#define ROBOT_LINK_SIPHASH_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIPHASH_KEY_LEN 16
#define SIPHASH_TAG_LEN 8

/* SipHash-2-4 of `len` bytes at `msg` under the 16-byte `key`; the 64-bit tag as 8 little-endian bytes. */
void siphash24(const uint8_t key[SIPHASH_KEY_LEN], const uint8_t *msg, size_t len,
               uint8_t tag[SIPHASH_TAG_LEN]);

#ifdef __cplusplus
}
#endif
#endif
