/* Persistent requests (crates/cli/tests/monitor_mpi.rs and emulate_mpi.rs, `persistent_*`).
 * Per rank r of n, right = r+1, left = r-1 (mod n), 10 iterations of:
 *   MPI_Startall of one MPI_Recv_init (from left, 24 B, tag 7) and one MPI_Send_init (to right,
 *   24 B, tag 7), then MPI_Waitall on both;
 * then 5 iterations of MPI_Start of an MPI_Ssend_init (to right, 8 B, tag 8) and of an
 *   MPI_Recv_init (MPI_ANY_SOURCE, tag 8), the receive completed by an MPI_Test loop, the send
 *   by MPI_Wait;
 * then MPI_Request_free of all four. Each rank checks every value it received (exit 1). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int r, n, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    double sv[3], rv[3], s8, r8;
    MPI_Request q[2], q8[2];
    MPI_Recv_init(rv, 3, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(sv, 3, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &q[1]);
    for (int i = 0; i < 10; i++) {
        sv[0] = r; sv[1] = i; sv[2] = -1.0;
        MPI_Startall(2, q);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        if (rv[0] != left || rv[1] != i) bad = 1;
    }
    MPI_Ssend_init(&s8, 1, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &q8[0]);
    MPI_Recv_init(&r8, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &q8[1]);
    for (int i = 0; i < 5; i++) {
        int flag = 0;
        s8 = 100.0 * r + i;
        MPI_Start(&q8[1]);
        MPI_Start(&q8[0]);
        while (!flag) MPI_Test(&q8[1], &flag, MPI_STATUS_IGNORE);
        MPI_Wait(&q8[0], MPI_STATUS_IGNORE);
        if (r8 != 100.0 * left + i) bad = 1;
    }
    for (int i = 0; i < 2; i++) {
        MPI_Request_free(&q[i]);
        MPI_Request_free(&q8[i]);
    }
    if (bad) fprintf(stderr, "persist: rank %d received a wrong value\n", r);
    MPI_Finalize();
    return bad;
}
