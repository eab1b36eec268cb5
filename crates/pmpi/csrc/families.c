/* The call families beyond csrc/shim.c's point to point and blocking collectives, each recorded
 * as events the reader and the trace understand. Included by shim.c (its helpers, kinds and
 * wrappers' ENTER/LEAVE); compiled once per MPI library. Functions of MPI-4.0 are wrapped only
 * where the library's mpi.h declares them (CPMPI_HAVE_*, from build.rs).
 *
 * - Matched probes: MPI_Mprobe/Improbe are probes; MPI_Mrecv/Imrecv receives (matched with the
 *   sends like any receive), on the communicator the probe named (remembered per message handle).
 * - Nonblocking collectives: one event from the starting call to the call that completed it
 *   (the Wait/Test family), with the blocking form's bytes; persistent ones (MPI-4 MPI_X_init) the
 *   same per MPI_Start, flagged F_PERSISTENT.
 * - Neighbourhood collectives: one event per call; bytes over the topology's neighbours; its
 *   tag the number of this rank's neighbour lists of the communicator (nbr_index), written as a
 *   frame (world ranks in the standard's order) when the communicator is first used so; the
 *   v/w all-to-alls' peer the number of their sizes per neighbour (nbr_sizes), written as a
 *   frame when first seen. Under the knobs the blocking ones run as messages (coll_neighbor.c),
 *   the nonblocking ones are charged this rank's part (emu_nbr_charge).
 * - One-sided: each transfer an event to the target's world rank (bytes of the origin buffer;
 *   request-based ones from start to completion); each synchronisation call an event, so the
 *   epochs can be rebuilt.
 * - MPI-4: MPI_Isendrecv(_replace) as a send and a receive completed by one request; partitioned
 *   send/receive (MPI_Psend_init/Precv_init) as one message of all partitions per MPI_Start.
 */

#define NO_ROOT INT32_MIN

/* A started collective, kept until the call that completes its request. */
static void post_coll(int kind, int root, MPI_Comm comm, uint64_t bytes, uint64_t t0, uint64_t t1,
                      MPI_Request req, int flags) {
    cev e;
    uint32_t id;
    if (!MONITORING()) return;
    int w = PEER_IS_SIZES(kind)                ? (to_world(comm, 0, &id), root)
            : root != NO_ROOT && root >= 0 ? to_world(comm, root, &id)
                                           : (to_world(comm, 0, &id), -1);
    fill(&e, kind, w, coll_tag(kind, comm), id, bytes, t0, t1);
    e.flags = (uint8_t)flags;
    e.comm_handle = HKEY(comm);
    cpmpi_rt_post(table_for_post(), HKEY(req), &e);
}

/* Under the knobs, a collective the library runs itself (started nonblocking, or a persistent
 * one's MPI_Start) is charged this rank's part of the algorithm coll.c runs its blocking form
 * with (emulate.h, coll.h); the kinds coll.c has no algorithm for, intercommunicators, and every
 * collective under COMMPERF_EMULATE_COLL=off (collectives left to the library, untouched) are
 * counted only. */
static int vpart_find(uint64_t key, cpmpi_coll_part *p);
static void emu_coll_charge(int kind, int root, MPI_Comm comm, uint64_t bytes, MPI_Request req, int persistent) {
    int alg = kind == K_IBARRIER                  ? CPMPI_ALG_BARRIER
              : kind == K_IBCAST                  ? CPMPI_ALG_BCAST
              : kind == K_IREDUCE                 ? CPMPI_ALG_REDUCE
              : kind == K_IALLREDUCE              ? CPMPI_ALG_ALLREDUCE
              : kind == K_IALLGATHER              ? CPMPI_ALG_ALLGATHER
              : kind == K_IALLTOALL               ? CPMPI_ALG_ALLTOALL
              : kind == K_IGATHER                 ? CPMPI_ALG_GATHER
              : kind == K_ISCATTER                ? CPMPI_ALG_SCATTER
              : kind == K_IREDUCE_SCATTER_BLOCK   ? CPMPI_ALG_REDUCE_SCATTER
              : kind == K_ISCAN                   ? CPMPI_ALG_SCAN
              : kind == K_IEXSCAN                 ? CPMPI_ALG_EXSCAN
                                                  : -1;
    cpmpi_coll_part p;
    /* A persistent v or w form: its part was worked out from its arrays at its init. */
    if (alg < 0 && persistent && vpart_find(HKEY(req), &p)) {
        cpmpi_emu_coll_start(HKEY(req), p.sends, p.recvs, p.rounds, p.wire_bytes, persistent);
        return;
    }
    int inter = 0, n = (int)csize(comm);
    if (alg >= 0) PMPI_Comm_test_inter(comm, &inter);
    if (alg < 0 || inter || !cpmpi_coll_on) {
        cpmpi_emu_other(bytes);
        return;
    }
    /* An alltoall's and a reduce-scatter-block's bytes are its send buffer's, a block per rank. */
    uint64_t block = alg == CPMPI_ALG_ALLTOALL || alg == CPMPI_ALG_REDUCE_SCATTER ? bytes / (uint64_t)n : bytes;
    cpmpi_coll_part_of(alg, n, crank(comm), root, block, &p);
    cpmpi_emu_coll_start(HKEY(req), p.sends, p.recvs, p.rounds, p.wire_bytes, persistent);
}

/* ---- the charges of the v and w forms and reduce-scatter, from their arrays ------------------ */

/* A collective the knobs may charge: coll.c is on and `comm` an intracommunicator. */
static int charge_ok(MPI_Comm comm) {
    int inter = 0;
    if (!cpmpi_coll_on) return 0;
    PMPI_Comm_test_inter(comm, &inter);
    return !inter;
}

/* The bytes of each rank's block: cnt[j] of t (t[j] when `w`), or, without counts (a gatherv's
 * or scatterv's rank other than the root), 0 but `own` for this rank. NULL: out of memory. */
static uint64_t *v_blocks(MPI_Comm comm, const int *cnt, const MPI_Datatype *t, int w, uint64_t own) {
    int n = (int)csize(comm);
    uint64_t *b = calloc((size_t)n, sizeof *b);
    if (!b) { cpmpi_oom("a v-form collective's block sizes"); return NULL; }
    if (!cnt) b[crank(comm)] = own;
    else
        for (int j = 0; j < n; j++) b[j] = type_bytes(w ? t[j] : t[0], cnt[j]);
    return b;
}

/* This rank's part of a v form (coll.h's cpmpi_coll_part_v); 0 when it cannot be worked out
 * (the collective then counted among the others). */
static int v_part(int alg, MPI_Comm comm, int root, uint64_t *blk, uint64_t *rblk, cpmpi_coll_part *p) {
    int ok = blk && (alg != CPMPI_ALG_ALLTOALLV || rblk);
    if (ok) cpmpi_coll_part_v(alg, (int)csize(comm), crank(comm), root, blk, rblk, p);
    free(blk);
    free(rblk);
    return ok;
}

/* A persistent v form's part, from its init to its MPI_Starts: a small table by request (the
 * oldest entry replaced; a start that finds none is counted among the others). */
#define NVP 64
static struct { uint64_t key; int ok; cpmpi_coll_part p; } vparts[NVP];
static unsigned vpart_next = 0;
static pthread_mutex_t vpart_lock = PTHREAD_MUTEX_INITIALIZER;

/* p NULL: not charged (an intercommunicator, --collectives native), so that a start does not
 * find an earlier request's part under a reused handle. */
__attribute__((unused)) static void vpart_put(uint64_t key, const cpmpi_coll_part *p) {
    pthread_mutex_lock(&vpart_lock);
    int slot = -1;
    for (int i = 0; i < NVP && slot < 0; i++) if (vparts[i].key == key) slot = i;
    if (slot < 0) slot = (int)(vpart_next++ % NVP);
    vparts[slot].key = key;
    vparts[slot].ok = p != NULL;
    if (p) vparts[slot].p = *p;
    pthread_mutex_unlock(&vpart_lock);
}

static int vpart_find(uint64_t key, cpmpi_coll_part *p) {
    int found = 0;
    pthread_mutex_lock(&vpart_lock);
    for (int i = 0; i < NVP; i++)
        if (vparts[i].key == key && key) {
            *p = vparts[i].p;
            found = vparts[i].ok;
            break;
        }
    pthread_mutex_unlock(&vpart_lock);
    return found;
}

/* A nonblocking v form was started: charged its part, or counted among the others. */
static void emu_v_start(int ok, const cpmpi_coll_part *p, uint64_t bytes, MPI_Request req) {
    if (ok) cpmpi_emu_coll_start(HKEY(req), p->sends, p->recvs, p->rounds, p->wire_bytes, 0);
    else cpmpi_emu_other(bytes);
}

/* ---- matched probes ------------------------------------------------------------------------ */

/* Message handle -> the communicator its probe named: MPI_Mrecv takes no communicator. A probe
 * and its receive are normally one after the other, so a small table (oldest entry replaced)
 * does. */
#define NMSG 64
static struct { uint64_t msg, comm; } msgs[NMSG];
static unsigned msg_next = 0;
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;

static void msg_remember(MPI_Message m, MPI_Comm c) {
    if (m == MPI_MESSAGE_NULL || m == MPI_MESSAGE_NO_PROC) return;
    pthread_mutex_lock(&msg_lock);
    int slot = -1;
    for (int i = 0; i < NMSG && slot < 0; i++) if (msgs[i].msg == HKEY(m)) slot = i;
    if (slot < 0) slot = (int)(msg_next++ % NMSG);
    msgs[slot].msg = HKEY(m);
    msgs[slot].comm = HKEY(c);
    pthread_mutex_unlock(&msg_lock);
}

/* The communicator of message `m` (forgotten: a message is received once); MPI_COMM_WORLD when
 * unknown (probed before monitoring started). */
static MPI_Comm msg_take(MPI_Message m) {
    MPI_Comm c = MPI_COMM_WORLD;
    pthread_mutex_lock(&msg_lock);
    for (int i = 0; i < NMSG; i++)
        if (msgs[i].msg == HKEY(m)) { c = COMM_OF(msgs[i].comm); msgs[i].msg = 0; break; }
    pthread_mutex_unlock(&msg_lock);
    return c;
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status) {
    if (!ENTER(FN_Mprobe)) return PMPI_Mprobe(src, tag, comm, msg, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = cur_t0;
    int rc = PMPI_Mprobe(src, tag, comm, msg, st);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) {
        msg_remember(*msg, comm);
        rec_recv(K_MPROBE, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, comm, st, t0, t1);
    }
    LEAVE();
    return rc;
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg, MPI_Status *status) {
    if (!ENTER_POLL(FN_Improbe)) return PMPI_Improbe(src, tag, comm, flag, msg, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    int rc = PMPI_Improbe(src, tag, comm, flag, msg, st);
    if (rc == MPI_SUCCESS && *flag) {
        uint64_t t1 = (cur_t1 = STAMP());
        msg_remember(*msg, comm);
        rec_recv(K_IMPROBE, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, comm, st, t1, t1);
    }
    LEAVE();
    return rc;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *status) {
    if (!ENTER(FN_Mrecv)) return PMPI_Mrecv(buf, count, dt, msg, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Comm comm = msg_take(*msg);
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    int rc = PMPI_Mrecv(buf, count, dt, msg, st);
    /* Under the knobs a matched receive is a receive: L's hold, then o. */
    if (rc == MPI_SUCCESS && EMU_ON()) emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS) rec_recv(K_MRECV, 0, comm, st, t0, t1);
    LEAVE();
    return rc;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req) {
    if (!ENTER(FN_Imrecv)) return PMPI_Imrecv(buf, count, dt, msg, req);
    MPI_Comm comm = msg_take(*msg);
    int no_proc = *msg == MPI_MESSAGE_NO_PROC;
    uint64_t t0 = cur_t0;
    int rc = PMPI_Imrecv(buf, count, dt, msg, req);
    /* Its completion (the Wait/Test family) delivers it under the knobs, as an Irecv's. */
    if (rc == MPI_SUCCESS && EMU_ON() && !no_proc) cpmpi_emu_track(HKEY(*req), HKEY(comm));
    uint64_t t1 = (cur_t1 = STAMP());
    /* The source is the status's at completion (MPI_ANY_SOURCE here only as "not yet known"). */
    if (rc == MPI_SUCCESS && !no_proc)
        post(K_IMRECV, 0, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, type_bytes(dt, count), t0, t1, *req);
    LEAVE();
    return rc;
}

/* ---- nonblocking collectives ----------------------------------------------------------------- */

/* SENT, RECEIVED as COLL_BODY's: the start call counts the buffers' bytes. */
#define NBC_BODY(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL, REQ)                         \
    NBC_BODY_X(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL, REQ,                           \
               emu_coll_charge(KIND, ROOT, COMM, BYTES, *(REQ), 0))
/* A v form: PART (an int expression) works out this rank's part `vp_` from the arrays. */
#define NBC_BODY_V(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL, REQ, PART)                 \
    NBC_BODY_X(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL, REQ, {                         \
        cpmpi_coll_part vp_;                                                                     \
        emu_v_start(charge_ok(COMM) && (PART), &vp_, BYTES, *(REQ));                             \
    })
#define NBC_BODY_X(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, CALL, REQ, EMU)                  \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS && EMU_ON()) EMU;                                                      \
    if (rc == MPI_SUCCESS && MONITORING()) {                                                     \
        post_coll(KIND, ROOT, COMM, BYTES, t0, t1, *(REQ), 0);                                   \
        cur_sent += (SENT);                                                                      \
        cur_received += (RECEIVED);                                                              \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;

static uint64_t sum_w(const int *c, const MPI_Datatype *t, MPI_Comm comm) {
    uint64_t s = 0;
    if (!c || !t) return 0;
    int n = (int)csize(comm);
    for (int i = 0; i < n; i++) s += type_bytes(t[i], c[i]);
    return s;
}

/* A gatherv's blocks (a scatterv's with the sides swapped): the root's counts `cnt` of `t`; at
 * the other ranks only their own block, `own` of `ot`. */
static uint64_t *gv_blocks(MPI_Comm comm, int root, int own, MPI_Datatype ot, const int *cnt, MPI_Datatype t) {
    if (ISROOT(root, comm)) return v_blocks(comm, cnt, &t, 0, 0);
    return v_blocks(comm, NULL, NULL, 0, type_bytes(ot, own));
}

/* The large-count forms' bytes, for the generated wrappers' count of them (gen/wrappers.py:
 * under the knobs they are counted among the calls no knob touches). Unused where the library
 * has no large-count forms. */
__attribute__((unused)) static uint64_t bytes_c(MPI_Datatype t, MPI_Count count) {
    int s = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &s);
    return (uint64_t)s * (uint64_t)count;
}
__attribute__((unused)) static uint64_t sum_counts_c(const MPI_Count *c, MPI_Datatype t, MPI_Comm comm) {
    uint64_t s = 0;
    int n = (int)csize(comm);
    for (int i = 0; c && i < n; i++) s += bytes_c(t, c[i]);
    return s;
}
__attribute__((unused)) static uint64_t sum_w_c(const MPI_Count *c, const MPI_Datatype *t, MPI_Comm comm) {
    uint64_t s = 0;
    int n = (int)csize(comm);
    for (int i = 0; c && t && i < n; i++) s += bytes_c(t[i], c[i]);
    return s;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Ibarrier, K_IBARRIER, NO_ROOT, comm, 0, 0, 0, PMPI_Ibarrier(comm, req), req)
}
int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Ibcast, K_IBCAST, root, comm, type_bytes(dt, count),
             ISROOT(root, comm) ? type_bytes(dt, count) : 0, ISROOT(root, comm) ? 0 : type_bytes(dt, count),
             PMPI_Ibcast(buf, count, dt, root, comm, req), req)
}
int MPI_Ireduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req) {
    NBC_BODY(FN_Ireduce, K_IREDUCE, root, comm, type_bytes(dt, count), type_bytes(dt, count),
             ISROOT(root, comm) ? type_bytes(dt, count) : 0, PMPI_Ireduce(s, r, count, dt, op, root, comm, req), req)
}
int MPI_Iallreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
    NBC_BODY(FN_Iallreduce, K_IALLREDUCE, NO_ROOT, comm, type_bytes(dt, count), type_bytes(dt, count),
             type_bytes(dt, count), PMPI_Iallreduce(s, r, count, dt, op, comm, req), req)
}
int MPI_Igather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Igather, K_IGATHER, root, comm, type_bytes(st, sc), type_bytes(st, sc),
             ISROOT(root, comm) ? type_bytes(rt, rc_) * csize(comm) : 0,
             PMPI_Igather(s, sc, st, r, rc_, rt, root, comm, req), req)
}
int MPI_Igatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                 MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY_V(FN_Igatherv, K_IGATHERV, root, comm, type_bytes(st, sc), type_bytes(st, sc),
               ISROOT(root, comm) ? sum_counts(rcs, rt, comm) : 0,
               PMPI_Igatherv(s, sc, st, r, rcs, displs, rt, root, comm, req), req,
               v_part(CPMPI_ALG_GATHERV, comm, root, gv_blocks(comm, root, sc, st, rcs, rt), NULL, &vp_))
}
int MPI_Iscatter(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                 MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Iscatter, K_ISCATTER, root, comm, type_bytes(rt, rc_),
             ISROOT(root, comm) ? type_bytes(st, sc) * csize(comm) : 0, type_bytes(rt, rc_),
             PMPI_Iscatter(s, sc, st, r, rc_, rt, root, comm, req), req)
}
int MPI_Iscatterv(const void *s, const int scs[], const int displs[], MPI_Datatype st, void *r, int rc_,
                  MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY_V(FN_Iscatterv, K_ISCATTERV, root, comm, type_bytes(rt, rc_),
               ISROOT(root, comm) ? sum_counts(scs, st, comm) : 0, type_bytes(rt, rc_),
               PMPI_Iscatterv(s, scs, displs, st, r, rc_, rt, root, comm, req), req,
               v_part(CPMPI_ALG_SCATTERV, comm, root, gv_blocks(comm, root, rc_, rt, scs, st), NULL, &vp_))
}
int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *req) {
    NBC_BODY(FN_Iallgather, K_IALLGATHER, NO_ROOT, comm, type_bytes(st, sc), type_bytes(st, sc),
             type_bytes(rt, rc_) * csize(comm), PMPI_Iallgather(s, sc, st, r, rc_, rt, comm, req), req)
}
int MPI_Iallgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                    MPI_Datatype rt, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY_V(FN_Iallgatherv, K_IALLGATHERV, NO_ROOT, comm, type_bytes(st, sc), type_bytes(st, sc),
               sum_counts(rcs, rt, comm), PMPI_Iallgatherv(s, sc, st, r, rcs, displs, rt, comm, req), req,
               v_part(CPMPI_ALG_ALLGATHERV, comm, -1, v_blocks(comm, rcs, &rt, 0, 0), NULL, &vp_))
}
int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request *req) {
    NBC_BODY(FN_Ialltoall, K_IALLTOALL, NO_ROOT, comm, type_bytes(st, sc) * csize(comm),
             type_bytes(st, sc) * csize(comm), type_bytes(rt, rc_) * csize(comm),
             PMPI_Ialltoall(s, sc, st, r, rc_, rt, comm, req), req)
}
int MPI_Ialltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r, const int rcs[],
                   const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY_V(FN_Ialltoallv, K_IALLTOALLV, NO_ROOT, comm, sum_counts(scs, st, comm), sum_counts(scs, st, comm),
               sum_counts(rcs, rt, comm), PMPI_Ialltoallv(s, scs, sd, st, r, rcs, rd, rt, comm, req), req,
               s != MPI_IN_PLACE && v_part(CPMPI_ALG_ALLTOALLV, comm, -1, v_blocks(comm, scs, &st, 0, 0),
                                           v_blocks(comm, rcs, &rt, 0, 0), &vp_))
}
int MPI_Ialltoallw(const void *s, const int scs[], const int sd[], const MPI_Datatype sts[], void *r,
                   const int rcs[], const int rd[], const MPI_Datatype rts[], MPI_Comm comm, MPI_Request *req) {
    NBC_BODY_V(FN_Ialltoallw, K_IALLTOALLW, NO_ROOT, comm, sum_w(scs, sts, comm), sum_w(scs, sts, comm),
               sum_w(rcs, rts, comm), PMPI_Ialltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm, req), req,
               s != MPI_IN_PLACE && v_part(CPMPI_ALG_ALLTOALLV, comm, -1, v_blocks(comm, scs, sts, 1, 0),
                                           v_blocks(comm, rcs, rts, 1, 0), &vp_))
}
int MPI_Ireduce_scatter(const void *s, void *r, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                        MPI_Request *req) {
    NBC_BODY_V(FN_Ireduce_scatter, K_IREDUCE_SCATTER, NO_ROOT, comm, sum_counts(rcs, dt, comm),
               sum_counts(rcs, dt, comm), type_bytes(dt, rcs[crank(comm)]),
               PMPI_Ireduce_scatter(s, r, rcs, dt, op, comm, req), req,
               v_part(CPMPI_ALG_REDUCE_SCATTERV, comm, -1, v_blocks(comm, rcs, &dt, 0, 0), NULL, &vp_))
}
int MPI_Ireduce_scatter_block(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req) {
    NBC_BODY(FN_Ireduce_scatter_block, K_IREDUCE_SCATTER_BLOCK, NO_ROOT, comm, type_bytes(dt, rc_) * csize(comm),
             type_bytes(dt, rc_) * csize(comm), type_bytes(dt, rc_),
             PMPI_Ireduce_scatter_block(s, r, rc_, dt, op, comm, req), req)
}
int MPI_Iscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Iscan, K_ISCAN, NO_ROOT, comm, type_bytes(dt, count), type_bytes(dt, count), type_bytes(dt, count),
             PMPI_Iscan(s, r, count, dt, op, comm, req), req)
}
int MPI_Iexscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req) {
    NBC_BODY(FN_Iexscan, K_IEXSCAN, NO_ROOT, comm, type_bytes(dt, count), type_bytes(dt, count), type_bytes(dt, count),
             PMPI_Iexscan(s, r, count, dt, op, comm, req), req)
}
int MPI_Alltoallw(const void *s, const int scs[], const int sd[], const MPI_Datatype sts[], void *r,
                  const int rcs[], const int rd[], const MPI_Datatype rts[], MPI_Comm comm) {
    COLL_BODY_E(FN_Alltoallw, K_ALLTOALLW, -1, comm, sum_w(scs, sts, comm), sum_w(scs, sts, comm),
                sum_w(rcs, rts, comm), cpmpi_coll_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm),
                PMPI_Alltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm))
}

/* ---- persistent collectives (MPI-4.0) ----------------------------------------------------- */

__attribute__((unused)) static void pinit_register_coll(int kind, int root, MPI_Comm comm, uint64_t bytes, MPI_Request req) {
    pinit p = {HKEY(req), HKEY(comm), bytes, root, -1, 0, 0, (uint8_t)kind};
    if (p.key <= 1) return;
    pthread_mutex_lock(&pinit_lock);
    pinit_put_locked(&p);
    pthread_mutex_unlock(&pinit_lock);
}

/* Registered whenever tracking (as the point-to-point inits); counted when entered. */
#define PCOLL_BODY(FN, KIND, ROOT, COMM, BYTES, CALL, REQ)                                       \
    int in_ = ENTER(FN);                                                                         \
    int rc = CALL;                                                                               \
    if (rc == MPI_SUCCESS && TRACKING()) pinit_register_coll(KIND, ROOT, COMM, BYTES, *(REQ));   \
    if (in_) LEAVE();                                                                            \
    return rc;

#if defined(CPMPI_HAVE_Barrier_init)
int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Barrier_init, K_IBARRIER, NO_ROOT, comm, 0, PMPI_Barrier_init(comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Bcast_init)
int MPI_Bcast_init(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Info info,
                   MPI_Request *req) {
    PCOLL_BODY(FN_Bcast_init, K_IBCAST, root, comm, type_bytes(dt, count),
               PMPI_Bcast_init(buf, count, dt, root, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Reduce_init)
int MPI_Reduce_init(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Reduce_init, K_IREDUCE, root, comm, type_bytes(dt, count),
               PMPI_Reduce_init(s, r, count, dt, op, root, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Allreduce_init)
int MPI_Allreduce_init(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                       MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Allreduce_init, K_IALLREDUCE, NO_ROOT, comm, type_bytes(dt, count),
               PMPI_Allreduce_init(s, r, count, dt, op, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Gather_init)
int MPI_Gather_init(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                    MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Gather_init, K_IGATHER, root, comm, type_bytes(st, sc),
               PMPI_Gather_init(s, sc, st, r, rc_, rt, root, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Scatter_init)
int MPI_Scatter_init(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Scatter_init, K_ISCATTER, root, comm, type_bytes(rt, rc_),
               PMPI_Scatter_init(s, sc, st, r, rc_, rt, root, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Allgather_init)
int MPI_Allgather_init(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                       MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Allgather_init, K_IALLGATHER, NO_ROOT, comm, type_bytes(st, sc),
               PMPI_Allgather_init(s, sc, st, r, rc_, rt, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Alltoall_init)
int MPI_Alltoall_init(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                      MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Alltoall_init, K_IALLTOALL, NO_ROOT, comm, type_bytes(st, sc) * csize(comm),
               PMPI_Alltoall_init(s, sc, st, r, rc_, rt, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Reduce_scatter_block_init)
int MPI_Reduce_scatter_block_init(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *req) {
    PCOLL_BODY(FN_Reduce_scatter_block_init, K_IREDUCE_SCATTER_BLOCK, NO_ROOT, comm,
               type_bytes(dt, rc_) * csize(comm), PMPI_Reduce_scatter_block_init(s, r, rc_, dt, op, comm, info, req),
               req)
}
#endif
#if defined(CPMPI_HAVE_Scan_init)
int MPI_Scan_init(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Info info,
                  MPI_Request *req) {
    PCOLL_BODY(FN_Scan_init, K_ISCAN, NO_ROOT, comm, type_bytes(dt, count),
               PMPI_Scan_init(s, r, count, dt, op, comm, info, req), req)
}
#endif
#if defined(CPMPI_HAVE_Exscan_init)
int MPI_Exscan_init(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Info info,
                    MPI_Request *req) {
    PCOLL_BODY(FN_Exscan_init, K_IEXSCAN, NO_ROOT, comm, type_bytes(dt, count),
               PMPI_Exscan_init(s, r, count, dt, op, comm, info, req), req)
}
#endif

/* The v and w forms: registered as the others, and under the knobs their part worked out from
 * their arrays now (MPI 4.0 §6.13: the arrays stay as they are until the request is freed). */
#define PCOLL_BODY_V(FN, KIND, ROOT, COMM, BYTES, CALL, REQ, PART)                               \
    int in_ = ENTER(FN);                                                                         \
    int rc = CALL;                                                                               \
    if (rc == MPI_SUCCESS && TRACKING()) pinit_register_coll(KIND, ROOT, COMM, BYTES, *(REQ));   \
    if (rc == MPI_SUCCESS && EMU_ON()) {                                                         \
        cpmpi_coll_part vp_;                                                                     \
        vpart_put(HKEY(*(REQ)), charge_ok(COMM) && (PART) ? &vp_ : NULL);                        \
    }                                                                                            \
    if (in_) LEAVE();                                                                            \
    return rc;

#if defined(CPMPI_HAVE_Gatherv_init)
int MPI_Gatherv_init(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                     MPI_Datatype rt, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY_V(FN_Gatherv_init, K_IGATHERV, root, comm, type_bytes(st, sc),
                 PMPI_Gatherv_init(s, sc, st, r, rcs, displs, rt, root, comm, info, req), req,
                 v_part(CPMPI_ALG_GATHERV, comm, root, gv_blocks(comm, root, sc, st, rcs, rt), NULL, &vp_))
}
#endif
#if defined(CPMPI_HAVE_Scatterv_init)
int MPI_Scatterv_init(const void *s, const int scs[], const int displs[], MPI_Datatype st, void *r, int rc_,
                      MPI_Datatype rt, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY_V(FN_Scatterv_init, K_ISCATTERV, root, comm, type_bytes(rt, rc_),
                 PMPI_Scatterv_init(s, scs, displs, st, r, rc_, rt, root, comm, info, req), req,
                 v_part(CPMPI_ALG_SCATTERV, comm, root, gv_blocks(comm, root, rc_, rt, scs, st), NULL, &vp_))
}
#endif
#if defined(CPMPI_HAVE_Allgatherv_init)
int MPI_Allgatherv_init(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[], const int displs[],
                        MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY_V(FN_Allgatherv_init, K_IALLGATHERV, NO_ROOT, comm, type_bytes(st, sc),
                 PMPI_Allgatherv_init(s, sc, st, r, rcs, displs, rt, comm, info, req), req,
                 v_part(CPMPI_ALG_ALLGATHERV, comm, -1, v_blocks(comm, rcs, &rt, 0, 0), NULL, &vp_))
}
#endif
#if defined(CPMPI_HAVE_Alltoallv_init)
int MPI_Alltoallv_init(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r, const int rcs[],
                       const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PCOLL_BODY_V(FN_Alltoallv_init, K_IALLTOALLV, NO_ROOT, comm, sum_counts(scs, st, comm),
                 PMPI_Alltoallv_init(s, scs, sd, st, r, rcs, rd, rt, comm, info, req), req,
                 s != MPI_IN_PLACE && v_part(CPMPI_ALG_ALLTOALLV, comm, -1, v_blocks(comm, scs, &st, 0, 0),
                                             v_blocks(comm, rcs, &rt, 0, 0), &vp_))
}
#endif
#if defined(CPMPI_HAVE_Alltoallw_init)
int MPI_Alltoallw_init(const void *s, const int scs[], const int sd[], const MPI_Datatype sts[], void *r,
                       const int rcs[], const int rd[], const MPI_Datatype rts[], MPI_Comm comm, MPI_Info info,
                       MPI_Request *req) {
    PCOLL_BODY_V(FN_Alltoallw_init, K_IALLTOALLW, NO_ROOT, comm, sum_w(scs, sts, comm),
                 PMPI_Alltoallw_init(s, scs, sd, sts, r, rcs, rd, rts, comm, info, req), req,
                 s != MPI_IN_PLACE && v_part(CPMPI_ALG_ALLTOALLV, comm, -1, v_blocks(comm, scs, sts, 1, 0),
                                             v_blocks(comm, rcs, rts, 1, 0), &vp_))
}
#endif
#if defined(CPMPI_HAVE_Reduce_scatter_init)
int MPI_Reduce_scatter_init(const void *s, void *r, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                            MPI_Info info, MPI_Request *req) {
    PCOLL_BODY_V(FN_Reduce_scatter_init, K_IREDUCE_SCATTER, NO_ROOT, comm, sum_counts(rcs, dt, comm),
                 PMPI_Reduce_scatter_init(s, r, rcs, dt, op, comm, info, req), req,
                 v_part(CPMPI_ALG_REDUCE_SCATTERV, comm, -1, v_blocks(comm, rcs, &dt, 0, 0), NULL, &vp_))
}
#endif

/* ---- neighbourhood collectives ------------------------------------------------------------- */

/* This rank's in- and out-degree in `comm`'s topology (0, 0 without one). */
static void degrees(MPI_Comm comm, int *in, int *out) {
    int kind = MPI_UNDEFINED, n = 0, w = 0;
    *in = *out = 0;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        *in = *out = 2 * n;
    } else if (kind == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, crank(comm), &n);
        *in = *out = n;
    } else if (kind == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, in, out, &w);
    }
}
static inline uint64_t outdeg(MPI_Comm c) { int i, o; degrees(c, &i, &o); return (uint64_t)o; }

/* Communicator handle -> the number of its neighbour lists on this rank (a frame the runtime
 * wrote): a neighbourhood collective's event carries it in `tag`, so the reader knows whom it
 * sent to and received from. Two topologies over one group share a communicator id, not a
 * number. A small table, the oldest entry replaced (a replaced handle gets a new number and
 * frame when used again); MPI_Comm_free forgets its handle, which may come back as another
 * topology. */
#define NNBR 64
static struct { uint64_t comm; int32_t index; } nbrs[NNBR];
static unsigned nbr_next = 0;
static int32_t nbr_count = 0;
static pthread_mutex_t nbr_lock = PTHREAD_MUTEX_INITIALIZER;

static void nbr_forget(uint64_t key) {
    pthread_mutex_lock(&nbr_lock);
    for (int i = 0; i < NNBR; i++) if (nbrs[i].comm == key) nbrs[i].comm = 0;
    pthread_mutex_unlock(&nbr_lock);
}

/* `comm`'s neighbours of this rank, as its ranks in the standard's order (MPI-3.1 §7.6: a
 * Cartesian topology's are, per dimension, the source then the destination of a shift by 1;
 * MPI_PROC_NULL where there is none), into malloc'd `*in` and `*out` (coll.h: coll_neighbor.c
 * runs the neighbourhood collectives over them under the knobs). */
void cpmpi_neighbor_lists(MPI_Comm comm, int *nin, int **in, int *nout, int **out) {
    int kind = MPI_UNDEFINED, n = 0;
    degrees(comm, nin, nout);
    *in = malloc(sizeof(int) * (size_t)(*nin > 0 ? *nin : 1));
    *out = malloc(sizeof(int) * (size_t)(*nout > 0 ? *nout : 1));
    if (!*in || !*out) goto oom;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        for (int d = 0; d < n && 2 * d + 1 < *nin; d++) {
            PMPI_Cart_shift(comm, d, 1, &(*in)[2 * d], &(*in)[2 * d + 1]);
            (*out)[2 * d] = (*in)[2 * d];
            (*out)[2 * d + 1] = (*in)[2 * d + 1];
        }
    } else if (kind == MPI_GRAPH) {
        PMPI_Graph_neighbors(comm, crank(comm), *nin, *in);
        memcpy(*out, *in, sizeof(int) * (size_t)*nin);
    } else if (kind == MPI_DIST_GRAPH) {
        int *sw = malloc(sizeof(int) * (size_t)(*nin > 0 ? *nin : 1));
        int *dw = malloc(sizeof(int) * (size_t)(*nout > 0 ? *nout : 1));
        if (sw && dw) PMPI_Dist_graph_neighbors(comm, *nin, *in, sw, *nout, *out, dw);
        free(sw);
        free(dw);
        if (!sw || !dw) goto oom;
    }
    return;
oom:
    /* No lists at all (not empty ones, which would run the collective as moving nothing). */
    free(*in);
    free(*out);
    *in = *out = NULL;
    *nin = *nout = 0;
    cpmpi_oom("a communicator's neighbour lists");
}

/* The number of `comm`'s neighbour lists on this rank; the first time, the lists (world ranks,
 * -1 for MPI_PROC_NULL) go to the runtime as a frame. */
static int32_t nbr_index(MPI_Comm comm) {
    pthread_mutex_lock(&nbr_lock);
    for (int i = 0; i < NNBR; i++)
        if (nbrs[i].comm == HKEY(comm)) {
            int32_t v = nbrs[i].index;
            pthread_mutex_unlock(&nbr_lock);
            return v;
        }
    int nin = 0, nout = 0, *in = NULL, *out = NULL;
    uint32_t id;
    cpmpi_neighbor_lists(comm, &nin, &in, &nout, &out);
    to_world(comm, 0, &id);
    for (int i = 0; i < nin; i++) in[i] = in[i] >= 0 ? to_world(comm, in[i], &id) : -1;
    for (int i = 0; i < nout; i++) out[i] = out[i] >= 0 ? to_world(comm, out[i], &id) : -1;
    int32_t v = nbr_count++;
    cpmpi_rt_neighbors(id, v, nin, in, nout, out);
    free(in);
    free(out);
    unsigned slot = nbr_next++ % NNBR;
    nbrs[slot].comm = HKEY(comm);
    nbrs[slot].index = v;
    pthread_mutex_unlock(&nbr_lock);
    return v;
}

/* A collective event's tag: a neighbourhood collective's neighbour lists (nbr_index), -1 for
 * every other collective. */
static int32_t coll_tag(int kind, MPI_Comm comm) {
    if (kind < K_NEIGHBOR_ALLGATHER || kind > K_INEIGHBOR_ALLTOALLW) return -1;
    return nbr_index(comm);
}
static inline uint64_t indeg(MPI_Comm c) { int i, o; degrees(c, &i, &o); return (uint64_t)i; }
static uint64_t sum_deg(const int *c, MPI_Datatype t, int n) {
    uint64_t s = 0;
    if (!c) return 0;
    for (int i = 0; i < n; i++) s += (uint64_t)c[i];
    return type_bytes(t, 1) * s;
}
static uint64_t sum_deg_w(const int *c, const MPI_Datatype *t, int n) {
    uint64_t s = 0;
    if (!c || !t) return 0;
    for (int i = 0; i < n; i++) s += type_bytes(t[i], c[i]);
    return s;
}

/* One side of a neighbourhood collective, slot by slot: `c` (or `cs[j]`) elements of `t` (or
 * `ts[j]`) per neighbour. */
typedef struct {
    int c;
    const int *cs;
    MPI_Datatype t;
    const MPI_Datatype *ts;
} nbr_side;
static inline nbr_side side(int c, const int *cs, MPI_Datatype t, const MPI_Datatype *ts) {
    nbr_side x = {c, cs, t, ts};
    return x;
}
static inline uint64_t side_bytes(nbr_side s, int j) {
    if ((s.cs == NULL && s.c < 0) || (s.ts == NULL && s.t == MPI_DATATYPE_NULL)) return 0;
    return type_bytes(s.ts ? s.ts[j] : s.t, s.cs ? s.cs[j] : s.c);
}

/* The v/w all-to-alls' sizes per neighbour: each distinct list (sends per out-neighbour slot,
 * then receives per in-neighbour slot) numbered and written as a frame the first time
 * (cpmpi_rt_neighbor_counts); the call's event carries the number in `peer`. A small table of
 * the lists seen last, the oldest replaced (a replaced list seen again gets a new number and
 * frame). A list of more than NCNT_MAX slots is not recorded: -1, and the replay leaves the call
 * out, counted. */
#define NCNT 64
#define NCNT_MAX 65536
static struct {
    uint64_t hash;
    int32_t index;
    int nout, nin;
    uint64_t *v;
} cnts[NCNT];
static unsigned cnt_next = 0;
static int32_t cnt_count = 0;
static pthread_mutex_t cnt_lock = PTHREAD_MUTEX_INITIALIZER;

/* The number of list `v` (nout + nin sizes; taken over: kept in the table or freed). */
static int32_t cnt_index(uint64_t *v, int nout, int nin) {
    size_t n = (size_t)(nout + nin);
    uint64_t h = 1469598103934665603ull ^ (uint64_t)nout;
    for (size_t i = 0; i < n; i++) h = (h ^ v[i]) * 1099511628211ull;
    pthread_mutex_lock(&cnt_lock);
    for (int i = 0; i < NCNT; i++)
        if (cnts[i].v && cnts[i].hash == h && cnts[i].nout == nout && cnts[i].nin == nin &&
            memcmp(cnts[i].v, v, sizeof(uint64_t) * n) == 0) {
            int32_t k = cnts[i].index;
            pthread_mutex_unlock(&cnt_lock);
            free(v);
            return k;
        }
    int32_t k = cnt_count++;
    cpmpi_rt_neighbor_counts(k, nout, v, nin, v + nout);
    unsigned slot = cnt_next++ % NCNT;
    free(cnts[slot].v);
    cnts[slot].hash = h;
    cnts[slot].index = k;
    cnts[slot].nout = nout;
    cnts[slot].nin = nin;
    cnts[slot].v = v;
    pthread_mutex_unlock(&cnt_lock);
    return k;
}

/* The number of this call's sizes per neighbour (sends `s`, receives `r`), while monitoring;
 * else -1. */
static int32_t nbr_sizes(MPI_Comm comm, nbr_side s, nbr_side r) {
    int nin, nout;
    if (!MONITORING()) return -1;
    degrees(comm, &nin, &nout);
    if (nin < 0 || nout < 0 || nin + nout > NCNT_MAX) return -1;
    uint64_t *v = malloc(sizeof(uint64_t) * (size_t)(nin + nout > 0 ? nin + nout : 1));
    if (!v) { cpmpi_oom("a neighbourhood all-to-all's sizes"); return -1; }
    for (int j = 0; j < nout; j++) v[j] = side_bytes(s, j);
    for (int i = 0; i < nin; i++) v[nout + i] = side_bytes(r, i);
    return cnt_index(v, nout, nin);
}

/* Under the knobs, a nonblocking neighbourhood collective (the library runs it) is charged
 * this rank's part of what coll_neighbor.c runs the blocking form as: one message to each
 * out-neighbour and from each in-neighbour (MPI_PROC_NULL's slots move nothing), all in one
 * round, its wire bytes the larger of the bytes it sends and receives. Under
 * COMMPERF_EMULATE_COLL=off counted only, as every collective. */
static void emu_nbr_charge(MPI_Comm comm, nbr_side s, nbr_side r, MPI_Request req) {
    int nin = 0, nout = 0, *in = NULL, *out = NULL;
    uint32_t sends = 0, recvs = 0;
    uint64_t sent = 0, received = 0;
    cpmpi_neighbor_lists(comm, &nin, &in, &nout, &out);
    for (int j = 0; j < nout; j++) {
        uint64_t b = side_bytes(s, j);
        if (out[j] == MPI_PROC_NULL) continue;
        sends++;
        sent += b;
    }
    for (int i = 0; i < nin; i++) {
        uint64_t b = side_bytes(r, i);
        if (in[i] == MPI_PROC_NULL) continue;
        recvs++;
        received += b;
    }
    free(in);
    free(out);
    if (!cpmpi_coll_on) {
        cpmpi_emu_other(sent);
        return;
    }
    cpmpi_emu_coll_start(HKEY(req), sends, recvs, recvs ? 1 : 0, sent > received ? sent : received, 0);
}

/* A nonblocking neighbourhood collective: NBC_BODY, its charge emu_nbr_charge (S, R: its sides)
 * and its event's peer PEER (-1, or the v/w forms' sizes, nbr_sizes). */
#define NBR_NBC_BODY(FN, KIND, PEER, COMM, BYTES, SENT, RECEIVED, S, R, CALL, REQ)                  \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS && EMU_ON()) emu_nbr_charge(COMM, S, R, *(REQ));                       \
    if (rc == MPI_SUCCESS && MONITORING()) {                                                     \
        post_coll(KIND, PEER, COMM, BYTES, t0, t1, *(REQ), 0);                                   \
        cur_sent += (SENT);                                                                      \
        cur_received += (RECEIVED);                                                              \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;

int MPI_Neighbor_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                           MPI_Comm comm) {
    COLL_BODY_E(FN_Neighbor_allgather, K_NEIGHBOR_ALLGATHER, -1, comm, type_bytes(st, sc) * outdeg(comm),
                type_bytes(st, sc) * outdeg(comm), type_bytes(rt, rc_) * indeg(comm),
                cpmpi_coll_neighbor_allgather(s, sc, st, r, rc_, rt, comm),
                PMPI_Neighbor_allgather(s, sc, st, r, rc_, rt, comm))
}
int MPI_Neighbor_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[],
                            const int displs[], MPI_Datatype rt, MPI_Comm comm) {
    COLL_BODY_E(FN_Neighbor_allgatherv, K_NEIGHBOR_ALLGATHERV, -1, comm, type_bytes(st, sc) * outdeg(comm),
                type_bytes(st, sc) * outdeg(comm), sum_deg(rcs, rt, (int)indeg(comm)),
                cpmpi_coll_neighbor_allgatherv(s, sc, st, r, rcs, displs, rt, comm),
                PMPI_Neighbor_allgatherv(s, sc, st, r, rcs, displs, rt, comm))
}
int MPI_Neighbor_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                          MPI_Comm comm) {
    COLL_BODY_E(FN_Neighbor_alltoall, K_NEIGHBOR_ALLTOALL, -1, comm, type_bytes(st, sc) * outdeg(comm),
                type_bytes(st, sc) * outdeg(comm), type_bytes(rt, rc_) * indeg(comm),
                cpmpi_coll_neighbor_alltoall(s, sc, st, r, rc_, rt, comm),
                PMPI_Neighbor_alltoall(s, sc, st, r, rc_, rt, comm))
}
int MPI_Neighbor_alltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r,
                           const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    COLL_BODY_E(FN_Neighbor_alltoallv, K_NEIGHBOR_ALLTOALLV,
                nbr_sizes(comm, side(0, scs, st, NULL), side(0, rcs, rt, NULL)), comm,
                sum_deg(scs, st, (int)outdeg(comm)), sum_deg(scs, st, (int)outdeg(comm)),
                sum_deg(rcs, rt, (int)indeg(comm)),
                cpmpi_coll_neighbor_alltoallv(s, scs, sd, st, r, rcs, rd, rt, comm),
                PMPI_Neighbor_alltoallv(s, scs, sd, st, r, rcs, rd, rt, comm))
}
int MPI_Neighbor_alltoallw(const void *s, const int scs[], const MPI_Aint sd[], const MPI_Datatype sts[],
                           void *r, const int rcs[], const MPI_Aint rd[], const MPI_Datatype rts[],
                           MPI_Comm comm) {
    COLL_BODY_E(FN_Neighbor_alltoallw, K_NEIGHBOR_ALLTOALLW,
                nbr_sizes(comm, side(0, scs, MPI_DATATYPE_NULL, sts), side(0, rcs, MPI_DATATYPE_NULL, rts)),
                comm, sum_deg_w(scs, sts, (int)outdeg(comm)), sum_deg_w(scs, sts, (int)outdeg(comm)),
                sum_deg_w(rcs, rts, (int)indeg(comm)),
                cpmpi_coll_neighbor_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm),
                PMPI_Neighbor_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm))
}
int MPI_Ineighbor_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                            MPI_Comm comm, MPI_Request *req) {
    NBR_NBC_BODY(FN_Ineighbor_allgather, K_INEIGHBOR_ALLGATHER, NO_ROOT, comm, type_bytes(st, sc) * outdeg(comm),
                 type_bytes(st, sc) * outdeg(comm), type_bytes(rt, rc_) * indeg(comm),
                 side(sc, NULL, st, NULL), side(rc_, NULL, rt, NULL),
                 PMPI_Ineighbor_allgather(s, sc, st, r, rc_, rt, comm, req), req)
}
int MPI_Ineighbor_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[],
                             const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req) {
    NBR_NBC_BODY(FN_Ineighbor_allgatherv, K_INEIGHBOR_ALLGATHERV, NO_ROOT, comm, type_bytes(st, sc) * outdeg(comm),
                 type_bytes(st, sc) * outdeg(comm), sum_deg(rcs, rt, (int)indeg(comm)),
                 side(sc, NULL, st, NULL), side(0, rcs, rt, NULL),
                 PMPI_Ineighbor_allgatherv(s, sc, st, r, rcs, displs, rt, comm, req), req)
}
int MPI_Ineighbor_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                           MPI_Comm comm, MPI_Request *req) {
    NBR_NBC_BODY(FN_Ineighbor_alltoall, K_INEIGHBOR_ALLTOALL, NO_ROOT, comm, type_bytes(st, sc) * outdeg(comm),
                 type_bytes(st, sc) * outdeg(comm), type_bytes(rt, rc_) * indeg(comm),
                 side(sc, NULL, st, NULL), side(rc_, NULL, rt, NULL),
                 PMPI_Ineighbor_alltoall(s, sc, st, r, rc_, rt, comm, req), req)
}
int MPI_Ineighbor_alltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r,
                            const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req) {
    NBR_NBC_BODY(FN_Ineighbor_alltoallv, K_INEIGHBOR_ALLTOALLV,
                 nbr_sizes(comm, side(0, scs, st, NULL), side(0, rcs, rt, NULL)), comm,
                 sum_deg(scs, st, (int)outdeg(comm)), sum_deg(scs, st, (int)outdeg(comm)),
                 sum_deg(rcs, rt, (int)indeg(comm)), side(0, scs, st, NULL), side(0, rcs, rt, NULL),
                 PMPI_Ineighbor_alltoallv(s, scs, sd, st, r, rcs, rd, rt, comm, req), req)
}
int MPI_Ineighbor_alltoallw(const void *s, const int scs[], const MPI_Aint sd[], const MPI_Datatype sts[],
                            void *r, const int rcs[], const MPI_Aint rd[], const MPI_Datatype rts[],
                            MPI_Comm comm, MPI_Request *req) {
    NBR_NBC_BODY(FN_Ineighbor_alltoallw, K_INEIGHBOR_ALLTOALLW,
                 nbr_sizes(comm, side(0, scs, MPI_DATATYPE_NULL, sts), side(0, rcs, MPI_DATATYPE_NULL, rts)),
                 comm, sum_deg_w(scs, sts, (int)outdeg(comm)), sum_deg_w(scs, sts, (int)outdeg(comm)),
                 sum_deg_w(rcs, rts, (int)indeg(comm)), side(0, scs, MPI_DATATYPE_NULL, sts),
                 side(0, rcs, MPI_DATATYPE_NULL, rts),
                 PMPI_Ineighbor_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, comm, req), req)
}

/* ---- one-sided ----------------------------------------------------------------------------- */

/* Window -> its group's world ranks and id (shim.c's group table: the same hash as a
 * communicator's, so a window over a communicator's group shares its id). */
#define NWIN 64
static comm_info win_slots[NWIN];
static group_table wins = {win_slots, NWIN, PTHREAD_MUTEX_INITIALIZER, 1};
static TLS group_last win_last;

static MPI_Group win_group_of(uint64_t key, int *inter) {
    MPI_Group g;
    *inter = 0;
    PMPI_Win_get_group(WIN_OF(key), &g);
    return g;
}

/* World rank of window rank `r` (-1 for none), and the window's group id. */
static inline int win_world(MPI_Win w, int r, uint32_t *id) {
    int v = group_world(&wins, &win_last, HKEY(w), r, id, win_group_of);
    return v < 0 ? -1 : v;
}

int MPI_Win_free(MPI_Win *win) {
    group_forget(&wins, HKEY(*win));
    if (EMU_ON()) cpmpi_emu_rma_forget(*win);
    int in_ = ENTER(FN_Win_free);
    int rc = PMPI_Win_free(win);
    if (in_) LEAVE();
    return rc;
}

/* One one-sided event: a transfer to `target` (window rank; MPI_PROC_NULL moves nothing) or a
 * synchronisation (target NO_TARGET when it names no rank; tag: the lock type or assertion).
 * Not -1 for "none": that is MPICH's MPI_PROC_NULL. */
#define NO_TARGET INT32_MIN
static void rec_win(int kind, int target, int tag, MPI_Win w, uint64_t bytes, uint64_t t0, uint64_t t1) {
    cev e;
    uint32_t id;
    if (!MONITORING() || target == MPI_PROC_NULL) return;
    int peer = target != NO_TARGET ? win_world(w, target, &id) : (win_world(w, 0, &id), -1);
    fill(&e, kind, peer, tag, id, bytes, t0, t1);
    record(&e);
}
static void post_win(int kind, int target, MPI_Win w, uint64_t bytes, uint64_t t0, uint64_t t1, MPI_Request req) {
    cev e;
    uint32_t id;
    if (!MONITORING() || target == MPI_PROC_NULL) return;
    int peer = win_world(w, target, &id);
    fill(&e, kind, peer, -1, id, bytes, t0, t1);
    cpmpi_rt_post(table_for_post(), HKEY(req), &e);
}

/* Under the knobs, one-sided transfers pay o and g at the origin's call and complete ΔG·bytes
 * + ΔL (2ΔL when data comes back) after it, at the synchronisation or request completion that
 * completes them (emulate.h). EMU_RMA_PRE declares the target's world rank. */
#define EMU_RMA_PRE(TARGET, WIN)                                                                 \
    int emu_tw_ = -1;                                                                            \
    if (EMU_ON() && (TARGET) != MPI_PROC_NULL) {                                                 \
        uint32_t emu_id_;                                                                        \
        emu_tw_ = win_world(WIN, TARGET, &emu_id_);                                              \
        cpmpi_emu_rma_pre(emu_tw_);                                                              \
    }
#define EMU_RMA(TARGET, WIN, SENT, RECEIVED, REQ_KEY)                                            \
    if (rc == MPI_SUCCESS && EMU_ON() && (TARGET) != MPI_PROC_NULL)                              \
        cpmpi_emu_rma(WIN, TARGET, emu_tw_, (SENT) + (RECEIVED), (RECEIVED) > 0, REQ_KEY);

#define RMA_BODY(FN, KIND, TARGET, WIN, SENT, RECEIVED, CALL)                                    \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    EMU_RMA_PRE(TARGET, WIN)                                                                     \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    EMU_RMA(TARGET, WIN, SENT, RECEIVED, 0)                                                      \
    if (rc == MPI_SUCCESS && MONITORING() && (TARGET) != MPI_PROC_NULL) {                        \
        cur_sent += (SENT);                                                                      \
        cur_received += (RECEIVED);                                                              \
        rec_win(KIND, TARGET, -1, WIN, (SENT) + (RECEIVED), t0, t1);                             \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;
#define RRMA_BODY(FN, KIND, TARGET, WIN, SENT, RECEIVED, CALL, REQ)                              \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    EMU_RMA_PRE(TARGET, WIN)                                                                     \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    EMU_RMA(TARGET, WIN, SENT, RECEIVED, HKEY(*(REQ)))                                           \
    if (rc == MPI_SUCCESS && MONITORING() && (TARGET) != MPI_PROC_NULL) {                        \
        cur_sent += (SENT);                                                                      \
        cur_received += (RECEIVED);                                                              \
        post_win(KIND, TARGET, WIN, (SENT) + (RECEIVED), t0, t1, *(REQ));                        \
    }                                                                                            \
    LEAVE();                                                                                     \
    return rc;

int MPI_Put(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w) {
    RMA_BODY(FN_Put, K_PUT, target, w, type_bytes(ot, oc), 0, PMPI_Put(o, oc, ot, target, td, tc, tt, w))
}
int MPI_Get(void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w) {
    RMA_BODY(FN_Get, K_GET, target, w, 0, type_bytes(ot, oc), PMPI_Get(o, oc, ot, target, td, tc, tt, w))
}
int MPI_Accumulate(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt,
                   MPI_Op op, MPI_Win w) {
    RMA_BODY(FN_Accumulate, K_ACCUMULATE, target, w, type_bytes(ot, oc), 0,
             PMPI_Accumulate(o, oc, ot, target, td, tc, tt, op, w))
}
int MPI_Get_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rc_, MPI_Datatype rt, int target,
                       MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win w) {
    RMA_BODY(FN_Get_accumulate, K_GET_ACCUMULATE, target, w, type_bytes(ot, oc), type_bytes(rt, rc_),
             PMPI_Get_accumulate(o, oc, ot, r, rc_, rt, target, td, tc, tt, op, w))
}
int MPI_Fetch_and_op(const void *o, void *r, MPI_Datatype dt, int target, MPI_Aint td, MPI_Op op, MPI_Win w) {
    RMA_BODY(FN_Fetch_and_op, K_FETCH_AND_OP, target, w, type_bytes(dt, 1), type_bytes(dt, 1),
             PMPI_Fetch_and_op(o, r, dt, target, td, op, w))
}
int MPI_Compare_and_swap(const void *o, const void *c, void *r, MPI_Datatype dt, int target, MPI_Aint td,
                         MPI_Win w) {
    RMA_BODY(FN_Compare_and_swap, K_COMPARE_AND_SWAP, target, w, type_bytes(dt, 1), type_bytes(dt, 1),
             PMPI_Compare_and_swap(o, c, r, dt, target, td, w))
}
int MPI_Rput(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request *req) {
    RRMA_BODY(FN_Rput, K_RPUT, target, w, type_bytes(ot, oc), 0, PMPI_Rput(o, oc, ot, target, td, tc, tt, w, req), req)
}
int MPI_Rget(void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request *req) {
    RRMA_BODY(FN_Rget, K_RGET, target, w, 0, type_bytes(ot, oc), PMPI_Rget(o, oc, ot, target, td, tc, tt, w, req), req)
}
int MPI_Raccumulate(const void *o, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt,
                    MPI_Op op, MPI_Win w, MPI_Request *req) {
    RRMA_BODY(FN_Raccumulate, K_RACCUMULATE, target, w, type_bytes(ot, oc), 0,
              PMPI_Raccumulate(o, oc, ot, target, td, tc, tt, op, w, req), req)
}
int MPI_Rget_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rc_, MPI_Datatype rt, int target,
                        MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win w, MPI_Request *req) {
    RRMA_BODY(FN_Rget_accumulate, K_RGET_ACCUMULATE, target, w, type_bytes(ot, oc), type_bytes(rt, rc_),
              PMPI_Rget_accumulate(o, oc, ot, r, rc_, rt, target, td, tc, tt, op, w, req), req)
}

/* Synchronisation: TARGET the window rank it names (NO_TARGET: none), TAG what it was given. */
#define WSYNC_BODY(FN, KIND, TARGET, TAG, WIN, CALL)                                             \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CALL;                                                                               \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS) rec_win(KIND, TARGET, TAG, WIN, 0, t0, t1);                           \
    LEAVE();                                                                                     \
    return rc;

/* The same for a synchronisation that completes the origin's transfers (to window rank
 * EMU_TARGET; -1: to every rank): under the knobs it is not returned before they are due. */
#define WSYNC_BODY_E(FN, KIND, TARGET, TAG, WIN, CALL, EMU_TARGET)                               \
    if (!ENTER(FN)) return CALL;                                                                 \
    uint64_t t0 = cur_t0;                                                                        \
    int rc = CALL;                                                                               \
    if (rc == MPI_SUCCESS && EMU_ON()) cpmpi_emu_rma_sync(WIN, EMU_TARGET);                      \
    uint64_t t1 = (cur_t1 = STAMP());                                                            \
    if (rc == MPI_SUCCESS) rec_win(KIND, TARGET, TAG, WIN, 0, t0, t1);                           \
    LEAVE();                                                                                     \
    return rc;

int MPI_Win_fence(int a, MPI_Win w) { WSYNC_BODY_E(FN_Win_fence, K_WIN_FENCE, NO_TARGET, a, w, PMPI_Win_fence(a, w), -1) }
int MPI_Win_lock(int type, int rank, int a, MPI_Win w) {
    WSYNC_BODY(FN_Win_lock, K_WIN_LOCK, rank, type, w, PMPI_Win_lock(type, rank, a, w))
}
int MPI_Win_unlock(int rank, MPI_Win w) { WSYNC_BODY_E(FN_Win_unlock, K_WIN_UNLOCK, rank, -1, w, PMPI_Win_unlock(rank, w), rank) }
int MPI_Win_lock_all(int a, MPI_Win w) { WSYNC_BODY(FN_Win_lock_all, K_WIN_LOCK_ALL, NO_TARGET, a, w, PMPI_Win_lock_all(a, w)) }
int MPI_Win_unlock_all(MPI_Win w) { WSYNC_BODY_E(FN_Win_unlock_all, K_WIN_UNLOCK_ALL, NO_TARGET, -1, w, PMPI_Win_unlock_all(w), -1) }
int MPI_Win_post(MPI_Group g, int a, MPI_Win w) { WSYNC_BODY(FN_Win_post, K_WIN_POST, NO_TARGET, a, w, PMPI_Win_post(g, a, w)) }
int MPI_Win_start(MPI_Group g, int a, MPI_Win w) { WSYNC_BODY(FN_Win_start, K_WIN_START, NO_TARGET, a, w, PMPI_Win_start(g, a, w)) }
int MPI_Win_complete(MPI_Win w) { WSYNC_BODY_E(FN_Win_complete, K_WIN_COMPLETE, NO_TARGET, -1, w, PMPI_Win_complete(w), -1) }
int MPI_Win_wait(MPI_Win w) { WSYNC_BODY(FN_Win_wait, K_WIN_WAIT, NO_TARGET, -1, w, PMPI_Win_wait(w)) }
int MPI_Win_flush(int rank, MPI_Win w) { WSYNC_BODY_E(FN_Win_flush, K_WIN_FLUSH, rank, -1, w, PMPI_Win_flush(rank, w), rank) }
int MPI_Win_flush_all(MPI_Win w) { WSYNC_BODY_E(FN_Win_flush_all, K_WIN_FLUSH_ALL, NO_TARGET, -1, w, PMPI_Win_flush_all(w), -1) }
int MPI_Win_flush_local(int rank, MPI_Win w) {
    WSYNC_BODY(FN_Win_flush_local, K_WIN_FLUSH_LOCAL, rank, -1, w, PMPI_Win_flush_local(rank, w))
}
int MPI_Win_flush_local_all(MPI_Win w) {
    WSYNC_BODY(FN_Win_flush_local_all, K_WIN_FLUSH_LOCAL_ALL, NO_TARGET, -1, w, PMPI_Win_flush_local_all(w))
}
int MPI_Win_sync(MPI_Win w) { WSYNC_BODY(FN_Win_sync, K_WIN_SYNC, NO_TARGET, -1, w, PMPI_Win_sync(w)) }
/* Only a Test that found the exposure epoch over is an event (a polling loop's misses are not). */
int MPI_Win_test(MPI_Win w, int *flag) {
    if (!ENTER_POLL(FN_Win_test)) return PMPI_Win_test(w, flag);
    int rc = PMPI_Win_test(w, flag);
    if (rc == MPI_SUCCESS && *flag) {
        uint64_t t1 = (cur_t1 = STAMP());
        rec_win(K_WIN_TEST, NO_TARGET, -1, w, 0, t1, t1);
    }
    LEAVE();
    return rc;
}

/* ---- MPI-4.0: Isendrecv, partitioned -------------------------------------------------------- */

/* A started MPI_Isendrecv(_replace): a send and a receive completed by one request (the send
 * half kept under the request's key with SENDRECV_KEY_BIT flipped). */
__attribute__((unused)) static void isendrecv_started(int dest, int stag, uint64_t sbytes, int src, int rtag,
                                                      uint64_t rbytes, MPI_Comm comm, uint64_t t0,
                                                      uint64_t t1, MPI_Request req) {
    post_key(K_ISENDRECV_SEND, 0, dest, stag, comm, sbytes, t0, t1, HKEY(req) ^ SENDRECV_KEY_BIT);
    post(K_ISENDRECV_RECV, src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0, src, rtag, comm, rbytes, t0, t1, req);
}

/* Under the knobs an Isendrecv is point to point: its send half went through the send's hooks
 * at the start, its receive half is delivered at the request's completion. */
__attribute__((unused)) static void emu_isendrecv_started(int src, int rtag, uint64_t rbytes, MPI_Comm comm,
                                                          MPI_Request req) {
    cpmpi_emu_isendrecv();
    if (src != MPI_PROC_NULL) cpmpi_emu_track_sendrecv(HKEY(req), HKEY(comm), src, rtag, rbytes);
}

#if defined(CPMPI_HAVE_Isendrecv)
int MPI_Isendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc_,
                  MPI_Datatype rt, int src, int rtag, MPI_Comm comm, MPI_Request *req) {
    if (!ENTER(FN_Isendrecv)) return PMPI_Isendrecv(sb, sc, st, dest, stag, rb, rc_, rt, src, rtag, comm, req);
    uint64_t t0 = cur_t0;
    EMU_SEND_PRE(dest, comm, stag, type_bytes(st, sc))
    int rc = PMPI_Isendrecv(sb, sc, st, dest, stag, rb, rc_, rt, src, rtag, comm, req);
    EMU_SEND_POST();
    if (rc == MPI_SUCCESS && EMU_ON()) emu_isendrecv_started(src, rtag, type_bytes(rt, rc_), comm, *req);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS)
        isendrecv_started(dest, stag, type_bytes(st, sc), src, rtag, type_bytes(rt, rc_), comm, t0, t1, *req);
    LEAVE();
    return rc;
}
#endif
#if defined(CPMPI_HAVE_Isendrecv_replace)
int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src, int rtag,
                          MPI_Comm comm, MPI_Request *req) {
    if (!ENTER(FN_Isendrecv_replace)) return PMPI_Isendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, req);
    uint64_t t0 = cur_t0;
    EMU_SEND_PRE(dest, comm, stag, type_bytes(dt, count))
    int rc = PMPI_Isendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, req);
    EMU_SEND_POST();
    if (rc == MPI_SUCCESS && EMU_ON()) emu_isendrecv_started(src, rtag, type_bytes(dt, count), comm, *req);
    uint64_t t1 = (cur_t1 = STAMP());
    if (rc == MPI_SUCCESS)
        isendrecv_started(dest, stag, type_bytes(dt, count), src, rtag, type_bytes(dt, count), comm, t0, t1, *req);
    LEAVE();
    return rc;
}
#endif
#if defined(CPMPI_HAVE_Psend_init)
int MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype dt, int dest, int tag,
                   MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    int in_ = ENTER(FN_Psend_init);
    int rc = PMPI_Psend_init(buf, partitions, count, dt, dest, tag, comm, info, req);
    if (rc == MPI_SUCCESS && TRACKING())
        pinit_register(1, F_PARTITIONED, dest, tag, comm, type_bytes(dt, 1) * (uint64_t)count * (uint64_t)partitions,
                       *req);
    if (in_) LEAVE();
    return rc;
}
#endif
#if defined(CPMPI_HAVE_Precv_init)
int MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype dt, int src, int tag,
                   MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    int in_ = ENTER(FN_Precv_init);
    int rc = PMPI_Precv_init(buf, partitions, count, dt, src, tag, comm, info, req);
    if (rc == MPI_SUCCESS && TRACKING())
        pinit_register(0, F_PARTITIONED, src, tag, comm, type_bytes(dt, 1) * (uint64_t)count * (uint64_t)partitions,
                       *req);
    if (in_) LEAVE();
    return rc;
}
#endif
