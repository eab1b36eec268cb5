/* commperf-pmpi LogGP knobs: the MPI side of `commperf emulate` (Martin 1999, the apparatus of
 * Figure 2.2, moved from NIC firmware into the PMPI layer of an unmodified program).
 *
 * Configured once at MPI_Init from COMMPERF_EMULATE ("o=5us,g=0ns,G=0.5ns,L=20us": the verb
 * writes every knob with its unit; G is ns per byte); the shim (shim.c) calls the hooks below
 * from its point-to-point wrappers only when `cpmpi_emu_on` (some knob > 0, or
 * COMMPERF_EMULATE_ENGAGE=1: the whole apparatus whatever the knobs, as a sweep runs its every
 * setting and its baseline): otherwise each wrapper pays one predictable branch on a variable
 * that never changes.
 *
 * How each knob is applied (per message, CPU busy: delays are spins on the TSC, never sleeps;
 * o's and G's exact on average, their spins' own cost taken off and amounts below it owed:
 * spin_owed):
 * - o: the sender spins Δo before handing the message to PMPI; the receiver spins Δo after a
 *   receive completes (after L's hold, "before taking it").
 * - g: injections of one sender are at least Δg apart: after an injection the next one may not
 *   start before it + Δg; the wait is taken only when the next injection comes earlier (Martin
 *   stalls its NIC after injection, which never blocks the host while it stays under the rate).
 *   "After an injection" is when the non-blocking send returned: a blocking send whose call
 *   also waits for the receiver (rendezvous, Ssend, Sendrecv's receive) is run as its
 *   non-blocking form and a wait while g is set (shim.c, coll.c), or the wait would count as
 *   wire time and every such send would pay the receiver's lateness on top of Δg.
 * - G: the message of s bytes occupies the sender's wire ΔG·s longer: the sender spins ΔG·s just
 *   before injecting it (it leaves, and so arrives, ΔG·s later, and the next injection is pushed
 *   back as much).
 * - L: a delay queue at the receiver: a message is not delivered before its arrival + ΔL. The
 *   arrival time is not visible at the MPI layer, so it is estimated from the sender's injection
 *   time, which travels beside the message through a shared-memory side band (one single-
 *   host ring of stamps per sender/receiver pair, in a file of the verb's run directory, on the
 *   TSC every core of the host shares): see arrival.h. Later messages keep their own due
 *   times (each is held to its own arrival + ΔL), so gap and bandwidth are untouched.
 *
 * Collectives: coll.c runs the common blocking ones as messages through these same hooks
 * (unless COMMPERF_EMULATE_COLL=off), flagging them with cpmpi_emu_in_coll; the rest run natively.
 *
 * Charges (what the library runs, the knobs' cost held at its completion): a nonblocking or
 * persistent collective cannot be run as messages at its start (the program may exchange its
 * own messages before it waits: blocking there deadlocks it), so the library runs it and the
 * rank is charged its part of coll.c's algorithm (cpmpi_emu_coll_start): Δo per message at the
 * start, its completion not returned before the start + Δg per gap between its sends + ΔG per
 * wire byte + ΔL per round in which it receives. A one-sided transfer pays o and g at the
 * origin's call and completes ΔG·s (on the origin's wire, after its earlier transfers) + ΔL
 * (2ΔL for data coming back) later: the synchronisation completing it is held until then.
 *
 * Counts written at finalize, beyond the above: other_calls, other_bytes (what no knob
 * touches), nbc_calls, pcoll_calls, charged_sends, charged_recvs, charged_rounds,
 * charged_wire_bytes, charged_gaps, charged_done, rma_calls, rma_bytes, rma_round_trips,
 * rma_syncs, rma_requests, charged_hold_ns, isendrecv_calls.
 *
 * Every rank also counts what the knobs touched (the program's point-to-point messages and
 * bytes; the emulated collectives and their messages apart) and what they did not (native
 * collectives: all calls and this rank's bytes minus the emulated ones), and writes the counts
 * at MPI_Finalize to $COMMPERF_EMULATE_DIR/rank-N.emu for the verb to sum: one `key value` a
 * line, keys p2p_sent, p2p_sent_bytes, p2p_recv, p2p_recv_bytes, coll_calls, coll_bytes (every
 * collective), unstamped, untracked, hold_ns, pace_ns (both including the collectives'
 * messages), coll_emulated, coll_emulated_bytes, coll_p2p_sent, coll_p2p_sent_bytes,
 * coll_p2p_recv, dated_watched, dated_estimated, watched_excess_ns (L's arrival dating:
 * arrival.h).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "arrival.h"
#include "coll.h"
#include "emulate.h"

int cpmpi_emu_on = 0;
int cpmpi_emu_l = 0;
int cpmpi_emu_g = 0;

#define TLS __thread __attribute__((tls_model("initial-exec")))

/* Knobs in clock ticks (TSC ticks, or ns when the TSC is not used). */
static uint64_t o_t, g_t, l_t;
/* L's side band runs: L is set, or the emulator is engaged (stamps written and read, arrivals
 * estimated, nothing held at ΔL = 0: its per-message cost is in the anchor as in every setting). */
static int l_on = 0;
static double big_g_t; /* ticks per byte */
static double o_ns, g_ns, big_g_ns, l_ns;
static int use_tsc_e = 0;
static double ticks_per_ns = 1.0;
static int my_rank = 0, n_ranks = 1;

static inline uint64_t mono_ns_e(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Raw ticks, not the shim's per-process ns: two processes' ns mappings differ by their
 * calibration error (ppm: tens of µs over a long run), their TSC readings do not. */
static inline uint64_t ticks(void) {
#if defined(__x86_64__)
    if (use_tsc_e) return __rdtsc();
#endif
    return mono_ns_e();
}

static inline void spin_until(uint64_t t) {
    while ((int64_t)(ticks() - t) < 0) {
#if defined(__x86_64__)
        _mm_pause();
#endif
    }
}

static inline void spin_for(uint64_t d) {
    if (d) spin_until(ticks() + d);
}

/* What a spin costs beyond its length, in ticks (its clock reads and the pause it overshoots
 * by), measured at MPI_Init. */
static double spin_over = 0.0;

/* Spins `d` ticks *on average*: the spin's own cost is taken off its length, and an amount
 * below that cost is owed (in *owed, per kind and thread) and spun once the debts add up to it.
 * A 64-byte message under G = 0.1 ns/B owes 6.4 ns, less than the two clock reads a spin needs:
 * spun one by one, each cost three to six times its length (measured in a sensitivity sweep
 * on the development VM). */
static inline void spin_owed(double *owed, double d) {
    *owed += d;
    if (*owed < spin_over) return;
    uint64_t t0 = ticks();
    double left = *owed - spin_over;
    *owed = 0.0;
    spin_until(t0 + (uint64_t)(left + 0.5));
}

static void measure_spin_over(void) {
    enum { N = 2000 };
    double best = 1e300;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = ticks();
        for (int i = 0; i < N; i++) spin_for(1);
        double per = (double)(ticks() - t0) / N - 1.0;
        if (per < best) best = per;
    }
    spin_over = best > 0.0 ? best : 0.0;
}

/* ---- counts (what the knobs touched and what not) ------------------------------------------ */

static uint64_t c_p2p_sent, c_p2p_sent_bytes, c_p2p_recv, c_p2p_recv_bytes;
static uint64_t c_coll_calls, c_coll_bytes, c_unstamped, c_untracked;
/* Communication calls no knob applies to yet (families.c: nonblocking and persistent
 * collectives, one-sided transfers, MPI_Isendrecv), so the report can say what it left. */
static uint64_t c_other_calls, c_other_bytes;
static uint64_t c_hold_ticks, c_pace_ticks;
/* Collectives run as messages by coll.c (calls, this rank's bytes in them) and those messages. */
static uint64_t c_coll_emulated, c_coll_emulated_bytes, c_cp2p_sent, c_cp2p_sent_bytes, c_cp2p_recv;
/* Charged (the library runs the operation, the knobs charge it: cpmpi_emu_coll_start, _rma):
 * collectives started nonblocking and persistent, their messages (o), rounds (L), wire bytes
 * (G) and gaps (g), completions that came with a due time; one-sided transfers, their bytes, the
 * round trips among them, the synchronisations that completed some, request completions;
 * the time completions and synchronisations were held to their due; Isendrecv calls. */
static uint64_t c_nbc_calls, c_pcoll_calls, c_ch_sends, c_ch_recvs, c_ch_rounds, c_ch_wire, c_ch_gaps;
static uint64_t c_ch_done, c_rma_calls, c_rma_bytes, c_rma_trips, c_rma_syncs, c_rma_reqs;
static uint64_t c_charge_hold_ticks, c_isendrecv;
__thread int cpmpi_emu_in_coll __attribute__((tls_model("initial-exec")));
static int emu_multi = 1; /* MPI_THREAD_MULTIPLE: several threads of a rank may communicate */
/* Atomic only under MPI_THREAD_MULTIPLE: a locked add costs ~20 cycles and drains the store
 * buffer (waiting for whatever line the last store missed on), five of them per message. */
#define CNT(c, v)                                                                                 \
    do {                                                                                         \
        if (emu_multi) __atomic_fetch_add(&(c), (uint64_t)(v), __ATOMIC_RELAXED);                \
        else (c) += (uint64_t)(v);                                                               \
    } while (0)

/* ---- the L side band ------------------------------------------------------------------------ */

#define RING 4096
/* One cache line per stamp: the receiver reading slot k must not pull the line the sender is
 * writing slot k+1 into (false sharing would cost both sides a miss per message). */
typedef struct {
    uint64_t seq; /* slot index + 1 once written (release) */
    uint64_t t;   /* sender's ticks just before injection */
    uint32_t comm;
    int32_t tag;
    char pad[40];
} stamp;
/* head, tail and overflow each on their own line: the receiver reads `overflow` on every
 * receive, and while it shared head's line every send's increment of head took the line back
 * from the receiver (two cross-core misses per message on top of the stamp's own). */
typedef struct {
    volatile uint64_t head; /* next slot a sender takes; only senders touch this line */
    char pad1[56];
    volatile uint64_t tail; /* next slot the receiver reads */
    char pad2[56];
    volatile uint64_t overflow; /* written once, if ever: stays a shared, clean line */
    char pad3[56];
    stamp s[RING];
} ring;

static ring *rings = NULL; /* [src * n + dst] */
static size_t rings_len = 0;

/* Stamps the receiver has read from a ring but not yet matched (another comm or tag), per
 * source: a message is matched to the first stamp of its (comm, tag), as MPI matches it. */
#define PEND 256
typedef struct {
    stamp e[PEND];
    int n;
    cpmpi_oneway w[CPMPI_SIZE_CLASSES]; /* one-way times from this source, by size class */
    int broken;    /* the sender's ring overflowed: its stamps no longer line up */
} pending;
static pending *pend = NULL;

static ring *ring_of(int src, int dst) { return &rings[(size_t)src * (size_t)n_ranks + (size_t)dst]; }

/* The receiver's tail as this sender last read it, per destination: the tail's line is the
 * receiver's, so it is re-read only when the ring looks full (no miss per message). */
static uint64_t *seen_tail = NULL;

static void stamp_send(int dst, uint32_t comm, int tag, uint64_t t) {
    ring *r = ring_of(my_rank, dst);
    /* A locked increment drains the store buffer, so it waited for the previous stamp's line
     * to come back from the receiver: only threads sending at the same time need it. */
    uint64_t h;
    if (emu_multi) {
        h = __atomic_fetch_add(&r->head, 1, __ATOMIC_ACQ_REL);
    } else {
        h = r->head;
        r->head = h + 1;
    }
    if (h - seen_tail[dst] >= RING)
        seen_tail[dst] = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (h - seen_tail[dst] >= RING) {
        /* Never block the sender: the receiver learns it can no longer trust this ring. */
        __atomic_store_n(&r->overflow, 1, __ATOMIC_RELEASE);
        return;
    }
    stamp *s = &r->s[h % RING];
    s->t = t;
    s->comm = comm;
    s->tag = tag;
    __atomic_store_n(&s->seq, h + 1, __ATOMIC_RELEASE);
}

/* The injection time of the message just received from `src` on (comm, tag), or 0. */
static uint64_t stamp_take(int src, uint32_t comm, int tag) {
    pending *p = &pend[src];
    if (p->broken) return 0;
    for (int i = 0; i < p->n; i++)
        if (p->e[i].comm == comm && p->e[i].tag == tag) {
            uint64_t t = p->e[i].t;
            memmove(&p->e[i], &p->e[i + 1], sizeof(stamp) * (size_t)(p->n - i - 1));
            p->n--;
            return t;
        }
    ring *r = ring_of(src, my_rank);
    for (;;) {
        if (__atomic_load_n(&r->overflow, __ATOMIC_ACQUIRE)) { p->broken = 1; return 0; }
        uint64_t tail = r->tail;
        stamp *s = &r->s[tail % RING];
        /* The stamp was written before the message was handed to MPI, so the message's own
         * stamp is visible once the message is; a slot not yet written means no stamp. */
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != tail + 1) return 0;
        stamp e = *s;
        __atomic_store_n(&r->tail, tail + 1, __ATOMIC_RELEASE);
        if (e.comm == comm && e.tag == tag) return e.t;
        if (p->n == PEND) { p->broken = 1; return 0; }
        p->e[p->n++] = e;
    }
}

/* When the message arrived: arrival.h (the typical one-way time of its size class from `src`
 * for one the receiver did not watch come). */
static cpmpi_dating dating;

static uint64_t arrival(int src, uint64_t bytes, uint64_t t_inj, uint64_t t_enter, uint64_t t_done) {
    return cpmpi_arrival(&pend[src].w[cpmpi_size_class(bytes)], &dating, t_inj, t_enter, t_done);
}

/* ---- configuration -------------------------------------------------------------------------- */

static int parse_one(const char *k, const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno) return -1;
    double scale;
    if (strcmp(end, "ns") == 0 || (strcmp(k, "G") == 0 && *end == 0)) scale = 1.0;
    else if (strcmp(end, "us") == 0) scale = 1e3;
    else if (strcmp(end, "ms") == 0) scale = 1e6;
    else if (strcmp(end, "s") == 0) scale = 1e9;
    else return -1;
    x *= scale;
    if (!(x >= 0.0 && x <= 1e9)) return -1;
    *out = x;
    return 0;
}

/* Reads COMMPERF_EMULATE. Returns 0 (fine), or -1 after printing what is wrong. */
static int parse_env(const char *spec) {
    char buf[512];
    if (strlen(spec) >= sizeof buf) {
        fprintf(stderr, "commperf-pmpi: COMMPERF_EMULATE is too long\n");
        return -1;
    }
    strcpy(buf, spec);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            fprintf(stderr, "commperf-pmpi: COMMPERF_EMULATE: %s is not KNOB=VALUE\n", item);
            return -1;
        }
        *eq = 0;
        double *dst = strcmp(item, "o") == 0 ? &o_ns
                    : strcmp(item, "g") == 0 ? &g_ns
                    : strcmp(item, "G") == 0 ? &big_g_ns
                    : strcmp(item, "L") == 0 ? &l_ns : NULL;
        if (!dst) {
            fprintf(stderr, "commperf-pmpi: COMMPERF_EMULATE: %s is not a knob (o, g, G, L)\n", item);
            return -1;
        }
        if (parse_one(item, eq + 1, dst) != 0) {
            fprintf(stderr,
                    "commperf-pmpi: COMMPERF_EMULATE: knob %s: %s is not a duration between 0 and "
                    "1 s%s (e.g. %s=5us)\n",
                    item, eq + 1, strcmp(item, "G") == 0 ? " per byte" : "", item);
            return -1;
        }
    }
    return 0;
}

static uint32_t host_hash(void) {
    char h[256] = {0};
    gethostname(h, sizeof h - 1);
    uint32_t x = 2166136261u;
    for (const char *c = h; *c; c++) { x ^= (uint8_t)*c; x *= 16777619u; }
    return x;
}

/* The side band: every rank maps the same zero-filled file (created by whoever comes first;
 * ftruncate to one size is idempotent). */
static int map_rings(void) {
    const char *dir = getenv("COMMPERF_EMULATE_DIR");
    if (!dir || !*dir) {
        if (my_rank == 0)
            fprintf(stderr, "commperf-pmpi: knob L needs COMMPERF_EMULATE_DIR (set by `commperf "
                            "emulate`) for its side band\n");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/stamps", dir);
    rings_len = sizeof(ring) * (size_t)n_ranks * (size_t)n_ranks;
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)rings_len) != 0) {
        fprintf(stderr, "commperf-pmpi: knob L: cannot create %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    void *m = mmap(NULL, rings_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "commperf-pmpi: knob L: cannot map %s: %s\n", path, strerror(errno));
        return -1;
    }
    rings = m;
    pend = calloc((size_t)n_ranks, sizeof(pending));
    seen_tail = calloc((size_t)n_ranks, sizeof(uint64_t));
    if (!pend || !seen_tail) {
        fprintf(stderr, "commperf-pmpi: knob L: no memory for %d ranks' stamps\n", n_ranks);
        return -1;
    }
    for (int i = 0; i < n_ranks; i++) cpmpi_oneway_init(pend[i].w, CPMPI_SIZE_CLASSES);
    return 0;
}

/* One (TSC, CLOCK_MONOTONIC) pair read back to back: retried until the two TSC reads around
 * the clock read are close, so that a preemption between them (milliseconds on a loaded
 * machine) cannot skew the rate. */
static void tsc_pair(uint64_t *tsc, uint64_t *ns) {
#if defined(__x86_64__)
    for (int i = 0; i < 1000; i++) {
        uint64_t a = __rdtsc(), n = mono_ns_e(), b = __rdtsc();
        if (b - a < 2000 || i == 999) {
            *tsc = a + (b - a) / 2;
            *ns = n;
            return;
        }
    }
#else
    *tsc = *ns = mono_ns_e();
#endif
}

/* Ticks per ns over a window of at least 20 ms between two tight pairs. The shim's own
 * calibration (for the monitor's timestamps) brackets MPI_Init with unbracketed reads; a spin
 * must be right to the per cent, so the knobs get their own. */
static double tsc_rate(void) {
    uint64_t t0, n0, t1, n1;
    tsc_pair(&t0, &n0);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    tsc_pair(&t1, &n1);
    if (n1 <= n0 || t1 <= t0) return 0.0;
    return (double)(t1 - t0) / (double)(n1 - n0);
}

int cpmpi_emu_init(int rank, int size, int use_tsc, uint64_t tsc_mult) {
    my_rank = rank;
    n_ranks = size;
    const char *spec = getenv("COMMPERF_EMULATE");
    if (!spec || !*spec) return 0;
    if (parse_env(spec) != 0) return -1;
    int level = MPI_THREAD_MULTIPLE;
    PMPI_Query_thread(&level);
    emu_multi = level == MPI_THREAD_MULTIPLE;
    use_tsc_e = use_tsc && tsc_mult;
    if (use_tsc_e) {
        ticks_per_ns = tsc_rate();
        use_tsc_e = ticks_per_ns > 0.0;
    }
    if (!use_tsc_e) ticks_per_ns = 1.0;
    o_t = (uint64_t)(o_ns * ticks_per_ns + 0.5);
    g_t = (uint64_t)(g_ns * ticks_per_ns + 0.5);
    l_t = (uint64_t)(l_ns * ticks_per_ns + 0.5);
    big_g_t = big_g_ns * ticks_per_ns;
    /* COMMPERF_EMULATE_ENGAGE=1: every hook runs (collectives as messages, L's side band)
     * whatever the knobs: the apparatus, the same at zero as at any setting, which is what
     * `commperf emulate sweep` runs every setting and its anchor with. */
    const char *engage = getenv("COMMPERF_EMULATE_ENGAGE");
    int engaged = engage && strcmp(engage, "1") == 0;
    int want = o_t || g_t || l_t || big_g_t > 0.0 || engaged;
    if (o_t || big_g_t > 0.0) measure_spin_over();
    if (l_t || engaged) {
        /* The side band is shared memory: every rank must be on this host (engaged without L,
         * ranks on several hosts just go without it). */
        uint32_t h = host_hash(), lo = 0, hi = 0;
        PMPI_Allreduce(&h, &lo, 1, MPI_UINT32_T, MPI_MIN, MPI_COMM_WORLD);
        PMPI_Allreduce(&h, &hi, 1, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
        if (lo != hi && l_t) {
            if (rank == 0)
                fprintf(stderr, "commperf-pmpi: knob L: the ranks run on more than one host; the "
                                "L knob's side band is single-host shared memory\n");
            return -1;
        }
        if (lo == hi) {
            int ok = map_rings() == 0, all = 0;
            PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all) return -1;
            l_on = 1;
        }
    }
    if (want && cpmpi_coll_init(rank) != 0) return -1;
    cpmpi_emu_on = want;
    cpmpi_emu_l = l_on;
    cpmpi_emu_g = g_t != 0;
    if (rank == 0 && getenv("COMMPERF_EMULATE_VERBOSE"))
        fprintf(stderr, "commperf-pmpi: emulating o=%.0fns g=%.0fns G=%.3fns/B L=%.0fns (%s, %.6f ticks/ns, a spin costs %.1f ns)\n",
                o_ns, g_ns, big_g_ns, l_ns, use_tsc_e ? "TSC" : "CLOCK_MONOTONIC", ticks_per_ns,
                spin_over / ticks_per_ns);
    return 0;
}

/* ---- hooks ---------------------------------------------------------------------------------- */

/* Per sender thread: when the wire is free again (g). */
static TLS uint64_t wire_free;
/* Per thread: ticks of o and G owed (spin_owed). */
static TLS double owed_o, owed_g;

/* An injection's start: the sender's o, then g's pacing. */
static void o_and_pace(void) {
    if (o_t) spin_owed(&owed_o, (double)o_t);
    if (wire_free) { /* only with g set: no clock read otherwise */
        uint64_t t = ticks();
        if ((int64_t)(wire_free - t) > 0) {
            CNT(c_pace_ticks, wire_free - t);
            spin_until(wire_free);
        }
    }
}

void cpmpi_emu_send_pre(int dst_world, uint32_t comm, int tag, uint64_t bytes) {
    if (dst_world < 0) return; /* MPI_PROC_NULL: no message */
    /* A message to oneself never leaves the library (it copies it in memory, Open MPI's `self`
     * BTL): it costs the same on the stack emulated as on the one running, so no knob touches
     * it, not even o (a TCP stack's o_s is its kernel send path), as the loop's replay charges
     * it the reference's own overheads (predict --self-overheads). */
    if (dst_world != my_rank) {
        o_and_pace();
        if (big_g_t > 0.0) spin_owed(&owed_g, big_g_t * (double)bytes);
        if (l_on) stamp_send(dst_world, comm, tag, ticks());
    }
    if (cpmpi_emu_in_coll) {
        CNT(c_cp2p_sent, 1);
        CNT(c_cp2p_sent_bytes, bytes);
        return;
    }
    CNT(c_p2p_sent, 1);
    CNT(c_p2p_sent_bytes, bytes);
}

void cpmpi_emu_send_post(int dst_world) {
    if (dst_world < 0 || !g_t || dst_world == my_rank) return;
    wire_free = ticks() + g_t;
}

/* Sendrecv as its non-blocking parts (as Open MPI and MPICH run it themselves), g's slot taken
 * after the send's injection rather than after the receive: a Sendrecv waits for its partner,
 * and that wait is no wire time. */
int cpmpi_emu_paced_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                              void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
                              MPI_Comm comm, MPI_Status *st, int dest_world) {
    MPI_Request rq[2];
    MPI_Status sts[2];
    int rc = PMPI_Irecv(rbuf, rcount, rtype, src, rtag, comm, &rq[0]);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Isend(sbuf, scount, stype, dest, stag, comm, &rq[1]);
    cpmpi_emu_send_post(dest_world);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&rq[0]);
        PMPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        return rc;
    }
    rc = PMPI_Waitall(2, rq, sts);
    *st = sts[0];
    if (rc == MPI_ERR_IN_STATUS)
        rc = sts[0].MPI_ERROR != MPI_SUCCESS ? sts[0].MPI_ERROR : sts[1].MPI_ERROR;
    return rc;
}

/* Nonzero between cpmpi_emu_batch(1) and (0): the return time of the call completing them. */
static TLS uint64_t batch_done;

void cpmpi_emu_batch(int begin) { batch_done = begin && l_on ? ticks() : 0; }

void cpmpi_emu_recv(int src_world, uint32_t comm, int tag, uint64_t bytes, uint64_t t_enter) {
    if (src_world < 0) return;
    if (cpmpi_emu_in_coll) CNT(c_cp2p_recv, 1);
    else {
        CNT(c_p2p_recv, 1);
        CNT(c_p2p_recv_bytes, bytes);
    }
    if (l_on && src_world != my_rank) {
        /* One call that completed several messages completed them all at its return: each is
         * held against that time, not against the end of the previous one's hold (which had
         * made a Waitall of k messages hold k × ΔL). */
        uint64_t done = batch_done ? batch_done : ticks();
        uint64_t inj = stamp_take(src_world, comm, tag);
        if (!inj) CNT(c_unstamped, 1);
        uint64_t due = arrival(src_world, bytes, inj, t_enter, done) + l_t;
        uint64_t now = batch_done ? ticks() : done;
        if ((int64_t)(due - now) > 0) {
            CNT(c_hold_ticks, due - now);
            spin_until(due);
        }
    }
    if (o_t && src_world != my_rank) spin_owed(&owed_o, (double)o_t);
}

uint64_t cpmpi_emu_now(void) { return ticks(); }

void cpmpi_emu_coll(uint64_t bytes) {
    CNT(c_coll_calls, 1);
    CNT(c_coll_bytes, bytes);
    if (cpmpi_coll_take_emulated()) {
        CNT(c_coll_emulated, 1);
        CNT(c_coll_emulated_bytes, bytes);
    }
}

void cpmpi_emu_untracked(void) { CNT(c_untracked, 1); }

void cpmpi_emu_other(uint64_t bytes) {
    CNT(c_other_calls, 1);
    CNT(c_other_bytes, bytes);
}

/* ---- which requests the knobs act on at completion (per thread, open addressing) ----------- */

#define RQ 1024
/* A pointer, allocated on a thread's first tracked request: 40 KiB of static TLS per thread
 * would be taken from every thread of every program, emulated or not. */
static TLS cpmpi_emu_req *rq;
static TLS int rq_n;

static inline unsigned rq_slot(uint64_t k) { return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 54) & (RQ - 1); }

static void track(const cpmpi_emu_req *e) {
    if (!rq) rq = calloc(RQ, sizeof(cpmpi_emu_req));
    if (!rq || !e->key || rq_n >= RQ / 2) { CNT(c_untracked, 1); return; }
    unsigned i = rq_slot(e->key);
    while (rq[i].key && rq[i].key != e->key) i = (i + 1) & (RQ - 1);
    if (!rq[i].key) rq_n++;
    rq[i] = *e;
}

void cpmpi_emu_track(uint64_t key, uint64_t comm) {
    cpmpi_emu_req e = {key, comm, 0, 0, 0, EMU_RQ_RECV, 0};
    track(&e);
}

void cpmpi_emu_track_sendrecv(uint64_t key, uint64_t comm, int src, int tag, uint64_t bytes) {
    cpmpi_emu_req e = {key, comm, bytes, src, tag, EMU_RQ_SENDRECV, 0};
    track(&e);
}

static void track_due(uint64_t key, uint64_t due, int what) {
    cpmpi_emu_req e = {key, 0, due, 0, 0, EMU_RQ_DUE, what};
    track(&e);
}

int cpmpi_emu_untrack(uint64_t key, cpmpi_emu_req *out) {
    if (!key || !rq_n || !rq) return 0;
    unsigned i = rq_slot(key);
    while (rq[i].key && rq[i].key != key) i = (i + 1) & (RQ - 1);
    if (!rq[i].key) return 0;
    *out = rq[i];
    /* Backward-shift deletion: no tombstones, lookups stay short. */
    unsigned j = i;
    for (;;) {
        rq[i].key = 0;
        for (;;) {
            j = (j + 1) & (RQ - 1);
            if (!rq[j].key) { rq_n--; return 1; }
            unsigned h = rq_slot(rq[j].key);
            if ((i <= j) ? (i < h && h <= j) : (i < h || h <= j)) continue;
            break;
        }
        rq[i] = rq[j];
        i = j;
    }
}

/* ---- charges: operations the library runs, the knobs' cost held at their completion --------- */

/* Spins until `due`; the time spun counts as held. */
static void hold_until(uint64_t due) {
    uint64_t now = ticks();
    if ((int64_t)(due - now) <= 0) return;
    CNT(c_charge_hold_ticks, due - now);
    spin_until(due);
}

void cpmpi_emu_hold(const cpmpi_emu_req *r) {
    if (r->what == EMU_DUE_COLL) CNT(c_ch_done, 1);
    else CNT(c_rma_reqs, 1);
    hold_until(r->due);
}

void cpmpi_emu_coll_start(uint64_t key, uint32_t sends, uint32_t recvs, uint32_t rounds, uint64_t wire_bytes,
                          int persistent) {
    if (persistent) CNT(c_pcoll_calls, 1);
    else CNT(c_nbc_calls, 1);
    CNT(c_ch_sends, sends);
    CNT(c_ch_recvs, recvs);
    CNT(c_ch_rounds, rounds);
    CNT(c_ch_wire, wire_bytes);
    uint32_t gaps = sends > 1 ? sends - 1 : 0;
    CNT(c_ch_gaps, gaps);
    /* o: the CPU's share of every message, on this rank's CPU, now (the library's own progress
     * runs in the background or in the calls that follow, where no hook sees it). */
    if (o_t) spin_owed(&owed_o, (double)o_t * (double)(sends + recvs));
    uint64_t delay = (uint64_t)gaps * g_t + (uint64_t)(big_g_t * (double)wire_bytes + 0.5) + (uint64_t)rounds * l_t;
    track_due(key, ticks() + delay, EMU_DUE_COLL);
}

void cpmpi_emu_isendrecv(void) { CNT(c_isendrecv, 1); }

/* One-sided: per window, per target rank, when the origin's transfers to it are complete. One
 * table per process under a lock: transfers of one epoch may come from several threads, and an
 * RMA call costs microseconds beside which an uncontended lock is nothing. */
#define NRWIN 64
typedef struct {
    uint64_t win; /* handle key; 0: a free slot */
    int n;        /* the window's group size */
    uint64_t *due; /* [n]: when the transfers to that rank are complete; 0: none pending */
    int *touched;  /* the ranks with a due, so a synchronisation of all clears only them */
    int ntouched;
} rma_win;
static rma_win rwins[NRWIN];
/* The origin's wire: when the bytes of its last transfer are out (G serialises them). */
static uint64_t rma_wire;
static pthread_mutex_t rma_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t win_key(MPI_Win w) {
    uint64_t k = 0;
    memcpy(&k, &w, sizeof w < sizeof k ? sizeof w : sizeof k);
    return k;
}

/* The window's entry (made on its first transfer; NULL: no room or memory, counted). Locked. */
static rma_win *win_entry(MPI_Win w, int make) {
    uint64_t k = win_key(w);
    rma_win *free_slot = NULL;
    for (int i = 0; i < NRWIN; i++) {
        if (rwins[i].win == k) return &rwins[i];
        if (!rwins[i].win && !free_slot) free_slot = &rwins[i];
    }
    if (!make || !free_slot) return NULL;
    MPI_Group g;
    int n = 0;
    if (PMPI_Win_get_group(w, &g) != MPI_SUCCESS) return NULL;
    PMPI_Group_size(g, &n);
    PMPI_Group_free(&g);
    if (n <= 0) return NULL;
    free_slot->due = calloc((size_t)n, sizeof(uint64_t));
    free_slot->touched = malloc(sizeof(int) * (size_t)n);
    if (!free_slot->due || !free_slot->touched) {
        free(free_slot->due);
        free(free_slot->touched);
        free_slot->due = NULL;
        free_slot->touched = NULL;
        return NULL;
    }
    free_slot->win = k;
    free_slot->n = n;
    free_slot->ntouched = 0;
    return free_slot;
}

void cpmpi_emu_rma_pre(int target_world) {
    if (target_world >= 0 && target_world != my_rank) o_and_pace();
}

void cpmpi_emu_rma(MPI_Win win, int target, int target_world, uint64_t bytes, int round_trip, uint64_t req_key) {
    CNT(c_rma_calls, 1);
    CNT(c_rma_bytes, bytes);
    if (round_trip) CNT(c_rma_trips, 1);
    /* A transfer within the process is a copy, as a message to oneself: no knob. */
    if (target_world < 0 || target_world == my_rank) return;
    uint64_t now = ticks();
    if (g_t) wire_free = now + g_t;
    pthread_mutex_lock(&rma_lock);
    uint64_t start = (int64_t)(rma_wire - now) > 0 ? rma_wire : now;
    uint64_t out = start + (uint64_t)(big_g_t * (double)bytes + 0.5);
    rma_wire = out;
    uint64_t done = out + (round_trip ? 2 * l_t : l_t);
    rma_win *e = win_entry(win, 1);
    if (e && target >= 0 && target < e->n) {
        if (!e->due[target]) e->touched[e->ntouched++] = target;
        if ((int64_t)(done - e->due[target]) > 0 || !e->due[target]) e->due[target] = done;
    } else {
        CNT(c_untracked, 1);
    }
    pthread_mutex_unlock(&rma_lock);
    /* A request-based transfer's request: the origin's part (the data out, or back). */
    if (req_key) track_due(req_key, round_trip ? done : out, EMU_DUE_RMA);
}

void cpmpi_emu_rma_sync(MPI_Win win, int target) {
    uint64_t due = 0;
    int any = 0;
    pthread_mutex_lock(&rma_lock);
    rma_win *e = win_entry(win, 0);
    if (e) {
        for (int i = 0; i < e->ntouched; i++) {
            int t = e->touched[i];
            if (target >= 0 && t != target) continue;
            if (!any || (int64_t)(e->due[t] - due) > 0) due = e->due[t];
            any = 1;
            e->due[t] = 0;
            e->touched[i--] = e->touched[--e->ntouched];
        }
    }
    pthread_mutex_unlock(&rma_lock);
    if (!any) return;
    CNT(c_rma_syncs, 1);
    hold_until(due);
}

void cpmpi_emu_rma_forget(MPI_Win win) {
    pthread_mutex_lock(&rma_lock);
    rma_win *e = win_entry(win, 0);
    if (e) {
        free(e->due);
        free(e->touched);
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&rma_lock);
}

void cpmpi_emu_finalize(void) {
    if (!cpmpi_emu_on) return;
    const char *dir = getenv("COMMPERF_EMULATE_DIR");
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.emu", dir, my_rank);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f,
                    "p2p_sent %llu\np2p_sent_bytes %llu\np2p_recv %llu\np2p_recv_bytes %llu\n"
                    "coll_calls %llu\ncoll_bytes %llu\nunstamped %llu\nuntracked %llu\n"
                    "hold_ns %.0f\npace_ns %.0f\n"
                    "coll_emulated %llu\ncoll_emulated_bytes %llu\ncoll_p2p_sent %llu\n"
                    "coll_p2p_sent_bytes %llu\ncoll_p2p_recv %llu\n"
                    "dated_watched %llu\ndated_estimated %llu\nwatched_excess_ns %.0f\n"
                    "other_calls %llu\nother_bytes %llu\n"
                    "nbc_calls %llu\npcoll_calls %llu\ncharged_sends %llu\ncharged_recvs %llu\n"
                    "charged_rounds %llu\ncharged_wire_bytes %llu\ncharged_gaps %llu\n"
                    "charged_done %llu\nrma_calls %llu\nrma_bytes %llu\nrma_round_trips %llu\n"
                    "rma_syncs %llu\nrma_requests %llu\ncharged_hold_ns %.0f\nisendrecv_calls %llu\n",
                    (unsigned long long)c_p2p_sent, (unsigned long long)c_p2p_sent_bytes,
                    (unsigned long long)c_p2p_recv, (unsigned long long)c_p2p_recv_bytes,
                    (unsigned long long)c_coll_calls, (unsigned long long)c_coll_bytes,
                    (unsigned long long)c_unstamped, (unsigned long long)c_untracked,
                    (double)c_hold_ticks / ticks_per_ns, (double)c_pace_ticks / ticks_per_ns,
                    (unsigned long long)c_coll_emulated, (unsigned long long)c_coll_emulated_bytes,
                    (unsigned long long)c_cp2p_sent, (unsigned long long)c_cp2p_sent_bytes,
                    (unsigned long long)c_cp2p_recv, (unsigned long long)dating.watched,
                    (unsigned long long)dating.estimated, (double)dating.excess / ticks_per_ns,
                    (unsigned long long)c_other_calls, (unsigned long long)c_other_bytes,
                    (unsigned long long)c_nbc_calls, (unsigned long long)c_pcoll_calls,
                    (unsigned long long)c_ch_sends, (unsigned long long)c_ch_recvs,
                    (unsigned long long)c_ch_rounds, (unsigned long long)c_ch_wire,
                    (unsigned long long)c_ch_gaps, (unsigned long long)c_ch_done,
                    (unsigned long long)c_rma_calls, (unsigned long long)c_rma_bytes,
                    (unsigned long long)c_rma_trips, (unsigned long long)c_rma_syncs,
                    (unsigned long long)c_rma_reqs, (double)c_charge_hold_ticks / ticks_per_ns,
                    (unsigned long long)c_isendrecv);
            fclose(f);
        }
    }
    cpmpi_emu_on = 0;
    cpmpi_coll_finalize();
    if (rings) munmap(rings, rings_len);
    rings = NULL;
}
