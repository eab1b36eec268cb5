/* Open MPI message rate, the way osu_mbw_mr measures it for one pair: rank 0 posts a window of
 * W MPI_Isend of SIZE bytes, rank 1 a window of W MPI_Irecv; both wait; rank 1 acknowledges with
 * a 4-byte message; repeated ITERS times after SKIP untimed windows.
 * Prints one line: msgs_per_s=<rate>. Built by scripts/compare.sh with mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int size = argc > 1 ? atoi(argv[1]) : 8;
    int window = argc > 2 ? atoi(argv[2]) : 64;
    int iters = argc > 3 ? atoi(argv[3]) : 20000;
    int skip = iters / 10;
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = aligned_alloc(4096, ((size_t)size * window + 4095) / 4096 * 4096 + 4096);
    MPI_Request *req = malloc(sizeof(MPI_Request) * window);
    char ack[4];
    double t0 = 0;
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(buf + (size_t)w * size, size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(buf + (size_t)w * size, size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("msgs_per_s=%.0f\n", (double)iters * window / t);
    MPI_Finalize();
    return 0;
}
