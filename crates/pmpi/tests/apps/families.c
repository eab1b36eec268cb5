/* One program per call family beyond plain point to point, with known counts and sizes
 * (crates/cli/tests/families.rs checks every one). Per rank r of n = 4, right = r+1, left = r-1:
 *
 *   matched probes:  r -> right 5 x 200 B (MPI_Send / MPI_Mprobe + MPI_Mrecv)
 *                    r -> right 3 x 300 B (MPI_Send / MPI_Improbe until found + MPI_Imrecv + MPI_Wait)
 *   synchronous:     r -> right 2 x 64 B (MPI_Ssend, tag 12 / MPI_Recv: even ranks send first);
 *                    r -> right 1 x 32 B (MPI_Issend, tag 13 + MPI_Wait after an MPI_Recv);
 *                    r -> right 3 x 24 B (MPI_Ssend_init, tag 14, and MPI_Recv_init from left:
 *                    3 rounds of MPI_Start both + MPI_Waitall)
 *   nonblocking collectives: 4 MPI_Ialltoall (2 doubles per pair) + MPI_Wait each;
 *                    2 MPI_Iallreduce (1 double) + one MPI_Waitall; 1 MPI_Ibarrier + MPI_Test
 *                    until done; 2 MPI_Ibcast (root 0, 100 B) + MPI_Wait each
 *   communicators:   MPI_Comm_split by parity: 3 MPI_Allreduce (1 double) on it;
 *                    MPI_Comm_dup of world: 2 MPI_Alltoall (1 int per pair) on it
 *   neighbourhood:   a periodic 1-D MPI_Cart_create ring: 2 MPI_Neighbor_alltoall (1 int each
 *                    way), 1 MPI_Ineighbor_allgather (1 int) + MPI_Wait; 1 MPI_Neighbor_alltoallv
 *                    and 1 MPI_Ineighbor_alltoallv + MPI_Wait (2 ints to left, 3 to right),
 *                    1 MPI_Neighbor_alltoallw and 1 MPI_Ineighbor_alltoallw + MPI_Wait (5 ints
 *                    to left, 3 doubles to right)
 *   one-sided:       fence; MPI_Put 64 B to right; fence; MPI_Get 32 B from left; fence;
 *                    lock(shared, right) MPI_Accumulate 4 ints unlock; lock_all MPI_Rput 16 B
 *                    to right + MPI_Wait, flush_all, unlock_all; post/start (the two neighbours)
 *                    MPI_Put 8 B to right, complete/wait
 *   MPI-4 (MPI_VERSION >= 4): 2 MPI_Isendrecv 40 B (right, from left) + MPI_Wait;
 *                    MPI_Allreduce_init (1 double) started 3 times + MPI_Wait;
 *                    MPI_Psend_init/Precv_init 4 partitions x 10 ints to right / from left,
 *                    2 rounds of Start, Pready x 4, Wait
 *   counted only:    7 more MPI_Comm_rank (8 in all), 5 MPI_Wtime
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int r, n, flag;
    static char sbuf[4096], rbuf[4096];
    MPI_Request rq[8];
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 4) {
        if (r == 0) fprintf(stderr, "families: run on 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int right = (r + 1) % n, left = (r + n - 1) % n;

    /* matched probes */
    for (int i = 0; i < 5; i++) {
        MPI_Message m;
        MPI_Isend(sbuf, 200, MPI_CHAR, right, 10, MPI_COMM_WORLD, &rq[0]);
        MPI_Mprobe(left, 10, MPI_COMM_WORLD, &m, &st);
        MPI_Mrecv(rbuf, 200, MPI_CHAR, &m, MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) {
        MPI_Message m;
        MPI_Send(sbuf, 300, MPI_CHAR, right, 11, MPI_COMM_WORLD);
        /* (an eager 300 B send returns before it is received: the ring does not deadlock) */
        do MPI_Improbe(left, 11, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE); while (!flag);
        MPI_Imrecv(rbuf, 300, MPI_CHAR, &m, &rq[1]);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    }

    /* synchronous sends */
    for (int i = 0; i < 2; i++) {
        if (r % 2 == 0) MPI_Ssend(sbuf, 64, MPI_CHAR, right, 12, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 64, MPI_CHAR, left, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (r % 2 == 1) MPI_Ssend(sbuf, 64, MPI_CHAR, right, 12, MPI_COMM_WORLD);
    }
    MPI_Issend(sbuf, 32, MPI_CHAR, right, 13, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv(rbuf, 32, MPI_CHAR, left, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Ssend_init(sbuf, 24, MPI_CHAR, right, 14, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(rbuf, 24, MPI_CHAR, left, 14, MPI_COMM_WORLD, &rq[1]);
    for (int i = 0; i < 3; i++) {
        MPI_Start(&rq[1]);
        MPI_Start(&rq[0]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    /* nonblocking collectives */
    double a2a_s[8] = {0}, a2a_r[8], x = r, y;
    for (int i = 0; i < 4; i++) {
        MPI_Ialltoall(a2a_s, 2, MPI_DOUBLE, a2a_r, 2, MPI_DOUBLE, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    double y2;
    MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Iallreduce(&x, &y2, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    if (y != 6.0 || y2 != 3.0) MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
    do MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE); while (!flag);
    for (int i = 0; i < 2; i++) {
        MPI_Ibcast(sbuf, 100, MPI_CHAR, 0, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }

    /* communicators */
    MPI_Comm half, all;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    for (int i = 0; i < 3; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half);
    if (y != (r % 2 ? 4.0 : 2.0)) MPI_Abort(MPI_COMM_WORLD, 4);
    MPI_Comm_dup(MPI_COMM_WORLD, &all);
    int ints_s[4] = {r, r, r, r}, ints_r[4];
    for (int i = 0; i < 2; i++) MPI_Alltoall(ints_s, 1, MPI_INT, ints_r, 1, MPI_INT, all);
    MPI_Comm_free(&half);
    MPI_Comm_free(&all);

    /* neighbourhood */
    MPI_Comm ring;
    int dims[1] = {n}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    for (int i = 0; i < 2; i++) MPI_Neighbor_alltoall(ints_s, 1, MPI_INT, ints_r, 1, MPI_INT, ring);
    MPI_Ineighbor_allgather(&r, 1, MPI_INT, ints_r, 1, MPI_INT, ring, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    if (ints_r[0] != left || ints_r[1] != right) MPI_Abort(MPI_COMM_WORLD, 5);
    /* v: slots left then right; rank r sends 100r + k. From left its right slot (3 ints), from
     * right its left slot (2 ints). */
    int vs[5], vr[5], vsc[2] = {2, 3}, vsd[2] = {0, 2}, vrc[2] = {3, 2}, vrd[2] = {0, 3};
    for (int k = 0; k < 5; k++) vs[k] = 100 * r + k;
    for (int i = 0; i < 2; i++) {
        vr[0] = vr[3] = -1;
        if (i == 0) {
            MPI_Neighbor_alltoallv(vs, vsc, vsd, MPI_INT, vr, vrc, vrd, MPI_INT, ring);
        } else {
            MPI_Ineighbor_alltoallv(vs, vsc, vsd, MPI_INT, vr, vrc, vrd, MPI_INT, ring, &rq[0]);
            MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        }
        if (vr[0] != 100 * left + 2 || vr[3] != 100 * right) MPI_Abort(MPI_COMM_WORLD, 6);
    }
    /* w: 5 ints to left (bytes 0..20), 3 doubles to right (bytes 24..48); from left 3 doubles,
     * from right 5 ints. */
    double ws[6], wr[6];
    int wsc[2] = {5, 3}, wrc[2] = {3, 5};
    MPI_Aint wsd[2] = {0, 24}, wrd[2] = {0, 24};
    MPI_Datatype wst[2] = {MPI_INT, MPI_DOUBLE}, wrt[2] = {MPI_DOUBLE, MPI_INT};
    for (int k = 0; k < 5; k++) ((int *)ws)[k] = 1000 * r + k;
    for (int k = 3; k < 6; k++) ws[k] = r + 0.5;
    for (int i = 0; i < 2; i++) {
        wr[0] = -1;
        ((int *)&wr[3])[0] = -1;
        if (i == 0) {
            MPI_Neighbor_alltoallw(ws, wsc, wsd, wst, wr, wrc, wrd, wrt, ring);
        } else {
            MPI_Ineighbor_alltoallw(ws, wsc, wsd, wst, wr, wrc, wrd, wrt, ring, &rq[0]);
            MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        }
        if (wr[0] != left + 0.5 || ((int *)&wr[3])[0] != 1000 * right) MPI_Abort(MPI_COMM_WORLD, 7);
    }
    MPI_Comm_free(&ring);

    /* one-sided */
    char *base;
    MPI_Win win;
    MPI_Win_allocate(1024, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_fence(0, win);
    MPI_Put(sbuf, 64, MPI_CHAR, right, 0, 64, MPI_CHAR, win);
    MPI_Win_fence(0, win);
    MPI_Get(rbuf, 32, MPI_CHAR, left, 0, 32, MPI_CHAR, win);
    MPI_Win_fence(0, win);
    int four[4] = {1, 2, 3, 4};
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Accumulate(four, 4, MPI_INT, right, 128, 4, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock(right, win);
    MPI_Win_lock_all(0, win);
    MPI_Rput(sbuf, 16, MPI_CHAR, right, 256, 16, MPI_CHAR, win, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group wg, nb;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int two[2] = {left, right};
    MPI_Group_incl(wg, 2, two, &nb);
    MPI_Win_post(nb, 0, win);
    MPI_Win_start(nb, 0, win);
    MPI_Put(sbuf, 8, MPI_CHAR, right, 512, 8, MPI_CHAR, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    MPI_Group_free(&nb);
    MPI_Group_free(&wg);
    MPI_Win_free(&win);

#if MPI_VERSION >= 4
    for (int i = 0; i < 2; i++) {
        MPI_Isendrecv(sbuf, 40, MPI_CHAR, right, 20, rbuf, 40, MPI_CHAR, left, 20, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    for (int i = 0; i < 3; i++) {
        MPI_Start(&rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&rq[0]);
    static int ps[40], pr[40];
    MPI_Psend_init(ps, 4, 10, MPI_INT, right, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    MPI_Precv_init(pr, 4, 10, MPI_INT, left, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]);
    for (int round = 0; round < 2; round++) {
        MPI_Start(&rq[1]);
        MPI_Start(&rq[0]);
        for (int p = 0; p < 4; p++) MPI_Pready(p, rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
#endif

    /* counted only */
    int dummy;
    double t = 0;
    for (int i = 0; i < 7; i++) MPI_Comm_rank(MPI_COMM_WORLD, &dummy);
    for (int i = 0; i < 5; i++) t += MPI_Wtime();
    if (t < 0) return 1;
    MPI_Finalize();
    return 0;
}
