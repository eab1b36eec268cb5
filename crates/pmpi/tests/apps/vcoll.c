/* The v and w collectives, reduce-scatter and the scans under `commperf emulate` (the
 * interposer runs the blocking ones as messages and charges the nonblocking and persistent ones:
 * crates/pmpi/csrc/coll.c), each result checked against the value computed here; any wrong
 * value makes the rank exit 1. Rank j's block is j + 1 ints throughout.
 *
 *   vcoll check   prints "calls C native N errors E" (rank 0): C blocking collective calls per
 *                 rank (15 + 4n), N of them left to the library (a non-commutative
 *                 MPI_Reduce_scatter, an MPI_Alltoallv in place); then 9 nonblocking ones
 *                 (Iallgatherv, Ialltoallv, Ialltoallw, Igatherv and Iscatterv to root 0,
 *                 Ireduce_scatter, Ireduce_scatter_block, Iscan, Iexscan), under MPI 4.0 the same
 *                 9 persistent (each started once) and 3 large-count calls (MPI_Allreduce_c of a
 *                 double, MPI_Iallgather_c of an int, MPI_Scan_c of an int)
 *   vcoll time R  R repetitions of, after an MPI_Barrier, one MPI_Alltoallv (an int to each
 *                 rank) and, after another, one MPI_Scan (an int); the entry and exit times of
 *                 every rank on CLOCK_MONOTONIC (one clock for the ranks of one host); prints
 *                 "alltoallv_path_ns A scan_path_ns S" (rank 0), the least over the
 *                 repetitions of: the earliest exit of any rank from the Alltoallv less the
 *                 earliest entry, and the last rank's exit from the Scan less the earliest entry
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int errors = 0, calls = 0, me, n;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c) && errors++ < 20) {                                                               \
            fprintf(stderr, "rank %d: ", me);                                                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* 2×2 integer matrices mod P, multiplied: a non-commutative op. inout = in · inout. */
#define P 1000003LL
static void matmul(const int *a, const int *b, int *o) {
    long long r0 = ((long long)a[0] * b[0] + (long long)a[1] * b[2]) % P;
    long long r1 = ((long long)a[0] * b[1] + (long long)a[1] * b[3]) % P;
    long long r2 = ((long long)a[2] * b[0] + (long long)a[3] * b[2]) % P;
    long long r3 = ((long long)a[2] * b[1] + (long long)a[3] * b[3]) % P;
    o[0] = (int)r0; o[1] = (int)r1; o[2] = (int)r2; o[3] = (int)r3;
}
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        int o[4];
        matmul(a + 4 * i, b + 4 * i, o);
        memcpy(b + 4 * i, o, sizeof o);
    }
}
static void mat_of(int r, int *m) { m[0] = r + 2; m[1] = 1; m[2] = 1; m[3] = r; }
/* M(0) · M(1) · … · M(k − 1) */
static void mat_prefix(int k, int *out) {
    int acc[4] = {1, 0, 0, 1};
    for (int i = 0; i < k; i++) {
        int m[4], o[4];
        mat_of(i, m);
        matmul(acc, m, o);
        memcpy(acc, o, sizeof o);
    }
    memcpy(out, acc, sizeof acc);
}

/* Counts j + 1 and displacements with a gap of one element after each block. */
static int cnt[64], dsp[64], total;
static void layout(void) {
    total = 0;
    for (int j = 0; j < n; j++) {
        cnt[j] = j + 1;
        dsp[j] = total + j;
        total += j + 1;
    }
}
static int val(int from, int to, int k) { return from * 1000 + to * 100 + k; }
/* The peer's alltoallw type: doubles for odd ranks. */
static MPI_Datatype wtype(int j) { return j % 2 ? MPI_DOUBLE : MPI_INT; }

static void check_allgatherv(int *r, const char *what) {
    for (int j = 0; j < n; j++)
        for (int k = 0; k < cnt[j]; k++)
            CHECK(r[dsp[j] + k] == val(j, 0, k), "%s [%d][%d] = %d", what, j, k, r[dsp[j] + k]);
}

static void blocking(MPI_Comm w, MPI_Op noncomm, MPI_Datatype mat) {
    int s[64], r[256];
    MPI_Barrier(w); calls++;
    for (int k = 0; k < me + 1; k++) s[k] = val(me, 0, k);
    memset(r, 0xff, sizeof r);
    MPI_Allgatherv(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, w); calls++;
    check_allgatherv(r, "allgatherv");
    memset(r, 0xff, sizeof r);
    for (int k = 0; k < me + 1; k++) r[dsp[me] + k] = val(me, 0, k);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, cnt, dsp, MPI_INT, w); calls++;
    check_allgatherv(r, "allgatherv in place");

    /* Alltoallv: j + 1 ints to rank j; from j, me + 1 ints. */
    int sd[64], rd[64], rc[64], sb[256];
    for (int j = 0, a = 0; j < n; a += j + 2, j++) {
        sd[j] = a; /* a gap after each block */
        for (int k = 0; k < j + 1; k++) sb[a + k] = val(me, j, k);
        rc[j] = me + 1;
        rd[j] = j * (me + 1);
    }
    memset(r, 0xff, sizeof r);
    MPI_Alltoallv(sb, cnt, sd, MPI_INT, r, rc, rd, MPI_INT, w); calls++;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < me + 1; k++) CHECK(r[rd[j] + k] == val(j, me, k), "alltoallv from %d [%d] = %d", j, k, r[rd[j] + k]);
    /* In place (2 ints each way: the counts must agree pairwise). */
    int two[64], td[64];
    for (int j = 0; j < n; j++) {
        two[j] = 2;
        td[j] = 3 * j;
        for (int k = 0; k < 2; k++) r[3 * j + k] = val(me, j, k);
    }
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, r, two, td, MPI_INT, w); calls++; /* native */
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 2; k++) CHECK(r[3 * j + k] == val(j, me, k), "alltoallv in place from %d [%d] = %d", j, k, r[3 * j + k]);

    /* Alltoallw: j + 1 of rank j's type to j (byte displacements); me + 1 of mine from each. */
    {
        char sw[2048], rw[2048];
        int wsd[64], wrd[64];
        MPI_Datatype sts[64], rts[64];
        int a = 0;
        for (int j = 0; j < n; j++) {
            sts[j] = wtype(j);
            wsd[j] = a;
            for (int k = 0; k < j + 1; k++) {
                if (j % 2) ((double *)(sw + a))[k] = val(me, j, k) + 0.5;
                else ((int *)(sw + a))[k] = val(me, j, k);
            }
            a += (j + 1) * 8;
            rts[j] = wtype(me);
            wrd[j] = j * (me + 1) * 8;
        }
        memset(rw, 0xff, sizeof rw);
        MPI_Alltoallw(sw, cnt, wsd, sts, rw, rc, wrd, rts, w); calls++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < me + 1; k++) {
                double got = me % 2 ? ((double *)(rw + wrd[j]))[k] : ((int *)(rw + wrd[j]))[k];
                double want = val(j, me, k) + (me % 2 ? 0.5 : 0);
                CHECK(got == want, "alltoallw from %d [%d] = %g", j, k, got);
            }
    }

    for (int root = 0; root < n; root++) {
        for (int k = 0; k < me + 1; k++) s[k] = val(me, root, k);
        memset(r, 0xff, sizeof r);
        MPI_Gatherv(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, root, w); calls++;
        if (me == root)
            for (int j = 0; j < n; j++)
                for (int k = 0; k < cnt[j]; k++) CHECK(r[dsp[j] + k] == val(j, root, k), "gatherv root %d [%d][%d] = %d", root, j, k, r[dsp[j] + k]);
        memset(r, 0xff, sizeof r);
        if (me == root) {
            for (int k = 0; k < me + 1; k++) r[dsp[me] + k] = s[k];
            MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, cnt, dsp, MPI_INT, root, w);
            for (int j = 0; j < n; j++)
                for (int k = 0; k < cnt[j]; k++) CHECK(r[dsp[j] + k] == val(j, root, k), "gatherv in place root %d [%d][%d] = %d", root, j, k, r[dsp[j] + k]);
        } else {
            MPI_Gatherv(s, me + 1, MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, root, w);
        }
        calls++;
    }

    for (int root = 0; root < n; root++) {
        int src[256], got[64];
        for (int j = 0; j < n; j++)
            for (int k = 0; k < cnt[j]; k++) src[dsp[j] + k] = val(root, j, k);
        memset(got, 0xff, sizeof got);
        MPI_Scatterv(src, cnt, dsp, MPI_INT, got, me + 1, MPI_INT, root, w); calls++;
        for (int k = 0; k < me + 1; k++) CHECK(got[k] == val(root, me, k), "scatterv root %d [%d] = %d", root, k, got[k]);
        if (me == root) {
            MPI_Scatterv(src, cnt, dsp, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, w);
            CHECK(src[dsp[me]] == val(root, me, 0), "scatterv in place root %d kept its block", root);
        } else {
            memset(got, 0xff, sizeof got);
            MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, got, me + 1, MPI_INT, root, w);
            for (int k = 0; k < me + 1; k++) CHECK(got[k] == val(root, me, k), "scatterv in place root %d [%d] = %d", root, k, got[k]);
        }
        calls++;
    }

    /* Reduce-scatter: element i of the whole vector is Σ_r (r · 7 + i). */
    {
        int in[256], out[64], m[256], mo[4];
        for (int i = 0; i < total; i++) in[i] = me * 7 + i;
        memset(out, 0xff, sizeof out);
        MPI_Reduce_scatter(in, out, cnt, MPI_INT, MPI_SUM, w); calls++;
        int base = me * (me + 1) / 2; /* the offset of my block: Σ_{j<me} (j + 1) */
        for (int k = 0; k < me + 1; k++) CHECK(out[k] == 7 * n * (n - 1) / 2 + n * (base + k), "reduce_scatter [%d] = %d", k, out[k]);
        for (int i = 0; i < total; i++) in[i] = me * 7 + i;
        MPI_Reduce_scatter(MPI_IN_PLACE, in, cnt, MPI_INT, MPI_SUM, w); calls++;
        for (int k = 0; k < me + 1; k++) CHECK(in[k] == 7 * n * (n - 1) / 2 + n * (base + k), "reduce_scatter in place [%d] = %d", k, in[k]);
        /* Non-commutative: native; one matrix per rank's block. */
        int one[64];
        for (int j = 0; j < n; j++) { one[j] = 1; mat_of(me, m + 4 * j); }
        MPI_Reduce_scatter(m, mo, one, mat, noncomm, w); calls++;
        int want[4];
        mat_prefix(n, want);
        CHECK(memcmp(mo, want, sizeof want) == 0, "reduce_scatter non-commutative: %d %d %d %d", mo[0], mo[1], mo[2], mo[3]);
        int blk[128], bo[2] = {-1, -1};
        for (int i = 0; i < 2 * n; i++) blk[i] = me + i;
        MPI_Reduce_scatter_block(blk, bo, 2, MPI_INT, MPI_SUM, w); calls++;
        for (int k = 0; k < 2; k++) CHECK(bo[k] == n * (n - 1) / 2 + n * (2 * me + k), "reduce_scatter_block [%d] = %d", k, bo[k]);
    }

    /* Scans: ints (sum), a matrix (non-commutative), in place. */
    {
        int si[3] = {me, 2 * me, 1}, ri[3] = {-1, -1, -1}, m[4], rm[4] = {0}, want[4];
        MPI_Scan(si, ri, 3, MPI_INT, MPI_SUM, w); calls++;
        CHECK(ri[0] == me * (me + 1) / 2 && ri[1] == me * (me + 1) && ri[2] == me + 1, "scan %d %d %d", ri[0], ri[1], ri[2]);
        mat_of(me, m);
        MPI_Scan(m, rm, 1, mat, noncomm, w); calls++;
        mat_prefix(me + 1, want);
        CHECK(memcmp(rm, want, sizeof want) == 0, "scan non-commutative: %d %d %d %d", rm[0], rm[1], rm[2], rm[3]);
        int ip[3] = {me, 2 * me, 1};
        MPI_Scan(MPI_IN_PLACE, ip, 3, MPI_INT, MPI_SUM, w); calls++;
        CHECK(ip[0] == me * (me + 1) / 2 && ip[1] == me * (me + 1) && ip[2] == me + 1, "scan in place %d %d %d", ip[0], ip[1], ip[2]);
        int ei[3] = {-7, -7, -7};
        MPI_Exscan(si, ei, 3, MPI_INT, MPI_SUM, w); calls++;
        if (me > 0) CHECK(ei[0] == me * (me - 1) / 2 && ei[1] == me * (me - 1) && ei[2] == me, "exscan %d %d %d", ei[0], ei[1], ei[2]);
        else CHECK(ei[0] == -7, "exscan rank 0 wrote its receive buffer");
        int em[4] = {0};
        MPI_Exscan(m, em, 1, mat, noncomm, w); calls++;
        mat_prefix(me, want);
        if (me > 0) CHECK(memcmp(em, want, sizeof want) == 0, "exscan non-commutative: %d %d %d %d", em[0], em[1], em[2], em[3]);
    }
}

/* The nonblocking ones (start[i] 0) and, under MPI 4.0, the persistent ones, each checked. */
static void started(MPI_Comm w, int persistent) {
    int s[64], r[256], sd[64], rd[64], rc[64], sb[256];
    MPI_Request q;
    for (int k = 0; k < me + 1; k++) s[k] = val(me, 0, k);
    for (int j = 0, a = 0; j < n; a += j + 2, j++) {
        sd[j] = a;
        for (int k = 0; k < j + 1; k++) sb[a + k] = val(me, j, k);
        rc[j] = me + 1;
        rd[j] = j * (me + 1);
    }
#if MPI_VERSION >= 4
#define GO(NB, PI)                                                                                 \
    do {                                                                                           \
        if (persistent) { PI; MPI_Start(&q); MPI_Wait(&q, MPI_STATUS_IGNORE); MPI_Request_free(&q); } \
        else { NB; MPI_Wait(&q, MPI_STATUS_IGNORE); }                                             \
    } while (0)
#else
#define GO(NB, PI) do { NB; MPI_Wait(&q, MPI_STATUS_IGNORE); } while (0)
#endif
    memset(r, 0xff, sizeof r);
    GO(MPI_Iallgatherv(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, w, &q),
       MPI_Allgatherv_init(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, w, MPI_INFO_NULL, &q));
    check_allgatherv(r, persistent ? "allgatherv_init" : "iallgatherv");
    memset(r, 0xff, sizeof r);
    GO(MPI_Ialltoallv(sb, cnt, sd, MPI_INT, r, rc, rd, MPI_INT, w, &q),
       MPI_Alltoallv_init(sb, cnt, sd, MPI_INT, r, rc, rd, MPI_INT, w, MPI_INFO_NULL, &q));
    for (int j = 0; j < n; j++)
        for (int k = 0; k < me + 1; k++) CHECK(r[rd[j] + k] == val(j, me, k), "(i)alltoallv from %d [%d] = %d", j, k, r[rd[j] + k]);
    {
        char sw[2048], rw[2048];
        int wsd[64], wrd[64];
        MPI_Datatype sts[64], rts[64];
        for (int j = 0, a = 0; j < n; a += (j + 1) * 8, j++) {
            sts[j] = wtype(j);
            wsd[j] = a;
            for (int k = 0; k < j + 1; k++) {
                if (j % 2) ((double *)(sw + a))[k] = val(me, j, k) + 0.5;
                else ((int *)(sw + a))[k] = val(me, j, k);
            }
            rts[j] = wtype(me);
            wrd[j] = j * (me + 1) * 8;
        }
        GO(MPI_Ialltoallw(sw, cnt, wsd, sts, rw, rc, wrd, rts, w, &q),
           MPI_Alltoallw_init(sw, cnt, wsd, sts, rw, rc, wrd, rts, w, MPI_INFO_NULL, &q));
        for (int j = 0; j < n; j++)
            for (int k = 0; k < me + 1; k++) {
                double got = me % 2 ? ((double *)(rw + wrd[j]))[k] : ((int *)(rw + wrd[j]))[k];
                CHECK(got == val(j, me, k) + (me % 2 ? 0.5 : 0), "(i)alltoallw from %d [%d] = %g", j, k, got);
            }
    }
    memset(r, 0xff, sizeof r);
    GO(MPI_Igatherv(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, 0, w, &q),
       MPI_Gatherv_init(s, me + 1, MPI_INT, r, cnt, dsp, MPI_INT, 0, w, MPI_INFO_NULL, &q));
    if (me == 0) check_allgatherv(r, "(i)gatherv");
    {
        int src[256], got[64];
        for (int j = 0; j < n; j++)
            for (int k = 0; k < cnt[j]; k++) src[dsp[j] + k] = val(0, j, k);
        GO(MPI_Iscatterv(src, cnt, dsp, MPI_INT, got, me + 1, MPI_INT, 0, w, &q),
           MPI_Scatterv_init(src, cnt, dsp, MPI_INT, got, me + 1, MPI_INT, 0, w, MPI_INFO_NULL, &q));
        for (int k = 0; k < me + 1; k++) CHECK(got[k] == val(0, me, k), "(i)scatterv [%d] = %d", k, got[k]);
    }
    {
        int in[256], out[64], base = me * (me + 1) / 2;
        for (int i = 0; i < total; i++) in[i] = me * 7 + i;
        GO(MPI_Ireduce_scatter(in, out, cnt, MPI_INT, MPI_SUM, w, &q),
           MPI_Reduce_scatter_init(in, out, cnt, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &q));
        for (int k = 0; k < me + 1; k++) CHECK(out[k] == 7 * n * (n - 1) / 2 + n * (base + k), "(i)reduce_scatter [%d] = %d", k, out[k]);
        int blk[128], bo[2];
        for (int i = 0; i < 2 * n; i++) blk[i] = me + i;
        GO(MPI_Ireduce_scatter_block(blk, bo, 2, MPI_INT, MPI_SUM, w, &q),
           MPI_Reduce_scatter_block_init(blk, bo, 2, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &q));
        for (int k = 0; k < 2; k++) CHECK(bo[k] == n * (n - 1) / 2 + n * (2 * me + k), "(i)reduce_scatter_block [%d] = %d", k, bo[k]);
        int x = me + 1, y = -1;
        GO(MPI_Iscan(&x, &y, 1, MPI_INT, MPI_SUM, w, &q), MPI_Scan_init(&x, &y, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &q));
        CHECK(y == (me + 1) * (me + 2) / 2, "(i)scan %d", y);
        y = -1;
        GO(MPI_Iexscan(&x, &y, 1, MPI_INT, MPI_SUM, w, &q), MPI_Exscan_init(&x, &y, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &q));
        if (me > 0) CHECK(y == me * (me + 1) / 2, "(i)exscan %d", y);
    }
#undef GO
}

static void large_count(MPI_Comm w) {
#if MPI_VERSION >= 4
    double x = me, y = 0;
    MPI_Allreduce_c(&x, &y, 1, MPI_DOUBLE, MPI_SUM, w);
    CHECK(y == n * (n - 1) / 2.0, "allreduce_c %g", y);
    int v = me, all[64];
    MPI_Request q;
    MPI_Iallgather_c(&v, 1, MPI_INT, all, 1, MPI_INT, w, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int j = 0; j < n; j++) CHECK(all[j] == j, "iallgather_c [%d] = %d", j, all[j]);
    int z = -1;
    MPI_Scan_c(&v, &z, 1, MPI_INT, MPI_SUM, w);
    CHECK(z == me * (me + 1) / 2, "scan_c %d", z);
#else
    (void)w;
#endif
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The path of one call from the earliest entry: `last_rank` the last rank's exit, else the
 * earliest exit of any rank. */
static double path(double t_in, double t_out, int last_rank, MPI_Comm w) {
    double mine[2] = {t_in, t_out}, all[128];
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, w);
    double in = all[0], out = last_rank ? all[2 * (n - 1) + 1] : all[1];
    for (int j = 0; j < n; j++) {
        if (all[2 * j] < in) in = all[2 * j];
        if (!last_rank && all[2 * j + 1] < out) out = all[2 * j + 1];
    }
    return out - in;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Comm_rank(w, &me);
    MPI_Comm_size(w, &n);
    if (n > 12) MPI_Abort(w, 2);
    layout();
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        MPI_Op noncomm;
        MPI_Op_create(mat_op, 0, &noncomm);
        MPI_Datatype mat;
        MPI_Type_contiguous(4, MPI_INT, &mat);
        MPI_Type_commit(&mat);
        blocking(w, noncomm, mat);
        started(w, 0);
#if MPI_VERSION >= 4
        started(w, 1);
#endif
        large_count(w);
        MPI_Op_free(&noncomm);
        MPI_Type_free(&mat);
        if (me == 0) printf("calls %d native 2 errors %d\n", calls, errors);
    } else if (argc >= 3 && strcmp(argv[1], "time") == 0) {
        int reps = atoi(argv[2]);
        double a2a = -1, scan = -1;
        int one[64], sd[64], sb[64], rb[64];
        for (int j = 0; j < n; j++) { one[j] = 1; sd[j] = j; sb[j] = me * 100 + j; }
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(w);
            double t0 = now_ns();
            MPI_Alltoallv(sb, one, sd, MPI_INT, rb, one, sd, MPI_INT, w);
            double t1 = now_ns();
            for (int j = 0; j < n; j++) CHECK(rb[j] == j * 100 + me, "timed alltoallv [%d] = %d", j, rb[j]);
            double p = path(t0, t1, 0, w);
            if (a2a < 0 || p < a2a) a2a = p;
            MPI_Barrier(w);
            int x = me, y = -1;
            t0 = now_ns();
            MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, w);
            t1 = now_ns();
            CHECK(y == me * (me + 1) / 2, "timed scan %d", y);
            p = path(t0, t1, 1, w);
            if (scan < 0 || p < scan) scan = p;
        }
        if (me == 0) printf("alltoallv_path_ns %.0f scan_path_ns %.0f errors %d\n", a2a, scan, errors);
    } else {
        if (me == 0) fprintf(stderr, "usage: vcoll check | vcoll time REPS\n");
        MPI_Finalize();
        return 2;
    }
    fflush(stdout);
    if (errors && me != 0) printf("rank %d errors %d\n", me, errors);
    MPI_Finalize();
    return errors ? 1 : 0;
}
