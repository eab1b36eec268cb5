/* Collectives between compute phases, for `commperf monitor --trace` (crates/cli/tests/monitor_trace.rs).
 * Per rank r of n (n even): 3 rounds of { spin 2 ms (MPI_Wtime), MPI_Bcast 4096 B from root 1,
 * MPI_Allreduce 8 doubles, MPI_Alltoall 256 B per pair, a ring exchange of 2000 B with
 * MPI_Isend/MPI_Irecv/MPI_Waitall, MPI_Gather 64 B to root 0, MPI_Reduce_scatter_block 32 B per
 * rank }, then on a split communicator (even/odd ranks) 2 MPI_Allreduce (replayed `on` the
 * trace's definition of each half), and 1 MPI_Scan (the format's `scan`).
 * With the argument "asym": rank 0 stops monitoring (MPI_Pcontrol(0)) while rank 1 sends it 3
 * messages (recorded on rank 1 only: sends without their receive) and while it calls one
 * MPI_Barrier the others record (a collective not recorded alike on every rank). */
#include <mpi.h>
#include <string.h>

static void spin(double s) {
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < s) {
    }
}

int main(int argc, char **argv) {
    int r, n;
    static char sbuf[65536], rbuf[65536];
    double x[8] = {0}, y[8];
    MPI_Request rq[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    for (int it = 0; it < 3; it++) {
        spin(0.002);
        MPI_Bcast(sbuf, 4096, MPI_BYTE, 1, MPI_COMM_WORLD);
        MPI_Allreduce(x, y, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(sbuf, 256, MPI_BYTE, rbuf, 256, MPI_BYTE, MPI_COMM_WORLD);
        MPI_Irecv(rbuf, 2000, MPI_BYTE, left, 9, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(sbuf, 2000, MPI_BYTE, right, 9, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        MPI_Gather(sbuf, 64, MPI_BYTE, rbuf, 64, MPI_BYTE, 0, MPI_COMM_WORLD);
        MPI_Reduce_scatter_block(sbuf, rbuf, 32, MPI_BYTE, MPI_BAND, MPI_COMM_WORLD);
    }
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &sub);
    for (int i = 0; i < 2; i++) MPI_Allreduce(x, y, 8, MPI_DOUBLE, MPI_SUM, sub);
    MPI_Comm_free(&sub);
    MPI_Scan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "asym") == 0) {
        if (r == 0) MPI_Pcontrol(0);
        if (r == 1)
            for (int i = 0; i < 3; i++) MPI_Send(sbuf, 100, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
        if (r == 0)
            for (int i = 0; i < 3; i++)
                MPI_Recv(rbuf, 100, MPI_BYTE, 1, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == 0) MPI_Pcontrol(1);
        spin(0.001);
        MPI_Allreduce(x, y, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
