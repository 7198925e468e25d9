/*
 * avr_bridge - run an AVR firmware ELF in libsimavr with its UART on a pseudo-terminal,
 * simulated time advanced in lockstep with a harness, and the robot's peripherals emulated.
 *
 *   avr_bridge -m atmega328p|atmega32u4 [-f HZ] [-u UART] [--free-run SPEED] [--drop-unread BYTES] firmware.elf
 *
 * --drop-unread BYTES (a port a user opens and closes at will, like a USB serial adapter's): output is
 * never waited for; when more than BYTES (1..4000) wait unread in the pty, they are discarded (counted
 * as tx_flushed) so a client that opens the port later reads current data, not a stale backlog.
 * The environment variable BRIDGE_DROP_UNREAD=BYTES does the same.
 *
 * stdout (first lines):   "pty <slave path>"  then  "ready mcu=<mcu> freq=<hz> uart=<n> board=<id>"
 * stdin: one command per line, each answered by exactly one line on stdout:
 *
 *   run T_US RX_BYTES ENC_L ENC_R
 *       Wait until RX_BYTES bytes in total have arrived from the host on the pty (-1: take
 *       what is there), feed them to the UART, then simulate until simulated time T_US.
 *       The wheel encoders move to counts ENC_L / ENC_R (cumulative) with their quadrature
 *       edges spread evenly over the window (edge k of n at (k + 1/2) / n of it). All UART output is written to the pty before
 *       the answer:
 *       "ok T_US TX_BYTES OCR_L OCR_R TOP DIR_L DIR_R RESETS"
 *       (TX_BYTES: total bytes written to the pty so far; OCR_x: Timer1 compare value driving
 *       each motor's PWM pin, 0 when the pin is disconnected; TOP: ICR1 (fast PWM: duty =
 *       OCR_x / (TOP + 1)); DIR_x: direction pin, 1 = reverse)
 *   imu AX AY AZ GX GY GZ TEMP    raw MPU-6050 output registers (int16, chip axes) -> "ok"
 *   imu_present 0|1               the IMU stops / starts answering on the bus     -> "ok"
 *   altimu AX AY AZ GX GY GZ MX MY MZ P T
 *                                 raw AltIMU-10 v4 outputs: LSM303D accel and mag, L3GD20H gyro
 *                                 (int16, chip axes), LPS25H pressure (24-bit, 4096 LSB/hPa) and
 *                                 temperature (int16)                              -> "ok"
 *   altimu_present DEV 0|1        DEV = lsm303d | l3gd20h | lps25h stops / starts answering -> "ok"
 *   stats                         "stats key=value ..."
 *   quit                          "bye", then exit
 * Errors are answered "err <reason>"; the bridge keeps running.
 *
 * Why not simavr's uart_pty part: it drops output bytes when the reader is slow and runs
 * free of any outside clock. Here the UART input honours the UART's XON/XOFF irqs
 * (simavr's receive FIFO), and output is buffered, then written to the pty; when the
 * reader does not keep up the simulation waits (back-pressure) instead of dropping.
 *
 * Peripherals (pin numbers from firmware/arduino/robot_link/pinmap.h, shared with the sketch):
 *   - IMU: an InvenSense MPU-6050 I2C slave at 0x68 (WHO_AM_I 0x75 = 0x68, PWR_MGMT_1 0x6B
 *     resets to SLEEP; the output registers 0x3B..0x48 hold the values the harness set,
 *     frozen while the chip sleeps);
 *   - AltIMU-10 v4 (the leveler build's sensors), three ST I2C slaves, register by register:
 *     LSM303D at 0x1D (WHO_AM_I 0x0F = 0x49; accel outputs 0x28..0x2D latched while CTRL1's data rate
 *     is not power-down, mag outputs 0x08..0x0D while CTRL7's MD bits are 00), L3GD20H at 0x6B (0x0F =
 *     0xD7; outputs 0x28..0x2D while CTRL1's PD bit is set), LPS25H at 0x5D (0x0F = 0xBD; pressure
 *     0x28..0x2A and temperature 0x2B..0x2C while CTRL_REG1's PD bit is set). A sub-address with its top
 *     bit set auto-increments through a burst, as on the chips; outputs little-endian;
 *   - encoders: channel B on its input pin and A^B on the interrupt pin (thesis 4.3.1);
 *   - motors: Timer1 OCR1A/OCR1B/ICR1/TCCR1A and the direction pins are read back.
 *
 * libsimavr's default sleep callback paces sleeping firmware to the wall clock; it is
 * replaced by a no-op so simulated time runs as fast as the host allows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sim_avr.h"
#include "sim_elf.h"
#include "sim_irq.h"
#include "sim_time.h"
#include "sim_cycle_timers.h"
#include "avr_uart.h"
#include "avr_twi.h"
#include "avr_ioport.h"
#include "avr_extint.h"

#include "pinmap.h"

#define OUT_CAP (64 * 1024)
/* output buffered before the simulation waits for the reader (BRIDGE_OUT_CAP, <= OUT_CAP / 2) */
static size_t out_limit = OUT_CAP / 2;
#define IN_CAP (16 * 1024)
#define RX_WAIT_TIMEOUT_MS 5000
/* how long the simulation waits for a reader of a full pty before it drops its output (BRIDGE_TX_BLOCK_MS) */
static long tx_block_timeout_ms = 5000;

static avr_t *avr;
static pinmap_t pm;

/* ------------------------------------------------------------------ pty + UART */
static int pty_master = -1, pty_slave = -1;
static char uart_name = '0';

static uint8_t out_buf[OUT_CAP];
static size_t out_head, out_len;            /* ring buffer */
static uint8_t in_buf[IN_CAP];
static size_t in_head, in_len;
static uint64_t rx_total;                   /* bytes read from the pty (host -> AVR) */
static uint64_t tx_total;                   /* bytes written to the pty (AVR -> host) */
static uint64_t tx_dropped;                 /* AVR output dropped: reader gone for > 5 s */
static uint64_t uart_fed;                   /* bytes handed to the simulated UART */
static uint64_t backpressure_waits;
static uint64_t tx_flushed;                 /* unread output discarded (--drop-unread) */
static int drop_unread_limit;               /* 0: back-pressure (lockstep); > 0: --drop-unread BYTES */
static int uart_xoff;
static avr_irq_t *uart_in_irq;

static void die(const char *msg)
{
    fprintf(stderr, "avr_bridge: %s\n", msg);
    exit(2);
}

static void uart_out_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)param;
    if (out_len == OUT_CAP) {               /* cannot happen with back-pressure; keep the newest */
        out_head = (out_head + 1) % OUT_CAP;
        out_len--;
        tx_dropped++;
    }
    out_buf[(out_head + out_len) % OUT_CAP] = (uint8_t)value;
    out_len++;
}

static void uart_xoff_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)param;
    uart_xoff = value ? 1 : 0;
}

static void uart_xon_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)param;
    if (value)
        uart_xoff = 0;
}

/* Write buffered output to the pty. block: wait (bounded) until everything is written. */
static void flush_output(int block)
{
    int waited_ms = 0;
    if (drop_unread_limit > 0) {
        int queued = 0;
        block = 0;
        if (out_len > 0 && ioctl(pty_slave, FIONREAD, &queued) == 0 && queued > drop_unread_limit) {
            tcflush(pty_slave, TCIFLUSH);       /* nobody reads: the oldest output goes, as on a real port */
            tx_flushed += (uint64_t)queued;
        }
    }
    while (out_len > 0) {
        size_t chunk = out_len;
        if (out_head + chunk > OUT_CAP)
            chunk = OUT_CAP - out_head;
        ssize_t n = write(pty_master, out_buf + out_head, chunk);
        if (n > 0) {
            out_head = (out_head + (size_t)n) % OUT_CAP;
            out_len -= (size_t)n;
            tx_total += (uint64_t)n;
            waited_ms = 0;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            tx_dropped += out_len;              /* pty broken: nothing can be delivered */
            out_len = 0;
            return;
        }
        if (!block)
            return;
        if (waited_ms >= tx_block_timeout_ms) {
            tx_dropped += out_len;
            out_len = 0;
            return;
        }
        struct pollfd p = {pty_master, POLLOUT, 0};
        backpressure_waits++;
        poll(&p, 1, 10);
        waited_ms += 10;
    }
}

/* Read what the host wrote (non-blocking). Returns bytes read. */
static size_t read_input(void)
{
    size_t got = 0;
    while (in_len < IN_CAP) {
        size_t tail = (in_head + in_len) % IN_CAP;
        size_t room = IN_CAP - in_len;
        if (tail + room > IN_CAP)
            room = IN_CAP - tail;
        ssize_t n = read(pty_master, in_buf + tail, room);
        if (n <= 0)
            break;
        in_len += (size_t)n;
        rx_total += (uint64_t)n;
        got += (size_t)n;
    }
    return got;
}

/* Hand queued host bytes to the simulated UART while its receive FIFO has room. */
static void feed_uart(void)
{
    while (in_len > 0 && !uart_xoff) {
        uint8_t b = in_buf[in_head];
        in_head = (in_head + 1) % IN_CAP;
        in_len--;
        uart_fed++;
        avr_raise_irq(uart_in_irq, b);
    }
}

static void open_pty(void)
{
    pty_master = posix_openpt(O_RDWR | O_NOCTTY);
    if (pty_master < 0 || grantpt(pty_master) < 0 || unlockpt(pty_master) < 0)
        die("cannot allocate a pseudo-terminal");
    const char *slave = ptsname(pty_master);
    if (!slave)
        die("ptsname failed");
    /* Keep one slave descriptor open: the port stays present while hosts come and go, and
     * it lets us put the line in raw mode (no echo, no CR/LF translation). */
    pty_slave = open(slave, O_RDWR | O_NOCTTY);
    if (pty_slave < 0)
        die("cannot open the pty slave");
    struct termios t;
    tcgetattr(pty_slave, &t);
    cfmakeraw(&t);
    tcsetattr(pty_slave, TCSANOW, &t);
    fcntl(pty_master, F_SETFL, fcntl(pty_master, F_GETFL) | O_NONBLOCK);
    printf("pty %s\n", slave);
}

/* ------------------------------------------------------------------ MPU-6050 on TWI */
#define MPU_ADDR 0x68
#define MPU_REG_OUT_FIRST 0x3B
#define MPU_REG_PWR_MGMT_1 0x6B
#define MPU_REG_WHO_AM_I 0x75
#define MPU_SLEEP_BIT 0x40
#define MPU_RESET_BIT 0x80

static avr_irq_t *twi_irq;          /* our two irqs: [TWI_IRQ_INPUT] to the AVR, [TWI_IRQ_OUTPUT] from it */
static uint8_t mpu_regs[128];
static uint8_t mpu_out_latest[14];  /* what the harness set last (big-endian, register order) */
static int mpu_present = 1;
static int mpu_selected, mpu_index;
static uint8_t mpu_ptr;
static uint64_t mpu_burst_reads, mpu_bytes_read, mpu_writes;

static void mpu_reset_regs(void)
{
    memset(mpu_regs, 0, sizeof mpu_regs);
    mpu_regs[MPU_REG_PWR_MGMT_1] = MPU_SLEEP_BIT;
    mpu_regs[MPU_REG_WHO_AM_I] = MPU_ADDR;
}

static void mpu_latch_outputs(void)
{
    if (!(mpu_regs[MPU_REG_PWR_MGMT_1] & MPU_SLEEP_BIT))
        memcpy(mpu_regs + MPU_REG_OUT_FIRST, mpu_out_latest, sizeof mpu_out_latest);
}

static void mpu_write_reg(uint8_t reg, uint8_t v)
{
    mpu_writes++;
    if (reg == MPU_REG_PWR_MGMT_1 && (v & MPU_RESET_BIT)) {
        mpu_reset_regs();
        return;
    }
    if (reg == MPU_REG_WHO_AM_I)
        return;                         /* read-only */
    mpu_regs[reg & 0x7F] = v;
    if (reg == MPU_REG_PWR_MGMT_1)
        mpu_latch_outputs();
}

/* ------------------------------------------------------------------ AltIMU-10 v4 on TWI */
#define ST_WHO_AM_I 0x0F
#define ST_AUTO_INC 0x80
enum { ST_LSM303D = 0, ST_L3GD20H, ST_LPS25H, ST_DEVICES };

typedef struct st_dev_t {
    const char *name;
    uint8_t addr, whoami;
    uint8_t ctrl1_reset;             /* CTRL1 (0x20) after power-up */
    uint8_t regs[128];
    uint8_t out_latest[2][6];        /* what the harness set: [0] at 0x28.., [1] (LSM303D mag) at 0x08.. */
    int present;
    int index;                       /* bytes of the current transfer */
    int autoinc;
    uint8_t ptr;
    uint64_t bytes_read, writes, burst_reads;
} st_dev_t;

static st_dev_t st_devs[ST_DEVICES] = {
    {.name = "lsm303d", .addr = 0x1D, .whoami = 0x49, .ctrl1_reset = 0x07, .present = 1},
    {.name = "l3gd20h", .addr = 0x6B, .whoami = 0xD7, .ctrl1_reset = 0x07, .present = 1},
    {.name = "lps25h", .addr = 0x5D, .whoami = 0xBD, .ctrl1_reset = 0x00, .present = 1},
};
static st_dev_t *st_selected;
static uint8_t st_selected_addr;

static void st_reset_regs(st_dev_t *d)
{
    memset(d->regs, 0, sizeof d->regs);
    d->regs[ST_WHO_AM_I] = d->whoami;
    d->regs[0x20] = d->ctrl1_reset;
    if (d == &st_devs[ST_LSM303D])
        d->regs[0x26] = 0x02;                    /* CTRL7: magnetometer in power-down */
}

/* Copy the harness's values into the output registers of the parts that are converting. */
static void st_latch_outputs(st_dev_t *d)
{
    int idx = (int)(d - st_devs);
    if (idx == ST_LSM303D) {
        if (d->regs[0x20] & 0xF0)                /* CTRL1 AODR != power-down */
            memcpy(d->regs + 0x28, d->out_latest[0], 6);
        if ((d->regs[0x26] & 0x03) == 0)          /* CTRL7 MD = continuous */
            memcpy(d->regs + 0x08, d->out_latest[1], 6);
    } else if (idx == ST_L3GD20H) {
        if (d->regs[0x20] & 0x08)                 /* CTRL1 PD: normal mode */
            memcpy(d->regs + 0x28, d->out_latest[0], 6);
    } else if (d->regs[0x20] & 0x80) {            /* LPS25H CTRL_REG1 PD: active */
        memcpy(d->regs + 0x28, d->out_latest[0], 5);
    }
}

static void st_write_reg(st_dev_t *d, uint8_t reg, uint8_t v)
{
    d->writes++;
    reg &= 0x7F;
    if (reg == ST_WHO_AM_I || (reg >= 0x28 && reg <= 0x2D) || (d == &st_devs[ST_LSM303D] && reg >= 0x08 && reg <= 0x0D))
        return;                                   /* read-only */
    d->regs[reg] = v;
    st_latch_outputs(d);
}

static st_dev_t *st_find(uint8_t addr7)
{
    for (int i = 0; i < ST_DEVICES; i++)
        if (st_devs[i].addr == addr7 && st_devs[i].present)
            return &st_devs[i];
    return NULL;
}

/* One TWI message for the selected ST device (after its address was acknowledged). */
static void st_twi(st_dev_t *d, avr_twi_msg_irq_t v)
{
    if (v.u.twi.msg & TWI_COND_WRITE) {
        avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_ACK, st_selected_addr, 1));
        if (d->index == 0) {
            d->ptr = v.u.twi.data & 0x7F;
            d->autoinc = (v.u.twi.data & ST_AUTO_INC) != 0;
        } else {
            st_write_reg(d, d->ptr, v.u.twi.data);
            if (d->autoinc)
                d->ptr = (d->ptr + 1) & 0x7F;
        }
        d->index++;
    }
    if (v.u.twi.msg & TWI_COND_READ) {
        uint8_t data = d->regs[d->ptr];
        if (d->autoinc)
            d->ptr = (d->ptr + 1) & 0x7F;
        d->bytes_read++;
        avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_READ, st_selected_addr, data));
    }
}

static void cmd_altimu(const char *args)
{
    long v[11];
    if (sscanf(args, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7], &v[8], &v[9], &v[10]) != 11) {
        printf("err usage: altimu AX AY AZ GX GY GZ MX MY MZ P T\n");
        return;
    }
    for (int i = 0; i < 11; i++) {
        long lo = i == 9 ? -8388608L : -32768L, hi = i == 9 ? 8388607L : 32767L;
        if (v[i] < lo || v[i] > hi) {
            printf("err altimu value %ld out of range\n", v[i]);
            return;
        }
    }
    for (int i = 0; i < 3; i++) {
        st_devs[ST_LSM303D].out_latest[0][2 * i] = (uint8_t)v[i];
        st_devs[ST_LSM303D].out_latest[0][2 * i + 1] = (uint8_t)((uint16_t)v[i] >> 8);
        st_devs[ST_L3GD20H].out_latest[0][2 * i] = (uint8_t)v[3 + i];
        st_devs[ST_L3GD20H].out_latest[0][2 * i + 1] = (uint8_t)((uint16_t)v[3 + i] >> 8);
        st_devs[ST_LSM303D].out_latest[1][2 * i] = (uint8_t)v[6 + i];
        st_devs[ST_LSM303D].out_latest[1][2 * i + 1] = (uint8_t)((uint16_t)v[6 + i] >> 8);
    }
    uint32_t p = (uint32_t)v[9];
    st_devs[ST_LPS25H].out_latest[0][0] = (uint8_t)p;
    st_devs[ST_LPS25H].out_latest[0][1] = (uint8_t)(p >> 8);
    st_devs[ST_LPS25H].out_latest[0][2] = (uint8_t)(p >> 16);
    st_devs[ST_LPS25H].out_latest[0][3] = (uint8_t)v[10];
    st_devs[ST_LPS25H].out_latest[0][4] = (uint8_t)((uint16_t)v[10] >> 8);
    for (int i = 0; i < ST_DEVICES; i++)
        st_latch_outputs(&st_devs[i]);
    printf("ok\n");
}

static void cmd_altimu_present(const char *args)
{
    char name[16];
    int on;
    if (sscanf(args, "%15s %d", name, &on) != 2) {
        printf("err usage: altimu_present lsm303d|l3gd20h|lps25h 0|1\n");
        return;
    }
    for (int i = 0; i < ST_DEVICES; i++)
        if (!strcmp(name, st_devs[i].name)) {
            st_devs[i].present = on != 0;
            printf("ok\n");
            return;
        }
    printf("err unknown device '%s'\n", name);
}

static void twi_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)param;
    avr_twi_msg_irq_t v;
    v.u.v = value;
    if (v.u.twi.msg & TWI_COND_STOP) {
        mpu_selected = 0;
        st_selected = NULL;
    }
    if (v.u.twi.msg & TWI_COND_START) {
        mpu_selected = 0;
        mpu_index = 0;
        st_selected = NULL;
        st_dev_t *d = st_find(v.u.twi.addr >> 1);
        if (d) {
            st_selected = d;
            st_selected_addr = v.u.twi.addr;
            if (v.u.twi.addr & 1) {
                if (d->autoinc)
                    d->burst_reads++;
            } else {
                d->index = 0;
            }
            avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_ACK, st_selected_addr, 1));
        } else if (mpu_present && (v.u.twi.addr >> 1) == MPU_ADDR) {
            mpu_selected = v.u.twi.addr;
            if (v.u.twi.addr & 1) {
                if (mpu_ptr == MPU_REG_OUT_FIRST)
                    mpu_burst_reads++;
            }
            avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_ACK, mpu_selected, 1));
        }
    }
    if (st_selected) {
        st_twi(st_selected, v);
        return;
    }
    if (!mpu_selected)
        return;
    if (v.u.twi.msg & TWI_COND_WRITE) {
        avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_ACK, mpu_selected, 1));
        if (mpu_index == 0)
            mpu_ptr = v.u.twi.data & 0x7F;
        else
            mpu_write_reg(mpu_ptr++, v.u.twi.data);
        mpu_ptr &= 0x7F;
        mpu_index++;
    }
    if (v.u.twi.msg & TWI_COND_READ) {
        uint8_t data = mpu_regs[mpu_ptr];
        mpu_ptr = (mpu_ptr + 1) & 0x7F;
        mpu_bytes_read++;
        avr_raise_irq(twi_irq + TWI_IRQ_INPUT, avr_twi_irq_msg(TWI_COND_READ, mpu_selected, data));
    }
}

static void mpu_init(void)
{
    static const char *names[2] = {"8>mpu6050.out", "32<mpu6050.in"};
    twi_irq = avr_alloc_irq(&avr->irq_pool, 0, 2, names);
    avr_irq_register_notify(twi_irq + TWI_IRQ_OUTPUT, twi_hook, NULL);
    avr_connect_irq(twi_irq + TWI_IRQ_INPUT, avr_io_getirq(avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_INPUT));
    avr_connect_irq(avr_io_getirq(avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_OUTPUT), twi_irq + TWI_IRQ_OUTPUT);
    mpu_reset_regs();
    for (int i = 0; i < ST_DEVICES; i++)
        st_reset_regs(&st_devs[i]);
}

/* ------------------------------------------------------------------ encoders */
typedef struct wheel_t {
    char xor_port, b_port;
    int xor_bit, b_bit;
    avr_irq_t *xor_irq, *b_irq;
    int64_t count;                  /* current quadrature count */
    int64_t target;                 /* count at the end of the window */
    int64_t start_count;
    uint64_t n_edges;               /* edges in this window */
    uint64_t done;                  /* edges emitted in this window */
} wheel_t;

static wheel_t wheels[2];
static avr_cycle_count_t win_start, win_end;

/* Quadrature state of a count: A leads B going forward (AB: 00 -> 10 -> 11 -> 01). */
static int quad_a(int64_t c) { return (int)((((c % 4) + 4 + 1) % 4) >> 1); }
static int quad_b(int64_t c) { return (int)((((c % 4) + 4) % 4) >> 1); }

static void wheel_drive_pins(wheel_t *w, int force)
{
    int a = quad_a(w->count), b = quad_b(w->count);
    if (force) {                    /* after a reset the port registers were cleared */
        avr_raise_irq(w->b_irq, !b);
        avr_raise_irq(w->xor_irq, !(a ^ b));
    }
    avr_raise_irq(w->b_irq, b);
    avr_raise_irq(w->xor_irq, a ^ b);
}

static avr_cycle_count_t wheel_next_edge(const wheel_t *w)
{
    if (w->done >= w->n_edges)
        return 0;
    /* edge k of n at (k + 1/2) / n of the window: all strictly inside it */
    return win_start + (win_end - win_start) * (2 * w->done + 1) / (2 * w->n_edges);
}

static void wheel_init(wheel_t *w, char xport, int xbit, char bport, int bbit)
{
    memset(w, 0, sizeof *w);
    w->xor_port = xport; w->xor_bit = xbit; w->b_port = bport; w->b_bit = bbit;
    w->xor_irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(xport), xbit);
    w->b_irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(bport), bbit);
    if (!w->xor_irq || !w->b_irq)
        die("encoder pin not found on this MCU");
    wheel_drive_pins(w, 1);
}

/* One cycle timer serves the window: encoder edges due now, and the end of the window
 * (so a sleeping CPU does not skip past it). Returns the next cycle it must fire at. */
static avr_cycle_count_t window_timer(struct avr_t *a, avr_cycle_count_t when, void *param)
{
    (void)a; (void)param;
    avr_cycle_count_t next = win_end;
    for (int i = 0; i < 2; i++) {
        wheel_t *w = &wheels[i];
        avr_cycle_count_t e;
        while ((e = wheel_next_edge(w)) != 0 && e <= when) {
            w->done++;
            w->count += (w->target > w->start_count) ? 1 : -1;
            wheel_drive_pins(w, 0);
        }
        if (e != 0 && e < next)
            next = e;
    }
    return next > when ? next : 0;
}

static void arm_window_timer(void)
{
    avr_cycle_timer_cancel(avr, window_timer, NULL);
    avr_cycle_count_t next = win_end;
    for (int i = 0; i < 2; i++) {
        avr_cycle_count_t e = wheel_next_edge(&wheels[i]);
        if (e != 0 && e < next)
            next = e;
    }
    if (next > avr->cycle)
        avr_cycle_timer_register(avr, next - avr->cycle, window_timer, NULL);
    else
        window_timer(avr, avr->cycle, NULL);
}

/* ------------------------------------------------------------------ reset detection */
static void (*core_reset)(struct avr_t *);
static int reset_seen;
static uint64_t resets;

static void bridge_reset(struct avr_t *a)
{
    if (core_reset)
        core_reset(a);
    reset_seen = 1;
}

/* libsimavr logs to stdout; stdout is our control channel, so its messages go to stderr
 * (errors and warnings only; BRIDGE_VERBOSE=1 shows all). */
static int log_level_max = LOG_WARNING;
static void stderr_logger(struct avr_t *a, const int level, const char *format, va_list ap)
{
    (void)a;
    if (level <= log_level_max)
        vfprintf(stderr, format, ap);
}

static void no_wall_clock_sleep(struct avr_t *a, avr_cycle_count_t how_long)
{
    (void)a; (void)how_long;      /* simulated time only: never wait on the wall clock */
}

/* ------------------------------------------------------------------ motors readback */
static uint8_t reg8(int addr) { return avr->data[addr]; }
static uint16_t reg16(int addr_low) { return (uint16_t)(avr->data[addr_low] | (avr->data[addr_low + 1] << 8)); }

static unsigned ocr_of(char unit)
{
    uint8_t tccr1a = reg8(PINMAP_TCCR1A_ADDR);
    if (unit == 'A')
        return (tccr1a & (1 << PINMAP_COM1A1_BIT)) ? reg16(PINMAP_OCR1AL_ADDR) : 0;
    return (tccr1a & (1 << PINMAP_COM1B1_BIT)) ? reg16(PINMAP_OCR1BL_ADDR) : 0;
}

static int pin_out(char port, int bit)
{
    int addr = PINMAP_PORT_ADDR(port);
    if (!(reg8(addr - 1) & (1 << bit)))      /* DDR: input -> not driven */
        return 0;
    return (reg8(addr) >> bit) & 1;
}

/* ------------------------------------------------------------------ running */
static double wall_run_s;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* libsimavr polls a low-level-triggered INTn pin on every cycle while it is low (the mode
 * after reset), and keeps polling after the firmware has switched the pin to edge mode:
 * simulation slows 10x while an encoder pin rests low. The firmware never uses level
 * mode, so that polling is switched off (level mode then acts like falling edge). */
static void no_level_polling(void)
{
    for (uint8_t i = 0; i < 8; i++)
        if (avr_extint_is_strict_lvl_trig(avr, i) > 0)
            avr_extint_set_strict_lvl_trig(avr, i, 0);
}

static void after_reset(void)
{
    reset_seen = 0;
    resets++;
    uart_xoff = 0;
    no_level_polling();
    for (int i = 0; i < 2; i++)
        wheel_drive_pins(&wheels[i], 1);
    arm_window_timer();
}

/* Simulate until cycle `end`. Returns 0, or -1 when the core stopped (crash, sleep with
 * interrupts off). */
static int run_until(avr_cycle_count_t end)
{
    double t0 = wall_now();
    int rc = 0;
    arm_window_timer();
    while (avr->cycle < end) {
        int state = avr_run(avr);
        if (reset_seen)
            after_reset();
        if (state == cpu_Done || state == cpu_Crashed || state == cpu_Stopped) {
            rc = -1;
            break;
        }
        if (in_len > 0 && !uart_xoff)
            feed_uart();
        if (out_len >= out_limit)
            flush_output(1);            /* back-pressure: the simulation waits for the reader */
        else if (out_len >= 256 || out_len >= out_limit / 2)
            flush_output(0);
    }
    flush_output(1);
    wall_run_s += wall_now() - t0;
    return rc;
}

static double wall_rx_wait_s;

static int wait_for_input(int64_t expected)
{
    int waited = 0;
    double t0 = wall_now();
    read_input();
    while (expected >= 0 && (int64_t)rx_total < expected) {
        if (waited >= RX_WAIT_TIMEOUT_MS)
            return -1;
        struct pollfd p = {pty_master, POLLIN, 0};
        poll(&p, 1, 5);
        waited += 5;
        read_input();
    }
    wall_rx_wait_s += wall_now() - t0;
    return 0;
}

static void cmd_run(const char *args)
{
    long long t_us, rx_expected, enc[2];
    if (sscanf(args, "%lld %lld %lld %lld", &t_us, &rx_expected, &enc[0], &enc[1]) != 4) {
        printf("err usage: run T_US RX_BYTES ENC_L ENC_R\n");
        return;
    }
    avr_cycle_count_t end = avr_usec_to_cycles(avr, (uint64_t)t_us);
    if (t_us < 0 || end < avr->cycle) {
        printf("err time %lld us is in the past (now %llu us)\n", t_us,
               (unsigned long long)avr_cycles_to_usec(avr, avr->cycle));
        return;
    }
    if (wait_for_input(rx_expected) < 0) {
        printf("err rx_timeout have=%llu want=%lld\n", (unsigned long long)rx_total, rx_expected);
        return;
    }
    feed_uart();
    win_start = avr->cycle;
    win_end = end;
    for (int i = 0; i < 2; i++) {
        wheel_t *w = &wheels[i];
        w->start_count = w->count;
        w->target = enc[i];
        w->n_edges = (uint64_t)llabs(enc[i] - w->count);
        w->done = 0;
        if (end == win_start) {             /* zero-length window: jump */
            w->count = w->target;
            w->n_edges = 0;
            wheel_drive_pins(w, 0);
        }
    }
    if (run_until(end) < 0) {
        printf("err avr stopped (state %d) at %llu us\n", avr->state,
               (unsigned long long)avr_cycles_to_usec(avr, avr->cycle));
        return;
    }
    printf("ok %llu %llu %u %u %u %d %d %llu\n",
           (unsigned long long)avr_cycles_to_usec(avr, avr->cycle), (unsigned long long)tx_total,
           ocr_of(pm.left_pwm_ocr), ocr_of(pm.right_pwm_ocr), (unsigned)reg16(PINMAP_ICR1L_ADDR),
           pin_out(pm.left_dir_port, pm.left_dir_bit), pin_out(pm.right_dir_port, pm.right_dir_bit),
           (unsigned long long)resets);
}

static void cmd_imu(const char *args)
{
    int v[7];
    if (sscanf(args, "%d %d %d %d %d %d %d", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) != 7) {
        printf("err usage: imu AX AY AZ GX GY GZ TEMP\n");
        return;
    }
    /* register order: ACCEL_X/Y/Z, TEMP, GYRO_X/Y/Z, big-endian */
    int order[7] = {v[0], v[1], v[2], v[6], v[3], v[4], v[5]};
    for (int i = 0; i < 7; i++) {
        int x = order[i];
        if (x < -32768 || x > 32767) {
            printf("err imu value %d out of int16 range\n", x);
            return;
        }
        mpu_out_latest[2 * i] = (uint8_t)((uint16_t)x >> 8);
        mpu_out_latest[2 * i + 1] = (uint8_t)x;
    }
    mpu_latch_outputs();
    printf("ok\n");
}

static void cmd_stats(void)
{
    printf("stats now_us=%llu cycles=%llu rx_bytes=%llu tx_bytes=%llu tx_dropped=%llu uart_fed=%llu "
           "backpressure_waits=%llu tx_flushed=%llu resets=%llu imu_burst_reads=%llu imu_bytes_read=%llu imu_writes=%llu "
           "imu_pwr_mgmt_1=%u imu_gyro_config=%u imu_accel_config=%u enc_left=%lld enc_right=%lld "
           "wall_run_s=%.6f wall_rx_wait_s=%.6f ",
           (unsigned long long)avr_cycles_to_usec(avr, avr->cycle), (unsigned long long)avr->cycle,
           (unsigned long long)rx_total, (unsigned long long)tx_total, (unsigned long long)tx_dropped,
           (unsigned long long)uart_fed, (unsigned long long)backpressure_waits, (unsigned long long)tx_flushed,
           (unsigned long long)resets, (unsigned long long)mpu_burst_reads,
           (unsigned long long)mpu_bytes_read, (unsigned long long)mpu_writes,
           mpu_regs[MPU_REG_PWR_MGMT_1], mpu_regs[0x1B], mpu_regs[0x1C],
           (long long)wheels[0].count, (long long)wheels[1].count, wall_run_s, wall_rx_wait_s);
    for (int i = 0; i < ST_DEVICES; i++) {
        const st_dev_t *d = &st_devs[i];
        printf("%s_ctrl1=%u %s_bytes_read=%llu %s_burst_reads=%llu %s_writes=%llu ", d->name, d->regs[0x20],
               d->name, (unsigned long long)d->bytes_read, d->name, (unsigned long long)d->burst_reads,
               d->name, (unsigned long long)d->writes);
    }
    printf("lsm303d_ctrl2=%u lsm303d_ctrl7=%u l3gd20h_ctrl4=%u\n", st_devs[ST_LSM303D].regs[0x21],
           st_devs[ST_LSM303D].regs[0x26], st_devs[ST_L3GD20H].regs[0x23]);
}

/* Free-running mode (no harness): simulate in 1 ms steps paced to SPEED x wall clock. */
static void free_run(double speed)
{
    double t0 = wall_now();
    uint64_t t_us = 0;
    for (;;) {
        read_input();
        t_us += 1000;
        win_start = avr->cycle;
        win_end = avr_usec_to_cycles(avr, t_us);
        if (run_until(win_end) < 0)
            die("avr stopped");
        double ahead = t_us * 1e-6 / speed - (wall_now() - t0);
        if (ahead > 0) {
            struct pollfd p = {pty_master, POLLIN, 0};
            poll(&p, 1, (int)(ahead * 1000));
        }
    }
}

int main(int argc, char **argv)
{
    const char *mcu = NULL;
    unsigned long freq = 16000000UL;
    double free_speed = 0;
    int uart_opt = -1;
    static struct option longopts[] = {
        {"mcu", required_argument, 0, 'm'}, {"freq", required_argument, 0, 'f'},
        {"uart", required_argument, 0, 'u'}, {"free-run", required_argument, 0, 'r'},
        {"drop-unread", required_argument, 0, 'd'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:f:u:", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': mcu = optarg; break;
        case 'f': freq = strtoul(optarg, NULL, 0); break;
        case 'u': uart_opt = atoi(optarg); break;
        case 'r': free_speed = atof(optarg); break;
        case 'd':
            drop_unread_limit = atoi(optarg);
            if (drop_unread_limit < 1 || drop_unread_limit > 4000)
                die("--drop-unread takes 1..4000 bytes (what a pty holds unread: 4095)");
            break;
        default:
            fprintf(stderr, "usage: %s -m atmega328p|atmega32u4 [-f HZ] [-u UART] [--free-run SPEED] [--drop-unread BYTES] firmware.elf\n", argv[0]);
            return 2;
        }
    }
    if (!mcu || optind != argc - 1) {
        fprintf(stderr, "usage: %s -m atmega328p|atmega32u4 [-f HZ] [-u UART] [--free-run SPEED] [--drop-unread BYTES] firmware.elf\n", argv[0]);
        return 2;
    }
    const char *elf = argv[optind];
    signal(SIGPIPE, SIG_IGN);
    if (getenv("BRIDGE_OUT_CAP")) {
        long cap = atol(getenv("BRIDGE_OUT_CAP"));
        if (cap >= 64 && cap <= OUT_CAP / 2)
            out_limit = (size_t)cap;
    }
    if (getenv("BRIDGE_TX_BLOCK_MS")) {
        tx_block_timeout_ms = atol(getenv("BRIDGE_TX_BLOCK_MS"));
        if (tx_block_timeout_ms < 10 || tx_block_timeout_ms > 600000)
            die("BRIDGE_TX_BLOCK_MS takes 10..600000 ms");
    }
    if (getenv("BRIDGE_DROP_UNREAD") && !drop_unread_limit) {   /* same as --drop-unread */
        drop_unread_limit = atoi(getenv("BRIDGE_DROP_UNREAD"));
        if (drop_unread_limit < 1 || drop_unread_limit > 4000)
            die("BRIDGE_DROP_UNREAD takes 1..4000 bytes (what a pty holds unread: 4095)");
    }
    if (getenv("BRIDGE_VERBOSE"))
        log_level_max = LOG_DEBUG;
    avr_global_logger_set(stderr_logger);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (!strcmp(mcu, "atmega32u4")) {
        pinmap_t m = PINMAP_32U4;
        pm = m;
        uart_name = '1';                 /* Serial1 on the Leonardo / A-Star 32U4 */
    } else if (!strcmp(mcu, "atmega328p")) {
        pinmap_t m = PINMAP_UNO;
        pm = m;
        uart_name = '0';
    } else {
        die("unsupported MCU (use atmega328p or atmega32u4)");
    }
    if (uart_opt >= 0)
        uart_name = (char)('0' + uart_opt);

    elf_firmware_t fw;
    memset(&fw, 0, sizeof fw);
    if (elf_read_firmware(elf, &fw) != 0)
        die("cannot read the firmware ELF");
    snprintf(fw.mmcu, sizeof fw.mmcu, "%s", mcu);
    fw.frequency = (uint32_t)freq;
    avr = avr_make_mcu_by_name(fw.mmcu);
    if (!avr)
        die("libsimavr does not know this MCU");
    avr_init(avr);
    avr->log = 0;
    avr_load_firmware(avr, &fw);
    avr->sleep = no_wall_clock_sleep;
    core_reset = avr->reset;
    avr->reset = bridge_reset;

    /* UART: no stdio echo, no usleep when the firmware polls an empty receiver */
    uint32_t flags = 0;
    avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS(uart_name), &flags);
    flags &= ~(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
    avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS(uart_name), &flags);
    uart_in_irq = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ(uart_name), UART_IRQ_INPUT);
    avr_irq_t *uart_out = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ(uart_name), UART_IRQ_OUTPUT);
    if (!uart_in_irq || !uart_out)
        die("this MCU has no such UART");
    avr_irq_register_notify(uart_out, uart_out_hook, NULL);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ(uart_name), UART_IRQ_OUT_XOFF),
                            uart_xoff_hook, NULL);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ(uart_name), UART_IRQ_OUT_XON),
                            uart_xon_hook, NULL);

    mpu_init();
    no_level_polling();
    wheel_init(&wheels[0], pm.left_xor_port, pm.left_xor_bit, pm.left_b_port, pm.left_b_bit);
    wheel_init(&wheels[1], pm.right_xor_port, pm.right_xor_bit, pm.right_b_port, pm.right_b_bit);
    win_start = win_end = avr->cycle;

    open_pty();
    printf("ready mcu=%s freq=%lu uart=%c board=%d\n", mcu, freq, uart_name, pm.board_id);

    if (free_speed > 0) {
        free_run(free_speed);
        return 0;
    }

    /* Lockstep: the harness on stdin owns this process (EOF or "quit" ends it). Ctrl-C at a terminal
     * signals the whole process group; the harness handles it and says "quit" after its last "stats". */
    signal(SIGINT, SIG_IGN);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (!strncmp(line, "run ", 4))
            cmd_run(line + 4);
        else if (!strncmp(line, "imu ", 4))
            cmd_imu(line + 4);
        else if (!strncmp(line, "altimu ", 7))
            cmd_altimu(line + 7);
        else if (!strncmp(line, "altimu_present ", 15))
            cmd_altimu_present(line + 15);
        else if (!strncmp(line, "imu_present ", 12)) {
            mpu_present = atoi(line + 12) != 0;
            printf("ok\n");
        } else if (!strcmp(line, "stats"))
            cmd_stats();
        else if (!strcmp(line, "quit")) {
            printf("bye\n");
            break;
        } else if (line[0] == 0)
            continue;
        else
            printf("err unknown command '%.40s'\n", line);
    }
    flush_output(0);
    close(pty_master);
    close(pty_slave);
    return 0;
}
