/* A program with known message counts and sizes (crates/pmpi/tests/mpi.rs checks every count).
 * Per rank r of n (n even, >= 4), right = r+1, left = r-1 (mod n):
 *   r -> right: 10 x 100 B (MPI_Isend / MPI_Recv, statuses ignored)
 *               5 x 1000 B (MPI_Send / MPI_Irecv(ANY_SOURCE) + MPI_Waitall(STATUSES_IGNORE))
 *               3 x 50000 B (MPI_Sendrecv)
 *               4 x 8 B (MPI_Isend + MPI_Testall / MPI_Irecv + MPI_Waitany)
 *               1 x 64 B (MPI_Send / MPI_Probe + MPI_Recv)
 *   r -> r+2 (mod n) over a split communicator: 2 x 16 B (MPI_Isend + MPI_Recv + MPI_Waitsome)
 *   collectives: 2 MPI_Barrier, 3 MPI_Bcast (800 B), 4 MPI_Allreduce (8 B)
 *   between MPI_Pcontrol(0) and MPI_Pcontrol(1): 7 MPI_Sendrecv that must not be recorded.
 * With an argument "crash", rank 1 calls abort() after the first phase (and a pause). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int r, n;
    static char sbuf[50000], rbuf[50000];
    MPI_Request rq[16];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (r + 1) % n, left = (r + n - 1) % n;

    for (int i = 0; i < 10; i++) {
        MPI_Isend(sbuf, 100, MPI_CHAR, right, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Recv(rbuf, 100, MPI_CHAR, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    if (argc > 1 && strcmp(argv[1], "crash") == 0 && r == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(500000); /* ten flush periods: the messages above are on disk */
        abort();
    }
    if (argc > 1 && strcmp(argv[1], "crash") == 0) MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < 5; i++)
        MPI_Irecv(rbuf + 1000 * i, 1000, MPI_CHAR, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &rq[i]);
    for (int i = 0; i < 5; i++) MPI_Send(sbuf, 1000, MPI_CHAR, right, 2, MPI_COMM_WORLD);
    MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);

    for (int i = 0; i < 3; i++)
        MPI_Sendrecv(sbuf, 50000, MPI_CHAR, right, 3, rbuf, 50000, MPI_CHAR, left, 3,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    for (int i = 0; i < 4; i++) MPI_Irecv(rbuf + 8 * i, 1, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &rq[i]);
    for (int i = 0; i < 4; i++) MPI_Isend(sbuf, 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &rq[4 + i]);
    for (int i = 0; i < 4; i++) {
        int idx;
        MPI_Waitany(4, rq, &idx, MPI_STATUS_IGNORE);
    }
    int flag = 0;
    while (!flag) MPI_Testall(4, rq + 4, &flag, MPI_STATUSES_IGNORE);

    MPI_Status st;
    MPI_Send(sbuf, 64, MPI_BYTE, right, 5, MPI_COMM_WORLD);
    MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
    MPI_Recv(rbuf, 64, MPI_BYTE, st.MPI_SOURCE, 5, MPI_COMM_WORLD, &st);

    MPI_Comm sub;
    int sr, sn;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &sub);
    MPI_Comm_rank(sub, &sr);
    MPI_Comm_size(sub, &sn);
    for (int i = 0; i < 2; i++) {
        int out, idx[1];
        MPI_Isend(sbuf, 4, MPI_INT, (sr + 1) % sn, 6, sub, &rq[0]);
        MPI_Recv(rbuf, 4, MPI_INT, (sr + sn - 1) % sn, 6, sub, MPI_STATUS_IGNORE);
        MPI_Waitsome(1, rq, &out, idx, MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&sub);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) MPI_Bcast(sbuf, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) {
        double x = r, y;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }

    MPI_Pcontrol(0);
    for (int i = 0; i < 7; i++)
        MPI_Sendrecv(sbuf, 10, MPI_CHAR, right, 7, rbuf, 10, MPI_CHAR, left, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    MPI_Pcontrol(1);

    MPI_Finalize();
    return 0;
}
