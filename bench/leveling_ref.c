/* Plain C reference of the probabilistic grid leveling inner loop (Cook thesis 4.2.1, Alg. 1 + Alg. 2),
 * for bench/leveling.py: the world of harness/sim/leveling_grid.py with the agents of
 * onboard/leveling/probabilistic.py, the same rules and the same draws in the same order as the pure and
 * Cython paths (two NumPy PCG64 streams, `agents` and `order`, stepped inline), so the benchmark can check
 * that its final grid and counters equal the Cython path's.
 *
 * usage: leveling_ref WORKLOAD OUT REPEATS
 * WORKLOAD (whitespace-separated): rows cols agents memory condition(0 range, 1 grad, 2 rms) epsilon
 *   const_rho rho k rho_sense always_read random_move fixed_order max_cycles, then rows*cols heights,
 *   agents start cells, agents headings, then the agents stream (state_hi state_lo inc_hi inc_lo) and the
 *   order stream, each as four unsigned 64-bit decimals.
 * Every repeat starts from the same state; OUT gets the last repeat's result (level cycles counters,
 * heights) and every repeat's loop time in CPU seconds of the process.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { unsigned __int128 state, inc; } pcg64_t;

/* NumPy's PCG64 (XSL-RR 128/64) and Generator.random(): (next64 >> 11) * 2^-53 */
static inline double pcg64_double(pcg64_t *r) {
    const unsigned __int128 mult = ((unsigned __int128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL;
    r->state = r->state * mult + r->inc;
    uint64_t x = ((uint64_t)(r->state >> 64)) ^ (uint64_t)r->state;
    unsigned rot = (unsigned)(r->state >> 122);
    x = (x >> rot) | (x << ((-rot) & 63u));
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

enum { SENSE = 0, ACT = 1, STAY = -1, NO_OP = -1, PICK_UP = 8, DEPOSIT = 9 };
static const int STEP_R[8] = {1, 1, 0, -1, -1, -1, 0, 1};   /* rows north per direction N, NE, ... NW */
static const int STEP_C[8] = {0, 1, 1, 1, 0, -1, -1, -1};   /* columns east */

typedef struct {
    int rows, cols, n, na, msize, condition, const_rho, always_read, fixed_order;
    double eps, rho, k, rho_sense, random_move;
    int64_t max_cycles;
    int64_t *h, *nb4, *nbr, *hist, hist_cap, lo, hi, total, sumsq, bad;
    int64_t *pos, *occ, *order, *carrying, *moved, *picked_from;
    int64_t *phase, *hval, *heading, *last_move, *steps, *samples, *mem, *mem_start, *mem_count, *mem_total;
    int64_t cycles, pickups, deposits, relocated, moves, blocked, refused;
    pcg64_t ra, ro;
} world_t;

static void change(world_t *w, int64_t idx, int64_t nw) {
    int64_t old = w->h[idx];
    for (int j = 0; j < 4; j++) {
        int64_t c = w->nb4[4 * idx + j];
        if (c >= 0) {
            int64_t hj = w->h[c];
            w->bad += ((double)llabs(nw - hj) > w->eps) - ((double)llabs(old - hj) > w->eps);
        }
    }
    w->h[idx] = nw;
    w->total += nw - old;
    w->sumsq += nw * nw - old * old;
    if (nw >= w->hist_cap) {
        int64_t cap = 2 * nw + 2;
        w->hist = realloc(w->hist, cap * sizeof(int64_t));
        for (int64_t j = w->hist_cap; j < cap; j++) w->hist[j] = 0;
        w->hist_cap = cap;
    }
    w->hist[nw]++;
    if (nw < w->lo) w->lo = nw;
    if (nw > w->hi) w->hi = nw;
    if (--w->hist[old] == 0) {
        while (w->hist[w->lo] == 0) w->lo++;
        while (w->hist[w->hi] == 0) w->hi--;
    }
}

static int is_level(const world_t *w) {
    if (w->condition == 0) return (double)(w->hi - w->lo) <= w->eps;
    if (w->condition == 1) return w->bad == 0;
    double en = w->eps * w->n;
    return (double)(w->n * w->sumsq - w->total * w->total) <= en * en;
}

/* one run: cycles of Alg. 1's outer loop until level or max_cycles; returns 1 when level */
static int run(world_t *w) {
    const int na = w->na, ms = w->msize;
    while (w->cycles < w->max_cycles) {
        if (!w->fixed_order) {
            for (int64_t i = na - 1; i > 0; i--) {
                int64_t j = (int64_t)(pcg64_double(&w->ro) * (double)(i + 1));
                int64_t t = w->order[i]; w->order[i] = w->order[j]; w->order[j] = t;
            }
        }
        for (int t = 0; t < na; t++) {
            int64_t a = w->order[t], idx = w->pos[a], height = w->h[idx], op = NO_OP, move;
            if (w->moved[a] && w->last_move[a] != STAY) w->heading[a] = w->last_move[a];
            w->steps[a]++;
            if (w->phase[a] == SENSE) {
                w->phase[a] = ACT;
                w->last_move[a] = STAY;
                if (w->always_read) w->hval[a] = height;
                if (pcg64_double(&w->ra) < w->rho_sense) {
                    w->hval[a] = height;
                    int64_t cnt = w->mem_count[a];
                    if (cnt < ms) {
                        w->mem[a * ms + (w->mem_start[a] + cnt) % ms] = height;
                        w->mem_count[a] = cnt + 1;
                        w->mem_total[a] += height;
                    } else {
                        w->mem_total[a] += height - w->mem[a * ms + w->mem_start[a]];
                        w->mem[a * ms + w->mem_start[a]] = height;
                        w->mem_start[a] = (w->mem_start[a] + 1) % ms;
                    }
                    w->samples[a]++;
                }
                move = STAY;
            } else {
                w->phase[a] = SENSE;
                int64_t hh = w->hval[a];
                double u = pcg64_double(&w->ra);
                if (hh >= 0) {
                    int64_t cnt = w->mem_count[a], tot = w->mem_total[a];
                    double hd = (double)hh, p, r;
                    if (!w->carrying[a]) {
                        if (w->const_rho) p = w->rho; else { r = hd / (w->k + hd); p = r * r; }
                        if (u < p && cnt && hh * cnt > tot) op = PICK_UP;
                    } else {
                        if (w->const_rho) p = w->rho; else { r = w->k / (w->k + hd); p = r * r; }
                        if (u < p && cnt && hh * cnt < tot) op = DEPOSIT;
                    }
                }
                if (pcg64_double(&w->ra) < w->random_move) {
                    move = (int64_t)(pcg64_double(&w->ra) * 8.0);
                    if (move > 7) move = 7;
                } else {
                    move = w->heading[a];
                }
                w->last_move[a] = move;
            }
            if (op == PICK_UP) {
                if (!w->carrying[a] && w->h[idx] > 0) {
                    change(w, idx, w->h[idx] - 1);
                    w->carrying[a] = 1; w->pickups++; w->picked_from[a] = idx;
                } else w->refused++;
            } else if (op == DEPOSIT) {
                if (w->carrying[a]) {
                    change(w, idx, w->h[idx] + 1);
                    w->carrying[a] = 0; w->deposits++;
                    if (idx != w->picked_from[a]) w->relocated++;
                } else w->refused++;
            }
            if (move == STAY) { w->moved[a] = 0; continue; }
            int64_t to = w->nbr[idx * 8 + move];
            if (to >= 0 && w->occ[to] < 0) {
                w->occ[idx] = -1; w->occ[to] = a; w->pos[a] = to; w->moved[a] = 1; w->moves++;
            } else { w->moved[a] = 0; w->blocked++; }
        }
        w->cycles++;
        if (is_level(w)) return 1;
    }
    return 0;
}

static int64_t *alloc64(int64_t n) { int64_t *p = calloc(n > 0 ? n : 1, sizeof(int64_t)); if (!p) exit(3); return p; }

/* the world and its agents fresh from the workload (heights, cells, headings, stream states) */
static void init(world_t *w, const int64_t *h0, const int64_t *pos0, const int64_t *head0,
                 const uint64_t *ra, const uint64_t *ro) {
    int n = w->n, na = w->na;
    memcpy(w->h, h0, n * sizeof(int64_t));
    int64_t hmax = 0;
    for (int i = 0; i < n; i++) if (h0[i] > hmax) hmax = h0[i];
    free(w->hist);
    w->hist_cap = hmax + 2;
    w->hist = alloc64(w->hist_cap);
    w->total = w->sumsq = w->bad = 0;
    w->lo = w->hi = h0[0];
    for (int i = 0; i < n; i++) {
        int64_t v = h0[i];
        w->hist[v]++; w->total += v; w->sumsq += v * v;
        if (v < w->lo) w->lo = v;
        if (v > w->hi) w->hi = v;
        for (int j = 0; j < 4; j++) {
            int64_t c = w->nb4[4 * i + j];
            if (c > i && (double)llabs(v - h0[c]) > w->eps) w->bad++;
        }
    }
    for (int i = 0; i < n; i++) w->occ[i] = -1;
    for (int a = 0; a < na; a++) {
        w->pos[a] = pos0[a]; w->occ[pos0[a]] = a; w->order[a] = a; w->carrying[a] = 0; w->moved[a] = 0;
        w->picked_from[a] = -1; w->phase[a] = SENSE; w->hval[a] = -1; w->heading[a] = head0[a];
        w->last_move[a] = STAY; w->steps[a] = w->samples[a] = 0;
        w->mem_start[a] = w->mem_count[a] = w->mem_total[a] = 0;
    }
    w->cycles = w->pickups = w->deposits = w->relocated = w->moves = w->blocked = w->refused = 0;
    w->ra.state = ((unsigned __int128)ra[0] << 64) | ra[1]; w->ra.inc = ((unsigned __int128)ra[2] << 64) | ra[3];
    w->ro.state = ((unsigned __int128)ro[0] << 64) | ro[1]; w->ro.inc = ((unsigned __int128)ro[2] << 64) | ro[3];
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s WORKLOAD OUT REPEATS\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    world_t w; memset(&w, 0, sizeof w);
    int ok = fscanf(f, "%d %d %d %d %d %lf %d %lf %lf %lf %d %lf %d %" SCNd64, &w.rows, &w.cols, &w.na, &w.msize,
                    &w.condition, &w.eps, &w.const_rho, &w.rho, &w.k, &w.rho_sense, &w.always_read,
                    &w.random_move, &w.fixed_order, &w.max_cycles);
    if (ok != 14) { fprintf(stderr, "bad workload header\n"); return 2; }
    w.n = w.rows * w.cols;
    int64_t *h0 = alloc64(w.n), *pos0 = alloc64(w.na), *head0 = alloc64(w.na);
    for (int i = 0; i < w.n; i++) if (fscanf(f, "%" SCNd64, &h0[i]) != 1) return 2;
    for (int i = 0; i < w.na; i++) if (fscanf(f, "%" SCNd64, &pos0[i]) != 1) return 2;
    for (int i = 0; i < w.na; i++) if (fscanf(f, "%" SCNd64, &head0[i]) != 1) return 2;
    uint64_t ra[4], ro[4];
    for (int i = 0; i < 4; i++) if (fscanf(f, "%" SCNu64, &ra[i]) != 1) return 2;
    for (int i = 0; i < 4; i++) if (fscanf(f, "%" SCNu64, &ro[i]) != 1) return 2;
    fclose(f);
    w.h = alloc64(w.n); w.nb4 = alloc64(4 * w.n); w.nbr = alloc64(8 * w.n); w.occ = alloc64(w.n);
    w.pos = alloc64(w.na); w.order = alloc64(w.na); w.carrying = alloc64(w.na); w.moved = alloc64(w.na);
    w.picked_from = alloc64(w.na); w.phase = alloc64(w.na); w.hval = alloc64(w.na); w.heading = alloc64(w.na);
    w.last_move = alloc64(w.na); w.steps = alloc64(w.na); w.samples = alloc64(w.na);
    w.mem = alloc64((int64_t)w.na * w.msize); w.mem_start = alloc64(w.na);
    w.mem_count = alloc64(w.na); w.mem_total = alloc64(w.na);
    for (int r = 0; r < w.rows; r++)
        for (int c = 0; c < w.cols; c++) {
            int i = r * w.cols + c, m = 0;
            const int dr4[4] = {-1, 1, 0, 0}, dc4[4] = {0, 0, -1, 1};
            for (int j = 0; j < 4; j++) w.nb4[4 * i + j] = -1;
            for (int j = 0; j < 4; j++)
                if (r + dr4[j] >= 0 && r + dr4[j] < w.rows && c + dc4[j] >= 0 && c + dc4[j] < w.cols)
                    w.nb4[4 * i + m++] = (r + dr4[j]) * w.cols + c + dc4[j];
            for (int d = 0; d < 8; d++) {
                int nr = r + STEP_R[d], nc = c + STEP_C[d];
                w.nbr[8 * i + d] = (nr >= 0 && nr < w.rows && nc >= 0 && nc < w.cols) ? nr * w.cols + nc : -1;
            }
        }
    int repeats = atoi(argv[3]);
    if (repeats < 1) repeats = 1;
    double *secs = calloc(repeats, sizeof(double));
    int level = 0;
    for (int rep = 0; rep < repeats; rep++) {
        init(&w, h0, pos0, head0, ra, ro);
        struct timespec t0, t1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        level = run(&w);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        secs[rep] = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    }
    FILE *o = fopen(argv[2], "w");
    if (!o) { perror(argv[2]); return 2; }
    fprintf(o, "%d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", level,
            w.cycles, w.pickups, w.deposits, w.relocated, w.moves, w.blocked, w.refused);
    for (int i = 0; i < w.n; i++) fprintf(o, "%" PRId64 "%c", w.h[i], i + 1 == w.n ? '\n' : ' ');
    for (int r = 0; r < repeats; r++) fprintf(o, "%.9f%c", secs[r], r + 1 == repeats ? '\n' : ' ');
    fclose(o);
    return 0;
}
