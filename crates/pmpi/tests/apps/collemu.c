/* Collectives under `commperf emulate` (the interposer runs them as messages, coll.c): every
 * supported collective with several datatypes, ops (one non-commutative) and every root, each
 * result checked against the value computed here; any wrong value makes the rank exit 1.
 *
 *   collemu check      the checks; prints "calls C native N errors E" (rank 0), where C is the
 *                      collective calls per rank (15 + 11 n) and N those the interposer must
 *                      leave to the library (n: the non-commutative Reduce to the n − 1 roots
 *                      other than 0, and the Alltoall in place)
 *   collemu time B K   B batches of K MPI_Allreduce of 8 B (one double, MPI_SUM) after one
 *                      MPI_Barrier; prints "allreduce_ns X" (rank 0): the least batch mean, ns
 *                      per call (calls per rank: 1 + B·K)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int errors = 0, calls = 0;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            if (errors++ < 20) {                                                                   \
                fprintf(stderr, "rank %d: ", me);                                                  \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)
static int me;

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
static void mat_of(int r, int salt, int *m) { m[0] = r + 1 + salt; m[1] = 1; m[2] = 1; m[3] = salt; }
/* Product M(order[0]) · M(order[1]) · … */
static void mat_product(const int *order, int n, int salt, int *out) {
    int acc[4] = {1, 0, 0, 1};
    for (int i = 0; i < n; i++) {
        int m[4], o[4];
        mat_of(order[i], salt, m);
        matmul(acc, m, o);
        memcpy(acc, o, sizeof o);
    }
    memcpy(out, acc, sizeof acc);
}

static void check(MPI_Comm w) {
    int n;
    MPI_Comm_rank(w, &me);
    MPI_Comm_size(w, &n);
    MPI_Datatype mat, vec, pair;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints 0 and 2 of 3 (extent 3 ints) */
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op noncomm;
    MPI_Op_create(mat_op, 0, &noncomm);
    int order[64];
    for (int i = 0; i < n; i++) order[i] = i;

    MPI_Barrier(w); calls++;

    for (int root = 0; root < n; root++) {
        int bi[5];
        double bd[3];
        int bv[6];
        for (int i = 0; i < 5; i++) bi[i] = me == root ? root * 100 + i : -1;
        for (int i = 0; i < 3; i++) bd[i] = me == root ? root + i * 0.25 : -1.0;
        for (int i = 0; i < 6; i++) bv[i] = me == root ? root * 10 + i : -1;
        MPI_Bcast(bi, 5, MPI_INT, root, w); calls++;
        MPI_Bcast(bd, 3, MPI_DOUBLE, root, w); calls++;
        MPI_Bcast(bv, 2, vec, root, w); calls++; /* ints 0, 2, 3, 5 */
        for (int i = 0; i < 5; i++) CHECK(bi[i] == root * 100 + i, "bcast int root %d [%d] = %d", root, i, bi[i]);
        for (int i = 0; i < 3; i++) CHECK(bd[i] == root + i * 0.25, "bcast double root %d [%d] = %g", root, i, bd[i]);
        for (int i = 0; i < 6; i++) {
            int want = (i == 1 || i == 4) ? (me == root ? root * 10 + i : -1) : root * 10 + i;
            CHECK(bv[i] == want, "bcast vector root %d [%d] = %d, want %d", root, i, bv[i], want);
        }
    }

    for (int root = 0; root < n; root++) {
        int si[4], ri[4] = {0};
        double sd[3], rd[3] = {0};
        for (int i = 0; i < 4; i++) si[i] = me * 3 + i + root;
        for (int i = 0; i < 3; i++) sd[i] = (double)((me * 5 + i) % n) - root;
        MPI_Reduce(si, ri, 4, MPI_INT, MPI_SUM, root, w); calls++;
        MPI_Reduce(sd, rd, 3, MPI_DOUBLE, MPI_MAX, root, w); calls++;
        if (me == root) {
            for (int i = 0; i < 4; i++) CHECK(ri[i] == 3 * n * (n - 1) / 2 + n * (i + root), "reduce sum root %d [%d] = %d", root, i, ri[i]);
            for (int i = 0; i < 3; i++) {
                double want = -1e300;
                for (int j = 0; j < n; j++) if ((double)((j * 5 + i) % n) - root > want) want = (double)((j * 5 + i) % n) - root;
                CHECK(rd[i] == want, "reduce max root %d [%d] = %g, want %g", root, i, rd[i], want);
            }
        }
        int ip[2] = {me + 1, me * me};
        if (me == root) MPI_Reduce(MPI_IN_PLACE, ip, 2, MPI_INT, MPI_SUM, root, w);
        else MPI_Reduce(ip, NULL, 2, MPI_INT, MPI_SUM, root, w);
        calls++;
        if (me == root) {
            int s2 = 0;
            for (int j = 0; j < n; j++) s2 += j * j;
            CHECK(ip[0] == n * (n + 1) / 2 && ip[1] == s2, "reduce in place root %d: %d %d", root, ip[0], ip[1]);
        }
        int m[4], rm[4] = {0}, want[4];
        mat_of(me, root, m);
        MPI_Reduce(m, rm, 1, mat, noncomm, root, w); calls++; /* emulated only for root 0 */
        mat_product(order, n, root, want);
        if (me == root) CHECK(memcmp(rm, want, sizeof want) == 0, "reduce non-commutative root %d: %d %d %d %d", root, rm[0], rm[1], rm[2], rm[3]);
    }

    {
        int si[7], ri[7];
        for (int i = 0; i < 7; i++) si[i] = me * 7 + i;
        MPI_Allreduce(si, ri, 7, MPI_INT, MPI_SUM, w); calls++;
        for (int i = 0; i < 7; i++) CHECK(ri[i] == 7 * n * (n - 1) / 2 + n * i, "allreduce sum [%d] = %d", i, ri[i]);
        double sd[2] = {me + 0.5, -me}, rd[2];
        MPI_Allreduce(sd, rd, 2, MPI_DOUBLE, MPI_MIN, w); calls++;
        CHECK(rd[0] == 0.5 && rd[1] == -(n - 1), "allreduce min %g %g", rd[0], rd[1]);
        unsigned su = 0xffu & ~(1u << me), ru;
        MPI_Allreduce(&su, &ru, 1, MPI_UNSIGNED, MPI_BAND, w); calls++;
        CHECK(ru == (0xffu & ~((1u << n) - 1)), "allreduce band %x", ru);
        struct { double v; int i; } sl = {(double)((me * 7) % n == n - 1 ? 5 : me), me}, rl;
        MPI_Allreduce(&sl, &rl, 1, MPI_DOUBLE_INT, MPI_MAXLOC, w); calls++;
        {
            double bv = -1; int bi = -1;
            for (int j = 0; j < n; j++) {
                double v = (j * 7) % n == n - 1 ? 5 : j;
                if (v > bv) { bv = v; bi = j; }
            }
            CHECK(rl.v == bv && rl.i == bi, "allreduce maxloc %g %d, want %g %d", rl.v, rl.i, bv, bi);
        }
        int ip[3] = {me, 2 * me, 1};
        MPI_Allreduce(MPI_IN_PLACE, ip, 3, MPI_INT, MPI_SUM, w); calls++;
        CHECK(ip[0] == n * (n - 1) / 2 && ip[1] == n * (n - 1) && ip[2] == n, "allreduce in place %d %d %d", ip[0], ip[1], ip[2]);
        int m[4], rm[4], want[4];
        mat_of(me, 7, m);
        MPI_Allreduce(m, rm, 1, mat, noncomm, w); calls++;
        mat_product(order, n, 7, want);
        CHECK(memcmp(rm, want, sizeof want) == 0, "allreduce non-commutative: %d %d %d %d", rm[0], rm[1], rm[2], rm[3]);
    }

    {
        int s[2] = {me * 3 + 1, me * 3 + 2}, r[128];
        memset(r, 0xff, sizeof r);
        MPI_Allgather(s, 2, MPI_INT, r, 2, MPI_INT, w); calls++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 2; k++) CHECK(r[j * 2 + k] == j * 3 + 1 + k, "allgather [%d][%d] = %d", j, k, r[j * 2 + k]);
        memset(r, 0xff, sizeof r);
        r[me * 2] = me * 3 + 1;
        r[me * 2 + 1] = me * 3 + 2;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 2, MPI_INT, w); calls++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 2; k++) CHECK(r[j * 2 + k] == j * 3 + 1 + k, "allgather in place [%d][%d] = %d", j, k, r[j * 2 + k]);
        memset(r, 0xff, sizeof r);
        MPI_Allgather(s, 2, MPI_INT, r, 1, pair, w); calls++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 2; k++) CHECK(r[j * 2 + k] == j * 3 + 1 + k, "allgather pair [%d][%d] = %d", j, k, r[j * 2 + k]);
    }

    {
        int s[192], r[192];
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 3; k++) s[j * 3 + k] = me * 100 + j * 10 + k;
        MPI_Alltoall(s, 3, MPI_INT, r, 3, MPI_INT, w); calls++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 3; k++) CHECK(r[j * 3 + k] == j * 100 + me * 10 + k, "alltoall int [%d][%d] = %d", j, k, r[j * 3 + k]);
        double sd[64], rd[64];
        for (int j = 0; j < n; j++) sd[j] = me + j / 8.0;
        MPI_Alltoall(sd, 1, MPI_DOUBLE, rd, 1, MPI_DOUBLE, w); calls++;
        for (int j = 0; j < n; j++) CHECK(rd[j] == j + me / 8.0, "alltoall double [%d] = %g", j, rd[j]);
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 3; k++) r[j * 3 + k] = me * 100 + j * 10 + k;
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 3, MPI_INT, w); calls++; /* native */
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 3; k++) CHECK(r[j * 3 + k] == j * 100 + me * 10 + k, "alltoall in place [%d][%d] = %d", j, k, r[j * 3 + k]);
    }

    for (int root = 0; root < n; root++) {
        int s[2] = {me * 10 + root, me * 10 + root + 1}, r[128];
        memset(r, 0xff, sizeof r);
        MPI_Gather(s, 2, MPI_INT, r, 2, MPI_INT, root, w); calls++;
        if (me == root)
            for (int j = 0; j < n; j++)
                for (int k = 0; k < 2; k++) CHECK(r[j * 2 + k] == j * 10 + root + k, "gather root %d [%d][%d] = %d", root, j, k, r[j * 2 + k]);
        memset(r, 0xff, sizeof r);
        if (me == root) {
            r[me * 2] = s[0];
            r[me * 2 + 1] = s[1];
            MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 1, pair, root, w);
            for (int j = 0; j < n; j++)
                for (int k = 0; k < 2; k++) CHECK(r[j * 2 + k] == j * 10 + root + k, "gather in place root %d [%d][%d] = %d", root, j, k, r[j * 2 + k]);
        } else {
            MPI_Gather(s, 2, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, w);
        }
        calls++;
    }

    for (int root = 0; root < n; root++) {
        int s[128], r[2] = {-1, -1};
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 2; k++) s[j * 2 + k] = root * 1000 + j * 10 + k;
        MPI_Scatter(s, 2, MPI_INT, r, 2, MPI_INT, root, w); calls++;
        CHECK(r[0] == root * 1000 + me * 10 && r[1] == root * 1000 + me * 10 + 1, "scatter root %d: %d %d", root, r[0], r[1]);
        if (me == root) {
            MPI_Scatter(s, 1, pair, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, w);
            CHECK(s[me * 2] == root * 1000 + me * 10, "scatter in place root %d kept its block", root);
        } else {
            r[0] = r[1] = -1;
            MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, r, 2, MPI_INT, root, w);
            CHECK(r[0] == root * 1000 + me * 10 && r[1] == root * 1000 + me * 10 + 1, "scatter in place root %d: %d %d", root, r[0], r[1]);
        }
        calls++;
    }

    {
        /* A communicator in reverse rank order: its own private duplicate, freed with it. */
        MPI_Comm rev;
        MPI_Comm_split(w, 0, n - 1 - me, &rev);
        int m[4], rm[4], want[4], rorder[64];
        for (int i = 0; i < n; i++) rorder[i] = n - 1 - i;
        mat_of(me, 3, m);
        MPI_Allreduce(m, rm, 1, mat, noncomm, rev); calls++;
        mat_product(rorder, n, 3, want);
        CHECK(memcmp(rm, want, sizeof want) == 0, "allreduce non-commutative, reversed: %d %d %d %d", rm[0], rm[1], rm[2], rm[3]);
        int b = me == n - 1 ? 4242 : 0; /* rank 0 of rev */
        MPI_Bcast(&b, 1, MPI_INT, 0, rev); calls++;
        CHECK(b == 4242, "bcast on the reversed communicator: %d", b);
        MPI_Comm_free(&rev);
    }

    MPI_Op_free(&noncomm);
    MPI_Type_free(&mat);
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    if (me == 0) printf("calls %d native %d errors %d\n", calls, n, errors);
    if (errors && me != 0) printf("rank %d errors %d\n", me, errors);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        check(MPI_COMM_WORLD);
    } else if (argc >= 4 && strcmp(argv[1], "time") == 0) {
        int b = atoi(argv[2]), k = atoi(argv[3]);
        double best = 1e300, x = me, y = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < b; i++) {
            double t0 = now_ns();
            for (int j = 0; j < k; j++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double t = (now_ns() - t0) / k;
            if (t < best) best = t;
        }
        int n;
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        CHECK(y == n * (n - 1) / 2.0, "timed allreduce: %g", y);
        if (me == 0) printf("allreduce_ns %.0f errors %d\n", best, errors);
    } else {
        if (me == 0) fprintf(stderr, "usage: collemu check | collemu time BATCHES CALLS\n");
        MPI_Finalize();
        return 2;
    }
    fflush(stdout);
    MPI_Finalize();
    return errors ? 1 : 0;
}
