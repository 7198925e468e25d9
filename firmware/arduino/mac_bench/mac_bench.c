/*
 * mac_bench.c - cycles of SipHash-2-4 on the ATmega328P at 16 MHz, for the signed command frames'
 * MAC inputs (type | seq | body | key_id | counter): STOP 9 bytes, SET_PHASE 10, WHEEL_SPEED/DUTY/RESET
 * 13 bytes. Timer1 runs at the CPU clock (no prescaler) with its overflows counted, so it is a cycle
 * counter; each length is hashed MAC_BENCH_N times and the cycles of the loop (minus an empty loop's)
 * printed on UART0 as "mac len=<bytes> n=<N> cycles=<total>" lines, then "done". Run in simavr by
 * tests/firmware/test_avr_signing.py (whose bridge counts the cycles the same way the chip does).
 */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <stdio.h>
#include "siphash.h"

#define MAC_BENCH_N 16

static volatile uint16_t t1_overflows;
ISR(TIMER1_OVF_vect) { t1_overflows++; }

static uint32_t cycles_now(void)
{
    uint16_t hi, lo;
    uint8_t s = SREG;
    cli();
    lo = TCNT1;
    hi = t1_overflows;
    if ((TIFR1 & _BV(TOV1)) && lo < 0x8000)    /* an overflow not yet counted */
        hi++;
    SREG = s;
    return ((uint32_t)hi << 16) | lo;
}

static void uart_putc(char c)
{
    while (!(UCSR0A & _BV(UDRE0)))
        ;
    UDR0 = (uint8_t)c;
}

static void uart_puts(const char *s)
{
    while (*s)
        uart_putc(*s++);
}

int main(void)
{
    static const uint8_t key[SIPHASH_KEY_LEN] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const uint8_t lens[] = {9, 10, 13};
    uint8_t msg[16], tag[SIPHASH_TAG_LEN];
    char line[64];
    UBRR0 = 8;                                   /* 115200 baud at 16 MHz (U2X off) */
    UCSR0B = _BV(TXEN0);
    UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
    TCCR1A = 0;
    TCCR1B = _BV(CS10);                          /* clk/1: one count a cycle */
    TIMSK1 = _BV(TOIE1);
    sei();
    for (uint8_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(0x31 * i + 7);
    uint32_t t0 = cycles_now();
    for (uint8_t k = 0; k < MAC_BENCH_N; k++)
        msg[0] ^= tag[0];
    uint32_t empty = cycles_now() - t0;
    for (uint8_t j = 0; j < sizeof lens; j++) {
        t0 = cycles_now();
        for (uint8_t k = 0; k < MAC_BENCH_N; k++) {
            siphash24(key, msg, lens[j], tag);
            msg[0] ^= tag[0];                    /* each MAC depends on the last: nothing hoisted */
        }
        uint32_t total = cycles_now() - t0 - empty;
        snprintf(line, sizeof line, "mac len=%u n=%u cycles=%lu\n", lens[j], MAC_BENCH_N, (unsigned long)total);
        uart_puts(line);
    }
    uart_puts("done\n");
    for (;;)
        ;
}
