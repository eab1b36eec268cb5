/* commperf-pmpi: collectives built of messages under the LogGP knobs (`commperf emulate`,
 * `--collectives p2p`, the default while a knob is set).
 *
 * On Martin's NIC (Martin 1999) a collective is a pattern of messages, each paying the knobs; an
 * MPI library's own collectives run below PMPI, where the point-to-point hooks never see them.
 * So the shim hands the common collectives to this file, which runs them over PMPI point-to-point
 * calls, each message through the same hooks as a program's own sends and receives
 * (cpmpi_emu_send_pre/post, cpmpi_emu_recv), with the algorithms `commperf predict` expands them
 * into by default (crates/predict/src/collectives.rs): prediction and emulation then model the
 * same messages.
 *
 * - Barrier: dissemination, ⌈log2 n⌉ rounds of 0-byte Sendrecv to (r + 2^k) mod n.
 * - Bcast: binomial tree from the root (virtual ranks rotated by the root), a rank receives from
 *   its parent, then Isends to its children, largest subtree first, and waits for them all.
 * - Reduce: binomial tree, children combined on the way up, smallest subtree first; blocking.
 * - Allreduce: recursive doubling over the largest power of two ≤ n; the ranks below 2·rem
 *   (rem = n − pof2) fold first: the even one sends its data to the odd one above, sits out,
 *   and gets the result back at the end (MPICH's fold).
 * - Allgather: recursive doubling with the same fold, each side exchanging the blocks it holds.
 * - Alltoall: pairwise, step i Sendrecv to (r + i) mod n and from (r − i) mod n.
 * - Gather / Scatter: binomial trees forwarding whole subtrees' blocks (packed bytes).
 * - The v and w forms, reduce-scatter and the scans, with the call's actual counts and
 *   datatypes: allgatherv as allgather (ranges of blocks as one indexed datatype), alltoallv
 *   and alltoallw pairwise, gatherv and scatterv as gather and scatter (sizes only the root
 *   knows: probed, and carried ahead of a scatterv's data), reduce-scatter(_block) a ring,
 *   scan and exscan a chain (see each).
 *
 * Messages travel on a private duplicate of the user's communicator (cached as an attribute of
 * it, freed with it), with one tag: never matched against the program's own messages. Reductions
 * combine with PMPI_Reduce_local (every predefined and user op and datatype) in rank order, so
 * non-commutative ops are exact for Allreduce (recursive doubling combines lower ranks' data on
 * the left), for a Reduce to root 0 and for the scans; a non-commutative Reduce to another root
 * (the rotated tree reorders the operands) and a non-commutative reduce-scatter (the ring
 * does) run natively. Also native, and counted as untouched: intercommunicators, Alltoall(v,w)
 * with MPI_IN_PLACE, a root out of range (so that the library reports the error). Every fallback is decided from arguments every rank passes alike, so all
 * ranks of one call take the same path. Datatypes can be anything: messages carry the user's
 * datatype, intermediate blocks are packed.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "coll.h"
#include "emulate.h"

int cpmpi_coll_on = 0;
static int keyval = MPI_KEYVAL_INVALID;
static int finalizing = 0;
static __thread int last_emulated;

/* The one tag of every collective message on the private duplicates (≤ 32767, the least
 * MPI_TAG_UB the standard allows). */
#define CTAG 32001

typedef struct {
    MPI_Comm dup;
    int rank, size;
    int *world;
    uint32_t id; /* the L side band's communicator id of the duplicate */
    int native;  /* an intercommunicator: never emulated */
} cctx;

int cpmpi_coll_init(int rank) {
    const char *m = getenv("COMMPERF_EMULATE_COLL");
    if (m && *m && strcmp(m, "p2p") != 0 && strcmp(m, "off") != 0) {
        if (rank == 0)
            fprintf(stderr, "commperf-pmpi: COMMPERF_EMULATE_COLL=%s is neither p2p nor off\n", m);
        return -1;
    }
    if (m && strcmp(m, "off") == 0) return 0;
    cpmpi_coll_on = 1;
    return 0;
}

void cpmpi_coll_finalize(void) {
    /* The library deletes MPI_COMM_WORLD's attributes inside PMPI_Finalize: no freeing there. */
    finalizing = 1;
    cpmpi_coll_on = 0;
}

int cpmpi_coll_take_emulated(void) {
    int e = last_emulated;
    last_emulated = 0;
    return e;
}

/* The context of a communicator whose members could not all get theirs (out of memory): its
 * collectives run natively on every member. Shared, never freed. */
static cctx native_ctx = {MPI_COMM_NULL, 0, 0, NULL, 0, 1};

/* An emulated collective that cannot get its buffers: the call returns MPI_ERR_NO_MEM, as the
 * library's own collective would. Not a fallback to the native collective: the other members,
 * which got theirs, are already exchanging this algorithm's messages, and one member running
 * another algorithm would hang them all. */
#define NOMEM() (cpmpi_oom("an emulated collective's buffers"), MPI_ERR_NO_MEM)

static int del_ctx(MPI_Comm c, int key, void *val, void *extra) {
    (void)c; (void)key; (void)extra;
    cctx *x = val;
    if (x == &native_ctx) return MPI_SUCCESS;
    if (x->dup != MPI_COMM_NULL && !finalizing) PMPI_Comm_free(&x->dup);
    free(x->world);
    free(x);
    return MPI_SUCCESS;
}

/* The private context of `comm`, created on its first emulated collective (every member is in
 * that collective, so the PMPI_Comm_dup is called by all of them at the same point); NULL:
 * native. */
static cctx *ctx_of(MPI_Comm comm) {
    if (keyval == MPI_KEYVAL_INVALID) {
        /* Created once, by whichever collective comes first (every thread sees the same order
         * per communicator; two threads racing here would create two keyvals, hence the CAS). */
        int k = MPI_KEYVAL_INVALID;
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_ctx, &k, NULL) != MPI_SUCCESS) return NULL;
        int expect = MPI_KEYVAL_INVALID;
        if (!__atomic_compare_exchange_n(&keyval, &expect, k, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            PMPI_Comm_free_keyval(&k);
    }
    void *v = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS) return NULL;
    if (flag) return ((cctx *)v)->native ? NULL : (cctx *)v;
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        PMPI_Comm_set_attr(comm, keyval, &native_ctx);
        return NULL;
    }
    PMPI_Comm_size(comm, &n);
    cctx *x = calloc(1, sizeof *x);
    int *ranks = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int *world = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    /* Every member decides alike (this runs once per communicator, inside a collective every
     * member makes): if one lacks the memory, the communicator's collectives stay native on
     * all of them, never emulated on some and native on others (which would hang). */
    int ok = x && ranks && world, all_ok = 0;
    if (PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all_ok = 0;
    if (!all_ok) {
        if (!ok) cpmpi_oom("a communicator's emulated collectives (they run natively)");
        free(x);
        free(ranks);
        free(world);
        PMPI_Comm_set_attr(comm, keyval, &native_ctx);
        return NULL;
    }
    x->dup = MPI_COMM_NULL;
    x->world = world;
    PMPI_Comm_dup(comm, &x->dup);
    PMPI_Comm_rank(comm, &x->rank);
    x->size = n;
    MPI_Group g, wg;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(g, n, ranks, wg, x->world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    free(ranks);
    /* The same on every member without talking; bit 30 keeps it apart from the shim's ids of
     * the program's communicators (FNV-1a of the members, bit 31 for intercommunicators). */
    uint32_t h = 2166136261u ^ 0xc011u;
    for (int i = 0; i < n; i++) { h ^= (uint32_t)x->world[i]; h *= 16777619u; }
    x->id = (h & 0x3fffffffu) | 0x40000000u;
    PMPI_Comm_set_attr(comm, keyval, x);
    return x;
}

/* ---- messages under the knobs ---------------------------------------------------------------- */

static inline uint64_t tbytes(MPI_Datatype dt, int count) {
    int s = 0;
    if (count <= 0) return 0;
    PMPI_Type_size(dt, &s);
    return cpmpi_type_bytes(s, count);
}

static inline uint64_t enter_t(void) { return cpmpi_emu_l ? cpmpi_emu_now() : 0; }

/* Under g a blocking send is an Isend and a wait, g's slot taken between them (emulate.h). */
static int c_send(cctx *x, const void *b, int n, MPI_Datatype dt, int to) {
    cpmpi_emu_send_pre(x->world[to], x->id, CTAG, tbytes(dt, n));
    if (cpmpi_emu_g) {
        MPI_Request rq;
        int rc = PMPI_Isend(b, n, dt, to, CTAG, x->dup, &rq);
        cpmpi_emu_send_post(x->world[to]);
        return rc == MPI_SUCCESS ? PMPI_Wait(&rq, MPI_STATUS_IGNORE) : rc;
    }
    int rc = PMPI_Send(b, n, dt, to, CTAG, x->dup);
    cpmpi_emu_send_post(x->world[to]);
    return rc;
}

static int c_isend(cctx *x, const void *b, int n, MPI_Datatype dt, int to, MPI_Request *rq) {
    cpmpi_emu_send_pre(x->world[to], x->id, CTAG, tbytes(dt, n));
    int rc = PMPI_Isend(b, n, dt, to, CTAG, x->dup, rq);
    cpmpi_emu_send_post(x->world[to]);
    return rc;
}

static int c_recv(cctx *x, void *b, int n, MPI_Datatype dt, int from) {
    uint64_t te = enter_t();
    int rc = PMPI_Recv(b, n, dt, from, CTAG, x->dup, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) cpmpi_emu_recv(x->world[from], x->id, CTAG, tbytes(dt, n), te);
    return rc;
}

/* A message of bytes whose size only its sender knows (a gatherv's or scatterv's subtree):
 * probed, then received at *buf + at, the buffer grown to fit; *got its size. `hdr` of its
 * bytes are the scatterv's sizes, which the knobs do not charge (the data is the algorithm's
 * message). */
static int c_recv_sized(cctx *x, char **buf, size_t *cap, size_t at, int from, size_t hdr, int *got) {
    uint64_t te = enter_t();
    MPI_Status st;
    int rc = PMPI_Probe(from, CTAG, x->dup, &st);
    if (rc == MPI_SUCCESS) rc = PMPI_Get_count(&st, MPI_BYTE, got);
    if (rc != MPI_SUCCESS) return rc;
    if (*got < 0 || (size_t)*got < hdr) return MPI_ERR_TRUNCATE;
    if (at + (size_t)*got > *cap) {
        char *nb = realloc(*buf, at + (size_t)*got + 1);
        if (!nb) return NOMEM();
        *buf = nb;
        *cap = at + (size_t)*got + 1;
    }
    rc = PMPI_Recv(*buf + at, *got, MPI_BYTE, from, CTAG, x->dup, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) cpmpi_emu_recv(x->world[from], x->id, CTAG, (uint64_t)*got - hdr, te);
    return rc;
}

/* An Isend of n bytes, `hdr` of them not charged (c_recv_sized's). */
static int c_isend_hdr(cctx *x, const void *b, int n, int to, size_t hdr, MPI_Request *rq) {
    cpmpi_emu_send_pre(x->world[to], x->id, CTAG, (uint64_t)n - hdr);
    int rc = PMPI_Isend(b, n, MPI_BYTE, to, CTAG, x->dup, rq);
    cpmpi_emu_send_post(x->world[to]);
    return rc;
}

/* MPI_Sendrecv, hooked as the shim hooks a program's: the send's knobs, then both. */
static int c_sendrecv(cctx *x, const void *sb, int sn, MPI_Datatype st, int to, void *rb, int rn,
                      MPI_Datatype rt, int from) {
    uint64_t te = enter_t();
    cpmpi_emu_send_pre(x->world[to], x->id, CTAG, tbytes(st, sn));
    int rc;
    if (cpmpi_emu_g) {
        MPI_Status status;
        rc = cpmpi_emu_paced_sendrecv(sb, sn, st, to, CTAG, rb, rn, rt, from, CTAG, x->dup, &status,
                                      x->world[to]);
    } else {
        rc = PMPI_Sendrecv(sb, sn, st, to, CTAG, rb, rn, rt, from, CTAG, x->dup, MPI_STATUS_IGNORE);
        cpmpi_emu_send_post(x->world[to]);
    }
    if (rc == MPI_SUCCESS) cpmpi_emu_recv(x->world[from], x->id, CTAG, tbytes(rt, rn), te);
    return rc;
}

/* ---- local data --------------------------------------------------------------------------------
 * */

static int contiguous(MPI_Datatype dt) {
    int s = 0;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(dt, &s);
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    return lb == 0 && tlb == 0 && ext == (MPI_Aint)s && text == (MPI_Aint)s;
}

static MPI_Aint extent(MPI_Datatype dt) {
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(dt, &lb, &ext);
    return ext;
}

/* dst (dn of dt) ← src (sn of st), any layouts of one type signature. */
static int copy(void *dst, int dn, MPI_Datatype dt, const void *src, int sn, MPI_Datatype st) {
    if (dst == src && dt == st && dn == sn) return MPI_SUCCESS;
    if (dt == st && dn == sn && contiguous(dt)) {
        memcpy(dst, src, (size_t)tbytes(dt, dn));
        return MPI_SUCCESS;
    }
    return PMPI_Sendrecv(src, sn, st, 0, CTAG, dst, dn, dt, 0, CTAG, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

/* A buffer for `count` of dt (its layout, not only its size); *raw is what to free. */
static void *alloc_for(MPI_Datatype dt, int count, void **raw) {
    MPI_Aint tlb, text, ext = extent(dt);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    if (ext < 0) ext = -ext;
    size_t sz = (size_t)text + (size_t)(count > 1 ? count - 1 : 0) * (size_t)ext;
    *raw = malloc(sz ? sz : 1);
    return *raw ? (char *)*raw - tlb : NULL;
}

/* Packed bytes of count dt into out (out_bytes = tbytes(dt, count)). */
static void pack(const void *in, int count, MPI_Datatype dt, void *out, uint64_t out_bytes) {
    if (contiguous(dt)) { memcpy(out, in, (size_t)out_bytes); return; }
    int pos = 0;
    /* The callers keep a non-contiguous block within an int (gather_fits). */
    PMPI_Pack(in, count, dt, out, cpmpi_fits_int(out_bytes) ? (int)out_bytes : INT_MAX, &pos, MPI_COMM_SELF);
}

static void unpack(const void *in, uint64_t in_bytes, void *out, int count, MPI_Datatype dt) {
    if (contiguous(dt)) { memcpy(out, in, (size_t)in_bytes); return; }
    int pos = 0;
    PMPI_Unpack(in, cpmpi_fits_int(in_bytes) ? (int)in_bytes : INT_MAX, &pos, out, count, dt, MPI_COMM_SELF);
}

/* ---- tree and fold arithmetic (collectives.rs) -------------------------------------------------
 * */

static inline int virt(int r, int root, int n) { return (r - root + n) % n; }
static inline int real_(int v, int root, int n) { return (v + root) % n; }
static inline int64_t pow2_ge(int n) { int64_t p = 1; while (p < n) p <<= 1; return p; }
/* Lowest set bit of v, or the smallest power of two ≥ n for v = 0. */
static inline int64_t subtree_mask(int v, int n) { return v == 0 ? pow2_ge(n) : (int64_t)(v & -v); }
static inline int subtree_end(int v, int n) {
    int64_t e = v + subtree_mask(v, n);
    return e < n ? (int)e : n;
}

typedef struct { int pof2, rem; } fold;
static fold fold_of(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return (fold){p, n - p};
}
static int newrank(fold f, int r) { return r < 2 * f.rem ? (r % 2 ? r / 2 : -1) : r - f.rem; }
static int oldrank(fold f, int nr) { return nr < f.rem ? nr * 2 + 1 : nr + f.rem; }
static void owned(fold f, int lo, int hi, int *a, int *b) {
    *a = lo < f.rem ? 2 * lo : lo + f.rem;
    *b = hi <= f.rem ? 2 * hi : hi + f.rem;
}

#define BEGIN() cpmpi_emu_in_coll = 1
#define DONE(RC)                                                                                   \
    do {                                                                                           \
        cpmpi_emu_in_coll = 0;                                                                     \
        if ((RC) == MPI_SUCCESS) last_emulated = 1;                                                \
        return (RC);                                                                               \
    } while (0)

/* ---- the collectives --------------------------------------------------------------------------
 * */

int cpmpi_coll_barrier(MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    int n = x->size, r = x->rank, rc = MPI_SUCCESS;
    BEGIN();
    for (int64_t k = 1; k < n && rc == MPI_SUCCESS; k <<= 1)
        rc = c_sendrecv(x, NULL, 0, MPI_BYTE, (int)((r + k) % n), NULL, 0, MPI_BYTE, (int)((r - k + n) % n));
    DONE(rc);
}

int cpmpi_coll_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int n = x->size, v = virt(x->rank, root, n), rc = MPI_SUCCESS;
    BEGIN();
    if (v != 0) rc = c_recv(x, buf, count, dt, real_(v & (v - 1), root, n));
    MPI_Request rq[64];
    int k = 0;
    for (int64_t m = subtree_mask(v, n) >> 1; m > 0 && rc == MPI_SUCCESS; m >>= 1)
        if (v + m < n) rc = c_isend(x, buf, count, dt, real_((int)(v + m), root, n), &rq[k++]);
    if (k) {
        MPI_Status sts[64];
        int w = PMPI_Waitall(k, rq, sts);
        if (rc == MPI_SUCCESS) rc = w;
    }
    DONE(rc);
}

/* acc ← acc op other when acc holds the lower ranks' data (`acc_first`), else other op acc;
 * may swap the two pointers (PMPI_Reduce_local(in, inout) computes inout = in op inout). */
static int combine(void **acc, void **other, int count, MPI_Datatype dt, MPI_Op op, int acc_first) {
    if (!acc_first) return PMPI_Reduce_local(*other, *acc, count, dt, op);
    int rc = PMPI_Reduce_local(*acc, *other, count, dt, op);
    void *t = *acc;
    *acc = *other;
    *other = t;
    return rc;
}

int cpmpi_coll_reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int commute = 1;
    PMPI_Op_commutative(op, &commute);
    /* The rotated tree combines root, root+1, …, n−1, 0, …: out of order unless root is 0. */
    if (!commute && root != 0) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, v = virt(me, root, n), rc = MPI_SUCCESS;
    void *raw1 = NULL, *raw2 = NULL;
    void *acc, *tmp = alloc_for(dt, count, &raw2);
    if (me == root) {
        acc = r;
        if (s != MPI_IN_PLACE) rc = copy(r, count, dt, s, count, dt);
    } else {
        acc = alloc_for(dt, count, &raw1);
        if (acc) rc = copy(acc, count, dt, s, count, dt);
    }
    if (!acc || !tmp) { free(raw1); free(raw2); return NOMEM(); }
    BEGIN();
    for (int64_t mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        if (v & mask) {
            rc = c_send(x, acc, count, dt, real_((int)(v - mask), root, n));
            break;
        }
        if (v + mask < n) {
            rc = c_recv(x, tmp, count, dt, real_((int)(v + mask), root, n));
            if (rc == MPI_SUCCESS) rc = combine(&acc, &tmp, count, dt, op, 1);
        }
    }
    if (me == root && acc != r && rc == MPI_SUCCESS) rc = copy(r, count, dt, acc, count, dt);
    free(raw1);
    free(raw2);
    DONE(rc);
}

int cpmpi_coll_allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, rc = MPI_SUCCESS;
    void *raw = NULL, *acc = r, *tmp = alloc_for(dt, count, &raw);
    if (!tmp) return NOMEM();
    if (s != MPI_IN_PLACE) rc = copy(r, count, dt, s, count, dt);
    fold f = fold_of(n);
    BEGIN();
    if (rc == MPI_SUCCESS && me < 2 * f.rem) {
        if (me % 2 == 0) {
            rc = c_send(x, acc, count, dt, me + 1);
            if (rc == MPI_SUCCESS) rc = c_recv(x, r, count, dt, me + 1);
            free(raw);
            DONE(rc);
        }
        rc = c_recv(x, tmp, count, dt, me - 1);
        if (rc == MPI_SUCCESS) rc = combine(&acc, &tmp, count, dt, op, 0);
    }
    int nr = newrank(f, me);
    for (int mask = 1; mask < f.pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int partner = oldrank(f, nr ^ mask);
        rc = c_sendrecv(x, acc, count, dt, partner, tmp, count, dt, partner);
        if (rc == MPI_SUCCESS) rc = combine(&acc, &tmp, count, dt, op, partner > me);
    }
    if (rc == MPI_SUCCESS && me < 2 * f.rem) rc = c_send(x, acc, count, dt, me - 1);
    if (rc == MPI_SUCCESS && acc != r) rc = copy(r, count, dt, acc, count, dt);
    free(raw);
    DONE(rc);
}

int cpmpi_coll_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, rc = MPI_SUCCESS;
    MPI_Aint bext = extent(rt) * (MPI_Aint)rc_;
#define BLK(j) ((char *)r + (MPI_Aint)(j) * bext)
    if (s != MPI_IN_PLACE) rc = copy(BLK(me), rc_, rt, s, sc, st);
    fold f = fold_of(n);
    BEGIN();
    if (rc == MPI_SUCCESS && me < 2 * f.rem) {
        if (me % 2 == 0) {
            rc = c_send(x, BLK(me), rc_, rt, me + 1);
            if (rc == MPI_SUCCESS) rc = c_recv(x, r, rc_ * n, rt, me + 1);
            DONE(rc);
        }
        rc = c_recv(x, BLK(me - 1), rc_, rt, me - 1);
    }
    int nr = newrank(f, me);
    for (int mask = 1; mask < f.pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int mine = nr & ~(mask - 1), theirs = (nr ^ mask) & ~(mask - 1), a, z, ta, tz;
        owned(f, mine, mine + mask, &a, &z);
        owned(f, theirs, theirs + mask, &ta, &tz);
        int partner = oldrank(f, nr ^ mask);
        rc = c_sendrecv(x, BLK(a), (z - a) * rc_, rt, partner, BLK(ta), (tz - ta) * rc_, rt, partner);
    }
    if (rc == MPI_SUCCESS && me < 2 * f.rem) rc = c_send(x, r, rc_ * n, rt, me - 1);
#undef BLK
    DONE(rc);
}

int cpmpi_coll_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    /* In place is every rank's choice or none's. */
    if (!x || s == MPI_IN_PLACE) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank;
    MPI_Aint sb = extent(st) * (MPI_Aint)sc, rb = extent(rt) * (MPI_Aint)rc_;
    int rc = copy((char *)r + me * rb, rc_, rt, (const char *)s + me * sb, sc, st);
    BEGIN();
    for (int i = 1; i < n && rc == MPI_SUCCESS; i++) {
        int to = (me + i) % n, from = (me - i + n) % n;
        rc = c_sendrecv(x, (const char *)s + to * sb, sc, st, to, (char *)r + from * rb, rc_, rt, from);
    }
    DONE(rc);
}

/* Whether a gather's or scatter's tree fits MPI_BYTE messages of int counts: the root's
 * subtree carries all n blocks. Every rank decides alike (a block's bytes are the same on all:
 * MPI's type matching), so a collective too large runs natively on every rank. */
static int gather_fits(uint64_t block, int n) { return cpmpi_fits_int(cpmpi_span_bytes(block, n)); }

int cpmpi_coll_gather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                      MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, v = virt(me, root, n), end = subtree_end(v, n), rc = MPI_SUCCESS;
    int is_root = me == root;
    /* One block's packed bytes: the root's receive block, everyone else's send block. */
    uint64_t bb = is_root ? tbytes(rt, rc_) : tbytes(st, sc);
    if (!gather_fits(bb, n)) return CPMPI_COLL_NATIVE;
    MPI_Aint rb = is_root ? extent(rt) * (MPI_Aint)rc_ : 0;
    /* This subtree's blocks, virtual order, packed. */
    char *tmp = malloc((size_t)cpmpi_span_bytes(bb, end - v) + 1);
    if (!tmp) return NOMEM();
    if (is_root && s == MPI_IN_PLACE) pack((char *)r + me * rb, rc_, rt, tmp, bb);
    else pack(s, sc, st, tmp, bb);
    BEGIN();
    for (int64_t mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        if (v & mask) {
            rc = c_send(x, tmp, (int)cpmpi_span_bytes(bb, end - v), MPI_BYTE, real_((int)(v - mask), root, n));
            break;
        }
        int child = (int)(v + mask);
        if (child < n)
            rc = c_recv(x, tmp + cpmpi_span_bytes(bb, child - v), (int)cpmpi_span_bytes(bb, subtree_end(child, n) - child),
                        MPI_BYTE, real_(child, root, n));
    }
    if (is_root && rc == MPI_SUCCESS)
        for (int k = 0; k < n; k++) {
            int j = real_(k, root, n);
            if (j == me && s == MPI_IN_PLACE) continue;
            unpack(tmp + cpmpi_span_bytes(bb, k), bb, (char *)r + j * rb, rc_, rt);
        }
    free(tmp);
    DONE(rc);
}

int cpmpi_coll_scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                       MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, v = virt(me, root, n), end = subtree_end(v, n), rc = MPI_SUCCESS;
    int is_root = me == root;
    uint64_t bb = is_root ? tbytes(st, sc) : tbytes(rt, rc_);
    if (!gather_fits(bb, n)) return CPMPI_COLL_NATIVE;
    MPI_Aint sb = is_root ? extent(st) * (MPI_Aint)sc : 0;
    char *tmp = malloc((size_t)cpmpi_span_bytes(bb, end - v) + 1);
    if (!tmp) return NOMEM();
    if (is_root)
        for (int k = 0; k < n; k++)
            pack((const char *)s + real_(k, root, n) * sb, sc, st, tmp + cpmpi_span_bytes(bb, k), bb);
    BEGIN();
    if (v != 0) rc = c_recv(x, tmp, (int)cpmpi_span_bytes(bb, end - v), MPI_BYTE, real_(v & (v - 1), root, n));
    MPI_Request rq[64];
    int k = 0;
    for (int64_t m = subtree_mask(v, n) >> 1; m > 0 && rc == MPI_SUCCESS; m >>= 1) {
        int child = (int)(v + m);
        if (child < n)
            rc = c_isend(x, tmp + cpmpi_span_bytes(bb, child - v), (int)cpmpi_span_bytes(bb, subtree_end(child, n) - child),
                         MPI_BYTE, real_(child, root, n), &rq[k++]);
    }
    if (k) {
        MPI_Status sts[64];
        int w = PMPI_Waitall(k, rq, sts);
        if (rc == MPI_SUCCESS) rc = w;
    }
    if (rc == MPI_SUCCESS && !(is_root && r == MPI_IN_PLACE)) unpack(tmp, bb, r, rc_, rt);
    free(tmp);
    DONE(rc);
}

/* ---- the v and w forms, reduce-scatter and the scans --------------------------------------------
 * Each with the actual per-rank counts and datatypes of its arguments, with the algorithm
 * `commperf predict` expands its trace operation into by default: allgatherv recursive doubling
 * (the fold as allgather's), alltoallv and alltoallw pairwise, gatherv and scatterv binomial
 * trees, reduce-scatter (and its block form) a ring, scan and exscan a chain. */

/* The blocks of ranks a..z−1 of a v-form's buffer (counts and displacements in elements of t):
 * one indexed datatype, so that a range of blocks is one message wherever they lie. */
static int blocks_type(int a, int z, const int *cnt, const int *dsp, MPI_Datatype t, MPI_Datatype *out) {
    int rc = PMPI_Type_indexed(z - a, cnt + a, dsp + a, t, out);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(out);
    return rc;
}

/* A ranged exchange of blocks (allgatherv): send ranks [a, z)'s blocks, receive [ta, tz)'s. */
static int x_blocks(cctx *x, void *r, const int *cnt, const int *dsp, MPI_Datatype rt, int a, int z, int ta,
                    int tz, int to, int from) {
    MPI_Datatype st = MPI_DATATYPE_NULL, rtt = MPI_DATATYPE_NULL;
    int rc = blocks_type(a, z, cnt, dsp, rt, &st);
    if (rc == MPI_SUCCESS) rc = blocks_type(ta, tz, cnt, dsp, rt, &rtt);
    if (rc == MPI_SUCCESS) {
        if (from < 0) rc = c_send(x, r, 1, st, to);
        else if (to < 0) rc = c_recv(x, r, 1, rtt, from);
        else rc = c_sendrecv(x, r, 1, st, to, r, 1, rtt, from);
    }
    if (st != MPI_DATATYPE_NULL) PMPI_Type_free(&st);
    if (rtt != MPI_DATATYPE_NULL) PMPI_Type_free(&rtt);
    return rc;
}

int cpmpi_coll_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rcs, const int *displs,
                          MPI_Datatype rt, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, rc = MPI_SUCCESS;
    MPI_Aint ext = extent(rt);
    if (s != MPI_IN_PLACE) rc = copy((char *)r + (MPI_Aint)displs[me] * ext, rcs[me], rt, s, sc, st);
    fold f = fold_of(n);
    BEGIN();
    if (rc == MPI_SUCCESS && me < 2 * f.rem) {
        if (me % 2 == 0) {
            rc = x_blocks(x, r, rcs, displs, rt, me, me + 1, 0, 0, me + 1, -1);
            if (rc == MPI_SUCCESS) rc = x_blocks(x, r, rcs, displs, rt, 0, 0, 0, n, -1, me + 1);
            DONE(rc);
        }
        rc = x_blocks(x, r, rcs, displs, rt, 0, 0, me - 1, me, -1, me - 1);
    }
    int nr = newrank(f, me);
    for (int mask = 1; mask < f.pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int mine = nr & ~(mask - 1), theirs = (nr ^ mask) & ~(mask - 1), a, z, ta, tz;
        owned(f, mine, mine + mask, &a, &z);
        owned(f, theirs, theirs + mask, &ta, &tz);
        int partner = oldrank(f, nr ^ mask);
        rc = x_blocks(x, r, rcs, displs, rt, a, z, ta, tz, partner, partner);
    }
    if (rc == MPI_SUCCESS && me < 2 * f.rem) rc = x_blocks(x, r, rcs, displs, rt, 0, n, 0, 0, me - 1, -1);
    DONE(rc);
}

/* Alltoallv and alltoallw, pairwise: step i sends to (r + i) mod n and receives from (r − i)
 * mod n, every pair once (a 0-count block is a 0-byte message, as predict's). Displacements:
 * alltoallv's in elements of its one type per side (ext: their extents), alltoallw's in bytes
 * (ext 1) with a type per peer. */
static int pairwise_v(cctx *x, const void *s, const int *scs, const int *sd, const MPI_Datatype *sts, MPI_Aint sx,
                      void *r, const int *rcs, const int *rd, const MPI_Datatype *rts, MPI_Aint rx, int w) {
    int n = x->size, me = x->rank;
#define ST(j) (w ? sts[j] : sts[0])
#define RT(j) (w ? rts[j] : rts[0])
    int rc = copy((char *)r + (MPI_Aint)rd[me] * rx, rcs[me], RT(me), (const char *)s + (MPI_Aint)sd[me] * sx,
                  scs[me], ST(me));
    BEGIN();
    for (int i = 1; i < n && rc == MPI_SUCCESS; i++) {
        int to = (me + i) % n, from = (me - i + n) % n;
        rc = c_sendrecv(x, (const char *)s + (MPI_Aint)sd[to] * sx, scs[to], ST(to), to,
                        (char *)r + (MPI_Aint)rd[from] * rx, rcs[from], RT(from), from);
    }
#undef ST
#undef RT
    DONE(rc);
}

int cpmpi_coll_alltoallv(const void *s, const int *scs, const int *sd, MPI_Datatype st, void *r, const int *rcs,
                         const int *rd, MPI_Datatype rt, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    /* In place is every rank's choice or none's. */
    if (!x || s == MPI_IN_PLACE) return CPMPI_COLL_NATIVE;
    return pairwise_v(x, s, scs, sd, &st, extent(st), r, rcs, rd, &rt, extent(rt), 0);
}

int cpmpi_coll_alltoallw(const void *s, const int *scs, const int *sd, const MPI_Datatype *sts, void *r,
                         const int *rcs, const int *rd, const MPI_Datatype *rts, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || s == MPI_IN_PLACE) return CPMPI_COLL_NATIVE;
    return pairwise_v(x, s, scs, sd, sts, 1, r, rcs, rd, rts, 1, 1);
}

/* Gatherv: binomial, each rank sending its subtree's blocks packed in virtual order. Only the
 * root knows the others' counts, so a rank learns a child's subtree size from its message
 * (probed): the messages are exactly predict's. */
int cpmpi_coll_gatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rcs, const int *displs,
                       MPI_Datatype rt, int root, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, v = virt(me, root, n), rc = MPI_SUCCESS;
    int is_root = me == root, in_place = is_root && s == MPI_IN_PLACE;
    MPI_Aint rx = is_root ? extent(rt) : 0;
    uint64_t own = in_place ? tbytes(rt, rcs[me]) : tbytes(st, sc);
    size_t cap = (size_t)own + 1, len = (size_t)own;
    char *tmp = malloc(cap);
    if (!tmp) return NOMEM();
    if (in_place) pack((char *)r + (MPI_Aint)displs[me] * rx, rcs[me], rt, tmp, own);
    else pack(s, sc, st, tmp, own);
    BEGIN();
    for (int64_t mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        if (v & mask) {
            rc = len > INT_MAX ? MPI_ERR_COUNT : c_send(x, tmp, (int)len, MPI_BYTE, real_((int)(v - mask), root, n));
            break;
        }
        int child = (int)(v + mask), got = 0;
        if (child < n) {
            rc = c_recv_sized(x, &tmp, &cap, len, real_(child, root, n), 0, &got);
            len += (size_t)got;
        }
    }
    if (is_root && rc == MPI_SUCCESS) {
        size_t off = 0;
        for (int k = 0; k < n && rc == MPI_SUCCESS; k++) {
            int j = real_(k, root, n);
            uint64_t b = tbytes(rt, rcs[j]);
            if (off + b > len) rc = MPI_ERR_TRUNCATE;
            else if (!(j == me && in_place)) unpack(tmp + off, b, (char *)r + (MPI_Aint)displs[j] * rx, rcs[j], rt);
            off += (size_t)b;
        }
    }
    free(tmp);
    DONE(rc);
}

/* Scatterv: binomial, each rank receiving its subtree's blocks packed in virtual order. Only the
 * root knows the counts, and a rank must split its subtree's blocks among its children: so a
 * tree message starts with the sizes of its blocks (8 bytes per rank of the subtree), which
 * the knobs do not charge (c_isend_hdr): what they see is predict's message, the data. */
#define HDR(k) ((size_t)(k) * sizeof(uint64_t))
int cpmpi_coll_scatterv(const void *s, const int *scs, const int *displs, MPI_Datatype st, void *r, int rc_,
                        MPI_Datatype rt, int root, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || root < 0 || root >= x->size) return CPMPI_COLL_NATIVE;
    int n = x->size, me = x->rank, v = virt(me, root, n), end = subtree_end(v, n), k = end - v;
    int is_root = me == root, rc = MPI_SUCCESS, got = 0;
    char *msg = NULL;
    size_t cap = 0;
    if (is_root) {
        /* The whole tree's message: every rank's size, then every block, in virtual order. */
        MPI_Aint sx = extent(st);
        size_t total = 0;
        for (int j = 0; j < n; j++) total += (size_t)tbytes(st, scs[j]);
        cap = HDR(n) + total + 1;
        msg = malloc(cap);
        if (!msg) return NOMEM();
        size_t off = HDR(n);
        for (int q = 0; q < n; q++) {
            int j = real_(q, root, n);
            uint64_t b = tbytes(st, scs[j]);
            memcpy(msg + HDR(q), &b, sizeof b);
            pack((const char *)s + (MPI_Aint)displs[j] * sx, scs[j], st, msg + off, b);
            off += (size_t)b;
        }
    }
    BEGIN();
    if (v != 0) rc = c_recv_sized(x, &msg, &cap, 0, real_(v & (v - 1), root, n), HDR(k), &got);
    /* The sizes must account for the data exactly (a message from a peer: checked, not trusted). */
    uint64_t *sz = NULL;
    size_t data = 0;
    if (rc == MPI_SUCCESS) {
        sz = malloc(HDR(k) + 1);
        if (!sz) rc = NOMEM();
        else {
            memcpy(sz, msg, HDR(k));
            for (int q = 0; q < k; q++) data += (size_t)sz[q];
            if (v != 0 && HDR(k) + data != (size_t)got) rc = MPI_ERR_TRUNCATE;
        }
    }
    MPI_Request rq[64];
    char *out[64];
    int nrq = 0;
    for (int64_t m = subtree_mask(v, n) >> 1; m > 0 && rc == MPI_SUCCESS; m >>= 1) {
        int child = (int)(v + m);
        if (child >= n) continue;
        int ce = subtree_end(child, n), a = child - v, z = ce - v;
        size_t at = 0, len = 0;
        for (int q = 0; q < a; q++) at += (size_t)sz[q];
        for (int q = a; q < z; q++) len += (size_t)sz[q];
        if (HDR(z - a) + len > INT_MAX) { rc = MPI_ERR_COUNT; break; }
        rq[nrq] = MPI_REQUEST_NULL;
        out[nrq] = malloc(HDR(z - a) + len + 1);
        if (!out[nrq]) { rc = NOMEM(); break; }
        memcpy(out[nrq], sz + a, HDR(z - a));
        memcpy(out[nrq] + HDR(z - a), msg + HDR(k) + at, len);
        rc = c_isend_hdr(x, out[nrq], (int)(HDR(z - a) + len), real_(child, root, n), HDR(z - a), &rq[nrq]);
        nrq++;
    }
    if (nrq) {
        MPI_Status sts[64];
        int w = PMPI_Waitall(nrq, rq, sts);
        if (rc == MPI_SUCCESS) rc = w;
    }
    for (int q = 0; q < nrq; q++) free(out[q]);
    if (rc == MPI_SUCCESS && !(is_root && r == MPI_IN_PLACE)) {
        if (sz[0] > tbytes(rt, rc_)) rc = MPI_ERR_TRUNCATE;
        else unpack(msg + HDR(k), sz[0], r, rc_, rt);
    }
    free(sz);
    free(msg);
    DONE(rc);
}
#undef HDR

/* Reduce-scatter, a ring (predict's default): at step i rank r sends the partial block
 * r − i − 1 to r + 1 and receives block r − i − 2 from r − 1, combining its own contribution
 * into it; after n − 1 steps it holds block r complete. The ring combines block j in the order
 * j + 1, …, n − 1, 0, …, j: a non-commutative op runs natively. */
static int ring_reduce_scatter(cctx *x, const void *s, void *r, const int *rcs, MPI_Datatype dt, MPI_Op op) {
    int n = x->size, me = x->rank, rc = MPI_SUCCESS, maxc = 0;
    const char *in = s == MPI_IN_PLACE ? (const char *)r : (const char *)s;
    MPI_Aint ext = extent(dt), *off = malloc(sizeof(MPI_Aint) * (size_t)n);
    if (!off) return NOMEM();
    for (int j = 0, a = 0; j < n; a += rcs[j], j++) {
        off[j] = (MPI_Aint)a * ext;
        if (rcs[j] > maxc) maxc = rcs[j];
    }
    void *raw[2] = {NULL, NULL}, *buf[2] = {alloc_for(dt, maxc, &raw[0]), alloc_for(dt, maxc, &raw[1])};
    if (!buf[0] || !buf[1]) { free(off); free(raw[0]); free(raw[1]); return NOMEM(); }
    int next = (me + 1) % n, prev = (me - 1 + n) % n, last = 0;
    const void *out = in + off[prev]; /* step 0 sends the own contribution to block r − 1 */
    BEGIN();
    for (int i = 0; i < n - 1 && rc == MPI_SUCCESS; i++) {
        int sb = (me - i - 1 + 2 * n) % n, rb = (me - i - 2 + 2 * n) % n;
        last = i % 2;
        rc = c_sendrecv(x, out, rcs[sb], dt, next, buf[last], rcs[rb], dt, prev);
        if (rc == MPI_SUCCESS) rc = PMPI_Reduce_local(in + off[rb], buf[last], rcs[rb], dt, op);
        out = buf[last];
    }
    if (rc == MPI_SUCCESS) rc = n > 1 ? copy(r, rcs[me], dt, buf[last], rcs[me], dt) : copy(r, rcs[0], dt, in, rcs[0], dt);
    free(off);
    free(raw[0]);
    free(raw[1]);
    DONE(rc);
}

static int commutative(MPI_Op op) {
    int c = 1;
    PMPI_Op_commutative(op, &c);
    return c;
}

int cpmpi_coll_reduce_scatter(const void *s, void *r, const int *rcs, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || !commutative(op)) return CPMPI_COLL_NATIVE;
    return ring_reduce_scatter(x, s, r, rcs, dt, op);
}

int cpmpi_coll_reduce_scatter_block(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x || !commutative(op)) return CPMPI_COLL_NATIVE;
    int *rcs = malloc(sizeof(int) * (size_t)x->size);
    if (!rcs) return NOMEM();
    for (int j = 0; j < x->size; j++) rcs[j] = rc_;
    int rc = ring_reduce_scatter(x, s, r, rcs, dt, op);
    free(rcs);
    return rc;
}

/* Scan and exscan, a chain (predict's): rank r receives ranks 0..r−1 combined from r − 1, and
 * sends ranks 0..r combined to r + 1. The prefix is always the left operand: exact for
 * non-commutative ops too. */
static int chain_scan(cctx *x, const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int excl) {
    int n = x->size, me = x->rank, rc = MPI_SUCCESS;
    const void *in = s == MPI_IN_PLACE ? r : s;
    void *raw1 = NULL, *raw2 = NULL, *pre = alloc_for(dt, count, &raw1), *acc = alloc_for(dt, count, &raw2);
    if (!pre || !acc) { free(raw1); free(raw2); return NOMEM(); }
    /* acc ← own contribution; after the receive, acc ← prefix op own (what r + 1 needs). */
    rc = copy(acc, count, dt, in, count, dt);
    BEGIN();
    if (me > 0 && rc == MPI_SUCCESS) {
        rc = c_recv(x, pre, count, dt, me - 1);
        if (rc == MPI_SUCCESS && !(excl && me == n - 1)) rc = PMPI_Reduce_local(pre, acc, count, dt, op);
    }
    if (me < n - 1 && rc == MPI_SUCCESS) rc = c_send(x, acc, count, dt, me + 1);
    /* Scan: ranks 0..r; exscan: ranks 0..r−1 (rank 0's result is undefined: left as it is). */
    if (rc == MPI_SUCCESS && !(excl && me == 0)) rc = copy(r, count, dt, excl ? pre : acc, count, dt);
    free(raw1);
    free(raw2);
    DONE(rc);
}

int cpmpi_coll_scan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    return chain_scan(x, s, r, count, dt, op, 0);
}

int cpmpi_coll_exscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    return chain_scan(x, s, r, count, dt, op, 1);
}

/* ---- a rank's part, for the knobs' charge of a collective the library runs (coll.h) --------- */

/* Children of virtual rank v in the binomial tree over n (the loops of bcast and scatter). */
static uint32_t children(int v, int n) {
    uint32_t c = 0;
    for (int64_t m = subtree_mask(v, n) >> 1; m > 0; m >>= 1)
        if (v + m < n) c++;
    return c;
}

static int64_t ceil_log2(int n) {
    int64_t k = 0;
    while (((int64_t)1 << k) < n) k++;
    return k;
}

void cpmpi_coll_part_of(int alg, int n, int rank, int root, uint64_t block, cpmpi_coll_part *p) {
    memset(p, 0, sizeof *p);
    if (n <= 1 || rank < 0 || rank >= n) return;
    int v = root >= 0 && root < n ? virt(rank, root, n) : rank;
    uint32_t ch = children(v, n), up = v != 0;
    uint64_t sub = (uint64_t)(subtree_end(v, n) - v); /* blocks of v's subtree, its own among them */
    fold f = fold_of(n);
    uint32_t rd = (uint32_t)ceil_log2(f.pof2); /* recursive doubling's exchanges */
    int folded = rank < 2 * f.rem && rank % 2 == 0, folding = rank < 2 * f.rem && rank % 2 == 1;
    switch (alg) {
    case CPMPI_ALG_BARRIER: /* dissemination: a 0-byte exchange per round */
        p->sends = p->recvs = p->rounds = (uint32_t)ceil_log2(n);
        break;
    case CPMPI_ALG_BCAST: /* from the parent, then to each child */
        p->sends = ch;
        p->recvs = p->rounds = up;
        p->wire_bytes = (ch > up ? ch : up) * block;
        break;
    case CPMPI_ALG_REDUCE: /* from each child in turn, then to the parent */
        p->sends = up;
        p->recvs = p->rounds = ch;
        p->wire_bytes = (ch > up ? ch : up) * block;
        break;
    case CPMPI_ALG_ALLREDUCE:
    case CPMPI_ALG_ALLGATHER:
        /* The fold: the even rank of a pair sends once and gets the result; the odd one
         * receives its partner's, exchanges, and sends the result back. */
        p->sends = p->recvs = p->rounds = folded ? 1 : rd + (uint32_t)folding;
        p->wire_bytes = alg == CPMPI_ALG_ALLREDUCE ? p->sends * block
                                                   : (uint64_t)(n - 1) * block; /* every other block, once */
        break;
    case CPMPI_ALG_ALLTOALL: /* pairwise: one exchange with every other rank */
        p->sends = p->recvs = p->rounds = (uint32_t)(n - 1);
        p->wire_bytes = (uint64_t)(n - 1) * block;
        break;
    case CPMPI_ALG_GATHER: /* each child's subtree in turn, then the own subtree up */
        p->sends = up;
        p->recvs = p->rounds = ch;
        p->wire_bytes = (up ? sub : sub - 1) * block;
        break;
    case CPMPI_ALG_SCATTER: /* the own subtree from the parent, then each child's down */
        p->sends = ch;
        p->recvs = p->rounds = up;
        p->wire_bytes = (up ? sub : sub - 1) * block;
        break;
    case CPMPI_ALG_REDUCE_SCATTER: /* the ring: n − 1 exchanges of one block */
        p->sends = p->recvs = p->rounds = (uint32_t)(n - 1);
        p->wire_bytes = (uint64_t)(n - 1) * block;
        break;
    case CPMPI_ALG_SCAN: /* the chain: from rank − 1, to rank + 1 */
    case CPMPI_ALG_EXSCAN:
        p->sends = rank < n - 1;
        p->recvs = p->rounds = rank > 0;
        p->wire_bytes = block;
        break;
    default:
        break;
    }
}

/* The blocks of the binomial subtree of virtual rank v, real ranks' bytes `blk`. */
static uint64_t subtree_bytes(int v, int n, int root, const uint64_t *blk) {
    uint64_t b = 0;
    for (int k = v; k < subtree_end(v, n); k++) b += blk[real_(k, root, n)];
    return b;
}

void cpmpi_coll_part_v(int alg, int n, int rank, int root, const uint64_t *blk, const uint64_t *rblk,
                       cpmpi_coll_part *p) {
    int base = alg == CPMPI_ALG_ALLGATHERV ? CPMPI_ALG_ALLGATHER
               : alg == CPMPI_ALG_ALLTOALLV ? CPMPI_ALG_ALLTOALL
               : alg == CPMPI_ALG_GATHERV   ? CPMPI_ALG_GATHER
               : alg == CPMPI_ALG_SCATTERV  ? CPMPI_ALG_SCATTER
                                            : CPMPI_ALG_REDUCE_SCATTER;
    cpmpi_coll_part_of(base, n, rank, root, 0, p);
    if (n <= 1 || rank < 0 || rank >= n) return;
    uint64_t total = 0, rtotal = 0;
    for (int j = 0; j < n; j++) {
        total += blk[j];
        if (rblk) rtotal += rblk[j];
    }
    int v = root >= 0 && root < n ? virt(rank, root, n) : rank;
    switch (alg) {
    case CPMPI_ALG_ALLGATHERV: /* every other block, once (allgather's rule) */
        p->wire_bytes = total - blk[rank];
        break;
    case CPMPI_ALG_ALLTOALLV: { /* the larger of what goes out and comes in */
        uint64_t out = total - blk[rank], in = rblk ? rtotal - rblk[rank] : 0;
        p->wire_bytes = out > in ? out : in;
        break;
    }
    case CPMPI_ALG_GATHERV: /* its subtree's blocks up (the root: all but its own) */
    case CPMPI_ALG_SCATTERV: {
        uint64_t sub = subtree_bytes(v, n, root, blk);
        p->wire_bytes = v != 0 ? sub : sub - blk[rank];
        break;
    }
    default: { /* reduce-scatter: every block but its own out, every block but r − 1's in */
        uint64_t out = total - blk[rank], in = total - blk[(rank - 1 + n) % n];
        p->wire_bytes = out > in ? out : in;
        break;
    }
    }
}

/* The blocking neighbourhood collectives: a file of their own, on this file's contexts and
 * messages. */
#include "coll_neighbor.c"
