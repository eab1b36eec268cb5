/* The reference loops commperf's MPI layer is checked against (scripts/mpi-anchor.sh): what
 * osu_latency and osu_bw do, and nothing else. Prints "lat SIZE US" (one-way, mean over the
 * timed iterations) and "bw SIZE MB/s" (window of 64 MPI_Isend, MPI_Waitall, 4-byte ack). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    const long lat_sizes[] = {1, 8, 64, 1024, 4096, 65536, 1048576};
    const long bw_sizes[] = {65536, 1048576};
    char *s, *b, ack[4] = {0};
    if (posix_memalign((void **)&s, 4096, 1 << 20) || posix_memalign((void **)&b, 4096, 1 << 20))
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(s, 1, 1 << 20);
    memset(b, 0, 1 << 20);
    for (int k = 0; k < 7; k++) {
        long n = lat_sizes[k];
        int it = n <= 8192 ? 10000 : n < (1 << 20) ? 1000 : 200, skip = it / 10;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < it + skip; i++) {
            if (i == skip) t0 = MPI_Wtime();
            if (r == 0) {
                MPI_Send(s, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(b, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (r == 0) printf("lat %ld %.4f\n", n, (MPI_Wtime() - t0) * 1e6 / it / 2);
    }
    enum { W = 64 };
    MPI_Request req[W];
    for (int k = 0; k < 2; k++) {
        long n = bw_sizes[k];
        int it = n < (1 << 20) ? 100 : 20, skip = it / 10;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < it + skip; i++) {
            if (i == skip) t0 = MPI_Wtime();
            if (r == 0) {
                for (int j = 0; j < W; j++) MPI_Isend(s, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
                MPI_Recv(ack, 4, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int j = 0; j < W; j++) MPI_Irecv(b, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
                MPI_Send(ack, 4, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
            }
        }
        if (r == 0) printf("bw %ld %.1f\n", n, (double)n * W * it / (MPI_Wtime() - t0) / 1e6);
    }
    MPI_Finalize();
    return 0;
}
