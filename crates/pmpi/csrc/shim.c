/* commperf-pmpi interposer: the MPI side of `commperf monitor`.
 *
 * Why C: MPI handles are pointers in Open MPI and ints in MPICH, and the prototypes must match the
 * chosen library's mpi.h exactly. This file is compiled once per MPI library by build.rs (with that
 * library's mpicc, -DCPMPI_OPENMPI or -DCPMPI_MPICH) into libcommperf_pmpi_<mpi>.so. It only
 * times calls, turns communicator ranks into world ranks and hands fixed-size events to the Rust
 * runtime (libcommperf_pmpi.so, preloaded beside it), which owns buffering and files.
 *
 * Fortran: Open MPI's Fortran bindings call PMPI_* directly, so the mpi_*_ symbols are wrapped here
 * too (calling pmpi_*_). MPICH's Fortran bindings call the C MPI_* symbols, so wrapping Fortran there
 * would count every call twice: the Fortran wrappers exist only in the Open MPI build.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emulate.h"

#if defined(CPMPI_OPENMPI)
#define CPMPI_FLAVOUR "openmpi"
#define CPMPI_FLAVOUR_NAME "Open MPI"
#define CPMPI_OTHER_NEEDLE "mpich"
#define CPMPI_OTHER_NAME "MPICH"
#define HKEY(h) ((uint64_t)(uintptr_t)(h))
#define COMM_OF(k) ((MPI_Comm)(uintptr_t)(k))
#define WIN_OF(k) ((MPI_Win)(uintptr_t)(k))
#elif defined(CPMPI_MPICH)
#define CPMPI_FLAVOUR "mpich"
#define CPMPI_FLAVOUR_NAME "MPICH"
#define CPMPI_OTHER_NEEDLE "openmpi"
#define CPMPI_OTHER_NAME "Open MPI"
#define HKEY(h) ((uint64_t)(uint32_t)(h))
#define COMM_OF(k) ((MPI_Comm)(uint32_t)(k))
#define WIN_OF(k) ((MPI_Win)(uint32_t)(k))
#else
#error "define CPMPI_OPENMPI or CPMPI_MPICH"
#endif

/* One event, shared with the Rust runtime (crates/pmpi/src/runtime.rs, `CEvent`): 64 bytes. */
typedef struct {
    uint8_t kind;
    uint8_t flags;
    uint16_t pad;
    int32_t peer;   /* world rank of the other side (root for collectives), -1 if none */
    int32_t tag;
    uint32_t comm;  /* communicator id: 0 = MPI_COMM_WORLD, else a hash of its world ranks */
    uint64_t bytes;
    uint64_t t_post_enter, t_post_exit; /* the call that started the operation */
    uint64_t t_done_enter, t_done_exit; /* the call that completed it (same as post if blocking) */
    uint64_t comm_handle;               /* runtime fills the thread id here when recording */
} cev;

/* Event kinds: keep in step with runtime.rs `Kind`. */
enum {
    K_SEND = 1, K_SSEND, K_BSEND, K_RSEND, K_ISEND, K_ISSEND, K_IBSEND, K_IRSEND,
    K_RECV = 10, K_IRECV, K_SENDRECV_SEND, K_SENDRECV_RECV, K_PSEND, K_PRECV,
    K_PROBE = 20, K_IPROBE,
    K_BARRIER = 30, K_BCAST, K_REDUCE, K_ALLREDUCE, K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV,
    K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL, K_ALLTOALLV, K_REDUCE_SCATTER, K_REDUCE_SCATTER_BLOCK,
    K_SCAN, K_EXSCAN, K_ALLTOALLW,
    K_PCONTROL = 60,
    /* families.c: matched probes and their receives, MPI-4 Isendrecv */
    K_MPROBE = 22, K_IMPROBE, K_MRECV = 16, K_IMRECV, K_ISENDRECV_SEND = 18, K_ISENDRECV_RECV,
    /* nonblocking (and, flagged F_PERSISTENT, persistent) collectives: the blocking kinds + 40 */
    K_IBARRIER = 70, K_IBCAST, K_IREDUCE, K_IALLREDUCE, K_IGATHER, K_IGATHERV, K_ISCATTER,
    K_ISCATTERV, K_IALLGATHER, K_IALLGATHERV, K_IALLTOALL, K_IALLTOALLV, K_IREDUCE_SCATTER,
    K_IREDUCE_SCATTER_BLOCK, K_ISCAN, K_IEXSCAN, K_IALLTOALLW,
    /* neighbourhood collectives, blocking then nonblocking */
    K_NEIGHBOR_ALLGATHER = 90, K_NEIGHBOR_ALLGATHERV, K_NEIGHBOR_ALLTOALL, K_NEIGHBOR_ALLTOALLV,
    K_NEIGHBOR_ALLTOALLW, K_INEIGHBOR_ALLGATHER, K_INEIGHBOR_ALLGATHERV, K_INEIGHBOR_ALLTOALL,
    K_INEIGHBOR_ALLTOALLV, K_INEIGHBOR_ALLTOALLW,
    /* one-sided: transfers (peer = target's world rank), request-based ones, synchronisation */
    K_PUT = 100, K_GET, K_ACCUMULATE, K_GET_ACCUMULATE, K_FETCH_AND_OP, K_COMPARE_AND_SWAP,
    K_RPUT, K_RGET, K_RACCUMULATE, K_RGET_ACCUMULATE,
    K_WIN_FENCE = 120, K_WIN_LOCK, K_WIN_UNLOCK, K_WIN_LOCK_ALL, K_WIN_UNLOCK_ALL, K_WIN_POST,
    K_WIN_START, K_WIN_COMPLETE, K_WIN_WAIT, K_WIN_TEST, K_WIN_FLUSH, K_WIN_FLUSH_ALL,
    K_WIN_FLUSH_LOCAL, K_WIN_FLUSH_LOCAL_ALL, K_WIN_SYNC
};
#define F_FORTRAN 1
#define F_ANY_SOURCE 2
#define F_PERSISTENT 4  /* a persistent collective's start (MPI-4 MPI_X_init + MPI_Start) */
#define F_PARTITIONED 8 /* a partitioned send/receive's start (MPI_Psend_init/Precv_init) */
#define F_SYNC 16       /* a persistent synchronous send's start (MPI_Ssend_init + MPI_Start) */
/* The v/w neighbourhood all-to-alls' events carry in `peer` the number of their sizes per
 * neighbour (families.c nbr_sizes; -1: not recorded), not a rank. */
#define PEER_IS_SIZES(k)                                                                         \
    ((k) == K_NEIGHBOR_ALLTOALLV || (k) == K_NEIGHBOR_ALLTOALLW || (k) == K_INEIGHBOR_ALLTOALLV || \
     (k) == K_INEIGHBOR_ALLTOALLW)

/* The Rust runtime (libcommperf_pmpi.so). */
extern int cpmpi_rt_init(int rank, int size, const char *flavour, const char *libversion);
extern void cpmpi_rt_clock(int phase, int64_t offset_ns, int64_t err_ns, int64_t rtt_ns,
                           uint64_t local_ns);
/* This thread's event ring: the layout of runtime.rs `Ring` (repr(C), asserted on both sides).
 * The shim pushes into it itself; the runtime's writer thread drains it. */
typedef struct {
    cev *slots;
    uint64_t mask, thread, pad0[5];
    uint64_t head, tail_cache, drops, pad1[5]; /* the producer's cache line */
    uint64_t tail;                             /* the consumer's */
    uint32_t woken;
} cring;
_Static_assert(offsetof(cring, head) == 64 && offsetof(cring, tail_cache) == 72 &&
               offsetof(cring, drops) == 80 && offsetof(cring, tail) == 128 &&
               offsetof(cring, woken) == 136, "cring must match runtime.rs Ring");
typedef struct reqtable reqtable; /* runtime.rs `ReqTable`, opaque here */
extern cring *cpmpi_rt_ring(void);
extern void cpmpi_rt_wake(void);
extern void cpmpi_rt_thread_multiple(int multiple);
extern reqtable *cpmpi_rt_table(void);
extern void cpmpi_rt_post(reqtable *t, uint64_t key, const cev *e);
extern int cpmpi_rt_take(reqtable *t, uint64_t key, cev *out);
extern void cpmpi_rt_finalize(void);
extern void cpmpi_rt_flush(void);
extern int cpmpi_rt_empty_wrappers(void);
extern void cpmpi_rt_comm(uint32_t id, int inter, int n, const int *world);
extern void cpmpi_rt_neighbors(uint32_t id, int index, int nin, const int *in, int nout, const int *out);
extern void cpmpi_rt_neighbor_counts(int index, int nout, const uint64_t *sends, int nin,
                                     const uint64_t *recvs);
struct cpmpi_stat_s;
extern void cpmpi_rt_calls(int n, const char *const *names, const void *stats);

/* Whether wrappers do more than call PMPI: MON (monitoring on: MPI_Pcontrol,
 * COMMPERF_PMPI_START) and/or EMU (a LogGP knob set: emulate.c). One word, so a wrapper with
 * neither pays one load and one predictable branch.
 * Atomic: any thread of an MPI_THREAD_MULTIPLE program may call MPI_Pcontrol while others are
 * in wrappers. Set with release and read with acquire, so a thread that sees a bit also sees
 * what was set up before it (the runtime at MPI_Init, emulate.c's state): on x86 an acquire
 * load is a plain load, so the hot path costs what the volatile int did. */
static _Atomic int enabled = 0;
#define MON 1
#define EMU 2
#define ENABLED() atomic_load_explicit(&enabled, memory_order_acquire)
#define MONITORING() (ENABLED() & MON)
#define ENABLE(BITS) atomic_fetch_or_explicit(&enabled, (BITS), memory_order_release)
#define DISABLE(BITS) atomic_fetch_and_explicit(&enabled, ~(BITS), memory_order_release)
static int active = 0;               /* set once the runtime is up */
static int empty_mode = 0;           /* benchmark: wrappers that do nothing but call PMPI */
/* Thread-locals use the initial-exec model: this library is preloaded (static TLS), and the
 * default general-dynamic model costs a __tls_get_addr call per access on the hot path. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
/* This thread's state, one thread-local block: a shared library reaches each thread-local
 * variable through its own offset loaded from the GOT, so one block (one offset, fields at
 * constant displacements) makes the hot path's dozen accesses cheaper. The names below are
 * its fields. */
struct cpmpi_site_s;
struct cpmpi_stat_s;
static TLS struct {
    int depth;       /* re-entry guard: calls made by MPI inside a wrapped call */
    int fn;          /* the call being wrapped (FN_x) */
    int poll_fast;   /* an unsampled poll: see enter_poll */
    uint32_t poll_tick;
    uint64_t t0, t1, sent, received, site;
    void *fwd_site;  /* set by a Fortran wrapper forwarding to a C one: the Fortran caller */
    cring *ring;     /* this thread's ring and request table, once it has them */
    reqtable *table;
    struct cpmpi_stat_s *stats;
    struct cpmpi_site_s *sites;
} cpmpi_tls;
#define depth (cpmpi_tls.depth)
#define my_ring (cpmpi_tls.ring)
#define my_table (cpmpi_tls.table)

static int oom_said = 0;
void cpmpi_oom(const char *what) {
    if (__atomic_exchange_n(&oom_said, 1, __ATOMIC_RELAXED) == 0)
        fprintf(stderr,
                "commperf-pmpi: out of memory for %s; it is left out of the record (and runs "
                "without emulation), the program goes on\n",
                what);
}

/* Records one finished event: never blocks; a full ring counts a drop. Wakes the writer once the
 * ring is half full (it otherwise sleeps its flush interval, and a burst of events -- hpcc's
 * RandomAccess under MPICH: over a million a second -- filled the ring within one interval).
 * runtime.rs `Ring::push` is this function in Rust, statement for statement: scripts/loom.sh
 * model-checks it against the writer's drain. Change both together. */
static inline void record(const cev *e) {
    cring *r = my_ring;
    if (__builtin_expect(r == NULL, 0)) {
        r = my_ring = cpmpi_rt_ring();
        if (r == NULL) return;
    }
    uint64_t h = r->head, cap = r->mask + 1;
    if (h - r->tail_cache >= cap / 2) {
        r->tail_cache = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        if (h - r->tail_cache >= cap) {
            __atomic_store_n(&r->drops, r->drops + 1, __ATOMIC_RELAXED);
            return;
        }
        if (h - r->tail_cache >= cap / 2 && !__atomic_load_n(&r->woken, __ATOMIC_RELAXED)) {
            __atomic_store_n(&r->woken, 1, __ATOMIC_RELAXED);
            cpmpi_rt_wake();
        }
    }
    cev *slot = &r->slots[h & r->mask];
    *slot = *e;
    slot->comm_handle = r->thread; /* the file's `aux`: the recording thread */
    __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
}

static inline reqtable *table_for_post(void) {
    if (__builtin_expect(my_table == NULL, 0)) my_table = cpmpi_rt_table();
    return my_table;
}
static MPI_Comm sync_comm = MPI_COMM_NULL;

static inline uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Event times are CLOCK_MONOTONIC nanoseconds, read on the hot path from the TSC where it is
 * invariant: clock_gettime costs ~18 ns in this VM and every recorded call reads the clock
 * twice; rdtsc and one 64x64 multiply cost a few. The TSC is calibrated against
 * CLOCK_MONOTONIC across MPI_Init (tens of ms; at least CAL_MIN_NS), and
 * ns = ns_base + ((tsc - tsc_base) * mult) >> 32. A residual rate error (a few ppm) is a
 * linear drift of this rank's clock, which the reader already interpolates away between the
 * two clock syncs (their local times are taken with this same clock). The file format is
 * unchanged: times stay nanoseconds. COMMPERF_PMPI_CLOCK=monotonic forces clock_gettime. */
static int use_tsc = 0;
static uint64_t tsc_base, ns_base, tsc_mult;
static uint64_t cal_tsc0, cal_ns0;
#define CAL_MIN_NS 5000000ull

#if defined(__x86_64__)
#include <x86intrin.h>
/* Invariant or not: the one rule of crates/transport/src/clock.rs, in tsc.h. */
#include "tsc.h"
#endif

static uint64_t init_t0; /* MPI_Init entered (CLOCK_MONOTONIC): its time in the statistics */
static void clock_cal_start(void) {
    init_t0 = mono_ns();
#if defined(__x86_64__)
    cal_ns0 = mono_ns();
    cal_tsc0 = __rdtsc();
#endif
}

static void clock_cal_finish(void) {
#if defined(__x86_64__)
    const char *e = getenv("COMMPERF_PMPI_CLOCK");
    if ((e && strcmp(e, "monotonic") == 0) || cal_ns0 == 0 || !cpmpi_tsc_invariant()) return;
    uint64_t n1 = mono_ns();
    if (n1 - cal_ns0 < CAL_MIN_NS) {
        /* MPI_Init was quick: wait out the rest of the window (once per process). */
        uint64_t left = CAL_MIN_NS - (n1 - cal_ns0);
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
        n1 = mono_ns();
    }
    uint64_t t1 = __rdtsc();
    if (t1 <= cal_tsc0) return;
    tsc_mult = (uint64_t)((((unsigned __int128)(n1 - cal_ns0)) << 32) / (t1 - cal_tsc0));
    tsc_base = t1;
    ns_base = n1;
    use_tsc = tsc_mult != 0;
#endif
}

/* Always inlined: called from every wrapper, and a call per clock read showed in profiles. */
#define HOT static inline __attribute__((always_inline))
HOT uint64_t now(void) {
#if defined(__x86_64__)
    if (use_tsc) {
        uint64_t d = __rdtsc() - tsc_base;
        return ns_base + (uint64_t)(((unsigned __int128)d * tsc_mult) >> 32);
    }
#endif
    return mono_ns();
}

/* A recorded call's times: read only while monitoring, so that emulation alone does not pay for
 * the clock reads (tens of ns each in a VM) on every call. */
#define STAMP() (MONITORING() ? now() : 0)

/* ---- per-function statistics: every wrapped call counted and timed ------------------------
 *
 * Every wrapper, hand-written or generated (gen/wrappers_c.h), enters through ENTER(FN_x) (a
 * poll through ENTER_POLL) and leaves through LEAVE(): between the two, the call's time in MPI
 * and the bytes it moved go into this thread's entry for its call site (below), or, when the
 * site table has no room or the call is an unsampled poll, into this thread's row for function
 * x. Per thread and unlocked, so that the hot path is a few adds on a line this thread owns;
 * rows and sites are summed per function at MPI_Finalize (cpmpi_rt_calls). The entry time is
 * also the recorded event's (`cur_t0`), so a recorded call reads the clock no more often than
 * before; `cur_t1` is its exit stamp when the wrapper took one. */
/* `timed`: how many of the calls were timed (all but polls' unsampled ones: see enter_poll). */
typedef struct cpmpi_stat_s { uint64_t count, time_ns, min_ns, max_ns, sent, received, timed; } cpmpi_stat;
#include "gen/functions.h"
#define my_stats (cpmpi_tls.stats)
#define cur_fn (cpmpi_tls.fn)
#define cur_t0 (cpmpi_tls.t0)
#define cur_t1 (cpmpi_tls.t1)
#define cur_sent (cpmpi_tls.sent)
#define cur_received (cpmpi_tls.received)
static cpmpi_stat **stat_tables = NULL; /* every thread's, for the sum at MPI_Finalize */
static size_t n_stat_tables = 0;
static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;

/* A thread's new table of `bytes` (zeroed, 64-byte aligned), added to `*list` (every thread's,
 * read at MPI_Finalize); NULL without memory. */
static void *thread_table(size_t bytes, void ***list, size_t *n) {
    void *t = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!t) { cpmpi_oom("a thread's call statistics"); return NULL; }
    memset(t, 0, bytes);
    pthread_mutex_lock(&stat_lock);
    void **v = realloc(*list, sizeof(*v) * (*n + 1));
    if (v) { *list = v; v[(*n)++] = t; }
    pthread_mutex_unlock(&stat_lock);
    if (!v) { free(t); cpmpi_oom("a thread's call statistics"); return NULL; }
    return t;
}

static cpmpi_stat *stats_new(void) {
    return thread_table(FN_COUNT * sizeof(cpmpi_stat), (void ***)&stat_tables, &n_stat_tables);
}

/* Call sites: per thread, (function, the caller's return address) -> count, time (sum, min,
 * max) and bytes, in a fixed open-addressing table of one cache line per entry (no allocation
 * on the hot path). The per-function statistics are these summed at MPI_Finalize, so a call
 * updates one entry; a call whose site finds no slot within SITE_PROBE goes into its
 * function's own row instead (stats[], as MPI_Init's) and is counted in site_overflow, so the
 * report can say what the sites miss while the functions miss nothing.
 * Resolved to module + offset and the nearest symbol (dladdr) at MPI_Finalize; the reader turns
 * them into function at file:line where the module has debug information. */
typedef struct cpmpi_site_s {
    uint64_t addr;
    uint32_t fn1, pad;
    uint64_t count, timed, time_ns, min_ns, max_ns, sent, received;
} __attribute__((aligned(64))) cpmpi_site;
#define NSITES 2048
#define SITE_PROBE 16
#define my_sites (cpmpi_tls.sites)
#define cur_site (cpmpi_tls.site)
/* Set by a Fortran wrapper that forwards to a C wrapper (fortran_openmpi.h): the Fortran caller's
 * address, which is the call's site. */
#define fwd_site (cpmpi_tls.fwd_site)
static cpmpi_site **site_tables = NULL;
static size_t n_site_tables = 0;
static uint64_t site_overflow = 0;

static cpmpi_site *sites_new(void) {
    return thread_table(NSITES * sizeof(cpmpi_site), (void ***)&site_tables, &n_site_tables);
}

/* Per function, the entry of its last call site: a loop calls each function from one place, so
 * the common case is one compare, no hashing. */
static TLS cpmpi_site *site_hint[FN_COUNT];

/* 1 when the call went into its site's entry, 0 when the table had no room for it. */
/* One call into its site's entry; `timed` 0: a poll not sampled (d is 0, min/max untouched). */
HOT void site_put(cpmpi_site *e, uint64_t d, int timed, uint64_t sent, uint64_t received) {
    e->count++; e->sent += sent; e->received += received;
    if (timed) {
        if (e->timed == 0 || d < e->min_ns) e->min_ns = d;
        if (d > e->max_ns) e->max_ns = d;
        e->timed++; e->time_ns += d;
    }
}

HOT int site_add(int fn, uint64_t addr, uint64_t d, int timed, uint64_t sent, uint64_t received) {
    cpmpi_site *e = site_hint[fn];
    if (__builtin_expect(e != NULL && e->addr == addr, 1)) {
        site_put(e, d, timed, sent, received);
        return 1;
    }
    cpmpi_site *t = my_sites;
    if (__builtin_expect(t == NULL, 0)) t = my_sites = sites_new();
    if (!t) return 0;
    uint32_t fn1 = (uint32_t)fn + 1;
    /* Return addresses of distinct call sites differ in their low bits: they index directly. */
    uint64_t h = (addr ^ (addr >> 11) ^ ((uint64_t)fn1 << 3));
    for (int k = 0; k < SITE_PROBE; k++) {
        e = &t[(h + (uint64_t)k) & (NSITES - 1)];
        if (e->fn1 == fn1 && e->addr == addr) {
            site_put(e, d, timed, sent, received);
            site_hint[fn] = e;
            return 1;
        }
        if (e->fn1 == 0) {
            e->fn1 = fn1; e->addr = addr;
            site_put(e, d, timed, sent, received);
            site_hint[fn] = e;
            return 1;
        }
    }
    __atomic_add_fetch(&site_overflow, 1, __ATOMIC_RELAXED);
    return 0;
}

#define cur_poll_fast (cpmpi_tls.poll_fast)
HOT int enter(int fn, void *site) {
    if (!ENABLED() || depth != 0) return 0;
    depth = 1;
    cur_poll_fast = 0;
    cur_fn = fn;
    cur_site = (uint64_t)(uintptr_t)(__builtin_expect(fwd_site == NULL, 1) ? site : fwd_site);
    cur_t1 = 0;
    cur_sent = cur_received = 0;
    cur_t0 = STAMP();
    return 1;
}

HOT void leave(void) {
    if (MONITORING()) {
        if (cur_poll_fast && (cur_sent | cur_received) == 0) {
            /* An unsampled poll that moved no bytes: counted in its function's row only. */
            cpmpi_stat *t = my_stats;
            if (__builtin_expect(t == NULL, 0)) t = my_stats = stats_new();
            if (t) t[cur_fn].count++;
            depth = 0;
            return;
        }
        int timed = cur_t0 != 0;
        uint64_t d = 0;
        if (timed) {
            uint64_t t1 = cur_t1 ? cur_t1 : now();
            d = t1 - cur_t0; /* one monotonic clock: t1 >= t0 */
        }
        if (__builtin_expect(!site_add(cur_fn, cur_site, d, timed, cur_sent, cur_received), 0)) {
            cpmpi_stat *t = my_stats;
            if (t == NULL) t = my_stats = stats_new();
            if (t) {
                cpmpi_stat *s = &t[cur_fn];
                s->count++;
                s->sent += cur_sent;
                s->received += cur_received;
                if (timed) {
                    if (s->timed == 0 || d < s->min_ns) s->min_ns = d;
                    if (d > s->max_ns) s->max_ns = d;
                    s->timed++;
                    s->time_ns += d;
                }
            }
        }
    }
    depth = 0;
}

/* A polling call (the Test family, MPI_Iprobe, MPI_Improbe, MPI_Win_test): counted every time,
 * timed once in POLL_SAMPLE (its mean time is then the sampled calls' mean). A poll loop misses
 * far more often than it hits -- hpcc's RandomAccess polls 20 million times a second -- and two
 * clock reads per poll (tens of ns in a VM) would double such a program's time. */
#define POLL_SAMPLE 64
#define poll_tick (cpmpi_tls.poll_tick)
HOT int enter_poll(int fn, void *site) {
    if (!ENABLED() || depth != 0) return 0;
    depth = 1;
    cur_fn = fn;
    cur_t1 = 0;
    cur_sent = cur_received = 0;
    cur_site = (uint64_t)(uintptr_t)(__builtin_expect(fwd_site == NULL, 1) ? site : fwd_site);
    if (__builtin_expect((++poll_tick & (POLL_SAMPLE - 1)) == 0, 0)) {
        cur_poll_fast = 0;
        cur_t0 = STAMP();
    } else {
        /* Not sampled: unless it moves bytes (a completed receive), only counted. So a poll's
         * call site counts its sampled calls and those that completed a receive. */
        cur_poll_fast = 1;
        cur_t0 = 0;
    }
    return 1;
}
#define ENTER_POLL(FN) enter_poll(FN, __builtin_return_address(0))
/* The wrapper's own return address: the call site in the program (or, for MPICH's Fortran, in
 * its Fortran binding library, which calls the C functions). */
#define ENTER(FN) enter(FN, __builtin_return_address(0))
#define LEAVE() leave()

/* A call the wrappers cannot time between ENTER and LEAVE (MPI_Init: monitoring starts inside
 * it; MPI_Finalize: the statistics are written inside it), counted with the time given. */
static void count_call(int fn, uint64_t d) {
    cpmpi_stat *t = my_stats;
    if (t == NULL) t = my_stats = stats_new();
    if (!t) return;
    cpmpi_stat *s = &t[fn];
    if (s->timed == 0 || d < s->min_ns) s->min_ns = d;
    if (d > s->max_ns) s->max_ns = d;
    s->count++;
    s->timed++;
    s->time_ns += d;
}

/* What the runtime is given per call site (runtime.rs `CSite`). */
typedef struct {
    const char *call, *module, *symbol;
    uint64_t addr, base, symaddr, count, time_ns, sent, received, timed;
} csite;
extern void cpmpi_rt_sites(int n, const csite *sites, uint64_t overflow);

static const char *exe_path(void) {
    static char p[4096];
    if (!p[0]) {
        ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
        p[n > 0 ? n : 0] = 0;
    }
    return p;
}

static int site_cmp(const void *a, const void *b) {
    const cpmpi_site *x = a, *y = b;
    if (x->fn1 != y->fn1) return x->fn1 < y->fn1 ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Every thread's sites merged, each resolved by dladdr (module, its load address, the nearest
 * exported symbol), handed to the runtime once (MPI_Finalize). */
static void sites_write(void) {
    size_t n = 0;
    pthread_mutex_lock(&stat_lock);
    for (size_t k = 0; k < n_site_tables; k++)
        for (int i = 0; i < NSITES; i++) n += site_tables[k][i].fn1 != 0;
    cpmpi_site *all = n ? malloc(sizeof(cpmpi_site) * n) : NULL;
    size_t m = 0;
    if (all)
        for (size_t k = 0; k < n_site_tables; k++)
            for (int i = 0; i < NSITES; i++)
                if (site_tables[k][i].fn1) all[m++] = site_tables[k][i];
    pthread_mutex_unlock(&stat_lock);
    if (!all) {
        if (n) cpmpi_oom("the call sites");
        cpmpi_rt_sites(0, NULL, site_overflow);
        return;
    }
    qsort(all, m, sizeof(cpmpi_site), site_cmp);
    csite *out = calloc(m, sizeof(csite));
    size_t o = 0;
    for (size_t i = 0; out && i < m; i++) {
        if (o > 0 && all[i].fn1 == all[i - 1].fn1 && all[i].addr == all[i - 1].addr) {
            out[o - 1].count += all[i].count; out[o - 1].time_ns += all[i].time_ns;
            out[o - 1].timed += all[i].timed;
            out[o - 1].sent += all[i].sent; out[o - 1].received += all[i].received;
            continue;
        }
        csite *c = &out[o++];
        c->call = cpmpi_fn_names[all[i].fn1 - 1];
        c->addr = all[i].addr;
        c->count = all[i].count; c->time_ns = all[i].time_ns; c->timed = all[i].timed;
        c->sent = all[i].sent; c->received = all[i].received;
        Dl_info info;
        /* addr - 1: inside the call instruction, not the one after it. */
        if (all[i].addr && dladdr((void *)(uintptr_t)(all[i].addr - 1), &info)) {
            /* The main program's name is empty in the loader's list: its path instead. */
            c->module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : exe_path();
            c->base = (uint64_t)(uintptr_t)info.dli_fbase;
            c->symbol = info.dli_sname;
            c->symaddr = (uint64_t)(uintptr_t)info.dli_saddr;
        }
    }
    if (out) cpmpi_rt_sites((int)o, out, site_overflow);
    else cpmpi_oom("the call sites");
    free(out);
    free(all);
}

/* The sum of every thread's table, handed to the runtime once (MPI_Finalize). */
static void stats_write(void) {
    cpmpi_stat *sum = calloc(FN_COUNT, sizeof(cpmpi_stat));
    if (!sum) {
        cpmpi_oom("the call statistics");
        sites_write();
        return;
    }
    pthread_mutex_lock(&stat_lock);
    for (size_t k = 0; k < n_stat_tables; k++)
        for (int i = 0; i < FN_COUNT; i++) {
            const cpmpi_stat *s = &stat_tables[k][i];
            if (!s->count) continue;
            cpmpi_stat *o = &sum[i];
            if (s->timed && (o->timed == 0 || s->min_ns < o->min_ns)) o->min_ns = s->min_ns;
            if (s->max_ns > o->max_ns) o->max_ns = s->max_ns;
            o->count += s->count;
            o->timed += s->timed;
            o->time_ns += s->time_ns;
            o->sent += s->sent;
            o->received += s->received;
        }
    /* The calls that went into their sites' entries. */
    for (size_t k = 0; k < n_site_tables; k++)
        for (int i = 0; i < NSITES; i++) {
            const cpmpi_site *s = &site_tables[k][i];
            if (!s->fn1) continue;
            cpmpi_stat *o = &sum[s->fn1 - 1];
            if (s->timed && (o->timed == 0 || s->min_ns < o->min_ns)) o->min_ns = s->min_ns;
            if (s->max_ns > o->max_ns) o->max_ns = s->max_ns;
            o->count += s->count;
            o->timed += s->timed;
            o->time_ns += s->time_ns;
            o->sent += s->sent;
            o->received += s->received;
        }
    pthread_mutex_unlock(&stat_lock);
    cpmpi_rt_calls(FN_COUNT, cpmpi_fn_names, sum);
    free(sum);
    sites_write();
}

/* ---- communicators: rank -> world rank, id ------------------------------------------------ */

/* A handle's group (a communicator's, a window's): its members' world ranks and its id. One
 * table per kind of handle, under a lock; each thread keeps the last group it used (programs
 * use one or two communicators in a row, and the table lookup takes a lock and scans it).
 *
 * Why reference counts: a thread reads its last group's ranks without the lock, while another
 * thread may free that handle (MPI_Comm_free) or evict its entry (a full table). The table
 * holds one reference to each group and every thread's last entry holds one more, so a group's
 * ranks are freed when the last holder lets go, never under a reader. Copying the ranks into
 * each thread's entry would cost O(group size) per change of communicator, and retiring them
 * until MPI_Finalize would grow without bound in a program that makes and frees communicators
 * in a loop. A thread that exits keeps its one reference (one group per exited thread). */
typedef struct {
    int refs; /* __atomic: the table's and each thread's last entry's */
    uint32_t id;
    int size;
    int world[]; /* size world ranks */
} group_ranks;
typedef struct {
    uint64_t key;
    group_ranks *g; /* NULL: a free slot */
} comm_info;
typedef struct {
    comm_info *slots;
    int n;
    pthread_mutex_t lock;
    /* Bumped whenever an entry is freed or replaced: invalidates the per-thread entries (a
     * freed handle can come back as a different communicator). __atomic. */
    uint32_t gen;
} group_table;
typedef struct { uint64_t key; uint32_t gen; group_ranks *g; } group_last;

#define NCOMM 256
static comm_info comm_slots[NCOMM];
static group_table comms = {comm_slots, NCOMM, PTHREAD_MUTEX_INITIALIZER, 1};
static TLS group_last comm_last;

/* Ids already told to the runtime (cpmpi_rt_comm): once per id per process is enough, a
 * re-made communicator over the same group has the same. Shared by the communicators' and the
 * windows' tables, so under a lock of its own. */
#define MAX_TOLD 4096
static uint32_t told_ids[MAX_TOLD];
static int n_told = 0;
static pthread_mutex_t told_lock = PTHREAD_MUTEX_INITIALIZER;

static void group_unref(group_ranks *g) {
    if (g && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) free(g);
}

/* `g`'s members as world ranks and its id (one reference, the caller's), which every member
 * must compute alike without talking: FNV-1a over the world ranks (two communicators over the
 * same group share an id: documented), the top bit flipped for an inter-communicator. NULL
 * without memory. */
static group_ranks *group_members(MPI_Group g, int inter) {
    MPI_Group wg;
    int n = 0;
    PMPI_Group_size(g, &n);
    if (n < 0) n = 0;
    group_ranks *gr = malloc(sizeof(group_ranks) + sizeof(int) * (size_t)n);
    int *ranks = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!gr || !ranks) {
        free(gr);
        free(ranks);
        cpmpi_oom("a communicator's or window's ranks");
        return NULL;
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n; i++) ranks[i] = i;
    if (n > 0) PMPI_Group_translate_ranks(g, n, ranks, wg, gr->world);
    free(ranks);
    PMPI_Group_free(&wg);
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++) { h ^= (uint32_t)gr->world[i]; h *= 16777619u; }
    if (h == 0) h = 1;
    if (inter) h ^= 0x80000000u;
    gr->refs = 1;
    gr->id = h;
    gr->size = n;
    return gr;
}

/* Tells the runtime group `gr`'s members once per id (the reader replays collectives over
 * them). */
static void group_tell(const group_ranks *gr, int inter) {
    pthread_mutex_lock(&told_lock);
    int told = 0;
    for (int i = 0; i < n_told && !told; i++) told = told_ids[i] == gr->id;
    if (!told && active) {
        cpmpi_rt_comm(gr->id, inter, gr->size, gr->world);
        if (n_told < MAX_TOLD) told_ids[n_told++] = gr->id;
    }
    pthread_mutex_unlock(&told_lock);
}

/* The group of handle `key` in `t`, with a reference for the caller (group_unref); absent,
 * made from the handle's group (`get_group(handle, &inter)`, asked for only when needed) and
 * told to the runtime. NULL without memory. A copy of the table's pointer taken under the
 * lock: nothing the caller holds points into the table. */
static group_ranks *group_lookup(group_table *t, uint64_t key, MPI_Group (*get_group)(uint64_t, int *)) {
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n; i++)
        if (t->slots[i].key == key && t->slots[i].g) {
            group_ranks *g = t->slots[i].g;
            __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED); /* the table holds one: live */
            pthread_mutex_unlock(&t->lock);
            return g;
        }
    int inter = 0;
    MPI_Group mg = get_group(key, &inter);
    group_ranks *g = group_members(mg, inter);
    PMPI_Group_free(&mg);
    if (!g) {
        pthread_mutex_unlock(&t->lock);
        return NULL;
    }
    int slot = -1;
    for (int i = 0; i < t->n && slot < 0; i++) if (!t->slots[i].g) slot = i;
    if (slot < 0) {
        slot = (int)(key % (uint64_t)t->n);
        group_unref(t->slots[slot].g); /* threads that hold it keep it until they let go */
        __atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
    }
    g->refs = 2; /* the table's and the caller's */
    t->slots[slot] = (comm_info){key, g};
    pthread_mutex_unlock(&t->lock);
    group_tell(g, inter);
    return g;
}

/* World rank of group rank `r` of handle `key` (through this thread's last entry `last`), and
 * the group's id; a negative `r` stays as it is, one past the group is -1. Without memory for
 * the group: -1 and the id CPMPI_NO_GROUP (cpmpi_oom said so once). */
#define CPMPI_NO_GROUP 0xffffffffu
static inline int group_world(group_table *t, group_last *last, uint64_t key, int r, uint32_t *id,
                              MPI_Group (*get_group)(uint64_t, int *)) {
    uint32_t gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
    if (last->key != key || last->gen != gen || last->g == NULL) {
        group_ranks *g = group_lookup(t, key, get_group);
        group_unref(last->g);
        *last = (group_last){key, gen, g};
        if (!g) { *id = CPMPI_NO_GROUP; return r < 0 ? r : -1; }
    }
    const group_ranks *g = last->g;
    *id = g->id;
    if (r < 0 || r >= g->size) return r < 0 ? r : -1;
    return g->world[r];
}

/* A freed handle's entry goes (its handle may come back as another group); threads whose last
 * entry it is keep its ranks until they look up another. */
static void group_forget(group_table *t, uint64_t key) {
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n; i++)
        if (t->slots[i].key == key && t->slots[i].g) {
            group_unref(t->slots[i].g);
            t->slots[i].g = NULL;
            t->slots[i].key = 0;
        }
    __atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&t->lock);
}

/* A communicator's group: the remote one of an inter-communicator, as its rank arguments mean. */
static MPI_Group comm_group_of(uint64_t key, int *inter) {
    MPI_Comm c = COMM_OF(key);
    MPI_Group g;
    PMPI_Comm_test_inter(c, inter);
    if (*inter) PMPI_Comm_remote_group(c, &g); else PMPI_Comm_group(c, &g);
    return g;
}

/* World rank of `r` in `c` (and c's id); wildcards and MPI_PROC_NULL stay negative. */
static inline int to_world(MPI_Comm c, int r, uint32_t *id) {
    if (c == MPI_COMM_WORLD) { *id = 0; return r; }
    return group_world(&comms, &comm_last, HKEY(c), r, id, comm_group_of);
}

/* Per-thread one-entry cache of the last datatype's size: PMPI_Type_size per call is a library
 * call (and in Open MPI a handle check); a loop sends one type over and over. A freed datatype's
 * handle can come back as a different type, so MPI_Type_free bumps type_gen. */
static volatile uint32_t type_gen = 1;
static TLS struct { MPI_Datatype t; uint32_t gen; int size; } type_last;

static uint64_t type_bytes(MPI_Datatype t, int count) {
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    uint32_t gen = __atomic_load_n(&type_gen, __ATOMIC_ACQUIRE);
    if (type_last.t != t || type_last.gen != gen) {
        int s = 0;
        PMPI_Type_size(t, &s);
        type_last.t = t; type_last.gen = gen; type_last.size = s;
    }
    return (uint64_t)type_last.size * (uint64_t)count;
}

int MPI_Type_free(MPI_Datatype *t) {
    __atomic_add_fetch(&type_gen, 1, __ATOMIC_RELEASE);
    int in_ = ENTER(FN_Type_free);
    int rc = PMPI_Type_free(t);
    if (in_) LEAVE();
    return rc;
}

/* Bytes a completed receive got: what PMPI_Get_count(st, MPI_BYTE) answers (MPI_UNDEFINED, here
 * 0, above INT_MAX), read from the status fields the library keeps it in rather than through a
 * library call per receive. The shim is compiled against one library's mpi.h, so the fields are
 * known: Open MPI's byte count `_ucount`, MPICH's `count_lo` and the high bits of
 * `count_hi_and_cancelled` (bit 0 is the cancelled flag). */
static inline uint64_t status_bytes(const MPI_Status *st) {
#if defined(CPMPI_OPENMPI)
    uint64_t n = (uint64_t)st->_ucount;
#else
    uint64_t n = (uint64_t)(uint32_t)st->count_lo |
                 ((uint64_t)(uint32_t)st->count_hi_and_cancelled >> 1) << 32;
#endif
    return n > (uint64_t)INT32_MAX ? 0 : n;
}

/* Whether a completed request was cancelled (it moved no message: hpcc's RandomAccess cancels
 * its last MPI_ANY_SOURCE receives), from the status field its library keeps the flag in. */
static inline int was_cancelled(const MPI_Status *st) {
#if defined(CPMPI_OPENMPI)
    return st->_cancelled != 0;
#else
    return (st->count_hi_and_cancelled & 1) != 0;
#endif
}

HOT void fill(cev *e, int kind, int peer, int tag, uint32_t comm, uint64_t bytes,
                        uint64_t t0, uint64_t t1) {
    e->kind = (uint8_t)kind; e->flags = 0; e->pad = 0; e->peer = peer; e->tag = tag;
    e->comm = comm; e->bytes = bytes;
    e->t_post_enter = t0; e->t_post_exit = t1; e->t_done_enter = t0; e->t_done_exit = t1;
    e->comm_handle = 0;
}

/* ---- clock: Cristian min-RTT exchange with rank 0 over a duplicated communicator ---------- */

/* Waits for a message from rank 0 with `tag` without spinning: a rank whose turn has not come
 * (or has passed) sleeps between probes. MPICH's blocking calls busy-poll, and with more ranks
 * than cores (4 ranks on 2 cores) the waiting ranks took the cores from rank 0 and the rank it
 * was timing, so the minimum round trip was milliseconds (error bound ~4 ms instead of µs). */
static void await_root(int tag) {
    int flag = 0;
    struct timespec pause = {0, 50000};
    for (;;) {
        PMPI_Iprobe(0, tag, sync_comm, &flag, MPI_STATUS_IGNORE);
        if (flag) return;
        nanosleep(&pause, NULL);
    }
}

static void clock_sync(int phase) {
    int r, n;
    PMPI_Comm_rank(sync_comm, &r);
    PMPI_Comm_size(sync_comm, &n);
    const int K = 16;
    int64_t *tab = NULL, mine[3] = {0, 0, 0};
    if (r == 0) {
        tab = calloc((size_t)n * 3, sizeof(int64_t));
        /* Without memory for the table each rank gets its row as soon as it is measured (it
         * may then spin while the next is timed: a looser bound, not a failure). */
        if (!tab) cpmpi_oom("the clock table");
        for (int p = 1; p < n; p++) {
            int64_t best = INT64_MAX, off = 0;
            for (int k = 0; k < K; k++) {
                int64_t tp;
                uint64_t t0 = now();
                PMPI_Send(NULL, 0, MPI_BYTE, p, 1, sync_comm);
                PMPI_Recv(&tp, 1, MPI_INT64_T, p, 2, sync_comm, MPI_STATUS_IGNORE);
                uint64_t t1 = now();
                int64_t rtt = (int64_t)(t1 - t0);
                if (rtt < best) { best = rtt; off = (int64_t)((t0 + t1) / 2) - tp; }
            }
            int64_t row[3] = {off, (best + 1) / 2, best};
            if (tab) memcpy(tab + 3 * p, row, sizeof row);
            else PMPI_Send(row, 3, MPI_INT64_T, p, 3, sync_comm);
        }
        /* Each rank's row by point to point (a Scatter would have the others spin meanwhile). */
        for (int p = 1; tab && p < n; p++) PMPI_Send(tab + 3 * p, 3, MPI_INT64_T, p, 3, sync_comm);
    } else {
        await_root(1); /* until this rank's turn: asleep, not spinning */
        for (int k = 0; k < K; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, 1, sync_comm, MPI_STATUS_IGNORE);
            int64_t tp = (int64_t)now();
            PMPI_Send(&tp, 1, MPI_INT64_T, 0, 2, sync_comm);
        }
        await_root(3);
        PMPI_Recv(mine, 3, MPI_INT64_T, 0, 3, sync_comm, MPI_STATUS_IGNORE);
    }
    free(tab);
    cpmpi_rt_clock(phase, mine[0], mine[1], mine[2], now());
}

/* ---- refusing the wrong MPI --------------------------------------------------------------- */

static int other_mpi_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *name = info->dlpi_name;
    if (name && (strstr(name, "libmpi") || strstr(name, "libmpich"))) {
        char buf[4096];
        const char *real = realpath(name, buf) ? buf : name;
        if (strstr(real, CPMPI_OTHER_NEEDLE) || strstr(name, CPMPI_OTHER_NEEDLE)) {
            /* Copied: `buf` is this call's. A static buffer, no allocation to fail. */
            static char found[4096];
            snprintf(found, sizeof found, "%s", real);
            *(const char **)data = found;
            return 1;
        }
    }
    return 0;
}

/* Runs when the interposer is loaded: a program linked against the other MPI would now hold
 * two MPI libraries and call into both; refuse it before main with a message naming both. */
__attribute__((constructor)) static void cpmpi_check_library(void) {
    const char *other = NULL;
    dl_iterate_phdr(other_mpi_cb, &other);
    if (other) {
        fprintf(stderr,
                "commperf-pmpi: this interposer (libcommperf_pmpi_%s.so) was built for %s, but the "
                "program links %s (%s); use libcommperf_pmpi_%s.so, or let `commperf monitor` "
                "choose\n",
                CPMPI_FLAVOUR, CPMPI_FLAVOUR_NAME, CPMPI_OTHER_NAME, other,
                strcmp(CPMPI_FLAVOUR, "openmpi") == 0 ? "mpich" : "openmpi");
        _exit(97);
    }
}

/* ---- init / finalize / control ------------------------------------------------------------ */

static void after_init(int fn) {
    int r, n, len = 0;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    PMPI_Get_library_version(ver, &len);
    empty_mode = cpmpi_rt_empty_wrappers();
    /* Emulation without monitoring (`commperf emulate`) runs without the recording runtime. */
    int emulating = getenv("COMMPERF_EMULATE") != NULL;
    if (!emulating || getenv("COMMPERF_PMPI_DIR")) {
        if (cpmpi_rt_init(r, n, CPMPI_FLAVOUR, ver) == 0) {
            int level = MPI_THREAD_SINGLE;
            PMPI_Query_thread(&level);
            cpmpi_rt_thread_multiple(level == MPI_THREAD_MULTIPLE);
            active = 1;
        }
        else if (!emulating) return;
    }
    if (!empty_mode) clock_cal_finish();
    if (emulating) {
        /* Knobs the program cannot run with stop it now, on every rank, not mid-run. */
        if (cpmpi_emu_init(r, n, use_tsc, tsc_mult) != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
        if (cpmpi_emu_on) ENABLE(EMU);
    }
    if (!active) return;
    PMPI_Comm_dup(MPI_COMM_WORLD, &sync_comm);
    clock_sync(0);
    const char *start = getenv("COMMPERF_PMPI_START");
    int mon = !(start && (strcmp(start, "off") == 0 || strcmp(start, "0") == 0));
    if (empty_mode) mon = 0;
    if (mon) ENABLE(MON);
    if (MONITORING()) count_call(fn, mono_ns() - init_t0);
}

static void before_finalize(void) {
    /* Counted, not timed: its time is spent after the statistics are written. */
    if (MONITORING() && depth == 0) count_call(FN_Finalize, 0);
    DISABLE(MON | EMU);
    cpmpi_emu_finalize();
    if (!active) return;
    clock_sync(1);
    PMPI_Comm_free(&sync_comm);
    stats_write();
    cpmpi_rt_finalize();
    active = 0;
}

int MPI_Init(int *argc, char ***argv) {
    clock_cal_start();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) after_init(FN_Init);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    clock_cal_start();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) after_init(FN_Init_thread);
    return rc;
}

int MPI_Finalize(void) {
    before_finalize();
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int code) {
    if (active) cpmpi_rt_flush();
    return PMPI_Abort(comm, code);
}

static void pcontrol(int level) {
    if (!active || empty_mode) return;
    cev e;
    uint64_t t = now();
    fill(&e, K_PCONTROL, -1, level, 0, 0, t, t);
    record(&e);
    /* mpiP's convention: 0 stops monitoring, any other level (re)starts it. */
    if (level != 0) ENABLE(MON); else DISABLE(MON);
}

int MPI_Pcontrol(const int level, ...) {
    pcontrol(level);
    return MPI_SUCCESS;
}

static void nbr_forget(uint64_t key);
int MPI_Comm_free(MPI_Comm *comm) {
    group_forget(&comms, HKEY(*comm));
    nbr_forget(HKEY(*comm));
    int in_ = ENTER(FN_Comm_free);
    int rc = PMPI_Comm_free(comm);
    if (in_) LEAVE();
    return rc;
}

/* ---- point to point ----------------------------------------------------------------------- */

HOT void rec_send(int kind, int flags, int dest, int tag, MPI_Comm comm, uint64_t bytes,
                            uint64_t t0, uint64_t t1) {
    cev e;
    uint32_t id;
    if (!MONITORING()) return;
    int w = to_world(comm, dest, &id);
    if (w < 0) return; /* MPI_PROC_NULL: no message */
    cur_sent += bytes;
    fill(&e, kind, w, tag, id, bytes, t0, t1);
    e.flags = (uint8_t)flags;
    record(&e);
}

HOT void rec_recv(int kind, int flags, MPI_Comm comm, const MPI_Status *st,
                            uint64_t t0, uint64_t t1) {
    cev e;
    uint32_t id;
    if (!MONITORING() || st->MPI_SOURCE == MPI_PROC_NULL) return;
    int w = to_world(comm, st->MPI_SOURCE, &id);
    if (kind != K_PROBE && kind != K_IPROBE && kind != K_MPROBE && kind != K_IMPROBE)
        cur_received += status_bytes(st);
    fill(&e, kind, w, st->MPI_TAG, id, status_bytes(st), t0, t1);
    e.flags = (uint8_t)flags;
    record(&e);
}

/* ---- the LogGP knobs' hooks (emulate.c): each a single predictable branch when no knob is set */

#define EMU_ON() __builtin_expect(cpmpi_emu_on, 0)
/* Before a send is handed to PMPI: o, g, G, L's stamp. Declares the destination's world rank. */
#define EMU_SEND_PRE(DEST, COMM, TAG, BYTES)                                                     \
    int emu_w_ = -1;                                                                             \
    if (EMU_ON()) {                                                                              \
        uint32_t emu_id_;                                                                        \
        emu_w_ = to_world(COMM, DEST, &emu_id_);                                                 \
        cpmpi_emu_send_pre(emu_w_, emu_id_, TAG, BYTES);                                         \
    }
#define EMU_SEND_POST() if (EMU_ON()) cpmpi_emu_send_post(emu_w_)
/* When the receiving call was entered, for L's arrival estimate. */
/* Only L needs it: the other knobs read no clock on the receiving side before the completion. */
#define EMU_ENTER() (EMU_ON() && cpmpi_emu_l ? cpmpi_emu_now() : 0)

/* A receive on `comm` completed with status `st`: L's hold, then o. */
static void emu_received(MPI_Comm comm, const MPI_Status *st, uint64_t te) {
    /* A cancelled receive delivered nothing (MPICH reports it as a 0-byte message from a peer). */
    if (st->MPI_SOURCE == MPI_PROC_NULL || st->MPI_SOURCE < 0 || was_cancelled(st)) return;
    uint32_t id;
    int w = to_world(comm, st->MPI_SOURCE, &id);
    cpmpi_emu_recv(w, id, st->MPI_TAG, status_bytes(st), te);
}

/* MPICH 4.0's status of a completed MPI_Isendrecv is not the receive's (source 0, tag 0,
 * count 0 whatever arrived): a status that contradicts the receive's posted source (world rank;
 * < 0: any) or tag is not believed. */
static int sendrecv_status_false(MPI_Comm comm, int posted_world, int posted_tag, const MPI_Status *st) {
    if (posted_world < 0) return 0;
    uint32_t id;
    return to_world(comm, st->MPI_SOURCE, &id) != posted_world ||
           (posted_tag != MPI_ANY_TAG && st->MPI_TAG != posted_tag);
}

/* An MPI_Isendrecv's receive half completed: delivered under the knobs, with what was posted
 * where the status is not believed. */
static void emu_sendrecv_received(const cpmpi_emu_req *r, const MPI_Status *st, uint64_t te) {
    MPI_Comm comm = COMM_OF(r->comm);
    uint32_t id = 0;
    int w = r->src >= 0 ? to_world(comm, r->src, &id) : -1;
    if (was_cancelled(st) || !sendrecv_status_false(comm, w, r->tag, st)) {
        emu_received(comm, st, te);
        return;
    }
    cpmpi_emu_recv(w, id, r->tag, r->due, te);
}

/* A request completed: a tracked receive is delivered under the knobs, a charged operation
 * (a collective or one-sided transfer the library ran) held to its due time. */
static void emu_done(uint64_t key, const MPI_Status *st, uint64_t te) {
    cpmpi_emu_req r;
    if (!cpmpi_emu_untrack(key, &r)) return;
    if (r.kind == EMU_RQ_DUE) cpmpi_emu_hold(&r);
    else if (r.kind == EMU_RQ_SENDRECV) emu_sendrecv_received(&r, st, te);
    else emu_received(COMM_OF(r.comm), st, te);
}

static void emu_done_many(const uint64_t *keys, const int *idx, int n, const MPI_Status *sts,
                          int status_by_index, uint64_t te) {
    cpmpi_emu_batch(1);
    for (int i = 0; i < n; i++) {
        int j = idx ? idx[i] : i;
        emu_done(keys[j], &sts[status_by_index ? j : i], te);
    }
    cpmpi_emu_batch(0);
}

/* g's slot starts where the injection ends; a blocking send's return may also wait for the
 * receiver (rendezvous, Ssend), so under g it runs as its non-blocking form and a wait (MPI's
 * own definition of the blocking send), the slot taken between the two. */
#define EMU_PACED() (EMU_ON() && cpmpi_emu_g)

#define SEND_WRAP(NAME, INAME, KIND)                                                             \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) { \
        if (!ENTER(FN_##NAME)) return PMPI_##NAME(buf, count, dt, dest, tag, comm);                      \
        uint64_t t0 = cur_t0;                                                                     \
        EMU_SEND_PRE(dest, comm, tag, type_bytes(dt, count))                                     \
        int rc;                                                                                  \
        if (EMU_PACED()) {                                                                       \
            MPI_Request r_;                                                                      \
            rc = PMPI_##INAME(buf, count, dt, dest, tag, comm, &r_);                             \
            EMU_SEND_POST();                                                                     \
            if (rc == MPI_SUCCESS) rc = PMPI_Wait(&r_, MPI_STATUS_IGNORE);                       \
        } else {                                                                                 \
            rc = PMPI_##NAME(buf, count, dt, dest, tag, comm);                                   \
            EMU_SEND_POST();                                                                     \
        }                                                                                        \
        uint64_t t1 = (cur_t1 = STAMP());                                                                     \
        rec_send(KIND, 0, dest, tag, comm, type_bytes(dt, count), t0, t1);                       \
        LEAVE();                                                                                 \
        return rc;                                                                               \
    }
SEND_WRAP(Send, Isend, K_SEND)
SEND_WRAP(Ssend, Issend, K_SSEND)
SEND_WRAP(Bsend, Ibsend, K_BSEND)
SEND_WRAP(Rsend, Irsend, K_RSEND)

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!ENTER(FN_Recv)) return PMPI_Recv(buf, count, dt, src, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    int rc = PMPI_Recv(buf, count, dt, src, tag, comm, st);
    if (rc == MPI_SUCCESS && EMU_ON()) emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) rec_recv(K_RECV, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, comm, st, t0, t1);
    LEAVE();
    return rc;
}

/* A posted nonblocking operation, kept under `key` until the call that completes it. Receives
 * (their size is the status's) count their bytes there; sends count theirs here. */
HOT void post_key(int kind, int flags, int peer, int tag, MPI_Comm comm, uint64_t bytes,
                            uint64_t t0, uint64_t t1, uint64_t key) {
    cev e;
    uint32_t id;
    if (!MONITORING()) return;
    int w = to_world(comm, peer, &id);
    if (peer == MPI_PROC_NULL) return;
    if (kind != K_IRECV && kind != K_PRECV && kind != K_IMRECV && kind != K_ISENDRECV_RECV)
        cur_sent += bytes;
    fill(&e, kind, w, tag, id, bytes, t0, t1);
    e.flags = (uint8_t)flags;
    e.comm_handle = HKEY(comm);
    cpmpi_rt_post(table_for_post(), key, &e);
}
#define post(KIND, FLAGS, PEER, TAG, COMM, BYTES, T0, T1, REQ)                                   \
    post_key(KIND, FLAGS, PEER, TAG, COMM, BYTES, T0, T1, HKEY(REQ))

#define ISEND_WRAP(NAME, KIND)                                                                   \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, \
                   MPI_Request *req) {                                                           \
        if (!ENTER(FN_##NAME)) return PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                  \
        uint64_t t0 = cur_t0;                                                                     \
        EMU_SEND_PRE(dest, comm, tag, type_bytes(dt, count))                                     \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                              \
        EMU_SEND_POST();                                                                         \
        uint64_t t1 = (cur_t1 = STAMP());                                                                     \
        if (rc == MPI_SUCCESS) post(KIND, 0, dest, tag, comm, type_bytes(dt, count), t0, t1, *req); \
        LEAVE();                                                                                 \
        return rc;                                                                               \
    }
ISEND_WRAP(Isend, K_ISEND)
ISEND_WRAP(Issend, K_ISSEND)
ISEND_WRAP(Ibsend, K_IBSEND)
ISEND_WRAP(Irsend, K_IRSEND)

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *req) {
    if (!ENTER(FN_Irecv)) return PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    uint64_t t0 = cur_t0;
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    if (rc == MPI_SUCCESS && EMU_ON() && src != MPI_PROC_NULL) cpmpi_emu_track(HKEY(*req), HKEY(comm));
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS)
        post(K_IRECV, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, src, tag, comm,
             type_bytes(dt, count), t0, t1, *req);
    LEAVE();
    return rc;
}

/* ---- persistent requests ------------------------------------------------------------------- */

/* What MPI_Send_init/Recv_init (and the Ssend/Bsend/Rsend variants) declared, by request handle:
 * each MPI_Start of the request then posts one operation with these arguments, recorded like an
 * Isend/Irecv (kinds K_PSEND/K_PRECV, "MPI_Start(send)"/"MPI_Start(recv)") and put under the
 * knobs like one. Registered whenever the runtime or the knobs are up, so that a request made
 * while monitoring was paused (MPI_Pcontrol(0)) is still known when it is started later. An
 * open-addressing table under a lock: init and free are rare, and a start costs one uncontended
 * lock, next to the MPI_Start it wraps. */
typedef struct {
    uint64_t key; /* 0 = empty, 1 = deleted */
    uint64_t comm, bytes;
    int32_t peer, tag;
    uint8_t send, flags;
    uint8_t coll; /* 0: point to point; else a persistent collective's K_I* kind (peer: root) */
} pinit;
static pinit *pinits = NULL;
static size_t pinit_cap = 0, pinit_used = 0;
static pthread_mutex_t pinit_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t pinit_home(uint64_t key) { return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20); }

static void pinit_put_locked(const pinit *p);
static void pinit_grow_locked(void) {
    pinit *old = pinits;
    size_t n = pinit_cap;
    size_t cap = n ? n * 2 : 64;
    pinit *t = calloc(cap, sizeof(pinit));
    if (!t) return;
    pinits = t;
    pinit_cap = cap;
    pinit_used = 0;
    for (size_t i = 0; i < n; i++)
        if (old[i].key > 1) pinit_put_locked(&old[i]);
    free(old);
}
static void pinit_put_locked(const pinit *p) {
    if ((pinit_used + 1) * 2 > pinit_cap) pinit_grow_locked();
    if (!pinit_cap || (pinit_used + 1) * 2 > pinit_cap) return; /* out of memory: not tracked */
    for (size_t i = pinit_home(p->key) & (pinit_cap - 1);; i = (i + 1) & (pinit_cap - 1))
        if (pinits[i].key <= 1 || pinits[i].key == p->key) {
            if (pinits[i].key != p->key) pinit_used++;
            pinits[i] = *p;
            return;
        }
}
static pinit *pinit_find_locked(uint64_t key) {
    if (!pinit_cap || key <= 1) return NULL;
    for (size_t i = pinit_home(key) & (pinit_cap - 1), k = 0; k < pinit_cap; i = (i + 1) & (pinit_cap - 1), k++) {
        if (pinits[i].key == key) return &pinits[i];
        if (pinits[i].key == 0) return NULL;
    }
    return NULL;
}
static void pinit_register(int send, int flags, int peer, int tag, MPI_Comm comm, uint64_t bytes,
                           MPI_Request req) {
    pinit p = {HKEY(req), HKEY(comm), bytes, peer, tag, (uint8_t)send, (uint8_t)flags, 0};
    if (p.key <= 1 || peer == MPI_PROC_NULL) return;
    pthread_mutex_lock(&pinit_lock);
    pinit_put_locked(&p);
    pthread_mutex_unlock(&pinit_lock);
}
static int pinit_lookup(uint64_t key, pinit *out) {
    pthread_mutex_lock(&pinit_lock);
    pinit *p = pinit_find_locked(key);
    if (p) *out = *p;
    pthread_mutex_unlock(&pinit_lock);
    return p != NULL;
}
static void pinit_forget(uint64_t key) {
    pthread_mutex_lock(&pinit_lock);
    pinit *p = pinit_find_locked(key);
    if (p) p->key = 1; /* deleted: keeps later probe runs intact */
    pthread_mutex_unlock(&pinit_lock);
}

#define TRACKING() (active || EMU_ON())
/* Registered whenever tracking, also inside another wrapped call; counted when entered. FLAGS:
 * F_SYNC for MPI_Ssend_init, whose starts are synchronous sends (the rendezvous whatever the
 * size) and recorded so. */
#define PINIT_SEND_WRAP(NAME, FLAGS)                                                             \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, \
                   MPI_Request *req) {                                                           \
        int in_ = ENTER(FN_##NAME);                                                              \
        int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                              \
        if (rc == MPI_SUCCESS && TRACKING())                                                     \
            pinit_register(1, FLAGS, dest, tag, comm, type_bytes(dt, count), *req);             \
        if (in_) LEAVE();                                                                        \
        return rc;                                                                               \
    }
PINIT_SEND_WRAP(Send_init, 0)
PINIT_SEND_WRAP(Ssend_init, F_SYNC)
PINIT_SEND_WRAP(Bsend_init, 0)
PINIT_SEND_WRAP(Rsend_init, 0)

int MPI_Recv_init(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                  MPI_Request *req) {
    int in_ = ENTER(FN_Recv_init);
    int rc = PMPI_Recv_init(buf, count, dt, src, tag, comm, req);
    if (rc == MPI_SUCCESS && TRACKING())
        pinit_register(0, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, src, tag, comm,
                       type_bytes(dt, count), *req);
    if (in_) LEAVE();
    return rc;
}

/* One persistent request is being started: the knobs before (a send's o, g, G, L stamp) ... */
static void start_pre(const pinit *p) {
    if (EMU_ON() && p->send && !p->coll) {
        uint32_t id;
        int w = to_world(COMM_OF(p->comm), p->peer, &id);
        cpmpi_emu_send_pre(w, id, p->tag, p->bytes);
    }
}
/* ... and after: g's next slot, a receive's tracking, the record of the post. */
static void post_coll(int kind, int root, MPI_Comm comm, uint64_t bytes, uint64_t t0, uint64_t t1,
                      MPI_Request req, int flags);
static void emu_coll_charge(int kind, int root, MPI_Comm comm, uint64_t bytes, MPI_Request req, int persistent);
static void start_post(const pinit *p, MPI_Request req, uint64_t t0, uint64_t t1, int flags) {
    if (p->coll) {
        if (EMU_ON()) emu_coll_charge(p->coll, p->peer, COMM_OF(p->comm), p->bytes, req, 1);
        post_coll(p->coll, p->peer, COMM_OF(p->comm), p->bytes, t0, t1, req, F_PERSISTENT | flags);
        if (MONITORING()) cur_sent += p->bytes; /* the collective's send contribution */
        return;
    }
    if (EMU_ON()) {
        if (p->send) {
            uint32_t id;
            cpmpi_emu_send_post(to_world(COMM_OF(p->comm), p->peer, &id));
        } else {
            cpmpi_emu_track(HKEY(req), p->comm);
        }
    }
    post(p->send ? K_PSEND : K_PRECV, p->flags | flags, p->peer, p->tag, COMM_OF(p->comm),
         p->bytes, t0, t1, req);
}

int MPI_Start(MPI_Request *req) {
    pinit p;
    if (!ENTER(FN_Start)) return PMPI_Start(req);
    if (!pinit_lookup(HKEY(*req), &p)) { /* made before MPI_Init's interposer was up */
        int rc = PMPI_Start(req);
        LEAVE();
        return rc;
    }
    uint64_t t0 = cur_t0;
    start_pre(&p);
    int rc = PMPI_Start(req);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) start_post(&p, *req, t0, t1, 0);
    LEAVE();
    return rc;
}

int MPI_Startall(int count, MPI_Request reqs[]) {
    if (!ENTER(FN_Startall)) return PMPI_Startall(count, reqs);
    /* One at a time through PMPI_Start: each send gets its own o, g and G before it leaves,
     * as a loop of MPI_Start would (Startall's own order is unspecified by MPI anyway). */
    int rc = MPI_SUCCESS;
    for (int i = 0; i < count && rc == MPI_SUCCESS; i++) {
        pinit p;
        if (!pinit_lookup(HKEY(reqs[i]), &p)) {
            rc = PMPI_Start(&reqs[i]);
            continue;
        }
        uint64_t t0 = cur_t0;
        start_pre(&p);
        rc = PMPI_Start(&reqs[i]);
        uint64_t t1 = (cur_t1 = STAMP());
        if (rc == MPI_SUCCESS) start_post(&p, reqs[i], t0, t1, 0);
    }
    LEAVE();
    return rc;
}

/* Memory an operation may read until its request completes (the Open MPI Fortran nonblocking
 * w-forms' converted datatype arrays, fortran_openmpi.h, as Open MPI's own Fortran binding keeps
 * its converted arrays with the request): freed by the wrapped call that completes the request
 * (complete, below). A small table under a lock; `kept_n`, read without it, keeps every other
 * completion free of the lock. With the table full the memory is kept for good: a leak, never a
 * read after free. */
#define NKEPT 256
static struct { uint64_t key; void *p; } kept[NKEPT];
static int kept_n = 0;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* (Used by the Open MPI build's Fortran wrappers only.) */
__attribute__((unused)) static void keep_until_done(uint64_t key, void *p) {
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < NKEPT; i++)
        if (!kept[i].p) {
            kept[i].key = key;
            kept[i].p = p;
            __atomic_add_fetch(&kept_n, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&kept_lock);
}

static void kept_release(uint64_t key) {
    if (!__atomic_load_n(&kept_n, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < NKEPT; i++)
        if (kept[i].p && kept[i].key == key) {
            free(kept[i].p);
            kept[i].p = NULL;
            __atomic_sub_fetch(&kept_n, 1, __ATOMIC_RELEASE);
        }
    pthread_mutex_unlock(&kept_lock);
}

/* A tracked request completed: give it its completion times, and for a receive the source, tag
 * and size the status reports. Requests we never saw posted (collective, or made before MPI_Init) are ignored. */
/* MPI_Isendrecv's send half is posted under its request's key with this bit flipped. */
#define SENDRECV_KEY_BIT (1ull << 62)
static void complete(uint64_t key, const MPI_Status *st, uint64_t t0, uint64_t t1) {
    cev e;
    kept_release(key);
    if (!MONITORING() || !cpmpi_rt_take(my_table, key, &e)) return;
    if (st && was_cancelled(st)) return;
    e.t_done_enter = t0;
    e.t_done_exit = t1;
    if (e.kind == K_ISENDRECV_RECV) {
        /* One request completes both halves: the send half was posted under the other key. */
        cev snd;
        if (cpmpi_rt_take(my_table, key ^ SENDRECV_KEY_BIT, &snd)) {
            snd.t_done_enter = t0;
            snd.t_done_exit = t1;
            snd.comm_handle = 0;
            record(&snd);
        }
    }
    /* MPICH 4.0's Isendrecv status: the posted source, tag and size stand. */
    if (e.kind == K_ISENDRECV_RECV && st) {
        if (sendrecv_status_false(COMM_OF(e.comm_handle), e.peer, e.tag, st)) {
            cur_received += e.bytes;
            e.comm_handle = 0;
            record(&e);
            return;
        }
    }
    if ((e.kind == K_IRECV || e.kind == K_PRECV || e.kind == K_IMRECV || e.kind == K_ISENDRECV_RECV) && st) {
        if (st->MPI_SOURCE == MPI_PROC_NULL) return;
        uint32_t id;
        MPI_Comm c = COMM_OF(e.comm_handle);
        e.peer = to_world(c, st->MPI_SOURCE, &id);
        e.tag = st->MPI_TAG;
        e.bytes = status_bytes(st);
        cur_received += e.bytes;
    }
    e.comm_handle = 0;
    record(&e);
}

/* Completion calls set finished requests to MPI_REQUEST_NULL, so the handles are copied first. */
#define SMALL 64

/* Room for the keys of `count` requests (and, when the caller ignores statuses and `sts` is
 * given, for their statuses): kbuf/sbuf up to SMALL, else malloc'd. 0 without memory: nothing
 * is left to free, cpmpi_oom has said so, and the caller runs the call unrecorded. */
static int many_bufs(int count, uint64_t *kbuf, uint64_t **keys, MPI_Status *statuses,
                     MPI_Status *sbuf, MPI_Status **sts, const char *what) {
    *keys = count <= SMALL ? kbuf : malloc(sizeof(uint64_t) * (size_t)count);
    if (sts) {
        *sts = statuses;
        if (statuses == MPI_STATUSES_IGNORE)
            *sts = count <= SMALL ? sbuf : malloc(sizeof(MPI_Status) * (size_t)count);
    }
    if (*keys && (!sts || *sts)) return 1;
    if (*keys != kbuf) free(*keys);
    if (sts && *sts != statuses && *sts != sbuf) free(*sts);
    cpmpi_oom(what);
    return 0;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    if (!ENTER(FN_Wait)) return PMPI_Wait(req, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t key = HKEY(*req);
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    int rc = PMPI_Wait(req, st);
    if (rc == MPI_SUCCESS && EMU_ON()) emu_done(key, st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) complete(key, st, t0, t1);
    LEAVE();
    return rc;
}

/* The polling calls (Test, Testany, Testall, Testsome, Iprobe) read the clock only when they
 * completed something, once, at their exit: the completing call's entry is recorded equal to its
 * exit. A polling loop misses far more often than it hits (hpcc's RandomAccess polls millions of
 * times a second), and two clock reads per miss (~8 ns each here) doubled RandomAccess's time.
 * So a message completed by a poll has destination 0 and the poll's own inside time counts in
 * net; the blocking Wait family keeps both stamps. */
int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    if (!ENTER_POLL(FN_Test)) return PMPI_Test(req, flag, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t key = HKEY(*req);
    uint64_t te = EMU_ENTER();
    int rc = PMPI_Test(req, flag, st);
    if (rc == MPI_SUCCESS && *flag) {
        if (EMU_ON()) emu_done(key, st, te);
        uint64_t t1 = (cur_t1 = STAMP());
        complete(key, st, t1, t1);
    }
    LEAVE();
    return rc;
}

/* Shared by the *all / *any / *some calls: keys[] copied before, idx[] of completed ones. */
static void complete_many(const uint64_t *keys, const int *idx, int n, const MPI_Status *sts,
                          int status_by_index, uint64_t t0, uint64_t t1) {
    for (int i = 0; i < n; i++) {
        int j = idx ? idx[i] : i;
        complete(keys[j], &sts[status_by_index ? j : i], t0, t1);
    }
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status *statuses) {
    if (!ENTER(FN_Waitall)) return PMPI_Waitall(count, reqs, statuses);
    uint64_t kbuf[SMALL], *keys;
    MPI_Status sbuf[SMALL], *sts;
    if (!many_bufs(count, kbuf, &keys, statuses, sbuf, &sts, "the requests of an MPI_Waitall")) {
        int rc = PMPI_Waitall(count, reqs, statuses);
        LEAVE();
        return rc;
    }
    for (int i = 0; i < count; i++) keys[i] = HKEY(reqs[i]);
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    int rc = PMPI_Waitall(count, reqs, sts);
    if (rc == MPI_SUCCESS && EMU_ON()) emu_done_many(keys, NULL, count, sts, 1, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) complete_many(keys, NULL, count, sts, 1, t0, t1);
    if (keys != kbuf) free(keys);
    if (sts != statuses && sts != sbuf) free(sts);
    LEAVE();
    return rc;
}

int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status *statuses) {
    if (!ENTER_POLL(FN_Testall)) return PMPI_Testall(count, reqs, flag, statuses);
    uint64_t kbuf[SMALL], *keys;
    MPI_Status sbuf[SMALL], *sts;
    if (!many_bufs(count, kbuf, &keys, statuses, sbuf, &sts, "the requests of an MPI_Testall")) {
        int rc = PMPI_Testall(count, reqs, flag, statuses);
        LEAVE();
        return rc;
    }
    for (int i = 0; i < count; i++) keys[i] = HKEY(reqs[i]);
    uint64_t te = EMU_ENTER();
    int rc = PMPI_Testall(count, reqs, flag, sts);
    if (rc == MPI_SUCCESS && *flag) {
        if (EMU_ON()) emu_done_many(keys, NULL, count, sts, 1, te);
        uint64_t t1 = (cur_t1 = STAMP());
        complete_many(keys, NULL, count, sts, 1, t1, t1);
    }
    if (keys != kbuf) free(keys);
    if (sts != statuses && sts != sbuf) free(sts);
    LEAVE();
    return rc;
}

int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status) {
    if (!ENTER(FN_Waitany)) return PMPI_Waitany(count, reqs, index, status);
    uint64_t kbuf[SMALL], *keys;
    if (!many_bufs(count, kbuf, &keys, MPI_STATUSES_IGNORE, NULL, NULL, "the requests of an MPI_Waitany")) {
        int rc = PMPI_Waitany(count, reqs, index, status);
        LEAVE();
        return rc;
    }
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    for (int i = 0; i < count; i++) keys[i] = HKEY(reqs[i]);
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    int rc = PMPI_Waitany(count, reqs, index, st);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED && EMU_ON()) emu_done(keys[*index], st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) complete(keys[*index], st, t0, t1);
    if (keys != kbuf) free(keys);
    LEAVE();
    return rc;
}

int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    if (!ENTER_POLL(FN_Testany)) return PMPI_Testany(count, reqs, index, flag, status);
    uint64_t kbuf[SMALL], *keys;
    if (!many_bufs(count, kbuf, &keys, MPI_STATUSES_IGNORE, NULL, NULL, "the requests of an MPI_Testany")) {
        int rc = PMPI_Testany(count, reqs, index, flag, status);
        LEAVE();
        return rc;
    }
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    for (int i = 0; i < count; i++) keys[i] = HKEY(reqs[i]);
    uint64_t te = EMU_ENTER();
    int rc = PMPI_Testany(count, reqs, index, flag, st);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) {
        if (EMU_ON()) emu_done(keys[*index], st, te);
        uint64_t t1 = (cur_t1 = STAMP());
        complete(keys[*index], st, t1, t1);
    }
    if (keys != kbuf) free(keys);
    LEAVE();
    return rc;
}

#define SOME_WRAP(NAME, POLL)                                                                    \
    int MPI_##NAME(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status *statuses) { \
        if (!(POLL ? ENTER_POLL(FN_##NAME) : ENTER(FN_##NAME)))                                  \
            return PMPI_##NAME(count, reqs, outcount, indices, statuses);                       \
        uint64_t kbuf[SMALL], *keys;                                                             \
        MPI_Status sbuf[SMALL], *sts;                                                            \
        if (!many_bufs(count, kbuf, &keys, statuses, sbuf, &sts, "the requests of an MPI_" #NAME)) { \
            int rc_ = PMPI_##NAME(count, reqs, outcount, indices, statuses);                     \
            LEAVE();                                                                             \
            return rc_;                                                                          \
        }                                                                                        \
        for (int i = 0; i < count; i++) keys[i] = HKEY(reqs[i]);                                 \
        uint64_t t0 = POLL ? 0 : cur_t0, te = EMU_ENTER();                                      \
        int rc = PMPI_##NAME(count, reqs, outcount, indices, sts);                               \
        if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0) {                  \
            if (EMU_ON()) emu_done_many(keys, indices, *outcount, sts, 0, te);                   \
            uint64_t t1 = (cur_t1 = STAMP());                                                               \
            complete_many(keys, indices, *outcount, sts, 0, POLL ? t1 : t0, t1);                 \
        }                                                                                        \
        if (keys != kbuf) free(keys);                                                            \
        if (sts != statuses && sts != sbuf) free(sts);                                           \
        LEAVE();                                                                                 \
        return rc;                                                                               \
    }
SOME_WRAP(Waitsome, 0)
SOME_WRAP(Testsome, 1)

int MPI_Request_free(MPI_Request *req) {
    cev e;
    /* A freed active request still completes, but unseen: forget it so the table stays small. */
    if (active) cpmpi_rt_take(my_table, HKEY(*req), &e);
    cpmpi_emu_req ck;
    if (EMU_ON()) cpmpi_emu_untrack(HKEY(*req), &ck);
    if (TRACKING()) pinit_forget(HKEY(*req));
    int in_ = ENTER(FN_Request_free);
    int rc = PMPI_Request_free(req);
    if (in_) LEAVE();
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm, MPI_Status *status) {
    if (!ENTER(FN_Sendrecv)) return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    EMU_SEND_PRE(dest, comm, stag, type_bytes(stype, scount))
    int rc;
    if (EMU_PACED()) {
        rc = cpmpi_emu_paced_sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st,
                            emu_w_);
    } else {
        rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st);
        EMU_SEND_POST();
    }
    if (rc == MPI_SUCCESS && EMU_ON()) emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) {
        rec_send(K_SENDRECV_SEND, 0, dest, stag, comm, type_bytes(stype, scount), t0, t1);
        rec_recv(K_SENDRECV_RECV, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, comm, st, t0, t1);
    }
    LEAVE();
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src,
                         int rtag, MPI_Comm comm, MPI_Status *status) {
    if (!ENTER(FN_Sendrecv_replace)) return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    EMU_SEND_PRE(dest, comm, stag, type_bytes(dt, count))
    int rc = -1;
    if (EMU_PACED()) {
        /* The data to send, packed aside, so the receive may land in buf meanwhile. */
        int sz = 0, pos = 0;
        void *tmp = NULL;
        if (PMPI_Pack_size(count, dt, comm, &sz) == MPI_SUCCESS && (tmp = malloc(sz > 0 ? (size_t)sz : 1)) &&
            PMPI_Pack(buf, count, dt, tmp, sz, &pos, comm) == MPI_SUCCESS)
            rc = cpmpi_emu_paced_sendrecv(tmp, pos, MPI_PACKED, dest, stag, buf, count, dt, src, rtag, comm, st,
                                emu_w_);
        free(tmp);
    }
    if (rc == -1) { /* not paced, or no memory to pace it: the library's own, slot at its end */
        rc = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, st);
        EMU_SEND_POST();
    }
    if (rc == MPI_SUCCESS && EMU_ON()) emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) {
        rec_send(K_SENDRECV_SEND, 0, dest, stag, comm, type_bytes(dt, count), t0, t1);
        rec_recv(K_SENDRECV_RECV, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, comm, st, t0, t1);
    }
    LEAVE();
    return rc;
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!ENTER(FN_Probe)) return PMPI_Probe(src, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = cur_t0;
    int rc = PMPI_Probe(src, tag, comm, st);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) rec_recv(K_PROBE, 0, comm, st, t0, t1);
    LEAVE();
    return rc;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    if (!ENTER_POLL(FN_Iprobe)) return PMPI_Iprobe(src, tag, comm, flag, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Iprobe(src, tag, comm, flag, st);
    /* Only successful probes: a polling loop would otherwise fill the buffers with misses. */
    if (rc == MPI_SUCCESS && *flag) {
        uint64_t t1 = (cur_t1 = STAMP());
        rec_recv(K_IPROBE, 0, comm, st, t1, t1);
    }
    LEAVE();
    return rc;
}

/* ---- collectives: one event per call, bytes = this rank's send contribution ----------------- */

/* Under the knobs the common ones run as messages (coll.c), unless COMMPERF_EMULATE_COLL=off;
 * still one event here, never their messages. */
#include "coll.h"

static int32_t coll_tag(int kind, MPI_Comm comm);
static inline void rec_coll(int kind, int root, MPI_Comm comm, uint64_t bytes, uint64_t t0, uint64_t t1) {
    cev e;
    uint32_t id;
    if (__builtin_expect(cpmpi_emu_on, 0)) cpmpi_emu_coll(bytes);
    if (!MONITORING()) return;
    int w = PEER_IS_SIZES(kind) ? (to_world(comm, 0, &id), root)
            : root >= 0         ? to_world(comm, root, &id)
                                : (to_world(comm, 0, &id), -1);
    fill(&e, kind, w, coll_tag(kind, comm), id, bytes, t0, t1);
    record(&e);
}

/* SENT, RECEIVED: the call's buffer bytes for the statistics (read from its send buffer, written
 * into its receive buffer), evaluated only while monitoring. */
#define COLL_BODY(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL)                             \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS) {                                                                     \
        rec_coll(KIND, ROOT, COMM, BYTES, t0, t1);                                               \
        if (MONITORING()) { cur_sent += (SENT); cur_received += (RECEIVED); }                    \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;
/* The same, for a collective coll.c can run as messages (EMU; CPMPI_COLL_NATIVE: it did not). */
#define COLL_BODY_E(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, EMU, CALL)                      \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CPMPI_COLL(EMU, CALL);                                                              \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS) {                                                                     \
        rec_coll(KIND, ROOT, COMM, BYTES, t0, t1);                                               \
        if (MONITORING()) { cur_sent += (SENT); cur_received += (RECEIVED); }                    \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;

static inline int crank(MPI_Comm c) { int r = 0; PMPI_Comm_rank(c, &r); return r; }
static inline uint64_t csize(MPI_Comm c) { int n = 1; PMPI_Comm_size(c, &n); return (uint64_t)n; }
static uint64_t sum_counts(const int *c, MPI_Datatype t, MPI_Comm comm);
#define ISROOT(ROOT, COMM) (crank(COMM) == (ROOT))

int MPI_Barrier(MPI_Comm comm) { COLL_BODY_E(FN_Barrier, K_BARRIER, -1, comm, 0, 0, 0, cpmpi_coll_barrier(comm), PMPI_Barrier(comm)) }
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Bcast, K_BCAST, root, comm, type_bytes(dt, count), ISROOT(root, comm) ? type_bytes(dt, count) : 0, ISROOT(root, comm) ? 0 : type_bytes(dt, count), cpmpi_coll_bcast(buf, count, dt, root, comm),
                PMPI_Bcast(buf, count, dt, root, comm))
}
int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Reduce, K_REDUCE, root, comm, type_bytes(dt, count), type_bytes(dt, count), ISROOT(root, comm) ? type_bytes(dt, count) : 0, cpmpi_coll_reduce(s, r, count, dt, op, root, comm),
                PMPI_Reduce(s, r, count, dt, op, root, comm))
}
int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    COLL_BODY_E(FN_Allreduce, K_ALLREDUCE, -1, comm, type_bytes(dt, count), type_bytes(dt, count), type_bytes(dt, count), cpmpi_coll_allreduce(s, r, count, dt, op, comm),
                PMPI_Allreduce(s, r, count, dt, op, comm))
}
int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Gather, K_GATHER, root, comm, type_bytes(st, sc), type_bytes(st, sc), ISROOT(root, comm) ? type_bytes(rt, rc_) * csize(comm) : 0, cpmpi_coll_gather(s, sc, st, r, rc_, rt, root, comm),
                PMPI_Gather(s, sc, st, r, rc_, rt, root, comm))
}
int MPI_Gatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                MPI_Datatype rt, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Gatherv, K_GATHERV, root, comm, type_bytes(st, sc), type_bytes(st, sc), ISROOT(root, comm) ? sum_counts(rcs, rt, comm) : 0, cpmpi_coll_gatherv(s, sc, st, r, rcs, displs, rt, root, comm),
                PMPI_Gatherv(s, sc, st, r, rcs, displs, rt, root, comm))
}
int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Scatter, K_SCATTER, root, comm, type_bytes(rt, rc_), ISROOT(root, comm) ? type_bytes(st, sc) * csize(comm) : 0, type_bytes(rt, rc_), cpmpi_coll_scatter(s, sc, st, r, rc_, rt, root, comm),
                PMPI_Scatter(s, sc, st, r, rc_, rt, root, comm))
}
int MPI_Scatterv(const void *s, const int scs[], const int displs[], MPI_Datatype st, void *r, int rc_,
                 MPI_Datatype rt, int root, MPI_Comm comm) {
    COLL_BODY_E(FN_Scatterv, K_SCATTERV, root, comm, type_bytes(rt, rc_), ISROOT(root, comm) ? sum_counts(scs, st, comm) : 0, type_bytes(rt, rc_), cpmpi_coll_scatterv(s, scs, displs, st, r, rc_, rt, root, comm),
                PMPI_Scatterv(s, scs, displs, st, r, rc_, rt, root, comm))
}
int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    COLL_BODY_E(FN_Allgather, K_ALLGATHER, -1, comm, type_bytes(st, sc), type_bytes(st, sc), type_bytes(rt, rc_) * csize(comm), cpmpi_coll_allgather(s, sc, st, r, rc_, rt, comm),
                PMPI_Allgather(s, sc, st, r, rc_, rt, comm))
}
int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm) {
    COLL_BODY_E(FN_Allgatherv, K_ALLGATHERV, -1, comm, type_bytes(st, sc), type_bytes(st, sc), sum_counts(rcs, rt, comm), cpmpi_coll_allgatherv(s, sc, st, r, rcs, displs, rt, comm),
                PMPI_Allgatherv(s, sc, st, r, rcs, displs, rt, comm))
}
int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    int n = 1;
    PMPI_Comm_size(comm, &n);
    COLL_BODY_E(FN_Alltoall, K_ALLTOALL, -1, comm, type_bytes(st, sc) * (uint64_t)n, type_bytes(st, sc) * csize(comm), type_bytes(rt, rc_) * csize(comm),
                cpmpi_coll_alltoall(s, sc, st, r, rc_, rt, comm), PMPI_Alltoall(s, sc, st, r, rc_, rt, comm))
}
static uint64_t sum_counts(const int *c, MPI_Datatype t, MPI_Comm comm) {
    int n = 0;
    uint64_t s = 0;
    if (!c) return 0;
    PMPI_Comm_size(comm, &n);
    for (int i = 0; i < n; i++) s += (uint64_t)c[i];
    return s > 0 ? type_bytes(t, 1) * s : 0;
}
int MPI_Alltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r,
                  const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    COLL_BODY_E(FN_Alltoallv, K_ALLTOALLV, -1, comm, sum_counts(scs, st, comm), sum_counts(scs, st, comm), sum_counts(rcs, rt, comm), cpmpi_coll_alltoallv(s, scs, sd, st, r, rcs, rd, rt, comm),
                PMPI_Alltoallv(s, scs, sd, st, r, rcs, rd, rt, comm))
}
int MPI_Reduce_scatter(const void *s, void *r, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    COLL_BODY_E(FN_Reduce_scatter, K_REDUCE_SCATTER, -1, comm, sum_counts(rcs, dt, comm), sum_counts(rcs, dt, comm), type_bytes(dt, rcs[crank(comm)]), cpmpi_coll_reduce_scatter(s, r, rcs, dt, op, comm),
                PMPI_Reduce_scatter(s, r, rcs, dt, op, comm))
}
int MPI_Reduce_scatter_block(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    int n = 1;
    PMPI_Comm_size(comm, &n);
    COLL_BODY_E(FN_Reduce_scatter_block, K_REDUCE_SCATTER_BLOCK, -1, comm, type_bytes(dt, rc_) * (uint64_t)n, type_bytes(dt, rc_) * csize(comm), type_bytes(dt, rc_),
                cpmpi_coll_reduce_scatter_block(s, r, rc_, dt, op, comm), PMPI_Reduce_scatter_block(s, r, rc_, dt, op, comm))
}
int MPI_Scan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    COLL_BODY_E(FN_Scan, K_SCAN, -1, comm, type_bytes(dt, count), type_bytes(dt, count), type_bytes(dt, count), cpmpi_coll_scan(s, r, count, dt, op, comm),
                PMPI_Scan(s, r, count, dt, op, comm))
}
int MPI_Exscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    COLL_BODY_E(FN_Exscan, K_EXSCAN, -1, comm, type_bytes(dt, count), type_bytes(dt, count), type_bytes(dt, count), cpmpi_coll_exscan(s, r, count, dt, op, comm),
                PMPI_Exscan(s, r, count, dt, op, comm))
}

/* The families beyond the above: matched probes, nonblocking, persistent and neighbourhood
 * collectives, one-sided communication, MPI-4's Isendrecv and partitioned communication. */
#include "families.c"

/* Every other function of the standard the library has: counted and timed (gen/wrappers.py). */
#include "gen/wrappers_c.h"

#if defined(CPMPI_OPENMPI)
#include "fortran_openmpi.h"
#include "gen/wrappers_f.h"
#endif
