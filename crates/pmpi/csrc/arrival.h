/* When a received message arrived, estimated: knob L's dating (emulate.c), on its own so that a
 * test can check its arithmetic exactly without MPI (crates/pmpi/tests/c_headers.rs).
 *
 * The MPI layer sees three times of a receive: t_inj, the sender's stamp just before it handed
 * the message over (side band); t_enter, when the receiving call was entered; t_done, when it
 * returned with the message. "Arrival" here is when a receiver that had been waiting would have
 * returned with it: L's hold ends ΔL after that. A receiver inside its call before the message
 * could have come watched it come (arrival = t_done). Otherwise the message may have sat there
 * and t_done says only when it was picked up: it is dated t_inj + the *typical* one-way time of
 * the watched messages of its size class from that source (never after t_done).
 *
 * Typical, not least: the least time is a lower bound, and dating every unwatched message at it
 * shortened each hold by that message's excess over the least one (cg: 87–102 ns a watched
 * message when a cache line crosses the CPUs in 30 ns, 217–286 ns when it takes 160; with the
 * typical time L 1 µs adds 0.290 s to cg instead of 0.266, LogGP predicting 0.28–0.29, on the
 * development VM). Size classes
 * (powers of two): a large message's one-way time holds its transfer, which a small message's
 * does not.
 *
 * The typical time is a running mean of the watched times, each clipped at CPMPI_CLIP × the
 * least (a preemption of milliseconds is no one-way time), weighted 1 / CPMPI_EWMA: no
 * allocation, a few integer operations a message. */
#ifndef CPMPI_ARRIVAL_H
#define CPMPI_ARRIVAL_H

#include <stdint.h>

/* Size classes: 0 for 0 bytes, k for 2^(k-1) ≤ bytes < 2^k; the last one takes the rest. */
#define CPMPI_SIZE_CLASSES 41
#define CPMPI_CLIP 4
#define CPMPI_EWMA 16

typedef struct {
    uint64_t lmin; /* least t_done − t_inj seen (UINT64_MAX: none yet) */
    uint64_t typ;  /* running mean of the watched ones, clipped (0: none yet) */
} cpmpi_oneway;

typedef struct {
    uint64_t watched;   /* dated at their completion: the receiver watched them come */
    uint64_t estimated; /* dated at t_inj + the typical (or, before any, the least) time */
    uint64_t excess;    /* sum over the watched of their time − the least, in ticks */
} cpmpi_dating;

static inline int cpmpi_size_class(uint64_t bytes) {
    int k = bytes ? 64 - __builtin_clzll(bytes) : 0;
    return k < CPMPI_SIZE_CLASSES ? k : CPMPI_SIZE_CLASSES - 1;
}

static inline void cpmpi_oneway_init(cpmpi_oneway *w, int n) {
    for (int i = 0; i < n; i++) {
        w[i].lmin = UINT64_MAX;
        w[i].typ = 0;
    }
}

/* The arrival of a message stamped t_inj (0: no stamp), updating its class's times `w`. */
static inline uint64_t cpmpi_arrival(cpmpi_oneway *w, cpmpi_dating *c, uint64_t t_inj,
                                     uint64_t t_enter, uint64_t t_done) {
    if (!t_inj || (int64_t)(t_done - t_inj) < 0) return t_done;
    uint64_t d = t_done - t_inj;
    if (w->lmin == UINT64_MAX) {
        /* The first of its class: nothing to tell whether it was watched; its time only bounds
         * the least one. */
        w->lmin = d;
        c->watched++;
        return t_done;
    }
    if (d < w->lmin) w->lmin = d;
    if ((int64_t)(t_inj + w->lmin - t_enter) >= 0) {
        uint64_t cap = w->lmin * CPMPI_CLIP;
        uint64_t x = d < cap ? d : cap;
        if (!w->typ) w->typ = x;
        else if (x >= w->typ) w->typ += (x - w->typ) / CPMPI_EWMA;
        else w->typ -= (w->typ - x) / CPMPI_EWMA;
        c->watched++;
        c->excess += d - w->lmin;
        return t_done;
    }
    c->estimated++;
    uint64_t est = t_inj + (w->typ ? w->typ : w->lmin);
    return (int64_t)(est - t_done) < 0 ? est : t_done;
}

#endif
