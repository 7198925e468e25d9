/*
 * sim_optiboot - an Arduino Uno for avrdude: an ATmega328P in libsimavr that boots its serial bootloader
 * (optiboot 4.4 from Debian's arduino-core-avr, STK500v1 at 115200 baud) from the boot section, with
 * UART0 on a pseudo-terminal, so the unmodified `avrdude -c arduino -P <pty>` can flash a sketch through it
 * and the flashed sketch then runs and talks on the same pty.
 *
 *   sim_optiboot -b 0x7c00 build/optiboot_atmega328_1k.hex
 *
 * (Debian's shipped optiboot_atmega328.hex is 532 bytes linked for the 512-byte section at 0x7E00 and
 * overflows the flash; the Makefile builds the same code at 0x7C00, a 1 KiB boot section: see there.)
 *
 *   sim_optiboot [-m atmega328p] [-f HZ] [-b BOOT_ADDR] [-s SPEED] bootloader.hex
 *
 *   -b BOOT_ADDR  byte address of the boot section (reset vector with the BOOTRST fuse programmed);
 *                 default 0x7E00: the Uno's fuses (high 0xDE: BOOTSZ=11, 256 words, BOOTRST=0)
 *   -s SPEED      simulated seconds per wall-clock second (default 1: an Uno's own pace)
 *
 * stdout (line buffered): "pty <slave path>", then "ready mcu=<mcu> freq=<hz> boot=0x<addr>", then one
 * line per event: "open", "close", "reset external" (the port was opened: DTR), "reset mcusr=0x<flags>"
 * for every reset the MCU went through (0x08 watchdog, 0x02 external, 0x01 power-on), "stopped <state>".
 * Ends on SIGTERM/SIGINT or when its parent ends (prints "bye <stats>").
 *
 * What is emulated of the board around the chip:
 *   - flash starts erased (0xFF) and is never touched by a reset: the bootloader's SPM page writes
 *     (simavr's self-programming module) stay across the watchdog reset that starts the sketch;
 *   - the boot section holds the bootloader; every reset starts at BOOT_ADDR (BOOTRST), and MCUSR tells
 *     optiboot why: EXTRF -> stay in the bootloader ~1 s for STK500v1, anything else -> start the sketch;
 *   - DTR: on an Uno the USB adapter's DTR line pulls RESET low through a 100 nF capacitor when a host
 *     opens the port (and again when avrdude's `-c arduino` toggles DTR off and on right after opening).
 *     A pty has no modem lines (avrdude's TIOCMSET fails on it, avrdude carries on), so the open itself
 *     is the reset: every open(2) of the slave (inotify IN_OPEN on its device node) gives the MCU an
 *     external reset; while no process holds the slave open (POLLHUP on the master) output is dropped.
 *     avrdude opens, waits 300 ms and syncs: well inside optiboot's 1 s window at SPEED 1;
 *   - the baud rate the host sets on the pty is ignored (the UART's own rate paces the simulated bytes);
 *     host bytes are handed to the UART only while its receive FIFO has room (XON/XOFF irqs), output
 *     goes to the pty while the port is open and is dropped while it is closed, as on a real adapter.
 * Simulated time is paced to SPEED x the wall clock (optiboot's watchdog window is simulated time); when
 * the process was starved it continues from where it was instead of catching up in a burst.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sim_avr.h"
#include "sim_hex.h"
#include "sim_irq.h"
#include "sim_io.h"
#include "avr_uart.h"

#define MCUSR_DATA_ADDR 0x54      /* MCUSR, I/O 0x34 on the ATmega328P (and the 32U4) */
#define MCUSR_PORF 0x01
#define MCUSR_EXTRF 0x02
#define STEP_US 1000              /* simulated time per step */
#define MAX_BEHIND_S 0.02         /* simulated time never lags the wall clock by more (see the main loop) */

static avr_t *avr;
static int pty_master = -1;
static int port_open;
static int inotify_fd = -1;           /* IN_OPEN / IN_CLOSE of the pty slave: every open is seen, however short */
static volatile sig_atomic_t stop_requested;

static uint8_t in_buf[4096];
static size_t in_head, in_len;
static uint8_t out_buf[8192];
static size_t out_len;
static int uart_xoff;
static avr_irq_t *uart_in_irq;
static uint64_t rx_bytes, tx_bytes, tx_dropped, resets, ext_resets;
static int reset_seen;
static void (*core_reset)(struct avr_t *);

static void die(const char *msg)
{
    fprintf(stderr, "sim_optiboot: %s%s%s\n", msg, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ------------------------------------------------------------------ UART <-> pty */
static void uart_out_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)param;
    if (out_len < sizeof out_buf)
        out_buf[out_len++] = (uint8_t)value;
    else
        tx_dropped++;
}

static void uart_xoff_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)value; (void)param;
    uart_xoff = 1;
}

static void uart_xon_hook(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq; (void)value; (void)param;
    uart_xoff = 0;
}

static void flush_output(void)
{
    size_t done = 0;
    while (port_open && done < out_len) {
        ssize_t n = write(pty_master, out_buf + done, out_len - done);
        if (n <= 0)
            break;                       /* reader not keeping up or gone: the rest is lost, as on a wire */
        done += (size_t)n;
    }
    tx_bytes += done;
    tx_dropped += out_len - done;
    out_len = 0;
}

static void read_input(void)
{
    if (!port_open)
        return;
    while (in_len < sizeof in_buf) {
        size_t tail = (in_head + in_len) % sizeof in_buf;
        size_t room = tail >= in_head ? sizeof in_buf - tail : in_head - tail;
        ssize_t n = read(pty_master, in_buf + tail, room);
        if (n <= 0)
            break;
        in_len += (size_t)n;
        rx_bytes += (uint64_t)n;
    }
}

static void feed_uart(void)
{
    while (in_len > 0 && !uart_xoff) {
        uint8_t b = in_buf[in_head];
        in_head = (in_head + 1) % sizeof in_buf;
        in_len--;
        avr_raise_irq(uart_in_irq, b);
    }
}

/* ------------------------------------------------------------------ resets */
static void counting_reset(struct avr_t *a)
{
    if (core_reset)
        core_reset(a);
    reset_seen = 1;
    resets++;
    uart_xoff = 0;
}

/* The port's DTR pulse: an external reset, MCUSR.EXTRF set as the reset logic does. */
static void external_reset(void)
{
    avr_reset(avr);
    avr->data[MCUSR_DATA_ADDR] |= MCUSR_EXTRF;
    ext_resets++;
    in_head = in_len = 0;              /* what the host sent before the pulse went to the old program */
    out_len = 0;
    printf("reset external\n");
}

/* Opens of the slave (inotify) reset the MCU; POLLHUP on the master: no process holds the slave open. */
static void check_port(void)
{
    char ev[1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(inotify_fd, ev, sizeof ev)) > 0) {
        for (char *p = ev; p < ev + n; p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (e->mask & IN_OPEN) {
                printf("open\n");
                external_reset();
            }
            if (e->mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE))
                printf("close\n");
        }
    }
    struct pollfd p = {pty_master, POLLIN, 0};
    poll(&p, 1, 0);
    int open_now = !(p.revents & POLLHUP);
    if (!open_now && port_open)
        in_head = in_len = 0;
    port_open = open_now;
}

static void open_pty(void)
{
    pty_master = posix_openpt(O_RDWR | O_NOCTTY);
    if (pty_master < 0 || grantpt(pty_master) < 0 || unlockpt(pty_master) < 0)
        die("cannot create a pseudo-terminal");
    const char *slave = ptsname(pty_master);
    if (!slave)
        die("no pty slave name");
    int s = open(slave, O_RDWR | O_NOCTTY);   /* raw mode for clients that do not set it themselves */
    if (s < 0)
        die("cannot open the pty slave");
    struct termios t;
    tcgetattr(s, &t);
    cfmakeraw(&t);
    tcsetattr(s, TCSANOW, &t);
    close(s);
    fcntl(pty_master, F_SETFL, fcntl(pty_master, F_GETFL) | O_NONBLOCK);
    inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd < 0 || inotify_add_watch(inotify_fd, slave, IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0)
        die("cannot watch the pty slave (inotify)");
    printf("pty %s\n", slave);
}

static void load_hex(const char *path, uint32_t max_addr, const char *what)
{
    ihex_chunk_p chunks = NULL;
    int n = read_ihex_chunks(path, &chunks);
    if (n <= 0) {
        fprintf(stderr, "sim_optiboot: cannot read the %s hex %s\n", what, path);
        exit(2);
    }
    for (int i = 0; i < n; i++) {
        if (chunks[i].baseaddr + chunks[i].size > max_addr + 1) {
            fprintf(stderr, "sim_optiboot: %s hex %s does not fit the flash (0x%x + %u bytes)\n", what, path,
                    chunks[i].baseaddr, chunks[i].size);
            exit(2);
        }
        memcpy(avr->flash + chunks[i].baseaddr, chunks[i].data, chunks[i].size);
    }
    free_ihex_chunks(chunks);
}

static void no_wall_clock_sleep(struct avr_t *a, avr_cycle_count_t how_long)
{
    (void)a; (void)how_long;            /* pacing is done here, per step, not per sleep */
}

static const char *state_name(int s)
{
    switch (s) {
    case cpu_Done: return "done";
    case cpu_Crashed: return "crashed";
    case cpu_Stopped: return "stopped";
    default: return "other";
    }
}

int main(int argc, char **argv)
{
    const char *mcu = "atmega328p";
    unsigned long freq = 16000000UL;
    unsigned long boot_addr = 0x7E00;
    double speed = 1.0;
    int c;
    while ((c = getopt(argc, argv, "m:f:b:s:")) != -1) {
        switch (c) {
        case 'm': mcu = optarg; break;
        case 'f': freq = strtoul(optarg, NULL, 0); break;
        case 'b': boot_addr = strtoul(optarg, NULL, 0); break;
        case 's': speed = atof(optarg); break;
        default: goto usage;
        }
    }
    if (optind != argc - 1 || speed <= 0 || freq == 0)
        goto usage;
    if (strcmp(mcu, "atmega328p")) {
        fprintf(stderr, "sim_optiboot: only atmega328p (the Uno; the 32U4's Caterina bootloader talks USB)\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    avr = avr_make_mcu_by_name(mcu);
    if (!avr)
        die("libsimavr does not know this MCU");
    avr_init(avr);
    avr->log = 0;
    avr->frequency = (uint32_t)freq;
    if (boot_addr >= avr->flashend || boot_addr & 1) {
        fprintf(stderr, "sim_optiboot: boot address 0x%lx outside the flash\n", boot_addr);
        return 2;
    }
    memset(avr->flash, 0xFF, avr->flashend + 1);
    load_hex(argv[optind], avr->flashend, "bootloader");
    avr->codeend = avr->flashend;
    avr->reset_pc = (avr_flashaddr_t)boot_addr;      /* BOOTRST programmed */
    avr->sleep = no_wall_clock_sleep;
    core_reset = avr->reset;
    avr->reset = counting_reset;

    uint32_t flags = 0;
    avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
    flags &= ~(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
    avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
    uart_in_irq = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), uart_out_hook, NULL);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF), uart_xoff_hook, NULL);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON), uart_xon_hook, NULL);

    avr_reset(avr);                                  /* power-on */
    avr->data[MCUSR_DATA_ADDR] |= MCUSR_PORF;
    open_pty();
    printf("ready mcu=%s freq=%lu boot=0x%lx\n", mcu, freq, boot_addr);

    const avr_cycle_count_t step_cycles = (avr_cycle_count_t)freq / (1000000 / STEP_US);
    uint64_t total_cycles = 0;       /* simulated cycles since start (avr->cycle restarts at each reset) */
    int halted = 0;
    double t0 = wall_now();
    while (!stop_requested) {
        check_port();
        read_input();
        double ahead_s = (double)total_cycles / freq / speed - (wall_now() - t0);
        if (ahead_s < -MAX_BEHIND_S) {
            /* this process was starved (a loaded host): do not race to catch up, or the bootloader's
             * 1 s window would pass in a burst while avrdude, starved too, has not sent anything yet */
            t0 -= ahead_s + MAX_BEHIND_S;
            ahead_s = -MAX_BEHIND_S;
        }
        if (ahead_s > 0) {
            struct pollfd p = {pty_master, POLLIN, 0};
            int ms = ahead_s * 1000 < 1 ? 1 : (int)(ahead_s * 1000);
            if (port_open && in_len == 0)
                poll(&p, 1, ms > 2 ? 2 : ms);   /* wake for host bytes; re-check the port every 2 ms */
            else
                usleep(1000);
            continue;
        }
        if (reset_seen) {
            reset_seen = 0;
            halted = 0;
            printf("reset mcusr=0x%02x\n", avr->data[MCUSR_DATA_ADDR]);
        }
        if (halted) {                    /* a stopped MCU waits for the next reset */
            total_cycles += step_cycles;
            continue;
        }
        avr_cycle_count_t done = 0;
        while (done < step_cycles) {
            avr_cycle_count_t before = avr->cycle;
            int state = avr_run(avr);
            done += avr->cycle >= before ? avr->cycle - before : avr->cycle;
            if (in_len > 0 && !uart_xoff)
                feed_uart();
            if (state == cpu_Done || state == cpu_Crashed || state == cpu_Stopped) {
                printf("stopped %s pc=0x%x\n", state_name(state), avr->pc);
                halted = 1;
                break;
            }
            if (reset_seen)
                break;
        }
        total_cycles += done > step_cycles ? done : step_cycles;
        flush_output();
    }
    printf("bye rx=%llu tx=%llu tx_dropped=%llu resets=%llu external=%llu sim_s=%.3f wall_s=%.3f\n",
           (unsigned long long)rx_bytes, (unsigned long long)tx_bytes, (unsigned long long)tx_dropped,
           (unsigned long long)resets, (unsigned long long)ext_resets, (double)total_cycles / freq,
           wall_now() - t0);
    return 0;
usage:
    fprintf(stderr, "usage: %s [-m atmega328p] [-f HZ] [-b BOOT_ADDR] [-s SPEED] bootloader.hex\n",
            argv[0]);
    return 2;
}
