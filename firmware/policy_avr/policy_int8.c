/* int8 policy kernel (see policy_int8.h). */
#include "policy_int8.h"

#if defined(__AVR__) && !defined(PI8_PLAIN_C)
/* |x| * m as (hi:lo) 64-bit: 16 MUL instructions, schoolbook (avr-gcc's 64-bit multiply
 * costs ~700 cycles and its 16x16 pieces ~800 in all; this ~150). */
static void pi8_umul32x32(uint32_t a, uint32_t b, uint32_t *hi_out, uint32_t *lo_out) {
    uint32_t lo, hi;
    uint8_t z;
    __asm__(
        "clr %A[lo]\n\t"
        "clr %B[lo]\n\t"
        "clr %C[lo]\n\t"
        "clr %D[lo]\n\t"
        "clr %A[hi]\n\t"
        "clr %B[hi]\n\t"
        "clr %C[hi]\n\t"
        "clr %D[hi]\n\t"
        "clr %[z]\n\t"
        "mul %A[a], %A[b]\n\t"
        "add %A[lo], r0\n\t"
        "adc %B[lo], r1\n\t"
        "adc %C[lo], %[z]\n\t"
        "adc %D[lo], %[z]\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %A[a], %B[b]\n\t"
        "add %B[lo], r0\n\t"
        "adc %C[lo], r1\n\t"
        "adc %D[lo], %[z]\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %A[a], %C[b]\n\t"
        "add %C[lo], r0\n\t"
        "adc %D[lo], r1\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %A[a], %D[b]\n\t"
        "add %D[lo], r0\n\t"
        "adc %A[hi], r1\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %B[a], %A[b]\n\t"
        "add %B[lo], r0\n\t"
        "adc %C[lo], r1\n\t"
        "adc %D[lo], %[z]\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %B[a], %B[b]\n\t"
        "add %C[lo], r0\n\t"
        "adc %D[lo], r1\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %B[a], %C[b]\n\t"
        "add %D[lo], r0\n\t"
        "adc %A[hi], r1\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %B[a], %D[b]\n\t"
        "add %A[hi], r0\n\t"
        "adc %B[hi], r1\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %C[a], %A[b]\n\t"
        "add %C[lo], r0\n\t"
        "adc %D[lo], r1\n\t"
        "adc %A[hi], %[z]\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %C[a], %B[b]\n\t"
        "add %D[lo], r0\n\t"
        "adc %A[hi], r1\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %C[a], %C[b]\n\t"
        "add %A[hi], r0\n\t"
        "adc %B[hi], r1\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %C[a], %D[b]\n\t"
        "add %B[hi], r0\n\t"
        "adc %C[hi], r1\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %D[a], %A[b]\n\t"
        "add %D[lo], r0\n\t"
        "adc %A[hi], r1\n\t"
        "adc %B[hi], %[z]\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %D[a], %B[b]\n\t"
        "add %A[hi], r0\n\t"
        "adc %B[hi], r1\n\t"
        "adc %C[hi], %[z]\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %D[a], %C[b]\n\t"
        "add %B[hi], r0\n\t"
        "adc %C[hi], r1\n\t"
        "adc %D[hi], %[z]\n\t"
        "mul %D[a], %D[b]\n\t"
        "add %C[hi], r0\n\t"
        "adc %D[hi], r1\n\t"
        "clr r1\n\t"
        : [lo] "=&r"(lo), [hi] "=&r"(hi), [z] "=&r"(z)
        : [a] "r"(a), [b] "r"(b)
        : "r0");
    *hi_out = hi;
    *lo_out = lo;
}
#else
static void pi8_umul32x32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}
#endif

int32_t pi8_requantize(int32_t x, int32_t multiplier, int8_t shift) {
    int8_t total = (int8_t)(31 - shift);
    if (total < 32 || multiplier <= 0) {   /* rare (multiplier >= 0.5): plain 64-bit path */
        int64_t r = (int64_t)x * (int64_t)multiplier + ((int64_t)1 << (total - 1));
        return (int32_t)(r >> total);
    }
    /* (x * m + 2^(t-1)) >> t, floor semantics. With P = |x| * m and r = 2^(t-1):
     * x >= 0: (P + r) >> t;  x < 0: -((P + r - 1) >> t). */
    uint8_t neg = x < 0;
    uint32_t ux = neg ? (uint32_t)0 - (uint32_t)x : (uint32_t)x;
    uint32_t hi, lo;
    pi8_umul32x32(ux, (uint32_t)multiplier, &hi, &lo);
    if (total == 32) {
        uint32_t add = neg ? 0x7FFFFFFFu : 0x80000000u;     /* r or r - 1, r = 2^31 */
        uint32_t lo2 = lo + add;
        hi += (lo2 < lo);
    } else {
        /* r = 2^(t-1) with t - 1 >= 32 sits in hi; r - 1 adds (2^(t-33) - 1) to hi plus
         * 0xFFFFFFFF to lo. */
        uint32_t r_hi = (uint32_t)1 << (total - 33);
        if (neg) {
            uint32_t lo2 = lo + 0xFFFFFFFFu;
            hi += (r_hi - 1) + (lo2 < lo);
        } else {
            hi += r_hi;
        }
        hi >>= (total - 32);
    }
    return neg ? -(int32_t)hi : (int32_t)hi;
}

#if defined(__AVR__) && !defined(PI8_PLAIN_C)
/* Inner product with MULS, unrolled twice: per element ld (2) + lpm (3) + muls (2) + sign
 * extension (3) + 32-bit add (4), plus the loop (3) per pair = 15.5 cycles. n in 1..255. */
static int32_t pi8_dot255(const int8_t *x, const int8_t *w_flash, uint8_t n, int32_t acc) {
    uint8_t a, b, s;
    if (n & 1) {
        acc += (int16_t)*x++ * (int16_t)(int8_t)pgm_read_byte(w_flash++);
    }
    n >>= 1;
    if (n == 0) {
        return acc;
    }
    __asm__ volatile(
        "1:\n\t"
        "ld   %[a], X+\n\t"
        "lpm  %[b], Z+\n\t"
        "muls %[a], %[b]\n\t"
        "mov  %[s], r1\n\t"
        "lsl  %[s]\n\t"
        "sbc  %[s], %[s]\n\t"
        "add  %A[acc], r0\n\t"
        "adc  %B[acc], r1\n\t"
        "adc  %C[acc], %[s]\n\t"
        "adc  %D[acc], %[s]\n\t"
        "ld   %[a], X+\n\t"
        "lpm  %[b], Z+\n\t"
        "muls %[a], %[b]\n\t"
        "mov  %[s], r1\n\t"
        "lsl  %[s]\n\t"
        "sbc  %[s], %[s]\n\t"
        "add  %A[acc], r0\n\t"
        "adc  %B[acc], r1\n\t"
        "adc  %C[acc], %[s]\n\t"
        "adc  %D[acc], %[s]\n\t"
        "dec  %[n]\n\t"
        "brne 1b\n\t"
        "clr  r1\n\t"
        : [acc] "+r"(acc), [a] "=&a"(a), [b] "=&a"(b), [s] "=&r"(s), [n] "+r"(n),
          "+x"(x), "+z"(w_flash)
        :
        : "r0", "memory");
    return acc;
}

int32_t pi8_dot(const int8_t *x, const int8_t *w_flash, uint16_t n) {
    int32_t acc = 0;
    while (n > 0) {
        uint8_t chunk = n > 255 ? 255 : (uint8_t)n;
        acc = pi8_dot255(x, w_flash, chunk, acc);
        x += chunk;
        w_flash += chunk;
        n -= chunk;
    }
    return acc;
}
#else
int32_t pi8_dot(const int8_t *x, const int8_t *w_flash, uint16_t n) {
    int32_t acc = 0;
    for (uint16_t i = 0; i < n; i++) {
        acc += (int16_t)x[i] * (int16_t)PI8_READ_I8(w_flash + i);
    }
    return acc;
}
#endif

void pi8_fully_connected(const int8_t *in, int8_t *out, uint16_t n_in, uint16_t n_out,
                         const int8_t *w_flash, const int32_t *bias_folded_flash,
                         const int32_t *mult_flash, const int8_t *shift_flash,
                         int16_t out_zp, int8_t act_min, int8_t act_max) {
    for (uint16_t o = 0; o < n_out; o++) {
        int32_t acc = pi8_dot(in, w_flash, n_in) + PI8_READ_I32(bias_folded_flash + o);
        w_flash += n_in;
        int32_t v = pi8_requantize(acc, PI8_READ_I32(mult_flash + o), PI8_READ_I8(shift_flash + o))
                    + out_zp;
        if (v < act_min) v = act_min;
        if (v > act_max) v = act_max;
        out[o] = (int8_t)v;
    }
}

void pi8_lut(const int8_t *in, int8_t *out, uint16_t n, const int8_t *table_flash) {
    for (uint16_t i = 0; i < n; i++) {
        out[i] = PI8_READ_I8(table_flash + (uint8_t)in[i]);
    }
}
