/* commperf-pmpi: the blocking neighbourhood collectives under the LogGP knobs (included by coll.c,
 * whose private duplicates, messages and hooks they use).
 *
 * MPI_Neighbor_allgather(v) and MPI_Neighbor_alltoall(v/w) move one message to each
 * out-neighbour and one from each in-neighbour of the communicator's process topology
 * (MPI-3.1 §7.6), which is also what `commperf predict` replays them as (the own trace's
 * irecv/isend/waitall per neighbour). Here: every receive posted on the private duplicate, then
 * every send through the knobs (c_isend: o, g, G, the L stamp), one PMPI_Waitall, then each
 * received message delivered under the knobs (cpmpi_emu_recv, one batch, the size its status
 * gives). MPI_PROC_NULL's slots move nothing.
 *
 * Which receive takes which message: MPI pairs a sender's k-th message to a rank with that
 * rank's k-th receive from it (one tag). A Cartesian topology lists, per dimension, the
 * negative then the positive neighbour, and a rank's message to its negative neighbour belongs
 * in that neighbour's positive slot; so the receives are posted per dimension positive slot
 * first, and a periodic dimension of 1 or 2 ranks (one rank both neighbours) still gets each
 * message into its slot. Graph topologies pair in order, as posted.
 *
 * Native (the caller runs the library's): a communicator without a topology (so that the
 * library reports the error), and whatever ctx_of leaves native. Decided from what every member
 * passes alike. */

/* One side of a call, slot by slot: `c` (or `cs[j]`) elements of `t` (or `ts[j]`) at `buf` +
 * the displacement: `db[j]` bytes (w), `di[j]` extents (v), none (`same`: allgather's send, one
 * block to every neighbour), or j blocks. */
typedef struct {
    const char *buf;
    int c;
    const int *cs;
    const int *di;
    const MPI_Aint *db;
    MPI_Datatype t;
    const MPI_Datatype *ts;
    int same;
} nbr_side_c;

typedef struct {
    const char *buf;
    int count;
    MPI_Datatype type;
} nbr_slot;

static nbr_slot slot_of(const nbr_side_c *s, int j) {
    nbr_slot o;
    o.type = s->ts ? s->ts[j] : s->t;
    o.count = s->cs ? s->cs[j] : s->c;
    if (s->db) o.buf = s->buf + s->db[j];
    else if (s->di) o.buf = s->buf + (MPI_Aint)s->di[j] * extent(o.type);
    else if (s->same) o.buf = s->buf;
    else o.buf = s->buf + (MPI_Aint)j * (MPI_Aint)s->c * extent(o.type);
    return o;
}

/* The bytes a completed receive of up to `count` of `type` brought. */
static uint64_t received_bytes(MPI_Status *st, MPI_Datatype type, int count) {
    int n = MPI_UNDEFINED;
    PMPI_Get_count(st, type, &n);
    return tbytes(type, n == MPI_UNDEFINED ? count : n);
}

static int nbr_run(MPI_Comm comm, const nbr_side_c *snd, const nbr_side_c *rcv) {
    int kind = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_UNDEFINED) return CPMPI_COLL_NATIVE;
    cctx *x = ctx_of(comm);
    if (!x) return CPMPI_COLL_NATIVE;
    int nin = 0, nout = 0, *in = NULL, *out = NULL, rc = MPI_SUCCESS, k = 0, nr = 0;
    cpmpi_neighbor_lists(comm, &nin, &in, &nout, &out);
    size_t n = (size_t)nin + (size_t)nout + 1;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * n);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * n);
    int *slot = malloc(sizeof(int) * n);
    if (!in || !out || !rq || !sts || !slot) {
        free(in);
        free(out);
        free(rq);
        free(sts);
        free(slot);
        return NOMEM();
    }
    uint64_t te = enter_t();
    BEGIN();
    for (int q = 0; q < nin && rc == MPI_SUCCESS; q++) {
        int i = kind == MPI_CART && (q ^ 1) < nin ? q ^ 1 : q;
        if (in[i] == MPI_PROC_NULL) continue;
        nbr_slot s = slot_of(rcv, i);
        rc = PMPI_Irecv((void *)s.buf, s.count, s.type, in[i], CTAG, x->dup, &rq[k]);
        if (rc == MPI_SUCCESS) slot[k++] = i;
    }
    nr = k;
    for (int j = 0; j < nout && rc == MPI_SUCCESS; j++) {
        if (out[j] == MPI_PROC_NULL) continue;
        nbr_slot s = slot_of(snd, j);
        rc = c_isend(x, s.buf, s.count, s.type, out[j], &rq[k]);
        if (rc == MPI_SUCCESS) k++;
    }
    if (k) {
        int w = PMPI_Waitall(k, rq, sts);
        if (rc == MPI_SUCCESS) rc = w;
    }
    if (rc == MPI_SUCCESS && nr) {
        cpmpi_emu_batch(1);
        for (int q = 0; q < nr; q++) {
            nbr_slot s = slot_of(rcv, slot[q]);
            cpmpi_emu_recv(x->world[in[slot[q]]], x->id, CTAG, received_bytes(&sts[q], s.type, s.count), te);
        }
        cpmpi_emu_batch(0);
    }
    free(in);
    free(out);
    free(rq);
    free(sts);
    free(slot);
    DONE(rc);
}

static nbr_side_c nside(const void *buf, int c, const int *cs, const int *di, const MPI_Aint *db, MPI_Datatype t,
                        const MPI_Datatype *ts, int same) {
    nbr_side_c s = {(const char *)buf, c, cs, di, db, t, ts, same};
    return s;
}

int cpmpi_coll_neighbor_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                                  MPI_Comm comm) {
    nbr_side_c a = nside(s, sc, NULL, NULL, NULL, st, NULL, 1), b = nside(r, rc, NULL, NULL, NULL, rt, NULL, 0);
    return nbr_run(comm, &a, &b);
}

int cpmpi_coll_neighbor_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[],
                                   const int displs[], MPI_Datatype rt, MPI_Comm comm) {
    nbr_side_c a = nside(s, sc, NULL, NULL, NULL, st, NULL, 1), b = nside(r, 0, rcs, displs, NULL, rt, NULL, 0);
    return nbr_run(comm, &a, &b);
}

int cpmpi_coll_neighbor_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                                 MPI_Comm comm) {
    nbr_side_c a = nside(s, sc, NULL, NULL, NULL, st, NULL, 0), b = nside(r, rc, NULL, NULL, NULL, rt, NULL, 0);
    return nbr_run(comm, &a, &b);
}

int cpmpi_coll_neighbor_alltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r,
                                  const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    nbr_side_c a = nside(s, 0, scs, sd, NULL, st, NULL, 0), b = nside(r, 0, rcs, rd, NULL, rt, NULL, 0);
    return nbr_run(comm, &a, &b);
}

int cpmpi_coll_neighbor_alltoallw(const void *s, const int scs[], const MPI_Aint sd[], const MPI_Datatype sts[],
                                  void *r, const int rcs[], const MPI_Aint rd[], const MPI_Datatype rts[],
                                  MPI_Comm comm) {
    nbr_side_c a = nside(s, 0, scs, NULL, sd, MPI_DATATYPE_NULL, sts, 0),
               b = nside(r, 0, rcs, NULL, rd, MPI_DATATYPE_NULL, rts, 0);
    return nbr_run(comm, &a, &b);
}
