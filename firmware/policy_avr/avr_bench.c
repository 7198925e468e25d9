/* ATmega328P test-vector firmware for the int8 policy kernel (runs in simavr).
 * Runs pi8_model_invoke on every vector baked into flash (vectors.h, generated), prints
 * "V <index> <outputs as 2-digit hex>" and "C <cycles>" per vector over UART0, then "DONE",
 * and stops the CPU (simavr exits). Cycles are counted with Timer1 at prescaler 1. */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>
#include <stdint.h>

#include "model.h"
#include "policy_int8.h"
#include "vectors.h"

static volatile uint16_t timer1_overflows;
ISR(TIMER1_OVF_vect) { timer1_overflows++; }

static void uart_putc(char c) {
    while (!(UCSR0A & (1 << UDRE0))) {
    }
    UDR0 = c;
}
static void uart_puts(const char *s) {
    while (*s) uart_putc(*s++);
}
static void uart_hex8(uint8_t v) {
    static const char digits[] = "0123456789abcdef";
    uart_putc(digits[v >> 4]);
    uart_putc(digits[v & 15]);
}
static void uart_u32(uint32_t v) {
    char buf[11];
    uint8_t i = 0;
    do {
        buf[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i) uart_putc(buf[--i]);
}

int main(void) {
    static int8_t in[PI8_MODEL_INPUT_SIZE];
    static int8_t out[PI8_MODEL_OUTPUT_SIZE];
    UBRR0H = 0;
    UBRR0L = 0;
    UCSR0A = (1 << U2X0);
    UCSR0B = (1 << TXEN0);
    UCSR0C = (3 << UCSZ00);
    TIMSK1 = (1 << TOIE1);
    sei();
    {   /* profile: cycles of one requantization and one 100-element inner product */
        static int8_t x100[100];
        volatile int32_t sink;
        TCNT1 = 0;
        TCCR1B = (1 << CS10);
        uint16_t t0 = TCNT1;
        sink = pi8_requantize((int32_t)-123456, 1518500250L, -8);
        uint16_t t1 = TCNT1;
        sink = pi8_dot(x100, (const int8_t *)pi8_vectors, 100);
        uint16_t t2 = TCNT1;
        TCCR1B = 0;
        (void)sink;
        uart_puts("P ");
        uart_u32(t1 - t0);
        uart_putc(' ');
        uart_u32(t2 - t1);
        uart_putc('\n');
    }
    for (uint16_t v = 0; v < PI8_N_VECTORS; v++) {
        for (uint16_t i = 0; i < PI8_MODEL_INPUT_SIZE; i++) {
            in[i] = (int8_t)pgm_read_byte(&pi8_vectors[v][i]);
        }
        timer1_overflows = 0;
        TCNT1 = 0;
        TCCR1B = (1 << CS10);
        pi8_model_invoke(in, out);
        uint16_t ticks = TCNT1;           /* read while running (simavr updates it lazily) */
        TCCR1B = 0;
        uint32_t cycles = ((uint32_t)timer1_overflows << 16) | ticks;
        if ((TIFR1 & (1 << TOV1)) && ticks < 0x8000) cycles += 65536UL;  /* unserviced overflow */
        uart_putc('V');
        uart_putc(' ');
        uart_u32(v);
        uart_putc(' ');
        for (uint16_t i = 0; i < PI8_MODEL_OUTPUT_SIZE; i++) uart_hex8((uint8_t)out[i]);
        uart_puts("\nC ");
        uart_u32(cycles);
        uart_putc('\n');
    }
    uart_puts("DONE\n");
    cli();
    sleep_enable();
    sleep_cpu();
    return 0;
}
